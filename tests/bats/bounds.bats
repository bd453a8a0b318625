#!/usr/bin/env bats
# Routes around a zone that go through what the zone's container is allowed
# to ask for: an update above the zone's [resources], a pid namespace shared
# with another zone, bpf(2) on the enforcement's own maps. Each attack is run
# first under plain runc with the same bundle (it works there), then in a
# zone: denied or refused, with an event where one is recorded, and with
# what `zone verify` says.

load helpers
load zone_helpers
load runc_helpers

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
	jqe '.container == "c1" and .decision == "deny" and (.object | contains("pids_max 100000"))' <<<"$ev" >/dev/null ||
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
	# The sys_exit observer records the EPERM (BPF_OBJ_GET is command 7).
	ev=$(wait_event bz '.control == "capability" and .container == "c1"')
	jqe '.decision == "deny" and .comm == "bpfget" and .object == "bpf(2) command 7 without CAP_BPF or CAP_SYS_ADMIN (operation not permitted)"' <<<"$ev" >/dev/null ||
		fail "event: $ev"

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
	no_event bz '.container == "c2"'
	rrun rt zone verify --container c2 --format json
	check_is "$stdout" "container c2: bpf" true "allowed"
}

# join_pidns BUNDLE HOSTPID: the bundle's container joins the pid namespace
# of process HOSTPID (by path, as pods and `--pid container:` do).
join_pidns() {
	cfg "$1" '.linux.namespaces |= map(if .type == "pid" then .path = $p else . end)' --arg p "/proc/$2/ns/pid"
}

# nspid HOSTPID: the pid of HOSTPID in its own (innermost) pid namespace.
nspid() {
	awk '/^NSpid:/ {print $NF}' "/proc/$1/status"
}

# pidns_policy NAME ADMISSION [ALLOWED-ZONE]: a policy file with no path
# rules, the given admission and [signals] allowed_zones.
pidns_policy() {
	policy "$1" <<-EOF
		[zone]
		admission = "$2"
		[signals]
		allowed_zones = [${3:+\"$3\"}]
	EOF
}

@test "pid namespace: a container joining another zone's pid namespace is refused (strict) or fails verify (audit)" {
	local tracer bpid
	tracer=$(build_helper ptrace)
	make_bundle a
	cfg a '.process.capabilities |= map_values(. + ["CAP_SYS_PTRACE"])'
	cp "$tracer" "$(bundle_dir a)/rootfs/bin/ptrace"

	# Plain runc: B joins A's pid namespace; A traces and kills B's task.
	plain run -d --bundle "$(bundle_dir a)" plain-a >/dev/null 2>&1 || fail "runc run a failed"
	join_pidns b "$(plain state plain-a | jq .pid)"
	plain run -d --bundle "$(bundle_dir b)" plain-b >/dev/null 2>&1 || fail "runc run b failed"
	bpid=$(nspid "$(plain state plain-b | jq .pid)")
	run plain exec plain-a ptrace "$bpid"
	assert_success
	assert_eq "$output" "traced $bpid"
	run plain exec plain-a kill -KILL "$bpid"
	assert_success
	retry 50 0.1 eval '[[ $(plain state plain-b | jq -r .status) == stopped ]]' || fail "runc: B's task survived A's kill"
	plain delete --force plain-b
	plain delete --force plain-a

	# Zones a and b, strict admission, neither allows the other.
	rt zone create a --policy "$(pidns_policy a strict)" >/dev/null
	rt zone create b --policy "$(pidns_policy b strict)" >/dev/null
	in_zone a a
	run_ct ca a
	join_pidns b "$(ct_pid ca)"
	in_zone b b
	rrun rt run -d --bundle "$(bundle_dir b)" cb
	assert_error_line "zone b \(admission strict\) refuses container cb: signals: the pid namespace is shared with zone a \(pid [0-9]+\), whose tasks Landlock cannot keep from signalling or tracing zone b"
	assert_nothing_left cb
	# Zone b exists: its log keeps the refusal.
	assert_match "$(zone_events b | jq -r 'select(.control == "admission" and .container == "cb" and .decision == "deny") | .object')" \
		"^signals: the pid namespace is shared with zone a \(pid [0-9]+\), whose tasks Landlock cannot keep from signalling or tracing zone b \(give the container a pid namespace of its own, or let zones b and a allow each other in \[signals\] allowed_zones\)$"
	rrun rt zone verify a --format json
	check_is "$stdout" "container ca: pid namespace" true

	# Audit admission: it starts, the route is open, and verify says so on
	# both sides.
	rt zone create b2 --policy "$(pidns_policy b2 audit)" >/dev/null
	in_zone b b2
	run_ct cb b
	assert_match "$(cat "$BATS_TEST_TMPDIR/cb.err")" "zone b2 admits container cb without: signals: the pid namespace is shared with zone a"
	bpid=$(nspid "$(ct_pid cb)")
	rexec ca ptrace "$bpid"
	assert_success
	rrun rt zone verify b2 --format json
	assert_failure 1
	check_is "$stdout" "container cb: pid namespace" false "shared with zone a \(pid [0-9]+\)"
	rrun rt zone verify a --format json
	assert_failure 1
	check_is "$stdout" "container ca: pid namespace" false "shared with zone b2 \(pid [0-9]+\)"
	rt delete --force cb

	# Zones that allow each other may share one, under strict admission.
	rt zone create c --policy "$(pidns_policy c strict a)" >/dev/null
	rt zone update a --policy "$(pidns_policy a strict c)" >/dev/null
	in_zone b c
	run_ct cc b
	rrun rt zone verify c --format json
	check_is "$stdout" "container cc: pid namespace" true
}

@test "pid namespace: a container joining the pid namespace of a task of no zone is refused (strict)" {
	plain run -d --bundle "$(bundle_dir b)" plain-x >/dev/null 2>&1 || fail "runc run failed"
	make_bundle z
	join_pidns z "$(plain state plain-x | jq .pid)"
	rt zone create s --policy "$(pidns_policy s strict)" >/dev/null
	in_zone z s
	rrun rt run -d --bundle "$(bundle_dir z)" cz
	assert_error_line "zone s \(admission strict\) refuses container cz: signals: the pid namespace is shared with tasks of no zone \(pid [0-9]+\)"
	assert_nothing_left cz z
}
