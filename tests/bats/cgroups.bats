#!/usr/bin/env bats
# Cgroup placement and limits on this hybrid host (v1 controllers plus a
# controller-less cgroup2 at /sys/fs/cgroup/unified).

load helpers

setup() {
	requires root cgroups_v1
	TEST_UID=t${BATS_SUITE_TEST_NUMBER:-0}-$$
	ROOT=$BATS_TEST_TMPDIR/state
	mkdir -p "$ROOT"
	build_rootfs_cache
	make_bundle b
	CG=$(cg_path b)
}

@test "cgroups: the init is in cgroupsPath in every v1 controller" {
	run_ct c1
	pid=$(ct_pid c1)
	for ctrl in memory pids cpu cpuacct cpuset devices freezer blkio; do
		[[ -d /sys/fs/cgroup/$ctrl ]] || continue
		line=$(grep -E "^[0-9]+:([^:]*,)?$ctrl(,[^:]*)?:" "/proc/$pid/cgroup")
		assert_eq "${line##*:}" "$CG"
		grep -qx "$pid" "/sys/fs/cgroup/$ctrl$CG/cgroup.procs" || fail "$pid not in $ctrl$CG"
	done
}

@test "cgroups: the init is in the unified node 0::cgroupsPath" {
	requires cgroups_hybrid
	run_ct c1
	pid=$(ct_pid c1)
	assert_eq "$(grep '^0::' "/proc/$pid/cgroup")" "0::$CG"
	[[ -d /sys/fs/cgroup/unified$CG ]] || fail "no unified node $CG"
	grep -qx "$pid" "/sys/fs/cgroup/unified$CG/cgroup.procs" || fail "$pid not in unified$CG"
}

@test "cgroups: exec'd processes join the same cgroups" {
	requires cgroups_hybrid
	run_ct c1
	rt exec -d --pid-file "$BATS_TEST_TMPDIR/e.pid" c1 sleep 100
	epid=$(cat "$BATS_TEST_TMPDIR/e.pid")
	assert_eq "$(grep '^0::' "/proc/$epid/cgroup")" "0::$CG"
	grep -qE "^[0-9]+:memory:$CG\$" "/proc/$epid/cgroup" || fail "exec not in memory$CG"
}

@test "cgroups: memory and pids limits in the v1 files" {
	cfg b '.linux.resources.memory = {limit: 67108864, reservation: 33554432}
		| .linux.resources.pids = {limit: 64}
		| .linux.resources.cpu = {shares: 512, quota: 20000, period: 100000}'
	run_ct c1
	assert_eq "$(cat "/sys/fs/cgroup/memory$CG/memory.limit_in_bytes")" 67108864
	assert_eq "$(cat "/sys/fs/cgroup/memory$CG/memory.soft_limit_in_bytes")" 33554432
	assert_eq "$(cat "/sys/fs/cgroup/pids$CG/pids.max")" 64
	assert_eq "$(cat "/sys/fs/cgroup/cpu$CG/cpu.shares")" 512
	assert_eq "$(cat "/sys/fs/cgroup/cpu$CG/cpu.cfs_quota_us")" 20000
	assert_eq "$(cat "/sys/fs/cgroup/cpu$CG/cpu.cfs_period_us")" 100000
}

@test "cgroups: the pids limit is enforced" {
	cfg b '.linux.resources.pids = {limit: 4}'
	set_args b sh -c 'for i in 1 2 3 4 5 6; do sleep 3 & done; wait'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_match "$output" 'fork|Resource temporarily unavailable|can.t'
}

@test "cgroups: cpuset cpus" {
	cfg b '.linux.resources.cpu = {cpus: "0"}'
	run_ct c1
	assert_eq "$(cat "/sys/fs/cgroup/cpuset$CG/cpuset.cpus")" 0
	grep -q 'Cpus_allowed_list:[[:space:]]*0$' "/proc/$(ct_pid c1)/status" || fail "affinity not 0"
}

@test "cgroups: every cgroup dir is removed by delete" {
	run_ct c1
	[[ -n $(cg_dirs "$CG") ]] || fail "no cgroup dirs at all"
	rt delete --force c1
	retry 20 0.1 test -z "$(cg_dirs "$CG")" || fail "left: $(cg_dirs "$CG")"
}

@test "cgroups: a nested cgroupsPath" {
	cfg b '.linux.cgroupsPath = $p' --arg p "$CG/nested/leaf"
	run_ct c1
	pid=$(ct_pid c1)
	assert_eq "$(grep '^0::' "/proc/$pid/cgroup")" "0::$CG/nested/leaf"
	rt delete --force c1
	retry 20 0.1 test ! -d "/sys/fs/cgroup/memory$CG/nested/leaf"
}

@test "cgroups: a memory limit below usage fails create and leaves nothing" {
	cfg b '.linux.resources.memory = {limit: 4096}'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_nothing_left c1
}
