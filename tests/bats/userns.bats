#!/usr/bin/env bats
# User namespace with uid/gid mappings.

load helpers

@test "userns: uid_map and gid_map inside" {
	userns_bundle
	set_args b sh -c 'cat /proc/self/uid_map /proc/self/gid_map'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(awk '{$1=$1; print}' <<<"${lines[0]}")" "0 100000 65536"
	assert_eq "$(awk '{$1=$1; print}' <<<"${lines[1]}")" "0 100000 65536"
}

@test "userns: container root is uid 100000 on the host" {
	userns_bundle
	run_ct c1
	pid=$(ct_pid c1)
	assert_eq "$(awk '$1=="Uid:"{print $2}' "/proc/$pid/status")" 100000
	assert_eq "$(awk '$1=="Gid:"{print $2}' "/proc/$pid/status")" 100000
	[[ $(readlink "/proc/$pid/ns/user") != $(readlink /proc/self/ns/user) ]] || fail "user ns is the host's"
	rrun rt exec c1 id -u
	assert_success
	assert_eq "$stdout" 0
}

@test "userns: files owned by host uid 100000 are root's inside" {
	userns_bundle
	set_args b stat -c %u:%g /bin/busybox
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 0:0
}

@test "userns: a user namespace without mappings fails" {
	cfg b '.linux.namespaces += [{type: "user"}]'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'user|mapping|namespace'
	assert_nothing_left c1
}
