#!/usr/bin/env bats
# File descriptors: what reaches the container and what must not.

load helpers

# rt_with_fds "REDIRS" ARGS...: run the runtime in a child bash that first
# opens REDIRS (e.g. '3>f 4>g'); fd 3 is bats' own channel in this shell.
rt_with_fds() {
	local redirs=$1
	shift
	rrun bash -c "exec $redirs; exec timeout 30 \"\$0\" --root \"\$1\" \"\${@:2}\"" "$RUNTIME" "$ROOT" "$@"
}

# fds_of PID: the open fd numbers of a host process, sorted, space-separated.
# Read from the host so no shell inside the container adds fds of its own.
fds_of() {
	ls "/proc/$1/fd" | sort -n | tr '\n' ' '
}

@test "leaked fds of the caller do not reach the container process (create)" {
	# containerd leaks its socket as fd 3 into create; here 3, 5 and 9.
	rt_with_fds '3>/dev/null 5>/dev/null 9>/dev/null' create --bundle "$(bundle_dir b)" c1
	assert_success
	rt_with_fds '3>/dev/null 5>/dev/null 9>/dev/null' start c1
	assert_success
	wait_status c1 running
	pid=$(ct_pid c1)
	retry 30 0.1 eval 'test "$(cat "/proc/$pid/comm")" = sleep'
	assert_eq "$(fds_of "$pid")" "0 1 2 "
}

@test "leaked fds of the caller do not reach the container process (run -d)" {
	rt_with_fds '3>/dev/null 5>/dev/null 7>/dev/null' run -d --bundle "$(bundle_dir b)" c1
	assert_success
	pid=$(ct_pid c1)
	retry 30 0.1 eval 'test "$(cat "/proc/$pid/comm")" = sleep'
	assert_eq "$(fds_of "$pid")" "0 1 2 "
}

@test "leaked fds of the caller do not reach the container (foreground run)" {
	# exec ls: ls sees its inherited fds plus its own directory fd (3).
	set_args b sh -c 'exec ls /proc/self/fd'
	rt_with_fds '3>/dev/null 5>/dev/null 7>/dev/null' run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(sort -n <<<"$stdout" | tr '\n' ' ')" "0 1 2 3 "
}

@test "leaked fds do not reach exec'd processes" {
	run_ct c1
	rt_with_fds '3>/dev/null 6>/dev/null' exec -d --pid-file "$BATS_TEST_TMPDIR/e.pid" c1 sleep 100
	assert_success
	pid=$(cat "$BATS_TEST_TMPDIR/e.pid")
	assert_eq "$(fds_of "$pid")" "0 1 2 "
}

@test "run --preserve-fds 2 passes fds 3 and 4 and nothing else" {
	set_args b sh -c 'echo to-3 >&3; echo to-4 >&4; exec sleep 3600'
	rt_with_fds "3>$BATS_TEST_TMPDIR/f3 4>$BATS_TEST_TMPDIR/f4 5>/dev/null" run -d --preserve-fds 2 --bundle "$(bundle_dir b)" c1
	assert_success
	retry 50 0.1 grep -q to-4 "$BATS_TEST_TMPDIR/f4"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/f3")" to-3
	pid=$(ct_pid c1)
	retry 30 0.1 eval 'test "$(cat "/proc/$pid/comm")" = sleep'
	assert_eq "$(fds_of "$pid")" "0 1 2 3 4 "
}

@test "create --preserve-fds 1 passes fd 3 to the init" {
	set_args b sh -c 'echo init-fd3 >&3; sleep 3600'
	rt_with_fds "3>$BATS_TEST_TMPDIR/f3" create --preserve-fds 1 --bundle "$(bundle_dir b)" c1
	assert_success
	rt start c1
	retry 50 0.1 grep -q init-fd3 "$BATS_TEST_TMPDIR/f3"
}

@test "LISTEN_FDS: socket-activation fds are passed with LISTEN_FDS and LISTEN_PID=1" {
	set_args b sh -c 'echo "$LISTEN_FDS $LISTEN_PID"; echo activated >&3'
	# LISTEN_PID must be the runtime's own pid (sd_listen_fds semantics):
	# export it in the shell that then execs the runtime.
	rrun bash -c 'exec 3>"$0"; export LISTEN_FDS=1 LISTEN_PID=$$; exec "$1" --root "$2" run --bundle "$3" c1' \
		"$BATS_TEST_TMPDIR/activated" "$RUNTIME" "$ROOT" "$(bundle_dir b)"
	assert_success
	assert_eq "$stdout" "1 1"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/activated")" activated
}

@test "LISTEN_FDS with a foreign LISTEN_PID passes nothing" {
	set_args b sh -c 'echo "fds=${LISTEN_FDS:-none}"; exec ls /proc/self/fd'
	rrun bash -c 'exec 3>/dev/null; export LISTEN_FDS=1 LISTEN_PID=1; exec "$0" --root "$1" run --bundle "$2" c1' \
		"$RUNTIME" "$ROOT" "$(bundle_dir b)"
	assert_success
	assert_eq "${lines[0]}" fds=none
	assert_eq "$(sed 1d <<<"$stdout" | sort -n | tr '\n' ' ')" "0 1 2 3 "
}
