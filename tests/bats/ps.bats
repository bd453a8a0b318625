#!/usr/bin/env bats
# ps: processes of a container.

load helpers

@test "ps: default table has a ps header and the init" {
	run_ct c1
	rrun rt ps c1
	assert_success
	assert_match "$(head -n1 <<<"$stdout")" 'PID'
	pid=$(ct_pid c1)
	col=$(head -n1 <<<"$stdout" | awk '{for (i=1;i<=NF;i++) if ($i=="PID") print i}')
	awk -v c="$col" 'NR>1{print $c}' <<<"$stdout" | grep -qx "$pid" || fail "init $pid not listed: $stdout"
}

@test "ps: --format json is a JSON array of pids" {
	run_ct c1
	rt exec -d --pid-file "$BATS_TEST_TMPDIR/e.pid" c1 sleep 1000
	rrun rt ps --format json c1
	assert_success
	assert_eq "$(jq -r type <<<"$stdout")" array
	assert_eq "$(jq -r 'map(type) | unique | join(",")' <<<"$stdout")" number
	got=$(jq -r 'sort | map(tostring) | join(" ")' <<<"$stdout")
	want=$(printf '%s\n' "$(ct_pid c1)" "$(cat "$BATS_TEST_TMPDIR/e.pid")" | sort -n | tr '\n' ' ')
	assert_eq "$got " "$want"
}

@test "ps: ps options after the id (-e -x)" {
	run_ct c1
	rrun rt ps c1 -e -x
	assert_success
	assert_eq "$(head -n1 <<<"$stdout" | awk '{$1=$1; print}')" "PID TTY STAT TIME COMMAND"
	grep -q "sleep 3600" <<<"$stdout" || fail "no sleep row: $stdout"
}

@test "ps: a stopped container prints only the header" {
	run_ct c1
	rt kill c1 KILL
	wait_status c1 stopped
	rrun rt ps c1
	assert_success
	assert_eq "$(grep -c . <<<"$stdout")" 1
}

@test "ps: a missing container fails with one line" {
	rrun rt ps nosuch
	assert_error_line 'not exist|not found|nosuch'
}
