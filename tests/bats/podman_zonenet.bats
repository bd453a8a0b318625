#!/usr/bin/env bats
# network.allowed_zones between podman containers: three containers on one
# podman (CNI bridge) network, two in zone a (a client, a server) and one in
# zone b (a server). podman owns the network; rauha only registers each
# member's addresses and judges packets between zones. Every connection is
# first shown to work with the same podman commands under plain runc.
#
# podman and its CNI bridge run in a network namespace of this suite
# (client_netns in tests/clients/setup.bash): nothing on the host's links or
# firewall is touched, and nothing of the host's firewall is in the way.
# Steps share the containers and run in file order.
# Validate against runc: RAUHA=/usr/sbin/runc bats tests/bats/podman_zonenet.bats

load ../clients/setup.bash

P_RUN=$H_RUN/clients-podman-zonenet
P_LIB=$H_LIB/clients-podman-zonenet
P_NETNS=rauha-pzn P_BRIDGE=pzn0 P_GW=10.89.71.1 P_SUBNET=10.89.71.0/24 P_NET=rauha-podman-zonenet
export CONTAINERS_CONF=$P_RUN/containers.conf
export CONTAINERS_STORAGE_CONF=$P_RUN/storage.conf
PODMAN=(nsenter "--net=/run/netns/$P_NETNS" podman)
RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}
ZROOT=/run/rauha # the state root podman's runtime "rauha" uses
ZA=pzn-a ZB=pzn-b
A=10.89.71.11 A2=10.89.71.12 B=10.89.71.13 # client of a, server of a, server of b
MAC_A=02:89:71:00:00:11

setup_file() {
	clients_enabled || return 0
	runtime_ok
	del_client_netns "$P_NETNS"
	client_netns "$P_NETNS"
	podman_setup
	mkdir -p "$P_RUN/policy"
	printf '[network]\nallowed_zones = []\n' >"$P_RUN/policy/a.toml"
	printf '[network]\nallowed_zones = ["%s"]\n' "$ZA" >"$P_RUN/policy/b.toml"
	printf '[network]\nallowed_zones = ["%s"]\n' "$ZB" >"$P_RUN/policy/a-allows-b.toml"
	printf '[network]\nallowed_zones = []\n' >"$P_RUN/policy/b-closed.toml"
}

teardown_file() {
	clients_enabled || return 0
	podman_teardown
	zone_forget "$ZROOT" "$ZA"
	zone_forget "$ZROOT" "$ZB"
	rm -rf "/var/lib/cni/networks/$P_NET"
	del_client_netns "$P_NETNS"
}

# start_three RUNTIME: the client of a, the server of a and the server of b
# under RUNTIME, on fixed addresses; each server logs every connection it
# answers in /tmp/hits.
start_three() {
	local rt=$1 serve=(nc -ll -p 8080 -e sh -c 'echo hit >>/tmp/hits; echo pong')
	"${PODMAN[@]}" rm -f -t 0 pzn-a pzn-a2 pzn-b >/dev/null 2>&1
	ok "${PODMAN[@]}" --runtime "$rt" run -d --name pzn-b --ip "$B" \
		--annotation org.rauha.zone=$ZB --annotation org.rauha.policy="$P_RUN/policy/b.toml" \
		"$IMAGE_NAME" "${serve[@]}" || return 1
	ok "${PODMAN[@]}" --runtime "$rt" run -d --name pzn-a2 --ip "$A2" \
		--annotation org.rauha.zone=$ZA --annotation org.rauha.policy="$P_RUN/policy/a.toml" \
		"$IMAGE_NAME" "${serve[@]}" || return 1
	ok "${PODMAN[@]}" --runtime "$rt" run -d --name pzn-a --ip "$A" --mac-address "$MAC_A" \
		--annotation org.rauha.zone=$ZA --annotation org.rauha.policy="$P_RUN/policy/a.toml" \
		"$IMAGE_NAME" sleep 600 || return 1
	wait_for 10 "${PODMAN[@]}" exec pzn-b sh -c 'netstat -ltn | grep -q :8080' &&
		wait_for 10 "${PODMAN[@]}" exec pzn-a2 sh -c 'netstat -ltn | grep -q :8080'
}

# pong FROM ADDR: container FROM connects to ADDR:8080 and gets pong.
pong() {
	ok "${PODMAN[@]}" exec "$1" nc -w 3 "$2" 8080 || return 1
	expect_eq "reply of $2 to $1" pong "$output"
}

# eperm FROM ADDR: FROM's connect to ADDR:8080 fails with EPERM.
eperm() {
	exits_with 1 'Operation not permitted' "${PODMAN[@]}" exec "$1" nc -w 3 "$2" 8080
}

# dropped FROM ADDR: FROM's connect passes its own zone and gets no answer:
# the receiver dropped the SYN.
dropped() {
	exits_with 1 '' "${PODMAN[@]}" exec "$1" nc -w 2 "$2" 8080 || return 1
	[[ $output != *"Operation not permitted"* ]] || { _show "denied at the sender, not at the receiver" "nc $2"; return 1; }
}

# hits SERVER: how many connections SERVER answered.
hits() { "${PODMAN[@]}" exec "$1" sh -c 'cat /tmp/hits 2>/dev/null | wc -l'; }

# net_view NAME: NAME's interfaces, addresses and routes as it sees them
# (the peer's ifindex, which changes with every veth, left out).
net_view() {
	"${PODMAN[@]}" exec "$1" sh -c 'ip addr; ip route; ip -6 route' | sed -E 's/@if[0-9]+:/:/'
}

# zone_event ZONE JQ-CONDITION: within 5 s ZONE has an event matching the
# condition; prints it.
zone_event() {
	local ev
	for _ in $(seq 25); do
		ev=$("$RT" --root "$ZROOT" zone events "$1" --format json 2>/dev/null | jq -c "select($2)" | head -n1)
		[[ -z $ev ]] || { echo "$ev"; return 0; }
		sleep 0.2
	done
	echo "# zone $1: no event matching ($2); its events:" >&2
	"$RT" --root "$ZROOT" zone events "$1" >&2
	return 1
}

# addresses_registered ZONE NAME ADDR: verify's addresses check of NAME passes and names ADDR.
addresses_registered() {
	local id
	id=$("${PODMAN[@]}" inspect -f '{{.Id}}' "$2")
	ok "$RT" --root "$ZROOT" zone verify "$1" --format json
	jqe --arg n "container $id: addresses" --arg a "$3" \
		'any(.checks[]; .name == $n and .passed and (.detail | contains($a)))' <<<"$output" >/dev/null ||
		{ _show "verify does not pass the addresses of $2 ($3)" "zone verify $1"; return 1; }
}

rm_three() { ok "${PODMAN[@]}" rm -f -t 0 pzn-a pzn-a2 pzn-b; }

@test "podman zonenet: under runc the containers reach each other across the podman network" {
	start_three "$RUNC"
	ok_match "^$RUNC\$" "${PODMAN[@]}" inspect -f '{{.OCIRuntime}}' pzn-a
	pong pzn-a "$B"
	pong pzn-a "$A2"
	pong pzn-b "$A2"
	expect_eq "connections b answered" 1 "$(hits pzn-b)"
	net_view pzn-a >"$P_RUN/net-view.runc"
	rm_three
}

@test "podman zonenet: a's connect to b is denied with EPERM before any packet reaches b, with an event naming both zones" {
	require_rauha "allowed_zones"
	start_three "$RT"
	ok_match "^$RT\$" "${PODMAN[@]}" inspect -f '{{.OCIRuntime}}' pzn-a
	eperm pzn-a "$B"
	local ev
	ev=$(zone_event "$ZA" ".control == \"egress\" and .decision == \"deny\" and .zone == \"$ZA\" and .target_zone == \"$ZB\"")
	[[ $ev == *"$B:8080"* ]] || { echo "# event does not name $B:8080: $ev" >&2; false; }
	expect_eq "connections b answered" 0 "$(hits pzn-b)"
}

@test "podman zonenet: a's members reach each other (same zone)" {
	require_rauha "allowed_zones"
	pong pzn-a "$A2"
}

@test "podman zonenet: b's connect to a passes b's policy and is dropped at a's ingress, with an event naming both zones" {
	require_rauha "allowed_zones"
	dropped pzn-b "$A2"
	zone_event "$ZA" ".control == \"ingress\" and .decision == \"deny\" and .zone == \"$ZA\" and .target_zone == \"$ZB\"" >/dev/null
	expect_eq "connections a2 answered" 1 "$(hits pzn-a2)" # a's own client, above
}

@test "podman zonenet: rauha leaves podman's namespace as podman configured it (same interfaces, addresses, routes as under runc)" {
	require_rauha "the runc comparison"
	net_view pzn-a >"$P_RUN/net-view.rauha"
	diff -u "$P_RUN/net-view.runc" "$P_RUN/net-view.rauha" ||
		{ echo "# the network namespace of pzn-a differs between runc and rauha" >&2; false; }
	# podman's address and MAC, so the comparison covers what CNI set
	grep -q "inet $A/24" "$P_RUN/net-view.rauha" && grep -q "link/ether $MAC_A" "$P_RUN/net-view.rauha" ||
		{ cat "$P_RUN/net-view.rauha" >&2; false; }
}

@test "podman zonenet: verify's addresses check passes for every member with its podman address" {
	require_rauha "zone verify"
	addresses_registered "$ZA" pzn-a "$A"
	addresses_registered "$ZA" pzn-a2 "$A2"
	addresses_registered "$ZB" pzn-b "$B"
}

@test "podman zonenet: zone update a adding b lets the same running containers talk, both ways" {
	require_rauha "allowed_zones"
	local pid
	pid=$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' pzn-a)
	ok "$RT" --root "$ZROOT" zone update "$ZA" --policy "$P_RUN/policy/a-allows-b.toml"
	pong pzn-a "$B"
	expect_eq "connections b answered" 1 "$(hits pzn-b)"
	pong pzn-b "$A2"
	expect_eq "pid of pzn-a" "$pid" "$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' pzn-a)"
}

@test "podman zonenet: zone update b closing it: b's connect to a denied by b's policy, a's to b dropped at b's ingress" {
	require_rauha "allowed_zones"
	ok "$RT" --root "$ZROOT" zone update "$ZB" --policy "$P_RUN/policy/b-closed.toml"
	eperm pzn-b "$A2"
	zone_event "$ZB" ".control == \"egress\" and .decision == \"deny\" and .zone == \"$ZB\" and .target_zone == \"$ZA\"" >/dev/null
	dropped pzn-a "$B"
	zone_event "$ZB" ".control == \"ingress\" and .decision == \"deny\" and .zone == \"$ZB\" and .target_zone == \"$ZA\"" >/dev/null
	expect_eq "connections b answered" 1 "$(hits pzn-b)"
}

@test "podman zonenet: rm leaves no address registered" {
	require_rauha "zone inspect"
	rm_three
	ok "$RT" --root "$ZROOT" zone inspect "$ZA"
	jqe '[.members[]?.addresses[]?] == []' <<<"$output" >/dev/null || { _show "addresses left" "zone inspect $ZA"; false; }
}
