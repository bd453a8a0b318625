#!/usr/bin/env bats
# network.mode = "bridged": rauha wires each member's new network namespace
# to its zone's bridge (a veth pair, an address leased from the zone's
# subnet, a default route), masquerades what leaves the host and publishes
# ports (org.rauha.ports), all in interfaces and an nftables table of its
# own, removed with the last member and zone and repaired by reconcile.
# Every address the tests reach outside the containers is in a network
# namespace this test creates.

load helpers
load zone_helpers

# bridged_zone NAME [TOML]: zone NAME in bridged mode, with extra [network]
# keys TOML (one per line).
bridged_zone() {
	zone_policy "$1" $'[network]\nmode = "bridged"\n'"${2:-}"
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

# verify_check ZONE CHECK true|false [DETAIL-REGEX]: verify has CHECK with
# that outcome (and a detail matching the regex).
verify_check() {
	rrun rt zone verify "$1" --format json
	jq -e --arg n "$2" --argjson p "$3" --arg d "${4:-}" \
		'any(.checks[]; .name == $n and .passed == $p and (.detail | test($d)))' <<<"$stdout" >/dev/null ||
		fail "verify of zone $1 does not report '$2' passed=$3 (${4:-}): $stdout"
}

# serve ZONE ID: a member of ZONE that answers "pong" on port 8080.
serve() {
	make_bundle "$2" nc -ll -p 8080 -e echo pong
	in_zone "$2" "$1"
	run_ct "$2" "$2"
	retry 50 0.1 eval "nsenter -t $(ct_pid "$2") -n ss -Hltn 'sport = :8080' | grep -q ." ||
		fail "nothing listens on 8080 in $2"
}

# addr ID: the member's leased address (from its record: zone inspect).
addr() {
	rt state "$1" >/dev/null || fail "no container $1"
	rt zone list --format json | jq -r '.[].name' | while read -r z; do
		rt zone inspect "$z" | jq -r --arg id "$1" '.members[] | select(.id == $id) | .addresses[] | select(test("^[0-9.]+$"))'
	done | head -n1
}

# pong ID ADDR [PORT]: the member ID connects to ADDR:PORT and gets pong.
pong() {
	rexec "$1" nc -w 3 "$2" "${3:-8080}"
	assert_success
	assert_eq "$output" pong
}

# eperm ID ADDR: the member's connect to ADDR:8080 fails with EPERM.
eperm() {
	rexec "$1" nc -w 3 "$2" 8080
	assert_failure
	assert_match "$output" "Operation not permitted"
}

# root_tag: what the aliases of this root's interfaces start with.
root_tag() {
	echo "rauha $(printf %s "$ROOT" | sha256sum | cut -c1-16)"
}

# own_links: interfaces of this test's root (by alias).
own_links() {
	ip -j -d link show | jq -r --arg t "$(root_tag) " '.[] | select((.ifalias // "") | startswith($t)) | .ifname'
}

# nft_table: the nftables table of this root, if any.
nft_table() {
	echo "rauha_$(printf %s "$ROOT" | sha256sum | cut -c1-8)"
}

nft_rules() {
	nft -a list table inet "$(nft_table)" 2>/dev/null | grep -E 'masquerade|dnat' || true
}

# assert_no_network: nothing of this root's bridged networking is left.
assert_no_network() {
	local links
	links=$(own_links)
	[[ -z $links ]] || fail "interfaces left behind: $links"
	if nft list table inet "$(nft_table)" >/dev/null 2>&1; then
		fail "nftables table $(nft_table) left behind: $(nft list table inet "$(nft_table)")"
	fi
}

# uplink: a network namespace of this test ($UP) with a veth to the host:
# $UP_HOST on the host's end, $UP_PEER on the namespace's (a /30 of
# 198.18.0.0/15, the benchmarking range). The host's end forwards: replies
# to masqueraded connections come in through it.
uplink() {
	UP=rb-$TEST_UID
	local n=$((RANDOM % 16000)) l=ru$((RANDOM % 100000))
	UP_HOST=198.18.$((n / 64)).$((n % 64 * 4 + 1))
	UP_PEER=198.18.$((n / 64)).$((n % 64 * 4 + 2))
	ip netns add "$UP" || fail "ip netns add $UP"
	echo "$UP" >>"$BATS_TEST_TMPDIR/netns"
	ip link add "$l" type veth peer name eth0 netns "$UP" || fail "veth $l"
	echo "$l" >>"$BATS_TEST_TMPDIR/links"
	ip addr add "$UP_HOST/30" dev "$l"
	ip link set "$l" up
	echo 1 >"/proc/sys/net/ipv4/conf/$l/forwarding"
	ip -n "$UP" link set lo up
	ip -n "$UP" addr add "$UP_PEER/30" dev eth0
	ip -n "$UP" link set eth0 up
	ip -n "$UP" route add default via "$UP_HOST"
}

# up_serve: a listener in $UP answering its peer's address ("from ADDR").
up_serve() {
	bg ip netns exec "$UP" busybox nc -ll -p 8080 -e sh -c 'echo pong'
	retry 50 0.1 eval "ip netns exec '$UP' ss -Hltn 'sport = :8080' | grep -q ." || fail "nothing listens in $UP"
}

@test "bridged: three zones, a listener in each: packets cross bridges only as allowed_zones says, both ways" {
	bridged_zone a 'allowed_zones = ["b"]'
	bridged_zone b 'allowed_zones = ["a"]'
	bridged_zone c 'allowed_zones = ["a"]'
	serve a sa
	serve b sb
	serve c sc
	serve a sa2
	A=$(addr sa) B=$(addr sb) C=$(addr sc) A2=$(addr sa2)
	[[ $A == 10.201.* && $B == 10.201.* && $C == 10.201.* ]] || fail "addresses not from the default pool: $A $B $C"
	[[ ${A%.*} == "${A2%.*}" && ${A%.*} != "${B%.*}" && ${B%.*} != "${C%.*}" ]] || fail "subnets: a $A $A2, b $B, c $C"

	# Same zone, same bridge; a and b list each other: forwarded both ways.
	pong sa "$A2"
	pong sa "$B"
	pong sb "$A"
	# a does not list c: a's egress refuses, the event names c.
	eperm sa "$C"
	wait_event a '.control == "egress" and .target_zone == "c" and .decision == "deny"' >/dev/null
	# c lists a, a does not list c: c's connect leaves, a's ingress drops it.
	rexec sc nc -w 2 "$A" 8080
	assert_failure
	[[ $output != *"Operation not permitted"* ]] || fail "denied at c's egress, not at a's ingress: $output"
	wait_event a '.control == "ingress" and .target_zone == "c" and .decision == "deny"' >/dev/null
	# b and c do not list each other.
	eperm sb "$C"
	eperm sc "$B"
	# The drop was the policy's: a allowing c lets the same packets cross.
	zone_update a $'[network]\nmode = "bridged"\nallowed_zones = ["b", "c"]'
	pong sc "$A"
	pong sa "$C"

	verify_check a "container sa: network" true "bridged: eth0 $A/24"
	verify_check a "container sa: addresses" true "$A"
}
