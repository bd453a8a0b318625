#!/usr/bin/env bats
# NOTIFY_SOCKET: sd_notify from inside the container reaches the host socket.

load helpers

setup() {
	requires root go
	TEST_UID=t${BATS_SUITE_TEST_NUMBER:-0}-$$
	ROOT=$BATS_TEST_TMPDIR/state
	mkdir -p "$ROOT"
	build_rootfs_cache
	make_bundle b
	SDNOTIFY=$(build_helper sdnotify)
	cp "$SDNOTIFY" "$(bundle_dir b)/rootfs/bin/sdnotify"
	HOSTSOCK=$BATS_TEST_TMPDIR/notify.sock
	GOT=$BATS_TEST_TMPDIR/notify.got
	bg "$SDNOTIFY" listen "$HOSTSOCK" "$GOT"
	retry 50 0.1 test -S "$HOSTSOCK"
}

@test "NOTIFY_SOCKET: READY=1 sent inside reaches the host socket" {
	set_args b sh -c 'echo "$NOTIFY_SOCKET" > /notify-path; sdnotify send READY=1; sleep 3600'
	status=0
	NOTIFY_SOCKET=$HOSTSOCK rt create --bundle "$(bundle_dir b)" c1 \
		>"$BATS_TEST_TMPDIR/c1.out" 2>"$BATS_TEST_TMPDIR/c1.err" </dev/null || status=$?
	assert_eq "$status" 0
	NOTIFY_SOCKET=$HOSTSOCK rt start c1 >"$BATS_TEST_TMPDIR/start.out" 2>&1 </dev/null || status=$?
	[[ $status -eq 0 ]] || fail "start failed: $(cat "$BATS_TEST_TMPDIR/start.out")"
	retry 50 0.1 grep -q '^READY=1' "$GOT"
	# runc binds its own socket at /run/notify/notify.sock inside.
	assert_eq "$(cat "$(bundle_dir b)/rootfs/notify-path")" /run/notify/notify.sock
}

@test "NOTIFY_SOCKET: the socket inside is a socket; MAINPID is the host pid" {
	set_args b sh -c 'test -S "$NOTIFY_SOCKET" && echo is-socket > /sock-ok; sdnotify send READY=1; sleep 3600'
	NOTIFY_SOCKET=$HOSTSOCK rt create --bundle "$(bundle_dir b)" c1 >/dev/null 2>&1 </dev/null
	NOTIFY_SOCKET=$HOSTSOCK rt start c1 >/dev/null 2>&1 </dev/null
	retry 50 0.1 grep -q '^READY=1' "$GOT"
	assert_eq "$(cat "$(bundle_dir b)/rootfs/sock-ok")" is-socket
	# runc forwards READY=1 together with the container's host pid.
	if grep -q MAINPID "$GOT"; then
		assert_eq "$(grep -o 'MAINPID=[0-9]*' "$GOT" | head -n1)" "MAINPID=$(ct_pid c1)"
	fi
}

@test "NOTIFY_SOCKET: run -d also forwards READY=1" {
	set_args b sh -c 'sdnotify send READY=1; sleep 3600'
	status=0
	NOTIFY_SOCKET=$HOSTSOCK rt run -d --bundle "$(bundle_dir b)" c1 >"$BATS_TEST_TMPDIR/o" 2>&1 </dev/null || status=$?
	[[ $status -eq 0 ]] || fail "run -d: $(cat "$BATS_TEST_TMPDIR/o")"
	retry 50 0.1 grep -q '^READY=1' "$GOT"
}
