#!/usr/bin/env bats
# Egress that never tells connect()/sendto() where it really goes: raw, ping
# and packet sockets, IPv4 source routes and IPv6 routing headers, and the
# loopback of a network namespace the container joined. Each attack first
# reaches a network namespace of this test under plain runc with the same
# bundle; from a zone with allowed_egress = [] it fails with the errno named,
# a sniffer in that namespace sees nothing of it, an event is recorded, and
# verify names the packet program of the member.

load helpers
load zone_helpers
load runc_helpers

# plain_run ID [BUNDLE]: runc run -d, failing the test on error.
plain_run() {
	plain run -d --bundle "$(bundle_dir "${2:-b}")" "$1" >"$BATS_TEST_TMPDIR/$1.out" 2>&1 </dev/null ||
		fail "runc run -d $1: $(cat "$BATS_TEST_TMPDIR/$1.out")"
}

# peer: a network namespace of this test ($PEER) with lo up, a sniffer that
# writes one line per IP packet it receives to $SNIFFED, and a subnet for
# the wires to containers ($NET.0/24, fd00:$NET6::/64).
peer() {
	PEER=rauha-$TEST_UID
	ip netns add "$PEER" || fail "ip netns add $PEER"
	echo "$PEER" >>"$BATS_TEST_TMPDIR/netns"
	ip -n "$PEER" link set lo up
	NETPROBE=$(build_helper netprobe)
	SNIFFED=$BATS_TEST_TMPDIR/sniffed
	bg ip netns exec "$PEER" "$NETPROBE" sniff >"$SNIFFED" 2>&1
	retry 50 0.1 grep -qx ready "$SNIFFED" || fail "sniffer did not start: $(cat "$SNIFFED")"
	local a=$((RANDOM % 250 + 1)) b=$((RANDOM % 250 + 1))
	NET=10.$a.$b
	NET6=fd00:$a:$b:
}

# with_netprobe BUNDLE: the netprobe helper at /bin/netprobe of the bundle.
with_netprobe() {
	cp "$NETPROBE" "$(bundle_dir "$1")/rootfs/bin/netprobe"
}

# net_raw BUNDLE: the bundle's process keeps CAP_NET_RAW.
net_raw() {
	cfg "$1" '.process.capabilities |= with_entries(.value += ["CAP_NET_RAW"])'
}

# wire PID N: a veth pair between the network namespace of PID, where it
# gets $NET.N and ${NET6}:N, and $PEER ($NET.2, ${NET6}:2); the container's
# end is named $WIRE. It goes away with the container's namespace.
wire() {
	local pid=$1 n=$2 peer_if=rp$RANDOM
	WIRE=rc$RANDOM
	ip link add "$WIRE" netns "$pid" type veth peer name "$peer_if" netns "$PEER" || fail "ip link add"
	nsenter -t "$pid" -n sh -c "ip addr add $NET.$n/24 dev $WIRE && ip -6 addr add ${NET6}:$n/64 dev $WIRE nodad && ip link set $WIRE up" ||
		fail "configure $WIRE"
	ip -n "$PEER" addr add "$NET.2/24" dev "$peer_if"
	ip -n "$PEER" -6 addr add "${NET6}:2/64" dev "$peer_if" nodad
	ip -n "$PEER" link set "$peer_if" up
}

# sniffed LINE: the sniffer has seen LINE (waits up to 5 s).
sniffed() {
	retry 50 0.1 grep -qxF "$1" "$SNIFFED" || fail "the sniffer in $PEER never saw '$1': $(cat "$SNIFFED")"
}

# not_sniffed FROM: nothing from address FROM reached $PEER. A marker the
# sniffer gets after the attempts comes first: a packet that had left would
# have been queued to the sniffer before the sending call returned.
not_sniffed() {
	local n
	n=$(grep -c '^127.0.0.1 127.0.0.1 udp$' "$SNIFFED" || true)
	ip netns exec "$PEER" "$NETPROBE" mark 127.0.0.1 >/dev/null
	retry 50 0.1 eval '[[ $(grep -c "^127.0.0.1 127.0.0.1 udp$" "$SNIFFED") -gt $n ]]' ||
		fail "the sniffer did not see its marker"
	if grep -q "^$1 " "$SNIFFED"; then
		fail "packets from $1 reached $PEER: $(grep "^$1 " "$SNIFFED")"
	fi
}

# verified ZONE CONTAINER: verify passes the packet program check of CONTAINER.
verified() {
	verify_check "$1" "container $2: packet egress" true
}

# verify_check ZONE CHECK true|false: verify has CHECK with that outcome.
verify_check() {
	rrun rt zone verify "$1" --format json
	jqe --arg n "$2" --argjson p "$3" 'any(.checks[]; .name == $n and .passed == $p)' <<<"$stdout" >/dev/null ||
		fail "verify of zone $1 does not report '$2' passed=$3: $stdout"
}

@test "egress packets: raw sockets are judged by the packet's destination, packet sockets lose CAP_NET_RAW" {
	peer
	with_netprobe b
	net_raw b

	plain_run plain
	wire "$(plain state plain | jq .pid)" 1
	run plain exec plain netprobe raw "$NET.2"
	assert_success
	run plain exec plain netprobe raw "${NET6}:2"
	assert_success
	run plain exec plain netprobe packet "$WIRE" "$NET.1" "$NET.2"
	assert_success
	sniffed "$NET.1 $NET.2 icmp"
	sniffed "${NET6}:1 ${NET6}:2 icmpv6"
	sniffed "$NET.1 $NET.2 udp"
	plain delete --force plain

	# A zone that grants CAP_NET_RAW: the socket opens, the packet is dropped.
	in_zone b rawcap "$(policy rawcap <<-'EOF'
		[capabilities]
		allowed = ["NET_RAW"]
		[network]
		allowed_egress = []
	EOF
	)"
	run_ct zraw b
	wire "$(ct_pid zraw)" 3
	rexec zraw netprobe raw "$NET.2"
	assert_failure 1
	assert_eq "$stderr" "sendto: operation not permitted"
	rexec zraw netprobe raw "${NET6}:2"
	assert_failure 1
	assert_eq "$stderr" "sendto: operation not permitted"
	not_sniffed "$NET.3"
	not_sniffed "${NET6}:3"
	ev=$(wait_event rawcap ".control == \"egress\" and .object == \"packet $NET.2 icmp (operation not permitted)\"")
	jqe '.container == "zraw" and .decision == "deny"' <<<"$ev" >/dev/null || fail "event $ev"
	wait_event rawcap ".object == \"packet ${NET6}:2 icmpv6 (operation not permitted)\"" >/dev/null
	verified rawcap zraw
	# Listed, CAP_NET_RAW also opens packet sockets, which no program
	# judges: verify says so.
	verify_check rawcap "container zraw: packet sockets" false
	[[ $status -eq 1 ]] || fail "verify of a zone with packet sockets exited $status"

	# Egress restricted, no capability list: CAP_NET_RAW is gone.
	rt delete --force zraw
	make_bundle n
	with_netprobe n
	net_raw n
	in_zone n noraw "$(policy noraw <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	)"
	run_ct znoraw n
	wire "$(ct_pid znoraw)" 4
	rexec znoraw netprobe raw "$NET.2"
	assert_failure 1
	assert_eq "$stderr" "socket: operation not permitted"
	rexec znoraw netprobe packet "$WIRE" "$NET.4" "$NET.2"
	assert_failure 1
	assert_eq "$stderr" "socket: operation not permitted"
	verify_check noraw "container znoraw: packet sockets" true
	rexec znoraw grep CapBnd /proc/self/status
	[[ $(( 0x${stdout##*[[:space:]]} >> 13 & 1 )) -eq 0 ]] || fail "CAP_NET_RAW still in the bounding set: $stdout"
	not_sniffed "$NET.4"
}

@test "egress packets: ICMP ping sockets (ping_group_range) are dropped, an inbound TCP connection is answered" {
	peer
	with_netprobe b
	cfg b '.linux.sysctl = {"net.ipv4.ping_group_range": "0 2147483647"}'

	plain_run plain
	wire "$(plain state plain | jq .pid)" 1
	run plain exec plain netprobe ping "$NET.2"
	assert_success
	run plain exec plain netprobe ping "${NET6}:2"
	assert_success
	sniffed "$NET.1 $NET.2 icmp"
	sniffed "${NET6}:1 ${NET6}:2 icmpv6"
	plain delete --force plain

	in_zone b ping "$(policy ping <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	)"
	cfg b '.process.args = ["nc", "-ll", "-p", "8080", "-e", "echo", "served"]'
	run_ct zping b
	wire "$(ct_pid zping)" 3
	rexec zping netprobe ping "$NET.2"
	assert_failure 1
	assert_eq "$stderr" "sendto: operation not permitted"
	# IPv6 ping sockets do not pass the drop on to sendto (the kernel's
	# icmpv6_push_pending_frames ignores it): the sniffer tells.
	rexec zping netprobe ping "${NET6}:2"
	assert_success
	wait_event ping ".object == \"packet $NET.2 icmp (operation not permitted)\"" >/dev/null
	wait_event ping ".object == \"packet ${NET6}:2 icmpv6 (operation not permitted)\"" >/dev/null

	# An outbound connection to the peer fails at connect.
	rexec zping nc -w1 "$NET.2" 8080
	assert_failure
	assert_match "$stderr" "Operation not permitted"
	not_sniffed "$NET.3"
	not_sniffed "${NET6}:3"
	# A client in the peer namespace connects in: SYN-ACK and data leave.
	run ip netns exec "$PEER" busybox nc -w2 "$NET.3" 8080 </dev/null
	assert_success
	assert_eq "$output" served
	verified ping zping
}

@test "egress packets: an IPv4 source route or IPv6 routing header through a forbidden hop is dropped; own loopback stays" {
	peer
	with_netprobe b
	net_raw b # IP_OPTIONS with a source route needs it, IPV6_RTHDR does not

	plain_run plain
	wire "$(plain state plain | jq .pid)" 1
	run plain exec plain netprobe lsrr 127.0.0.1:7 "$NET.2"
	assert_success
	run plain exec plain netprobe rthdr "[::1]:7" "${NET6}:2"
	assert_success
	sniffed "$NET.1 $NET.2 udp srr"
	sniffed "${NET6}:1 ${NET6}:2 udp rthdr"
	plain delete --force plain

	in_zone b routed "$(policy routed <<-'EOF'
		[capabilities]
		allowed = ["NET_RAW"]
		[network]
		allowed_egress = []
	EOF
	)"
	run_ct zrouted b
	wire "$(ct_pid zrouted)" 3
	# The address passed is the container's own loopback, which sendmsg
	# allows; the packet would go to the first hop.
	rexec zrouted netprobe lsrr 127.0.0.1:7 "$NET.2"
	assert_failure 1
	assert_eq "$stderr" "sendto: operation not permitted"
	rexec zrouted netprobe rthdr "[::1]:7" "${NET6}:2"
	assert_failure 1
	assert_eq "$stderr" "sendto: operation not permitted"
	not_sniffed "$NET.3"
	not_sniffed "${NET6}:3"
	wait_event routed ".object == \"packet $NET.2:7 udp source-routed (operation not permitted)\"" >/dev/null
	wait_event routed ".object == \"packet [${NET6}:2]:7 udp source-routed (operation not permitted)\"" >/dev/null

	# Loopback in the container's own network namespace is not egress.
	# The listener sends: a listener that only reads may see its own stdin
	# at EOF, shut the connection and end the client before it has sent.
	rexec zrouted sh -c 'nc -l -p 7777 -e echo own & until netstat -ltn | grep -q ":7777 "; do :; done; nc -w2 127.0.0.1 7777; wait'
	assert_success
	assert_eq "$stdout" own
	verified routed zrouted
}

@test "egress packets: the loopback of a joined network namespace is not the zone's own" {
	peer
	local port
	port=$(free_port)
	bg ip netns exec "$PEER" busybox nc -ll -p "$port" -e echo secret
	retry 50 0.1 eval 'ip netns exec "$PEER" ss -Htln "sport = :$port" | grep -q .' || fail "listener did not start"
	cfg b '(.linux.namespaces[] | select(.type == "network")).path = $p' --arg p "/var/run/netns/$PEER"

	plain_run plain
	run plain exec plain nc -w2 127.0.0.1 "$port"
	assert_success
	assert_eq "$output" secret
	plain delete --force plain

	in_zone b joined "$(policy joined <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	)"
	run_ct zjoined b
	rexec zjoined nc -w2 127.0.0.1 "$port"
	assert_failure 1
	assert_match "$stderr" "can't connect to remote host \(127\.0\.0\.1\): Operation not permitted"
	assert_eq "$stdout" ""
	wait_event joined ".object == \"127.0.0.1:$port (operation not permitted)\"" >/dev/null
	verified joined zjoined
}
