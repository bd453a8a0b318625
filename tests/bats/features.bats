#!/usr/bin/env bats
# features and --version.

load helpers

@test "features: JSON document" {
	rrun rt features
	assert_success
	j=$stdout
	jqe . <<<"$j" >/dev/null || fail "not JSON"
	assert_match "$(jq -r .ociVersionMin <<<"$j")" '^1\.0\.'
	assert_match "$(jq -r .ociVersionMax <<<"$j")" '^1\.[0-9]+\.'
	for h in prestart createRuntime createContainer startContainer poststart poststop; do
		jqe --arg h "$h" '.hooks | index($h)' <<<"$j" >/dev/null || fail "hook $h missing"
	done
	jqe '.mountOptions | index("bind") and index("ro")' <<<"$j" >/dev/null || fail "mountOptions"
	for ns in cgroup ipc mount network pid user uts; do
		jqe --arg ns "$ns" '.linux.namespaces | index($ns)' <<<"$j" >/dev/null || fail "namespace $ns missing"
	done
	jqe '.linux.capabilities | index("CAP_SYS_ADMIN")' <<<"$j" >/dev/null || fail "capabilities"
	jqe '.linux.cgroup.v1 == true' <<<"$j" >/dev/null || fail "cgroup.v1"
	jqe '.linux.seccomp.enabled == true' <<<"$j" >/dev/null || fail "seccomp.enabled"
	jqe '.linux.seccomp.actions | index("SCMP_ACT_ERRNO")' <<<"$j" >/dev/null || fail "seccomp actions"
}

@test "--version: first line names the runtime and its version" {
	rrun "$RUNTIME" --version
	assert_success
	assert_match "${lines[0]}" '^(runc|rauha) version [0-9]'
	grep -qE '^spec: 1\.[0-9]+' <<<"$stdout" || fail "no 'spec:' line: $stdout"
}

@test "-v is --version" {
	rrun "$RUNTIME" -v
	assert_success
	assert_match "${lines[0]}" '^(runc|rauha) version [0-9]'
}

@test "an unknown command fails" {
	rrun rt no-such-command
	assert_failure
}

@test "--help lists the OCI commands" {
	rrun "$RUNTIME" --help
	assert_success
	for c in create start run exec state list kill delete ps pause resume events update spec features; do
		grep -qE "^ +$c([ ,]|$)" <<<"$stdout" || fail "command $c not in --help"
	done
}
