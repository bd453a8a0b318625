#!/usr/bin/env bats
# update: change cgroup limits of a live container, checked in the v1 files.

load helpers

setup() {
	requires root cgroups_v1
	TEST_UID=t${BATS_SUITE_TEST_NUMBER:-0}-$$
	ROOT=$BATS_TEST_TMPDIR/state
	mkdir -p "$ROOT"
	build_rootfs_cache
	make_bundle b
	cfg b '.linux.resources.memory = {"limit": 134217728} | .linux.resources.pids = {"limit": 100} | .linux.resources.cpu = {"shares": 1024}'
	run_ct c1
	CG=$(cg_path b)
}

v1() {
	cat "/sys/fs/cgroup/$1$CG/$2"
}

@test "update: initial limits are in the v1 files" {
	assert_eq "$(v1 memory memory.limit_in_bytes)" 134217728
	assert_eq "$(v1 pids pids.max)" 100
	assert_eq "$(v1 cpu cpu.shares)" 1024
}

@test "update: --resources FILE" {
	echo '{"memory": {"limit": 67108864}, "pids": {"limit": 42}, "cpu": {"shares": 512}}' >"$BATS_TEST_TMPDIR/res.json"
	rrun rt update --resources "$BATS_TEST_TMPDIR/res.json" c1
	assert_success
	assert_eq "$(v1 memory memory.limit_in_bytes)" 67108864
	assert_eq "$(v1 pids pids.max)" 42
	assert_eq "$(v1 cpu cpu.shares)" 512
}

@test "update: --resources=FILE (podman's form)" {
	echo '{"pids": {"limit": 43}}' >"$BATS_TEST_TMPDIR/res.json"
	rrun rt update --resources="$BATS_TEST_TMPDIR/res.json" c1
	assert_success
	assert_eq "$(v1 pids pids.max)" 43
}

@test "update: -r FILE" {
	echo '{"pids": {"limit": 44}}' >"$BATS_TEST_TMPDIR/res.json"
	rrun rt update -r "$BATS_TEST_TMPDIR/res.json" c1
	assert_success
	assert_eq "$(v1 pids pids.max)" 44
}

@test "update: --resources - reads stdin" {
	status=0
	echo '{"memory": {"limit": 50331648}, "pids": {"limit": 45}}' |
		rt update --resources - c1 >"$BATS_TEST_TMPDIR/o" 2>&1 || status=$?
	assert_eq "$status" 0
	assert_eq "$(v1 memory memory.limit_in_bytes)" 50331648
	assert_eq "$(v1 pids pids.max)" 45
}

@test "update: omitted values are unchanged" {
	echo '{"pids": {"limit": 46}}' >"$BATS_TEST_TMPDIR/res.json"
	rrun rt update --resources "$BATS_TEST_TMPDIR/res.json" c1
	assert_success
	assert_eq "$(v1 memory memory.limit_in_bytes)" 134217728
	assert_eq "$(v1 cpu cpu.shares)" 1024
}

@test "update: --memory" {
	rrun rt update --memory 104857600 c1
	assert_success
	assert_eq "$(v1 memory memory.limit_in_bytes)" 104857600
}

@test "update: --memory with a unit suffix" {
	rrun rt update --memory 80M c1
	assert_success
	assert_eq "$(v1 memory memory.limit_in_bytes)" 83886080
}

@test "update: --pids-limit" {
	rrun rt update --pids-limit 77 c1
	assert_success
	assert_eq "$(v1 pids pids.max)" 77
}

@test "update: --cpu-share (runc's flag name)" {
	rrun rt update --cpu-share 256 c1
	assert_success
	assert_eq "$(v1 cpu cpu.shares)" 256
}

@test "update: --cpu-quota and --cpu-period" {
	rrun rt update --cpu-period 100000 --cpu-quota 50000 c1
	assert_success
	assert_eq "$(v1 cpu cpu.cfs_period_us)" 100000
	assert_eq "$(v1 cpu cpu.cfs_quota_us)" 50000
}

@test "update: the new pids limit is enforced" {
	rrun rt update --pids-limit 3 c1
	assert_success
	# init + sh + at most one more process; a loop of sleeps hits the limit.
	rrun rt exec c1 sh -c 'for i in 1 2 3 4 5; do sleep 5 & done; wait'
	assert_failure
	assert_match "$output" 'fork|Resource temporarily unavailable|can.t'
}

@test "update: malformed resources JSON fails" {
	echo '{"memory": ' >"$BATS_TEST_TMPDIR/res.json"
	rrun rt update --resources "$BATS_TEST_TMPDIR/res.json" c1
	assert_failure 1
	assert_eq "$(v1 memory memory.limit_in_bytes)" 134217728
}

@test "update: a missing resources file fails" {
	rrun rt update --resources "$BATS_TEST_TMPDIR/nosuch.json" c1
	assert_failure 1
}

@test "update: a missing container fails with one line" {
	rrun rt update --pids-limit 10 nosuch
	assert_error_line 'not exist|not found|nosuch'
}

@test "update: flags after the container id (runc 1.5)" {
	runc_1_1_differs "urfave/cli v1 stops parsing flags at the container id"
	rrun rt update c1 --memory 64m --pids-limit=42
	assert_success
	assert_eq "$(v1 memory memory.limit_in_bytes)" 67108864
	assert_eq "$(v1 pids pids.max)" 42
}

@test "update: --l3-cache-schema and --mem-bw-schema without Intel RDT fail with runc's messages" {
	! grep -qw resctrl /proc/mounts || skip "this host has resctrl mounted"
	rrun rt update --l3-cache-schema 'L3:0=f' c1
	assert_error_line '^.*Intel RDT/CAT: l3 cache schema is not enabled"?$'
	rrun rt update --mem-bw-schema 'MB:0=50' c1
	assert_error_line '^.*Intel RDT/MBA: memory bandwidth schema is not enabled"?$'
	# Nothing else changed on the way.
	assert_eq "$(v1 memory memory.limit_in_bytes)" 134217728
}
