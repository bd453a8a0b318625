#!/usr/bin/env bats
# The standard preset is what every container without annotations gets: it
# must run ordinary work unchanged, and deny the kernel calls no ordinary
# image needs (zone/presets.go, docs/policy.md "Presets").

load helpers
load zone_helpers

RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}

# probe_bundle NAME CALL: bundle NAME runs the sysprobe helper for CALL. It
# keeps CAP_SYS_BOOT, so kexec_load passes its capability check where
# seccomp lets it through: standard denies whatever the capabilities.
probe_bundle() {
	make_bundle "$1" /sysprobe "$2"
	install -m 0755 "$(build_helper sysprobe)" "$(bundle_dir "$1")/rootfs/sysprobe"
	cfg "$1" '.process.capabilities |= with_entries(.value += ["CAP_SYS_BOOT"])'
}

# runc_probe CALL: the sysprobe result for CALL in the same bundle under
# plain runc (no zone, no seccomp profile).
runc_probe() {
	probe_bundle "runc-$1" "$1"
	rrun timeout -k 5 30 "$RUNC" --root "$BATS_TEST_TMPDIR/runc-root" run --bundle "$(bundle_dir "runc-$1")" "runc-$TEST_UID"
}

@test "standard: ordinary busybox work runs unchanged in a container without annotations" {
	port=$(free_port)
	mkdir -p "$(bundle_dir b)/rootfs/var/www"
	echo served-by-httpd >"$(bundle_dir b)/rootfs/var/www/index.html"
	run_ct plain b
	rrun rt zone inspect plain
	jq -e '.policy_source == "preset:standard"' <<<"$stdout" >/dev/null || fail "zone: $stdout"

	rexec plain sh -c 'seq 1 100 | grep 7 | sort -r | head -n 2 | tr "\n" " "'
	assert_success
	assert_eq "$stdout" "97 87 "

	rexec plain sh -c 'echo t >/tmp/f && mkdir -p /var/lib/app && echo v >/var/lib/app/f && cat /tmp/f /var/lib/app/f'
	assert_success
	assert_eq "$stdout" $'t\nv'

	rexec plain sh -c 'cd /tmp && tar -cf a.tar -C /var lib/app && mkdir x && tar -xf a.tar -C x && cat x/lib/app/f'
	assert_success
	assert_eq "$stdout" v

	rrun rt exec -d plain httpd -f -p "127.0.0.1:$port" -h /var/www
	assert_success
	retry 50 0.1 eval 'rexec plain wget -q -O - "http://127.0.0.1:$port/index.html"; [[ $status -eq 0 ]]'
	assert_eq "$stdout" served-by-httpd
}

@test "standard: keyctl, add_key and kexec_load reach the kernel under runc and fail with EPERM in the zone" {
	[[ -x $RUNC ]] || skip "runc not installed"
	local call
	for call in keyctl add_key kexec; do
		# Under runc the call reaches the kernel: keyrings succeed, kexec_load
		# (with CAP_SYS_BOOT) is refused for its undefined flag, or is not
		# built into this kernel.
		runc_probe "$call"
		case $call in
		kexec) [[ $status -eq 1 && $stdout =~ ^(EINVAL|ENOSYS)$ ]] || { show; fail "runc: $call gave '$stdout'"; } ;;
		*) [[ $status -eq 0 && $stdout == ok ]] || { show; fail "runc: $call gave '$stdout'"; } ;;
		esac

		probe_bundle "z-$call" "$call"
		rrun rt run --bundle "$(bundle_dir "z-$call")" "z-$call"
		assert_eq "$status $stdout" "1 EPERM"
	done
}

@test "privileged: the preset denies none of the calls standard denies" {
	probe_bundle p keyctl
	in_zone p priv privileged
	rrun rt run --bundle "$(bundle_dir p)" p
	assert_eq "$status $stdout" "0 ok"
}

@test "strict: keyctl and add_key, which need no capability, fail with EPERM as under standard" {
	local call
	for call in keyctl add_key; do
		probe_bundle "s-$call" "$call"
		cfg "s-$call" '.process.capabilities = {}'
		in_zone "s-$call" tight strict
		rrun rt run --bundle "$(bundle_dir "s-$call")" "s-$call"
		assert_eq "$status $stdout" "1 EPERM"
	done
}
