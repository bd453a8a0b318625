#!/usr/bin/env bats
# start: runs the user process of a created container.

load helpers

@test "start: runs the process of a created container" {
	set_args b sh -c 'echo started > /ran; sleep 3600'
	create_ct c1
	rrun rt start c1
	assert_success
	wait_status c1 running
	wait_file "$(bundle_dir b)/rootfs/ran"
	assert_eq "$(cat "$(bundle_dir b)/rootfs/ran")" started
}

@test "start: the container's stdout reaches the create caller's stdout" {
	set_args b echo hello-from-start
	create_ct c1
	rrun rt start c1
	assert_success
	wait_status c1 stopped
	retry 20 0.1 grep -q hello-from-start "$BATS_TEST_TMPDIR/c1.out"
}

@test "start: a short-lived process ends as stopped" {
	set_args b true
	create_ct c1
	rrun rt start c1
	assert_success
	wait_status c1 stopped
}

@test "start: twice fails with a one-line error" {
	create_ct c1
	rrun rt start c1
	assert_success
	wait_status c1 running
	rrun rt start c1
	assert_error_line 'running|started|not in created|state'
	assert_eq "$(ct_status c1)" running
}

@test "start: a stopped container cannot be started again" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt start c1
	assert_error_line 'stopped|not in created|state'
}

@test "start: unknown id fails" {
	rrun rt start nosuch
	assert_error_line 'not exist|not found|nosuch'
}

@test "start: a created container whose init was killed from outside is stopped, and start says so" {
	create_ct c1
	kill -KILL "$(ct_pid c1)"
	wait_status c1 stopped
	rrun rt start c1
	assert_error_line 'stopped'
}

@test "start: an entrypoint the zone may not execute fails start with the exec error (rauha)" {
	requires rauha
	# The same entrypoint without the zone's rule starts.
	make_bundle b2
	mkdir -p "$(bundle_dir b2)/rootfs/usr/local/bin"
	cp "$BUSYBOX" "$(bundle_dir b2)/rootfs/usr/local/bin/sleep"
	set_args b2 /usr/local/bin/sleep 100
	create_ct c2 b2
	rrun rt start c2
	assert_success
	wait_status c2 running

	deny_entrypoint b
	create_ct c1
	rrun rt start c1
	assert_error_line 'unable to start container process: exec: .*/usr/local/bin/sleep.*: permission denied'
	wait_status c1 stopped
}
