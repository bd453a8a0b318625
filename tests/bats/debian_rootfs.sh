#!/usr/bin/env bash
# debian_rootfs.sh: print the path of a cached tarball of a Debian rootfs
# (debootstrap --variant=minbase plus what standard.bats runs in it: busybox
# for httpd, tcc with libc6-dev for compiling), building it the first time.
#
# The cache is keyed by suite, architecture and package list, so CI builds
# it once; a concurrent second caller waits on the lock and reuses it.
# Needs debootstrap (apt-get install debootstrap) and a Debian mirror.
#
# Env: RAUHA_DEBIAN_SUITE (default bookworm), RAUHA_DEBIAN_MIRROR (default
# http://deb.debian.org/debian), RAUHA_DEBIAN_CACHE (/var/cache/rauha-debian).
set -euo pipefail

suite=${RAUHA_DEBIAN_SUITE:-bookworm}
mirror=${RAUHA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${RAUHA_DEBIAN_CACHE:-/var/cache/rauha-debian}
packages=busybox,tcc,libc6-dev
arch=$(dpkg --print-architecture)
key=$(printf '%s' "$packages" | sha256sum | cut -c1-12)
tarball=$cache/$suite-$arch-minbase-$key.tar

if [[ -s $tarball ]]; then
	echo "$tarball"
	exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [[ ! -s $tarball ]]; then
	tmp=$(mktemp -d "$cache/build.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	if ! debootstrap --variant=minbase --include="$packages" "$suite" "$tmp/root" "$mirror" >"$tmp/log" 2>&1; then
		tail -n 20 "$tmp/log" >&2
		echo "debootstrap $suite from $mirror failed (log above)" >&2
		exit 1
	fi
	# Package lists and downloaded .debs are not part of an image.
	rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
	tar -C "$tmp/root" --numeric-owner -cf "$tmp/rootfs.tar" .
	mv "$tmp/rootfs.tar" "$tarball"
fi
echo "$tarball"
