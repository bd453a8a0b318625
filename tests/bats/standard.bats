#!/usr/bin/env bats
# The standard preset is what every container without annotations gets: it
# must run ordinary work unchanged, and deny the kernel calls no ordinary
# image needs (zone/presets.go, docs/policy.md "Presets").

load helpers
load zone_helpers
load runc_helpers

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

# metadata_ns: a network namespace of this test ($MD) where a web server
# answers on the cloud metadata addresses (169.254.169.254 and
# fd00:ec2::254 on its loopback), never the host's.
metadata_ns() {
	MD=rauha-md-$TEST_UID
	ip netns add "$MD" || fail "ip netns add $MD"
	echo "$MD" >>"$BATS_TEST_TMPDIR/netns"
	ip -n "$MD" link set lo up
	ip -n "$MD" addr add 169.254.169.254/32 dev lo
	ip -n "$MD" -6 addr add fd00:ec2::254/128 dev lo nodad
	mkdir -p "$BATS_TEST_TMPDIR/md/latest"
	echo iam-credentials >"$BATS_TEST_TMPDIR/md/latest/meta-data"
	bg ip netns exec "$MD" "$BUSYBOX" httpd -f -p 80 -h "$BATS_TEST_TMPDIR/md"
	retry 50 0.1 eval 'ip netns exec "$MD" ss -Htln "sport = :80" | grep -q .' || fail "metadata server did not start"
}

# metadata_bundle NAME: bundle NAME (sleep) joins $MD.
metadata_bundle() {
	make_bundle "$1"
	cfg "$1" '(.linux.namespaces[] | select(.type == "network")).path = $p' --arg p "/var/run/netns/$MD"
}

# fetch_metadata RUNTIME ID: fetch the metadata from container ID over
# IPv4 and over IPv6; $status and $stdout of the two as "v4 v6" lines.
fetch_metadata() {
	local rt=$1 id=$2 v4 v6
	rrun "$rt" exec "$id" wget -q -O - http://169.254.169.254/latest/meta-data
	v4="$status $stdout"
	rrun "$rt" exec "$id" wget -q -O - "http://[fd00:ec2::254]/latest/meta-data"
	v6="$status $stdout"
	FETCHED="$v4|$v6"
}

@test "standard: the cloud metadata service answers under runc and privileged, standard denies it with an event" {
	[[ -x $RUNC ]] || skip "runc not installed"
	metadata_ns

	metadata_bundle r
	plain run -d --bundle "$(bundle_dir r)" "r-$TEST_UID" >/dev/null 2>&1 </dev/null || fail "runc run -d"
	fetch_metadata plain "r-$TEST_UID"
	assert_eq "$FETCHED" "0 iam-credentials|0 iam-credentials"

	metadata_bundle p
	in_zone p priv privileged
	run_ct p p
	fetch_metadata rt p
	assert_eq "$FETCHED" "0 iam-credentials|0 iam-credentials"
	no_event priv 'true'
	# Members of two zones in one network namespace hold the same
	# addresses, which verify reports: one at a time.
	rt delete --force p >/dev/null || fail "delete p"

	metadata_bundle s
	run_ct s s
	rrun rt zone inspect s
	jq -e '.policy_source == "preset:standard"' <<<"$stdout" >/dev/null || fail "zone: $stdout"
	fetch_metadata rt s
	assert_eq "$FETCHED" "1 |1 "
	wait_event s '.control == "egress" and .decision == "deny" and .object == "169.254.169.254:80 (operation not permitted)"' >/dev/null
	wait_event s '.control == "egress" and .decision == "deny" and .object == "[fd00:ec2::254]:80 (operation not permitted)"' >/dev/null
	rrun rt zone verify s --format json
	assert_success
	jq -e '.checks[] | select(.name == "kernel policy") | .passed' <<<"$stdout" >/dev/null || fail "verify: $stdout"
}
