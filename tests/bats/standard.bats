#!/usr/bin/env bats
# The standard preset is what every container without annotations gets: it
# must run ordinary work unchanged (busybox, and a Debian image built by
# debian_rootfs.sh), and deny what no ordinary image needs: the kernel calls
# of standardDeniedSyscalls and the cloud metadata addresses. privileged
# keeps only the cross-zone rules (zone/presets.go, docs/policy.md
# "Presets").

load helpers
load zone_helpers
load runc_helpers
load debian_helpers

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
	jqe '.policy_source == "preset:standard"' <<<"$stdout" >/dev/null || fail "zone: $stdout"

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
	jqe '.policy_source == "preset:standard"' <<<"$stdout" >/dev/null || fail "zone: $stdout"
	fetch_metadata rt s
	assert_eq "$FETCHED" "1 |1 "
	wait_event s '.control == "egress" and .decision == "deny" and .object == "169.254.169.254:80 (operation not permitted)"' >/dev/null
	wait_event s '.control == "egress" and .decision == "deny" and .object == "[fd00:ec2::254]:80 (operation not permitted)"' >/dev/null
	rrun rt zone verify s --format json
	assert_success
	jqe '.checks[] | select(.name == "kernel policy") | .passed' <<<"$stdout" >/dev/null || fail "verify: $stdout"
}

# The ordinary work of a Debian image: a bash script, a package built and
# installed with dpkg and apt-get, a web server answering on the loopback
# of the container's network namespace, a C program compiled and run under
# /tmp. Each runs as under runc, and the zone records no event at all.
@test "standard: a Debian image runs a script, installs packages, serves HTTP and compiles C with 0 events" {
	debian_bundle deb
	run_ct deb deb
	rrun rt zone inspect deb
	jqe '.policy_source == "preset:standard"' <<<"$stdout" >/dev/null || fail "zone: $stdout"

	# A shell script: bash arrays, a pipeline through coreutils, sed and awk,
	# files written under /tmp and /var.
	cat >"$(bundle_dir deb)/rootfs/tmp/work.sh" <<-'EOF'
		#!/bin/bash
		set -euo pipefail
		words=(zone rauha debian zone)
		printf '%s\n' "${words[@]}" | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' '
		mkdir -p /var/lib/work && seq 1 5 | sed 's/^/n/' >/var/lib/work/list
		echo "$(wc -l </var/lib/work/list) $(id -un)"
	EOF
	rexec deb bash /tmp/work.sh
	assert_success
	assert_eq "$stdout" 'debian=1 rauha=1 zone=2 5 root'

	# Package work: build a .deb, install it with dpkg; then serve it from
	# a local file repository (the only source apt is given: no network),
	# apt-get update and apt-get install it, run what it installed, and
	# remove it. apt drops to its _apt user to fetch, as it does everywhere.
	rexec deb sh -c '
		set -e
		d=/tmp/pkg/hello-rauha deb=/tmp/repo/hello-rauha_1.0_all.deb
		mkdir -p $d/DEBIAN $d/usr/bin /tmp/repo
		printf "Package: hello-rauha\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: test\n" >$d/DEBIAN/control
		printf "#!/bin/sh\necho hello from a package\n" >$d/usr/bin/hello-rauha
		chmod 0755 $d/usr/bin/hello-rauha
		dpkg-deb --build --root-owner-group $d $deb >/dev/null
		dpkg -i $deb >/dev/null
		hello-rauha
		dpkg -r hello-rauha >/dev/null
		{ dpkg-deb -f $deb; echo "Filename: ./${deb##*/}"; echo "Size: $(stat -c %s $deb)"
		  echo "SHA256: $(sha256sum $deb | cut -d" " -f1)"; echo; } >/tmp/repo/Packages
		echo "deb [trusted=yes] file:/tmp/repo ./" >/tmp/repo.list
		apt="-q -o Dir::Etc::SourceList=/tmp/repo.list -o Dir::Etc::SourceParts=-"
		apt-get $apt update >/dev/null 2>&1
		apt-get $apt install -y hello-rauha >/dev/null 2>&1
		hello-rauha
		dpkg-query -W -f "\${Status}\n" hello-rauha
		apt-get $apt remove -y hello-rauha >/dev/null 2>&1
		test ! -e /usr/bin/hello-rauha'
	assert_success
	assert_eq "$stdout" $'hello from a package\nhello from a package\ninstall ok installed'

	# A web server on the loopback of the container's network namespace.
	mkdir -p "$(bundle_dir deb)/rootfs/var/www"
	echo served-by-debian >"$(bundle_dir deb)/rootfs/var/www/index.html"
	rrun rt exec -d deb busybox httpd -f -p 127.0.0.1:8080 -h /var/www
	assert_success
	retry 50 0.1 eval 'rexec deb busybox wget -q -O - http://127.0.0.1:8080/index.html; [[ $status -eq 0 ]]' ||
		fail "httpd did not answer: $stdout $stderr"
	assert_eq "$stdout" served-by-debian

	# A compiler: compile and link a program under /tmp and run it, and
	# compile-and-run in memory.
	cat >"$(bundle_dir deb)/rootfs/tmp/prog.c" <<-'EOF'
		#include <stdio.h>
		#include <stdlib.h>
		int main(int argc, char **argv) {
			long s = 0;
			for (int i = 1; i <= 100; i++) s += i;
			printf("sum %ld from %s\n", s, argc > 1 ? argv[1] : "?");
			return 0;
		}
	EOF
	rexec deb sh -c 'cd /tmp && tcc -o prog prog.c && ./prog binary && tcc -run prog.c memory'
	assert_success
	assert_eq "$stdout" $'sum 5050 from binary\nsum 5050 from memory'

	no_event deb 'true'
	rrun rt zone verify deb --format json
	assert_success
}
