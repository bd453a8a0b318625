#!/usr/bin/env bats
# pause and resume: the freezer cgroup.

load helpers

setup() {
	requires root freezer
	TEST_UID=t${BATS_SUITE_TEST_NUMBER:-0}-$$
	ROOT=$BATS_TEST_TMPDIR/state
	mkdir -p "$ROOT"
	build_rootfs_cache
	make_bundle b
}

freezer_state() {
	cat "/sys/fs/cgroup/freezer$(cg_path b)/freezer.state"
}

@test "pause: a running container becomes paused and frozen" {
	set_args b sh -c 'while :; do echo x >> /tick; sleep 0.05; done'
	run_ct c1
	rrun rt pause c1
	assert_success
	assert_eq "$(ct_status c1)" paused
	assert_eq "$(freezer_state)" FROZEN
	t1=$(wc -l <"$(bundle_dir b)/rootfs/tick")
	# Not a wait: a window of six loop periods in which a running loop ticks.
	sleep 0.3
	assert_eq "$(wc -l <"$(bundle_dir b)/rootfs/tick")" "$t1"
	assert_eq "$(rt list | awk '$1=="c1"{print $3}')" paused
}

@test "resume: a paused container runs again" {
	set_args b sh -c 'while :; do echo x >> /tick; sleep 0.05; done'
	run_ct c1
	rt pause c1
	rrun rt resume c1
	assert_success
	assert_eq "$(ct_status c1)" running
	assert_eq "$(freezer_state)" THAWED
	t1=$(wc -l <"$(bundle_dir b)/rootfs/tick")
	retry 30 0.1 eval 'test "$(wc -l <"$(bundle_dir b)/rootfs/tick")" -gt "$t1"'
}

@test "resume: a running container fails with one line" {
	run_ct c1
	rrun rt resume c1
	assert_error_line 'not paused|paused'
	assert_eq "$(ct_status c1)" running
}

@test "pause: a stopped container fails with one line" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt pause c1
	assert_error_line 'not running|stopped'
}

@test "pause: a missing container fails" {
	rrun rt pause nosuch
	assert_error_line 'not exist|not found|nosuch'
	rrun rt resume nosuch
	assert_error_line 'not exist|not found|nosuch'
}

@test "pause: exec into a paused container is refused or waits; kill KILL still works" {
	run_ct c1
	rt pause c1
	rrun rt kill c1 KILL
	assert_success
	rt resume c1 2>/dev/null || true
	wait_status c1 stopped
}
