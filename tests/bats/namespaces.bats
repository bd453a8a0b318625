#!/usr/bin/env bats
# linux.namespaces: new namespaces differ from the host's, path joins one.

load helpers

ns_inode() {
	readlink "$1" | tr -dc '0-9'
}

@test "namespaces: pid, uts, ipc, mnt, net are new" {
	run_ct c1
	pid=$(ct_pid c1)
	for ns in pid uts ipc mnt net; do
		rrun rt exec c1 readlink "/proc/1/ns/$ns"
		assert_success
		inside=$(tr -dc '0-9' <<<"$stdout")
		host=$(ns_inode "/proc/self/ns/$ns")
		[[ -n $inside && $inside != "$host" ]] || fail "$ns namespace is the host's ($inside)"
		# The init as seen from the host is in the same namespace.
		assert_eq "$(ns_inode "/proc/$pid/ns/$ns")" "$inside"
	done
}

@test "namespaces: the init is pid 1 in its pid namespace" {
	set_args b sh -c 'echo $$'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 1
}

@test "namespaces: without a network entry the host netns is shared" {
	cfg b '.linux.namespaces |= map(select(.type != "network"))'
	run_ct c1
	rrun rt exec c1 readlink /proc/1/ns/net
	assert_success
	assert_eq "$(tr -dc '0-9' <<<"$stdout")" "$(ns_inode /proc/self/ns/net)"
}

@test "namespaces: a new netns has only loopback" {
	set_args b sh -c 'ls /sys/class/net | tr "\n" " "'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" "lo "
}

@test "namespaces: joining a namespace by path" {
	make_bundle b2
	run_ct c1 b
	pid=$(ct_pid c1)
	cfg b2 '.linux.namespaces |= map(if .type == "network" or .type == "ipc" then .path = ("/proc/" + $p + "/ns/" + (if .type == "network" then "net" else .type end)) else . end)' \
		--arg p "$pid"
	run_ct c2 b2
	pid2=$(ct_pid c2)
	assert_eq "$(ns_inode "/proc/$pid2/ns/net")" "$(ns_inode "/proc/$pid/ns/net")"
	assert_eq "$(ns_inode "/proc/$pid2/ns/ipc")" "$(ns_inode "/proc/$pid/ns/ipc")"
	[[ $(ns_inode "/proc/$pid2/ns/uts") != "$(ns_inode "/proc/$pid/ns/uts")" ]] || fail "uts shared"
}

@test "namespaces: a cgroup namespace" {
	cfg b '.linux.namespaces += [{"type": "cgroup"}]'
	run_ct c1
	rrun rt exec c1 readlink /proc/1/ns/cgroup
	assert_success
	[[ $(tr -dc '0-9' <<<"$stdout") != "$(ns_inode /proc/self/ns/cgroup)" ]] || fail "cgroup ns is the host's"
	rrun rt exec c1 cat /proc/self/cgroup
	assert_success
	grep -q '^0::/$' <<<"$stdout" || fail "cgroupns root is not /: $stdout"
}

@test "namespaces: joining a missing namespace path fails and leaves nothing" {
	cfg b '.linux.namespaces |= map(if .type == "network" then .path = "/proc/999999999/ns/net" else . end)'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'namespace|no such|999999999|net'
	assert_nothing_left c1
}
