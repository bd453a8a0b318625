#!/usr/bin/env bats
# events: container stats as JSON.

load helpers

@test "events --stats: one JSON stats object" {
	cfg b '.linux.resources.memory = {"limit": 67108864} | .linux.resources.pids = {"limit": 50}'
	run_ct c1
	rrun rt events --stats c1
	assert_success
	assert_eq "$(grep -c . <<<"$stdout")" 1
	assert_eq "$(jq -r .type <<<"$stdout")" stats
	assert_eq "$(jq -r .id <<<"$stdout")" c1
	assert_eq "$(jq -r .data.memory.usage.limit <<<"$stdout")" 67108864
	assert_eq "$(jq -r .data.pids.limit <<<"$stdout")" 50
	[[ $(jq -r .data.pids.current <<<"$stdout") -ge 1 ]] || fail "pids.current: $stdout"
	[[ $(jq -r .data.cpu.usage.total <<<"$stdout") -gt 0 ]] || fail "cpu usage: $stdout"
}

@test "events --interval: a stream of stats lines" {
	run_ct c1
	# events runs until the container stops: kill it once two lines are out.
	out=$BATS_TEST_TMPDIR/events.out
	rt events --interval 300ms c1 >"$out" 2>"$BATS_TEST_TMPDIR/events.err" </dev/null &
	events=$!
	retry 100 0.1 eval '[[ $(grep -c "\"type\":\"stats\"" "$out") -ge 2 ]]' ||
		fail "expected >= 2 stats lines: $(cat "$out" "$BATS_TEST_TMPDIR/events.err")"
	rt kill c1 KILL
	wait "$events" || true
	while read -r l; do
		[[ -z $l ]] && continue
		jqe . <<<"$l" >/dev/null || fail "not JSON: $l"
	done <"$out"
}

@test "events --stats: a missing container fails with one line" {
	rrun rt events --stats nosuch
	assert_error_line 'not exist|not found|nosuch'
}

@test "events --stats: a stopped container fails" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt events --stats c1
	assert_failure 1
}

@test "events: an OOM kill in the container is an oom event" {
	requires cgroups_v1
	cfg b '.linux.resources.memory = {limit: 33554432, swap: 33554432}'
	# tail buffers /dev/zero's endless "line" until the cgroup's OOM killer
	# ends it; the init lives on.
	set_args b sh -c 'while [ ! -e /go ]; do sleep 0.1; done; tail /dev/zero; sleep 3600'
	run_ct c1
	# The first stats line (after one interval for runc) says the OOM watch
	# is set up.
	rt events --interval 500ms c1 >"$BATS_TEST_TMPDIR/events.out" 2>&1 &
	local events=$!
	echo "$events" >>"$BATS_TEST_TMPDIR/bg.pids"
	retry 50 0.1 grep -q '"type":"stats"' "$BATS_TEST_TMPDIR/events.out"
	touch "$(bundle_dir b)/rootfs/go"
	retry 100 0.1 grep -q '"type":"oom"' "$BATS_TEST_TMPDIR/events.out" ||
		fail "no oom event: $(cat "$BATS_TEST_TMPDIR/events.out"); memory.failcnt $(cat /sys/fs/cgroup/memory"$(cg_path b)"/memory.failcnt)"
	grep -m1 '"type":"oom"' "$BATS_TEST_TMPDIR/events.out" | jqe '.id == "c1"' >/dev/null
	# events ends by itself once the container is gone (rauha already when it
	# stops), with status 0.
	rt kill c1 KILL
	wait_status c1 stopped
	rt delete c1
	retry 100 0.1 eval '! kill -0 $events 2>/dev/null'
	wait "$events"
}
