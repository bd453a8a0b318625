#!/usr/bin/env bats
# state: the OCI state JSON of one container.

load helpers

@test "state: JSON fields of a created container" {
	cfg b '.annotations = {"org.example.key": "value", "other": "x"}'
	create_ct c1
	rrun rt state c1
	assert_success
	j=$stdout
	jqe . <<<"$j" >/dev/null || fail "not JSON: $j"
	assert_match "$(jq -r .ociVersion <<<"$j")" '^1\.[0-9]+\.[0-9]+'
	assert_eq "$(jq -r .id <<<"$j")" c1
	assert_eq "$(jq -r .status <<<"$j")" created
	pid=$(jq -r .pid <<<"$j")
	[[ $pid =~ ^[0-9]+$ && $pid -gt 0 && -d /proc/$pid ]] || fail "bad pid $pid"
	assert_eq "$(jq -r .bundle <<<"$j")" "$(bundle_dir b)"
	assert_eq "$(jq -r .rootfs <<<"$j")" "$(bundle_dir b)/rootfs"
	# RFC 3339 with fractional seconds, as runc prints it.
	assert_match "$(jq -r .created <<<"$j")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$'
	jqe 'has("owner")' <<<"$j" >/dev/null || fail "no owner field"
	assert_eq "$(jq -c .annotations <<<"$j")" '{"org.example.key":"value","other":"x"}'
}

@test "state: created -> running -> stopped" {
	create_ct c1
	assert_eq "$(ct_status c1)" created
	rt start c1
	wait_status c1 running
	rt kill c1 KILL
	wait_status c1 stopped
	rrun rt state c1
	assert_success
	assert_eq "$(jq -r .status <<<"$stdout")" stopped
	assert_eq "$(jq -r .pid <<<"$stdout")" 0
}

@test "state: absolute rootfs path is reported as given" {
	mv "$(bundle_dir b)/rootfs" "$BATS_TEST_TMPDIR/elsewhere"
	cfg b '.root.path = $p' --arg p "$BATS_TEST_TMPDIR/elsewhere"
	create_ct c1
	assert_eq "$(rt state c1 | jq -r .rootfs)" "$BATS_TEST_TMPDIR/elsewhere"
}

@test "state: unknown id fails with one line" {
	rrun rt state nosuch
	assert_error_line 'not exist|not found|nosuch'
}

@test "state: without an id fails" {
	rrun rt state
	assert_failure 1
}
