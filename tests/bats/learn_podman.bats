#!/usr/bin/env bats
# zone learn through podman: a policy file in mode "learn" named by the
# annotation org.rauha.policy makes the new zone learn from it; what the
# container does (here: fetch from a listener on the host's bridge address,
# which the base policy's empty allowed_egress would deny) is recorded in
# the zone of rauha's state root /run/rauha, and nothing of podman's, conmon's
# or rauha's own set-up is.

load ../clients/setup.bash

ZONE=pm-learn

setup_file() {
	clients_enabled || return 0
	runtime_ok
	podman_setup
}

teardown_file() {
	clients_enabled || return 0
	podman_teardown
	zone_forget /run/rauha "$ZONE"
	if is_rauha; then "$RT" --root /run/rauha zone reconcile >/dev/null 2>&1 || true; fi
}

@test "podman: a zone learns through the annotations, undenied" {
	require_rauha "zone learn"
	local pol=$BATS_FILE_TMPDIR/learn.toml obs
	printf '[zone]\nmode = "learn"\n[filesystem]\nwritable_paths = ["/tmp"]\n[network]\nallowed_egress = []\n' >"$pol"
	host_listener "$P_GW" 18491 hello-learning
	ok podman run --rm --annotation org.rauha.zone=$ZONE --annotation org.rauha.policy="$pol" \
		"$IMAGE_NAME" wget -qO- "http://$P_GW:18491/msg" || { stop_listener; false; }
	stop_listener
	expect_eq "reply (not denied while learning)" hello-learning "$output"

	ok "$RT" --root /run/rauha zone inspect "$ZONE"
	jqe '.policy.zone.mode == "learn" and .learning.network.allowed_egress == [] and .learning.filesystem.writable_paths == ["/tmp"]' \
		<<<"$output" >/dev/null || { _show "zone inspect" "zone inspect $ZONE"; false; }

	ok "$RT" --root /run/rauha zone learn "$ZONE" --show --format json
	obs=$output
	expect_eq "egress recorded" "tcp $P_GW:18491" "$(jq -r '.[] | select(.kind == "egress") | .object' <<<"$obs")"
	# The one exec is the workload's (wget, recorded by the file that ran:
	# busybox): not conmon's, podman's or rauha's.
	expect_eq "execs recorded" busybox "$(jq -r '[.[] | select(.kind == "exec") | .object | split("/") | last] | join(" ")' <<<"$obs")"
	expect_eq "attributed to the container" true "$(jq 'all(.[]; .container != "" and .comm == "wget")' <<<"$obs")"
	ok "$RT" --root /run/rauha zone delete "$ZONE"
}
