#!/usr/bin/env bats
# mounts: tmpfs and bind mounts with options; the root filesystem.

load helpers

@test "mounts: tmpfs with size, mode and noexec" {
	cfg b '.mounts += [{destination: "/mnt/t", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "noexec", "size=1m", "mode=1770"]}]'
	set_args b sh -c 'grep " /mnt/t " /proc/mounts; stat -c %a /mnt/t'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_match "${lines[0]}" '^tmpfs /mnt/t tmpfs '
	for o in nosuid nodev noexec size=1024k mode=1770; do
		assert_match "${lines[0]}" "[ ,]$o[ ,]"
	done
	assert_eq "${lines[1]}" 1770
}

@test "mounts: read-write bind mount of a host directory" {
	mkdir -p "$BATS_TEST_TMPDIR/share"
	echo from-host >"$BATS_TEST_TMPDIR/share/in"
	cfg b '.mounts += [{destination: "/share", type: "bind", source: $s, options: ["rbind", "rw"]}]' --arg s "$BATS_TEST_TMPDIR/share"
	set_args b sh -c 'cat /share/in; echo from-container > /share/out'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" from-host
	assert_eq "$(cat "$BATS_TEST_TMPDIR/share/out")" from-container
}

@test "mounts: read-only bind mount refuses writes" {
	mkdir -p "$BATS_TEST_TMPDIR/share"
	cfg b '.mounts += [{destination: "/share", type: "bind", source: $s, options: ["bind", "ro"]}]' --arg s "$BATS_TEST_TMPDIR/share"
	set_args b sh -c 'touch /share/x'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "$output" 'Read-only file system'
	[[ ! -e $BATS_TEST_TMPDIR/share/x ]] || fail "write reached the host"
}

@test "mounts: bind mount of a single file" {
	echo file-content >"$BATS_TEST_TMPDIR/f"
	cfg b '.mounts += [{destination: "/etc/bound", type: "bind", source: $s, options: ["bind", "ro"]}]' --arg s "$BATS_TEST_TMPDIR/f"
	set_args b cat /etc/bound
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" file-content
}

@test "mounts: the destination is created when missing" {
	cfg b '.mounts += [{destination: "/a/b/c", type: "tmpfs", source: "tmpfs"}]'
	set_args b sh -c 'grep -c " /a/b/c " /proc/mounts'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 1
}

@test "mounts: a bind source that does not exist fails and leaves nothing" {
	cfg b '.mounts += [{destination: "/x", type: "bind", source: $s, options: ["bind"]}]' --arg s "$BATS_TEST_TMPDIR/nosuch"
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'nosuch|no such|mount'
	assert_nothing_left c1
}

@test "mounts: root.readonly makes / read-only" {
	cfg b '.root.readonly = true'
	set_args b sh -c 'touch /x'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "$output" 'Read-only file system'
}

@test "mounts: proc, sysfs (ro), devpts, mqueue and /dev/shm are mounted" {
	set_args b cat /proc/mounts
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	grep -qE '^proc /proc proc ' <<<"$stdout" || fail "no /proc"
	grep -qE '^sysfs /sys sysfs ro[ ,]' <<<"$stdout" || fail "no ro /sys"
	grep -qE '^devpts /dev/pts devpts ' <<<"$stdout" || fail "no /dev/pts"
	grep -qE '^mqueue /dev/mqueue mqueue ' <<<"$stdout" || fail "no /dev/mqueue"
	grep -qE '^shm /dev/shm tmpfs ' <<<"$stdout" || fail "no /dev/shm"
}

@test "mounts: the host's mounts do not leak in and nothing leaks out" {
	before=$(wc -l </proc/self/mountinfo)
	set_args b sh -c 'grep -c . /proc/self/mountinfo'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	[[ $stdout -lt 40 ]] || fail "$stdout mounts inside: host mounts leaked"
	assert_eq "$(wc -l </proc/self/mountinfo)" "$before"
}
