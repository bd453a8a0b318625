#!/usr/bin/env bats
# Bad input: exit 1, one error line that names the problem, nothing left behind.

load helpers

# create_fails ID REGEX: create must fail as described and leave nothing.
create_fails() {
	rrun rt create --bundle "$(bundle_dir b)" "$1"
	assert_error_line "$2"
	assert_nothing_left "$1"
}

@test "bad id: ../x" {
	create_fails ../x 'id|invalid'
	[[ ! -e $ROOT/../x && ! -e $BATS_TEST_TMPDIR/x ]] || fail "escaped the root"
}

@test "bad id: empty" {
	create_fails "" 'id|empty|invalid'
}

@test "bad id: 300 characters" {
	create_fails "$(printf 'a%.0s' {1..300})" 'id|long|invalid'
}

@test "bad id: contains a slash" {
	create_fails a/b 'id|invalid'
	[[ ! -e $ROOT/a ]] || fail "left $ROOT/a"
}

@test "bad id: a dot" {
	create_fails . 'id|invalid'
}

@test "bad id: run also validates" {
	rrun rt run --bundle "$(bundle_dir b)" ../x
	assert_error_line 'id|invalid'
	assert_nothing_left ""
}

@test "duplicate id" {
	create_ct c1
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'exist'
	assert_eq "$(ct_status c1)" created
}

@test "missing bundle directory" {
	rrun rt create --bundle "$BATS_TEST_TMPDIR/nosuch" c1
	assert_error_line 'nosuch|no such|bundle|config\.json'
	assert_nothing_left c1
}

@test "missing config.json" {
	rm "$(bundle_dir b)/config.json"
	create_fails c1 'config\.json'
}

@test "malformed config.json" {
	echo '{"ociVersion": "1.0.2", "process": ' >"$(bundle_dir b)/config.json"
	create_fails c1 'json|parse|config|unexpected'
}

@test "config.json that is not an object" {
	echo '[1, 2, 3]' >"$(bundle_dir b)/config.json"
	create_fails c1 'json|config|unmarshal|cannot'
}

@test "unsupported ociVersion 0.1.0" {
	runc_1_1_differs "runc 1.1.5 does not check ociVersion"
	cfg b '.ociVersion = "0.1.0"'
	create_fails c1 'ociVersion|version|0\.1\.0'
}

@test "missing rootfs" {
	rm -rf "$(bundle_dir b)/rootfs"
	create_fails c1 'rootfs|root|no such'
}

@test "missing process.args" {
	cfg b 'del(.process.args)'
	create_fails c1 'args'
}

@test "process binary not found in the rootfs" {
	set_args b /no/such/binary
	create_fails c1 'no such|not found|/no/such/binary|executable'
}

@test "relative cwd is refused" {
	cfg b '.process.cwd = "relative"'
	create_fails c1 'cwd|relative|absolute'
}

@test "unknown namespace type" {
	cfg b '.linux.namespaces += [{"type": "bogus"}]'
	create_fails c1 'namespace|bogus'
}

@test "exec into a stopped container" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt exec c1 true
	assert_error_line 'stopped|not running' 255
}

@test "start twice" {
	create_ct c1
	rt start c1
	wait_status c1 running
	rrun rt start c1
	assert_error_line 'running|not in created|state'
}

@test "delete a running container without --force" {
	run_ct c1
	rrun rt delete c1
	assert_error_line 'running|not stopped|force'
	assert_eq "$(ct_status c1)" running
}

@test "a container id that does not exist" {
	for cmd in state start pause resume ps; do
		rrun rt "$cmd" nosuch
		assert_error_line 'not exist|not found|nosuch'
	done
}
