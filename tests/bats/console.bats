#!/usr/bin/env bats
# --tty and --console-socket for create and run (exec is in exec.bats).

load helpers

# start_recvtty: a console-socket peer; sets SOCK and TTYOUT.
start_recvtty() {
	requires go
	local recvtty
	recvtty=$(build_helper recvtty)
	SOCK=$BATS_TEST_TMPDIR/console.sock
	TTYOUT=$BATS_TEST_TMPDIR/tty.out
	bg "$recvtty" -out "$TTYOUT" -ready "$BATS_TEST_TMPDIR/tty.ready" "$SOCK"
	wait_file "$BATS_TEST_TMPDIR/tty.ready"
}

@test "create: process.terminal with --console-socket sends the pty master" {
	start_recvtty
	cfg b '.process.terminal = true'
	set_args b sh -c 'tty; echo create-tty-ok; sleep 3600'
	rrun rt create --console-socket "$SOCK" --bundle "$(bundle_dir b)" c1
	assert_success
	rt start c1
	retry 50 0.1 grep -q create-tty-ok "$TTYOUT"
	grep -q '^/dev/pts/0' "$TTYOUT" || fail "not on /dev/pts/0: $(cat "$TTYOUT")"
}

@test "run -d -t via process.terminal and --console-socket" {
	start_recvtty
	cfg b '.process.terminal = true'
	set_args b sh -c 'test -t 0 && test -t 1 && echo both-tty; sleep 3600'
	rrun rt run -d --console-socket "$SOCK" --bundle "$(bundle_dir b)" c1
	assert_success
	retry 50 0.1 grep -q both-tty "$TTYOUT"
}

@test "the console reads input typed into the pty" {
	requires go
	recvtty=$(build_helper recvtty)
	SOCK=$BATS_TEST_TMPDIR/console.sock
	bg "$recvtty" -in $'typed-line\n' -out "$BATS_TEST_TMPDIR/tty.out" -ready "$BATS_TEST_TMPDIR/r" "$SOCK"
	wait_file "$BATS_TEST_TMPDIR/r"
	cfg b '.process.terminal = true'
	set_args b sh -c 'read l; echo "got:$l" > /got; sleep 3600'
	rrun rt run -d --console-socket "$SOCK" --bundle "$(bundle_dir b)" c1
	assert_success
	wait_file "$(bundle_dir b)/rootfs/got"
	assert_eq "$(cat "$(bundle_dir b)/rootfs/got")" got:typed-line
}

@test "process.terminal without --console-socket fails for create" {
	cfg b '.process.terminal = true'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'console'
	assert_nothing_left c1
}

@test "--console-socket without a terminal fails" {
	start_recvtty
	rrun rt create --console-socket "$SOCK" --bundle "$(bundle_dir b)" c1
	assert_error_line 'console|terminal|tty'
	assert_nothing_left c1
}

@test "--console-socket pointing nowhere fails and leaves nothing" {
	cfg b '.process.terminal = true'
	rrun rt create --console-socket "$BATS_TEST_TMPDIR/nosuch.sock" --bundle "$(bundle_dir b)" c1
	assert_error_line 'console|socket|connect|no such'
	assert_nothing_left c1
}

@test "run in the foreground with a terminal (script gives a tty), also as a background job of it" {
	command -v script >/dev/null || skip "needs script(1) (bsdutils)"
	cfg b '.process.terminal = true'
	set_args b sh -c 'test -t 1 && echo fg-tty-ok'
	local sh
	for sh in /bin/bash /bin/sh; do
		# bash execs timeout(1), so rauha leads the pty's foreground group;
		# dash forks it, and timeout moves itself and rauha into a new,
		# background group, where touching the terminal's modes or reading
		# it would stop rauha with SIGTTOU/SIGTTIN.
		out=$(SHELL=$sh script -qec "timeout -k 5 30 $RUNTIME --root $ROOT run --bundle $(bundle_dir b) c$RANDOM; echo rc=\$?" /dev/null </dev/null)
		assert_match "$out" fg-tty-ok
		assert_match "$out" "rc=0"
	done
}

# start_pidfd_peer: a --pidfd-socket peer at $PIDFD_SOCK that writes the Pid:
# line of the pidfd it receives to $PIDFD_OUT.
start_pidfd_peer() {
	requires go
	"$RUNTIME" create --help | grep -q -- --pidfd-socket || skip "the runtime has no --pidfd-socket (runc < 1.2)"
	PIDFD_SOCK=$BATS_TEST_TMPDIR/pidfd.sock
	PIDFD_OUT=$BATS_TEST_TMPDIR/pidfd.out
	rm -f "$BATS_TEST_TMPDIR/pidfd.ready" "$PIDFD_SOCK" "$PIDFD_OUT"
	bg "$(build_helper recvtty)" -pidfd -out "$PIDFD_OUT" -ready "$BATS_TEST_TMPDIR/pidfd.ready" "$PIDFD_SOCK"
	wait_file "$BATS_TEST_TMPDIR/pidfd.ready"
}

@test "create and exec: --pidfd-socket receives a pidfd of the init and of the exec'd process" {
	start_pidfd_peer
	rrun rt create --pidfd-socket "$PIDFD_SOCK" --bundle "$(bundle_dir b)" c1
	assert_success
	wait_file "$PIDFD_OUT"
	assert_eq "$(cat "$PIDFD_OUT")" "Pid: $(ct_pid c1)"
	rt start c1

	start_pidfd_peer
	rrun rt exec -d --pid-file "$BATS_TEST_TMPDIR/exec.pid" --pidfd-socket "$PIDFD_SOCK" c1 sleep 100
	assert_success
	wait_file "$PIDFD_OUT"
	assert_eq "$(cat "$PIDFD_OUT")" "Pid: $(cat "$BATS_TEST_TMPDIR/exec.pid")"
}

@test "--pidfd-socket pointing nowhere fails and leaves nothing" {
	"$RUNTIME" create --help | grep -q -- --pidfd-socket || skip "the runtime has no --pidfd-socket (runc < 1.2)"
	rrun rt create --pidfd-socket "$BATS_TEST_TMPDIR/nosuch.sock" --bundle "$(bundle_dir b)" c1
	assert_error_line 'pidfd-socket.*(no such|connect)'
	assert_nothing_left c1
}
