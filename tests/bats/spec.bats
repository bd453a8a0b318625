#!/usr/bin/env bats
# spec: write a default config.json.

load helpers

@test "spec: --bundle writes a valid default config.json" {
	mkdir -p "$BATS_TEST_TMPDIR/sb"
	rrun rt spec --bundle "$BATS_TEST_TMPDIR/sb"
	assert_success
	f=$BATS_TEST_TMPDIR/sb/config.json
	[[ -f $f ]] || fail "no config.json"
	assert_match "$(jq -r .ociVersion "$f")" '^1\.[0-9]+\.[0-9]+'
	assert_eq "$(jq -r .root.path "$f")" rootfs
	assert_eq "$(jq -r '.process.args | join(" ")' "$f")" sh
	assert_eq "$(jq -r .process.terminal "$f")" true
	for ns in pid network ipc uts mount; do
		jq -e --arg ns "$ns" '.linux.namespaces | map(.type) | index($ns)' "$f" >/dev/null || fail "no $ns namespace"
	done
	jq -e '.mounts | map(.destination) | index("/proc")' "$f" >/dev/null || fail "no /proc mount"
	jq -e '.linux.maskedPaths | length > 0' "$f" >/dev/null || fail "no maskedPaths"
}

@test "spec: writes to the current directory by default" {
	mkdir -p "$BATS_TEST_TMPDIR/sb"
	cd "$BATS_TEST_TMPDIR/sb"
	rrun rt spec
	assert_success
	jq -e .ociVersion "$BATS_TEST_TMPDIR/sb/config.json" >/dev/null
}

@test "spec: -b short flag" {
	mkdir -p "$BATS_TEST_TMPDIR/sb"
	rrun rt spec -b "$BATS_TEST_TMPDIR/sb"
	assert_success
	[[ -f $BATS_TEST_TMPDIR/sb/config.json ]]
}

@test "spec: --rootless has a user namespace with uid/gid mappings" {
	mkdir -p "$BATS_TEST_TMPDIR/sb"
	rrun rt spec --rootless --bundle "$BATS_TEST_TMPDIR/sb"
	assert_success
	f=$BATS_TEST_TMPDIR/sb/config.json
	jq -e '.linux.namespaces | map(.type) | index("user")' "$f" >/dev/null || fail "no user namespace"
	assert_eq "$(jq -r '.linux.uidMappings[0].containerID' "$f")" 0
	assert_eq "$(jq -r '.linux.uidMappings[0].hostID' "$f")" "$(id -u)"
	assert_eq "$(jq -r '.linux.gidMappings[0].hostID' "$f")" "$(id -g)"
	# No cgroup namespace-less network: rootless has no network namespace.
	! jq -e '.linux.namespaces | map(.type) | index("network")' "$f" >/dev/null || fail "rootless spec has a network namespace"
}

@test "spec: an existing config.json is not overwritten" {
	mkdir -p "$BATS_TEST_TMPDIR/sb"
	echo '{"keep": true}' >"$BATS_TEST_TMPDIR/sb/config.json"
	rrun rt spec --bundle "$BATS_TEST_TMPDIR/sb"
	assert_error_line 'exist'
	assert_eq "$(jq -c . "$BATS_TEST_TMPDIR/sb/config.json")" '{"keep":true}'
}

@test "spec: the generated config runs with a busybox rootfs" {
	mkdir -p "$BATS_TEST_TMPDIR/sb"
	cp -a "$CACHE_DIR/rootfs" "$BATS_TEST_TMPDIR/sb/rootfs"
	rt spec --bundle "$BATS_TEST_TMPDIR/sb"
	f=$BATS_TEST_TMPDIR/sb/config.json
	jq --arg cg "$(cg_path sb)" '.process.terminal = false | .process.args = ["echo", "spec-ok"] | .linux.cgroupsPath = $cg' "$f" >"$f.tmp"
	mv "$f.tmp" "$f"
	rrun rt run --bundle "$BATS_TEST_TMPDIR/sb" c1
	assert_success
	assert_eq "$stdout" spec-ok
}
