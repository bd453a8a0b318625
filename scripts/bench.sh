#!/usr/bin/env bash
# bench.sh - `make bench`: rauha against runc on this machine (issue 6).
# Builds the bench driver (tests/bench, statically linked so it also runs
# inside the busybox bundle as the probe), a busybox bundle, and runc 1.5
# when it is missing (into a cache dir, never the repository), then runs
# the driver: a markdown table on stdout, JSON in $OUT.
#
# Environment: RAUHA (default ./rauha), RUNC115 (/usr/sbin/runc),
# RUNC15_VERSION (v1.5.0; empty = compare with runc 1.1.5 only),
# CACHE (~/.cache/rauha-bench), OUT (bench.json), CG_PREFIX (/rauha-bench),
# BENCH_ARGS (extra driver flags, e.g. "-n 10 -scale 1,100 -skip probe").
# Not part of CI: it takes several minutes and needs root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
RAUHA=$(readlink -f "${RAUHA:-./rauha}")
RUNC115=${RUNC115:-/usr/sbin/runc}
RUNC15_VERSION=${RUNC15_VERSION-v1.5.0}
CACHE=${CACHE:-$HOME/.cache/rauha-bench}
OUT=${OUT:-bench.json}
CG_PREFIX=${CG_PREFIX:-/rauha-bench}
[[ $(id -u) == 0 ]] || { echo "bench: needs root" >&2; exit 1; }
[[ -x $RAUHA ]] || { echo "bench: $RAUHA missing (make build)" >&2; exit 1; }

mkdir -p "$CACHE/bin"
runcs="runc-1.1.5=$RUNC115"
if [[ -n $RUNC15_VERSION ]]; then
	runc15=$CACHE/runc-$RUNC15_VERSION/runc
	if [[ ! -x $runc15 ]]; then
		echo "bench: building runc $RUNC15_VERSION into $CACHE (cgo, libseccomp-dev)" >&2
		if GOBIN=$CACHE/runc-$RUNC15_VERSION CGO_ENABLED=1 GOFLAGS=-tags=seccomp \
			go install "github.com/opencontainers/runc@$RUNC15_VERSION" >"$CACHE/runc-build.log" 2>&1; then :
		else
			echo "bench: runc $RUNC15_VERSION does not build here (see $CACHE/runc-build.log); comparing with 1.1.5 only" >&2
		fi
	fi
	[[ -x $runc15 ]] && runcs+=",runc-${RUNC15_VERSION#v}=$runc15"
fi

WORK=$(mktemp -d /run/rauha-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$WORK/rauhabench" ./tests/bench
RAUHA=$RAUHA CGROUPS_PATH="$CG_PREFIX/base" ./scripts/make-bundle.sh "$WORK/bundle" >/dev/null
cp "$WORK/rauhabench" "$WORK/bundle/rootfs/rauhabench"
# Every runtime binary starts from the page cache in the same state: evicted,
# then read back by the first call. A binary the Go linker has just written
# sits in the cache as 2 MiB folios that the kernel maps whole (PMD), which
# makes its calls faster and their peak RSS 3-4 MiB larger than those of a
# binary read from disk, as /usr/sbin/runc is.
for bin in "$RAUHA" "${RUNC115}" ${runc15:+"$runc15"}; do
	[[ -x $bin ]] || continue
	sync "$bin"
	dd if="$bin" iflag=nocache count=0 status=none
done
# shellcheck disable=SC2086 # BENCH_ARGS are flags, split on purpose
"$WORK/rauhabench" -rauha "$RAUHA" -runc "$runcs" -bundle "$WORK/bundle" \
	-work "$WORK/run" -cgroup-prefix "$CG_PREFIX" -out "$OUT" ${BENCH_ARGS:-}
