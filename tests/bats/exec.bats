#!/usr/bin/env bats
# exec: run an extra process in a running container.

load helpers

setup() {
	# The default setup plus one running container c1.
	requires root
	TEST_UID=t${BATS_SUITE_TEST_NUMBER:-0}-$$
	ROOT=$BATS_TEST_TMPDIR/state
	mkdir -p "$ROOT"
	build_rootfs_cache
	make_bundle b
	run_ct c1
}

@test "exec: foreground output and exit 0" {
	rrun rt exec c1 echo hi
	assert_success
	assert_eq "$stdout" hi
}

@test "exec: runs in the container's pid namespace" {
	rrun rt exec c1 sh -c 'cat /proc/1/cmdline | tr "\0" " "'
	assert_success
	assert_eq "$stdout" "sleep 3600 "
}

@test "exec: foreground returns the process's exit status" {
	rrun rt exec c1 sh -c 'exit 5'
	assert_failure 5
}

@test "exec: a process killed by a signal exits 128+n" {
	rrun rt exec c1 sh -c 'kill -TERM $$'
	assert_failure 143
	rrun rt exec c1 sh -c 'kill -KILL $$'
	assert_failure 137
}

@test "exec: --env adds variables" {
	rrun rt exec --env FOO=bar --env BAZ=qux c1 sh -c 'echo "$FOO $BAZ"'
	assert_success
	assert_eq "$stdout" "bar qux"
}

@test "exec: inherits process.env of config.json" {
	rrun rt exec c1 sh -c 'echo "$HOME"'
	assert_success
	assert_eq "$stdout" /root
}

@test "exec: --cwd sets the working directory" {
	rrun rt exec --cwd /tmp c1 pwd
	assert_success
	assert_eq "$stdout" /tmp
}

@test "exec: --user uid:gid" {
	rrun rt exec --user 1000:1001 c1 sh -c 'echo $(id -u):$(id -g)'
	assert_success
	assert_eq "$stdout" 1000:1001
}

@test "exec: --additional-gids" {
	rrun rt exec --user 1000:1000 --additional-gids 10 --additional-gids 20 c1 id -G
	assert_success
	assert_match "$stdout" '(^| )10( |$)'
	assert_match "$stdout" '(^| )20( |$)'
}

@test "exec: --cap adds a capability to the process" {
	rrun rt exec c1 sh -c 'grep CapEff /proc/self/status'
	assert_success
	base=$(awk '{print $2}' <<<"$stdout")
	rrun rt exec --cap CAP_SYS_ADMIN c1 sh -c 'grep CapEff /proc/self/status'
	assert_success
	with=$(awk '{print $2}' <<<"$stdout")
	# CAP_SYS_ADMIN is bit 21.
	(( (0x$with >> 21) & 1 )) || fail "CAP_SYS_ADMIN not effective: $with"
	(( ((0x$base >> 21) & 1) == 0 )) || fail "CAP_SYS_ADMIN effective without --cap: $base"
}

@test "exec: --process JSON file" {
	cat >"$BATS_TEST_TMPDIR/process.json" <<'JSON'
{
  "terminal": false,
  "user": {"uid": 2000, "gid": 2000},
  "args": ["sh", "-c", "echo $PROCVAR $(id -u) $(pwd)"],
  "env": ["PATH=/bin:/usr/bin", "PROCVAR=from-process-json"],
  "cwd": "/etc"
}
JSON
	rrun rt exec --process "$BATS_TEST_TMPDIR/process.json" c1
	assert_success
	assert_eq "$stdout" "from-process-json 2000 /etc"
}

@test "exec: --process with a malformed file fails" {
	echo '{"args": [' >"$BATS_TEST_TMPDIR/process.json"
	rrun rt exec --process "$BATS_TEST_TMPDIR/process.json" c1
	# runc exits 255 when exec itself fails.
	assert_error_line 'json|EOF|process|parse|unexpected' '1|255'
}

@test "exec: --detach returns at once and --pid-file holds the pid" {
	rrun rt exec --detach --pid-file "$BATS_TEST_TMPDIR/e.pid" c1 sleep 100
	assert_success
	pid=$(cat "$BATS_TEST_TMPDIR/e.pid")
	[[ -d /proc/$pid ]] || fail "exec'd pid $pid not alive"
	assert_eq "$(cat /proc/"$pid"/comm)" sleep
	# It is in the container's cgroup.
	grep -q "$(cg_path b)" "/proc/$pid/cgroup" || fail "exec process not in container cgroup"
}

@test "exec: --pid-file relative to the caller's cwd" {
	cd "$BATS_TEST_TMPDIR"
	rrun rt exec -d --pid-file rel.pid c1 sleep 100
	assert_success
	[[ -d /proc/$(cat "$BATS_TEST_TMPDIR/rel.pid") ]] || fail "pid file content wrong"
}

@test "exec: --preserve-fds passes extra fds" {
	# fd 3 is bats' own channel: set up fds 3 and 4 in a child shell only.
	rrun bash -c 'exec 3>"$1" 4>"$2"; shift 2; exec "$@"' _ \
		"$BATS_TEST_TMPDIR/fd3" "$BATS_TEST_TMPDIR/fd4" \
		timeout 30 "$RUNTIME" --root "$ROOT" exec --preserve-fds 2 c1 sh -c 'echo via-fd3 >&3; echo via-fd4 >&4'
	assert_success
	assert_eq "$(cat "$BATS_TEST_TMPDIR/fd3")" via-fd3
	assert_eq "$(cat "$BATS_TEST_TMPDIR/fd4")" via-fd4
}

@test "exec: extra fds are not passed without --preserve-fds" {
	exec 7>"$BATS_TEST_TMPDIR/fd7"
	rrun rt exec c1 ls /proc/self/fd
	exec 7>&-
	assert_success
	! grep -qx 7 <<<"$stdout" || fail "leaked fd 7 is visible: $stdout"
}

@test "exec: --tty with --console-socket" {
	requires go
	recvtty=$(build_helper recvtty)
	sock=$BATS_TEST_TMPDIR/tty.sock
	bg "$recvtty" -out "$BATS_TEST_TMPDIR/tty.out" -ready "$BATS_TEST_TMPDIR/tty.ready" "$sock"
	wait_file "$BATS_TEST_TMPDIR/tty.ready"
	rrun rt exec --tty --console-socket "$sock" --detach c1 sh -c 'tty; echo tty-done; sleep 1'
	assert_success
	retry 50 0.1 grep -q tty-done "$BATS_TEST_TMPDIR/tty.out"
	grep -q '^/dev/pts/' "$BATS_TEST_TMPDIR/tty.out" || fail "no pts: $(cat "$BATS_TEST_TMPDIR/tty.out")"
}

@test "exec: --tty without --console-socket in the foreground" {
	# A foreground tty exec needs a terminal on the caller's side: script(1)
	# gives the runtime one.
	command -v script >/dev/null || skip "needs script(1) (bsdutils)"
	local sh
	for sh in /bin/bash /bin/sh; do
		# bash execs timeout(1); dash forks it into a background process group.
		out=$(SHELL=$sh script -qec "timeout -k 5 30 $RUNTIME --root $ROOT exec -t c1 sh -c 'test -t 1 && echo is-a-tty'" /dev/null </dev/null)
		assert_match "$out" is-a-tty
	done
}

@test "exec: --tty --detach without --console-socket fails" {
	rrun rt exec -t -d c1 true
	assert_error_line 'console' '1|255'
}

@test "exec: into a stopped container fails with one line" {
	rt kill c1 KILL
	wait_status c1 stopped
	rrun rt exec c1 true
	# exec's own failures exit 255, as runc's: callers tell them from the
	# process's status.
	assert_error_line 'exec failed: .*(stopped|not running)' 255
}

@test "exec: into a paused container fails with 255; --ignore-paused runs it once resumed" {
	requires freezer
	rt pause c1
	rrun rt exec c1 echo ok
	assert_error_line 'exec failed: .*paused' 255
	local out=$BATS_TEST_TMPDIR/ip.out
	bg "$RUNTIME" --root "$ROOT" exec --ignore-paused c1 echo ok >"$out" 2>"$out.err"
	local pid
	pid=$(tail -n1 "$BATS_TEST_TMPDIR/bg.pids")
	# The new process waits, frozen, in the container's cgroup: resume then.
	retry 100 0.1 eval 'test "$(wc -l <"/sys/fs/cgroup/freezer$(cg_path b)/cgroup.procs")" -ge 2'
	rt resume c1
	wait "$pid" || fail "exec --ignore-paused failed: $(cat "$out.err")"
	assert_eq "$(cat "$out")" ok
}

@test "exec: an unwritable --pid-file fails with 255" {
	rrun rt exec -d --pid-file "$BATS_TEST_TMPDIR/no/such/dir/e.pid" c1 sleep 100
	assert_error_line 'exec failed: .*no such file' 255
}

@test "exec: --cgroup runs the process in a sub-cgroup of the container" {
	requires cgroups_v1
	local cg d
	cg=$(cg_path b)
	for d in $(cg_dirs "$cg"); do
		mkdir "$d/sub"
		# A v1 cpuset cgroup takes no process before it has cpus and mems.
		if [[ -f $d/cpuset.cpus ]]; then
			cat "$d/cpuset.cpus" >"$d/sub/cpuset.cpus"
			cat "$d/cpuset.mems" >"$d/sub/cpuset.mems"
		fi
	done
	rrun rt exec --cgroup sub c1 cat /proc/self/cgroup
	assert_success
	grep -q ":pids:$cg/sub\$" <<<"$stdout" || fail "not in the pids sub-cgroup: $stdout"
	grep -q ":memory:$cg/sub\$" <<<"$stdout" || fail "not in the memory sub-cgroup: $stdout"
	# controller:path moves only that controller.
	rrun rt exec --cgroup pids:sub c1 cat /proc/self/cgroup
	assert_success
	grep -q ":pids:$cg/sub\$" <<<"$stdout" || fail "not in the pids sub-cgroup: $stdout"
	grep -q ":memory:$cg\$" <<<"$stdout" || fail "left the memory cgroup: $stdout"
	# Only below the container's cgroup, and only one that exists.
	rrun rt exec --cgroup pids:.. c1 true
	assert_error_line 'exec failed: .*(bad sub cgroup path|is not a sub cgroup path)' 255
	rrun rt exec --cgroup nosuch c1 true
	assert_failure 255
}

@test "exec: --process on a FIFO waits for its writer" {
	local fifo=$BATS_TEST_TMPDIR/process.fifo out=$BATS_TEST_TMPDIR/fifo.out pid
	mkfifo "$fifo"
	bg "$RUNTIME" --root "$ROOT" exec --process "$fifo" c1 >"$out" 2>"$out.err"
	pid=$(tail -n1 "$BATS_TEST_TMPDIR/bg.pids")
	# Wait until one of its threads blocks opening the FIFO, waiting for a
	# writer (or until it has given up).
	retry 100 0.1 eval 'grep -qsx wait_for_partner /proc/'"$pid"'/task/*/wchan || ! kill -0 '"$pid"
	kill -0 "$pid" 2>/dev/null || fail "exec did not wait for a writer: $(cat "$out.err")"
	jq -n '{user: {uid: 0, gid: 0}, args: ["echo", "from-fifo"], env: ["PATH=/bin"], cwd: "/"}' >"$fifo"
	wait "$pid" || fail "exec --process FIFO failed: $(cat "$out.err")"
	assert_eq "$(cat "$out")" from-fifo
	# A writer that came first (it waits in its open) is read too.
	bg sh -c 'jq -n "{user: {uid: 0, gid: 0}, args: [\"echo\", \"writer-first\"], env: [\"PATH=/bin\"], cwd: \"/\"}" >"$1"' _ "$fifo"
	pid=$(tail -n1 "$BATS_TEST_TMPDIR/bg.pids")
	retry 100 0.1 eval 'grep -qsx wait_for_partner /proc/'"$pid"'/task/*/wchan'
	rrun rt exec --process "$fifo" c1
	assert_success
	assert_eq "$stdout" writer-first
}

@test "exec: into a missing container fails" {
	rrun rt exec nosuch true
	assert_error_line 'not exist|not found|nosuch' '1|255'
}

@test "exec: without a command fails" {
	rrun rt exec c1
	assert_error_line 'args|command|argument' '1|255'
}

@test "exec: the process comes from config.json as it is now; a bundle without one fails with one line" {
	# runc reads the bundle's process at every exec, not at create.
	cfg b '.process.env += ["LATER=changed"] | .process.cwd = "/tmp"'
	rrun rt exec c1 sh -c 'echo "$LATER $(pwd)"'
	assert_success
	assert_eq "$stdout" "changed /tmp"
	mv "$(bundle_dir b)/config.json" "$(bundle_dir b)/config.json.gone"
	rrun rt exec c1 true
	assert_error_line 'config.json' 255
	mv "$(bundle_dir b)/config.json.gone" "$(bundle_dir b)/config.json"
	cfg b '.ociVersion = "2.0.0"'
	rrun rt exec c1 true
	assert_error_line 'version' 255
}
