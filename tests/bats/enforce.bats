#!/usr/bin/env bats
# Zone enforcement end to end, one test per control, on whatever backend this
# kernel gives (ENFORCEMENT.md maps each test to its control and backend).
# Every denial is checked twice: the errno the workload sees and the event
# `rauha zone events` records for it.

load helpers
load zone_helpers

# ev_is EVENT JQ-CONDITION: the event JSON satisfies the condition.
ev_is() {
	jqe "$2" <<<"$1" >/dev/null || fail "event $1 does not satisfy ($2)"
}

@test "filesystem deny: the denied file is EACCES with an event, its sibling and another zone read it" {
	shadow_denied b locked
	echo public >"$(bundle_dir b)/rootfs/etc/motd"
	run_ct fs-locked b

	rexec fs-locked cat /etc/shadow
	assert_failure 1
	assert_match "$stderr" "can't open '/etc/shadow': Permission denied"
	rexec fs-locked cat /etc/motd
	assert_success
	assert_eq "$stdout" public

	ev=$(wait_event locked '.control == "file" and (.object | startswith("/etc/shadow"))')
	ev_is "$ev" '.zone == "locked" and .container == "fs-locked" and .comm == "cat" and .decision == "deny" and .pid > 0'
	ev_is "$ev" '.object == "/etc/shadow (permission denied)"'
	ev_is "$ev" '.backend == "landlock" or .backend == "bpf-lsm"'
	no_event locked '.object | startswith("/etc/motd")'

	# The same file in a zone without the rule.
	make_bundle o
	echo secret >"$(bundle_dir o)/rootfs/etc/shadow"
	host_net o
	in_zone o open privileged
	run_ct fs-open o
	rexec fs-open cat /etc/shadow
	assert_success
	assert_eq "$stdout" secret
}

@test "filesystem writable_paths/read_only: writes only below writable paths, never below read_only" {
	mkdir -p "$(bundle_dir b)/rootfs/srv/ro"
	echo keep >"$(bundle_dir b)/rootfs/srv/ro/file"
	echo old >"$(bundle_dir b)/rootfs/srv/data"
	# admission audit: a read_only tree inside a writable one is only
	# partly enforceable by Landlock (see the next test).
	in_zone b rofs "$(policy rofs <<-'EOF'
		[zone]
		admission = "audit"
		[filesystem]
		writable_paths = ["/tmp", "/srv"]
		read_only = ["/srv/ro"]
	EOF
	)"
	run_ct rofs b

	# Outside the writable paths the fallback's mounts are read-only too
	# (metadata changes): they refuse a write open before Landlock does.
	rexec rofs sh -c 'echo x >/etc/new'
	assert_failure 1
	assert_match "$stderr" "can't create /etc/new: (Read-only file system|Permission denied)"
	rexec rofs sh -c 'echo x >>/etc/passwd'
	assert_failure 1
	assert_match "$stderr" "can't create /etc/passwd: (Read-only file system|Permission denied)"
	rexec rofs sh -c 'echo hello >/tmp/x && mkdir /tmp/d && echo sub >/tmp/d/y && cat /tmp/x /tmp/d/y'
	assert_success
	assert_eq "$stdout" $'hello\nsub'
	rexec rofs sh -c 'echo new >/srv/data && cat /srv/data'
	assert_success
	assert_eq "$stdout" new
	rexec rofs sh -c 'echo x >/srv/ro/file'
	assert_failure 1
	assert_match "$stderr" "can't create /srv/ro/file: (Read-only file system|Permission denied)"
	rexec rofs sh -c 'echo x >/srv/ro/other'
	assert_failure 1
	assert_match "$stderr" "can't create /srv/ro/other: (Read-only file system|Permission denied)"
	rexec rofs cat /srv/ro/file
	assert_success
	assert_eq "$stdout" keep

	rrun rt zone verify rofs --format json
	assert_failure 1
	jqe '.checks[] | select(.name == "controls available") | (.passed | not) and (.detail | test("/srv/ro"))' <<<"$stdout" >/dev/null ||
		fail "verify does not name the partly enforced read_only rule: $stdout"

	ev=$(wait_event rofs '.control == "file" and (.object | startswith("/etc/new"))')
	ev_is "$ev" '.container == "rofs" and .decision == "deny" and .comm == "sh"'
	wait_event rofs '.control == "file" and (.object | startswith("/srv/ro/file"))' >/dev/null
}

@test "filesystem read_only inside a writable path: strict admission refuses what Landlock cannot express" {
	mkdir -p "$(bundle_dir b)/rootfs/srv/ro"
	# Landlock grants a directory's create rights to everything beneath it:
	# new entries in /srv cannot be allowed while /srv/ro stays read-only.
	in_zone b nested "$(policy nested <<-'EOF'
		[filesystem]
		writable_paths = ["/srv"]
		read_only = ["/srv/ro"]
	EOF
	)"
	rrun rt run -d --bundle "$(bundle_dir b)" nested
	if [[ $status -eq 0 ]]; then
		rexec nested sh -c 'echo x >/srv/new && cat /srv/new'
		assert_success
		return 0
	fi
	assert_match "$stderr" "zone nested \(admission strict\) refuses container nested: filesystem: .*/srv/ro"
	assert_nothing_left nested
}

@test "exec deny: a denied binary fails with 126 and an exec event, other binaries run" {
	mkdir -p "$(bundle_dir b)/rootfs/usr/local/bin"
	cp "$BUSYBOX" "$(bundle_dir b)/rootfs/usr/local/bin/denyme"
	# writable_paths: with a writable root and none, a copy of the denied
	# binary could run anywhere (execroutes.bats), and admission refuses.
	in_zone b noexec "$(policy noexec <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		deny = ["/usr/local/bin/denyme"]
	EOF
	)"
	run_ct exec-deny b

	rexec exec-deny sh -c 'denyme echo should-not-run'
	assert_failure 126
	assert_match "$stderr" "denyme: Permission denied"
	[[ $stdout != *should-not-run* ]] || fail "the denied binary ran"
	rexec exec-deny sh -c 'echo ok | tr a-z A-Z; ls /usr/local/bin'
	assert_success
	assert_eq "$stdout" $'OK\ndenyme'

	ev=$(wait_event noexec '.control == "exec"')
	ev_is "$ev" '.object == "/usr/local/bin/denyme (permission denied)" and .container == "exec-deny" and .decision == "deny"'
}

@test "exec allow-list: only binaries below the allowed paths run" {
	mkdir -p "$(bundle_dir b)/rootfs/usr/local/bin"
	cp "$BUSYBOX" "$(bundle_dir b)/rootfs/usr/local/bin/elsewhere"
	in_zone b onlybin "$(policy onlybin <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		allow = ["/bin"]
	EOF
	)"
	run_ct exec-allow b

	# /usr/bin/tr is a symlink to /bin/busybox: the binary is in /bin.
	rexec exec-allow sh -c 'echo ok | /usr/bin/tr a-z A-Z'
	assert_success
	assert_eq "$stdout" OK
	rexec exec-allow sh -c '/usr/local/bin/elsewhere echo should-not-run'
	assert_failure 126
	assert_match "$stderr" "/usr/local/bin/elsewhere: Permission denied"

	ev=$(wait_event onlybin '.control == "exec"')
	ev_is "$ev" '.object == "/usr/local/bin/elsewhere (permission denied)" and .container == "exec-allow"'
}

@test "egress: allowed_egress limits TCP connect (IPv4, IPv6) and UDP sendto, with egress events" {
	local ok bad listener=
	# The listener on the host's loopback must hold the port itself: on a
	# shared host another process can take a free port before it binds.
	for _ in 1 2 3 4 5; do
		ok=$(free_port)
		bg busybox nc -l -p "$ok" >"$BATS_TEST_TMPDIR/received" 2>/dev/null </dev/null 3>&-
		listener=$!
		retry 20 0.1 sh -c "ss -Htlnp 'sport = :$ok' | grep -q 'pid=$listener,'" && break
		kill "$listener" 2>/dev/null || true
		listener=
	done
	[[ -n $listener ]] || fail "no port on 127.0.0.1 that a listener of this test could hold"
	bad=$(free_port)
	host_net b
	in_zone b egress "$(policy egress <<-EOF
		[network]
		allowed_egress = ["127.0.0.1:$ok", "[::1]:$ok"]
	EOF
	)"
	run_ct egress b

	# An allowed destination carries data.
	rexec egress sh -c "echo through | nc -w2 127.0.0.1 $ok"
	assert_success
	wait_file "$BATS_TEST_TMPDIR/received"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/received")" through

	rexec egress nc -w1 127.0.0.1 "$bad"
	assert_failure 1
	assert_match "$stderr" "can't connect to remote host \(127\.0\.0\.1\): Operation not permitted"
	rexec egress nc -w1 ::1 "$ok"
	assert_failure 1
	assert_match "$stderr" "Connection refused"
	rexec egress nc -w1 ::1 "$bad"
	assert_failure 1
	assert_match "$stderr" "Operation not permitted"
	# busybox tftp sends its first datagram with sendto() on an unconnected
	# socket: the sendmsg hook, not connect.
	rexec egress sh -c "cd /tmp && tftp -g -r f 127.0.0.2 $ok"
	assert_failure 1
	assert_match "$stderr" "tftp: sendto: Operation not permitted"

	ev=$(wait_event egress ".control == \"egress\" and .object == \"127.0.0.1:$bad (operation not permitted)\"")
	ev_is "$ev" '.container == "egress" and .comm == "nc" and .decision == "deny"'
	wait_event egress ".control == \"egress\" and (.object | startswith(\"[::1]:$bad\"))" >/dev/null
	wait_event egress ".control == \"egress\" and .comm == \"tftp\" and (.object | startswith(\"127.0.0.2:$ok\"))" >/dev/null
	no_event egress ".object | contains(\":$ok \") and startswith(\"127.0.0.1\")"

	rrun rt zone stats egress --format json
	assert_success
	denies=$(jq '[.controls[] | select(.control == "egress") | .denies] | add' <<<"$stdout")
	[[ $denies -ge 3 ]] || fail "zone stats counts $denies egress denies, want >= 3: $stdout"
}

# sub_cgroups NAME: an empty sub-cgroup "sub" below bundle NAME's cgroup in
# every hierarchy, ready for "exec --cgroup sub".
sub_cgroups() {
	local d
	for d in $(cg_dirs "$(cg_path "$1")"); do
		mkdir "$d/sub"
		if [[ -f $d/cpuset.cpus ]]; then
			cat "$d/cpuset.cpus" >"$d/sub/cpuset.cpus"
			cat "$d/cpuset.mems" >"$d/sub/cpuset.mems"
		fi
	done
}

@test "exec --cgroup: a process moved below the member cgroup stays in the zone (file deny, egress)" {
	local ok
	ok=$(free_port)
	echo secret >"$(bundle_dir b)/rootfs/etc/shadow"
	# Loopback of a private network namespace reaches nothing outside it.
	host_net b
	in_zone b subcg "$(policy subcg <<-EOF
		[filesystem]
		deny = ["/etc/shadow"]
		[network]
		allowed_egress = ["127.0.0.1:$ok"]
	EOF
	)"
	run_ct subcg b
	sub_cgroups b
	# Without the zone's rules (a privileged zone) the same moves work.
	make_bundle o
	echo secret >"$(bundle_dir o)/rootfs/etc/shadow"
	host_net o
	in_zone o open privileged
	run_ct open o
	sub_cgroups o
	rrun rt exec --cgroup sub open sh -c 'grep ":pids:" /proc/self/cgroup; cat /etc/shadow; nc -w1 127.0.0.1 1'
	assert_match "$stdout" ":pids:$(cg_path o)/sub"
	assert_match "$stdout" secret
	assert_match "$stderr" "Connection refused"

	rrun rt exec --cgroup sub subcg sh -c 'grep ":pids:" /proc/self/cgroup; cat /etc/shadow; nc -w1 127.0.0.1 1'
	assert_match "$stdout" ":pids:$(cg_path b)/sub"
	[[ $stdout != *secret* ]] || fail "the process in the sub-cgroup read the denied file"
	assert_match "$stderr" "can't open '/etc/shadow': Permission denied"
	assert_match "$stderr" "can't connect to remote host \(127\.0\.0\.1\): Operation not permitted"
	wait_event subcg '.control == "file" and (.object | startswith("/etc/shadow"))' >/dev/null
	wait_event subcg '.control == "egress" and (.object | startswith("127.0.0.1:1 "))' >/dev/null
	# verify: the member is registered; only the shared host network fails.
	rrun rt zone verify subcg
	assert_match "$stdout" "PASS +container subcg: member"
	assert_eq "$(grep -c '^FAIL' <<<"$stdout")" 1
	assert_match "$stdout" "FAIL +container subcg: namespaces +shares the host's net namespace"
}

@test "egress audit mode: the would-be denial succeeds and is recorded as audit" {
	local ok bad
	ok=$(free_port)
	bad=$(free_port)
	host_net b
	in_zone b watched "$(policy watched <<-EOF
		[zone]
		mode = "audit"
		[network]
		allowed_egress = ["127.0.0.1:$ok"]
	EOF
	)"
	run_ct watched b

	rexec watched nc -w1 127.0.0.1 "$bad"
	assert_failure 1
	assert_match "$stderr" "Connection refused"
	ev=$(wait_event watched ".control == \"egress\" and (.object | startswith(\"127.0.0.1:$bad\"))")
	ev_is "$ev" '.decision == "audit" and .container == "watched"'
}

@test "egress: zone update flips a running container's egress without a restart" {
	local port pid
	port=$(free_port)
	host_net b
	open=$(policy open <<-EOF
		[network]
		allowed_egress = ["127.0.0.1:$port"]
	EOF
	)
	closed=$(policy closed <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	)
	in_zone b live "$open"
	run_ct live b
	pid=$(ct_pid live)

	rexec live nc -w1 127.0.0.1 "$port"
	assert_match "$stderr" "Connection refused"
	rrun rt zone update live --policy "$closed"
	assert_success
	rexec live nc -w1 127.0.0.1 "$port"
	assert_match "$stderr" "Operation not permitted"
	wait_event live ".control == \"egress\" and (.object | startswith(\"127.0.0.1:$port\"))" >/dev/null
	rrun rt zone update live --policy "$open"
	assert_success
	rexec live nc -w1 127.0.0.1 "$port"
	assert_match "$stderr" "Connection refused"

	assert_eq "$(ct_pid live)" "$pid"
	assert_eq "$(ct_status live)" running
}

@test "capabilities: an empty allow-list leaves no capability, a list keeps only its members" {
	in_zone b nocaps "$(policy nocaps <<-'EOF'
		[capabilities]
		allowed = []
	EOF
	)"
	run_ct nocaps b
	rexec nocaps cat /proc/1/status /proc/self/status
	assert_success
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		got=$(grep "^$set:" <<<"$stdout" | awk '{print $2}' | sort -u)
		assert_eq "$got" 0000000000000000
	done

	# The spec grants AUDIT_WRITE, KILL and NET_BIND_SERVICE; the policy
	# allows NET_BIND_SERVICE and SYS_ADMIN: only NET_BIND_SERVICE (bit 10).
	make_bundle s
	in_zone s somecaps "$(policy somecaps <<-'EOF'
		[capabilities]
		allowed = ["NET_BIND_SERVICE", "CAP_SYS_ADMIN"]
	EOF
	)"
	run_ct somecaps s
	rexec somecaps cat /proc/1/status
	assert_success
	assert_eq "$(awk '/^CapEff:/ {print $2}' <<<"$stdout")" 0000000000000400
	assert_eq "$(awk '/^CapBnd:/ {print $2}' <<<"$stdout")" 0000000000000400
}

@test "syscalls deny: a denied syscall fails with EPERM, others work" {
	in_zone b nomkdir "$(policy nomkdir <<-'EOF'
		[syscalls]
		deny = ["mkdir", "mkdirat"]
	EOF
	)"
	run_ct nomkdir b
	rexec nomkdir mkdir /tmp/d
	assert_failure 1
	assert_match "$stderr" "can't create directory '/tmp/d': Operation not permitted"
	rexec nomkdir sh -c 'touch /tmp/f && ls /tmp'
	assert_success
	assert_eq "$stdout" f
}

@test "syscalls deny: a misspelt name is an error with its line, at zone create and at admission" {
	local pol
	pol=$(policy typo <<-'EOF'
		[syscalls]
		deny = ["mkdir",
		  "mkdirta"]
	EOF
	)
	rrun rt zone create --policy "$pol" typo
	assert_error_line "typo.toml: line 3: syscalls.deny: unknown syscall .?\"mkdirta"
	zone_exists typo && fail "zone typo was stored with a syscall rule that denies nothing"
	in_zone b typo "$pol"
	rrun rt run -d --bundle "$(bundle_dir b)" typo
	assert_error_line "typo.toml: line 3: syscalls.deny: unknown syscall .?\"mkdirta"
	assert_nothing_left typo
}

@test "resources: memory_limit takes update --memory's syntax (1.5G)" {
	local pol
	pol=$(policy sizes <<-'EOF'
		[resources]
		memory_limit = "1.5G"
	EOF
	)
	rt zone create --policy "$pol" sizes
	assert_eq "$(zone_json sizes | jq '.. | .memory_limit? // empty')" $((3 << 29))
}

@test "resources: pids_max and memory_limit reach the container's cgroups" {
	in_zone b small "$(policy small <<-'EOF'
		[resources]
		pids_max = 16
		memory_limit = "64M"
	EOF
	)"
	run_ct small b
	assert_eq "$(cat "/sys/fs/cgroup/pids$(cg_path b)/pids.max")" 16
	assert_eq "$(cat "/sys/fs/cgroup/memory$(cg_path b)/memory.limit_in_bytes")" $((64 << 20))
	rexec small sh -c 'for i in $(seq 20); do sleep 30 & done; wait'
	assert_match "$stderr" "can't fork: Resource temporarily unavailable"
}

@test "devices: only the allowed device nodes exist" {
	in_zone b nullonly "$(policy nullonly <<-'EOF'
		[devices]
		allowed = ["null"]
	EOF
	)"
	run_ct devs b
	rexec devs sh -c 'echo gone >/dev/null && echo null-ok'
	assert_success
	assert_eq "$stdout" null-ok
	rexec devs head -c1 /dev/zero
	assert_failure 1
	assert_match "$stderr" "/dev/zero: No such file or directory"
	rexec devs ls /dev
	assert_success
	for d in zero full random urandom tty; do
		grep -qx "$d" <<<"$stdout" && fail "/dev/$d exists: $stdout"
	done
	grep -qx null <<<"$stdout" || fail "/dev/null missing: $stdout"
}

@test "exec'd processes are enforced exactly like the init" {
	shadow_denied b same
	set_args b sh -c 'cat /etc/shadow; echo "init rc=$?"; exec sleep 3600'
	run_ct same b
	wait_file "$BATS_TEST_TMPDIR/same.out"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/same.out")" "init rc=1"
	assert_match "$(cat "$BATS_TEST_TMPDIR/same.err")" "can't open '/etc/shadow': Permission denied"

	rexec same sh -c 'cat /etc/shadow; echo "exec rc=$?"'
	assert_eq "$stdout" "exec rc=1"
	assert_match "$stderr" "can't open '/etc/shadow': Permission denied"

	wait_event same '.control == "file"' >/dev/null
	n=$(zone_events same | jq -s '[.[] | select(.control == "file" and .container == "same")] | map(.pid) | unique | length')
	assert_eq "$n" 2
}

@test "signals: zones sharing the host pid namespace cannot signal each other or the host" {
	local host a2pid b1pid
	for b in a1 a2 b1; do
		make_bundle "$b"
		host_pid "$b"
	done
	in_zone a1 sa privileged
	in_zone a2 sa
	in_zone b1 sb privileged
	run_ct a1 a1
	run_ct a2 a2
	run_ct b1 b1
	a2pid=$(ct_pid a2)
	b1pid=$(ct_pid b1)
	host=$(host_sleep)

	rexec a1 kill -TERM "$b1pid"
	assert_failure 1
	assert_match "$stderr" "can't kill pid $b1pid: Operation not permitted"
	rexec a1 kill -TERM "$host"
	assert_failure 1
	assert_match "$stderr" "can't kill pid $host: Operation not permitted"
	kill -0 "$host" || fail "the host process died"
	assert_eq "$(ct_status b1)" running
	ev=$(wait_event sa ".control == \"signal\" and .target_pid == $b1pid")
	ev_is "$ev" '.container == "a1" and .decision == "deny"'

	# Known limit of the fallback (README): two containers of one zone that
	# share the host pid namespace are two Landlock domains, and signal
	# scoping separates them as well. The bpf-lsm backend judges by zone and
	# allows it (bpf/lsm_test.go, task_kill). Asserted so a change is seen.
	rexec a1 kill -0 "$a2pid"
	assert_failure 1
}

@test "ptrace: zones sharing the host pid namespace cannot trace each other or the host" {
	local host b1pid tracer
	tracer=$(build_helper ptrace)
	for b in a1 b1; do
		make_bundle "$b"
		host_pid "$b"
		# CAP_SYS_PTRACE, so only the zone boundary can say no.
		cfg "$b" '.process.capabilities[] += ["CAP_SYS_PTRACE"]'
		cp "$tracer" "$(bundle_dir "$b")/rootfs/bin/ptrace"
	done
	in_zone a1 sa privileged
	in_zone b1 sb privileged
	run_ct a1 a1
	run_ct b1 b1
	b1pid=$(ct_pid b1)
	host=$(host_sleep)

	# The tool and the capability work: a zone task traces its own child.
	rexec a1 sh -c 'sleep 60 & ptrace $!; r=$?; kill $!; exit $r'
	assert_success
	assert_match "$stdout" "^traced [0-9]+$"
	rexec a1 ptrace "$b1pid"
	assert_failure 1
	assert_match "$stderr" "ptrace $b1pid: operation not permitted"
	rexec a1 ptrace "$host"
	assert_failure 1
	assert_match "$stderr" "ptrace $host: operation not permitted"
	ev=$(wait_event sa ".control == \"ptrace\" and .target_pid == $b1pid")
	ev_is "$ev" '.container == "a1" and .decision == "deny"'
	# The host is not in a zone: it may trace a zone's task.
	run "$tracer" "$b1pid"
	assert_success
}

@test "abstract unix sockets: a host-network zone with path rules cannot reach the host's" {
	local tool name
	tool=$(build_helper abstract)
	name=rauha-test-$TEST_UID
	bg "$tool" listen "$name"
	retry 50 0.1 "$tool" connect "$name"
	for b in ruled plain; do
		make_bundle "$b"
		host_net "$b"
		cp "$tool" "$(bundle_dir "$b")/rootfs/bin/abstract"
	done
	in_zone ruled ruled "$(policy ruled <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)"
	run_ct ruled ruled
	run_ct plain plain

	rexec ruled abstract connect "$name"
	assert_failure 1
	assert_match "$stderr" "connect @$name: operation not permitted"
	# Known limit (README): scoping rides on the Landlock domain of path
	# rules, so a zone without any reaches host abstract sockets; asserted
	# so a change is seen.
	rexec plain abstract connect "$name"
	assert_success
	assert_eq "$stdout" hello
}

@test "cgroup escape: writing cgroup.procs outside the zone's subtree" {
	local port target
	port=$(free_port)
	target=/sys/fs/cgroup/unified$CG_PREFIX/$TEST_UID-escape
	mkdir -p "$target"
	host_net b
	cfg b '.mounts += [{destination: "/mnt/cg", type: "bind", source: "/sys/fs/cgroup/unified", options: ["rbind", "rw"]}]'
	local jail_policy
	jail_policy=$(policy jail <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	)
	in_zone b jail "$jail_policy"
	rt zone create probe --preset privileged >/dev/null
	if [[ $(rt zone verify probe --format json | jq -r .backend) == landlock ]]; then
		# No hook can stop the write on the fallback, so a container with a
		# route out of its cgroup is not admitted by a strict zone...
		rrun rt run -d --bundle "$(bundle_dir b)" jail
		assert_failure 1
		assert_match "$stderr" "refuses container jail: cgroup escape guard: /mnt/cg is a writable mount of the cgroup hierarchy"
		assert_nothing_left jail
		# ...and one an audit zone admits fails verify, naming the route.
		cfg b '.annotations["org.rauha.zone"] = "loose" | del(.annotations["org.rauha.policy"])'
		rt zone create loose --policy "$(policy loose <<-'EOF'
			[zone]
			admission = "audit"
			[network]
			allowed_egress = []
		EOF
		)" >/dev/null
		run_ct jail b
		rrun rt zone verify --container jail --format json
		assert_failure 1
		jqe '.isolated == false and any(.checks[]; .name == "container jail: cgroup escape" and (.passed | not) and (.detail | contains("/mnt/cg")))' <<<"$stdout" >/dev/null ||
			fail "verify does not name the escape route: $stdout"
		# A read-only mount of the hierarchy is no route: admitted, verified.
		rt delete --force jail
		cfg b '(.mounts[] | select(.destination == "/mnt/cg")).options = ["rbind", "ro"]'
		in_zone b jail "$jail_policy"
		run_ct jail b
		rrun rt zone verify --container jail --format json
		jqe '.zone == "jail" and any(.checks[]; .name == "container jail: cgroup escape" and .passed)' <<<"$stdout" >/dev/null ||
			fail "verify flags a read-only cgroup mount: $stdout"
		rexec jail sh -c "echo \$\$ >/mnt/cg$CG_PREFIX/$TEST_UID-escape/cgroup.procs"
		assert_failure
		assert_match "$stderr" "Read-only file system"
		return 0
	fi
	run_ct jail b
	rexec jail sh -c "nc -w1 127.0.0.1 $port"
	assert_match "$stderr" "Operation not permitted"
	rexec jail sh -c "echo \$\$ >/mnt/cg$CG_PREFIX/$TEST_UID-escape/cgroup.procs"
	assert_failure
	assert_match "$stderr" "Permission denied|Operation not permitted"
	wait_event jail '.object | contains("cgroup.procs")' >/dev/null
}
