#!/bin/bash
# vmtest.sh - run the bpf package's tests, including the BPF-LSM ones that
# this project's VM and CI kernel refuse (EPERM), and the rauha binary's
# zone enforcement matrix (tests/vm/matrix.sh) inside throw-away QEMU guests
# booted from Debian kernel packages by tests/vm/run-in-vm.sh, the project's
# VM lane (see its header: packages it needs, the kernel cache, settings).
#
#   bpf/vmtest.sh [KERNEL...]      KERNEL: 6.1 (default suite), 6.12, sid, nobpf
#
# Default: 6.1, 6.12 and nobpf. Each kernel boots once (seconds; the tests
# take minutes under emulation) and runs both: the static test binary with
# RAUHA_EXPECT_LSM=1, so a kernel that refuses the LSM programs fails the run
# instead of skipping, then the matrix, which must find the bpf-lsm
# backend. nobpf boots 6.1 without bpf in lsm=, where LSM programs load and
# attach but never run: Probe must say so (RAUHA_EXPECT_LSM=0) and rauha
# must pick the landlock fallback. Extra `go test` flags go in VMTEST_FLAGS
# (e.g. VMTEST_FLAGS='-test.run TestLSM'); VMTEST_MATRIX=0 leaves the matrix
# out.
#
# rauha needs cgo (libcontainer's nsenter, libseccomp): the binary `make
# build` produces goes in with VM_BINS, which copies it to the same path in
# the guest together with the shared libraries ldd lists, so the guest runs
# the exact binary that `make install` ships.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lane=$here/../tests/vm/run-in-vm.sh

payload=$(mktemp -d /tmp/rauha-bpf-vmtest.XXXXXX)
trap 'rm -rf "$payload"' EXIT
mkdir "$payload/bin"
chmod 755 "$payload" "$payload/bin" # helpers run as nobody too
(cd "$here" && CGO_ENABLED=0 go test -c -o "$payload/bin/bpf.test" .)
repo=$(cd "$here/.." && pwd)
matrix=${VMTEST_MATRIX:-1}
bins=
if [ "$matrix" = 1 ]; then
	make -C "$repo" --no-print-directory build >&2
	bins=$repo/rauha
	cp "$repo/tests/vm/matrix.sh" "$repo/tests/vm/filedeny.sh" "$payload/bin/"
	# The bats helpers the matrix's and filedeny.sh's attacks need: bpf(2)
	# on a pin, code run without an execve, signals by other routes than
	# kill(2), xattrs and unix sockets (busybox has none of them); and the
	# host's dynamic loader with the libc and a dynamic binary it runs: the
	# guest has neither.
	for h in bpfget execroute sigsend fileattack; do
		(cd "$repo" && CGO_ENABLED=0 go build -trimpath -o "$payload/bin/$h" "./tests/bats/helpers/$h")
	done
	ld=/lib64/ld-linux-x86-64.so.2
	if [ -e "$ld" ] && [ -x /bin/true ]; then
		mkdir -p "$payload/ld"
		cp -L "$ld" "$payload/ld/"
		cp -L "$(ldd /bin/true | awk '$1 ~ /^libc\.so/ {print $3}')" "$payload/ld/"
		cp /bin/true "$payload/ld/true"
	fi
fi

# The matrix's zone networking check wires members with veths to a bridge,
# with iproute2's ip (busybox's has no netns): copied in with VM_BINS.
netmods="veth bridge"
iproute=$(command -v ip || true)
vmbins=$bins
if [ "$matrix" = 1 ] && [ -n "$iproute" ]; then vmbins="$bins $iproute"; fi

kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(6.1 6.12 nobpf)
failed=() crashed=()
for k in "${kernels[@]}"; do
	# filedeny.sh: the bpf-lsm deny lists (live update, audit, events);
	# once on an overlayfs root too, where st_dev is the overlay's.
	expect=1 backend=bpf-lsm filedeny=plain
	case $k in
	6.1) env=(VM_MODULES="$netmods") ;;
	6.12) env=(VM_KERNEL_PKG='linux-image-6.12.*-cloud-amd64-unsigned' VM_MODULES="overlay $netmods") filedeny="plain overlay" ;;
	sid) env=(VM_APT_SUITE=sid VM_MODULES="$netmods") ;;
	nobpf) env=(VM_LSM=landlock,lockdown,yama VM_MODULES="$netmods") expect=0 backend=landlock filedeny= ;;
	*) echo "vmtest: unknown kernel $k (6.1, 6.12, sid, nobpf)" >&2; exit 2 ;;
	esac
	echo "=== vmtest: kernel $k"
	cmd="uname -r; RAUHA_EXPECT_LSM=$expect bpf.test -test.v -test.count=1 ${VMTEST_FLAGS:-}; s=\$?"
	if [ "$matrix" = 1 ]; then
		cmd="$cmd; RAUHA=$bins BACKEND=$backend IP=${iproute:-ip} bash /payload/bin/matrix.sh || s=1"
		for v in $filedeny; do
			cmd="$cmd; FILEDENY_OVERLAY=$([ "$v" = overlay ] && echo 1 || echo 0) RUNTIME=$bins bash /payload/bin/filedeny.sh || s=1"
		done
	fi
	# A guest kernel that crashes after the command started (lane status
	# 125 with an oops on the console) gets one more boot: a crash inside
	# the kernel under emulation has been seen once in the verifier, and
	# passed when run again. It is reported, and a second crash fails.
	for attempt in 1 2; do
		rc=0
		env "${env[@]}" VM_BINS="$vmbins" VM_TIMEOUT="${VM_TIMEOUT:-900}" bash "$lane" "$payload" "$cmd; exit \$s" |
			tee "$payload/console.log" || rc=${PIPESTATUS[0]}
		crash=$(grep -aE 'Kernel panic|double fault|BUG: |Oops: |general protection fault' "$payload/console.log" | head -n 5 || true)
		[ "$rc" = 125 ] && [ -n "$crash" ] && [ "$attempt" = 1 ] || break
		echo "=== vmtest: kernel $k: THE GUEST KERNEL CRASHED; running this kernel once more. The crash:"
		echo "$crash"
		crashed+=("$k")
	done
	if [ "$rc" = 0 ]; then
		echo "=== vmtest: kernel $k PASS"
	else
		echo "=== vmtest: kernel $k FAIL ($rc)"
		failed+=("$k")
	fi
done
if [ ${#crashed[@]} -gt 0 ]; then
	echo "vmtest: the guest kernel crashed once and the kernel was run again on: ${crashed[*]}" >&2
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "vmtest: failed on: ${failed[*]}" >&2
	exit 1
fi
