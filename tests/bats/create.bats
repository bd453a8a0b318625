#!/usr/bin/env bats
# create: the container exists, its init waits, nothing user-defined runs yet.

load helpers

@test "create: container is created and its init waits" {
	set_args b sh -c 'echo started > /ran; sleep 3600'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(ct_status c1)" created
	pid=$(ct_pid c1)
	[[ $pid -gt 0 && -d /proc/$pid ]] || fail "init pid $pid is not alive"
	# The user process has not run before start.
	[[ ! -e $(bundle_dir b)/rootfs/ran ]] || fail "process ran before start"
}

@test "create: --bundle defaults to the current directory" {
	cd "$(bundle_dir b)"
	rrun rt create c1
	assert_success
	assert_eq "$(rt state c1 | jq -r .bundle)" "$(bundle_dir b)"
}

@test "create: relative --bundle is resolved against the caller's cwd" {
	cd "$BATS_TEST_TMPDIR"
	rrun rt create --bundle b c1
	assert_success
	assert_eq "$(rt state c1 | jq -r .bundle)" "$(bundle_dir b)"
}

@test "create: -b short flag" {
	rrun rt create -b "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(ct_status c1)" created
}

@test "create: --pid-file absolute path holds the init pid" {
	rrun rt create --bundle "$(bundle_dir b)" --pid-file "$BATS_TEST_TMPDIR/c1.pid" c1
	assert_success
	assert_eq "$(cat "$BATS_TEST_TMPDIR/c1.pid")" "$(ct_pid c1)"
}

@test "create: --pid-file relative path is relative to the caller's cwd" {
	mkdir -p "$BATS_TEST_TMPDIR/cwd"
	cd "$BATS_TEST_TMPDIR/cwd"
	rrun rt create --bundle "$(bundle_dir b)" --pid-file rel.pid c1
	assert_success
	assert_eq "$(cat "$BATS_TEST_TMPDIR/cwd/rel.pid")" "$(ct_pid c1)"
}

@test "create: --pid-file whose directory is missing fails" {
	rrun rt create --bundle "$(bundle_dir b)" --pid-file "$BATS_TEST_TMPDIR/no/such/dir/pid" c1
	assert_failure 1
}

@test "create: a second create with the same id fails and leaves the first intact" {
	create_ct c1
	pid=$(ct_pid c1)
	make_bundle b2
	rrun rt create --bundle "$(bundle_dir b2)" c1
	assert_error_line 'exist'
	assert_eq "$(ct_status c1)" created
	assert_eq "$(ct_pid c1)" "$pid"
	[[ -z $(cg_dirs "$(cg_path b2)") ]] || fail "duplicate create left a cgroup"
}

@test "create: two containers from two bundles coexist" {
	make_bundle b2
	create_ct c1 b
	create_ct c2 b2
	assert_eq "$(ct_status c1)" created
	assert_eq "$(ct_status c2)" created
}

@test "create: without arguments fails" {
	rrun rt create
	assert_failure 1
	[[ -n $stderr ]] || fail "no error message"
}

@test "create: a failure reads '<name> create failed: ...', on stderr and in the JSON log" {
	local name log=$BATS_TEST_TMPDIR/log.json
	name=$(basename "$RUNTIME")
	rrun rt create --bundle "$BATS_TEST_TMPDIR/nosuch" c1
	assert_error_line "^.*$name create failed: .*nosuch"
	# With the log in a file (docker's and containerd's shims), stderr has
	# the bare message and the log its JSON record.
	rrun rt --log "$log" --log-format json create --bundle "$BATS_TEST_TMPDIR/nosuch" c1
	assert_failure 1
	assert_eq "$(jq -r 'select(.level == "error") | .msg' "$log")" "$stderr"
	assert_match "$stderr" "^$name create failed: .*nosuch"
}
