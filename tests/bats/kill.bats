#!/usr/bin/env bats
# kill: signals by name or number, to init or (--all) every process.

load helpers

# A container whose init traps USR1 and TERM and records what it got.
trap_bundle() {
	set_args b sh -c 'trap "echo USR1 >> /sig" USR1; trap "echo TERM >> /sig; exit 0" TERM; echo ready > /ready; while :; do sleep 0.1; done'
	run_ct c1
	wait_file "$(bundle_dir b)/rootfs/ready"
}

# usr1_count_is N: the handler has logged USR1 exactly N times. (A function,
# so retry re-reads the file each try.)
usr1_count_is() {
	[[ $(grep -c USR1 "$(bundle_dir b)/rootfs/sig" 2>/dev/null) == "$1" ]]
}

@test "kill: default signal is SIGTERM" {
	trap_bundle
	rrun rt kill c1
	assert_success
	wait_status c1 stopped
	grep -qx TERM "$(bundle_dir b)/rootfs/sig"
}

@test "kill: by name without SIG prefix (KILL)" {
	run_ct c1
	rrun rt kill c1 KILL
	assert_success
	wait_status c1 stopped
}

@test "kill: by name with SIG prefix (SIGKILL)" {
	run_ct c1
	rrun rt kill c1 SIGKILL
	assert_success
	wait_status c1 stopped
}

@test "kill: by number (9)" {
	run_ct c1
	rrun rt kill c1 9
	assert_success
	wait_status c1 stopped
}

@test "kill: TERM and 15 and USR1 and 10 reach a handler" {
	trap_bundle
	rrun rt kill c1 USR1
	assert_success
	# Wait for the first: two pending USR1 would merge into one.
	retry 80 0.1 usr1_count_is 1
	rrun rt kill c1 10
	assert_success
	retry 80 0.1 usr1_count_is 2
	rrun rt kill c1 15
	assert_success
	wait_status c1 stopped
}

@test "kill: signal names are case-insensitive (term, sigkill)" {
	trap_bundle
	rrun rt kill c1 term
	assert_success
	wait_status c1 stopped
	grep -qx TERM "$(bundle_dir b)/rootfs/sig"
	rt delete c1
	make_bundle b2
	run_ct c2 b2
	rrun rt kill c2 sigkill
	assert_success
	wait_status c2 stopped
}

@test "kill: an unknown signal name fails with one line" {
	run_ct c1
	rrun rt kill c1 NOSUCHSIG
	assert_error_line 'signal'
	assert_eq "$(ct_status c1)" running
}

@test "kill: an out-of-range signal number fails" {
	run_ct c1
	rrun rt kill c1 99
	assert_failure 1
	assert_eq "$(ct_status c1)" running
}

@test "kill: --all signals every process of the container" {
	run_ct c1
	rt exec -d c1 sleep 1000
	rt exec -d c1 sleep 1001
	retry 30 0.1 eval 'test "$(wc -l <"/sys/fs/cgroup/pids$(cg_path b)/cgroup.procs")" -ge 3'
	rrun rt kill --all c1 KILL
	assert_success
	wait_status c1 stopped
	retry 30 0.1 test -z "$(cat "/sys/fs/cgroup/pids$(cg_path b)/cgroup.procs")"
}

@test "kill: a created container can be killed" {
	create_ct c1
	rrun rt kill c1 KILL
	assert_success
	wait_status c1 stopped
}

@test "kill: a stopped container fails" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt kill c1 KILL
	assert_error_line 'not running|stopped|process'
}

@test "kill: signal 0 probes the init: exit 0 while it runs, \"container not running\" once it stopped" {
	run_ct c1
	rrun rt kill c1 0
	assert_success
	assert_eq "$(ct_status c1)" running
	rt kill c1 KILL
	wait_status c1 stopped
	rrun rt kill c1 0
	assert_error_line 'container not running'
}

@test "kill: a missing container fails with one line" {
	rrun rt kill nosuch KILL
	assert_error_line 'not exist|not found|nosuch'
}

@test "kill: --all does not fail on a stopped container (runc's obsolete flag)" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt kill --all c1 KILL
	assert_success
}

@test "kill: KILL to a container in the host pid namespace reaches every process of its cgroup" {
	# Without a pid namespace of its own, the init's death takes nothing
	# else with it: kill must signal the whole cgroup, as runc does.
	cfg b '.linux.namespaces |= map(select(.type != "pid"))'
	run_ct c1
	rt exec -d c1 sleep 1000
	retry 30 0.1 eval 'test "$(wc -l <"/sys/fs/cgroup/pids$(cg_path b)/cgroup.procs")" -ge 2'
	rrun rt kill c1 KILL
	assert_success
	wait_status c1 stopped
	retry 30 0.1 test -z "$(cat "/sys/fs/cgroup/pids$(cg_path b)/cgroup.procs")"
}

@test "kill: a TERM in the host pid namespace goes to the init alone" {
	cfg b '.linux.namespaces |= map(select(.type != "pid"))'
	set_args b sh -c 'trap "exit 0" TERM; while :; do sleep 0.1; done'
	run_ct c1
	rt exec -d c1 sleep 1000
	retry 30 0.1 eval 'test "$(wc -l <"/sys/fs/cgroup/pids$(cg_path b)/cgroup.procs")" -ge 2'
	rrun rt kill c1 TERM
	assert_success
	wait_status c1 stopped
	# The exec'd sleep outlives its init: only KILL takes the whole cgroup.
	[[ -n $(cat "/sys/fs/cgroup/pids$(cg_path b)/cgroup.procs") ]] || fail "TERM reached more than the init"
}
