#!/usr/bin/env bats
# zone learn: a learning zone denies its workload nothing of what its
# recording covers and records it, aggregated by kind and object, from the
# workload's first instruction (never the runtime's own set-up). The
# recording is read with `rauha zone learn NAME --show --format json`.

load helpers
load zone_helpers

# peer: a network namespace of this test ($PEER, lo up) with a subnet
# $NET.0/24 for a wire to the container.
peer() {
	PEER=rauha-$TEST_UID
	ip netns add "$PEER" || fail "ip netns add $PEER"
	echo "$PEER" >>"$BATS_TEST_TMPDIR/netns"
	ip -n "$PEER" link set lo up
	NET=10.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
}

# wire PID: a veth pair between the network namespace of PID ($NET.3) and
# $PEER ($NET.2). It goes away with the container's namespace.
wire() {
	local pid=$1 ours=rc$RANDOM theirs=rp$RANDOM
	ip link add "$ours" netns "$pid" type veth peer name "$theirs" netns "$PEER" || fail "ip link add"
	nsenter -t "$pid" -n sh -c "ip addr add $NET.3/24 dev $ours && ip link set $ours up" || fail "configure $ours"
	ip -n "$PEER" addr add "$NET.2/24" dev "$theirs"
	ip -n "$PEER" link set "$theirs" up
}

# listen PORT: a TCP listener in $PEER on $NET.2:PORT that writes what it
# receives to $BATS_TEST_TMPDIR/got.
listen() {
	bg ip netns exec "$PEER" busybox nc -l -p "$1" >"$BATS_TEST_TMPDIR/got"
	LPORT=$1
	retry 50 0.1 eval 'ip netns exec "$PEER" ss -Htln "sport = :$LPORT" | grep -q .' || fail "listener did not start"
}

# observed ZONE: the zone's recording as "KIND OBJECT COUNT" lines, sorted.
observed() {
	rt zone learn "$1" --show --format json | jq -r '.[] | "\(.kind) \(.object) \(.count)"' | sort
}

# The workload: runs several binaries, reads a file twice, writes under /var
# and /tmp, connects to the listener, and then waits.
workload() {
	set_args b sh -c "/bin/ls / >/dev/null; /bin/cat /etc/greeting; /bin/cat /etc/greeting >/tmp/copy
		echo var >/var/learned; echo hi | /usr/bin/nc $NET.2 $1; echo done >/tmp/done; exec /bin/sleep 600"
	echo hello >"$(bundle_dir b)/rootfs/etc/greeting"
}

@test "zone learn: the workload runs undenied and exactly what it did is recorded, counted" {
	peer
	local port
	port=$(free_port)
	rt zone learn lz
	rrun rt zone list
	assert_match "${lines[1]}" "^lz[[:space:]]+[0-9]+[[:space:]]+learn[[:space:]]+preset:strict[[:space:]]+0$"
	zone_json lz | jqe '.policy.zone.mode == "learn" and .learning.zone.mode == "enforce" and .learning.network.allowed_egress == []' >/dev/null ||
		fail "zone inspect: $(zone_json lz)"

	in_zone b lz
	workload "$port"
	create_ct c1 b
	wire "$(ct_pid c1)"
	listen "$port"
	rt start c1
	wait_file "$(bundle_dir b)/rootfs/tmp/done"

	rrun rt zone verify lz
	assert_failure
	assert_match "$output" "learning.*zone lz learns: it denies nothing"

	# Nothing denied: strict allows no write under /var and no egress.
	assert_eq "$(cat "$(bundle_dir b)/rootfs/var/learned")" var
	retry 50 0.1 grep -qx hi "$BATS_TEST_TMPDIR/got" || fail "the listener got: $(cat "$BATS_TEST_TMPDIR/got"); the workload said: $(cat "$BATS_TEST_TMPDIR/c1.err")"
	no_event lz 'true'

	# An exec'd process is recorded from its first instruction, the
	# runtime's exec set-up is not. Each exec is recorded by the file that
	# ran, as exec rules judge it: sh, ls, cat, nc and sleep are busybox.
	rexec c1 /bin/cat /etc/greeting
	assert_success
	assert_eq "$output" hello

	rrun observed lz
	assert_success
	assert_eq "$output" "$(sort <<-EOF
		egress tcp $NET.2:$port 1
		exec /bin/busybox 7
		read / 1
		read /etc/greeting 3
		write /dev/null 1
		write /tmp/copy 1
		write /tmp/done 1
		write /var/learned 1
	EOF
	)"
	rt zone learn lz --show --format json | jqe --arg c c1 'all(.[]; .container == $c and .first != null and .comm != "")' >/dev/null ||
		fail "observations without their container: $(rt zone learn lz --show --format json)"

	# Later drains add to the counts.
	rexec c1 /bin/cat /etc/greeting
	assert_success
	rrun observed lz
	assert_match "$output" "exec /bin/busybox 8"
	assert_match "$output" "read /etc/greeting 4"
}

@test "zone learn: the base policy's denied syscalls are recorded, and update to an enforced policy ends learning" {
	requires seccomp
	rt zone learn lz --policy "$(policy base <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[syscalls]
		deny = ["keyctl", "userfaultfd"]
	EOF
	)"
	zone_json lz | jqe '.learning.syscalls.deny == ["keyctl", "userfaultfd"] and .learning.zone.mode == "enforce"' >/dev/null ||
		fail "zone inspect: $(zone_json lz)"
	in_zone b lz
	set_args b sleep 600
	cp "$(build_helper sysprobe)" "$(bundle_dir b)/rootfs/bin/sysprobe"
	run_ct c1 b
	rexec c1 sh -c 'echo x >/var/written && cat /var/written'
	assert_success
	# busybox has no keyctl applet: the sysprobe helper makes the call,
	# which the base policy denies and the learning zone lets through.
	rexec c1 /bin/sysprobe keyctl
	assert_success
	rrun observed lz
	assert_match "$output" "write /var/written 1"
	assert_match "$output" "exec /bin/sysprobe 1"
	assert_match "$output" "syscall keyctl 1"
	[[ $output != *userfaultfd* ]] || fail "a syscall never made was recorded: $output"

	# The recording stays after learning ends; the zone enforces from then on.
	rt zone update lz --policy "$BATS_TEST_TMPDIR/base.toml"
	zone_json lz | jqe '.learning == null and .policy.zone.mode == "enforce"' >/dev/null || fail "zone inspect: $(zone_json lz)"
	rrun rt zone list
	assert_match "${lines[1]}" "^lz[[:space:]]+[0-9]+[[:space:]]+enforce[[:space:]]"
	make_bundle b2 sh -c 'echo y >/var/again'
	in_zone b2 lz
	rrun rt run --bundle "$(bundle_dir b2)" c2
	assert_failure
	assert_match "$output" "Read-only file system|Permission denied"
	rrun observed lz
	assert_match "$output" "write /var/written 1"
	[[ $output != *again* ]] || fail "recorded after learning ended: $output"
}

@test "zone learn: --show of a zone that never learned is empty; errors name the flags" {
	rt zone create plain --preset standard
	rrun rt zone learn plain --show --format json
	assert_success
	assert_eq "$output" "[]"
	rrun rt zone learn nosuch --show
	assert_failure
	assert_match "$output" "zone nosuch does not exist"
	rrun rt zone learn plain --show --preset strict
	assert_failure
	assert_match "$output" "takes no --policy or --preset"
}

@test "zone learn: a signal to a task outside the zone is delivered and recorded (the target's zone, host)" {
	local hp
	hp=$(host_sleep)
	rt zone learn lz
	in_zone b lz
	host_pid b
	set_args b sh -c "kill -TERM $hp; echo rc=\$? >/tmp/done; exec /bin/sleep 600"
	run_ct c1 b
	wait_file "$(bundle_dir b)/rootfs/tmp/done"
	assert_eq "$(cat "$(bundle_dir b)/rootfs/tmp/done")" rc=0
	retry 50 0.1 eval '! kill -0 '"$hp"' 2>/dev/null' || fail "the host task was not signalled"
	rrun observed lz
	assert_match "$output" "signal host 1"
	no_event lz 'true'
}

# add_caps BUNDLE CAP...: the bundle's process also holds these capabilities.
add_caps() {
	local b=$1
	shift
	cfg "$b" '.process.capabilities |= map_values(. + $ARGS.positional | unique)' --args "$@"
}

# ping_workload BUNDLE: chowns a file to another uid (CAP_CHOWN) and pings
# $NET.2 once (busybox ping opens a raw ICMP socket: CAP_NET_RAW), writing
# both exit codes to /tmp/result, then waits.
ping_workload() {
	set_args "$1" sh -c "touch /tmp/owned; chown 1000 /tmp/owned; c=\$?; ping -c 1 -W 5 $NET.2 >/tmp/ping.out 2>&1
		echo chown=\$c ping=\$? >/tmp/result; exec /bin/sleep 600"
	add_caps "$1" CAP_CHOWN CAP_NET_RAW
}

@test "zone learn: capabilities used and ICMP from a raw socket are recorded; the suggestion runs them with 0 denies, and without them they fail" {
	peer
	rt zone learn lz
	in_zone b lz
	ping_workload b
	create_ct c1 b
	wire "$(ct_pid c1)"
	rt start c1
	wait_file "$(bundle_dir b)/rootfs/tmp/result"
	assert_eq "$(cat "$(bundle_dir b)/rootfs/tmp/result")" "chown=0 ping=0"

	rrun observed lz
	assert_success
	assert_match "$output" "capability CAP_CHOWN 1"
	assert_match "$output" "capability CAP_NET_RAW [0-9]+"
	assert_match "$output" "egress icmp $NET.2 1"
	[[ $output != *"capability CAP_SYS_ADMIN"* ]] || fail "a capability the container lacks was recorded: $output"
	# On this kernel the capabilities are recorded: --show says nothing is missing about them.
	rrun rt zone learn lz --show
	[[ $output != *"capabilities are not recorded"* ]] || fail "zone learn --show: $output"

	rt zone suggest lz >"$BATS_TEST_TMPDIR/s.toml"
	rt zone suggest lz --format json | jqe --arg dst "$NET.2" \
		'(.policy.capabilities.allowed | index("CHOWN") and index("NET_RAW")) and (.policy.network.allowed_egress | index($dst))' >/dev/null ||
		fail "suggestion: $(cat "$BATS_TEST_TMPDIR/s.toml")"
	rrun rt zone simulate lz --policy "$BATS_TEST_TMPDIR/s.toml"
	assert_success
	rt delete -f c1

	# Enforced, the suggestion runs the workload undenied.
	rt zone update lz --policy "$BATS_TEST_TMPDIR/s.toml"
	make_bundle b2
	in_zone b2 lz
	ping_workload b2
	create_ct c2 b2
	wire "$(ct_pid c2)"
	rt start c2
	wait_file "$(bundle_dir b2)/rootfs/tmp/result"
	assert_eq "$(cat "$(bundle_dir b2)/rootfs/tmp/result")" "chown=0 ping=0"
	no_event lz 'true'
	rt delete -f c2

	# Without CHOWN and the ICMP destination, both fail; the ping leaves an event.
	grep -v -e '"CHOWN"' -e "\"$NET.2\"" "$BATS_TEST_TMPDIR/s.toml" >"$BATS_TEST_TMPDIR/narrow.toml"
	rt zone update lz --policy "$BATS_TEST_TMPDIR/narrow.toml"
	make_bundle b3
	in_zone b3 lz
	ping_workload b3
	create_ct c3 b3
	wire "$(ct_pid c3)"
	rt start c3
	wait_file "$(bundle_dir b3)/rootfs/tmp/result"
	assert_eq "$(cat "$(bundle_dir b3)/rootfs/tmp/result")" "chown=1 ping=1"
	wait_event lz '.control == "egress" and .decision == "deny"' >/dev/null
}

@test "zone learn: ICMP from a ping socket is recorded without CAP_NET_RAW" {
	peer
	rt zone learn lz
	in_zone b lz
	# No CAP_NET_RAW: an ICMP datagram socket, which the netns allows
	# root's group; sendto without connect, so only the packet is seen.
	cp "$(build_helper netprobe)" "$(bundle_dir b)/rootfs/bin/netprobe"
	set_args b sh -c "/bin/netprobe ping $NET.2 >/tmp/ping.out 2>&1; echo ping=\$? >/tmp/result; exec /bin/sleep 600"
	cfg b '.linux.sysctl["net.ipv4.ping_group_range"] = "0 0"'
	create_ct c1 b
	wire "$(ct_pid c1)"
	rt start c1
	wait_file "$(bundle_dir b)/rootfs/tmp/result"
	[[ $(cat "$(bundle_dir b)/rootfs/tmp/result") == ping=0 ]] || fail "ping: $(cat "$(bundle_dir b)/rootfs/tmp/ping.out")"
	rrun observed lz
	assert_success
	assert_match "$output" "egress icmp $NET.2 [0-9]+"
	[[ $output != *CAP_NET_RAW* ]] || fail "a ping socket needs no CAP_NET_RAW: $output"
}

@test "zone learn: ptrace of a task outside the zone is recorded (the target's zone, host)" {
	local hp
	hp=$(host_sleep)
	rt zone learn lz
	in_zone b lz
	host_pid b
	add_caps b CAP_SYS_PTRACE
	cp "$(build_helper ptrace)" "$(bundle_dir b)/rootfs/bin/ptrace"
	set_args b sh -c "/bin/ptrace $hp >/tmp/out 2>&1; echo rc=\$? >/tmp/done; exec /bin/sleep 600"
	run_ct c1 b
	wait_file "$(bundle_dir b)/rootfs/tmp/done"
	assert_eq "$(cat "$(bundle_dir b)/rootfs/tmp/done")" rc=0
	rrun observed lz
	assert_match "$output" "ptrace host 1"
	assert_match "$output" "capability CAP_SYS_PTRACE 1"
}
