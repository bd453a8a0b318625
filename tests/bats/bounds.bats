#!/usr/bin/env bats
# Routes around a zone that go through what the zone's container is allowed
# to ask for: an update above the zone's [resources], a pid namespace shared
# with another zone, bpf(2) on the enforcement's own maps. Each attack is run
# first under plain runc with the same bundle (it works there), then in a
# zone: denied or refused, with an event where one is recorded, and with
# what `zone verify` says.

load helpers
load zone_helpers

# The teardown of zone_helpers.bash, run after the plain runc containers of
# the test are gone.
eval "zone_$(declare -f teardown)"
teardown() {
	local id
	if [[ -d $BATS_TEST_TMPDIR/runc ]]; then
		for id in $(plain list -q 2>/dev/null); do
			plain delete --force "$id" >/dev/null 2>&1 || true
		done
	fi
	zone_teardown
}

# plain ARGS...: plain runc with a root of this test's own.
plain() {
	timeout "$RT_TIMEOUT" "${RUNC:-/usr/sbin/runc}" --root "$BATS_TEST_TMPDIR/runc" "$@"
}

# pids_max BUNDLE: the pids.max of the bundle's container (cgroup v1 pids).
pids_max() {
	cat "/sys/fs/cgroup/pids$(cg_path "$1")/pids.max"
}

# check_is REPORT NAME PASSED [REGEX]: verify's check NAME has passed ==
# PASSED (true/false) and, when given, a detail matching REGEX.
check_is() {
	local d
	d=$(jq -r --arg n "$2" --argjson p "$3" '.checks[] | select(.name == $n and .passed == $p) | .detail' <<<"$1")
	[[ -n $d ]] || fail "check '$2' with passed=$3 not in: $1"
	[[ -z ${4:-} ]] || assert_match "$d" "$4"
}

@test "resources: update cannot raise a limit above the zone's [resources]; lowering stays free" {
	requires cgroups_v1
	cfg b '.linux.resources.pids = {"limit": 10}'

	# Plain runc: the same update raises the limit.
	plain run -d --bundle "$(bundle_dir b)" plain-c >/dev/null 2>&1 || fail "runc run failed"
	assert_eq "$(pids_max b)" 10
	plain update --pids-limit 100000 plain-c || fail "runc update failed"
	assert_eq "$(pids_max b)" 100000
	plain delete --force plain-c

	rt zone create capped --policy "$(policy capped <<-'EOF'
		[resources]
		pids_max = 20
		memory_limit = "256M"
	EOF
	)" >/dev/null
	in_zone b capped
	run_ct c1 b
	assert_eq "$(pids_max b)" 10

	rrun rt update --pids-limit 100000 c1
	assert_error_line "zone capped refuses the update of container c1: pids_max 100000 is above the zone's limit 20 \(the zone's \[resources\] are ceilings: lower limits are allowed; to raise one, change the zone with 'rauha zone update capped --policy FILE'\)"
	assert_eq "$(pids_max b)" 10
	ev=$(wait_event capped '.control == "resources"')
	jq -e '.container == "c1" and .decision == "deny" and (.object | contains("pids_max 100000"))' <<<"$ev" >/dev/null ||
		fail "event: $ev"

	# "No limit" is above every limit, in each form the clients send.
	echo '{"pids": {"limit": -1}}' >"$BATS_TEST_TMPDIR/pids.json"
	rrun rt update --resources="$BATS_TEST_TMPDIR/pids.json" c1
	assert_error_line "zone capped refuses .*pids_max unlimited is above the zone's limit 20"
	echo '{"memory": {"limit": -1}}' >"$BATS_TEST_TMPDIR/mem.json"
	rrun rt update --resources "$BATS_TEST_TMPDIR/mem.json" c1
	assert_error_line "zone capped refuses .*memory_limit unlimited is above the zone's limit 268435456"
	echo '{"unified": {"pids.max": "max"}}' >"$BATS_TEST_TMPDIR/unified.json"
	rrun rt update -r "$BATS_TEST_TMPDIR/unified.json" c1
	assert_error_line "zone capped refuses .*unified pids.max .*max.* is above the zone's pids_max limit 20"
	assert_eq "$(pids_max b)" 10
	assert_eq "$(cat "/sys/fs/cgroup/memory$(cg_path b)/memory.limit_in_bytes")" 268435456

	# Lowering, and raising up to the zone's limit, stay free.
	rrun rt update --pids-limit 5 c1
	assert_success
	assert_eq "$(pids_max b)" 5
	rrun rt update --pids-limit 20 c1
	assert_success
	assert_eq "$(pids_max b)" 20

	rrun rt zone verify --container c1 --format json
	check_is "$stdout" "container c1: resources" true "pids.max 20"
	# A limit raised behind rauha's back (the host's root writes the cgroup
	# file) is what verify's check is for.
	echo max >"/sys/fs/cgroup/pids$(cg_path b)/pids.max"
	rrun rt zone verify --container c1 --format json
	assert_failure 1
	check_is "$stdout" "container c1: resources" false "pids.max: pids_max unlimited is above the zone's limit 20"
}
