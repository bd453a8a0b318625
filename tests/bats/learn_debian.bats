#!/usr/bin/env bats
# learn, suggest, simulate, update with a Debian image (debian_helpers.bash):
# a dynamically linked workload that runs several binaries, writes under
# /var and /tmp and connects to a listener in a network namespace of this
# test. Its suggestion must hold what a dynamic workload needs (its
# binaries, the dynamic loader, the directories it writes, the listener),
# so that the workload then runs without an event, while a binary and an
# address it never used are denied, and simulate predicts exactly those.

load helpers
load zone_helpers
load debian_helpers

# The workload: a bash script that lists the installed packages with
# dpkg-query, sorts and edits them, dates its work, writes under /var/lib
# and /tmp (some of it relative to its working directory) and asks the
# listener at ADDR PORT through bash's /dev/tcp.
work_script() {
	cat >"$(bundle_dir "$1")/rootfs/usr/local/bin/work" <<-'EOF'
		#!/bin/bash
		set -euo pipefail
		mkdir -p /var/lib/work /tmp/work
		cd /var/lib/work
		dpkg-query -W -f '${Package}\n' | sort >packages
		sed -n '/^bash$/p' packages >found
		date -u +%Y >year
		wc -l <packages >/tmp/work/count
		exec 3<>"/dev/tcp/$1/$2"
		read -r reply <&3
		echo "$(cat found) $reply"
	EOF
	chmod 0755 "$(bundle_dir "$1")/rootfs/usr/local/bin/work"
}

# deny_count ZONE: how many deny events ZONE has.
deny_count() {
	zone_events "$1" | jq -s '[.[] | select(.decision == "deny")] | length'
}

@test "learn, suggest, simulate, update: a Debian workload runs without an event under its suggestion; a new binary and a new address are denied, as simulate predicted" {
	peer_listeners
	debian_bundle deb
	work_script deb
	rrun rt zone learn web
	assert_success
	in_zone deb web
	set_args deb sleep 600
	run_ct c1 deb
	wire_peer c1 3

	rexec c1 work "$NET.2" "$PORT"
	assert_success
	assert_eq "$stdout" "bash served"

	# Recorded as a policy names them: absolute paths (mkdir -p and the
	# script's relative names included), the dynamic loader and the
	# script's interpreter as executed.
	rrun rt zone learn web --show --format json
	assert_success
	obs=$stdout
	for want in "exec /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "exec /usr/bin/bash" "exec /usr/local/bin/work" \
		"exec /usr/bin/dpkg-query" "write /var/lib/work" "write /var/lib/work/packages" "read /var/lib/work/packages" \
		"write /tmp/work" "write /tmp/work/count" "egress tcp $NET.2:$PORT"; do
		jqe --arg k "${want%% *}" --arg o "${want#* }" 'any(.[]; .kind == $k and .object == $o)' <<<"$obs" >/dev/null ||
			fail "not recorded: $want; the recording: $obs"
	done
	jqe 'all(.[]; .kind == "egress" or (.object | startswith("/")))' <<<"$obs" >/dev/null ||
		fail "relative paths recorded: $(jq -c '[.[] | select(.kind != "egress" and (.object | startswith("/") | not))]' <<<"$obs")"

	rrun rt zone suggest web
	assert_success
	suggested=$BATS_TEST_TMPDIR/suggested.toml
	printf '%s\n' "$stdout" >"$suggested"
	for want in '"/usr/bin", # ' '"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", # executed by ' \
		'"/usr/local/bin/work", # executed by work in container c1, first ' \
		'"/var/lib/work", # ' "\"$NET.2:$PORT\", # tcp $NET.2:$PORT by work in container c1, first " \
		'admission = "audit"' '# the dynamic loader /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 is in exec.allow'; do
		grep -qF -- "$want" "$suggested" || fail "the suggestion lacks '$want': $(cat "$suggested")"
	done
	! grep -q "not allowed by this policy" "$suggested" || fail "the suggestion leaves recorded operations out: $(cat "$suggested")"
	rrun rt zone simulate web --policy "$suggested"
	assert_success
	assert_match "$stdout" "^0 of [0-9]+ recorded operations"

	# Two new actions while learning, both undenied: a binary never run
	# before and an address never reached. simulate names exactly them.
	rexec c1 /usr/sbin/nologin
	assert_failure 1
	assert_match "$stdout" "This account is currently not available"
	rexec c1 bash -c "exec 3<>/dev/tcp/$NET.2/$PORT2 && read -r r <&3 && echo \$r"
	assert_success
	assert_eq "$stdout" served
	rrun rt zone simulate web --policy "$suggested" --format json
	assert_failure 1
	jqe --arg e "tcp $NET.2:$PORT2" '.denied == 2 and ([.verdicts[] | "\(.decision) \(.rule) \(.observation.kind) \(.observation.object)"] | sort) ==
		["deny exec.allow exec /usr/sbin/nologin", "deny network.allowed_egress egress \($e)"]' <<<"$stdout" >/dev/null ||
		fail "simulate after the new actions: $stdout"

	# Enforced, in a new container (a running one keeps the Landlock domain
	# it started with): the workload runs without an event, the new
	# actions are denied with theirs.
	rrun rt zone update web --policy "$suggested"
	assert_success
	rt delete --force c1
	run_ct c2 deb
	wire_peer c2 4
	rexec c2 work "$NET.2" "$PORT"
	assert_success
	assert_eq "$stdout" "bash served"
	no_event web 'true'

	rexec c2 /usr/sbin/nologin
	assert_failure
	assert_match "$stderr" "[Pp]ermission denied"
	wait_event web '.decision == "deny" and .control == "exec" and (.object | startswith("/usr/sbin/nologin")) and .container == "c2"' >/dev/null
	rexec c2 bash -c "exec 3<>/dev/tcp/$NET.2/$PORT2"
	assert_failure
	assert_match "$stderr" "Operation not permitted"
	wait_event web ".decision == \"deny\" and .object == \"$NET.2:$PORT2 (operation not permitted)\" and .container == \"c2\"" >/dev/null
	[[ $(deny_count web) -eq 2 ]] || fail "want exactly the two new actions denied: $(zone_events web)"
	# The cost of exec.allow for a dynamic workload, which the suggestion's
	# comment on admission names: the loader runs what it can read.
	rrun rt zone verify web
	assert_failure 1
	assert_match "$stdout" "FAIL +container c2: exec: loader +exec.allow: the dynamic loader /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 is allowed"
}
