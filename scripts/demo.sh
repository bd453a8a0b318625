#!/usr/bin/env bash
# demo.sh - Rauha's main job, from a fresh Debian 12 machine: install what is
# missing, build rauha, then run a busybox container (no image pull) in an
# enforced zone, show one operation the zone denies, the event it left, and
# the zone's verify report. Everything it creates is removed at the end.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[[ -x /usr/local/go/bin/go ]] && export PATH=/usr/local/go/bin:$PATH
bash scripts/setup-debian.sh >/dev/null
make build >/dev/null

WORK=$(mktemp -d /tmp/rauha-demo.XXXXXX)
ROOT=$WORK/state
R=("$REPO/rauha" --root "$ROOT")
cleanup() {
	"${R[@]}" delete --force demo-box >/dev/null 2>&1 || true
	"${R[@]}" zone delete --force demo >/dev/null 2>&1 || true
	"${R[@]}" zone reconcile >/dev/null 2>&1 || true
	rmdir /sys/fs/cgroup/*/rauha-demo/demo-box /sys/fs/cgroup/*/rauha-demo 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

CGROUPS_PATH=/rauha-demo/demo-box scripts/make-bundle.sh "$WORK/bundle" sleep 3600
echo 'root:$6$secret:19000:0:99999:7:::' >"$WORK/bundle/rootfs/etc/shadow"
jq '.annotations = {"org.rauha.zone": "demo"}' "$WORK/bundle/config.json" >"$WORK/c" && mv "$WORK/c" "$WORK/bundle/config.json"
cat >"$WORK/policy.toml" <<'TOML'
[zone]
mode = "enforce"
admission = "audit"
[capabilities]
allowed = ["CHOWN", "SETUID", "SETGID"]
[filesystem]
writable_paths = ["/tmp"]
deny = ["/etc/shadow"]
[network]
allowed_egress = []
TOML

say "cat policy.toml"; cat "$WORK/policy.toml"
say "rauha zone create demo --policy policy.toml"; "${R[@]}" zone create demo --policy "$WORK/policy.toml"
say "rauha run -d --bundle bundle demo-box   # annotation org.rauha.zone=demo"
"${R[@]}" run -d --bundle "$WORK/bundle" demo-box 2> >(grep -v 'level=warning' >&2)
"${R[@]}" list
say "rauha exec demo-box cat /etc/passwd      # allowed"
"${R[@]}" exec demo-box cat /etc/passwd 2>/dev/null
say "rauha exec demo-box cat /etc/shadow      # denied by the zone"
"${R[@]}" exec demo-box cat /etc/shadow 2>&1 | grep -v 'level=warning' || echo "(exit status $?)"
say "rauha exec demo-box sh -c 'echo x > /etc/motd'   # only /tmp is writable"
"${R[@]}" exec demo-box sh -c 'echo x > /etc/motd' 2>&1 | grep -v 'level=warning' || true
say "rauha zone events demo"; "${R[@]}" zone events demo
say "rauha zone verify demo"; "${R[@]}" zone verify demo
say "rauha zone verify demo --format json"; "${R[@]}" zone verify demo --format json | jq -c '{zone, model, backend, isolated, checks: (.checks | length)}'
