#!/usr/bin/env bats
# run: create + start, in the foreground or detached.

load helpers

@test "run: foreground prints the output and returns exit 0" {
	set_args b echo hello
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" hello
}

@test "run: foreground returns the process's exit status" {
	set_args b sh -c 'exit 7'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure 7
}

@test "run: foreground deletes the container after it exits" {
	set_args b true
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	rrun rt state c1
	assert_failure 1
	assert_nothing_left c1
}

@test "run: foreground passes stdin to the process" {
	set_args b cat
	out=$(echo through-stdin | rt run --bundle "$(bundle_dir b)" c1)
	assert_eq "$out" through-stdin
}

@test "run: foreground killed by SIGKILL exits 137 (128+9)" {
	rt run --bundle "$(bundle_dir b)" c1 >/dev/null 2>&1 </dev/null &
	runpid=$!
	wait_status c1 running
	rt kill c1 KILL
	st=0
	wait "$runpid" || st=$?
	assert_eq "$st" 137
}

@test "run: SIGTERM to an init with a handler is delivered" {
	set_args b sh -c 'trap "exit 42" TERM; while :; do sleep 0.1; done'
	rt run --bundle "$(bundle_dir b)" c1 >/dev/null 2>&1 </dev/null &
	runpid=$!
	wait_status c1 running
	# SIGTERM (15) is bit 14 of the caught-signal mask once sh has set its trap.
	retry 100 0.1 eval '(( 0x$(awk "/^SigCgt:/{print \$2}" /proc/$(ct_pid c1)/status) & 0x4000 ))'
	rt kill c1 TERM
	st=0
	wait "$runpid" || st=$?
	assert_eq "$st" 42
}

@test "run: --detach returns while the container runs" {
	rrun rt run --detach --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(ct_status c1)" running
}

@test "run: -d with --pid-file" {
	rrun rt run -d --pid-file "$BATS_TEST_TMPDIR/c1.pid" --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(cat "$BATS_TEST_TMPDIR/c1.pid")" "$(ct_pid c1)"
}

@test "run: --no-pivot runs the container" {
	set_args b sh -c 'echo ok-no-pivot'
	rrun rt run --no-pivot --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" ok-no-pivot
}

@test "run: --no-subreaper still returns the exit status" {
	set_args b sh -c 'exit 3'
	rrun rt run --no-subreaper --bundle "$(bundle_dir b)" c1
	assert_failure 3
}

@test "run: --keep leaves the stopped container in place" {
	set_args b true
	rrun rt run --keep --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(ct_status c1)" stopped
}

@test "run: missing bundle fails with one line and leaves nothing" {
	rrun rt run --bundle "$BATS_TEST_TMPDIR/nosuch" c1
	assert_error_line 'nosuch|no such file|bundle|config'
	assert_nothing_left c1
}

@test "run: an entrypoint the zone may not execute fails run -d and run with the exec error, leaving nothing (rauha)" {
	requires rauha
	deny_entrypoint b
	rrun rt run -d --bundle "$(bundle_dir b)" c1
	assert_error_line 'run failed: unable to start container process: exec: .*/usr/local/bin/sleep.*: permission denied'
	assert_nothing_left c1
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_error_line 'run failed: unable to start container process: exec: .*/usr/local/bin/sleep.*: permission denied'
	assert_nothing_left c1
}
