#!/usr/bin/env bats
# linux.maskedPaths and linux.readonlyPaths.

load helpers

@test "maskedPaths: a masked file reads empty" {
	[[ -s /proc/timer_list ]] || [[ -n $(head -c1 /proc/timer_list 2>/dev/null) ]] || skip "no /proc/timer_list on this kernel"
	set_args b sh -c 'wc -c < /proc/timer_list'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 0
}

@test "maskedPaths: a masked directory is empty" {
	set_args b sh -c 'ls -A /sys/firmware | wc -l'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 0
	[[ -n $(ls -A /sys/firmware) ]] || skip "host /sys/firmware is empty too"
}

@test "maskedPaths: an unmasked path is readable" {
	cfg b '.linux.maskedPaths = []'
	set_args b sh -c 'ls -A /sys/firmware | wc -l'
	[[ -n $(ls -A /sys/firmware) ]] || skip "host /sys/firmware is empty"
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	[[ $stdout -gt 0 ]] || fail "unmasked /sys/firmware is empty"
}

@test "maskedPaths: a custom masked file" {
	echo secret >"$(bundle_dir b)/rootfs/etc/secret"
	cfg b '.linux.maskedPaths += ["/etc/secret"]'
	set_args b sh -c 'cat /etc/secret; echo "[end]"'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" "[end]"
}

@test "readonlyPaths: /proc/sys is read-only" {
	set_args b sh -c 'grep " /proc/sys " /proc/mounts; echo 1 > /proc/sys/kernel/domainname'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "${lines[0]}" ' /proc/sys proc ro[ ,]'
	assert_match "$output" 'Read-only file system'
}

@test "readonlyPaths: a custom read-only directory" {
	mkdir -p "$(bundle_dir b)/rootfs/data"
	cfg b '.linux.readonlyPaths += ["/data"]'
	set_args b sh -c 'touch /data/x'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "$output" 'Read-only file system'
}
