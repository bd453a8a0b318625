#!/usr/bin/env bats
# network.allowed_zones between Kubernetes pods: containerd's CRI plugin with
# the runtime handler "rauha", driven by crictl, three pods on one CNI bridge
# network: a1 and a2 in zone a, b1 in zone b, each running a server on port
# 8080 that logs what it answers. containerd owns the network (CNI); rauha
# only registers the pods' addresses and judges packets between zones. The
# same pods under the handler "runc" show every connection works first.
#
# containerd and its CNI bridge run in a network namespace of this suite
# (client_netns in tests/clients/setup.bash), with a containerd, state and
# cgroup parent of its own (cri.bats may run beside it).
# Steps share the pods and run in file order.

load ../clients/setup.bash

C_RUN=$H_RUN/clients-cri-zonenet
C_LIB=$H_LIB/clients-cri-zonenet
C_NETNS=rauha-czn C_BRIDGE=czn0 C_GW=10.89.72.1 C_SUBNET=10.89.72.0/24 C_NET=rauha-cri-zonenet
C_SOCK=$C_RUN/containerd.sock
C_RT_ROOT=$C_RUN/runtime-rauha/k8s.io
C_TASKS=$C_RUN/containerd-state/io.containerd.runtime.v2.task/k8s.io
C_CGROUP=/rauha-test-cri-zonenet
CRICTL=(crictl --config "$C_RUN/crictl.yaml")
ZA=czn-a ZB=czn-b

setup_file() {
	clients_enabled || return 0
	runtime_ok
	del_client_netns "$C_NETNS"
	client_netns "$C_NETNS"
	cri_setup
	mkdir -p "$C_RUN/specs" "$C_RUN/pod-logs" "$C_RUN/policy"
	printf '[network]\nallowed_zones = []\n' >"$C_RUN/policy/a.toml"
	printf '[network]\nallowed_zones = ["%s"]\n' "$ZA" >"$C_RUN/policy/b.toml"
	printf '[network]\nallowed_zones = ["%s"]\n' "$ZB" >"$C_RUN/policy/a-allows-b.toml"
	printf '[network]\nallowed_zones = []\n' >"$C_RUN/policy/b-closed.toml"
	local pod zone
	for pod in a1 a2 b1; do
		zone=$ZA
		[[ $pod == b* ]] && zone=$ZB
		jq -n --arg name "$pod" --arg logs "$C_RUN/pod-logs" --arg cg "$C_CGROUP" --arg zone "$zone" \
			--arg pol "$C_RUN/policy/${zone#czn-}.toml" '{
			metadata: {name: $name, namespace: "rauha-zonenet", uid: ($name + "-uid"), attempt: 0},
			log_directory: $logs, linux: {cgroup_parent: $cg},
			annotations: {"org.rauha.zone": $zone, "org.rauha.policy": $pol}}' >"$C_RUN/specs/pod-$pod.json"
	done
	jq -n --arg img "$IMAGE_NAME" '{
		metadata: {name: "server"}, image: {image: $img},
		command: ["nc", "-ll", "-p", "8080", "-e", "sh", "-c", "echo hit >>/tmp/hits; echo pong"],
		log_path: "server.log", linux: {}}' >"$C_RUN/specs/server.json"
}

teardown_file() {
	clients_enabled || return 0
	cri_teardown
	del_client_netns "$C_NETNS"
}

# start_pods HANDLER: pods a1, a2, b1 with their server under the runtime
# handler HANDLER; records each pod's container id and address.
start_pods() {
	local pod
	"${CRICTL[@]}" rmp -af >/dev/null 2>&1
	for pod in a1 a2 b1; do
		ok "${CRICTL[@]}" runp --runtime "$1" "$C_RUN/specs/pod-$pod.json" || return 1
		echo "$output" >"$C_RUN/$pod.pod"
		ok "${CRICTL[@]}" create "$output" "$C_RUN/specs/server.json" "$C_RUN/specs/pod-$pod.json" || return 1
		echo "$output" >"$C_RUN/$pod.ctr"
		ok "${CRICTL[@]}" start "$output" || return 1
		ok "${CRICTL[@]}" inspectp -o json "$(<"$C_RUN/$pod.pod")" || return 1
		jq -r .status.network.ip <<<"$output" >"$C_RUN/$pod.ip"
		[[ $(<"$C_RUN/$pod.ip") == 10.89.72.* ]] || { _show "pod $pod has no address of $C_SUBNET" "inspectp"; return 1; }
		wait_for 10 "${CRICTL[@]}" exec -s "$(<"$C_RUN/$pod.ctr")" sh -c 'netstat -ltn | grep -q :8080' || return 1
	done
}

ctr_of() { cat "$C_RUN/$1.ctr"; }
ip_of() { cat "$C_RUN/$1.ip"; }

# pong FROM TO: pod FROM connects to TO's address, port 8080, and gets pong.
pong() {
	ok "${CRICTL[@]}" exec -s "$(ctr_of "$1")" nc -w 3 "$(ip_of "$2")" 8080 || return 1
	expect_eq "reply of $2 to $1" pong "$output"
}

# eperm FROM TO: FROM's connect to TO fails with EPERM.
eperm() {
	exits_with 1 'Operation not permitted' "${CRICTL[@]}" exec -s "$(ctr_of "$1")" nc -w 3 "$(ip_of "$2")" 8080
}

# dropped FROM TO: FROM's connect passes its own zone; TO dropped the SYN.
dropped() {
	exits_with 1 '' "${CRICTL[@]}" exec -s "$(ctr_of "$1")" nc -w 2 "$(ip_of "$2")" 8080 || return 1
	[[ $output != *"Operation not permitted"* ]] || { _show "denied at the sender, not at the receiver" "nc $2"; return 1; }
}

hits() { "${CRICTL[@]}" exec -s "$(ctr_of "$1")" sh -c 'cat /tmp/hits 2>/dev/null | wc -l'; }

# net_view POD: the pod's interfaces, addresses and routes as its container
# sees them, with what CNI picks anew for every pod (its address, MAC, the
# link-local address made from it, the peer's ifindex) named instead.
net_view() {
	"${CRICTL[@]}" exec -s "$(ctr_of "$1")" sh -c 'ip addr; ip route; ip -6 route' |
		sed -E "s/@if[0-9]+:/:/; s/$(ip_of "$1")\b/POD_IP/g; s#link/ether [0-9a-f:]+#link/ether MAC#; s/fe80::[0-9a-f:]+/fe80::LL/g"
}

# zone_event ZONE JQ-CONDITION: within 5 s ZONE has an event matching it.
zone_event() {
	for _ in $(seq 25); do
		"$RT" --root "$C_RT_ROOT" zone events "$1" --format json 2>/dev/null | jqe "select($2)" >/dev/null && return 0
		sleep 0.2
	done
	echo "# zone $1: no event matching ($2); its events:" >&2
	"$RT" --root "$C_RT_ROOT" zone events "$1" >&2
	return 1
}

# addresses_registered ZONE POD: verify's addresses check passes for the
# pod's sandbox and container, naming the pod's address.
addresses_registered() {
	local id
	ok "$RT" --root "$C_RT_ROOT" zone verify "$1" --format json || return 1
	for id in "$(cat "$C_RUN/$2.pod")" "$(ctr_of "$2")"; do
		jqe --arg n "container $id: addresses" --arg a "$(ip_of "$2")" \
			'any(.checks[]; .name == $n and .passed and (.detail | contains($a)))' <<<"$output" >/dev/null ||
			{ _show "verify does not pass the addresses of $id (pod $2)" "zone verify $1"; return 1; }
	done
}

@test "cri zonenet: under the runc handler the pods reach each other across the CNI network" {
	start_pods runc
	pong a1 b1
	pong a1 a2
	pong b1 a2
	expect_eq "connections b1 answered" 1 "$(hits b1)"
	net_view a1 >"$C_RUN/net-view.runc"
	ok "${CRICTL[@]}" rmp -af
}

@test "cri zonenet: a1's connect to b1 is denied with EPERM before any packet reaches b1, with an event naming both zones" {
	require_rauha "allowed_zones"
	start_pods rauha
	ok "${CRICTL[@]}" inspectp -o json "$(<"$C_RUN/a1.pod")"
	expect_eq "runtime handler" rauha "$(jq -r .info.runtimeHandler <<<"$output")"
	eperm a1 b1
	zone_event "$ZA" ".control == \"egress\" and .decision == \"deny\" and .zone == \"$ZA\" and .target_zone == \"$ZB\" and (.object | contains(\"$(ip_of b1):8080\"))"
	expect_eq "connections b1 answered" 0 "$(hits b1)"
}

@test "cri zonenet: pods of one zone reach each other" {
	require_rauha "allowed_zones"
	pong a1 a2
}

@test "cri zonenet: b1's connect to a2 passes b's policy and is dropped at a2's ingress, with an event naming both zones" {
	require_rauha "allowed_zones"
	dropped b1 a2
	zone_event "$ZA" ".control == \"ingress\" and .decision == \"deny\" and .zone == \"$ZA\" and .target_zone == \"$ZB\""
	expect_eq "connections a2 answered" 1 "$(hits a2)" # a1's, above
}

@test "cri zonenet: rauha leaves the pod's namespace as CNI configured it (same interfaces, addresses, routes as under runc)" {
	require_rauha "the runc comparison"
	net_view a1 >"$C_RUN/net-view.rauha"
	diff -u "$C_RUN/net-view.runc" "$C_RUN/net-view.rauha" ||
		{ echo "# the network namespace of pod a1 differs between runc and rauha" >&2; false; }
	grep -q "inet POD_IP/24" "$C_RUN/net-view.rauha" || { cat "$C_RUN/net-view.rauha" >&2; false; }
}

@test "cri zonenet: verify's addresses check passes for every sandbox and container with the pod's address" {
	require_rauha "zone verify"
	addresses_registered "$ZA" a1
	addresses_registered "$ZA" a2
	addresses_registered "$ZB" b1
}

@test "cri zonenet: zone update a adding b lets the same running pods talk, both ways" {
	require_rauha "allowed_zones"
	ok "${CRICTL[@]}" inspectp -o json "$(<"$C_RUN/a1.pod")"
	local pid
	pid=$(jq -r .info.pid <<<"$output")
	ok "$RT" --root "$C_RT_ROOT" zone update "$ZA" --policy "$C_RUN/policy/a-allows-b.toml"
	pong a1 b1
	expect_eq "connections b1 answered" 1 "$(hits b1)"
	pong b1 a2
	ok "${CRICTL[@]}" inspectp -o json "$(<"$C_RUN/a1.pod")"
	expect_eq "sandbox pid of a1" "$pid" "$(jq -r .info.pid <<<"$output")"
}

@test "cri zonenet: zone update b closing it: b1's connect denied by b's policy, a1's dropped at b1's ingress" {
	require_rauha "allowed_zones"
	ok "$RT" --root "$C_RT_ROOT" zone update "$ZB" --policy "$C_RUN/policy/b-closed.toml"
	eperm b1 a2
	zone_event "$ZB" ".control == \"egress\" and .decision == \"deny\" and .zone == \"$ZB\" and .target_zone == \"$ZA\""
	dropped a1 b1
	zone_event "$ZB" ".control == \"ingress\" and .decision == \"deny\" and .zone == \"$ZB\" and .target_zone == \"$ZA\""
	expect_eq "connections b1 answered" 1 "$(hits b1)"
}

@test "cri zonenet: rmp leaves no address registered" {
	require_rauha "zone inspect"
	ok "${CRICTL[@]}" rmp -af
	local z
	for z in "$ZA" "$ZB"; do
		ok "$RT" --root "$C_RT_ROOT" zone inspect "$z"
		jqe '[.members[]?.addresses[]?] == []' <<<"$output" >/dev/null || { _show "addresses left" "zone inspect $z"; false; }
	done
}
