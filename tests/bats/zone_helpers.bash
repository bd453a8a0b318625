#!/usr/bin/env bash
# Helpers of the zone enforcement tests (zone.bats, enforce.bats). Load after
# helpers.bash: this file wraps its setup and teardown with the zone
# bookkeeping (BPF pin directory of the test root, network namespaces, host
# processes) and adds policy, annotation and event helpers.
#
# Knob: ZONE_PINS_STRICT=0 removes a pin directory that `zone reconcile` left
#       behind without failing the test (for runtimes without reconcile).

# The setup and teardown of helpers.bash, kept under new names.
eval "helpers_$(declare -f setup)"
eval "helpers_$(declare -f teardown)"

setup() {
	helpers_setup
	requires rauha cgroups_hybrid
	PIN_DIR=$(pin_dir_of "$ROOT")
	if [[ -e $PIN_DIR ]]; then
		fail "pin directory $PIN_DIR of this test's root exists before the test"
	fi
}

teardown() {
	local z pid ns link
	if [[ -d ${ROOT:-} ]]; then
		for z in $(timeout 20 "$RAUHA" --root "$ROOT" zone list --format json 2>/dev/null | jq -r '.[].name' 2>/dev/null); do
			timeout 30 "$RAUHA" --root "$ROOT" zone delete --force "$z" >&2 ||
				echo "# teardown: zone delete --force $z failed" >&2
		done
	fi
	helpers_teardown
	if [[ -f $BATS_TEST_TMPDIR/host.pids ]]; then
		while read -r pid; do
			kill -9 "$pid" 2>/dev/null || true
		done <"$BATS_TEST_TMPDIR/host.pids"
	fi
	if [[ -f $BATS_TEST_TMPDIR/netns ]]; then
		while read -r ns; do ip netns del "$ns" 2>/dev/null || true; done <"$BATS_TEST_TMPDIR/netns"
	fi
	if [[ -f $BATS_TEST_TMPDIR/links ]]; then
		while read -r link; do ip link del "$link" 2>/dev/null || true; done <"$BATS_TEST_TMPDIR/links"
	fi
	[[ -n ${PIN_DIR:-} && -d ${ROOT:-} ]] || return 0
	timeout 30 "$RAUHA" --root "$ROOT" zone reconcile >&2 || echo "# teardown: zone reconcile failed" >&2
	if [[ -e $PIN_DIR ]]; then
		echo "# teardown: $PIN_DIR left behind after zone delete + reconcile: $(ls "$PIN_DIR" | tr '\n' ' ')" >&2
		rm -rf "$PIN_DIR"
		[[ ${ZONE_PINS_STRICT:-1} == 0 ]] || fail "BPF pins of this test's root were left behind in $PIN_DIR"
	fi
}

# ---------------------------------------------------------------- policies

# policy NAME: write stdin (TOML) to $BATS_TEST_TMPDIR/NAME.toml, print the path.
policy() {
	local f=$BATS_TEST_TMPDIR/$1.toml
	cat >"$f"
	echo "$f"
}

# in_zone BUNDLE ZONE [POLICY]: the bundle's container joins ZONE (annotation
# org.rauha.zone), created with POLICY (preset or file) when it is new.
in_zone() {
	if [[ -n ${3:-} ]]; then
		cfg "$1" '.annotations["org.rauha.zone"] = $z | .annotations["org.rauha.policy"] = $p' --arg z "$2" --arg p "$3"
	else
		cfg "$1" '.annotations["org.rauha.zone"] = $z' --arg z "$2"
	fi
}

# shadow_denied BUNDLE ZONE: the bundle's /etc/shadow holds a secret, and its
# container joins ZONE, created with a policy that denies opening that file.
shadow_denied() {
	echo secret >"$(bundle_dir "$1")/rootfs/etc/shadow"
	in_zone "$1" "$2" "$(policy "$2" <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)"
}

# host_net BUNDLE / host_pid BUNDLE: share the host's network / pid namespace.
host_net() { cfg "$1" '.linux.namespaces |= map(select(.type != "network"))'; }
host_pid() { cfg "$1" '.linux.namespaces |= map(select(.type != "pid"))'; }

# rexec ID CMD...: `rauha exec` into ID, result in $status/$output (rrun).
rexec() {
	local id=$1
	shift
	rrun rt exec "$id" "$@"
}

# free_port: a TCP port on 127.0.0.1 nobody listens on (best effort; the
# tests only need "connection refused" from it).
free_port() {
	local p
	# Below the kernel's ephemeral range (32768 and up by default), so the
	# port is not some other connection's local port by the time it is used.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		p=$((20000 + RANDOM % 12000))
		if ! ss -Htan "sport = :$p" 2>/dev/null | grep -q .; then
			echo "$p"
			return 0
		fi
	done
	fail "no free port found"
}

# host_sleep: start a host `sleep` outside every zone, print its pid
# (teardown kills it by pid).
host_sleep() {
	# Not holding the caller's stdout: $(host_sleep) would wait for it.
	sleep 600 >/dev/null 2>&1 </dev/null 3>&- &
	echo $! >>"$BATS_TEST_TMPDIR/host.pids"
	echo $!
}

# ---------------------------------------------------------------- events

# zone_events ZONE: the zone's recorded events as JSON lines.
zone_events() {
	rt zone events "$1" --format json
}

# wait_event ZONE JQ-CONDITION [SECONDS]: wait until ZONE has an event for
# which the jq condition holds; prints the first such event.
wait_event() {
	local z=$1 cond=$2 secs=${3:-5} i ev
	for ((i = 0; i < secs * 5; i++)); do
		ev=$(zone_events "$z" 2>/dev/null | jq -c "select($cond)" 2>/dev/null | head -n1)
		if [[ -n $ev ]]; then
			echo "$ev"
			return 0
		fi
		sleep 0.2
	done
	echo "# events of zone $z:" >&2
	zone_events "$z" >&2 || true
	fail "zone $z: no event matching ($cond) within ${secs}s"
}

# no_event ZONE JQ-CONDITION: ZONE has no such event (after a drain).
no_event() {
	local n
	n=$(zone_events "$1" | jq -c "select($2)" | wc -l)
	[[ $n -eq 0 ]] || fail "zone $1: $n unexpected event(s) matching ($2)"
}

# ---------------------------------------------------------------- records

# zone_json ZONE: `zone inspect` output.
zone_json() {
	rt zone inspect "$1"
}

# zone_exists ZONE: the zone is listed.
zone_exists() {
	rt zone list --format json | jqe --arg z "$1" 'any(.[]; .name == $z)' >/dev/null
}

# peer_listeners: a network namespace of this test ($PEER) with two
# listeners on $NET.2, ports $PORT and $PORT2, answering "served".
peer_listeners() {
	PEER=rauha-$TEST_UID
	ip netns add "$PEER" || fail "ip netns add $PEER"
	echo "$PEER" >>"$BATS_TEST_TMPDIR/netns"
	ip -n "$PEER" link set lo up
	NET=10.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
	PORT=$(free_port)
	PORT2=$((PORT + 1))
	local p
	for p in "$PORT" "$PORT2"; do
		bg ip netns exec "$PEER" busybox nc -ll -p "$p" -e echo served
	done
	retry 50 0.1 eval 'ip netns exec "$PEER" ss -Htln "sport = :$PORT2" | grep -q .' || fail "listeners did not start"
}

# wire_peer ID N: a veth pair between container ID's network namespace
# ($NET.N) and $PEER ($NET.2 on every pair: one container at a time).
wire_peer() {
	local pid peer_if=rp$RANDOM ct_if=rc$RANDOM
	pid=$(ct_pid "$1")
	ip link add "$ct_if" netns "$pid" type veth peer name "$peer_if" netns "$PEER" || fail "ip link add"
	nsenter -t "$pid" -n sh -c "ip addr add $NET.$2/24 dev $ct_if && ip link set $ct_if up" || fail "configure $ct_if"
	ip -n "$PEER" addr add "$NET.2/24" dev "$peer_if"
	ip -n "$PEER" link set "$peer_if" up
}
