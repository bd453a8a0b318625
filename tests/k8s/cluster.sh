#!/usr/bin/env bash
# A real single-node Kubernetes driving the rauha under test:
#
#   tests/k8s/cluster.sh up      # etcd, kube-apiserver, containerd, kubelet; node Ready
#   tests/k8s/cluster.sh down    # everything it made is gone (also after a failed up)
#   tests/k8s/cluster.sh env     # prints the variables the tests use (source it)
#
# What runs (binaries from tests/k8s/build.sh, in $K8S_BIN):
#   etcd (Debian's etcd-server) and kube-apiserver on 127.0.0.1, certificates
#   made here with openssl, AlwaysAllow authorization; no scheduler and no
#   controller-manager: pods name their node (nodeName: localhost).
#   containerd (the host's binary, a private instance: own root, state,
#   sockets) with the runtime handler "rauha" (BinaryName = the rauha under
#   test, Root = $K_RUN/runtime-rauha, so rauha's --root is
#   $K_RUN/runtime-rauha/k8s.io) and the default handler runc.
#   kubelet: cgroupfs driver, cgroupRoot $CG_PREFIX, hostname-override localhost.
#
# Isolation from the host (its docker and containerd are never touched):
#   - a network namespace made for the cluster ($K8S_NETNS): every daemon runs
#     in it, so ports 2379/6443/10250 and the CNI bridge (10.89.71.1/24) exist
#     only there. A veth pair with both ends inside it carries the default
#     route the kubelet needs to pick a node address.
#   - a mount namespace made for the cluster (propagation slave): the mounts of
#     containerd, the kubelet and the containers never reach the host, and all
#     of them go when the namespace's last process exits. In it, the kernel
#     tunables the kubelet insists on (vm.overcommit_memory, kernel.panic,
#     ...) read as the values it wants: otherwise it writes those host-wide
#     sysctls, and kernel.panic_on_oops=1 would reboot a shared machine on an
#     oops.
#   - every process is started here and recorded by pid; `down` stops only
#     those pids and the processes left in the cluster's mount namespace.
#
# Environment: RAUHA (runtime under test, default ./rauha), CG_PREFIX
# (/rauha-test-k8s), K8S_BIN (default: tests/k8s/build.sh's cache).
# Sourced (by tests/k8s/pods.bats), it only defines its functions.

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../clients/setup.bash
source "$K8S_DIR/../clients/setup.bash"

K8S_VERSION=${K8S_VERSION:-v1.37.2}
K8S_CACHE=${K8S_CACHE:-/var/cache/rauha-k8s/$K8S_VERSION}
K8S_BIN=${K8S_BIN:-$K8S_CACHE/bin}
K_RUN=$H_RUN/k8s
K_LIB=$H_LIB/k8s
K8S_NETNS=${K8S_NETNS:-rauha-k8s}
K8S_CG=${CG_PREFIX:-/rauha-test-k8s}
K8S_RAUHA_ROOT=$K_RUN/runtime-rauha/k8s.io
K8S_SOCK=$K_RUN/containerd.sock
K8S_KUBECONFIG=$K_RUN/pki/admin.kubeconfig
K8S_GW=10.89.71.1 K8S_POD_NET=10.89.71.0/24 K8S_CNI=rauha-k8s K8S_BRIDGE=rk8s-cni0
K8S_NODE_IP=10.89.70.1

log() { printf 'k8s-cluster: %s\n' "$*" >&2; }
now() { echo "${EPOCHREALTIME}"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# in_cluster CMD...: CMD in the cluster's network and mount namespaces.
in_cluster() { nsenter "${IN_CLUSTER[@]}" "$@"; }

# set_in_cluster: the nsenter arguments of in_cluster, as an array so that
# start_daemon can run nsenter itself and record the daemon's own pid
# (nsenter execs its command).
set_in_cluster() {
	IN_CLUSTER=(--mount="/proc/$(<"$K_RUN/mntns.pid")/ns/mnt" --net="/run/netns/$K8S_NETNS" --)
}

# in_net CMD...: CMD in the cluster's network namespace only (kubectl, listeners).
in_net() { nsenter --net="/run/netns/$K8S_NETNS" -- "$@"; }

kctl() { in_net "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" "$@"; }

# can_run: why this host cannot run the cluster, or nothing (exit 0).
can_run() {
	[[ $EUID -eq 0 ]] || { echo "needs root"; return 1; }
	local c
	for c in containerd containerd-shim-runc-v2 ctr nsenter unshare openssl ip jq; do
		command -v "$c" >/dev/null || { echo "$c is not installed"; return 1; }
	done
	[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] ||
		{ echo "CNI plugins missing (apt-get install containernetworking-plugins)"; return 1; }
	[[ -d /sys/fs/cgroup/cpu || -f /sys/fs/cgroup/cgroup.controllers ]] || { echo "no cgroup file system"; return 1; }
	ip netns add rauha-k8s-probe.$$ 2>/dev/null || { echo "cannot create a network namespace"; return 1; }
	ip netns del rauha-k8s-probe.$$
	unshare --mount true 2>/dev/null || { echo "cannot create a mount namespace"; return 1; }
}

# ------------------------------------------------------------------ pieces

make_certs() {
	local d=$K_RUN/pki
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
			-subj /CN=rauha-k8s-ca 2>/dev/null || exit 1
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
			-subj /CN=kube-apiserver 2>/dev/null || exit 1
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,IP:10.0.0.1\n' >apiserver.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out apiserver.crt -days 2 -extfile apiserver.ext 2>/dev/null || exit 1
		# One client identity for kubectl, the kubelet and the apiserver's
		# calls to the kubelet: authorization is AlwaysAllow anyway.
		openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
			-subj /O=system:masters/CN=admin 2>/dev/null || exit 1
		openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out admin.crt -days 2 2>/dev/null || exit 1
		openssl genrsa -out sa.key 2048 2>/dev/null && openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	) || return 1
	cat >"$K8S_KUBECONFIG" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: rauha
		  cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$d/ca.crt"}
		users:
		- name: admin
		  user: {client-certificate: "$d/admin.crt", client-key: "$d/admin.key"}
		contexts:
		- name: rauha
		  context: {cluster: rauha, user: admin}
		current-context: rauha
	EOF
}

# make_namespaces: the network namespace (veth pair inside it for the
# default route, the CNI bridge with its gateway address) and the mount
# namespace holder.
make_namespaces() {
	ip netns add "$K8S_NETNS" || return 1
	echo "$K8S_NETNS" >"$K_RUN/netns"
	ip -n "$K8S_NETNS" link set lo up &&
		ip -n "$K8S_NETNS" link add rk8s0 type veth peer name rk8s1 &&
		ip -n "$K8S_NETNS" addr add "$K8S_NODE_IP/24" dev rk8s0 &&
		ip -n "$K8S_NETNS" link set rk8s0 up && ip -n "$K8S_NETNS" link set rk8s1 up &&
		ip -n "$K8S_NETNS" route add default dev rk8s0 &&
		ip -n "$K8S_NETNS" link add "$K8S_BRIDGE" type bridge &&
		ip -n "$K8S_NETNS" addr add "$K8S_GW/24" dev "$K8S_BRIDGE" &&
		ip -n "$K8S_NETNS" link set "$K8S_BRIDGE" up || return 1

	# The kubelet's kernel tunables, as it wants to read them (see the top).
	local t=$K_RUN/sysctl
	mkdir -p "$t"
	echo 1 >"$t/overcommit_memory"
	echo 0 >"$t/panic_on_oom"
	echo 10 >"$t/panic"
	echo 1 >"$t/panic_on_oops"
	echo 1000000 >"$t/root_maxkeys"
	echo 25000000 >"$t/root_maxbytes"
	start_daemon "$K_RUN/mntns.pid" "$K_RUN/mntns.log" unshare --mount --propagation slave \
		bash -c "mount --bind $t/overcommit_memory /proc/sys/vm/overcommit_memory &&
			mount --bind $t/panic_on_oom /proc/sys/vm/panic_on_oom &&
			mount --bind $t/panic /proc/sys/kernel/panic &&
			mount --bind $t/panic_on_oops /proc/sys/kernel/panic_on_oops &&
			mount --bind $t/root_maxkeys /proc/sys/kernel/keys/root_maxkeys &&
			mount --bind $t/root_maxbytes /proc/sys/kernel/keys/root_maxbytes &&
			touch $K_RUN/mntns.ready && exec -a rauha-k8s-mntns sleep infinity"
	wait_for 10 test -e "$K_RUN/mntns.ready" || { cat "$K_RUN/mntns.log" >&2; return 1; }
	# unshare and bash exec'd: the recorded pid is the holder's.
	set_in_cluster
}

start_etcd() {
	start_daemon "$K_RUN/etcd.pid" "$K_RUN/etcd.log" nsenter "${IN_CLUSTER[@]}" "$K8S_BIN/etcd" \
		--name rauha-k8s --data-dir "$K_LIB/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster rauha-k8s=http://127.0.0.1:2380 --listen-metrics-urls ""
	wait_for 30 in_net busybox wget -qO- http://127.0.0.1:2379/health ||
		{ tail -20 "$K_RUN/etcd.log" >&2; return 1; }
}

start_apiserver() {
	local p=$K_RUN/pki
	start_daemon "$K_RUN/apiserver.pid" "$K_RUN/apiserver.log" nsenter "${IN_CLUSTER[@]}" "$K8S_BIN/kube-apiserver" \
		--etcd-servers=http://127.0.0.1:2379 --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
		--secure-port=6443 --endpoint-reconciler-type=none --service-cluster-ip-range=10.0.0.0/24 \
		--client-ca-file="$p/ca.crt" --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
		--kubelet-client-certificate="$p/admin.crt" --kubelet-client-key="$p/admin.key" \
		--kubelet-preferred-address-types=Hostname \
		--service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
		--service-account-issuer=https://127.0.0.1:6443 \
		--authorization-mode=AlwaysAllow --disable-admission-plugins=ServiceAccount \
		--allow-privileged=true
	wait_for 60 kctl get --raw /readyz || { tail -30 "$K_RUN/apiserver.log" >&2; return 1; }
	wait_for 30 kctl get namespace default || { tail -30 "$K_RUN/apiserver.log" >&2; return 1; }
}

start_containerd() {
	mkdir -p "$K_RUN/cni" "$K_LIB/containerd"
	cat >"$K_RUN/containerd.toml" <<-EOF
		# written by tests/k8s/cluster.sh: private to the k8s test stage
		version = 2
		root = "$K_LIB/containerd"
		state = "$K_RUN/containerd-state"
		[grpc]
		  address = "$K8S_SOCK"
		[ttrpc]
		  address = "$K8S_SOCK.ttrpc"
		[debug]
		  address = "$K8S_SOCK.debug"
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "$PAUSE_NAME"
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  enable_selinux = false
		  disable_apparmor = true
		  netns_mounts_under_state_dir = true
		  # the sandbox asks for oom_score_adj -998; root here may lack
		  # CAP_SYS_RESOURCE, and then every runtime's init fails
		  restrict_oom_score_adj = true
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        Root = "$K_RUN/runtime-runc"
		        SystemdCgroup = false
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.rauha]
		      runtime_type = "io.containerd.runc.v2"
		      pod_annotations = ["org.rauha.*"]
		      container_annotations = ["org.rauha.*"]
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.rauha.options]
		        BinaryName = "$RT"
		        Root = "$K_RUN/runtime-rauha"
		        SystemdCgroup = false
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$K_RUN/cni"
		    max_conf_num = 1
	EOF
	jq -n --arg name "$K8S_CNI" --arg br "$K8S_BRIDGE" --arg subnet "$K8S_POD_NET" --arg gw "$K8S_GW" \
		--arg data "$K_LIB/cni" '{
		cniVersion: "0.4.0", name: $name,
		plugins: [{type: "bridge", bridge: $br, isGateway: false, ipMasq: false, hairpinMode: true,
			ipam: {type: "host-local", dataDir: $data, routes: [{dst: $subnet}],
				ranges: [[{subnet: $subnet, gateway: $gw}]]}}, {type: "loopback"}]}' \
		>"$K_RUN/cni/10-$K8S_CNI.conflist"
	start_daemon "$K_RUN/containerd.pid" "$K_RUN/containerd.log" nsenter "${IN_CLUSTER[@]}" containerd --config "$K_RUN/containerd.toml"
	wait_for 30 ctr --address "$K8S_SOCK" version || { tail -30 "$K_RUN/containerd.log" >&2; return 1; }
	local images
	images=$(images_tar) || return 1
	in_cluster ctr --address "$K8S_SOCK" -n k8s.io images import "$images" >/dev/null
}

# images_tar: the busybox and pause images as an OCI archive, built from
# /bin/busybox once per busybox binary (the rootfs takes a fork per applet:
# minutes on a loaded 2-core machine) and kept in the cache.
images_tar() {
	local out tmp
	out=$K8S_CACHE/images-$(sha256sum /bin/busybox | cut -c1-16).tar
	if [[ ! -s $out ]]; then
		mkdir -p "$K8S_CACHE"
		tmp=$(mktemp -d "$K8S_CACHE/images.XXXXXX")
		rootfs_tar "$tmp/layer.tar" && oci_archive "$tmp/layer.tar" "$tmp/images.tar" &&
			mv "$tmp/images.tar" "$out" || { rm -rf "$tmp"; return 1; }
		rm -rf "$tmp"
	fi
	echo "$out"
}

# make_cgroup_root: the kubelet refuses to start until its cgroupRoot exists
# in every v1 hierarchy (cpuset needs cpus and mems to take tasks).
make_cgroup_root() {
	cgroup_exists "$K8S_CG" || echo "$K8S_CG" >>"$K_RUN/created-cgroups"
	local h
	for h in /sys/fs/cgroup/*/; do
		[[ -f ${h}cgroup.procs ]] || continue
		mkdir -p "${h%/}$K8S_CG" || return 1
	done
	if [[ -d /sys/fs/cgroup/cpuset$K8S_CG ]]; then
		cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset$K8S_CG/cpuset.cpus" &&
			cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset$K8S_CG/cpuset.mems" || return 1
	fi
}

# note_host_dir DIR: the kubelet creates DIR (a path it hard-codes); remember
# to remove it at teardown if it did not exist before.
note_host_dir() { [[ -e $1 ]] || echo "$1" >>"$K_RUN/created-dirs"; }

start_kubelet() {
	make_cgroup_root || return 1
	note_host_dir /var/lib/kubelet
	note_host_dir /var/log/containers
	note_host_dir /var/log/pods
	mkdir -p "$K_LIB/kubelet" "$K_LIB/pod-logs"
	cat >"$K_RUN/kubelet.yaml" <<-EOF
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		address: 127.0.0.1
		port: 10250
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: 10248
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: false}
		  x509: {clientCAFile: "$K_RUN/pki/ca.crt"}
		authorization: {mode: AlwaysAllow}
		cgroupDriver: cgroupfs
		cgroupRoot: "$K8S_CG"
		cgroupsPerQOS: true
		# the host's cgroups are hybrid (v1 controllers), which 1.37 refuses by default
		failCgroupV1: false
		failSwapOn: false
		containerRuntimeEndpoint: "unix://$K8S_SOCK"
		podLogsDir: "$K_LIB/pod-logs"
		resolvConf: ""
		oomScoreAdj: 0
		registerNode: true
		# never evict or garbage-collect on a shared, busy disk: the images are
		# imported, not pulled
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		evictionHard: {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
		syncFrequency: 10s
		nodeStatusUpdateFrequency: 2s
	EOF
	start_daemon "$K_RUN/kubelet.pid" "$K_RUN/kubelet.log" nsenter "${IN_CLUSTER[@]}" "$K8S_BIN/kubelet" \
		--config="$K_RUN/kubelet.yaml" --kubeconfig="$K8S_KUBECONFIG" --root-dir="$K_LIB/kubelet" \
		--cert-dir="$K_LIB/kubelet-pki" --hostname-override=localhost
	wait_for 90 kctl wait --for=condition=Ready node/localhost --timeout=2s ||
		{ tail -30 "$K_RUN/kubelet.log" >&2; return 1; }
}

write_env() {
	cat >"$K_RUN/env" <<-EOF
		K8S_BIN=$K8S_BIN
		K8S_NETNS=$K8S_NETNS
		K8S_KUBECONFIG=$K8S_KUBECONFIG
		K8S_RAUHA_ROOT=$K8S_RAUHA_ROOT
		K8S_GW=$K8S_GW
		K8S_CG=$K8S_CG
		K8S_RT=$RT
	EOF
}

up() {
	local why t0 t
	why=$(can_run) || { log "this host cannot run the cluster: $why"; return 2; }
	for b in etcd kube-apiserver kubelet kubectl; do
		[[ -x $K8S_BIN/$b ]] || { log "$K8S_BIN/$b missing: run tests/k8s/build.sh"; return 1; }
	done
	runtime_ok || return 1
	down
	t0=$(now)
	mkdir -p "$K_RUN" "$K_LIB"
	: >"$K_RUN/created-cgroups"
	: >"$K_RUN/created-dirs"
	make_certs || { log "certificates failed"; return 1; }
	make_namespaces || { log "namespaces failed"; return 1; }
	t=$(now)
	start_etcd || { log "etcd did not become healthy"; return 1; }
	log "etcd healthy in $(since "$t") s"
	t=$(now)
	start_apiserver || { log "kube-apiserver did not become ready"; return 1; }
	log "kube-apiserver ready in $(since "$t") s"
	t=$(now)
	start_containerd || { log "containerd failed"; return 1; }
	log "containerd up, images imported in $(since "$t") s"
	t=$(now)
	start_kubelet || { log "node did not become Ready"; return 1; }
	log "node Ready in $(since "$t") s"
	kctl apply -f - >/dev/null <<-EOF || return 1
		apiVersion: node.k8s.io/v1
		kind: RuntimeClass
		metadata: {name: rauha}
		handler: rauha
	EOF
	write_env
	log "cluster up in $(since "$t0") s (kubectl: nsenter --net=/run/netns/$K8S_NETNS $K8S_BIN/kubectl --kubeconfig $K8S_KUBECONFIG)"
}

# ------------------------------------------------------------------ teardown

# cluster_pids: processes in the cluster's mount namespace other than its
# holder: what containerd, the kubelet and the shims left.
cluster_pids() {
	local holder ns
	[[ -s $K_RUN/mntns.pid ]] || return 0
	holder=$(<"$K_RUN/mntns.pid")
	ns=$(stat -L -c %i "/proc/$holder/ns/mnt" 2>/dev/null) || return 0
	[[ $ns != "$(stat -L -c %i /proc/self/ns/mnt)" ]] || return 0
	stat -L -c '%i %n' /proc/[0-9]*/ns/mnt 2>/dev/null |
		awk -v ns="$ns" -v holder="$holder" '$1 == ns { split($2, a, "/"); if (a[3] != holder) print a[3] }'
}

down() {
	[[ -d $K_RUN || -d $K_LIB ]] || return 0
	local t0 p id
	t0=$(now)
	[[ -s $K_RUN/mntns.pid ]] && set_in_cluster
	# Pods first, while the kubelet can still stop them the normal way.
	if [[ -s $K_RUN/kubelet.pid && -s $K_RUN/apiserver.pid ]] && kctl get --raw /readyz >/dev/null 2>&1; then
		kctl delete pods --all --all-namespaces --wait=true --timeout=60s >/dev/null 2>&1 ||
			log "pods did not go within 60 s"
	fi
	stop_daemon "$K_RUN/kubelet.pid" "$K8S_BIN/kubelet"
	if [[ -s $K_RUN/containerd.pid ]] && command -v crictl >/dev/null; then
		timeout 60 crictl --runtime-endpoint "unix://$K8S_SOCK" rmp -af >/dev/null 2>&1
	fi
	# The apiserver before etcd: the other way round it retries for a minute.
	stop_daemon "$K_RUN/apiserver.pid" "$K8S_BIN/kube-apiserver"
	stop_daemon "$K_RUN/etcd.pid" "$K8S_BIN/etcd"
	stop_daemon "$K_RUN/containerd.pid" "$K_RUN/containerd.toml"
	# Containers a failed run left: the runtime removes them by its own records.
	for root in "$K8S_RAUHA_ROOT" "$K_RUN/runtime-runc/k8s.io"; do
		[[ -d $root ]] || continue
		local bin=$RT
		[[ $root == *runtime-runc* ]] && bin=runc
		for id in $("$bin" --root "$root" list -q 2>/dev/null); do
			"$bin" --root "$root" kill "$id" KILL >/dev/null 2>&1
			timeout 30 "$bin" --root "$root" delete --force "$id" >/dev/null 2>&1 ||
				log "could not delete container $id of $root"
		done
	done
	# Shims and anything else still in the cluster's mount namespace.
	for p in $(cluster_pids); do kill -KILL "$p" 2>/dev/null; done
	forget_rauha_roots "$K_RUN"
	if [[ -s $K_RUN/mntns.pid ]]; then
		p=$(<"$K_RUN/mntns.pid")
		stop_daemon "$K_RUN/mntns.pid" "rauha-k8s-mntns"
		wait_for 10 bash -c "! kill -0 $p 2>/dev/null"
	fi
	if [[ -f $K_RUN/created-cgroups ]]; then
		rm_noted_cgroups "$K_RUN/created-cgroups"
	fi
	[[ -f $K_RUN/netns ]] && ip netns del "$(<"$K_RUN/netns")" 2>/dev/null
	rm -f /var/lib/cni/results/"$K8S_CNI"-* 2>/dev/null
	if [[ -f $K_RUN/created-dirs ]]; then
		while read -r p; do
			[[ -n $p ]] || continue
			unmount_under "$p"
			rm -rf "$p"
		done <"$K_RUN/created-dirs"
	fi
	unmount_under "$K_LIB"
	unmount_under "$K_RUN"
	rm -rf "$K_LIB" "$K_RUN"
	log "cluster down in $(since "$t0") s"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -uo pipefail
	case ${1:-} in
	up) up ;;
	down) down ;;
	can-run) can_run ;;
	env) cat "$K_RUN/env" ;;
	*) echo "usage: $0 up|down|can-run|env" >&2; exit 2 ;;
	esac
fi
