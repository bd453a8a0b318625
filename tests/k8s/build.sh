#!/usr/bin/env bash
# Builds the Kubernetes binaries the k8s test stage runs (kube-apiserver,
# kubelet, kubectl) from the Go module proxy, and unpacks etcd from Debian's
# etcd-server package. Everything lands in $K8S_CACHE/bin and is built only
# when missing: a cold build takes minutes, a warm one nothing.
#
#   tests/k8s/build.sh            # prints the bin directory on the last line
#
# Environment: K8S_VERSION (v1.37.2), K8S_CACHE (/var/cache/rauha-k8s/$K8S_VERSION),
# GO (go on PATH, else /usr/local/go/bin/go).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
K8S_CACHE=${K8S_CACHE:-/var/cache/rauha-k8s/$K8S_VERSION}
BIN=$K8S_CACHE/bin
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

# The staging modules k8s.io/kubernetes replaces with ./staging/src/k8s.io/X
# are published as k8s.io/X v0.<minor>.<patch>: the same code, tagged with
# the release.
minor_patch=${K8S_VERSION#v1.}
STAGING_VERSION=v0.$minor_patch

log() { printf 'k8s-build: %s\n' "$*" >&2; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

mkdir -p "$BIN"
# One build at a time per cache (parallel runs on one machine share it).
exec 9>"$K8S_CACHE/.lock"
flock 9

build_kube() {
	local missing=() b
	for b in kube-apiserver kubelet kubectl; do
		[[ -x $BIN/$b ]] || missing+=("$b")
	done
	if ((${#missing[@]} == 0)); then
		log "kube binaries cached in $BIN"
		return
	fi

	local t0 src moddir
	t0=$(now)
	src=$K8S_CACHE/src
	if [[ ! -f $src/.ready ]]; then
		log "downloading k8s.io/kubernetes@$K8S_VERSION"
		moddir=$(GOFLAGS=-mod=mod "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		[[ -d $moddir ]] || { log "go mod download gave no directory"; exit 1; }
		rm -rf "$src"
		cp -r "$moddir" "$src"
		chmod -R u+w "$src"
		# The module zip carries neither staging/src nor a usable vendor
		# tree: point every staging replace at the published module.
		rm -rf "$src/go.work" "$src/go.work.sum" "$src/vendor"
		sed -i -E "s#^([[:space:]]*k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$#\1 => \1 $STAGING_VERSION#" "$src/go.mod"
		if grep -q '=> ./staging' "$src/go.mod"; then
			log "go.mod still replaces with ./staging:"
			grep '=> ./staging' "$src/go.mod" >&2
			exit 1
		fi
		touch "$src/.ready"
		log "source ready in $(elapsed "$t0") s"
	fi

	# Without these the binaries report v0.0.0-master+$Format:%H$, which
	# `kubectl version` cannot parse.
	local pkg ldflags=("-s" "-w")
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=("-X" "$pkg.gitVersion=$K8S_VERSION"
			"-X" "$pkg.gitMajor=1"
			"-X" "$pkg.gitMinor=${minor_patch%%.*}"
			"-X" "$pkg.gitTreeState=clean"
			"-X" "$pkg.buildDate=1970-01-01T00:00:00Z")
	done

	local t1 pkgs=()
	for b in "${missing[@]}"; do pkgs+=("./cmd/$b"); done
	t1=$(now)
	log "building ${missing[*]} (several minutes on 2 cores with an empty Go build cache)"
	(cd "$src" && GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
		"$GO" build -ldflags "${ldflags[*]}" -o "$BIN/.tmp/" "${pkgs[@]}")
	for b in "${missing[@]}"; do mv "$BIN/.tmp/$b" "$BIN/$b"; done
	rmdir "$BIN/.tmp"
	log "built ${missing[*]} in $(elapsed "$t1") s"
}

fetch_etcd() {
	if [[ -x $BIN/etcd ]]; then
		log "etcd cached in $BIN"
		return
	fi
	local t0 tmp
	t0=$(now)
	tmp=$(mktemp -d)
	# apt-get download fetches the .deb without installing its service.
	(cd "$tmp" && apt-get download -q etcd-server >&2)
	dpkg-deb -x "$tmp"/etcd-server_*.deb "$tmp/root"
	install -m 0755 "$tmp/root/usr/bin/etcd" "$BIN/etcd"
	rm -rf "$tmp"
	log "etcd unpacked in $(elapsed "$t0") s"
}

t_all=$(now)
fetch_etcd
build_kube
log "done in $(elapsed "$t_all") s"
echo "$BIN"
