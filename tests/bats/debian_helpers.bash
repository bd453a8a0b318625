#!/usr/bin/env bash
# Helpers of the tests that run a Debian image (standard.bats,
# learn_debian.bats). Load after helpers.bash.

# debian_bundle NAME: bundle NAME with a private Debian rootfs
# (debian_rootfs.sh: debootstrap minbase plus busybox, tcc and libc6-dev,
# built once and cached) and the capabilities docker and podman give a
# container by default: what an ordinary image runs with (apt drops to its
# _apt user with them). Skips, saying why, when the rootfs cannot be built.
debian_bundle() {
	local tar err=$BATS_TEST_TMPDIR/debian_rootfs.err
	if ! tar=$("$BATS_TEST_DIRNAME/debian_rootfs.sh" 2>"$err"); then
		skip "no Debian rootfs: $(tail -n 3 "$err" | tr '\n' ' ')"
	fi
	make_bundle "$1"
	local r
	r=$(bundle_dir "$1")/rootfs
	rm -rf "$r"
	mkdir "$r"
	tar -C "$r" -xf "$tar" || fail "extract $tar"
	cfg "$1" '.process.capabilities |= with_entries(.value = $caps)' --argjson caps '["CAP_CHOWN", "CAP_DAC_OVERRIDE",
		"CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
		"CAP_NET_RAW", "CAP_SYS_CHROOT", "CAP_MKNOD", "CAP_AUDIT_WRITE", "CAP_SETFCAP"]'
}
