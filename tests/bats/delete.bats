#!/usr/bin/env bats
# delete: remove a container and everything the runtime made for it.

load helpers

@test "delete: a stopped container, with its zone, record and kernel membership" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt delete c1
	assert_success
	assert_nothing_left c1
	is_rauha || return 0
	assert_eq "$(rt zone list --format json | jq -r '[.[].name] | join(",")')" ""
	# The container's cgroup had its links pinned under members/<cgroup id>.
	local pins
	pins=$(pin_dir_of "$ROOT")
	[[ -d $pins/members ]] || fail "no pin directory $pins/members"
	assert_eq "$(find "$pins/members" -mindepth 1 | wc -l)" 0
}

@test "delete: a created container without --force" {
	create_ct c1
	pid=$(ct_pid c1)
	rrun rt delete c1
	assert_success
	assert_nothing_left c1
	retry 30 0.1 bash -c "! grep -qs '^State:.*[RS]' /proc/$pid/status" ||
		fail "init $pid still alive"
}

@test "delete: a running container without --force fails with one line" {
	run_ct c1
	rrun rt delete c1
	assert_error_line 'running|not stopped|force'
	assert_eq "$(ct_status c1)" running
	[[ -d /sys/fs/cgroup/pids$(cg_path b) ]] || fail "cgroup removed by a failed delete"
}

@test "delete: --force a running container" {
	run_ct c1
	pid=$(ct_pid c1)
	rrun rt delete --force c1
	assert_success
	assert_nothing_left c1
	retry 30 0.1 bash -c "! grep -qs '^State:.*[RS]' /proc/$pid/status" ||
		fail "init $pid still alive"
}

@test "delete: flags after the container id (runc 1.5)" {
	runc_1_1_differs "urfave/cli v1 stops parsing flags at the container id"
	run_ct c1
	rrun rt delete c1 --force
	assert_success
	assert_nothing_left c1
}

@test "delete: -f a paused container" {
	requires freezer
	run_ct c1
	rt pause c1
	rrun rt delete -f c1
	assert_success
	assert_nothing_left c1
}

@test "delete: --force also kills exec'd processes" {
	run_ct c1
	rt exec -d --pid-file "$BATS_TEST_TMPDIR/e.pid" c1 sleep 1000
	epid=$(cat "$BATS_TEST_TMPDIR/e.pid")
	rrun rt delete --force c1
	assert_success
	retry 30 0.1 bash -c "! grep -qs '^State:.*[RS]' /proc/$epid/status" ||
		fail "exec'd $epid still alive"
	assert_nothing_left c1
}

@test "delete: --force on a missing id exits 0" {
	rrun rt delete --force nosuch
	assert_success
}

@test "delete: a missing id without --force fails with one line" {
	rrun rt delete nosuch
	assert_error_line 'not exist|not found|nosuch'
}

@test "delete: twice (docker's delete then delete --force)" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt delete c1
	assert_success
	rrun rt delete --force c1
	assert_success
	assert_nothing_left c1
}

@test "delete: the id can be reused afterwards" {
	create_ct c1
	rt delete --force c1
	create_ct c1
	assert_eq "$(ct_status c1)" created
}

@test "delete: a stopped container in the host pid namespace takes the processes its init left" {
	# Its init's exit does not end the exec'd sleep: delete must kill it
	# before the cgroups can go, as runc's destroy does.
	cfg b '.linux.namespaces |= map(select(.type != "pid"))'
	set_args b sh -c 'trap "exit 0" TERM; while :; do sleep 0.1; done'
	run_ct c1
	rt exec -d c1 sleep 1000
	retry 30 0.1 eval 'test "$(wc -l <"/sys/fs/cgroup/pids$(cg_path b)/cgroup.procs")" -ge 2'
	rt kill c1 TERM
	wait_status c1 stopped
	rrun rt delete c1
	assert_success
	assert_nothing_left c1
}
