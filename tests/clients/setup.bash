# setup.bash - installs, configures, starts and tears down the real clients
# (podman 4.3 + conmon, docker 20.10 + containerd 1.6, containerd CRI + crictl)
# with the runtime under test, for podman.bats, docker.bats and cri.bats.
#
# Everything lives in private places so a system-wide podman/docker/containerd
# (or tools/docker-smoke.sh) is never touched:
#   podman:  CONTAINERS_CONF / CONTAINERS_STORAGE_CONF under $H_RUN/clients-podman,
#            storage under $H_LIB/clients-podman, CNI network "rauha-podman" on
#            bridge rauha-pm0 (10.89.66.1/24)
#   docker:  containerd + dockerd on sockets under $H_RUN/clients-docker, daemon
#            config passed with --config-file (/etc/docker/daemon.json untouched),
#            default bridge = rauha-dk0 (10.89.68.1/24), no iptables/forwarding
#   cri:     containerd with the CRI plugin on $H_RUN/clients-cri/containerd.sock,
#            runtime handler "rauha", CNI network "rauha-cri" on bridge rauha-cri0
#            (10.89.67.1/24), pod cgroup parent /rauha-test-cri
# The bridges are made here with their host address and used by CNI/dockerd
# with isGateway=false / "bridge": so nothing turns on ip_forward or adds
# iptables rules; containers reach only the host's bridge address.
# Daemons run in the background without systemd; their pids are recorded in
# pid files and only those pids are ever signalled.
#
# Run directly to install what is missing: bash tests/clients/setup.bash install

# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

CRICTL_VERSION=${CRICTL_VERSION:-v1.34.0}
DOCKER=/usr/bin/docker # the 20.10 CLI matching dockerd (/usr/local/bin/docker may be another version)

P_RUN=$H_RUN/clients-podman
P_LIB=$H_LIB/clients-podman
P_BRIDGE=rauha-pm0 P_GW=10.89.66.1 P_SUBNET=10.89.66.0/24 P_NET=rauha-podman
# P_NETNS: the network namespace podman runs in (a client_netns), or the host's
P_NETNS=
PODMAN=(podman)
export CONTAINERS_CONF=$P_RUN/containers.conf
export CONTAINERS_STORAGE_CONF=$P_RUN/storage.conf

D_RUN=$H_RUN/clients-docker
D_LIB=$H_LIB/clients-docker
D_BRIDGE=rauha-dk0 D_GW=10.89.68.1
D_CTRD_SOCK=$D_RUN/containerd.sock
export DOCKER_HOST=unix://$D_RUN/docker.sock
D_EXEC_ROOT=$D_RUN/exec
# docker 20.10 gives the shim Root=<exec-root>/runtime-<name>; the shim appends the namespace
D_RT_ROOT=$D_EXEC_ROOT/runtime-rauha/moby
D_TASKS=$D_RUN/containerd-state/io.containerd.runtime.v2.task/moby

C_RUN=$H_RUN/clients-cri
C_LIB=$H_LIB/clients-cri
C_BRIDGE=rauha-cri0 C_GW=10.89.67.1 C_SUBNET=10.89.67.0/24 C_NET=rauha-cri
# C_NETNS: the network namespace containerd runs in (a client_netns), or the host's
C_NETNS=
C_SOCK=$C_RUN/containerd.sock
C_RT_ROOT=$C_RUN/runtime-rauha/k8s.io
C_TASKS=$C_RUN/containerd-state/io.containerd.runtime.v2.task/k8s.io
C_CGROUP=/rauha-test-cri
CRICTL=(crictl --config "$C_RUN/crictl.yaml")

# ---------------------------------------------------------------- install

# clients_install: apt-get the missing clients, go-install crictl if missing.
clients_install() {
	local -A pkg=([podman]=podman [conmon]=conmon [/usr/lib/cni/bridge]=containernetworking-plugins
		[/usr/bin/docker]=docker.io [dockerd]=docker.io [containerd]=containerd
		[containerd-shim-runc-v2]=containerd [ctr]=containerd [tini]=tini
		[/bin/busybox]=busybox-static [jq]=jq [script]=bsdutils)
	local want=() c
	for c in "${!pkg[@]}"; do
		if [[ $c == /* ]]; then [[ -x $c ]] || want+=("${pkg[$c]}"); else command -v "$c" >/dev/null || want+=("${pkg[$c]}"); fi
	done
	if ((${#want[@]})); then
		echo "# apt-get install ${want[*]}" >&2
		apt-get update -qq >&2 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
				$(printf '%s\n' "${want[@]}" | sort -u) >&2 || return 1
	fi
	if ! command -v crictl >/dev/null; then
		# The Go module proxy serves cri-tools v1.34+ only; those speak CRI v1,
		# which containerd 1.6 serves next to v1alpha2.
		echo "# go install crictl $CRICTL_VERSION into $CLIENTS_BIN" >&2
		mkdir -p "$CLIENTS_BIN"
		(cd /tmp && GOBIN=$CLIENTS_BIN GOFLAGS=-buildvcs=false nice go install -p 1 \
			"sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION") >&2 || return 1
	fi
}

# ---------------------------------------------------------------- images

# make_rootfs DIR: a busybox-static root filesystem (applet symlinks, passwd/group).
make_rootfs() {
	local root=$1 applet
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,run,var/tmp,home}
	chmod 1777 "$root/tmp" "$root/var/tmp"
	chmod 0700 "$root/root"
	install -m 0755 /bin/busybox "$root/bin/busybox"
	while read -r applet; do
		[[ -z $applet || $applet == bin/busybox ]] && continue
		mkdir -p "$root/$(dirname "$applet")"
		ln -sfn /bin/busybox "$root/$applet"
	done < <(/bin/busybox --list-full)
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/bin/false' \
		'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$root/etc/passwd"
	printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'tty:x:5:' 'nogroup:x:65534:' >"$root/etc/group"
	: >"$root/etc/hosts"
	: >"$root/etc/resolv.conf"
	: >"$root/etc/hostname"
}

# rootfs_tar OUT: tar of a fresh busybox rootfs (numeric owners, stable order).
rootfs_tar() {
	local out=$1 dir
	dir=$(mktemp -d /tmp/rauha-clients-rootfs.XXXXXX)
	make_rootfs "$dir/rootfs"
	tar --numeric-owner --sort=name -C "$dir/rootfs" -cf "$out" .
	rm -rf "$dir"
}

# oci_archive LAYER_TAR OUT: an OCI image-layout tar holding $IMAGE_NAME (CMD sh)
# and $PAUSE_NAME (the CRI sandbox image: busybox sleeping forever) on one layer,
# named with io.containerd.image.name for `ctr images import`.
oci_archive() {
	local layer=$1 out=$2 dir arch ldigest lsize diffid manifests="" name cmd cfg cdigest m mdigest
	dir=$(mktemp -d /tmp/rauha-clients-oci.XXXXXX)
	mkdir -p "$dir/blobs/sha256"
	arch=$(dpkg --print-architecture 2>/dev/null || go env GOARCH)
	ldigest=$(sha256sum "$layer" | cut -d' ' -f1)
	lsize=$(stat -c %s "$layer")
	diffid=sha256:$ldigest # uncompressed layer: diff id == digest
	cp "$layer" "$dir/blobs/sha256/$ldigest"
	for name in "$IMAGE_NAME" "$PAUSE_NAME"; do
		if [[ $name == "$PAUSE_NAME" ]]; then cmd='["/bin/sleep","infinity"]'; else cmd='["/bin/sh"]'; fi
		cfg=$(jq -cn --arg arch "$arch" --arg diffid "$diffid" --argjson cmd "$cmd" '{architecture: $arch, os: "linux",
			config: {Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], Cmd: $cmd},
			rootfs: {type: "layers", diff_ids: [$diffid]}}')
		cdigest=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
		printf '%s' "$cfg" >"$dir/blobs/sha256/$cdigest"
		m=$(jq -cn --arg c "sha256:$cdigest" --argjson cs "${#cfg}" --arg l "sha256:$ldigest" --argjson ls "$lsize" '{schemaVersion: 2,
			mediaType: "application/vnd.oci.image.manifest.v1+json",
			config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
			layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}')
		mdigest=$(printf '%s' "$m" | sha256sum | cut -d' ' -f1)
		printf '%s' "$m" >"$dir/blobs/sha256/$mdigest"
		manifests+=$(jq -cn --arg d "sha256:$mdigest" --argjson s "${#m}" --arg n "$name" --arg arch "$arch" '{
			mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $d, size: $s,
			platform: {architecture: $arch, os: "linux"},
			annotations: {"io.containerd.image.name": $n, "org.opencontainers.image.ref.name": ($n | sub(".*:"; ""))}}')
	done
	jq -cs '{schemaVersion: 2, manifests: .}' <<<"$manifests" >"$dir/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$dir/oci-layout"
	tar -C "$dir" -cf "$out" oci-layout index.json blobs
	rm -rf "$dir"
}

# ---------------------------------------------------------------- plumbing

# make_bridge NAME ADDR/PREFIX [NETNS]: a Linux bridge carrying the host
# address (in network namespace NETNS when given).
make_bridge() {
	local ip=(ip ${3:+-n "$3"})
	"${ip[@]}" link show "$1" >/dev/null 2>&1 || "${ip[@]}" link add "$1" type bridge || return 1
	"${ip[@]}" addr replace "$2" dev "$1" && "${ip[@]}" link set "$1" up
}

# del_bridge NAME [NETNS]
del_bridge() {
	local ip=(ip ${2:+-n "$2"})
	! "${ip[@]}" link show "$1" >/dev/null 2>&1 || "${ip[@]}" link del "$1"
}

# cni_conflist NAME BRIDGE SUBNET GW: bridge + host-local IPAM, no gateway
# takeover (isGateway=false keeps ip_forward as it is), no masquerade, no
# routes: the kernel's link route covers the subnet. A route to the subnet
# via GW would be installed before the link route and win, so containers
# would send each other's packets to the bridge address, where a host that
# does not forward (ip_forward=0) drops them.
cni_conflist() {
	jq -n --arg name "$1" --arg br "$2" --arg subnet "$3" --arg gw "$4" '{
		cniVersion: "0.4.0", name: $name,
		plugins: [{type: "bridge", bridge: $br, isGateway: false, ipMasq: false, hairpinMode: true,
			ipam: {type: "host-local", ranges: [[{subnet: $subnet, gateway: $gw}]]}}]}'
}

# ---------------------------------------------------------------- a network of the test's own
# Suites that send traffic between containers run the client (podman, or
# containerd's CNI) inside a network namespace they create: the CNI bridge
# and its veths live there, so the host's links, its iptables/nftables rules
# and its bridge netfilter sysctls (net.bridge.bridge-nf-call-iptables with a
# FORWARD policy DROP that docker leaves behind drops bridged frames) are
# neither touched nor in the way. Only the network namespace changes
# (nsenter --net): `ip netns exec` would also give each call a mount
# namespace of its own, and podman's rootfs mounts would not outlive it.

# client_netns NAME: a network namespace with loopback up.
client_netns() {
	ip netns add "$1" && ip -n "$1" link set lo up
}

# del_client_netns NAME
del_client_netns() {
	! [[ -e /run/netns/$1 ]] || ip netns del "$1"
}

# start_daemon PIDFILE LOG CMD...: start CMD in the background (no inherited
# bats fds) and record its pid.
start_daemon() {
	local pidfile=$1 log=$2
	shift 2
	"$@" >"$log" 2>&1 </dev/null 3>&- 4>&- &
	echo $! >"$pidfile"
}

# stop_daemon PIDFILE PATTERN: stop the pid recorded in PIDFILE if its command
# line still contains PATTERN (pid reuse guard): TERM, then KILL after 20 s.
stop_daemon() {
	local pidfile=$1 pattern=$2 pid
	[[ -s $pidfile ]] || return 0
	pid=$(<"$pidfile")
	rm -f "$pidfile"
	[[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$pattern" || return 0
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	echo "# pid $pid ignored SIGTERM for 20 s; sending SIGKILL" >&2
	kill -KILL "$pid" 2>/dev/null
	return 0
}

# unmount_under DIR: unmount what is still mounted below a private harness dir.
unmount_under() {
	local m
	awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || echo "# could not unmount $m" >&2
	done
}

# note_cgroup_parent REL MARKER: remember whether REL existed before we ran.
note_cgroup_parent() { cgroup_exists "$1" || echo "$1" >>"$2"; }

# rm_noted_cgroups MARKER: remove the parents note_cgroup_parent recorded.
rm_noted_cgroups() {
	local rel
	[[ -f $1 ]] || return 0
	while read -r rel; do [[ -z $rel ]] || rm_cgroup_tree "$rel"; done <"$1"
}

# ---------------------------------------------------------------- podman

podman_setup() {
	clients_install || return 1
	mkdir -p "$P_RUN/cni" "$P_LIB"
	: >"$P_RUN/created-cgroups"
	note_cgroup_parent /libpod_parent "$P_RUN/created-cgroups"
	local nofile nproc driver t
	# root here has no CAP_SYS_RESOURCE: podman's defaults (nofile 1048576,
	# nproc above its own 32768 hard limit) make every runtime fail setrlimit
	nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
	[[ $nofile == unlimited || $nofile -gt 1048576 ]] && nofile=1048576
	[[ $nproc == unlimited || $nproc -gt 32768 ]] && nproc=32768
	cat >"$CONTAINERS_CONF" <<-EOF
		# written by tests/clients/setup.bash (private to the client suite)
		[containers]
		log_driver = "k8s-file"
		default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		events_logfile_path = "$P_RUN/events.log"
		tmp_dir = "$P_RUN/libpod"
		runtime = "rauha"

		[engine.runtimes]
		rauha = ["$RT"]

		[network]
		network_backend = "cni"
		network_config_dir = "$P_RUN/cni"
		cni_plugin_dirs = ["/usr/lib/cni"]
		default_network = "$P_NET"
	EOF
	driver=vfs
	if [[ -d $P_LIB/storage/overlay ]]; then
		driver=overlay
	elif [[ ! -d $P_LIB/storage/vfs ]]; then
		t=$(mktemp -d /var/tmp/rauha-ovl.XXXXXX) && mkdir -p "$t"/{l,u,w,m}
		mount -t overlay overlay -o "lowerdir=$t/l,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null &&
			umount "$t/m" && driver=overlay
		rm -rf "$t"
	fi
	cat >"$CONTAINERS_STORAGE_CONF" <<-EOF
		[storage]
		driver = "$driver"
		runroot = "$P_RUN/storage"
		graphroot = "$P_LIB/storage"
	EOF
	make_bridge "$P_BRIDGE" "$P_GW/24" "$P_NETNS" || return 1
	cni_conflist "$P_NET" "$P_BRIDGE" "$P_SUBNET" "$P_GW" >"$P_RUN/cni/$P_NET.conflist"
	if ! "${PODMAN[@]}" image exists "$IMAGE_NAME"; then
		rootfs_tar "$P_RUN/rootfs.tar" &&
			"${PODMAN[@]}" import --change 'CMD ["/bin/sh"]' "$P_RUN/rootfs.tar" "$IMAGE_NAME" >/dev/null || return 1
		rm -f "$P_RUN/rootfs.tar"
	fi
}

# forget_rauha_roots DIR: delete the zones of every rauha state root below
# DIR (the runtime roots a client gave rauha) and reconcile it, which removes
# its BPF pins once no zone is left. Pins outlive a removed root, and each
# pin directory keeps a host-wide tracepoint program attached.
forget_rauha_roots() {
	local db root z
	while IFS= read -r db; do
		root=${db%/rauha.db}
		for z in $(timeout 20 "$RT" --root "$root" zone list --format json 2>/dev/null | jq -r '.[].name' 2>/dev/null); do
			timeout 30 "$RT" --root "$root" zone delete --force "$z" >/dev/null 2>&1
		done
		timeout 30 "$RT" --root "$root" zone reconcile >/dev/null 2>&1 ||
			echo "# zone reconcile of $root failed: its BPF pins may be left behind" >&2
	done < <(find "$1" -name rauha.db 2>/dev/null)
}

podman_teardown() {
	local ids id
	ids=$("${PODMAN[@]}" ps -aq --no-trunc 2>/dev/null)
	"${PODMAN[@]}" rm -af -t 0 >/dev/null 2>&1
	"${PODMAN[@]}" rmi -af >/dev/null 2>&1
	for id in $ids; do
		rm_cgroup_tree "/libpod_parent/libpod-$id"
		rm_cgroup_tree "/libpod_parent/libpod-conmon-$id"
	done
	rm_noted_cgroups "$P_RUN/created-cgroups"
	del_bridge "$P_BRIDGE" "$P_NETNS"
	rm -rf "/var/lib/cni/networks/$P_NET"
	unmount_under "$P_LIB"
	forget_rauha_roots "$P_RUN"
	unmount_under "$P_RUN"
	rm -rf "$P_LIB" "$P_RUN"
}

# podman_config_json ID: the OCI config podman handed to the runtime.
podman_config_json() {
	echo "$("${PODMAN[@]}" inspect -f '{{.StaticDir}}' "$1")/config.json"
}

# ---------------------------------------------------------------- docker

docker_setup() {
	clients_install || return 1
	# daemons an aborted earlier run of this suite left behind (pid files are ours)
	stop_daemon "$D_RUN/dockerd.pid" "$D_RUN/daemon.json"
	stop_daemon "$D_RUN/containerd.pid" "$D_RUN/containerd.toml"
	mkdir -p "$D_RUN" "$D_LIB"
	: >"$D_RUN/created-cgroups"
	note_cgroup_parent /docker "$D_RUN/created-cgroups"
	cat >"$D_RUN/containerd.toml" <<-EOF
		version = 2
		root = "$D_LIB/containerd"
		state = "$D_RUN/containerd-state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$D_CTRD_SOCK"
		[ttrpc]
		  address = "$D_CTRD_SOCK.ttrpc"
	EOF
	jq -n --arg run "$D_RUN" --arg lib "$D_LIB" --arg exec "$D_EXEC_ROOT" --arg ctrd "$D_CTRD_SOCK" \
		--arg rt "$RT" --arg br "$D_BRIDGE" '{
		"data-root": ($lib + "/docker"), "exec-root": $exec, pidfile: ($run + "/docker.pid"),
		hosts: ["unix://" + $run + "/docker.sock"], containerd: $ctrd,
		"storage-driver": "overlay2", "exec-opts": ["native.cgroupdriver=cgroupfs"],
		bridge: $br, iptables: false, "ip-forward": false, "ip-masq": false,
		"log-driver": "json-file",
		"default-runtime": "rauha", runtimes: {rauha: {path: $rt}}}' >"$D_RUN/daemon.json"
	make_bridge "$D_BRIDGE" "$D_GW/24" || return 1
	start_daemon "$D_RUN/containerd.pid" "$D_RUN/containerd.log" containerd --config "$D_RUN/containerd.toml"
	wait_for 20 ctr --address "$D_CTRD_SOCK" version || { tail -20 "$D_RUN/containerd.log" >&2; return 1; }
	start_daemon "$D_RUN/dockerd.pid" "$D_RUN/dockerd.log" dockerd --config-file "$D_RUN/daemon.json"
	wait_for 60 "$DOCKER" version || { tail -30 "$D_RUN/dockerd.log" >&2; return 1; }
	if ! "$DOCKER" image inspect "$IMAGE_NAME" >/dev/null 2>&1; then
		rootfs_tar "$D_RUN/rootfs.tar" &&
			"$DOCKER" import -c 'CMD ["/bin/sh"]' "$D_RUN/rootfs.tar" "$IMAGE_NAME" >/dev/null || return 1
		rm -f "$D_RUN/rootfs.tar"
	fi
}

docker_teardown() {
	local ids id
	if "$DOCKER" version >/dev/null 2>&1; then
		ids=$("$DOCKER" ps -aq --no-trunc)
		[[ -z $ids ]] || "$DOCKER" rm -f $ids >/dev/null 2>&1
		"$DOCKER" rmi -f "$IMAGE_NAME" >/dev/null 2>&1
	fi
	stop_daemon "$D_RUN/dockerd.pid" "$D_RUN/daemon.json"
	stop_daemon "$D_RUN/containerd.pid" "$D_RUN/containerd.toml"
	for id in $ids; do rm_cgroup_tree "/docker/$id"; done
	rm_noted_cgroups "$D_RUN/created-cgroups"
	del_bridge "$D_BRIDGE"
	unmount_under "$D_LIB"
	forget_rauha_roots "$D_RUN"
	unmount_under "$D_RUN"
	rm -rf "$D_LIB" "$D_RUN"
}

# ---------------------------------------------------------------- CRI

cri_setup() {
	clients_install || return 1
	stop_daemon "$C_RUN/containerd.pid" "$C_RUN/containerd.toml"
	mkdir -p "$C_RUN/cni" "$C_LIB"
	cat >"$C_RUN/containerd.toml" <<-EOF
		version = 2
		root = "$C_LIB/containerd"
		state = "$C_RUN/containerd-state"
		[grpc]
		  address = "$C_SOCK"
		[ttrpc]
		  address = "$C_SOCK.ttrpc"
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "$PAUSE_NAME"
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  enable_selinux = false
		  # the sandbox asks for oom_score_adj -998; root here lacks
		  # CAP_SYS_RESOURCE, so lowering it fails in every runtime's init
		  restrict_oom_score_adj = true
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        Root = "$C_RUN/runtime-runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.rauha]
		      runtime_type = "io.containerd.runc.v2"
		      pod_annotations = ["org.rauha.*"]
		      container_annotations = ["org.rauha.*"]
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.rauha.options]
		        BinaryName = "$RT"
		        Root = "$C_RUN/runtime-rauha"
		        SystemdCgroup = false
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$C_RUN/cni"
		    max_conf_num = 1
	EOF
	cat >"$C_RUN/crictl.yaml" <<-EOF
		runtime-endpoint: unix://$C_SOCK
		image-endpoint: unix://$C_SOCK
		timeout: 60
	EOF
	make_bridge "$C_BRIDGE" "$C_GW/24" "$C_NETNS" || return 1
	cni_conflist "$C_NET" "$C_BRIDGE" "$C_SUBNET" "$C_GW" >"$C_RUN/cni/10-$C_NET.conflist"
	start_daemon "$C_RUN/containerd.pid" "$C_RUN/containerd.log" \
		${C_NETNS:+nsenter --net="/run/netns/$C_NETNS"} containerd --config "$C_RUN/containerd.toml"
	wait_for 30 "${CRICTL[@]}" info || { tail -30 "$C_RUN/containerd.log" >&2; return 1; }
	if ! "${CRICTL[@]}" inspecti "$PAUSE_NAME" >/dev/null 2>&1; then
		rootfs_tar "$C_RUN/layer.tar" && oci_archive "$C_RUN/layer.tar" "$C_RUN/images.tar" &&
			ctr --address "$C_SOCK" -n k8s.io images import "$C_RUN/images.tar" >&2 || return 1
		rm -f "$C_RUN/layer.tar" "$C_RUN/images.tar"
	fi
}

cri_teardown() {
	if "${CRICTL[@]}" version >/dev/null 2>&1; then
		"${CRICTL[@]}" rmp -af >/dev/null 2>&1
		"${CRICTL[@]}" rmi "$IMAGE_NAME" "$PAUSE_NAME" >/dev/null 2>&1
	fi
	stop_daemon "$C_RUN/containerd.pid" "$C_RUN/containerd.toml"
	rm_cgroup_tree "$C_CGROUP"
	del_bridge "$C_BRIDGE" "$C_NETNS"
	rm -rf "/var/lib/cni/networks/$C_NET"
	unmount_under "$C_LIB"
	forget_rauha_roots "$C_RUN"
	unmount_under "$C_RUN"
	rm -rf "$C_LIB" "$C_RUN"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	case ${1:-} in
	install) clients_install ;;
	*) echo "usage: bash $0 install" >&2; exit 2 ;;
	esac
fi
