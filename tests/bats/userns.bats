#!/usr/bin/env bats
# User namespace with uid/gid mappings.

load helpers

userns_bundle() {
	requires userns
	# The rootfs belongs to host root, which is unmapped (nobody) inside:
	# busybox stays world-readable and executable. sysfs and cgroup mounts
	# need privileges over the host's objects: drop them, as rootless does.
	cfg b '.linux.namespaces += [{type: "user"}]
		| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
		| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	# Mapped root (host uid 100000) must reach and own the rootfs; bats'
	# temp dirs are 0700.
	chown -R 100000:100000 "$(bundle_dir b)/rootfs"
	local d=$BATS_TEST_TMPDIR
	while [[ $d != / && $d != /tmp ]]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
}

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
