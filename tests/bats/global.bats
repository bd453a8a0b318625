#!/usr/bin/env bats
# Global flags: --root, --log, --log-format, --debug, --systemd-cgroup.

load helpers

@test "--root: state lives under the given root only" {
	create_ct c1
	[[ -d $ROOT ]] || fail "root missing"
	# An existing, empty root: a missing one fails list (list.bats).
	other=$BATS_TEST_TMPDIR/other-root
	mkdir "$other"
	rrun timeout 30 "$RUNTIME" --root "$other" state c1
	assert_failure 1
	rrun timeout 30 "$RUNTIME" --root "$other" list -q
	assert_success
	assert_eq "$stdout" ""
	rrun rt list -q
	assert_eq "$stdout" c1
}

@test "--root: a root that does not exist yet is created" {
	ROOT=$BATS_TEST_TMPDIR/new/nested/root
	create_ct c1
	[[ -d $ROOT ]] || fail "root not created"
	assert_eq "$(ct_status c1)" created
}

@test "--log --log-format json: a failing create writes a JSON error line" {
	rm "$(bundle_dir b)/config.json"
	log=$BATS_TEST_TMPDIR/log.json
	rrun rt --log "$log" --log-format json create --bundle "$(bundle_dir b)" c1
	assert_failure 1
	[[ -s $log ]] || fail "log file is empty"
	line=$(grep '"level":"error"' "$log" | tail -n1)
	[[ -n $line ]] || fail "no error line in: $(cat "$log")"
	jqe . <<<"$line" >/dev/null || fail "not JSON: $line"
	assert_eq "$(jq -r .level <<<"$line")" error
	assert_match "$(jq -r .msg <<<"$line")" 'config\.json'
	assert_match "$(jq -r .time <<<"$line")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'
	# Every line of the log is JSON.
	while read -r l; do jqe . <<<"$l" >/dev/null || fail "non-JSON log line: $l"; done <"$log"
	# The error still reaches stderr, as one line.
	assert_error_line 'config\.json'
}

@test "--log: text format by default" {
	rm "$(bundle_dir b)/config.json"
	log=$BATS_TEST_TMPDIR/log.txt
	rrun rt --log "$log" create --bundle "$(bundle_dir b)" c1
	assert_failure 1
	grep -q 'level=error' "$log" || fail "no level=error line: $(cat "$log")"
}

@test "--log-format json: the log is appended, not truncated" {
	log=$BATS_TEST_TMPDIR/log.json
	echo '{"level":"info","msg":"earlier","time":"2020-01-01T00:00:00Z"}' >"$log"
	rrun rt --log "$log" --log-format json state nosuch
	assert_failure 1
	grep -q earlier "$log" || fail "log truncated"
	grep -q '"level":"error"' "$log" || fail "no error appended"
}

@test "--log-format: an unknown format fails" {
	rrun rt --log-format yaml list
	assert_failure 1
}

@test "--debug: debug lines go to the log" {
	log=$BATS_TEST_TMPDIR/debug.json
	set_args b true
	rrun rt --debug --log "$log" --log-format json run --bundle "$(bundle_dir b)" c1
	assert_success
	grep -q '"level":"debug"' "$log" || fail "no debug line: $(head -c 2000 "$log")"
}

@test "--debug: without --log, debug goes to stderr" {
	set_args b true
	rrun rt --debug run --bundle "$(bundle_dir b)" c1
	assert_success
	grep -q 'level=debug' <<<"$stderr" || fail "no debug on stderr: $stderr"
}

@test "--systemd-cgroup: fails quickly with a clear error on a host without systemd" {
	[[ ! -d /run/systemd/system ]] || skip "systemd is running on this host"
	start=$SECONDS
	RT_TIMEOUT=30
	rrun rt --systemd-cgroup run --detach --bundle "$(bundle_dir b)" c1
	[[ $status -ne 124 ]] || fail "--systemd-cgroup hung"
	assert_error_line 'systemd'
	[[ $((SECONDS - start)) -lt 20 ]] || fail "took $((SECONDS - start))s"
	assert_nothing_left c1
}
