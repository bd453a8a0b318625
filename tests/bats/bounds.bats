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

@test "bpf: a member without CAP_BPF/CAP_SYS_ADMIN gets EPERM from bpf(2), even for a pinned map it can see" {
	requires seccomp go
	local get
	get=$(build_helper bpfget)
	# Audit admission: refusing a mount of the pin directory is admission's
	# job; the bpf(2) deny must hold on its own.
	rt zone create bz --policy "$(policy bz <<-'EOF'
		[zone]
		admission = "audit"
	EOF
	)" >/dev/null
	[[ -e $PIN_DIR/zone_policy ]] || fail "no pinned zone_policy in $PIN_DIR"
	cp "$get" "$(bundle_dir b)/rootfs/bin/bpfget"
	# No capabilities at all: the read-only bind of the pins is all it has.
	cfg b '.process.capabilities = {} |
		.mounts += [{destination: "/pins", type: "bind", source: $pins, options: ["rbind", "ro"]}]' --arg pins "$PIN_DIR"

	# Plain runc: the container opens the map that holds every zone's policy.
	plain run -d --bundle "$(bundle_dir b)" plain-c >/dev/null 2>&1 || fail "runc run failed"
	run plain exec plain-c bpfget /pins/zone_policy
	assert_success
	assert_eq "$output" "opened /pins/zone_policy"
	plain delete --force plain-c

	in_zone b bz
	run_ct c1 b
	rexec c1 bpfget /pins/zone_policy
	assert_failure 1
	assert_eq "$stderr" "bpfget /pins/zone_policy: operation not permitted"
	rexec c1 bpfget /pins/zone_by_cgid
	assert_failure 1

	rrun rt zone verify --container c1 --format json
	check_is "$stdout" "container c1: bpf" true "bpf\(2\) fails with EPERM \(seccomp\)"

	# A member that keeps CAP_BPF (no capability list in the policy keeps the
	# container's own sets) is granted bpf(2).
	make_bundle b2
	cp "$get" "$(bundle_dir b2)/rootfs/bin/bpfget"
	cfg b2 '.process.capabilities |= map_values(. + ["CAP_BPF"]) |
		.mounts += [{destination: "/pins", type: "bind", source: $pins, options: ["rbind", "ro"]}]' --arg pins "$PIN_DIR"
	in_zone b2 bz
	run_ct c2 b2
	rexec c2 bpfget /pins/zone_policy
	assert_success
	rrun rt zone verify --container c2 --format json
	check_is "$stdout" "container c2: bpf" true "allowed"
}
