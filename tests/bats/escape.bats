#!/usr/bin/env bats
# Escape routes: what a bundle can hand its container that would undo the zone
# from inside — a way out of its cgroup (which takes it away from the egress
# programs and the limits), or a way to the enforcement itself (the root's
# pinned maps, its state root). Each route is first shown to work under plain
# runc with the same bundle; then rauha closes it (the write fails) or strict
# admission refuses it, and an audit zone starts it and `zone verify` fails,
# naming the route.

load helpers
load zone_helpers

RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}

eval "zone_$(declare -f teardown)"

teardown() {
	local id
	# Containers started with plain runc, by id under this test's runc root;
	# the helpers' teardown then kills whatever is left in this test's
	# cgroups (the escape targets included) and removes them.
	for id in $(cat "$BATS_TEST_TMPDIR/runc.ids" 2>/dev/null); do
		timeout 20 "$RUNC" --root "$BATS_TEST_TMPDIR/runc" delete --force "$id" >/dev/null 2>&1 || true
	done
	zone_teardown
}

# runc_run ID BUNDLE-NAME: start the bundle under plain runc, detached.
runc_run() {
	echo "$1" >>"$BATS_TEST_TMPDIR/runc.ids"
	if ! timeout 60 "$RUNC" --root "$BATS_TEST_TMPDIR/runc" run -d --bundle "$(bundle_dir "$2")" "$1" \
		>"$BATS_TEST_TMPDIR/$1.out" 2>"$BATS_TEST_TMPDIR/$1.err" </dev/null; then
		cat "$BATS_TEST_TMPDIR/$1.err" >&2
		fail "runc run -d $1 failed"
	fi
}

# runc_exec ID CMD...: exec under plain runc, result as rrun gives it.
runc_exec() {
	local id=$1
	shift
	rrun timeout 60 "$RUNC" --root "$BATS_TEST_TMPDIR/runc" exec "$id" "$@"
}

runc_delete() {
	timeout 20 "$RUNC" --root "$BATS_TEST_TMPDIR/runc" delete --force "$1"
}

# escape_target: a cgroup of this test (a sibling of the container's, under
# the test prefix) in the unified and the pids hierarchies: the only place a
# container of these tests escapes to. Prints its path below the roots.
escape_target() {
	local t=$CG_PREFIX/$TEST_UID-escape
	mkdir -p "/sys/fs/cgroup/unified$t" "/sys/fs/cgroup/pids$t"
	echo "$t"
}

# backend: the backend of this host, from a throwaway zone's report.
backend() {
	rt zone create probe --preset privileged >/dev/null
	rt zone verify probe --format json | jq -r .backend
	rt zone delete probe >/dev/null
}

# jail_policy [ADMISSION]: a policy without egress, admission strict unless given.
jail_policy() {
	policy "jail-${1:-strict}" <<-EOF
		[zone]
		admission = "${1:-strict}"
		[network]
		allowed_egress = []
	EOF
}

# strict_refuses BUNDLE MESSAGE: a container "jail" of BUNDLE in the strict
# zone jail is refused at create with MESSAGE, and nothing of it is left.
strict_refuses() {
	in_zone "$1" jail "$(jail_policy)"
	rrun rt run -d --bundle "$(bundle_dir "$1")" jail
	assert_failure 1
	assert_match "$stderr" "$2"
	assert_nothing_left jail
}

# check_is JSON NAME PASSED [DETAIL-SUBSTRING]: the report has check NAME with
# that verdict (and detail).
check_is() {
	jqe --arg n "$2" --argjson p "$3" --arg d "${4:-}" \
		'any(.checks[]; .name == $n and .passed == $p and (.detail | contains($d)))' <<<"$1" >/dev/null ||
		fail "verify has no check \"$2\" with passed=$3${4:+ naming \"$4\"}: $1"
}

# audit_verify_fails ID BUNDLE CHECK DETAIL: in a zone with admission audit the
# bundle starts, and verify exits 1 with CHECK failing and naming DETAIL.
audit_verify_fails() {
	in_zone "$2" loose "$(jail_policy audit)"
	rrun rt run -d --bundle "$(bundle_dir "$2")" "$1"
	assert_success
	assert_match "$stderr" "zone loose admits container $1 without: "
	wait_status "$1" running
	rrun rt zone verify --container "$1" --format json
	assert_failure 1
	jqe '.isolated == false' <<<"$stdout" >/dev/null || fail "verify says isolated: $stdout"
	check_is "$stdout" "container $1: $3" false "$4"
}

# procs_line: the cgroup v2 line of /proc/self/cgroup, as a shell in a
# container prints it after trying to move itself.
MOVE='echo $$ >"$1/cgroup.procs"; s=$?; grep "^0::" /proc/self/cgroup; exit $s'

@test "cgroup escape: an ro rbind of /sys/fs/cgroup (writable cgroup mounts below it) is made read-only all the way down" {
	local t
	t=$(escape_target)
	cfg b '.mounts += [{destination: "/mnt/cg", type: "bind", source: "/sys/fs/cgroup", options: ["rbind", "ro"]}]'

	# runc: "ro" holds only for the tmpfs at the top; the container moves
	# itself into another cgroup, in v2 and in the v1 pids hierarchy.
	runc_run esc b
	runc_exec esc sh -c "$MOVE" sh "/mnt/cg/unified$t"
	assert_success
	assert_eq "$stdout" "0::$t"
	runc_exec esc sh -c 'echo $$ >"$1/cgroup.procs" && grep ":pids:" /proc/self/cgroup' sh "/mnt/cg/pids$t"
	assert_success
	assert_match "$stdout" ":pids:$t\$"
	runc_delete esc

	# rauha: a strict zone admits it, the tree is read-only, nothing moves.
	in_zone b jail "$(jail_policy)"
	run_ct jail b
	rexec jail sh -c "$MOVE" sh "/mnt/cg/unified$t"
	assert_failure
	assert_match "$stderr" "Read-only file system"
	assert_eq "$stdout" "0::$(cg_path b)"
	rexec jail sh -c 'echo $$ >"$1/cgroup.procs"' sh "/mnt/cg/pids$t"
	assert_failure
	assert_match "$stderr" "Read-only file system"
	rrun rt zone verify --container jail --format json
	check_is "$stdout" "container jail: enforcement reachable" true
	if [[ $(jq -r .backend <<<"$stdout") == landlock ]]; then
		check_is "$stdout" "container jail: cgroup escape" true
	fi
}

@test "cgroup escape: a writable rbind of /sys/fs/cgroup is refused by strict admission, flagged by verify" {
	local t
	t=$(escape_target)
	cfg b '.mounts += [{destination: "/mnt/cg", type: "bind", source: "/sys/fs/cgroup", options: ["rbind", "rw"]}]'
	runc_run esc b
	runc_exec esc sh -c "$MOVE" sh "/mnt/cg/unified$t"
	assert_success
	assert_eq "$stdout" "0::$t"
	runc_delete esc

	[[ $(backend) == landlock ]] || skip "bpf-lsm denies the write itself (enforce.bats, tests/vm/matrix.sh)"
	strict_refuses b "refuses container jail: cgroup escape guard: /mnt/cg is a writable recursive bind of /sys/fs/cgroup, which holds the cgroup hierarchy /sys/fs/cgroup/"

	audit_verify_fails jail b "cgroup escape" "/mnt/cg is a writable recursive bind of /sys/fs/cgroup"
	# It is a real route: audit admission means the container can leave.
	rexec jail sh -c "$MOVE" sh "/mnt/cg/unified$t"
	assert_success
	assert_eq "$stdout" "0::$t"
}

@test "cgroup escape and enforcement: an ro rbind of /sys (cgroup and bpf filesystems below it) is refused on every backend" {
	local t
	t=$(escape_target)
	rt zone create pins --preset strict >/dev/null # the root's pins exist
	cfg b '.mounts += [{destination: "/mnt/sys", type: "bind", source: "/sys", options: ["rbind", "ro"]}]'
	runc_run esc b
	runc_exec esc sh -c "$MOVE" sh "/mnt/sys/fs/cgroup/unified$t"
	assert_success
	assert_eq "$stdout" "0::$t"
	runc_exec esc ls "/mnt/sys/fs/bpf/${PIN_DIR##*/}"
	assert_success
	assert_match "$stdout" "policy"
	runc_delete esc

	strict_refuses b "refuses container jail: enforcement reachable: /mnt/sys is a recursive bind of /sys, which holds the bpf filesystem /sys/fs/bpf"

	audit_verify_fails jail b "enforcement reachable" "/mnt/sys is a recursive bind of /sys"
	# The cgroup side of the same bind is closed (read-only all the way down).
	rexec jail sh -c "$MOVE" sh "/mnt/sys/fs/cgroup/unified$t"
	assert_failure
	assert_match "$stderr" "Read-only file system"
}

@test "cgroup escape: CAP_SYS_ADMIN + CAP_DAC_READ_SEARCH in a cgroup namespace: open_by_handle_at is denied" {
	local t fh handle
	t=$(escape_target)
	fh=$(build_helper cgroupfh)
	install -m 0755 "$fh" "$(bundle_dir b)/rootfs/bin/cgroupfh"
	handle=$("$fh" handle "/sys/fs/cgroup/unified$t")
	cfg b '.linux.namespaces += [{type: "cgroup"}] | .process.capabilities |= map_values(. + ["CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH"])'
	local join='mkdir -p /tmp/cg && mount -t cgroup2 none /tmp/cg && { cgroupfh join /tmp/cg "$1" grep "^0::" /proc/self/cgroup || { s=$?; grep "^0::" /proc/self/cgroup; exit $s; }; }'

	# runc: the namespace's own cgroup2 mount shows only its subtree, but a
	# handle opens a cgroup outside it, and the move succeeds there.
	runc_run esc b
	runc_exec esc sh -c "$join" sh "$handle"
	assert_success
	assert_eq "$stdout" "0::/../$TEST_UID-escape"
	runc_delete esc

	# rauha: admitted by a strict zone that keeps both capabilities;
	# open_by_handle_at fails with EPERM on the fallback (seccomp), the
	# bpf-lsm guard refuses the cgroup.procs open.
	in_zone b jail "$(jail_policy)"
	run_ct jail b
	rexec jail sh -c "$join" sh "$handle"
	assert_failure 1
	assert_match "$stderr" "cgroupfh: (open_by_handle_at|open cgroup.procs): operation not permitted"
	assert_eq "$stdout" "0::/"
	rrun rt zone verify --container jail --format json
	if [[ $(jq -r .backend <<<"$stdout") == landlock ]]; then
		check_is "$stdout" "container jail: cgroup escape" true
	fi
}

@test "cgroup escape: CAP_SYS_ADMIN remounts a read-only bind of the hierarchy read-write: refused, flagged by verify" {
	local t remount
	t=$(escape_target)
	cfg b '.linux.namespaces += [{type: "cgroup"}] | .process.capabilities |= map_values(. + ["CAP_SYS_ADMIN"])
		| .mounts += [{destination: "/mnt/cg", type: "bind", source: "/sys/fs/cgroup/unified", options: ["bind", "ro"]}]'
	remount="mount -o remount,bind,rw /mnt/cg && $MOVE"
	runc_run esc b
	runc_exec esc sh -c "$MOVE" sh "/mnt/cg$t"
	assert_failure
	assert_match "$stderr" "Read-only file system"
	runc_exec esc sh -c "$remount" sh "/mnt/cg$t"
	assert_success
	assert_eq "$stdout" "0::/../$TEST_UID-escape"
	runc_delete esc

	[[ $(backend) == landlock ]] || skip "bpf-lsm denies the write itself (enforce.bats, tests/vm/matrix.sh)"
	strict_refuses b "refuses container jail: cgroup escape guard: CAP_SYS_ADMIN can remount a read-only bind of a cgroup hierarchy read-write"

	audit_verify_fails jail b "cgroup escape" "remount"
	rexec jail sh -c "$remount" sh "/mnt/cg$t"
	assert_success
	assert_eq "$stdout" "0::/../$TEST_UID-escape"
}

@test "cgroup escape: CAP_SYS_ADMIN in a shared pid namespace enters a host process's cgroup namespace: Landlock or admission stops it" {
	local t fh target enter
	t=$(escape_target)
	fh=$(build_helper cgroupfh)
	install -m 0755 "$fh" "$(bundle_dir b)/rootfs/bin/cgroupfh"
	host_pid b
	cfg b '.linux.namespaces += [{type: "cgroup"}] | .process.capabilities |= map_values(. + ["CAP_SYS_ADMIN"])'
	# A host process without capabilities: a member without CAP_SYS_PTRACE
	# may open its namespace files.
	setpriv --bounding-set=-all --inh-caps=-all sleep 600 >/dev/null 2>&1 </dev/null 3>&- &
	target=$!
	echo "$target" >>"$BATS_TEST_TMPDIR/host.pids"
	enter='mkdir -p /tmp/cg && mount -t cgroup2 none /tmp/cg && echo $$ >"/tmp/cg$1/cgroup.procs" && grep "^0::" /proc/self/cgroup'
	runc_run esc b
	runc_exec esc cgroupfh setns "/proc/$target/ns/cgroup" sh -c "$enter" sh "$t"
	assert_success
	assert_eq "$stdout" "0::$t"
	runc_delete esc

	[[ $(backend) == landlock ]] || skip "bpf-lsm denies the write itself (enforce.bats, tests/vm/matrix.sh)"
	in_zone b jail "$(jail_policy)"
	rrun rt run -d --bundle "$(bundle_dir b)" jail
	if [[ $status -ne 0 ]]; then
		# Landlock ABI < 6: no signal scope, so no domain holds the member,
		# and admission names both gaps.
		assert_match "$stderr" "cannot scope signals.*CAP_SYS_ADMIN in a shared pid namespace can enter another process's cgroup namespace"
		audit_verify_fails jail b "cgroup escape" "shared pid namespace"
		return 0
	fi
	# The member's Landlock domain (scoped for signals) denies ptrace-mode
	# access to tasks outside it, so the namespace file does not open.
	wait_status jail running
	rexec jail cgroupfh setns "/proc/$target/ns/cgroup" sh -c "$enter" sh "$t"
	assert_failure 1
	assert_match "$stderr" "cgroupfh: open /proc/$target/ns/cgroup: permission denied"
	rrun rt zone verify --container jail --format json
	check_is "$stdout" "container jail: cgroup escape" true
}

@test "enforcement reachable: a read-only bind of the root's pin directory is refused on every backend" {
	rt zone create pins --preset strict >/dev/null # the root's pins exist
	cfg b '.mounts += [{destination: "/mnt/pins", type: "bind", source: $p, options: ["bind", "ro"]}]' --arg p "$PIN_DIR"

	# runc: the pinned maps are there for any root process to open.
	runc_run esc b
	runc_exec esc ls /mnt/pins
	assert_success
	assert_match "$stdout" "policy"
	runc_delete esc

	strict_refuses b "refuses container jail: enforcement reachable: /mnt/pins is a bind of $PIN_DIR, a bpf filesystem"

	audit_verify_fails jail b "enforcement reachable" "/mnt/pins is a bind of $PIN_DIR"
}

@test "enforcement reachable: a bind of the state root is refused on every backend" {
	rt zone create pins --preset strict >/dev/null # the database exists
	cfg b '.mounts += [{destination: "/mnt/state", type: "bind", source: $r, options: ["bind", "ro"]}]' --arg r "$ROOT"

	runc_run esc b
	runc_exec esc ls /mnt/state
	assert_success
	assert_match "$stdout" "rauha.db"
	runc_delete esc

	strict_refuses b "refuses container jail: enforcement reachable: /mnt/state is a bind of $ROOT, which shows rauha's state root"

	audit_verify_fails jail b "enforcement reachable" "state root"
}

@test "enforcement reachable: a bind of the host's /proc (a host process's root leads to the state root) is refused on every backend" {
	local target
	rt zone create pins --preset strict >/dev/null # the database exists
	cfg b '.mounts += [{destination: "/mnt/proc", type: "bind", source: "/proc", options: ["rbind", "ro"]}]'
	setpriv --bounding-set=-all --inh-caps=-all sleep 600 >/dev/null 2>&1 </dev/null 3>&- &
	target=$!
	echo "$target" >>"$BATS_TEST_TMPDIR/host.pids"

	runc_run esc b
	runc_exec esc ls "/mnt/proc/$target/root$ROOT"
	assert_success
	assert_match "$stdout" "rauha.db"
	runc_delete esc

	strict_refuses b "refuses container jail: enforcement reachable: /mnt/proc is a bind of /proc, which shows a procfs of the host"

	audit_verify_fails jail b "enforcement reachable" "procfs of the host"
}
