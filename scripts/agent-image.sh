#!/usr/bin/env bash
# Packs a static rauha-agent into a minimal OCI image (one layer, the binary
# alone: the agent execs nothing) as an OCI image-layout tar, for `ctr -n
# k8s.io images import` on a node or `skopeo copy oci-archive:OUT docker://...`
# into a registry. deploy/agent.yaml runs the image.
#
#   scripts/agent-image.sh BINARY OUT [NAME]     # NAME: localhost/rauha-agent:latest
set -euo pipefail

bin=${1:?usage: agent-image.sh BINARY OUT [NAME]}
out=${2:?usage: agent-image.sh BINARY OUT [NAME]}
name=${3:-localhost/rauha-agent:latest}

if ldd "$bin" >/dev/null 2>&1; then
	echo "agent-image: $bin is linked dynamically: the image has no libc (build it with 'make agent')" >&2
	exit 1
fi

dir=$(mktemp -d /tmp/rauha-agent-image.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/rootfs/usr/local/bin" "$dir/rootfs/tmp" "$dir/oci/blobs/sha256"
install -m 0755 "$bin" "$dir/rootfs/usr/local/bin/rauha-agent"
chmod 1777 "$dir/rootfs/tmp"
# A reproducible layer: fixed owners, times and order.
tar -C "$dir/rootfs" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$dir/layer.tar" usr tmp

arch=$(go env GOARCH 2>/dev/null || dpkg --print-architecture)
ldigest=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
lsize=$(stat -c %s "$dir/layer.tar")
mv "$dir/layer.tar" "$dir/oci/blobs/sha256/$ldigest"
# uncompressed layer: its diff id is its digest
cfg=$(jq -cn --arg arch "$arch" --arg diffid "sha256:$ldigest" '{architecture: $arch, os: "linux",
	config: {Entrypoint: ["/usr/local/bin/rauha-agent"], Cmd: ["run"]},
	rootfs: {type: "layers", diff_ids: [$diffid]}}')
cdigest=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
printf '%s' "$cfg" >"$dir/oci/blobs/sha256/$cdigest"
m=$(jq -cn --arg c "sha256:$cdigest" --argjson cs "${#cfg}" --arg l "sha256:$ldigest" --argjson ls "$lsize" '{schemaVersion: 2,
	mediaType: "application/vnd.oci.image.manifest.v1+json",
	config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
	layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}')
mdigest=$(printf '%s' "$m" | sha256sum | cut -d' ' -f1)
printf '%s' "$m" >"$dir/oci/blobs/sha256/$mdigest"
jq -cn --arg d "sha256:$mdigest" --argjson s "${#m}" --arg n "$name" --arg arch "$arch" '{schemaVersion: 2, manifests: [{
	mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $d, size: $s,
	platform: {architecture: $arch, os: "linux"},
	annotations: {"io.containerd.image.name": $n, "org.opencontainers.image.ref.name": ($n | sub(".*:"; ""))}}]}' \
	>"$dir/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$dir/oci/oci-layout"
tar -C "$dir/oci" -cf "$out" oci-layout index.json blobs
echo "$name"
