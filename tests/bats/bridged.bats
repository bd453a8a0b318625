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
	jqe --arg n "$2" --argjson p "$3" --arg d "${4:-}" \
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

# addr6 ID: the member's leased IPv6 address.
addr6() {
	rt state "$1" >/dev/null || fail "no container $1"
	rt zone list --format json | jq -r '.[].name' | while read -r z; do
		rt zone inspect "$z" | jq -r --arg id "$1" '.members[] | select(.id == $id) | .addresses[] | select(test(":"))'
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

# uplink6: uplink, plus IPv6: a /64 of 2001:db8::/32 (documentation)
# on the veth, $UP_HOST6 on the host's end (forwarding IPv6 for the
# replies), $UP_PEER6 on the namespace's, added without DAD.
uplink6() {
	uplink
	local n=$((RANDOM % 65536)) l
	l=$(tail -n1 "$BATS_TEST_TMPDIR/links")
	UP_HOST6=2001:db8:$(printf %x $n)::1
	UP_PEER6=2001:db8:$(printf %x $n)::2
	echo 1 >"/proc/sys/net/ipv6/conf/$l/force_forwarding"
	ip -6 addr add "$UP_HOST6/64" dev "$l" nodad
	ip -n "$UP" -6 addr add "$UP_PEER6/64" dev eth0 nodad
	ip -n "$UP" -6 route add default via "$UP_HOST6"
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

@test "bridged IPv6: three zones, a listener in each: packets cross bridges only as allowed_zones says, both ways" {
	bridged_zone a $'ipv6 = true\nallowed_zones = ["b"]'
	bridged_zone b $'ipv6 = true\nallowed_zones = ["a"]'
	bridged_zone c $'ipv6 = true\nallowed_zones = ["a"]'
	serve a sa
	serve b sb
	serve c sc
	serve a sa2
	# No address is tentative: DAD is off, nothing waits (with DAD, an
	# address stays tentative for a second or more after it is added).
	[[ -z $(nsenter -t "$(ct_pid sa2)" -n ip -6 addr show tentative) ]] || fail "tentative addresses in sa2: $(nsenter -t "$(ct_pid sa2)" -n ip -6 addr)"
	A=$(addr6 sa) B=$(addr6 sb) C=$(addr6 sc) A2=$(addr6 sa2)
	# The root's unique local /48, one /64 per zone.
	ula=$(printf %s "$A" | cut -d: -f1-3)
	[[ $A == fd* && $B == "$ula":* && $C == "$ula":* ]] || fail "addresses not from one ULA /48: $A $B $C"
	net() { printf %s "$1" | cut -d: -f1-4; }
	[[ $(net "$A") == "$(net "$A2")" && $(net "$A") != "$(net "$B")" && $(net "$B") != "$(net "$C")" ]] || fail "subnets: a $A $A2, b $B, c $C"
	br=$(ip -j -d link show | jq -r --arg t "$(root_tag) zone a" '.[] | select(.ifalias == $t) | .ifname')
	[[ -n $br && -z $(ip -6 addr show dev "$br" scope global tentative) ]] || fail "bridge '$br' of a: $(ip -6 addr show dev "$br")"

	pong sa "$A2"
	pong sa "$B"
	pong sb "$A"
	eperm sa "$C"
	wait_event a '.control == "egress" and .target_zone == "c" and .decision == "deny"' >/dev/null
	# c's connect leaves (c lists a); a's ingress drops it.
	rexec sc nc -w 2 "$A" 8080
	assert_failure
	[[ $output != *"Operation not permitted"* ]] || fail "denied at c's egress, not at a's ingress: $output"
	wait_event a '.control == "ingress" and .target_zone == "c" and .decision == "deny"' >/dev/null
	eperm sb "$C"
	eperm sc "$B"
	zone_update a $'[network]\nmode = "bridged"\nipv6 = true\nallowed_zones = ["b", "c"]'
	pong sc "$A"
	pong sa "$C"

	verify_check a "container sa: network" true "bridged: eth0 $(addr sa)/24 $A/64"
	verify_check a "container sa: addresses" true "$A"
}

@test "bridged IPv6: masquerading out of the host as allowed_egress says; a published port over IPv6" {
	uplink6
	up_serve
	bridged_zone out6 "ipv6 = true
allowed_egress = [\"[$UP_PEER6]:8080\"]"
	# network.subnet6 alone asks for IPv6.
	bridged_zone shut6 "subnet6 = \"fd00:db8:$(printf %x $((RANDOM % 65536)))::/64\"
allowed_egress = [\"10.0.0.0/8\"]"
	make_bundle co
	in_zone co out6
	run_ct so co
	make_bundle cs
	in_zone cs shut6
	run_ct ss cs
	[[ $(addr6 ss) == fd00:db8:* ]] || fail "network.subnet6 not used: $(addr6 ss)"

	# Only a masqueraded connection gets its answer back: the namespace
	# has no route to the zones' subnets.
	ip -n "$UP" -6 route del default
	pong so "$UP_PEER6"
	eperm ss "$UP_PEER6"
	wait_event shut6 '.control == "egress" and .decision == "deny"' >/dev/null

	hp=$(free_port)
	bridged_zone web6 'ipv6 = true'
	make_bundle cw nc -ll -p 80 -e echo pong
	in_zone cw web6
	cfg cw '.annotations["org.rauha.ports"] = $p' --arg p "$hp:80/tcp"
	run_ct sw cw
	retry 50 0.1 eval "nsenter -t $(ct_pid sw) -n ss -Hltn 'sport = :80' | grep -q ." || fail "nothing listens on 80 in sw"
	ip -n "$UP" -6 route add default via "$UP_HOST6"
	run ip netns exec "$UP" busybox nc -w 3 "$UP_HOST6" "$hp"
	assert_success
	assert_eq "$output" pong
	run busybox nc -w 3 "$UP_HOST6" "$hp"
	assert_success
	assert_eq "$output" pong
	[[ $(nft_rules | grep -c 'dnat ip6 to') -eq 2 ]] || fail "want 2 IPv6 DNAT rules: $(nft_rules)"
	verify_check web6 "container sw: network" true "bridged: eth0 [0-9.]+/24 $(addr6 sw)/64"
	rrun rt delete --force sw
	assert_success
	[[ -z $(nft_rules | grep dnat) ]] || fail "DNAT rules left after delete: $(nft_rules)"
}

@test "bridged: masquerading out of the host reaches a listener when allowed_egress allows it, and not when it does not" {
	uplink
	up_serve
	bridged_zone out "allowed_egress = [\"$UP_PEER:8080\"]"
	bridged_zone shut 'allowed_egress = ["10.0.0.0/8"]'
	make_bundle co
	in_zone co out
	run_ct so co
	make_bundle cs
	in_zone cs shut
	run_ct ss cs

	# The namespace has no route to the zones' subnets: only a
	# masqueraded connection gets its answer back.
	ip -n "$UP" route get "$(addr so)" | grep -q "via $UP_HOST" || fail "the uplink namespace routes $(addr so) somewhere else"
	ip -n "$UP" route del default
	pong so "$UP_PEER"
	nft_rules | grep -q masquerade || fail "no masquerade rule: $(nft list table inet "$(nft_table)")"

	# allowed_egress does not list it: the member's connect is refused.
	eperm ss "$UP_PEER"
	wait_event shut ".control == \"egress\" and .decision == \"deny\"" >/dev/null
	verify_check out "container so: network" true "bridged"
}

@test "bridged: a published port (org.rauha.ports) is reached from the host and from outside it" {
	uplink
	hp=$(free_port)
	bridged_zone web
	make_bundle cw nc -ll -p 80 -e echo pong
	in_zone cw web
	cfg cw '.annotations["org.rauha.ports"] = $p' --arg p "$hp:80/tcp"
	run_ct sw cw
	retry 50 0.1 eval "nsenter -t $(ct_pid sw) -n ss -Hltn 'sport = :80' | grep -q ." || fail "nothing listens on 80 in sw"

	# From the host (a local address of its own) and from the uplink
	# namespace (through prerouting).
	run busybox nc -w 3 "$UP_HOST" "$hp"
	assert_success
	assert_eq "$output" pong
	run ip netns exec "$UP" busybox nc -w 3 "$UP_HOST" "$hp"
	assert_success
	assert_eq "$output" pong

	# A second container cannot take the same host port.
	make_bundle cw2
	in_zone cw2 web
	cfg cw2 '.annotations["org.rauha.ports"] = $p' --arg p "$hp:81/tcp"
	rrun rt run -d --bundle "$(bundle_dir cw2)" sw2
	assert_failure
	assert_match "$output" "host port $hp/tcp is already published by container ..sw.."

	# Delete: the port goes with its container.
	rrun rt delete --force sw
	assert_success
	[[ -z $(nft_rules | grep dnat) ]] || fail "DNAT rules left after delete: $(nft_rules)"
	run busybox nc -w 2 "$UP_HOST" "$hp"
	[[ $output != pong ]] || fail "the port still answers after delete"
}

@test "bridged: refused clearly without a new network namespace; ports need bridged mode; isolated is loopback only" {
	bridged_zone a
	make_bundle ch
	in_zone ch a
	host_net ch
	rrun rt run -d --bundle "$(bundle_dir ch)" sh
	assert_failure
	assert_match "$output" "network.mode=bridged needs a network namespace, but the container shares the host's"

	ip netns add "rj-$TEST_UID"
	echo "rj-$TEST_UID" >>"$BATS_TEST_TMPDIR/netns"
	make_bundle cj
	in_zone cj a
	cfg cj '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "/run/netns/rj-$TEST_UID"
	rrun rt run -d --bundle "$(bundle_dir cj)" sj
	assert_failure
	assert_match "$output" "network.mode=bridged needs a new network namespace .* but the container joins /run/netns/rj-$TEST_UID"

	zone_policy iso $'[network]\nmode = "isolated"'
	make_bundle cp
	in_zone cp iso
	cfg cp '.annotations["org.rauha.ports"] = "8080:80"'
	rrun rt run -d --bundle "$(bundle_dir cp)" sp
	assert_failure
	assert_match "$output" "org.rauha.ports: container sp publishes ports, which needs a zone with network.mode = ..bridged.."

	make_bundle ci
	in_zone ci iso
	run_ct si ci
	verify_check iso "container si: network" true "isolated: loopback only"
	# An interface moved into its namespace later is found.
	ip link add "ri$$" type veth peer name "rk$$"
	echo "ri$$" >>"$BATS_TEST_TMPDIR/links"
	ip link set "rk$$" netns "/proc/$(ct_pid si)/ns/net"
	verify_check iso "container si: network" false "isolated, but its namespace has interfaces lo, rk$$"
	[[ -z $(own_links) ]] || fail "interfaces for a zone that was never bridged: $(own_links)"
}

# r4: the root's part of its interface names (bridgeName, vethName).
r4() { printf %s "$ROOT" | sha256sum | cut -c1-4; }

# ifname PREFIX NAME: the interface rauha names for zone (rz) or container
# (rv) NAME of this root.
ifname() {
	echo "$1$(r4)$(printf '%s\0%s' "$ROOT" "$2" | sha256sum | cut -c1-8)"
}

# root_links: this root's interfaces by name, with or without an alias.
root_links() {
	ip -j link show | jq -r '.[].ifname' | grep -E "^r[zv]$(r4)" || true
}

# killed_at SYSCALL [PATH] -- CMD...: run CMD under strace, which SIGKILLs
# it at its first SYSCALL (on PATH, when given) in any of its threads: a
# fixed point of its work, whatever the timing. strace lets the
# container's init go at its exec.
killed_at() {
	local sc=$1 path=()
	shift
	if [[ $1 != -- ]]; then path=(-P "$1"); shift; fi
	shift
	rrun strace -f -b execve -qq -o "$BATS_TEST_TMPDIR/strace.out" "${path[@]}" -e trace="$sc" -e inject="$sc":signal=KILL \
		"$RAUHA" --root "$ROOT" "$@"
	[[ $status -eq 137 ]] || fail "$* was not killed at $sc (status $status): $output"
}

# spare_name: the name of this root's parked spare bridge (parked under the
# name it had), "" when none is parked.
spare_name() {
	ip -j -d link show | jq -r --arg a "$(root_tag) spare bridge" '.[] | select(.ifalias == $a) | .ifname'
}

# veths_gone: wait until the kernel removed the veths of this root's
# deleted containers with their network namespaces (delete leaves those to
# it); a veth of a live container, or one delete should have removed,
# stays and fails the check that follows.
veths_gone() {
	local live
	live=$(rt list -q | while read -r id; do ifname rv "$id"; done)
	retry 100 0.05 eval '[[ -z $(ip -j link show | jq -r ".[].ifname" | grep -E "^rv$(r4)" | grep -vxF "${live:-^}") ]]' || true
}

# veth_gone ID: wait until the kernel removed container ID's veth with
# its network namespace (asynchronously, after its last process exited).
veth_gone() {
	retry 100 0.05 eval "! ip link show '$(ifname rv "$1")' >/dev/null 2>&1" || fail "the veth of $1 is still there"
}

# assert_clean [kept]: nothing of this root is left: no interface (by
# name, with or without an alias), nftables table, record, zone or kernel
# pin (the pins, the spare bridge and the nftables table with its
# masquerading rule alone are kept by delete, which leaves them to the next
# create: "kept").
assert_clean() {
	local links
	veths_gone
	links=$(root_links)
	[[ ${1:-} != kept ]] || links=$(grep -vxF "$(spare_name)" <<<"$links" || true)
	[[ -z $links ]] || fail "interfaces left: $links"
	if [[ ${1:-} == kept ]]; then
		[[ -z $(nft_rules | grep -v masquerade) ]] || fail "nftables rules left: $(nft list table inet "$(nft_table)")"
	elif nft list table inet "$(nft_table)" >/dev/null 2>&1; then
		fail "nftables table left: $(nft list table inet "$(nft_table)")"
	fi
	rrun rt list -q
	assert_eq "$output" ""
	rrun rt zone list --format json
	assert_eq "$(jq length <<<"$stdout")" 0
	[[ ${1:-} == kept || ! -e $PIN_DIR ]] || fail "kernel pins left in $PIN_DIR"
}

# bridged_member ID PORT: a bundle ID in an implicit bridged zone of its own
# (named ID, made and removed with it) publishing PORT.
bridged_member() {
	policy k <<<$'[network]\nmode = "bridged"\nipv6 = true' >/dev/null
	make_bundle "$1"
	cfg "$1" '.annotations["org.rauha.policy"] = $p | .annotations["org.rauha.ports"] = $ports' \
		--arg p "$BATS_TEST_TMPDIR/k.toml" --arg ports "$2:80"
}

@test "bridged: SIGKILL inside create's network setup: what is left, reconcile removes, and the lease is free again" {
	requires strace
	local br
	hp=$(free_port)
	bridged_member kc "$hp"
	br=$(ifname rz kc)
	# Killed where the bridge gets its IPv6 gateway: the bridge and the
	# nftables table exist, the record holds both leases; the wiring runs
	# beside libcontainer's start of the init, which may not have begun.
	killed_at openat "/proc/sys/net/ipv6/conf/$br/disable_ipv6" -- run -d --bundle "$(bundle_dir kc)" kc
	ip link show "$br" >/dev/null || fail "no bridge $br left to repair: $(root_links)"
	nft list table inet "$(nft_table)" >/dev/null || fail "no nftables table left to repair"
	rrun rt zone reconcile
	assert_success
	assert_clean

	# Killed at the bridge's forwarding switch, the bridge half made.
	killed_at openat "/proc/sys/net/ipv4/conf/$br/forwarding" -- run -d --bundle "$(bundle_dir kc)" kc
	ip link show "$br" >/dev/null || fail "no bridge $br left to repair: $(root_links)"
	rrun rt zone reconcile
	assert_success
	assert_clean

	# The killed creates' leases are free: the same zone gets the first
	# address of its subnets again.
	run_ct kc kc
	[[ $(addr kc) == *.2 && $(addr6 kc) == *::2 ]] || fail "leases not freed: $(addr kc) $(addr6 kc)"
	# This create installed the root's kernel programs afresh, which
	# restores every zone and member (reconcile's network part among them)
	# while the create runs: its ports are still published once.
	[[ $(nft_rules | grep -c 'dnat ip to') -eq 2 && $(nft_rules | grep -c 'dnat ip6 to') -eq 2 ]] || fail "want one DNAT rule per family and chain: $(nft_rules)"
	rrun rt delete --force kc
	assert_success
	assert_clean kept
}

@test "bridged: SIGKILL inside delete's and zone delete's network teardown: what is left, reconcile removes" {
	requires strace
	local br
	hp=$(free_port)
	bridged_member kd "$hp"
	br=$(ifname rz kd)
	run_ct kd kd
	# Killed at the first write of the transaction that forgets the
	# member (its zone, a zone of its own, is in the containers file too):
	# the container is destroyed, its veth and DNAT rules are removed
	# (beside libcontainer's removal, before the lease is freed), its
	# record, lease, zone and bridge are not.
	killed_at pwrite64 "$(echo "$ROOT"/containers-*.db)" -- delete --force kd
	ip link show "$br" >/dev/null || fail "no bridge $br left to repair: $(root_links)"
	[[ -z $(nft_rules | grep dnat) ]] || fail "DNAT rules left before the lease was freed: $(nft_rules)"
	rrun rt zone inspect kd
	assert_success
	assert_eq "$(jq -r '[.members[].id] | join(" ")' <<<"$stdout")" kd
	rrun rt state kd
	assert_failure
	rrun rt zone reconcile
	assert_success
	assert_clean

	# Killed at zone delete's first socket: the store no longer holds the
	# zone or its subnets, its bridge and the root's nftables table are
	# still there. Only reconcile's sweep of the interfaces and the table
	# can find them: no record names them.
	bridged_zone kz 'ipv6 = true'
	make_bundle kz1
	in_zone kz1 kz
	run_ct kz1 kz1
	rrun rt delete --force kz1
	assert_success
	br=$(ifname rz kz)
	ip link show "$br" >/dev/null || fail "zone kz has no bridge $br"
	killed_at socket -- zone delete kz
	rrun rt zone list --format json
	assert_eq "$(jq length <<<"$stdout")" 0
	ip link show "$br" >/dev/null || fail "no bridge $br left to repair: $(root_links)"
	nft list table inet "$(nft_table)" >/dev/null || fail "no nftables table left to repair"
	rrun rt zone reconcile
	assert_success
	assert_clean
}

@test "bridged: delete of a container in a bridged zone of its own leaves no interface of its zone: the bridge is parked as the spare, taken by the next create, removed by zone delete or reconcile" {
	local br veth idx spare
	hp=$(free_port)
	bridged_member ko "$hp"
	br=$(ifname rz ko)
	veth=$(ifname rv ko)
	run_ct ko ko
	idx=$(ip -j link show "$br" | jq -r '.[0].ifindex')
	[[ -n $idx ]] || fail "no bridge $br"
	rrun rt delete --force ko
	assert_success
	veth_gone ko
	# Nothing of the zone or the container is on the host: no veth of
	# theirs, no address or route of their subnets, no DNAT rule. The one
	# interface of the root is the parked spare: the zone's bridge under
	# its name, without a port or an address of any family, forwarding
	# nothing; the root's nftables table stays with it, its masquerading
	# rule alone.
	spare=$(spare_name)
	[[ $spare == "$br" ]] || fail "want ko's bridge $br parked as the spare, have '$spare'"
	[[ $(root_links) == "$spare" ]] || fail "want only the spare $spare, have: $(root_links)"
	[[ -z $(own_links | grep -vxF "$spare") ]] || fail "interfaces of the root left: $(own_links)"
	rrun ip -j -d link show "$spare"
	assert_success
	jqe --argjson i "$idx" --arg a "$(root_tag) spare bridge" \
		'.[0] | .ifindex == $i and .ifalias == $a and (.flags | index("LOWER_UP") | not) and .linkinfo.info_kind == "bridge"' <<<"$stdout" >/dev/null ||
		fail "not ko's bridge parked as the spare, without carrier: $stdout"
	[[ -z $(ip -o link show master "$spare") ]] || fail "the spare has ports: $(ip -o link show master "$spare")"
	rrun ip -j addr show dev "$spare"
	[[ $(jq '.[0].addr_info | length' <<<"$stdout") == 0 ]] || fail "the spare kept addresses: $stdout"
	[[ -z $(ip route show dev "$spare"; ip -6 route show dev "$spare") ]] || fail "routes via the spare: $(ip route show dev "$spare"; ip -6 route show dev "$spare")"
	if [[ -e /proc/sys/net/ipv6/conf/$spare/force_forwarding ]]; then
		[[ $(cat "/proc/sys/net/ipv6/conf/$spare/force_forwarding") == 0 ]] || fail "the spare still forwards IPv6"
	fi
	[[ $(nft_rules | grep -c .) -eq 1 && -n $(nft_rules | grep masquerade) ]] ||
		fail "want the table with the masquerading rule alone: $(nft list table inet "$(nft_table)" 2>&1)"
	assert_clean kept

	# The next container of its own takes the spare: same device, its own
	# name, addresses and forwarding.
	run_ct ko ko
	[[ -z $(spare_name) ]] || fail "the spare is still parked: $(spare_name)"
	[[ $(ip -j link show "$br" | jq -r '.[0].ifindex') == "$idx" ]] || fail "ko has a new bridge $br, not the spare"
	verify_check ko "container ko: network" true "bridged: eth0 $(addr ko)/.* $(addr6 ko)/"
	rrun rt delete --force ko
	assert_success
	[[ $(spare_name) == "$spare" ]] || fail "no spare after the second delete"

	# Reconcile removes the spare and the table: no zone of the root is
	# bridged.
	rrun rt zone reconcile
	assert_success
	assert_match "$output" "$spare"
	assert_match "$output" "removed nftables table $(nft_table)"
	assert_clean kept
	[[ -z $(root_links) ]] || fail "interfaces left after reconcile: $(root_links)"
	if nft list table inet "$(nft_table)" >/dev/null 2>&1; then
		fail "nftables table left after reconcile: $(nft list table inet "$(nft_table)")"
	fi

	# zone delete of the last bridged zone removes the spare too.
	bridged_zone z1
	make_bundle z1m
	in_zone z1m z1
	run_ct z1m z1m
	rrun rt delete --force z1m
	assert_success
	run_ct ko ko
	rrun rt delete --force ko
	assert_success
	[[ -n $(spare_name) ]] || fail "no spare while zone z1 is bridged"
	rrun rt zone delete z1
	assert_success
	assert_clean kept
	[[ -z $(root_links) ]] || fail "interfaces left after the last zone delete: $(root_links)"
	if nft list table inet "$(nft_table)" >/dev/null 2>&1; then
		fail "nftables table left after the last zone delete: $(nft list table inet "$(nft_table)")"
	fi
}

# assert_no_network: nothing of this root's bridged networking is left.
assert_no_network() {
	local links
	veths_gone
	links=$(own_links)
	[[ -z $links ]] || fail "interfaces left behind: $links"
	if nft list table inet "$(nft_table)" >/dev/null 2>&1; then
		fail "nftables table $(nft_table) left behind: $(nft list table inet "$(nft_table)")"
	fi
}

# consistent_network: every interface of this root belongs to a zone or a
# container of its store, and the DNAT rules to its containers' ports.
consistent_network() {
	local zones ids alias want got
	zones=$(rt zone list --format json | jq -r '.[].name')
	ids=$(rt list -q)
	while read -r alias; do
		[[ -n $alias ]] || continue
		case $alias in
		"$(root_tag) zone "*) grep -qxF "${alias#"$(root_tag) zone "}" <<<"$zones" || fail "bridge of a zone the store does not hold: $alias" ;;
		"$(root_tag) container "*) grep -qxF "${alias#"$(root_tag) container "}" <<<"$ids" || fail "veth of a container the store does not hold: $alias" ;;
		esac
	done < <(ip -j -d link show | jq -r --arg t "$(root_tag) " '.[] | select((.ifalias // "") | startswith($t)) | .ifalias')
	ip -j link show | jq -r '.[].ifname' | grep -E "^r[zv]$(printf %s "$ROOT" | sha256sum | cut -c1-4)" | while read -r l; do
		[[ -n $(ip -j -d link show "$l" | jq -r '.[0].ifalias // ""') ]] || fail "interface $l without an alias"
	done
	want=0
	for id in $ids; do
		[[ -n $(rt state "$id" | jq -r '.annotations["org.rauha.ports"] // ""') ]] && want=$((want + 2))
	done
	got=$(nft_rules | grep -c dnat || true)
	[[ $got -eq $want ]] || fail "$got DNAT rules for $want: $(nft_rules)"
}

# uplink: a network namespace of this test ($UP) with a veth to the host:
# $UP_HOST on the host's end, $UP_PEER on the namespace's (a /30 of
# 198.18.0.0/15, the benchmarking range). The host's end forwards: replies

@test "bridged: a deleted zone's bridge is parked as the root's spare, renamed for the next bridged zone, removed with the last" {
	local spare idx br
	bridged_zone keep
	serve keep sk
	bridged_zone one
	serve one s1
	br=$(ip -j -d link show | jq -r --arg a "$(root_tag) zone one" '.[] | select(.ifalias == $a) | .ifname')
	[[ -n $br ]] || fail "no bridge of zone one"
	idx=$(ip -j link show "$br" | jq -r '.[0].ifindex')

	# Another zone stays bridged: one's bridge is parked, not deleted.
	rrun rt delete --force s1
	assert_success
	rrun rt zone delete one
	assert_success
	veth_gone s1
	spare=$(spare_name)
	[[ $spare == "$br" ]] || fail "want zone one's bridge $br parked as the spare, have '$spare'"
	rrun ip -j -d link show "$spare"
	assert_success
	jqe --argjson i "$idx" --arg a "$(root_tag) spare bridge" \
		'.[0] | .ifindex == $i and .ifalias == $a and (.flags | index("LOWER_UP") | not) and .linkinfo.info_kind == "bridge"' <<<"$stdout" >/dev/null ||
		fail "not zone one's bridge parked as the spare, without carrier: $stdout"
	[[ -z $(ip -o link show master "$spare") ]] || fail "the spare has ports: $(ip -o link show master "$spare")"
	rrun ip -j addr show dev "$spare"
	[[ $(jq '.[0].addr_info | length' <<<"$stdout") == 0 ]] || fail "the spare kept addresses: $stdout"
	consistent_network

	# The next bridged zone's bridge is the same device, renamed, with its
	# own gateway, and forwards.
	bridged_zone two
	serve two s2
	[[ -z $(spare_name) ]] || fail "the spare is still parked: $(spare_name)"
	br=$(ip -j -d link show | jq -r --arg a "$(root_tag) zone two" '.[] | select(.ifalias == $a) | .ifname')
	[[ $(ip -j link show "$br" | jq -r '.[0].ifindex') == "$idx" ]] || fail "zone two has a new bridge $br, not the spare"
	verify_check two "container s2: network" true "bridged: eth0 $(addr s2)/24"
	pong s2 "$(addr sk)"
	pong sk "$(addr s2)"

	# Reconcile keeps the spare while a zone is bridged; with the last
	# bridged zone, the spare goes too.
	rrun rt delete --force s2
	assert_success
	rrun rt zone delete two
	assert_success
	rrun rt zone reconcile
	assert_success
	[[ -n $(spare_name) ]] || fail "no spare while zone keep is bridged"
	rrun rt delete --force sk
	assert_success
	rrun rt zone delete keep
	assert_success
	assert_no_network

	# A park of an older rauha (which renamed the spare) that died before
	# naming its spare leaves one without an alias: reconcile removes it.
	spare=rz$(r4)-spare
	bridged_zone three
	serve three s3
	echo "$spare" >>"$BATS_TEST_TMPDIR/links"
	ip link add "$spare" type bridge || fail "ip link add $spare"
	rrun rt zone reconcile
	assert_success
	assert_match "$output" "$spare"
	run ip link show "$spare"
	assert_failure
}


@test "bridged: delete removes the veth of a member whose network namespace outlives it (ip netns attach); the kernel removes the veth of one that dies with it" {
	local veth held=rh-$TEST_UID
	bridged_zone bz
	make_bundle m1
	in_zone m1 bz
	run_ct m1 m1
	veth=$(ifname rv m1)
	ip link show "$veth" >/dev/null || fail "no veth $veth for m1"
	ip netns attach "$held" "$(ct_pid m1)" || fail "ip netns attach $held"
	echo "$held" >>"$BATS_TEST_TMPDIR/netns"
	rrun rt delete --force m1
	assert_success
	# The namespace lives on, and with it the pair: delete removes it, so
	# the namespace keeps no eth0 with an address the zone leases again.
	run ip link show "$veth"
	assert_failure
	run ip netns exec "$held" ip link show eth0
	assert_failure
	ip netns del "$held"

	# A member whose namespace dies with it: delete leaves the pair to the
	# kernel, which removes it with the namespace, asynchronously.
	make_bundle m2
	in_zone m2 bz
	run_ct m2 m2
	veth=$(ifname rv m2)
	ip link show "$veth" >/dev/null || fail "no veth $veth for m2"
	rrun rt delete --force m2
	assert_success
	retry 100 0.05 eval "! ip link show '$veth' >/dev/null 2>&1" || fail "veth $veth of deleted m2 is still there"
	rrun rt zone delete bz
	assert_success
	assert_clean
}

# wired ID: the member's eth0 has its leased address and is up, its
# loopback is up, and its default route goes via the zone's gateway.
wired() {
	local a
	a=$(addr "$1")
	[[ -n $a ]] || fail "no leased address for $1"
	rexec "$1" ip -o -4 addr show eth0
	assert_success
	assert_match "$output" "inet $a/"
	rexec "$1" ip link show lo
	assert_success
	assert_match "$output" "LOWER_UP"
	rexec "$1" ip route
	assert_success
	assert_match "$output" "default via ${a%.*}.1 dev eth0"
}

@test "bridged: rauha makes a member's namespace and wires it while the init starts; the state keeps the bundle's namespace entry, loopback and hooks; a member with its own user namespace is wired once ready" {
	local mark=$BATS_TEST_TMPDIR/marks
	mkdir -p "$mark"
	bridged_zone wz
	# A createRuntime hook of the bundle's own runs once, before rauha's
	# (which points the stored configuration back at the bundle's).
	make_bundle cw
	in_zone cw wz
	cfg cw '.hooks = {createRuntime: [{path: "/bin/sh", args: ["sh", "-c", "cat >> \($m)/cr"]}]}' --arg m "$mark"
	run_ct cw cw
	[[ ! -s $BATS_TEST_TMPDIR/cw.err ]] || fail "create of a bridged member wrote to stderr: $(cat "$BATS_TEST_TMPDIR/cw.err")"
	assert_eq "$(jq -s 'length' "$mark/cr")" 1
	assert_eq "$(jq -r .status "$mark/cr")" creating
	wired cw
	# libcontainer's state: the namespace entry without a path (the init
	# joined /proc/PID/fd/N of the create, long gone), the loopback
	# network, the bundle's hook alone.
	jq -e '([.config.namespaces[] | select(.type == "NEWNET")] == [{type: "NEWNET"}])
		and (.config.networks == [{type: "loopback"}])
		and (.config.Hooks.createRuntime | length == 1)' "$ROOT/cw/state.json" >/dev/null ||
		fail "state of cw: $(jq -c '{ns: .config.namespaces, networks: .config.networks, hooks: .config.Hooks}' "$ROOT/cw/state.json")"
	verify_check wz "container cw: network" true "bridged: eth0 $(addr cw)/"

	# A user namespace of the member's own owns the network namespace its
	# init makes: rauha wires it once the init is ready.
	make_bundle cu
	in_zone cu wz
	userns_bundle cu
	run_ct cu cu
	wired cu
	[[ $(readlink "/proc/$(ct_pid cu)/ns/user") != $(readlink /proc/self/ns/user) ]] || fail "cu has the host's user namespace"
	verify_check wz "container cu: network" true "bridged: eth0 $(addr cu)/"

	rrun rt delete --force cw
	assert_success
	rrun rt delete --force cu
	assert_success
	rrun rt zone delete wz
	assert_success
	assert_clean
}

@test "bridged: a create that fails after its namespace was wired leaves no veth, lease or record" {
	bridged_zone fz
	make_bundle cf
	in_zone cf fz
	# The bundle's createRuntime hook fails, with the namespace made and
	# being wired beside the init; libcontainer numbers it as runc does.
	cfg cf '.hooks = {createRuntime: [{path: "/bin/false"}]}'
	rrun rt run -d --bundle "$(bundle_dir cf)" cf
	assert_failure
	assert_match "$output" "createRuntime hook #0"
	veths_gone
	[[ -z $(root_links | grep "^rv") ]] || fail "veths left: $(root_links)"
	rrun rt zone inspect fz
	assert_success
	assert_eq "$(jq '.members | length' <<<"$stdout")" 0
	# The lease is free again: the next member gets the first address.
	make_bundle cg
	in_zone cg fz
	run_ct cg cg
	[[ $(addr cg) == *.2 ]] || fail "lease of the failed create not freed: $(addr cg)"
	rrun rt delete --force cg
	assert_success
	rrun rt zone delete fz
	assert_success
	assert_clean
}
