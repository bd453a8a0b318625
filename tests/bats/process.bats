#!/usr/bin/env bats
# process and other config semantics: rlimits, hostname, capabilities, user,
# oomScoreAdj, sysctl, noNewPrivileges, env, cwd.

load helpers

@test "rlimits: RLIMIT_NOFILE soft and hard" {
	# Root lacks CAP_SYS_RESOURCE here: the hard limit cannot exceed 20000.
	cfg b '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 1000, hard: 2000}]'
	set_args b sh -c 'grep "Max open files" /proc/self/limits'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(awk '{print $4, $5}' <<<"$stdout")" "1000 2000"
}

@test "rlimits: several limits" {
	cfg b '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 512, hard: 512}, {type: "RLIMIT_NPROC", soft: 300, hard: 400}, {type: "RLIMIT_CORE", soft: 0, hard: 0}]'
	set_args b cat /proc/self/limits
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(grep 'Max processes' <<<"$stdout" | awk '{print $3, $4}')" "300 400"
	assert_eq "$(grep 'Max core file size' <<<"$stdout" | awk '{print $5, $6}')" "0 0"
	assert_eq "$(grep 'Max open files' <<<"$stdout" | awk '{print $4, $5}')" "512 512"
}

@test "rlimits: a hard limit above the caller's fails with one line" {
	cfg b '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 1048576, hard: 1048576}]'
	hard=$(ulimit -Hn)
	[[ $hard != unlimited && $hard -lt 1048576 ]] || skip "the caller may raise nofile here"
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'rlimit|operation not permitted'
	assert_nothing_left c1
}

@test "rlimits: an unknown rlimit type fails" {
	cfg b '.process.rlimits = [{type: "RLIMIT_BOGUS", soft: 1, hard: 1}]'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'rlimit|RLIMIT_BOGUS'
	assert_nothing_left c1
}

@test "hostname: set in the new uts namespace" {
	cfg b '.hostname = "rauha-host-test"'
	set_args b hostname
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" rauha-host-test
}

@test "domainname: set in the new uts namespace" {
	runc_1_1_differs "domainname is supported from runc 1.2"
	cfg b '.domainname = "rauha.example"'
	set_args b cat /proc/sys/kernel/domainname
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" rauha.example
}

@test "capabilities: the configured sets become CapEff/CapPrm/CapBnd" {
	set_args b sh -c 'grep -E "^Cap(Eff|Prm|Bnd|Inh|Amb)" /proc/self/status'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	# CAP_KILL (5), CAP_NET_BIND_SERVICE (10), CAP_AUDIT_WRITE (29).
	for set in CapEff CapPrm CapBnd; do
		assert_eq "$(awk -v s="$set:" '$1==s{print $2}' <<<"$stdout")" 0000000020000420
	done
}

@test "capabilities: ambient without inheritable runs, with runc's \"can't raise ambient capability\" warning" {
	# `runc spec` of runc 1.1 lists the same caps as ambient but not as
	# inheritable, so they cannot be raised: runc 1.5 warns for each.
	cfg b '.process.capabilities.ambient = .process.capabilities.effective'
	set_args b sh -c 'grep CapEff /proc/self/status'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(awk '{print $2}' <<<"$stdout")" 0000000020000420
	runc_1_1_differs "runc 1.1 ignores ambient capabilities it cannot raise without a word"
	local c
	for c in CAP_AUDIT_WRITE CAP_KILL CAP_NET_BIND_SERVICE; do
		grep -q "can't raise ambient capability $c: operation not permitted" <<<"$stderr" ||
			fail "no warning for $c: $stderr"
	done
}

@test "capabilities: ambient with inheritable is raised" {
	cfg b '.process.capabilities.ambient = ["CAP_KILL"] | .process.capabilities.inheritable = ["CAP_KILL"]
		| .process.noNewPrivileges = false'
	set_args b sh -c 'grep CapAmb /proc/self/status'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(awk '{print $2}' <<<"$stdout")" 0000000000000020
}

@test "capabilities: only CAP_NET_BIND_SERVICE" {
	cfg b '.process.capabilities = {bounding: ["CAP_NET_BIND_SERVICE"], effective: ["CAP_NET_BIND_SERVICE"], permitted: ["CAP_NET_BIND_SERVICE"]}'
	set_args b sh -c 'grep -E "^Cap(Eff|Bnd)" /proc/self/status'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(awk '$1=="CapEff:"{print $2}' <<<"$stdout")" 0000000000000400
	assert_eq "$(awk '$1=="CapBnd:"{print $2}' <<<"$stdout")" 0000000000000400
}

@test "capabilities: without CAP_CHOWN chown fails" {
	set_args b sh -c 'touch /f && chown 1000 /f'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "$output" 'Operation not permitted'
}

@test "capabilities: an unknown capability is ignored with a warning (as runc)" {
	cfg b '.process.capabilities.bounding += ["CAP_BOGUS"] | .process.capabilities.effective += ["CAP_BOGUS"]'
	set_args b sh -c 'grep CapEff /proc/self/status'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_match "$stderr" 'CAP_BOGUS'
	assert_eq "$(awk '{print $2}' <<<"$stdout")" 0000000020000420
}

@test "user: uid, gid and additionalGids" {
	cfg b '.process.user = {uid: 1000, gid: 1001, additionalGids: [10, 20]}'
	set_args b sh -c 'echo $(id -u) $(id -g); id -G'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "${lines[0]}" "1000 1001"
	assert_match "${lines[1]}" '(^| )10( |$)'
	assert_match "${lines[1]}" '(^| )20( |$)'
}

@test "user: umask" {
	cfg b '.process.user.umask = 63'
	set_args b sh -c 'umask'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 0077
}

@test "oomScoreAdj" {
	host=$(cat /proc/self/oom_score_adj)
	# Lowering needs CAP_SYS_RESOURCE, which root lacks here: only raise.
	want=$((host < 500 ? 500 : host))
	cfg b '.process.oomScoreAdj = $v' --argjson v "$want"
	set_args b cat /proc/self/oom_score_adj
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" "$want"
}

@test "sysctl: net.ipv4.ip_forward in the new netns" {
	cfg b '.linux.sysctl = {"net.ipv4.ip_forward": "1", "net.ipv4.ping_group_range": "0 0"}'
	set_args b sh -c 'cat /proc/sys/net/ipv4/ip_forward; cat /proc/sys/net/ipv4/ping_group_range'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "${lines[0]}" 1
	assert_eq "$(awk '{$1=$1; print}' <<<"${lines[1]}")" "0 0"
}

@test "sysctl: kernel.shmmax in the new ipc namespace" {
	cfg b '.linux.sysctl = {"kernel.shmmax": "123456789"}'
	set_args b cat /proc/sys/kernel/shmmax
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 123456789
	[[ $(cat /proc/sys/kernel/shmmax) != 123456789 ]] || fail "host shmmax changed"
}

@test "sysctl: a net sysctl without a new netns is refused" {
	cfg b '.linux.namespaces |= map(select(.type != "network")) | .linux.sysctl = {"net.ipv4.ip_forward": "1"}'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'sysctl|net'
	assert_nothing_left c1
}

@test "noNewPrivileges: NoNewPrivs is 1" {
	set_args b sh -c 'grep NoNewPrivs /proc/self/status'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$(awk '{print $2}' <<<"$stdout")" 1
	cfg b '.process.noNewPrivileges = false'
	rrun rt run --bundle "$(bundle_dir b)" c2
	assert_success
	assert_eq "$(awk '{print $2}' <<<"$stdout")" 0
}

@test "env and cwd from config.json" {
	cfg b '.process.env += ["FOO=bar baz"] | .process.cwd = "/etc"'
	set_args b sh -c 'echo "$FOO"; pwd'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "${lines[0]}" "bar baz"
	assert_eq "${lines[1]}" /etc
}

@test "cwd that does not exist is created" {
	cfg b '.process.cwd = "/new/work/dir"'
	set_args b pwd
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" /new/work/dir
}

@test "--no-new-keyring keeps the caller's session keyring" {
	# /proc/keys must be visible for this check.
	cfg b '.linux.maskedPaths -= ["/proc/keys"]'
	set_args b sh -c 'grep -c "_ses\\.c1" /proc/keys || true'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	assert_eq "$stdout" 1
	# c2 looks for a keyring of its own name: c1's may still be listed
	# until the kernel's key garbage collector has run.
	set_args b sh -c 'grep -c "_ses\\.c2" /proc/keys || true'
	rrun rt run --no-new-keyring --bundle "$(bundle_dir b)" c2
	assert_success
	assert_eq "$stdout" 0
}
