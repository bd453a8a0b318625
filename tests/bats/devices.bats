#!/usr/bin/env bats
# Device nodes and the device cgroup.

load helpers

@test "devices: the default nodes exist as character devices" {
	set_args b sh -c 'for d in null zero full random urandom tty; do test -c /dev/$d && echo $d; done | tr "\n" " "'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" "null zero full random urandom tty "
}

@test "devices: the default nodes work" {
	set_args b sh -c 'echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(tr '\n' ' ' <<<"$stdout")" "4 4 "
}

@test "devices: standard symlinks in /dev" {
	set_args b sh -c 'readlink /dev/fd; readlink /dev/stdin; readlink /dev/ptmx'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(tr '\n' ' ' <<<"$stdout")" "/proc/self/fd /proc/self/fd/0 pts/ptmx "
}

@test "devices: linux.devices creates a node with type, major, minor, mode" {
	cfg b '.linux.devices = [{path: "/dev/testnull", type: "c", major: 1, minor: 3, fileMode: 432, uid: 0, gid: 0}]
		| .linux.resources.devices += [{allow: true, type: "c", major: 1, minor: 3, access: "rwm"}]'
	set_args b sh -c 'stat -c "%F %t %T %a" /dev/testnull; echo data > /dev/testnull && echo wrote'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "${lines[0]}" "character special file 1 3 660"
	assert_eq "${lines[1]}" wrote
}

@test "devices: the device cgroup denies a node that no rule allows" {
	# c 1:11 is /dev/kmsg; it is not in the default allow list.
	cfg b '.linux.devices = [{path: "/dev/testkmsg", type: "c", major: 1, minor: 11, fileMode: 438}]'
	set_args b sh -c 'head -c1 /dev/testkmsg'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "$output" 'Operation not permitted'
}

@test "devices: the v1 devices.list reflects the rules" {
	requires cgroups_v1
	cfg b '.linux.resources.devices += [{allow: true, type: "c", major: 1, minor: 11, access: "r"}]'
	run_ct c1
	list=$(cat "/sys/fs/cgroup/devices$(cg_path b)/devices.list")
	grep -qx 'c 1:11 r' <<<"$list" || fail "no c 1:11 r in: $list"
	grep -qx 'c 1:3 rwm' <<<"$list" || fail "/dev/null not allowed: $list"
	! grep -qx 'a \*:\* rwm' <<<"$list" || fail "everything allowed: $list"
}
