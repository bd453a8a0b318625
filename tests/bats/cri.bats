#!/usr/bin/env bats
# containerd 1.6 CRI with the runtime handler "rauha" (io.containerd.runc.v2,
# BinaryName = runtime under test), driven by crictl like a kubelet would:
# runp -> create -> start -> exec -> logs -> stop -> rm -> stopp -> rmp.
# Pods use the CNI bridge network rauha-cri (bridge/host-local/loopback
# plugins) and the absolute cgroup parent /rauha-test-cri.
# Validate against runc: RAUHA=/usr/sbin/runc bats tests/bats/cri.bats

load ../clients/setup.bash

ZONE=cri-zone

setup_file() {
	clients_enabled || return 0
	runtime_ok
	cri_setup
	mkdir -p "$C_RUN/specs" "$C_RUN/pod-logs"
	jq -n --arg logs "$C_RUN/pod-logs" --arg cg "$C_CGROUP" --arg zone "$ZONE" '{
		metadata: {name: "rauha-pod", namespace: "rauha-test", uid: "rauha-pod-uid", attempt: 0},
		log_directory: $logs,
		linux: {cgroup_parent: $cg},
		annotations: {"org.rauha.zone": $zone, "org.rauha.policy": "standard"}}' >"$C_RUN/specs/pod.json"
	jq -n --arg img "$IMAGE_NAME" '{
		metadata: {name: "app"}, image: {image: $img},
		command: ["sh", "-c", "echo hello-log; trap \"exit 0\" TERM; sleep 600 & wait"],
		log_path: "app.log", linux: {}}' >"$C_RUN/specs/ctr.json"
}

teardown_file() {
	clients_enabled || return 0
	cri_teardown
}

pod_id() { cat "$C_RUN/pod.id"; }
ctr_id() { cat "$C_RUN/ctr.id"; }

@test "cri: containerd knows the rauha handler" {
	ok "${CRICTL[@]}" info -o json
	expect_eq "rauha BinaryName" "$RT" "$(jq -r '.config.containerd.runtimes.rauha.options.BinaryName' <<<"$output")"
	ok_match 'rauha-busybox.*rauha-pause|rauha-pause.*rauha-busybox' "${CRICTL[@]}" images
}

@test "cri: runp with runtime handler rauha" {
	ok "${CRICTL[@]}" runp --runtime rauha "$C_RUN/specs/pod.json"
	echo "$output" >"$C_RUN/pod.id"
	ok "${CRICTL[@]}" inspectp -o json "$(pod_id)"
	expect_eq "pod state" SANDBOX_READY "$(jq -r .status.state <<<"$output")"
	expect_eq "runtime handler" rauha "$(jq -r .info.runtimeHandler <<<"$output")"
	local pid
	pid=$(jq -r .info.pid <<<"$output")
	[[ $(cgroup_dir memory "$pid") == /sys/fs/cgroup/memory$C_CGROUP/* ]] ||
		{ echo "# sandbox pid $pid is not under $C_CGROUP: $(cat "/proc/$pid/cgroup")" >&2; false; }
}

@test "cri: create and start a container in the pod" {
	ok "${CRICTL[@]}" create "$(pod_id)" "$C_RUN/specs/ctr.json" "$C_RUN/specs/pod.json"
	echo "$output" >"$C_RUN/ctr.id"
	ok "${CRICTL[@]}" start "$(ctr_id)"
	ok "${CRICTL[@]}" inspect -o json "$(ctr_id)"
	expect_eq "container state" CONTAINER_RUNNING "$(jq -r .status.state <<<"$output")"
}

@test "cri: exec -s (ExecSync)" {
	ok_match '^hi-sync$' "${CRICTL[@]}" exec -s "$(ctr_id)" echo hi-sync
}

@test "cri: exec (streaming)" {
	ok_match '^hi-stream$' "${CRICTL[@]}" exec "$(ctr_id)" echo hi-stream
}

@test "cri: logs" {
	ok_match 'hello-log' "${CRICTL[@]}" logs "$(ctr_id)"
}

@test "cri: pod network reaches the host's bridge address" {
	ok "${CRICTL[@]}" inspectp -o json "$(pod_id)"
	[[ $(jq -r .status.network.ip <<<"$output") == 10.89.67.* ]] ||
		{ echo "# pod ip: $(jq -c .status.network <<<"$output")" >&2; false; }
	host_listener "$C_GW" 18483 hello-from-host
	ok "${CRICTL[@]}" exec -s "$(ctr_id)" wget -qO- "http://$C_GW:18483/msg" || { stop_listener; false; }
	stop_listener
	expect_eq "reply" hello-from-host "$output"
}

@test "cri: pod annotations reach sandbox and container config.json" {
	local id
	for id in "$(pod_id)" "$(ctr_id)"; do
		ok jq -r '.annotations["org.rauha.zone"] + " " + .annotations["org.rauha.policy"]' "$C_TASKS/$id/config.json"
		expect_eq "annotations of $id" "$ZONE standard" "$output"
	done
}

@test "cri: rauha zone inspect lists sandbox and container" {
	require_rauha "zone inspect"
	zone_lists "$C_RT_ROOT" "$ZONE" "$(pod_id)"
	zone_lists "$C_RT_ROOT" "$ZONE" "$(ctr_id)"
}

@test "cri: stop" {
	ok "${CRICTL[@]}" stop -t 10 "$(ctr_id)"
	ok "${CRICTL[@]}" inspect -o json "$(ctr_id)"
	expect_eq "state exitCode" "CONTAINER_EXITED 0" "$(jq -r '.status.state + " " + (.status.exitCode | tostring)' <<<"$output")"
}

@test "cri: rm" {
	ok "${CRICTL[@]}" rm "$(ctr_id)"
	ok "${CRICTL[@]}" ps -a -q
	[[ $output != *"$(ctr_id)"* ]] || { echo "# container still listed: $output" >&2; false; }
}

@test "cri: stopp" {
	ok "${CRICTL[@]}" stopp "$(pod_id)"
	ok "${CRICTL[@]}" inspectp -o json "$(pod_id)"
	expect_eq "pod state" SANDBOX_NOTREADY "$(jq -r .status.state <<<"$output")"
}

@test "cri: rmp removes the pod, its runtime state and its cgroups" {
	ok "${CRICTL[@]}" rmp "$(pod_id)"
	ok "${CRICTL[@]}" pods -q
	[[ $output != *"$(pod_id)"* ]] || { echo "# pod still listed: $output" >&2; false; }
	ok "$RT" --root "$C_RT_ROOT" list
	[[ $output != *"$(pod_id)"* ]] || { echo "# runtime still lists the sandbox:"$'\n'"$output" >&2; false; }
	! cgroup_exists "$C_CGROUP/$(pod_id)" || { echo "# cgroup $C_CGROUP/$(pod_id) left behind" >&2; false; }
	if is_rauha; then zone_lacks "$C_RT_ROOT" "$ZONE" "$(pod_id)"; fi
}
