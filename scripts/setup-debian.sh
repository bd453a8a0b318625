#!/usr/bin/env bash
# setup-debian.sh - install what building and testing Rauha needs on Debian 12.
# Run as root. Idempotent and quick when everything is already there: apt is
# only called when a package is missing.
set -euo pipefail

PACKAGES=(
	# build
	gcc make pkg-config git ca-certificates libseccomp-dev
	# eBPF objects (bpf2go)
	clang llvm libbpf-dev bpftool
	# end-to-end tests
	bats busybox-static jq iproute2 time file procps bsdutils util-linux
	# bridged.bats reads rauha's nftables table with nft
	nftables
	# the Debian image of standard.bats (tests/bats/debian_rootfs.sh)
	debootstrap
	# reference runtime for comparison runs and benchmarks
	runc
	# the VM lane (tests/vm/run-in-vm.sh, bpf/vmtest.sh): QEMU guests booted
	# from Debian kernel packages, modules unpacked with xz
	qemu-system-x86 cpio bash-static xz-utils
	# the arm64 cross-build (scripts/test-all.sh "cross"): the static cgo
	# binary links libseccomp.a of arm64; qemu-user runs it once
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross libseccomp-dev:arm64 qemu-user
)
GO_MIN=1.26

log() { echo "setup-debian: $*"; }

if [[ $EUID -ne 0 ]]; then
	echo "setup-debian: run as root (apt-get install and the end-to-end tests need it)" >&2
	exit 1
fi

# libseccomp-dev:arm64 comes from the arm64 architecture of the same archive.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	log "adding the arm64 architecture (for libseccomp-dev:arm64)"
	dpkg --add-architecture arm64
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
	log "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
else
	log "all ${#PACKAGES[@]} packages present"
fi

# Go is not taken from Debian (bookworm ships 1.19): it must be installed
# from the official tarball.
GO=$(command -v go || true)
[[ -z $GO && -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go
if [[ -z $GO ]]; then
	cat >&2 <<MSG
setup-debian: Go >= $GO_MIN is required and was not found on PATH or in /usr/local/go/bin.
  Install it from the official release tarball, e.g.:
    tar -C /usr/local -xzf go1.26.x.linux-amd64.tar.gz && export PATH=/usr/local/go/bin:\$PATH
MSG
	exit 1
fi
ver=$("$GO" env GOVERSION) # e.g. go1.26.8
ver=${ver#go}
IFS=. read -r major minor _ <<<"$ver"
IFS=. read -r want_major want_minor <<<"$GO_MIN"
if ((major < want_major || (major == want_major && minor < want_minor))); then
	echo "setup-debian: $GO is go$ver; Rauha needs Go >= $GO_MIN. Install a newer Go into /usr/local/go." >&2
	exit 1
fi
log "go $ver at $GO"

if ! file -L /bin/busybox | grep -q 'statically linked'; then
	echo "setup-debian: /bin/busybox is not static (busybox-static must be installed, not busybox)" >&2
	exit 1
fi
# Built here, once, so that no bats test waits minutes for debootstrap (a
# cached build is a file test).
log "Debian rootfs for standard.bats: $("$(dirname "${BASH_SOURCE[0]}")/../tests/bats/debian_rootfs.sh")"
log "ready"
