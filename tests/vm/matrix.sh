#!/bin/bash
# matrix.sh - the zone enforcement matrix, run by the rauha binary itself in
# a tests/vm/run-in-vm.sh guest (bpf/vmtest.sh boots it; cgroup2 only,
# busybox, only lo, no jq, no bats). Each control gets a concrete deny from inside a zone, its
# event in `rauha zone events`, and the same operation succeeding from the
# host or from a zone that allows it.
#
#   RAUHA=/path/to/rauha BACKEND=bpf-lsm|landlock matrix.sh
#
# BACKEND is what the kernel must give: bpf-lsm where bpf is in lsm=, the
# landlock fallback where it is not (vmtest.sh's "nobpf" kernel). Prints
# TAP-like "ok N name" / "not ok N name" lines (with "# " diagnostics),
# "1..N" and a summary line; exits 1 on any failure.
set -u

RAUHA=${RAUHA:-rauha}
BACKEND=${BACKEND:-bpf-lsm}
ROOT=/run/rauha-vm-matrix
CG=/rauha-vm
W=/tmp/matrix
ROOTFS=$W/rootfs
OK_PORT=30001
BAD_PORT=30002

n=0 passed=0 failed=0 skipped=0

note() { printf '#   %s\n' "$@"; }

# t NAME FUNC [ARG...]: run one check, print its TAP line.
t() {
	local name=$1 log=$W/check.log rc
	shift
	n=$((n + 1))
	"$@" >"$log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		passed=$((passed + 1))
		echo "ok $n $name"
	elif [ $rc = 77 ]; then
		skipped=$((skipped + 1))
		echo "ok $n $name # SKIP $(tail -n1 "$log")"
	else
		failed=$((failed + 1))
		echo "not ok $n $name"
		sed 's/^/#   /' "$log"
	fi
}

fail() {
	echo "$*"
	return 1
}

rt() { "$RAUHA" --root "$ROOT" "$@"; }

# r CMD...: run CMD, keep rc, stdout, stderr in $rc $out $err.
r() {
	"$@" >"$W/out" 2>"$W/err" </dev/null
	rc=$?
	out=$(cat "$W/out")
	err=$(cat "$W/err")
}

# expect_fail ERRTEXT CMD...: CMD fails and its stderr contains ERRTEXT.
expect_fail() {
	local want=$1
	shift
	r "$@"
	[ $rc != 0 ] || fail "succeeded, want failure with '$want': $* (stdout: $out)" || return 1
	case $err in
	*"$want"*) return 0 ;;
	esac
	fail "failed ($rc) without '$want': $*: $err"
}

# expect_ok CMD...: CMD succeeds.
expect_ok() {
	r "$@"
	[ $rc = 0 ] || fail "failed ($rc), want success: $*: $err $out"
}

# ---------------------------------------------------------------- bundles

# policy NAME: stdin (TOML) into $W/NAME.toml; prints the path.
policy() {
	cat >"$W/$1.toml"
	echo "$W/$1.toml"
}

# bundle ID ZONE POLICY [hostpid] [hostnet] [cgmount] [netraw]: write the bundle of
# container ID (the shared read-only busybox rootfs, `sleep 3600`).
bundle() {
	local id=$1 zone=$2 pol=$3 ns='"pid", "network", "ipc", "uts", "mount"' mounts='' caps='"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"' opt
	shift 3
	for opt in "$@"; do
		case $opt in
		hostpid) ns=${ns/\"pid\", /} ;;
		hostnet) ns=${ns/\"network\", /} ;;
		cgmount) mounts=', {"destination": "/mnt/cg", "type": "bind", "source": "/sys/fs/cgroup", "options": ["rbind", "rw"]}' ;;
		netraw) caps="$caps, \"CAP_NET_RAW\"" ;;
		esac
	done
	local nslist='' x
	for x in ${ns//,/}; do nslist="$nslist${nslist:+, }{\"type\": $x}"; done
	mkdir -p "$W/b/$id"
	cat >"$W/b/$id/config.json" <<-EOF
		{
		  "ociVersion": "1.2.0",
		  "process": {
		    "terminal": false,
		    "user": {"uid": 0, "gid": 0},
		    "args": ["sleep", "3600"],
		    "env": ["PATH=/usr/local/bin:/usr/bin:/bin"],
		    "cwd": "/",
		    "capabilities": {
		      "bounding": [$caps],
		      "effective": [$caps],
		      "permitted": [$caps]
		    },
		    "noNewPrivileges": true
		  },
		  "root": {"path": "$ROOTFS", "readonly": true},
		  "hostname": "$id",
		  "mounts": [
		    {"destination": "/proc", "type": "proc", "source": "proc"},
		    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
		    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=1777"]}$mounts
		  ],
		  "annotations": {"org.rauha.zone": "$zone", "org.rauha.policy": "$pol"},
		  "linux": {
		    "cgroupsPath": "$CG/$id",
		    "namespaces": [$nslist]
		  }
		}
	EOF
}

# start ID ZONE POLICY [OPT...]: bundle + `rauha run -d`.
start() {
	bundle "$@"
	r rt run -d --bundle "$W/b/$1" "$1"
	cp "$W/err" "$W/run-$1.err"
	[ $rc = 0 ] || fail "rauha run -d $1 (zone $2): $err"
}

ct_pid() { rt state "$1" | sed -n 's/^ *"pid": *\([0-9]*\).*/\1/p'; }

# has_event ZONE PATTERN...: within 5 s the zone has an event (JSON line)
# that matches every extended regex.
has_event() {
	local z=$1 i p line
	shift
	for i in 1 2 3 4 5 6 7 8 9 10; do
		rt zone events "$z" --format json >"$W/ev" 2>"$W/ev.err"
		while IFS= read -r line; do
			for p in "$@"; do
				printf '%s\n' "$line" | grep -Eq -- "$p" || continue 2
			done
			return 0
		done <"$W/ev"
		sleep 0.5
	done
	echo "zone $z: no event matching: $*"
	echo "events of zone $z:"
	cat "$W/ev" "$W/ev.err"
	return 1
}

# verify_zone ZONE: `zone verify` passes and names the expected backend.
verify_zone() {
	r rt zone verify "$1" --format json
	[ $rc = 0 ] || fail "zone verify $1 exited $rc: $out $err" || return 1
	printf '%s' "$out" | grep -Eq "\"backend\": *\"$BACKEND\"" || fail "zone $1: backend is not $BACKEND: $out"
}

# verify_shared ZONE: `zone verify` fails, and only because members share
# host namespaces (hostpid/hostnet bundles).
verify_shared() {
	r rt zone verify "$1"
	[ $rc = 1 ] || fail "zone verify $1 exited $rc, want 1: $out $err" || return 1
	printf '%s\n' "$out" | grep -q "^backend: *$BACKEND\$" || fail "zone $1: backend is not $BACKEND: $out" || return 1
	printf '%s\n' "$out" | grep -q '^FAIL .*: namespaces *shares the host' || fail "zone $1: no namespaces failure: $out" || return 1
	! printf '%s\n' "$out" | grep '^FAIL' | grep -qv ': namespaces ' || fail "zone $1: other checks fail: $out"
}

# scope_signals: the fallback can scope signals on this kernel (Landlock
# ABI 6 came with 6.12).
scope_signals() {
	local v=$(uname -r) major minor
	major=${v%%.*}
	v=${v#*.}
	minor=${v%%[.-]*}
	[ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "$minor" -ge 12 ]; }
}

# landlock_truncate: Landlock can restrict truncate(2) on this kernel (ABI
# 3 came with 6.2).
landlock_truncate() {
	local v=$(uname -r) major minor
	major=${v%%.*}
	v=${v#*.}
	minor=${v%%[.-]*}
	[ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "$minor" -ge 2 ]; }
}

# ---------------------------------------------------------------- checks

check_backend() {
	verify_zone open || return 1
	local want
	if [ "$BACKEND" = bpf-lsm ]; then
		want='lsm/file_open lsm/bprm_check_security lsm/ptrace_access_check lsm/task_kill lsm/socket_connect lsm/socket_sendmsg lsm/capable lsm/mmap_file lsm/file_mprotect'
	else
		want='tp_btf/sys_exit'
	fi
	# Both backends report io_uring denials from the io_uring tracepoints;
	# the submit tracepoint was renamed (submit_sqe, then submit_req).
	want="$want tp_btf/io_uring_complete tp_btf/io_uring_submit_(req|sqe)"
	local s
	for s in $want; do
		printf '%s' "$out" | grep -Eq "$s" || fail "verify does not list $s as attached: $out" || return 1
	done
	printf '%s' "$out" | grep -Eq '"isolated": *true' || fail "not isolated: $out"
}

check_file_deny() {
	expect_fail "Permission denied" rt exec fs cat /etc/shadow || return 1
	expect_ok rt exec fs cat /etc/motd || return 1
	has_event locked '"control": *"file"' '"object": *"/etc/shadow' '"container": *"fs"' '"decision": *"deny"' || return 1
	expect_ok rt exec open cat /etc/shadow || return 1
	[ "$out" = secret ] || fail "zone open read '$out' from /etc/shadow" || return 1
	expect_ok cat "$ROOTFS/etc/shadow"
}

check_exec_deny() {
	r rt exec ex sh -c '/usr/local/bin/echo should-not-run'
	[ $rc = 126 ] || fail "denied exec exited $rc, want 126: $out $err" || return 1
	case $out in *should-not-run*) fail "the denied binary ran" || return 1 ;; esac
	has_event noexec '"control": *"exec"' '"object": *"/usr/local/bin/echo' '"container": *"ex"' || return 1
	expect_ok rt exec ex sh -c '/bin/echo ran' || return 1
	expect_ok rt exec open sh -c '/usr/local/bin/echo ran' || return 1
	[ "$out" = ran ] || fail "zone open: /usr/local/bin/echo printed '$out'"
}

check_egress_v4() {
	expect_fail "Operation not permitted" rt exec eg nc -w1 127.0.0.1 $BAD_PORT || return 1
	# The allowed port gets as far as the (closed) port: refused, not EPERM.
	expect_fail "Connection refused" rt exec eg nc -w1 127.0.0.1 $OK_PORT || return 1
	expect_fail "Connection refused" nc -w1 127.0.0.1 $BAD_PORT || return 1
	has_event egress '"control": *"egress"' "\"object\": *\"127.0.0.1:$BAD_PORT" '"comm": *"nc"' '"container": *"eg"'
}

check_egress_v6() {
	grep -q ' lo$' /proc/net/if_inet6 2>/dev/null || { echo "no IPv6 on lo in this guest"; return 77; }
	expect_fail "Operation not permitted" rt exec eg nc -w1 ::1 $BAD_PORT || return 1
	expect_fail "Connection refused" rt exec eg nc -w1 ::1 $OK_PORT || return 1
	has_event egress '"control": *"egress"' "\"object\": *\"\\[::1\\]:$BAD_PORT"
}

check_egress_udp() {
	# busybox tftp sends its first datagram with sendto() on an unconnected
	# socket: the sendmsg hook (cgroup/sendmsg4 on the fallback), not connect.
	expect_fail "sendto: Operation not permitted" rt exec eg sh -c "cd /tmp && tftp -g -r f 127.0.0.2 $OK_PORT" || return 1
	has_event egress '"control": *"egress"' '"comm": *"tftp"' "\"object\": *\"127.0.0.2:$OK_PORT"
}

check_egress_raw() {
	# The host reaches its loopback with a raw ICMP socket; the zone keeps
	# CAP_NET_RAW (its policy lists it) and the packet program drops it
	# (bpf-lsm: lsm/socket_sendmsg judges the address passed first).
	expect_ok busybox ping -c1 -W2 127.0.0.1 || return 1
	expect_fail "sendto: Operation not permitted" rt exec rp ping -c1 -W2 127.0.0.1 || return 1
	has_event rawping '"control": *"egress"' '"object": *"(packet 127.0.0.1 icmp|127.0.0.1:0) ' '"container": *"rp"' || return 1
	r rt zone verify rawping --format json
	printf '%s' "$out" | tr -d '\n' | grep -Eq '"name": *"container rp: packet egress", *"passed": *true' ||
		fail "verify does not pass the packet program of rp: $out" || return 1
	# CAP_NET_RAW also opens packet sockets, which no program judges.
	printf '%s' "$out" | tr -d '\n' | grep -Eq '"name": *"container rp: packet sockets", *"passed": *false' ||
		fail "verify does not flag the packet sockets of rp: $out"
}

check_live_update() {
	local pid closed
	pid=$(ct_pid eg)
	closed=$(policy closed <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	)
	expect_ok rt zone update egress --policy "$closed" || return 1
	expect_fail "Operation not permitted" rt exec eg nc -w1 127.0.0.1 $OK_PORT || return 1
	has_event egress '"control": *"egress"' "\"object\": *\"127.0.0.1:$OK_PORT" || return 1
	expect_ok rt zone update egress --policy "$W/egress.toml" || return 1
	expect_fail "Connection refused" rt exec eg nc -w1 127.0.0.1 $OK_PORT || return 1
	[ "$(ct_pid eg)" = "$pid" ] || fail "the container was restarted: pid $pid is now $(ct_pid eg)"
}

check_signals() {
	local a1 a2 b1
	if [ "$BACKEND" != bpf-lsm ] && ! scope_signals; then
		# Landlock ABI < 6 cannot scope signals, and nothing else stands
		# between zones sharing a pid namespace: strict admission refuses
		# such a container, audit admission (the privileged preset of a1)
		# starts it with a warning, and verify fails for it.
		policy sstrict >/dev/null <<-'EOF'
			[zone]
			admission = "strict"
		EOF
		bundle s1 sstrict "$W/sstrict.toml" hostpid
		expect_fail "cannot scope signals" rt run -d --bundle "$W/b/s1" s1 || return 1
		r rt state s1
		[ $rc != 0 ] || fail "the refused container s1 exists: $out" || return 1
		grep -q "admits container a1 without: signals" "$W/run-a1.err" || fail "no admission warning for a1: $(cat "$W/run-a1.err")" || return 1
		verify_shared sa
		return
	fi
	a1=$(ct_pid a1)
	a2=$(ct_pid a2)
	b1=$(ct_pid b1)
	expect_fail "Operation not permitted" rt exec a1 kill -TERM "$b1" || return 1
	expect_fail "Operation not permitted" rt exec b1 kill -TERM "$a1" || return 1
	expect_fail "Operation not permitted" rt exec a1 kill -TERM "$HOST_SLEEP" || return 1
	kill -0 "$HOST_SLEEP" || fail "the host process died" || return 1
	[ -d "/proc/$b1" ] || fail "b1 died" || return 1
	has_event sa '"control": *"signal"' "\"target_pid\": *$b1" '"container": *"a1"' '"decision": *"deny"' || return 1
	has_event sb '"control": *"signal"' "\"target_pid\": *$a1" '"container": *"b1"' || return 1
	# The host signals into zones.
	expect_ok kill -0 "$a1" || return 1
	if [ "$BACKEND" = bpf-lsm ]; then
		# One zone is one boundary: its containers signal each other.
		expect_ok rt exec a1 kill -0 "$a2"
	fi
}

# ---------------------------------------------------------------- signals a file sends

# sigwatch_start NAME [CONTAINER]: a shell that appends the number of each
# SIGURG (23), SIGIO (29) and SIGUSR1 (10) it gets to $W/sw-NAME (inside
# CONTAINER: its /tmp/sw-NAME, which the host reads through the init's
# root), and 30 for the SIGPWR mark (sigwatch_pid NAME: its pid).
sigwatch_start() {
	local name=$1 ct=${2:-} f script i
	script='f=$1; : >"$f"; for s in 10 23 29 30; do trap "echo $s >>$f" $s; done; trap "kill \$p; exit" 15; echo $$ >"$f.pid"; while :; do sleep 3600 & p=$!; wait $p; kill $p 2>/dev/null; done'
	if [ -n "$ct" ]; then
		f=/proc/$(ct_pid "$ct")/root/tmp/sw-$name
		rt exec -d "$ct" sh -c "$script" sh "/tmp/sw-$name" >/dev/null 2>&1 </dev/null || return 1
	else
		f=$W/sw-$name
		sh -c "$script" sh "$f" >/dev/null 2>&1 </dev/null &
	fi
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[ -s "$f.pid" ] && break
		sleep 0.5
	done
	[ -s "$f.pid" ] || fail "sigwatch $name did not start" || return 1
	echo "$f" >"$W/swf-$name"
}

# sigwatch_pid NAME: the watcher's pid.
sigwatch_pid() { cat "$(cat "$W/swf-$1").pid"; }

# sigwatch_got NAME SIG: whether SIG reached watcher NAME since the last
# call. A signal the kernel generated is pending before the sending
# syscall returns, and the shell runs pending traps in signal-number
# order, so the SIGPWR mark sent now is written after it.
sigwatch_got() {
	local f pid i got
	f=$(cat "$W/swf-$1")
	pid=$(sigwatch_pid "$1")
	kill -30 "$pid" || { echo "sigwatch $1 ($pid) is gone"; return 2; }
	for i in $(seq 20); do
		grep -qx 30 "$f" && break
		sleep 0.25
	done
	grep -qx 30 "$f" || { echo "sigwatch $1: no mark"; return 2; }
	got=$(grep -vx 30 "$f")
	: >"$f"
	printf '%s\n' "$got" | grep -qx "$2"
}

# sigroute WANT NAME SENDER... : run SENDER (sigsend), then WANT
# (delivered|dropped) is what watcher NAME saw.
sigroute() {
	local want=$1 name=$2 sig=29 got=dropped
	shift 2
	case $* in *sigurg*) sig=23 ;; *" 10") sig=10 ;; esac
	r "$@"
	[ $rc = 0 ] || fail "sender failed ($rc): $*: $out $err" || return 1
	sigwatch_got "$name" $sig
	case $? in 0) got=delivered ;; 2) return 1 ;; esac
	[ "$got" = "$want" ] || fail "signal $sig to $name by '$*': $got, want $want"
}

check_file_signals() {
	if [ "$BACKEND" != bpf-lsm ]; then
		echo "the fallback: Landlock's signal scoping (ABI 6, 6.12+) also drops these signals, without an event; this kernel has no scoping and strict admission refuses a shared pid namespace (signals check)"
		return 77
	fi
	cp /payload/bin/sigsend "$ROOTFS/bin/sigsend" || return 1
	sigwatch_start host && sigwatch_start zb b1 || return 1
	local hpid bpid
	hpid=$(sigwatch_pid host)
	bpid=$(sigwatch_pid zb)
	# Outside any zone both routes deliver.
	sigroute delivered host "$ROOTFS/bin/sigsend" sigio "$hpid" || return 1
	sigroute delivered host "$ROOTFS/bin/sigsend" sigurg "$hpid" || return 1
	sigroute delivered zb "$ROOTFS/bin/sigsend" sigio "$bpid" || return 1
	# A zone owning a pipe or a socket signals neither the host nor
	# another zone, whatever signal F_SETSIG chose.
	sigroute dropped host rt exec a1 sigsend sigio "$hpid" || return 1
	sigroute dropped host rt exec a1 sigsend sigio "$hpid" 10 || return 1
	sigroute dropped host rt exec a1 sigsend sigurg "$hpid" || return 1
	sigroute dropped zb rt exec a1 sigsend sigio "$bpid" || return 1
	sigroute dropped zb rt exec a1 sigsend sigurg "$bpid" || return 1
	has_event sa '"control": *"signal"' "\"target_pid\": *$hpid" '"object": *"signal 29 to pid [0-9]+ \(file owner\)' '"container": *"a1"' '"decision": *"deny"' || return 1
	has_event sa '"control": *"signal"' "\"target_pid\": *$bpid" '"object": *"signal 23 to pid' '"target_zone": *"sb"' || return 1
	# Its own zone: delivered (a2 is a1's zone).
	sigwatch_start za a2 || return 1
	sigroute delivered za rt exec a1 sigsend sigio "$(sigwatch_pid za)" || return 1
	# pidfd_send_signal and rt_sigqueueinfo: denied like kill(2), with events.
	expect_fail "operation not permitted" rt exec a1 sigsend pidfd "$hpid" 0 || return 1
	expect_fail "operation not permitted" rt exec a1 sigsend sigqueue "$bpid" 0 || return 1
	has_event sa '"control": *"signal"' "\"target_pid\": *$bpid" '"comm": *"sigsend"' '"object": *"signal 0 to pid' || return 1
	kill "$hpid"
}

check_ptrace() {
	local a1 b1
	if [ "$BACKEND" != bpf-lsm ] && ! scope_signals; then
		echo "the fallback on Landlock ABI < 6 gives a privileged zone no domain to restrict ptrace; strict admission refuses the shared pid namespace (signals check)"
		return 77
	fi
	a1=$(ct_pid a1)
	b1=$(ct_pid b1)
	# /proc/PID/environ is read under a ptrace access check (PTRACE_MODE_READ).
	expect_fail "Permission denied" rt exec a1 cat "/proc/$b1/environ" || return 1
	expect_fail "Permission denied" rt exec a1 cat "/proc/$HOST_SLEEP/environ" || return 1
	if [ "$BACKEND" = bpf-lsm ]; then
		# On the fallback Landlock denies the open; the observer reports a file event.
		has_event sa '"control": *"ptrace"' "\"target_pid\": *$b1" '"container": *"a1"' || return 1
	fi
	expect_ok cat "/proc/$a1/environ"
}

check_cgroup_escape() {
	local esc=/sys/fs/cgroup$CG/escape
	mkdir -p "$esc" || return 1
	if [ "$BACKEND" != bpf-lsm ]; then
		# No hook on the fallback: strict admission refuses the route out
		# (a writable mount of the hierarchy), naming it (README).
		bundle ce jail "$W/jail.toml" hostnet cgmount
		expect_fail "cgroup escape guard: /mnt/cg is a writable mount" rt run -d --bundle "$W/b/ce" ce || return 1
		[ ! -d "/sys/fs/cgroup$CG/ce" ] || fail "the refused container left its cgroup" || return 1
		return 0
	fi
	expect_fail "Operation not permitted" rt exec ce sh -c "echo \$\$ >/mnt/cg$CG/escape/cgroup.procs" || return 1
	# Another task: the container's init (pid 1 in its pid namespace).
	expect_fail "Operation not permitted" rt exec ce sh -c "echo 1 >/mnt/cg$CG/escape/cgroup.procs" || return 1
	expect_fail "Operation not permitted" rt exec ce sh -c "echo \$\$ >/mnt/cg/cgroup.procs" || return 1
	[ -z "$(cat "$esc/cgroup.procs")" ] || fail "tasks reached $esc: $(cat "$esc/cgroup.procs")" || return 1
	has_event jail '"control": *"cgroup"' '"object": *"[^"]*cgroup.procs' '"container": *"ce"' || return 1
	# Inside its own cgroup it may move (the zone's subtree).
	expect_ok rt exec ce sh -c "echo \$\$ >/mnt/cg$CG/ce/cgroup.procs" || return 1
	# The host may move tasks anywhere.
	expect_ok sh -c "echo \$\$ >$esc/cgroup.procs && echo \$\$ >/sys/fs/cgroup/cgroup.procs"
}

check_capable() {
	# `rauha exec` works in a zone without capabilities (the runtime's own
	# setup in the member cgroup needs CAP_SYS_ADMIN for setns).
	expect_ok rt exec nocap cat /proc/self/status || return 1
	printf '%s\n' "$out" | grep -Eq '^CapEff:[[:space:]]*0+$' || fail "CapEff is not empty: $out" || return 1
	if [ "$BACKEND" != bpf-lsm ]; then
		return 0
	fi
	# A user namespace of its own would give a zone task every capability
	# back; the capable hook keeps the zone's list there: a UTS namespace
	# owned by the new user namespace needs CAP_SYS_ADMIN in it.
	expect_fail "Operation not permitted" rt exec nocap unshare -U -u true || return 1
	has_event nocaps '"control": *"capability"' '"object": *"[^"]*CAP_SYS_ADMIN' '"container": *"nocap"' '"comm": *"unshare"' || return 1
	expect_ok rt exec open unshare -U -u true
}

check_verify_all() {
	local z
	for z in locked noexec nocaps open; do
		verify_zone "$z" || return 1
	done
	for z in egress sa sb $([ "$BACKEND" != bpf-lsm ] || echo jail); do
		verify_shared "$z" || return 1
	done
}

# ------------------------------------------- bounds, exec routes, entrypoint
# bpf(2), pid namespaces, [resources], the exec routes around execve and a
# denied entrypoint: the same controls bats tests on the host's fallback,
# here on both backends. Each check makes its own zones and containers (x*)
# and removes them.

# x_edit ID SED: edit the bundle of container ID.
x_edit() { sed -i "$2" "$W/b/$1/config.json"; }

# x_run ID: rauha run -d the bundle of ID (rc, out, err as r sets them).
x_run() { r rt run -d --bundle "$W/b/$1" "$1"; }

# x_check ZONE NAME PASSED [ERE]: `zone verify ZONE` has the check NAME,
# passed (true|false), with a detail that matches ERE.
x_check() {
	r rt zone verify "$1" --format json
	printf '%s' "$out" | tr -d '\n' | grep -Eq "\"name\": *\"$2\", *\"passed\": *$3, *\"detail\": *\"[^\"]*${4:-}" ||
		fail "zone $1: no check \"$2\" with passed=$3${4:+ and a detail matching $4}: $out"
}

# kernel_ge MAJOR MINOR: the guest's kernel is at least MAJOR.MINOR.
kernel_ge() {
	local v=$(uname -r) major minor
	major=${v%%.*}
	v=${v#*.}
	minor=${v%%[.-]*}
	[ "$major" -gt "$1" ] || { [ "$major" = "$1" ] && [ "$minor" -ge "$2" ]; }
}

# nspid HOSTPID: the pid of HOSTPID in its own (innermost) pid namespace.
nspid() { awk '/^NSpid:/ {print $NF}' "/proc/$1/status"; }

check_x_bpf() {
	local pin
	pin=/sys/fs/bpf/rauha-$(printf %s "$ROOT" | sha256sum | cut -c1-12)
	[ -e "$pin/zone_policy" ] || fail "no pinned zone_policy in $pin" || return 1
	cp /payload/bin/bpfget "$ROOTFS/usr/local/bin/bpfget" && mkdir -p "$ROOTFS/pins" || return 1
	# Outside every zone, a process with no capability in the initial user
	# namespace (root of a user namespace of its own) opens the map that
	# holds every zone's policy: BPF_OBJ_GET needs only the file.
	expect_ok unshare -U -r bpfget "$pin/zone_policy" || return 1
	[ "$out" = "opened $pin/zone_policy" ] || fail "outside: bpfget printed '$out'" || return 1
	policy xbpf >/dev/null <<-'EOF'
		[zone]
		admission = "audit"
	EOF
	local id pins="{\"destination\": \"/pins\", \"type\": \"bind\", \"source\": \"$pin\", \"options\": [\"rbind\", \"ro\"]}, "
	for id in xb1 xb2; do
		bundle $id xbpf "$W/xbpf.toml"
		x_edit $id "s|\"mounts\": \[|\"mounts\": [$pins|"
	done
	# xb2 keeps CAP_BPF (the policy keeps the container's sets).
	x_edit xb2 's/"CAP_KILL"/"CAP_KILL", "CAP_BPF"/g'
	x_run xb1 && [ $rc = 0 ] || fail "run xb1: $err" || return 1
	x_run xb2 && [ $rc = 0 ] || fail "run xb2: $err" || return 1
	# Audit admission started them with the pins in reach; seccomp holds.
	expect_fail "bpfget /pins/zone_policy: operation not permitted" rt exec xb1 bpfget /pins/zone_policy || return 1
	has_event xbpf '"control": *"capability"' '"container": *"xb1"' '"comm": *"bpfget"' '"decision": *"deny"' \
		'"object": *"bpf\(2\) command 7 without CAP_BPF or CAP_SYS_ADMIN \(operation not permitted\)"' || return 1
	x_check xbpf "container xb1: bpf" true 'bpf\(2\) fails with EPERM \(seccomp\)' || return 1
	expect_ok rt exec xb2 bpfget /pins/zone_policy || return 1
	x_check xbpf "container xb2: bpf" true 'bpf\(2\) allowed' || return 1
	rt delete --force xb1 && rt delete --force xb2
}

# check_x_pidns: the pid namespace checks, around a task of no zone with a
# pid namespace of its own (X_SLEEPER, pid 1 there), removed afterwards.
check_x_pidns() {
	local u=
	unshare -p -f sleep 3600 >/dev/null 2>&1 </dev/null &
	u=$!
	X_SLEEPER=
	local i
	for i in $(seq 50); do
		X_SLEEPER=$(cat "/proc/$u/task/$u/children" 2>/dev/null | tr -d ' ')
		[ -n "$X_SLEEPER" ] && break
		sleep 0.1
	done
	local rc=1
	if [ -n "$X_SLEEPER" ]; then
		x_pidns
		rc=$?
	else
		echo "the task of no zone (unshare -p -f sleep) did not start"
	fi
	kill $X_SLEEPER $u 2>/dev/null
	wait $u 2>/dev/null
	return $rc
}

x_pidns() {
	local ns=/proc/$X_SLEEPER/ns/pid xp2 a1 a1ns
	policy xpstrict >/dev/null <<-'EOF'
		[zone]
		admission = "strict"
	EOF
	policy xpaudit >/dev/null <<-'EOF'
		[zone]
		admission = "audit"
	EOF
	# A task of no zone shares the namespace: strict admission refuses on
	# both backends (nothing judges a task of no zone); no member, no event.
	bundle xp1 xps "$W/xpstrict.toml"
	x_edit xp1 "s|{\"type\": \"pid\"}|{\"type\": \"pid\", \"path\": \"$ns\"}|"
	expect_fail "zone xps (admission strict) refuses container xp1: " rt run -d --bundle "$W/b/xp1" xp1 || return 1
	case $err in *"signals: the pid namespace is shared with tasks of no zone (pid "*) ;; *) fail "no pid namespace refusal: $err" || return 1 ;; esac
	r rt state xp1
	[ $rc != 0 ] || fail "the refused container xp1 exists: $out" || return 1
	# Audit admission starts it: the task of no zone reaches it, and
	# admission and verify say so.
	bundle xp2 xpu "$W/xpaudit.toml"
	x_edit xp2 "s|{\"type\": \"pid\"}|{\"type\": \"pid\", \"path\": \"$ns\"}|"
	x_run xp2
	[ $rc = 0 ] || fail "run xp2: $err" || return 1
	case $err in *"admits container xp2 without: "*"signals: the pid namespace is shared with tasks of no zone"*) ;; *) fail "no admission warning for xp2: $err" || return 1 ;; esac
	xp2=$(nspid "$(ct_pid xp2)")
	expect_ok nsenter -t "$X_SLEEPER" -p kill -0 "$xp2" || return 1
	x_check xpu "container xp2: pid namespace" false 'shared with tasks of no zone' || return 1
	rt delete --force xp2 || return 1

	# Another zone's pid namespace.
	bundle xpa1 xpa "$W/xpstrict.toml"
	x_run xpa1
	[ $rc = 0 ] || fail "run xpa1: $err" || return 1
	a1=$(ct_pid xpa1)
	bundle xpb1 xpb "$W/xpstrict.toml"
	x_edit xpb1 "s|{\"type\": \"pid\"}|{\"type\": \"pid\", \"path\": \"/proc/$a1/ns/pid\"}|"
	if [ "$BACKEND" != bpf-lsm ]; then
		# Landlock scopes only the joining side: the other zone's tasks
		# would reach it, so strict admission refuses.
		expect_fail "zone xpb (admission strict) refuses container xpb1: " rt run -d --bundle "$W/b/xpb1" xpb1 || return 1
		case $err in *"the pid namespace is shared with zone xpa (pid "*) ;; *) fail "no pid namespace refusal: $err" || return 1 ;; esac
		x_check xpa "container xpa1: pid namespace" true || return 1
		rt delete --force xpa1
		return
	fi
	# bpf-lsm judges signals and ptrace by zone: admitted, and the hooks
	# keep the zones apart inside the one namespace, while a container of
	# the same zone there reaches the other's init.
	x_run xpb1
	[ $rc = 0 ] || fail "run xpb1 (joins zone xpa's pid namespace): $err" || return 1
	bundle xpa2 xpa "$W/xpstrict.toml"
	x_edit xpa2 "s|{\"type\": \"pid\"}|{\"type\": \"pid\", \"path\": \"/proc/$a1/ns/pid\"}|"
	x_run xpa2
	[ $rc = 0 ] || fail "run xpa2: $err" || return 1
	expect_ok rt exec xpa2 kill -0 1 || return 1
	expect_fail "Operation not permitted" rt exec xpb1 kill -TERM 1 || return 1
	[ -d "/proc/$a1" ] || fail "xpa1's init died" || return 1
	has_event xpb '"control": *"signal"' "\"target_pid\": *$a1" '"container": *"xpb1"' '"decision": *"deny"' || return 1
	x_check xpb "container xpb1: pid namespace" true || return 1
	x_check xpa "container xpa1: pid namespace" true || return 1
	rt delete --force xpb1 && rt delete --force xpa2 && rt delete --force xpa1
}

check_x_resources() {
	local f0=/sys/fs/cgroup$CG/xr0/pids.max f1=/sys/fs/cgroup$CG/xr1/pids.max
	policy xres >/dev/null <<-'EOF'
		[resources]
		pids_max = 20
	EOF
	bundle xr0 open privileged
	bundle xr1 xres "$W/xres.toml"
	x_edit xr0 's|"cgroupsPath"|"resources": {"pids": {"limit": 10}}, "cgroupsPath"|'
	x_edit xr1 's|"cgroupsPath"|"resources": {"pids": {"limit": 10}}, "cgroupsPath"|'
	x_run xr0
	[ $rc = 0 ] || fail "run xr0: $err" || return 1
	[ "$(cat $f0)" = 10 ] || fail "xr0: pids.max is $(cat $f0), want 10" || return 1
	# In a zone without [resources] the update raises the limit, as runc's.
	expect_ok rt update --pids-limit 100000 xr0 || return 1
	[ "$(cat $f0)" = 100000 ] || fail "xr0: pids.max is $(cat $f0) after the update, want 100000" || return 1
	rt delete --force xr0 || return 1
	x_run xr1
	[ $rc = 0 ] || fail "run xr1: $err" || return 1
	expect_fail "zone xres refuses the update of container xr1: pids_max 100000 is above the zone's limit 20" \
		rt update --pids-limit 100000 xr1 || return 1
	[ "$(cat $f1)" = 10 ] || fail "xr1: pids.max is $(cat $f1) after the refused update" || return 1
	has_event xres '"control": *"resources"' '"container": *"xr1"' '"decision": *"deny"' '"object": *"[^"]*pids_max 100000' || return 1
	# Lowering and raising up to the zone's limit stay free.
	expect_ok rt update --pids-limit 20 xr1 || return 1
	[ "$(cat $f1)" = 20 ] || fail "xr1: pids.max is $(cat $f1), want 20" || return 1
	x_check xres "container xr1: resources" true 'pids.max 20' || return 1
	# A limit raised behind rauha's back is what verify is for.
	echo max >"$f1" || return 1
	x_check xres "container xr1: resources" false 'pids_max unlimited is above the zone.s limit 20' || return 1
	rt delete --force xr1
}

# x_exec_setup: the execroute helper, the host's dynamic loader and libc,
# and a dynamic binary twice (/opt/xtrue, and /opt/xdenied that zone xexec
# may not execute) in the shared rootfs.
x_exec_setup() {
	local ld=/lib64/ld-linux-x86-64.so.2
	[ -e "/payload/ld/${ld##*/}" ] || { echo "vmtest.sh found no host dynamic loader to bring"; return 77; }
	mkdir -p "$ROOTFS/lib64" "$ROOTFS/lib/x86_64-linux-gnu" "$ROOTFS/opt" || return 1
	cp /payload/ld/${ld##*/} "$ROOTFS$ld" &&
		cp /payload/ld/libc.so.* "$ROOTFS/lib/x86_64-linux-gnu/" &&
		cp /payload/ld/true "$ROOTFS/opt/xtrue" &&
		cp /payload/ld/true "$ROOTFS/opt/xdenied" &&
		cp /payload/bin/execroute "$ROOTFS/usr/local/bin/execroute"
}

check_x_execroutes() {
	local ld=/lib64/ld-linux-x86-64.so.2 want
	x_exec_setup || return
	# Outside: zone open has no exec rules, and every route runs.
	expect_ok rt exec open execroute memfd-exec noflags /bin/busybox echo memfd-ran || return 1
	[ "$out" = memfd-ran ] || fail "open: memfd printed '$out'" || return 1
	expect_ok rt exec open execroute mmap-exec /tmp/code || return 1
	[ "$out" = "ran: 42" ] || fail "open: mmap-exec printed '$out'" || return 1
	expect_ok rt exec open sh -c "cp /opt/xtrue /tmp/t && $ld /tmp/t && $ld /opt/xdenied && echo loader-ran" || return 1
	expect_ok rt exec open sh -c 'cp /bin/busybox /tmp/echo && /tmp/echo copy-ran' || return 1
	[ "$out" = copy-ran ] || fail "open: the copy printed '$out'" || return 1
	expect_ok rt exec open execroute mprotect-exec /opt/xdenied || return 1

	policy xexec >/dev/null <<-'EOF'
		[exec]
		deny = ["/opt/xdenied"]
	EOF
	bundle xx1 xexec "$W/xexec.toml"
	x_run xx1
	[ $rc = 0 ] || fail "run xx1: $err" || return 1
	# memfd: vm.memfd_noexec=2 in the container's pid namespace from Linux
	# 6.6 (the memfd is sealed non-executable), else seccomp denies
	# memfd_create.
	if kernel_ge 6 6; then
		expect_fail "execveat: permission denied" rt exec xx1 execroute memfd-exec noflags /bin/busybox echo memfd-ran || return 1
		has_event xexec '"control": *"exec"' '"container": *"xx1"' '"object": *"execveat fd memfd:payload \(permission denied\)"' || return 1
		expect_fail "memfd_create: permission denied" rt exec xx1 execroute memfd-exec exec /bin/busybox echo memfd-ran || return 1
		want='memfd_create MFD_EXEC payload \(permission denied\)'
	else
		expect_fail "memfd_create: operation not permitted" rt exec xx1 execroute memfd-exec noflags /bin/busybox echo memfd-ran || return 1
		want='memfd_create payload \(operation not permitted\)'
	fi
	[ $rc = 126 ] || fail "memfd-exec exited $rc, want 126" || return 1
	has_event xexec '"control": *"exec"' '"container": *"xx1"' '"comm": *"execroute"' "\"object\": *\"$want\"" || return 1
	# mmap(PROT_EXEC) of a file written to /tmp: noexec.
	expect_fail "mmap: operation not permitted" rt exec xx1 execroute mmap-exec /tmp/code || return 1
	has_event xexec '"control": *"exec"' '"container": *"xx1"' '"object": *"mmap PROT_EXEC of code \(operation not permitted\)"' || return 1
	# The dynamic loader on a copy in /tmp: the same mapping, refused.
	r rt exec xx1 sh -c "cp /opt/xtrue /tmp/t && $ld /tmp/t && echo loader-ran"
	[ $rc = 127 ] || fail "the loader on /tmp/t exited $rc, want 127: $out $err" || return 1
	case $err in *"failed to map segment from shared object"*) ;; *) fail "loader: $err" || return 1 ;; esac
	has_event xexec '"control": *"exec"' '"container": *"xx1"' '"object": *"mmap PROT_EXEC of t \(operation not permitted\)"' || return 1
	# A copy of a binary: noexec.
	r rt exec xx1 sh -c 'cp /bin/busybox /tmp/echo && /tmp/echo copy-ran'
	[ $rc = 126 ] || fail "the copy exited $rc, want 126: $out $err" || return 1
	has_event xexec '"control": *"exec"' '"container": *"xx1"' '"object": *"/tmp/echo \(permission denied\)"' || return 1
	# The denied binary itself, run by the loader or mapped readable and then
	# made executable: bpf-lsm refuses the mappings (lsm/mmap_file,
	# lsm/file_mprotect) with exec events; Landlock refuses to open it.
	r rt exec xx1 $ld /opt/xdenied
	[ $rc = 127 ] || fail "the loader on /opt/xdenied exited $rc, want 127: $out $err" || return 1
	case $err in *"/opt/xdenied: "*) ;; *) fail "loader on xdenied: $err" || return 1 ;; esac
	if [ "$BACKEND" = bpf-lsm ]; then
		has_event xexec '"control": *"exec"' '"container": *"xx1"' '"comm": *"ld-linux' '"object": *"/opt/xdenied \(permission denied\)"' || return 1
		expect_fail "mprotect: permission denied" rt exec xx1 execroute mprotect-exec /opt/xdenied || return 1
		has_event xexec '"control": *"exec"' '"container": *"xx1"' '"comm": *"execroute"' '"object": *"/opt/xdenied \(permission denied\)"' || return 1
	else
		expect_fail "open: permission denied" rt exec xx1 execroute mprotect-exec /opt/xdenied || return 1
		has_event xexec '"control": *"file"' '"container": *"xx1"' '"comm": *"execroute"' '"object": *"/opt/xdenied \(permission denied\)"' || return 1
	fi
	expect_ok rt exec xx1 sh -c "/opt/xtrue && $ld /opt/xtrue && echo image-ran" || return 1
	x_check xexec "container xx1: exec: writable paths noexec" true || return 1
	x_check xexec "container xx1: exec: memfd" true || return 1
	rt delete --force xx1
}

# A zone update that gives a zone exec rules closes the code routes of a
# member already running (libzone/execupdate.go): its writable mounts are
# made noexec and vm.memfd_noexec raised in its pid namespace. The
# processes exec'd after the update get a Landlock domain with the new
# exec.deny alone, which does not judge /tmp or memfds: only the update's
# mounts and sysctl refuse them.
check_x_execupdate() {
	x_exec_setup || return
	policy xeu0 >/dev/null <<-'EOF'
		[filesystem]
		deny = ["/opt/none"]
	EOF
	bundle xu1 xeu "$W/xeu0.toml"
	x_run xu1
	[ $rc = 0 ] || fail "run xu1: $err" || return 1
	expect_ok rt exec xu1 sh -c 'cp /bin/busybox /tmp/echo && /tmp/echo copy-ran' || return 1
	[ "$out" = copy-ran ] || fail "before the update: the copy printed '$out'" || return 1
	expect_ok rt exec xu1 execroute memfd-exec noflags /bin/busybox echo memfd-ran || return 1
	[ "$out" = memfd-ran ] || fail "before the update: memfd printed '$out'" || return 1
	policy xeu1 >/dev/null <<-'EOF'
		[filesystem]
		deny = ["/opt/none"]
		[exec]
		deny = ["/opt/xdenied"]
	EOF
	if ! kernel_ge 6 6; then
		# No vm.memfd_noexec=2 before 6.6, and no seccomp rule can be
		# added to a running process: the member is named.
		expect_fail "container xu1: exec: memfd_create stays allowed" rt zone update xeu --policy "$W/xeu1.toml" || return 1
		x_check xeu "container xu1: exec: writable paths noexec" true || return 1
		x_check xeu "container xu1: exec: memfd" false || return 1
		rt delete --force xu1
		return 0
	fi
	expect_ok rt zone update xeu --policy "$W/xeu1.toml" || return 1
	r rt exec xu1 sh -c 'cp /bin/busybox /tmp/echo2 && /tmp/echo2 copy-ran'
	[ $rc = 126 ] || fail "after the update: the copy exited $rc, want 126: $out $err" || return 1
	has_event xeu '"control": *"exec"' '"container": *"xu1"' '"object": *"/tmp/echo2 \(permission denied\)"' || return 1
	expect_fail "execveat: permission denied" rt exec xu1 execroute memfd-exec noflags /bin/busybox echo memfd-ran || return 1
	[ $rc = 126 ] || fail "memfd-exec exited $rc, want 126" || return 1
	has_event xeu '"control": *"exec"' '"container": *"xu1"' '"object": *"execveat fd memfd:payload \(permission denied\)"' || return 1
	x_check xeu "container xu1: exec: writable paths noexec" true || return 1
	x_check xeu "container xu1: exec: memfd" true 'vm.memfd_noexec is 2' || return 1
	rt delete --force xu1
}

# x_exec_error CMD...: CMD fails with runc's error for an entrypoint that
# cannot be executed (the path is quoted, escaped in a logfmt line).
x_exec_error() {
	r "$@"
	[ $rc != 0 ] || fail "succeeded, want the exec error: $*" || return 1
	case $err in
	*'unable to start container process: exec: '*/opt/xe/sleep*': permission denied'*) return 0 ;;
	esac
	fail "failed ($rc) without the exec error: $*: $err"
}

# The entrypoint the zone may not execute: start and run -d fail with the
# exec error, as runc's do for an entrypoint it cannot execute.
check_x_entrypoint() {
	local id i st=
	# busybox runs the applet its name says; off PATH, for no other container.
	mkdir -p "$ROOTFS/opt/xe" && cp /usr/bin/busybox "$ROOTFS/opt/xe/sleep" || return 1
	policy xentry >/dev/null <<-'EOF'
		[exec]
		deny = ["/opt/xe/sleep"]
	EOF
	policy xentryf >/dev/null <<-'EOF'
		[filesystem]
		deny = ["/opt/xe/sleep"]
	EOF
	bundle xe0 open privileged
	bundle xe1 xentry "$W/xentry.toml"
	bundle xe2 xentry "$W/xentry.toml"
	bundle xe3 xentryf "$W/xentryf.toml"
	for id in xe0 xe1 xe2 xe3; do
		x_edit $id 's|"args": \["sleep", "3600"\]|"args": ["/opt/xe/sleep", "3600"]|'
	done
	x_run xe0
	[ $rc = 0 ] || fail "run xe0 (zone open): $err" || return 1
	rt state xe0 | grep -q '"status": *"running"' || fail "xe0 is not running: $(rt state xe0)" || return 1
	rt delete --force xe0 || return 1
	expect_ok rt create --bundle "$W/b/xe1" xe1 || return 1
	x_exec_error rt start xe1 || return 1
	for i in $(seq 50); do
		st=$(rt state xe1 | sed -n 's/^ *"status": *"\([a-z]*\)".*/\1/p')
		[ "$st" = stopped ] && break
		sleep 0.1
	done
	[ "$st" = stopped ] || fail "xe1 is $st after the failed start, want stopped" || return 1
	has_event xentry '"control": *"exec"' '"container": *"xe1"' '"decision": *"deny"' '"object": *"/opt/xe/sleep' || return 1
	x_exec_error rt run -d --bundle "$W/b/xe2" xe2 || return 1
	r rt state xe2
	[ $rc != 0 ] || fail "the failed run -d left xe2: $out" || return 1
	# A filesystem.deny path cannot be executed either (bpf-lsm: the open
	# in execve is refused by lsm/file_open). Created first: a failed run
	# of a zone's first container takes the zone, and its events, along.
	expect_ok rt create --bundle "$W/b/xe3" xe3 || return 1
	x_exec_error rt start xe3 || return 1
	has_event xentryf '"container": *"xe3"' '"decision": *"deny"' '"object": *"/opt/xe/sleep' || return 1
	rt delete --force xe1 && rt delete --force xe3
}

# ---------------------------------------------------------------- zone networking
# network.allowed_zones between members in network namespaces of their own
# on one bridge (all in network namespaces of this check: zn-lan holds the
# bridge, zn-a, zn-a2 and zn-b one member each), configured before create as
# podman, CNI and containerd do. Needs iproute2's ip (IP, which vmtest.sh
# copies in) and the veth and bridge modules.

ZN_NET=10.77.0
ZN_NS="zn-lan zn-a zn-a2 zn-b"

# zn_ip ARGS...: iproute2's ip.
zn_ip() { "${IP:-ip}" "$@"; }

# zn_in NS CMD...: CMD in network namespace NS (nothing else changes).
zn_in() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

# zn_lan: the bridge in zn-lan and a member namespace per NAME:N pair
# ($ZN_NET.N/24 on its eth0).
zn_lan() {
	local m name
	zn_ip netns add zn-lan && zn_ip -n zn-lan link set lo up &&
		zn_ip -n zn-lan link add br0 type bridge && zn_ip -n zn-lan link set br0 up || return 1
	for m in a:1 a2:3 b:2; do
		name=${m%%:*}
		zn_ip netns add "zn-$name" && zn_ip -n "zn-$name" link set lo up &&
			zn_ip -n zn-lan link add "p$name" type veth peer name eth0 netns "zn-$name" &&
			zn_ip -n zn-lan link set "p$name" master br0 up &&
			zn_ip -n "zn-$name" addr add "$ZN_NET.${m#*:}/24" dev eth0 &&
			zn_ip -n "zn-$name" link set eth0 up || return 1
	done
}

# learn_work ID: the learned workload: a file copied under /tmp, a file
# written by a relative name (recorded absolute: its working directory is
# on the /tmp mount), and a connection to the host's loopback (refused:
# nothing listens; allowed, it is not EPERM).
learn_work() {
	r rt exec "$1" sh -c "cat /etc/motd >/tmp/m && mkdir -p /tmp/d && cd /tmp/d && echo x >rel && nc -w1 127.0.0.1 $OK_PORT </dev/null; echo done"
	[ $rc = 0 ] && [ "$out" = done ] || fail "the workload failed ($rc): $out $err" || return 1
	case $err in
	*"Connection refused"*) ;;
	*) fail "the connection was not refused by the host: $err" || return 1 ;;
	esac
}

# check_x_learn_suggest: learn -> suggest -> simulate -> update on this
# backend. The suggestion holds what the busybox workload did: its binaries
# in exec.allow and the address it reached; the same workload then runs
# in a new container without an event, and a binary and an address it
# never used are denied with events, as simulate predicted while learning.
check_x_learn_suggest() {
	local o sug=$W/lsg-suggested.toml
	expect_ok rt zone learn lsg || return 1
	start lsg1 lsg "" hostnet || return 1
	learn_work lsg1 || return 1
	expect_ok rt zone learn lsg --show || return 1
	o=$out
	note "$o"
	printf '%s\n' "$o" | grep -Eq "^write +/tmp/d/rel +1 " || fail "the relative write is not recorded as /tmp/d/rel" || return 1
	expect_ok rt zone suggest lsg || return 1
	printf '%s\n' "$out" >"$sug"
	note "$out"
	grep -q "^  \"127.0.0.1:$OK_PORT\", # tcp 127.0.0.1:$OK_PORT by nc in container lsg1" "$sug" || fail "no allowed_egress entry for the workload" || return 1
	grep -q '^allow = \[' "$sug" || fail "no exec.allow in the suggestion" || return 1
	grep -q "not allowed by this policy" "$sug" && { fail "the suggestion leaves recorded operations out"; return 1; }
	expect_ok rt zone simulate lsg --policy "$sug" || return 1

	# New actions while learning: recorded, not denied, and predicted.
	expect_ok rt exec lsg1 /usr/local/bin/echo new-binary || return 1
	expect_fail "Connection refused" rt exec lsg1 nc -w1 127.0.0.1 $BAD_PORT || return 1
	r rt zone simulate lsg --policy "$sug" --format json
	[ $rc = 1 ] || fail "simulate exited $rc, want 1: $out $err" || return 1
	note "$out"
	printf '%s' "$out" | grep -Eq '"denied": *2,' || fail "simulate: want exactly 2 denied" || return 1
	printf '%s' "$out" | tr -d '\n ' | grep -q '"rule":"exec.allow"' || fail "simulate: no exec.allow verdict" || return 1
	printf '%s' "$out" | tr -d '\n ' | grep -q "\"object\":\"/usr/local/bin/echo\"" || fail "simulate: the new binary is not named" || return 1
	printf '%s' "$out" | tr -d '\n ' | grep -q "\"object\":\"tcp127.0.0.1:$BAD_PORT\"" || fail "simulate: the new address is not named" || return 1

	# Enforced in a new container: no event for the workload; the new
	# actions denied, each with its event. Before Linux 6.2 (Landlock ABI
	# 3) writable_paths cannot restrict truncate(2): strict admission
	# refuses the suggestion, as it refuses the strict preset; with audit
	# admission the rest of it is enforced.
	if ! landlock_truncate; then
		expect_fail "filesystem.truncate" rt zone update lsg --policy "$sug" || return 1
		sed -i 's/^admission = "strict"$/admission = "audit"/' "$sug"
	fi
	# The update closes the code routes of the running lsg1 (exec rules
	# are new); before Linux 6.6 (no vm.memfd_noexec) its memfds cannot be
	# made non-executable, so the update names it and exits 1 after
	# storing and pushing the policy.
	if [ -e /proc/sys/vm/memfd_noexec ]; then
		expect_ok rt zone update lsg --policy "$sug" || return 1
	else
		expect_fail "recreate the container" rt zone update lsg --policy "$sug" || return 1
	fi
	expect_ok rt delete --force lsg1 || return 1
	start lsg2 lsg "" hostnet || return 1
	learn_work lsg2 || return 1
	expect_ok rt zone events lsg || return 1
	[ -z "$out" ] || fail "events for the learned workload: $out" || return 1
	expect_fail "ermission denied" rt exec lsg2 /usr/local/bin/echo new-binary || return 1
	has_event lsg '"decision": *"deny"' '"control": *"exec"' '"object": *"/usr/local/bin/echo' '"container": *"lsg2"' || return 1
	expect_fail "Operation not permitted" rt exec lsg2 nc -w1 127.0.0.1 $BAD_PORT || return 1
	has_event lsg '"decision": *"deny"' '"control": *"egress"' "\"object\": *\"127.0.0.1:$BAD_PORT" '"container": *"lsg2"' || return 1
	r rt zone events lsg --format json
	[ "$(printf '%s\n' "$out" | grep -c '"decision": *"deny"')" = 2 ] || fail "want exactly the 2 new actions denied: $out" || return 1
	expect_ok rt delete --force lsg2 || return 1
	expect_ok rt zone delete lsg
}

zn_cleanup() {
	local ns
	rt delete --force zc-a >/dev/null 2>&1
	rt delete --force zc-a2 >/dev/null 2>&1
	rt delete --force zc-b >/dev/null 2>&1
	rt zone delete zna >/dev/null 2>&1
	rt zone delete znb >/dev/null 2>&1
	for ns in $ZN_NS; do zn_ip netns del "$ns" 2>/dev/null; done
	return 0
}

# zn_member ID ZONE POLICY NS [serve]: container ID of ZONE in network
# namespace NS, sleeping or (serve) answering "pong" on port 8080.
zn_member() {
	bundle "$1" "$2" "$3"
	x_edit "$1" "s|{\"type\": \"network\"}|{\"type\": \"network\", \"path\": \"/run/netns/$4\"}|"
	[ "${5:-}" != serve ] || x_edit "$1" 's|"args": \["sleep", "3600"\]|"args": ["nc", "-ll", "-p", "8080", "-e", "echo", "pong"]|'
	x_run "$1"
	[ $rc = 0 ] || fail "rauha run -d $1 (zone $2): $err"
}

# zn_listening NS: something listens on port 8080 in NS.
zn_listening() {
	local i
	for i in $(seq 50); do
		zn_in "$1" busybox netstat -ltn 2>/dev/null | grep -q ':8080 ' && return 0
		sleep 0.1
	done
	fail "nothing listens on 8080 in $1"
}

# zn_pong ID N: container ID gets pong from $ZN_NET.N:8080.
zn_pong() {
	expect_ok rt exec "$1" nc -w 3 "$ZN_NET.$2" 8080 || return 1
	[ "$out" = pong ] || fail "$1 -> $ZN_NET.$2: '$out', want pong"
}

# zn_dropped ID N: ID's connect passes its own zone; the receiver drops the SYN.
zn_dropped() {
	r rt exec "$1" nc -w 2 "$ZN_NET.$2" 8080
	[ $rc != 0 ] || fail "$1 -> $ZN_NET.$2 went through: $out" || return 1
	case $err in *"Operation not permitted"*) fail "$1 -> $ZN_NET.$2 denied at the sender: $err" ;; esac
}

# zn_event ZONE CONTROL PEER: ZONE has a deny event of CONTROL naming PEER.
zn_event() {
	has_event "$1" "\"zone\": *\"$1\"" "\"control\": *\"$2\"" "\"target_zone\": *\"$3\"" '"decision": *"deny"'
}

check_x_zonenet() {
	"${IP:-ip}" -V 2>/dev/null | grep -q iproute2 || { echo "no iproute2 ip (IP=${IP:-ip}) in this guest"; return 77; }
	zn_cleanup
	policy zna >/dev/null <<-'EOF'
		[network]
		allowed_zones = []
	EOF
	policy znb >/dev/null <<-'EOF'
		[network]
		allowed_zones = ["zna"]
	EOF
	policy zna-open >/dev/null <<-'EOF'
		[network]
		allowed_zones = ["znb"]
	EOF
	policy znb-closed >/dev/null <<-'EOF'
		[network]
		allowed_zones = []
	EOF
	zn_lan || { zn_cleanup; fail "could not build the bridge and member namespaces"; return 1; }
	# not "rc": r sets that one
	local res=0
	zn_run || res=1
	zn_cleanup
	return $res
}

zn_run() {
	local pid
	zn_member zc-b znb "$W/znb.toml" zn-b serve && zn_member zc-a2 zna "$W/zna.toml" zn-a2 serve || return 1
	zn_listening zn-b && zn_listening zn-a2 || return 1
	# Outside every zone, from the namespace zc-a will join (its address is
	# no zone's yet): b's server answers.
	expect_ok zn_in zn-a busybox nc -w 3 "$ZN_NET.2" 8080 || return 1
	[ "$out" = pong ] || fail "from zn-a outside a zone: '$out', want pong" || return 1
	zn_member zc-a zna "$W/zna.toml" zn-a || return 1
	x_check zna "container zc-a: addresses" true "$ZN_NET.1" || return 1
	x_check znb "container zc-b: addresses" true "$ZN_NET.2" || return 1

	# a allows no zone: EPERM at connect, the event names b.
	expect_fail "Operation not permitted" rt exec zc-a nc -w 3 "$ZN_NET.2" 8080 || return 1
	zn_event zna egress znb || return 1
	has_event zna "\"object\": *\"$ZN_NET.2:8080" || return 1
	# Same zone: always.
	zn_pong zc-a 3 || return 1
	# b allows a, a not b: b's connect passes b, a's ingress drops it.
	zn_dropped zc-b 3 || return 1
	zn_event zna ingress znb || return 1

	# zone update a: the running members talk, both ways.
	pid=$(ct_pid zc-a)
	expect_ok rt zone update zna --policy "$W/zna-open.toml" || return 1
	zn_pong zc-a 2 && zn_pong zc-b 3 || return 1
	[ "$(ct_pid zc-a)" = "$pid" ] || fail "zc-a was restarted: pid $pid is now $(ct_pid zc-a)" || return 1

	# zone update b closing it: b's egress (EPERM) and b's ingress (dropped).
	expect_ok rt zone update znb --policy "$W/znb-closed.toml" || return 1
	expect_fail "Operation not permitted" rt exec zc-b nc -w 3 "$ZN_NET.3" 8080 || return 1
	zn_event znb egress zna || return 1
	zn_dropped zc-a 2 || return 1
	zn_event znb ingress zna
}

# ---------------------------------------------------------------- setup

setup() {
	mkdir -p "$ROOTFS"/bin "$ROOTFS"/etc "$ROOTFS"/proc "$ROOTFS"/dev "$ROOTFS"/tmp "$ROOTFS"/mnt/cg "$ROOTFS"/usr/local/bin "$ROOTFS"/usr/bin "$ROOTFS"/sys || return 1
	cp /usr/bin/busybox "$ROOTFS/bin/busybox" || return 1
	local a
	for a in $(/usr/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$ROOTFS/bin/$a"
	done
	# A binary of its own (not the busybox inode) for the exec rule;
	# busybox runs the applet its name says.
	cp /usr/bin/busybox "$ROOTFS/usr/local/bin/echo"
	echo 'root:x:0:0:root:/:/bin/sh' >"$ROOTFS/etc/passwd"
	echo secret >"$ROOTFS/etc/shadow"
	echo public >"$ROOTFS/etc/motd"

	sleep 3600 >/dev/null 2>&1 </dev/null &
	HOST_SLEEP=$!

	policy locked >/dev/null <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	policy noexec >/dev/null <<-'EOF'
		[exec]
		deny = ["/usr/local/bin/echo"]
	EOF
	policy egress >/dev/null <<-EOF
		[network]
		allowed_egress = ["127.0.0.1:$OK_PORT", "[::1]:$OK_PORT"]
	EOF
	policy jail >/dev/null <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	policy nocaps >/dev/null <<-'EOF'
		[capabilities]
		allowed = []
	EOF
	policy rawping >/dev/null <<-'EOF'
		[capabilities]
		allowed = ["NET_RAW"]
		[network]
		allowed_egress = []
	EOF
	start open open privileged &&
		start fs locked "$W/locked.toml" &&
		start ex noexec "$W/noexec.toml" &&
		start eg egress "$W/egress.toml" hostnet &&
		start a1 sa privileged hostpid &&
		start a2 sa privileged hostpid &&
		start b1 sb privileged hostpid &&
		{ [ "$BACKEND" != bpf-lsm ] || start ce jail "$W/jail.toml" hostnet cgmount; } &&
		start nocap nocaps "$W/nocaps.toml" &&
		start rp rawping "$W/rawping.toml" hostnet netraw
}

# check_x_learn: a learning zone denies its workload nothing and records
# what it does, from the workload's first instruction: a file read, a write
# the strict base would refuse, a connection to the host's loopback (the
# container shares the host's network namespace) and, on bpf-lsm, a
# capability (binding port 80). Nothing of the runtime's own set-up.
check_x_learn() {
	local o
	expect_ok rt zone learn lrn || return 1
	bundle lrn lrn "" hostnet
	r rt run -d --bundle "$W/b/lrn" lrn
	[ $rc = 0 ] || fail "rauha run -d lrn: $err" || return 1
	expect_ok rt exec lrn sh -c "cat /bin/busybox >/dev/null; echo x >/tmp/x; cat /tmp/x; nc -w1 127.0.0.1 $OK_PORT </dev/null; nc -l -p 80 & p=\$!; sleep 0.3; kill \$p" || return 1
	[ "$out" = x ] || fail "the workload was stopped: $out" || return 1
	expect_ok rt zone learn lrn --show || return 1
	o=$out
	note "$o"
	printf '%s\n' "$o" | grep -Eq "^exec +/bin/busybox +[0-9]+ " || fail "no exec of /bin/busybox (sh and the applets it runs)" || return 1
	printf '%s\n' "$o" | grep -Eq "^read +/bin/busybox +1 " || fail "no read of /bin/busybox" || return 1
	printf '%s\n' "$o" | grep -Eq "^write +/tmp/x +1 " || fail "no write of /tmp/x" || return 1
	printf '%s\n' "$o" | grep -Eq "^read +/tmp/x +1 " || fail "no read of /tmp/x" || return 1
	printf '%s\n' "$o" | grep -Eq "^egress +tcp 127.0.0.1:$OK_PORT +1 " || fail "no egress to 127.0.0.1:$OK_PORT" || return 1
	if [ "$BACKEND" = bpf-lsm ]; then
		printf '%s\n' "$o" | grep -Eq "^capability +CAP_NET_BIND_SERVICE " || fail "no CAP_NET_BIND_SERVICE" || return 1
	fi
	# Every object is the container's, none the runtime's.
	printf '%s\n' "$o" | tail -n +2 | grep -Ev " lrn\$" && { fail "objects of no container"; return 1; }
	expect_ok rt zone events lrn || return 1
	[ -z "$out" ] || fail "denies while learning: $out" || return 1
	expect_ok rt delete --force lrn || return 1
	expect_ok rt zone delete lrn
}

cleanup() {
	local z
	for z in $(rt zone list --format json 2>/dev/null | grep -o '"name": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/'); do
		rt zone delete --force "$z" >/dev/null 2>&1
	done
	kill "$HOST_SLEEP" 2>/dev/null
	rmdir "/sys/fs/cgroup$CG/escape" 2>/dev/null
	local left
	left=$(find "/sys/fs/cgroup$CG" -mindepth 1 -type d 2>/dev/null)
	[ -z "$left" ] || fail "cgroups left: $left" || return 1
	left=$(rt list 2>&1 | tail -n +2)
	[ -z "$left" ] || fail "containers left: $left"
}

mkdir -p "$W"
HOST_SLEEP=
start_s=$(cut -d. -f1 /proc/uptime)
echo "# rauha matrix: $("$RAUHA" --version | head -n1), kernel $(uname -r), lsm=$(cat /sys/kernel/security/lsm), expecting backend $BACKEND"
t "setup: the containers of the matrix start (ten in nine zones; no cgroup-escape one on the fallback)" setup
t "backend: zone verify reports $BACKEND with its programs attached" check_backend
t "filesystem deny: EACCES and a file event in the zone, readable from the host and another zone" check_file_deny
t "exec deny: exit 126 and an exec event, runs in another zone" check_exec_deny
t "egress IPv4 connect: EPERM and an egress event, the allowed port and the host pass" check_egress_v4
t "egress IPv6 connect: EPERM and an egress event, the allowed port passes" check_egress_v6
t "egress UDP sendto: EPERM and an egress event" check_egress_udp
t "egress raw socket: the packet program drops an ICMP echo to the host's loopback, with an event" check_egress_raw
t "zone update flips a running container's egress both ways" check_live_update
if [ "$BACKEND" != bpf-lsm ] && ! scope_signals; then
	t "signals: strict admission refuses a container sharing the host pid namespace (Landlock ABI < 6 cannot scope signals), audit admission warns" check_signals
else
	t "signals: zones cannot signal each other or the host, the host signals them" check_signals
fi
t "signals a file sends (SIGIO, F_SETSIG, SIGURG) and pidfd/sigqueue: from a zone to neither the host nor another zone, with events" check_file_signals
t "ptrace: zones cannot ptrace-read each other or the host, the host can" check_ptrace
t "cgroup escape: a zone task cannot move itself or another task out of its zone" check_cgroup_escape
t "capabilities: exec in a zone without any, and no capability comes back in a user namespace" check_capable
t "bpf(2): EPERM in a zone for a pinned map a capless process opens outside, with an event; a member keeping CAP_BPF may" check_x_bpf
t "pid namespace: one shared with a task of no zone is refused (strict) or flagged (audit); another zone's is judged by the backend" check_x_pidns
t "resources: update above the zone's pids_max refused naming the limit, with an event; verify reads the cgroup" check_x_resources
t "exec routes: memfd exec, mmap PROT_EXEC, the loader, a copy, the denied binary mapped: all run outside, denied in the zone" check_x_execroutes
t "exec routes: a zone update adding exec rules makes a running member's writable mounts noexec and its memfds non-executable" check_x_execupdate
t "entrypoint: start and run -d fail with the exec error when the zone denies it (exec.deny, filesystem.deny), with an event" check_x_entrypoint
t "zone networking: allowed_zones both ways between members on a bridge (EPERM at connect, drop at ingress, events naming the peer zone), zone update live, verify addresses" check_x_zonenet
t "learn: a learning zone records its workload's files, egress and (bpf-lsm) capabilities, denies nothing" check_x_learn
t "learn, suggest, simulate, update: the workload then runs without an event, a new binary and a new address are denied with events, as simulate predicted" check_x_learn_suggest
t "verify: zones pass with backend $BACKEND, members sharing host namespaces are named" check_verify_all
t "cleanup: zone delete --force removes every container and cgroup" cleanup
echo "1..$n"
echo "# rauha matrix on $(uname -r): $passed passed, $failed failed, $skipped skipped in $(($(cut -d. -f1 /proc/uptime) - start_s))s"
[ $failed = 0 ]
