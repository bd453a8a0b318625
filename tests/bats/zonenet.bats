#!/usr/bin/env bats
# Zone networking (network.allowed_zones): which addresses belong to which
# zone, and packets between zones' members judged both ways. The containers
# join network namespaces this test configured before create, as podman,
# CNI and containerd do: each is wired to a bridge in a network namespace
# of the test. Every connection is first shown to work under plain runc
# with the same bundles.

load helpers
load zone_helpers
load runc_helpers

# lan: a bridge in a network namespace of this test ($LAN) and a subnet
# for its members ($NET.0/24).
lan() {
	LAN=rz-$TEST_UID
	ip netns add "$LAN" || fail "ip netns add $LAN"
	echo "$LAN" >>"$BATS_TEST_TMPDIR/netns"
	ip -n "$LAN" link set lo up
	ip -n "$LAN" link add br0 type bridge
	ip -n "$LAN" link set br0 up
	NET=10.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
}

# lan_member NAME N: network namespace $LAN-NAME with $NET.N on eth0, a
# veth to the bridge (made inside $LAN: no interface of the host is touched).
lan_member() {
	local ns=$LAN-$1
	ip netns add "$ns" || fail "ip netns add $ns"
	echo "$ns" >>"$BATS_TEST_TMPDIR/netns"
	ip -n "$ns" link set lo up
	ip -n "$LAN" link add "p$1" type veth peer name eth0 netns "$ns" || fail "veth for $ns"
	ip -n "$LAN" link set "p$1" master br0 up
	ip -n "$ns" addr add "$NET.$2/24" dev eth0
	ip -n "$ns" link set eth0 up
}

# net_bundle BUNDLE NAME [ARGS...]: a bundle whose container joins network
# namespace $LAN-NAME, running ARGS (default: sleep).
net_bundle() {
	local b=$1 ns=$LAN-$2
	shift 2
	make_bundle "$b" "$@"
	cfg "$b" '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "/run/netns/$ns"
}

# server BUNDLE NAME: a bundle in $LAN-NAME that answers "pong" on port 8080.
server() {
	net_bundle "$1" "$2" nc -ll -p 8080 -e echo pong
}

# listening NETNS: something listens on port 8080 in $LAN-NETNS.
listening() {
	retry 50 0.1 eval "ip netns exec '$LAN-$1' ss -Hltn 'sport = :8080' | grep -q ." ||
		fail "nothing listens on 8080 in $LAN-$1"
}

# plain_pair: the bundles cb (b's server) and ca run under plain runc as pb
# and pa, once b listens: the runc side of every connection test.
plain_pair() {
	plain run -d --bundle "$(bundle_dir cb)" pb >/dev/null 2>&1 </dev/null || fail "runc run pb"
	plain run -d --bundle "$(bundle_dir ca)" pa >/dev/null 2>&1 </dev/null || fail "runc run pa"
	listening b
}

# zone_policy NAME TOML: create zone NAME with the policy TOML.
zone_policy() {
	rrun rt zone create "$1" --policy "$(policy "$1" <<<"$2")"
	assert_success
}

# zone_update NAME TOML
zone_update() {
	rrun rt zone update "$1" --policy "$(policy "$1-new" <<<"$2")"
	assert_success
}

# pong [plain] ID ADDR: the container ID connects to ADDR:8080 and gets pong.
pong() {
	if [[ $1 == plain ]]; then
		run plain exec "$2" nc -w 3 "$3" 8080
	else
		rexec "$1" nc -w 3 "$2" 8080
	fi
	assert_success
	assert_eq "$output" pong
}

# verify_check ZONE CHECK true|false [DETAIL-REGEX]: verify has CHECK with
# that outcome (and a detail matching the regex).
verify_check() {
	rrun rt zone verify "$1" --format json
	jqe --arg n "$2" --argjson p "$3" --arg d "${4:-}" \
		'any(.checks[]; .name == $n and .passed == $p and (.detail | test($d)))' <<<"$stdout" >/dev/null ||
		fail "verify of zone $1 does not report '$2' passed=$3 (${4:-}): $stdout"
}

@test "zonenet: a member's packets to another zone's member need allowed_zones; same zone always; zone update flips it live" {
	lan
	lan_member a 1
	lan_member a2 3
	lan_member b 2
	net_bundle ca a
	server ca2 a2
	server cb b

	# Plain runc: the same bundles reach each other.
	plain_pair
	pong plain pa "$NET.2"
	plain delete --force pa
	plain delete --force pb

	zone_policy a $'[network]\nallowed_zones = []'
	zone_policy b $'[network]\nallowed_zones = ["a"]'
	in_zone ca a
	in_zone ca2 a
	in_zone cb b
	run_ct sb cb
	run_ct sa2 ca2
	run_ct sa ca
	listening b
	listening a2

	# a does not allow b: connect fails with EPERM, the event names b.
	rexec sa nc -w 3 "$NET.2" 8080
	assert_failure
	assert_match "$output" "Operation not permitted"
	ev=$(wait_event a '.control == "egress" and .target_zone == "b" and .decision == "deny"')
	assert_match "$ev" "$NET.2:8080"

	# Same zone: always.
	pong sa "$NET.3"

	# Addresses: registered at create, shown by inspect and verify.
	rrun rt zone inspect a
	assert_success
	# Its IPv4 address and the link-local one the kernel gave eth0.
	jqe --arg a "$NET.1" '.members[] | select(.id == "sa") | .addresses | (index($a) != null and any(.[]; startswith("fe80:")))' <<<"$stdout" >/dev/null ||
		fail "inspect does not show sa's addresses: $stdout"
	verify_check a "container sa: addresses" true "$NET.1"
	verify_check b "container sb: addresses" true "$NET.2"
	verify_check b "container sb: packet ingress" true "cgroup_skb/ingress"

	# zone update: running members, next connect.
	zone_update a $'[network]\nallowed_zones = ["b"]'
	pong sa "$NET.2"
	# Addresses of no zone still follow allowed_egress (absent: anything).
	rexec sa nc -w 1 "$NET.99" 8080
	assert_failure
	refute_eperm=$output
	[[ $refute_eperm != *"Operation not permitted"* ]] || fail "an address of no zone was denied: $output"

	# Delete: the address goes with its member.
	rrun rt delete --force sb
	assert_success
	rrun rt zone inspect b
	jqe '.members == []' <<<"$stdout" >/dev/null || fail "sb still a member: $stdout"
	rrun rt zone update a --policy "$(policy a-none <<<$'[network]\nallowed_zones = []')"
	assert_success
	rexec sa nc -w 1 "$NET.2" 8080
	[[ $output != *"Operation not permitted"* ]] || fail "a deleted member's address is still zone b's: $output"
}

@test "zonenet: a packet from another zone's member is judged at ingress by the receiver's policy" {
	lan
	lan_member a 1
	lan_member b 2
	net_bundle ca a
	server cb b

	plain_pair
	pong plain pa "$NET.2"
	plain delete --force pa
	plain delete --force pb

	# a may talk with b, b with nobody else. a's member runs before zone b
	# exists: creating b pushes a's policy again, with b's id.
	zone_policy a $'[network]\nallowed_zones = ["b"]'
	in_zone ca a
	run_ct sa ca
	zone_policy b $'[network]\nallowed_zones = []'
	in_zone cb b
	run_ct sb cb
	listening b

	# a's connect passes its own policy; b's ingress drops the SYN.
	rexec sa nc -w 2 "$NET.2" 8080
	assert_failure
	[[ $output != *"Operation not permitted"* ]] || fail "denied at a's egress, not at b's ingress: $output"
	ev=$(wait_event b '.control == "ingress" and .target_zone == "a" and .decision == "deny"')
	assert_match "$ev" "packet from $NET.1:[0-9]+ tcp"
	no_event a '.control == "egress" and .target_zone == "b"'

	# b allows a: the same connection passes.
	zone_update b $'[network]\nallowed_zones = ["a"]'
	pong sa "$NET.2"
}

@test "zonenet: an address added after create is not a way around the receiver's ingress; reconcile registers it" {
	lan
	lan_member a 1
	lan_member b 2
	net_bundle ca a
	server cb b

	# Plain runc: from a second address, added after the container started.
	plain_pair
	ip -n "$LAN-a" addr add "$NET.11/24" dev eth0
	ip -n "$LAN-a" route replace "$NET.0/24" dev eth0 src "$NET.11"
	pong plain pa "$NET.2"
	plain delete --force pa
	plain delete --force pb
	ip -n "$LAN-a" route replace "$NET.0/24" dev eth0 src "$NET.1"
	ip -n "$LAN-a" addr del "$NET.11/24" dev eth0

	# a has no allowed_zones (it may send anywhere); b takes nothing from a.
	zone_policy a ''
	zone_policy b $'[network]\nallowed_zones = []'
	in_zone ca a
	in_zone cb b
	run_ct sb cb
	run_ct sa ca
	listening b
	rexec sa nc -w 2 "$NET.2" 8080
	assert_failure
	wait_event b '.control == "ingress" and .target_zone == "a"' >/dev/null

	# A late address (DHCP, a late CNI plugin), preferred as the source.
	ip -n "$LAN-a" addr add "$NET.11/24" dev eth0
	ip -n "$LAN-a" route replace "$NET.0/24" dev eth0 src "$NET.11"
	verify_check a "container sa: addresses" false "$NET.11 is not registered"
	rexec sa nc -w 2 "$NET.2" 8080
	assert_failure
	ev=$(wait_event a '.control == "egress" and .target_zone == "b" and (.object | test("unregistered source"))')
	assert_match "$ev" "packet $NET.2:8080 tcp"

	# reconcile registers it: verify passes, and b's ingress judges it.
	rrun rt zone reconcile
	assert_success
	assert_match "$output" "container sa: addresses \[$NET.1 $NET.11 fe80:[0-9a-f:]+\] registered"
	verify_check a "container sa: addresses" true "$NET.11"
	rrun rt zone inspect a
	jqe --arg a "$NET.1" --arg b "$NET.11" '.members[0].addresses | index($a) != null and index($b) != null' <<<"$stdout" >/dev/null ||
		fail "inspect does not show both addresses: $stdout"
	n=$(zone_events b | jq -c 'select(.control == "ingress")' | wc -l)
	rexec sa nc -w 2 "$NET.2" 8080
	assert_failure
	retry 25 0.2 eval '[[ $(zone_events b | jq -c "select(.control == \"ingress\" and (.object | test(\"$NET.11:\")))" | wc -l) -gt 0 ]]' ||
		fail "no ingress event in b for $NET.11 (had $n)"

	# b allows a: the late address reaches b now.
	zone_update b $'[network]\nallowed_zones = ["a"]'
	pong sa "$NET.2"
}

@test "zonenet: create reads a new namespace's addresses only when something could have put one there" {
	NS_ADDR=10.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)).7
	# A createRuntime hook puts an address in the container's new network
	# namespace before the init waits for start, as a hook-driven network
	# setup (docker's prestart hook) does.
	cat >"$BATS_TEST_TMPDIR/addr-hook" <<HOOK
#!/bin/sh
pid=\$(jq -r .pid)
exec nsenter --net=/proc/\$pid/ns/net ip addr add $NS_ADDR/32 dev lo
HOOK
	chmod +x "$BATS_TEST_TMPDIR/addr-hook"
	make_bundle hooked sleep 300
	cfg hooked '.hooks.createRuntime = [{path: $p}]' --arg p "$BATS_TEST_TMPDIR/addr-hook"
	make_bundle bare sleep 300

	# Plain runc: the hook's address is in the container's namespace.
	plain run -d --bundle "$(bundle_dir hooked)" ph
	assert_success
	run plain exec ph ip addr show lo
	assert_success
	assert_match "$output" "$NS_ADDR/32"
	plain delete --force ph

	zone_policy z $'[network]\nallowed_zones = []'
	in_zone hooked z
	in_zone bare z
	run_ct sh hooked
	run_ct sb bare
	rrun rt zone inspect z
	assert_success
	jqe --arg a "$NS_ADDR" '.members[] | select(.id == "sh") | .addresses | index($a) != null' <<<"$stdout" >/dev/null ||
		fail "inspect does not show the hook's address: $stdout"
	jqe '.members[] | select(.id == "sb") | (.addresses // []) | length == 0' <<<"$stdout" >/dev/null ||
		fail "a bare new namespace has addresses: $stdout"
	verify_check z "container sh: addresses" true "$NS_ADDR"
	verify_check z "container sb: addresses" true
}
