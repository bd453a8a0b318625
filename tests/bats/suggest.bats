#!/usr/bin/env bats
# zone suggest and zone simulate: a zone records what its workload does,
# suggest turns the recording into the narrowest policy that allows it, and
# simulate replays the recording against a candidate policy before it is
# enforced. The workload talks to listeners in a network namespace of this
# test.

load helpers
load zone_helpers

# workload ID: what the zone's workload does, successfully.
workload() {
	rexec "$1" nc -w2 "$NET.2" "$PORT"
	assert_success
	assert_eq "$stdout" served
}

# deny_count ZONE: how many deny events ZONE has.
deny_count() {
	zone_events "$1" | jq -s '[.[] | select(.decision == "deny")] | length'
}

@test "suggest and simulate from a zone's audit events: suggest, simulate, update, the workload runs without a deny and a new action is denied" {
	peer_listeners
	in_zone b web "$(policy audit <<-'EOF'
		[zone]
		mode = "audit"
		[network]
		allowed_egress = []
	EOF
	)"
	set_args b sleep 600
	run_ct c1 b
	wire_peer c1 3

	# Recorded: audit mode lets the connection through and logs it.
	workload c1
	wait_event web ".decision == \"audit\" and .object == \"$NET.2:$PORT\"" >/dev/null

	rrun rt zone suggest web
	assert_success
	suggested=$BATS_TEST_TMPDIR/suggested.toml
	printf '%s\n' "$stdout" >"$suggested"
	grep -qF "\"$NET.2:$PORT\", # tcp $NET.2:$PORT by nc in container c1, first " "$suggested" ||
		fail "no commented egress rule in the suggestion: $(cat "$suggested")"
	grep -qx 'mode = "enforce"' "$suggested" || fail "the suggestion does not enforce: $(cat "$suggested")"
	rrun rt zone suggest web --format json
	assert_success
	jqe --arg e "$NET.2:$PORT" '.policy.network.allowed_egress == [$e] and .source == "events" and .base == "preset:strict"' <<<"$stdout" >/dev/null ||
		fail "suggest --format json: $stdout"

	# The suggestion allows everything recorded so far; strict does not.
	rrun rt zone simulate web --policy "$suggested"
	assert_success
	assert_match "$stdout" "^0 of 1 recorded operations"
	rrun rt zone simulate web --preset strict --format json
	assert_failure 1
	jqe --arg o "tcp $NET.2:$PORT" '.denied == 1 and .verdicts[0].rule == "network.allowed_egress" and .verdicts[0].observation.object == $o' <<<"$stdout" >/dev/null ||
		fail "simulate strict: $stdout"

	# A new action, still audited: simulate names exactly it, by rule.
	rexec c1 nc -w2 "$NET.2" "$PORT2"
	assert_success
	wait_event web ".decision == \"audit\" and .object == \"$NET.2:$PORT2\"" >/dev/null
	rrun rt zone simulate web --policy "$suggested" --format json
	assert_failure 1
	jqe --arg o "tcp $NET.2:$PORT2" '.denied == 1 and (.verdicts | length) == 1 and .verdicts[0].rule == "network.allowed_egress" and .verdicts[0].decision == "deny" and .verdicts[0].observation.object == $o' <<<"$stdout" >/dev/null ||
		fail "simulate after the new action: $stdout"
	rrun rt zone simulate web --policy "$suggested"
	assert_failure 1
	assert_match "$stdout" "^network.allowed_egress:
  DENY egress \"tcp $NET.2:$PORT2\": $NET.2:$PORT2 is not in allowed_egress \(by nc in container c1, first [^,]*, [0-9]+ times?\)
1 of 2 recorded operations"

	# Enforced: the workload runs without a deny, the new action is denied
	# with an event.
	rrun rt zone update web --policy "$suggested"
	assert_success
	[[ $(deny_count web) -eq 0 ]] || fail "deny events before the update: $(zone_events web)"
	workload c1
	[[ $(deny_count web) -eq 0 ]] || fail "the workload was denied under its suggestion: $(zone_events web)"
	rexec c1 nc -w2 "$NET.2" "$PORT2"
	assert_failure
	assert_match "$stderr" "Operation not permitted"
	wait_event web ".decision == \"deny\" and .object == \"$NET.2:$PORT2 (operation not permitted)\" and .container == \"c1\"" >/dev/null
	[[ $(deny_count web) -eq 1 ]] || fail "want exactly the new action denied: $(zone_events web)"
}

@test "simulate: a missing zone or an invalid candidate exits 2, and nothing changes" {
	rrun rt zone simulate nosuch --preset strict
	assert_failure 2
	assert_match "$stderr" "zone nosuch does not exist"
	rrun rt zone create web --preset audit
	assert_success
	bad=$(policy bad <<-'EOF'
		[network]
		allowed_egress = ["10.0.0.0/33"]
	EOF
	)
	rrun rt zone simulate web --policy "$bad"
	assert_failure 2
	assert_match "$stderr" "line 2"
	rrun rt zone simulate web
	assert_failure 2
	# A zone that recorded nothing: nothing would be denied.
	rrun rt zone simulate web --preset strict
	assert_success
	assert_match "$stdout" "^0 of 0 recorded operations"
	rrun rt zone inspect web
	jqe '.policy_source == "preset:audit"' <<<"$stdout" >/dev/null || fail "simulate changed the zone: $stdout"
	rrun rt zone suggest web --base nosuch
	assert_failure 1
	assert_match "$stderr" 'unknown policy preset .*nosuch'
}

@test "learn, suggest, simulate, update: a busybox workload runs without a deny under its suggestion, and the one new action is denied and was predicted" {
	peer_listeners
	rrun rt zone learn web
	assert_success
	in_zone b web
	set_args b sleep 600
	run_ct c1 b
	wire_peer c1 3

	# The workload: files in a spool directory, a log file, a connection.
	learned_workload() {
		rexec "$1" sh -c "mkdir -p /var/spool/app && for f in a b c; do echo x >/var/spool/app/\$f; done && echo started >>/var/app.log && nc -w2 $NET.2 $PORT"
		assert_success
		assert_eq "$stdout" served
	}
	learned_workload c1
	rrun rt zone learn web --show --format json
	jqe --arg e "tcp $NET.2:$PORT" 'any(.[]; .kind == "egress" and .object == $e) and any(.[]; .kind == "write" and .object == "/var/spool/app/c")' <<<"$stdout" >/dev/null ||
		fail "the workload was not recorded: $stdout"

	rrun rt zone suggest web
	assert_success
	suggested=$BATS_TEST_TMPDIR/suggested.toml
	printf '%s\n' "$stdout" >"$suggested"
	for want in '"/var/spool/app", # 3 files written under it; first /var/spool/app/a by sh in container c1, first ' \
		'"/var/app.log", # written by sh in container c1, first ' \
		"\"$NET.2:$PORT\", # tcp $NET.2:$PORT by nc in container c1, first " \
		"widening preset:strict."; do
		grep -qF -- "$want" "$suggested" || fail "the suggestion lacks '$want': $(cat "$suggested")"
	done

	rrun rt zone simulate web --policy "$suggested"
	assert_success
	rrun rt zone simulate web --preset strict --format json
	assert_failure 1
	jqe --arg e "tcp $NET.2:$PORT" 'any(.verdicts[]; .rule == "network.allowed_egress" and .observation.object == $e) and any(.verdicts[]; .rule == "filesystem.writable_paths" and .observation.object == "/var/app.log")' <<<"$stdout" >/dev/null ||
		fail "simulate strict: $stdout"

	# A new action while learning: recorded, and simulate names exactly it.
	rexec c1 nc -w2 "$NET.2" "$PORT2"
	assert_success
	rrun rt zone simulate web --policy "$suggested" --format json
	assert_failure 1
	jqe --arg o "tcp $NET.2:$PORT2" '.source == "recording" and .denied == 1 and (.verdicts | length) == 1 and .verdicts[0].rule == "network.allowed_egress" and .verdicts[0].observation.object == $o' <<<"$stdout" >/dev/null ||
		fail "simulate after the new action: $stdout"

	# Enforced, in a new container (a running one keeps the Landlock domain
	# it started with): the workload runs without a deny, the new action is
	# denied with an event.
	rrun rt zone update web --policy "$suggested"
	assert_success
	rt delete --force c1
	run_ct c2 b
	wire_peer c2 4
	learned_workload c2
	[[ $(deny_count web) -eq 0 ]] || fail "the workload was denied under its suggestion: $(zone_events web)"
	rexec c2 nc -w2 "$NET.2" "$PORT2"
	assert_failure
	assert_match "$stderr" "Operation not permitted"
	wait_event web ".decision == \"deny\" and .object == \"$NET.2:$PORT2 (operation not permitted)\" and .container == \"c2\"" >/dev/null
	[[ $(deny_count web) -eq 1 ]] || fail "want exactly the new action denied: $(zone_events web)"
}
