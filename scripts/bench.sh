#!/usr/bin/env bash
# bench.sh - `make bench`: rauha against runc on this machine (issue 6).
# Builds the bench driver (tests/bench, statically linked so it also runs
# inside the busybox bundle as the probe), a busybox bundle, and runc 1.5
# when it is missing (into a cache dir, never the repository), makes two
# network namespaces joined by a veth pair with the network part's listener
# in one, and two bridges with a namespace each for the zone-to-zone part's
# runc pair (all removed at exit, also on failure), then runs the driver: a
# markdown table on stdout, JSON in $OUT.
#
# Environment: RAUHA (default ./rauha), RUNC115 (/usr/sbin/runc),
# RUNC15_VERSION (v1.5.0; empty = compare with runc 1.1.5 only),
# CACHE (~/.cache/rauha-bench), OUT (bench.json), CG_PREFIX (/rauha-bench),
# BENCH_ARGS (extra driver flags, e.g. "-n 10 -scale 1,100 -skip probe"),
# BASE_RAUHA (another rauha build: its lifecycle rows, base-rauha-*, in the
# same run, e.g. the parent commit's binary).
# Not part of CI: it takes several minutes and needs root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
RAUHA=$(readlink -f "${RAUHA:-./rauha}")
BASE_RAUHA=${BASE_RAUHA:+$(readlink -f "$BASE_RAUHA")}
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
# The network part's two namespaces, named after this run: the client's
# (the containers join it) and the listener's, joined by a veth pair. No
# other namespace and no address of the host is involved.
NS_CLIENT=rauha-bench-$$-c
NS_SERVER=rauha-bench-$$-s
NET_ADDR=10.231.0.2:5201
# The zone-to-zone part's path without rauha: for each side (a: the
# client's, b: the listener's) a bridge of this run, a veth pair into a
# namespace the runc container joins, the bridge's address as its gateway
# and forwarding on, as rauha wires a bridged zone; the host routes
# between the two bridges. ZNET_SUBNET.1 and .2 are the a and b /24s.
ZNET_SUBNET=10.235
ZNET_ADDR=$ZNET_SUBNET.2.2:5201
server=
cleanup() {
	if [[ -n $server ]]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	ip netns del "$NS_CLIENT" 2>/dev/null || true
	ip netns del "$NS_SERVER" 2>/dev/null || true
	for side in a b; do
		ip netns del "rauha-bench-$$-z$side" 2>/dev/null || true
		ip link del "rbz$$$side" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
CGO_ENABLED=0 go build -trimpath -o "$WORK/rauhabench" ./tests/bench
RAUHA=$RAUHA CGROUPS_PATH="$CG_PREFIX/base" ./scripts/make-bundle.sh "$WORK/bundle" >/dev/null
cp "$WORK/rauhabench" "$WORK/bundle/rootfs/rauhabench"
# Every runtime binary starts from the page cache in the same state: evicted,
# then read back by the first call. A binary the Go linker has just written
# sits in the cache as 2 MiB folios that the kernel maps whole (PMD), which
# makes its calls faster and their peak RSS 3-4 MiB larger than those of a
# binary read from disk, as /usr/sbin/runc is.
for bin in "$RAUHA" ${BASE_RAUHA:+"$BASE_RAUHA"} "${RUNC115}" ${runc15:+"$runc15"}; do
	[[ -x $bin ]] || continue
	sync "$bin"
	dd if="$bin" iflag=nocache count=0 status=none
done

ip netns add "$NS_CLIENT"
ip netns add "$NS_SERVER"
ip link add bench0 netns "$NS_CLIENT" type veth peer name bench0 netns "$NS_SERVER"
ip -n "$NS_CLIENT" addr add 10.231.0.1/24 dev bench0
ip -n "$NS_SERVER" addr add "${NET_ADDR%:*}/24" dev bench0
for ns in "$NS_CLIENT" "$NS_SERVER"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set bench0 up
done
n=1
for side in a b; do
	ns=rauha-bench-$$-z$side br=rbz$$$side
	ip netns add "$ns"
	ip link add "$br" type bridge
	ip link add "rbv$$$side" type veth peer name eth0 netns "$ns"
	ip link set "rbv$$$side" master "$br" up
	ip addr add "$ZNET_SUBNET.$n.1/24" dev "$br"
	echo 1 >"/proc/sys/net/ipv4/conf/$br/forwarding"
	ip link set "$br" up
	ip -n "$ns" link set lo up
	ip -n "$ns" link set eth0 addrgenmode none
	ip -n "$ns" addr add "$ZNET_SUBNET.$n.2/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via "$ZNET_SUBNET.$n.1"
	n=$((n + 1))
done
ip netns exec "$NS_SERVER" "$WORK/rauhabench" netserve "$NET_ADDR" >"$WORK/netserve.out" 2>&1 &
server=$!
for _ in $(seq 100); do
	grep -qx ready "$WORK/netserve.out" && break
	kill -0 "$server" 2>/dev/null || break
	sleep 0.05
done
grep -qx ready "$WORK/netserve.out" || { echo "bench: the listener did not start: $(cat "$WORK/netserve.out")" >&2; exit 1; }

# shellcheck disable=SC2086 # BENCH_ARGS are flags, split on purpose
"$WORK/rauhabench" -rauha "$RAUHA" -runc "$runcs" -bundle "$WORK/bundle" \
	-work "$WORK/run" -cgroup-prefix "$CG_PREFIX" -out "$OUT" \
	-net-netns "/run/netns/$NS_CLIENT" -net-addr "$NET_ADDR" \
	-zonenet-netns "/run/netns/rauha-bench-$$-za,/run/netns/rauha-bench-$$-zb" -zonenet-addr "$ZNET_ADDR" \
	${BASE_RAUHA:+-base-rauha "$BASE_RAUHA"} ${BENCH_ARGS:-}
