#!/usr/bin/env bats
# Signals by routes other than kill(2), from zones whose containers share
# the host's pid namespace (the only way a zone can name a task outside
# itself: in a pid namespace of its own, pidfd_open and F_SETOWN find no
# other task). Each route is first shown to reach a host process under
# plain runc with the same bundle; then from a zone it is denied, with an
# event, on whatever backend this kernel gives.

load helpers
load zone_helpers
load runc_helpers

# sig_bundle NAME: a bundle sharing the host pid namespace, with the
# sigsend helper at /bin/sigsend.
sig_bundle() {
	make_bundle "$1"
	host_pid "$1"
	cp "$SIGSEND" "$(bundle_dir "$1")/rootfs/bin/sigsend"
}

# ev_is EVENT JQ-CONDITION: the event JSON satisfies the condition.
ev_is() {
	jqe "$2" <<<"$1" >/dev/null || fail "event $1 does not satisfy ($2)"
}

# sigwatch NAME: a host shell outside every zone that appends the number of
# each SIGURG (23), SIGIO (29) and SIGUSR1 (10) it gets to
# $BATS_TEST_TMPDIR/NAME, and 30 for the SIGPWR mark; prints its pid
# (teardown kills it and its sleeps).
sigwatch() {
	local f=$BATS_TEST_TMPDIR/$1
	# shellcheck disable=SC2016 # expanded by the watcher
	sh -c 'f=$1; : >"$f"; for s in 10 23 29 30; do trap "echo $s >>$f" $s; done; echo $$ >"$f.pid"; while :; do sleep 600 & p=$!; echo $p >>"$2"; wait $p; kill $p 2>/dev/null; done' \
		sh "$f" "$BATS_TEST_TMPDIR/host.pids" >/dev/null 2>&1 </dev/null 3>&- &
	retry 50 0.1 test -s "$f.pid" || fail "sigwatch $1 did not start"
	cat "$f.pid" >>"$BATS_TEST_TMPDIR/host.pids"
	cat "$f.pid"
}

# got NAME SIG: SIG reached watcher NAME since the last call. A signal the
# kernel generated is pending before the sending syscall returns, and the
# shell runs pending traps in signal-number order, so the SIGPWR mark sent
# now is written after it.
got() {
	local f=$BATS_TEST_TMPDIR/$1 seen
	kill -30 "$(cat "$f.pid")" || fail "sigwatch $1 is gone"
	retry 50 0.1 grep -qx 30 "$f" || fail "sigwatch $1: no mark"
	seen=$(grep -vx 30 "$f" || true)
	: >"$f"
	grep -qx "$2" <<<"$seen"
}

@test "signals: pidfd_send_signal and rt_sigqueueinfo from a zone are denied like kill(2), with events" {
	local host
	SIGSEND=$(build_helper sigsend)
	sig_bundle a1
	host=$(host_sleep)

	# Plain runc: both routes reach the host process (signal 0: a probe).
	plain run -d --bundle "$(bundle_dir a1)" plain1 >/dev/null 2>&1 </dev/null || fail "runc run plain1"
	rrun plain exec plain1 sigsend pidfd "$host" 0
	assert_success
	rrun plain exec plain1 sigsend sigqueue "$host" 0
	assert_success
	plain delete --force plain1

	in_zone a1 sa privileged
	run_ct a1 a1
	rexec a1 sigsend pidfd "$host" 0
	assert_failure 1
	assert_eq "$stdout" EPERM
	rexec a1 sigsend sigqueue "$host" 0
	assert_failure 1
	assert_eq "$stdout" EPERM
	kill -0 "$host" || fail "the host process died"

	ev=$(wait_event sa '.control == "signal" and (.object | startswith("signal 0 to pid '"$host"'"))')
	ev_is "$ev" '.container == "a1" and .comm == "sigsend" and .decision == "deny" and .target_pid == '"$host"
	ev_is "$ev" '.object | endswith("(operation not permitted)")'
	# The pidfd's event: bpf-lsm's task_kill knows the target's pid, the
	# fallback's observer sees only the pidfd.
	n=$(zone_events sa | jq -s '[.[] | select(.control == "signal" and .comm == "sigsend")] | length')
	assert_eq "$n" 2
}

@test "signals: SIGIO, F_SETSIG and SIGURG from a file a zone owns do not reach the host" {
	local host backend
	SIGSEND=$(build_helper sigsend)
	sig_bundle a1
	host=$(sigwatch host)

	# Plain runc: a pipe and a TCP socket owned by the host process signal it.
	plain run -d --bundle "$(bundle_dir a1)" plain1 >/dev/null 2>&1 </dev/null || fail "runc run plain1"
	rrun plain exec plain1 sigsend sigio "$host"
	assert_success
	got host 29 || fail "SIGIO did not reach the host under plain runc"
	rrun plain exec plain1 sigsend sigio "$host" 10
	assert_success
	got host 10 || fail "F_SETSIG SIGUSR1 did not reach the host under plain runc"
	rrun plain exec plain1 sigsend sigurg "$host"
	assert_success
	got host 23 || fail "SIGURG did not reach the host under plain runc"
	plain delete --force plain1

	in_zone a1 sa privileged
	run_ct a1 a1
	rexec a1 sigsend sigio "$host"
	assert_success # the kernel drops the signal; the write succeeds
	! got host 29 || fail "SIGIO from zone sa reached the host"
	rexec a1 sigsend sigio "$host" 10
	assert_success
	! got host 10 || fail "F_SETSIG SIGUSR1 from zone sa reached the host"
	rexec a1 sigsend sigurg "$host"
	assert_success
	! got host 23 || fail "SIGURG from zone sa reached the host"

	backend=$(rt zone verify sa --format json | jq -r .backend)
	if [[ $backend == bpf-lsm ]]; then
		ev=$(wait_event sa '.control == "signal" and (.object | startswith("signal 29 to pid '"$host"' (file owner)"))')
		ev_is "$ev" '.container == "a1" and .comm == "sigsend" and .decision == "deny" and .target_pid == '"$host"
	else
		# Known limit of the fallback (README): Landlock's signal
		# scoping drops these signals silently, in the kernel code that
		# sends them, and no syscall fails for the observer to see.
		# Asserted so a change is seen.
		no_event sa '.control == "signal"'
	fi
}
