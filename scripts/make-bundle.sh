#!/usr/bin/env bash
# make-bundle.sh DIR [CMD...] - a minimal OCI bundle from Debian's static
# busybox: DIR/rootfs (busybox and its applets, /etc/passwd and /etc/group)
# and DIR/config.json ("rauha spec" changed to run CMD without a terminal, in
# the absolute cgroup CGROUPS_PATH, default /rauha-demo/<basename DIR>).
# No image is pulled: this is the bundle the demo and the benchmark use.
set -euo pipefail
DIR=$1; shift
[[ $# -gt 0 ]] || set -- sh
RAUHA=${RAUHA:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/rauha}
BUSYBOX=${BUSYBOX:-/bin/busybox}
CGROUPS_PATH=${CGROUPS_PATH:-/rauha-demo/$(basename "$DIR")}
file -L "$BUSYBOX" | grep -q 'statically linked' || { echo "make-bundle: $BUSYBOX is not a static busybox (apt-get install busybox-static)" >&2; exit 1; }

mkdir -p "$DIR/rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,run,var}
cp "$BUSYBOX" "$DIR/rootfs/bin/busybox"
for applet in $("$BUSYBOX" --list-full); do
	[[ -e $DIR/rootfs/$applet ]] || ln -s /bin/busybox "$DIR/rootfs/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$DIR/rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$DIR/rootfs/etc/group"
chmod 1777 "$DIR/rootfs/tmp"

rm -f "$DIR/config.json"
"$RAUHA" spec --bundle "$DIR"
args=$(printf '%s\n' "$@" | jq -R . | jq -s .)
jq --argjson args "$args" --arg cg "$CGROUPS_PATH" '
	.process.terminal = false | .process.args = $args | .root.readonly = false |
	.hostname = "rauha" | .linux.cgroupsPath = $cg' "$DIR/config.json" >"$DIR/config.json.new"
mv "$DIR/config.json.new" "$DIR/config.json"
