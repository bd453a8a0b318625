#!/usr/bin/env bats
# Pods of a real Kubernetes (kube-apiserver, etcd, kubelet and containerd of
# tests/k8s/cluster.sh) run by the rauha under test through the RuntimeClass
# "rauha": the zone a pod names is enforced on what `kubectl exec` runs in it.
# Each attack is first shown to work in a pod of the default handler (runc).
#
#   tests/k8s/build.sh && bats tests/k8s/pods.bats      # or: make test-k8s
#
# The last tests run the node agent (rauha-agent) against ZonePolicy objects.
#
# The cluster is brought up in setup_file and torn down in teardown_file.

load ../clients/lib.bash
source "$BATS_TEST_DIRNAME/cluster.sh"

ZONE=web
ALLOWED_PORT=18491
DENIED_PORT=18492

# kubectl in the cluster's network namespace, as a command (the step helpers
# run it under timeout(1), which cannot run a shell function)
KCTL=(nsenter --net="/run/netns/$K8S_NETNS" -- "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG")

# lib.bash's setup() follows CLIENT_TESTS; this suite has its own stage.
setup() { :; }

setup_file() {
	local why
	why=$(can_run) || { echo "# this host cannot run a kubelet: $why" >&2; return 1; }
	runtime_ok
	up || { down; return 1; }
	# The zone exists before any pod names it (a pod that names a zone with
	# no policy annotation must find it): egress only to the allowed port of
	# the bridge's address, /etc read-only, no CAP_NET_RAW (no raw sockets
	# around the egress hooks).
	mkdir -p "$K_RUN/test"
	cat >"$K_RUN/test/web.toml" <<-EOF
		[capabilities]
		allowed = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL"]
		[filesystem]
		read_only = ["/etc"]
		[network]
		allowed_egress = ["$K8S_GW:$ALLOWED_PORT"]
	EOF
	"$RT" --root "$K8S_RAUHA_ROOT" zone create "$ZONE" --policy "$K_RUN/test/web.toml" >&2
	# The node agent of the rauha under test, static as `make agent` builds
	# it: the DaemonSet's image holds it alone (its Kubernetes libraries are
	# compiled already when the unit tests ran).
	(cd "$BATS_TEST_DIRNAME/../.." && CGO_ENABLED=1 ${GO:-go} build -tags "seccomp urfave_cli_no_docs netgo osusergo runc_nocriu" \
		-ldflags "-s -w -extldflags -static" -o "$K_RUN/test/rauha-agent" ./cmd/rauha-agent) >&2
	# Two listeners on the pod bridge's address inside the cluster's network
	# namespace; their pids are ours, stopped in teardown_file.
	local port
	for port in $ALLOWED_PORT $DENIED_PORT; do
		mkdir -p "$K_RUN/test/www-$port"
		echo "hello-$port" >"$K_RUN/test/www-$port/msg"
		start_daemon "$K_RUN/test/httpd-$port.pid" /dev/null \
			nsenter --net="/run/netns/$K8S_NETNS" -- busybox httpd -f -p "$K8S_GW:$port" -h "$K_RUN/test/www-$port"
		wait_for 10 in_net busybox wget -qO- "http://$K8S_GW:$port/msg"
	done
}

teardown_file() {
	local port
	stop_daemon "$K_RUN/test/webhook.pid" rauha-agent
	stop_daemon "$K_RUN/test/agent.pid" rauha-agent
	for port in $ALLOWED_PORT $DENIED_PORT; do
		stop_daemon "$K_RUN/test/httpd-$port.pid" "httpd"
	done
	down
}

# pod NAME RUNTIMECLASS ANNOTATIONS_JSON: apply a busybox pod on node localhost.
pod() {
	local rc=${2:+\"runtimeClassName\": \"$2\",}
	ok_in "{
		\"apiVersion\": \"v1\", \"kind\": \"Pod\",
		\"metadata\": {\"name\": \"$1\", \"annotations\": $3},
		\"spec\": {$rc \"nodeName\": \"localhost\", \"terminationGracePeriodSeconds\": 2,
			\"automountServiceAccountToken\": false, \"enableServiceLinks\": false,
			\"containers\": [{\"name\": \"app\", \"image\": \"$IMAGE_NAME\", \"imagePullPolicy\": \"Never\",
				\"command\": [\"sh\", \"-c\", \"trap 'exit 0' TERM; sleep 600 & wait\"]}]}}" \
		"${KCTL[@]}" apply -f -
}

# wait_ready NAME
wait_ready() {
	ok "${KCTL[@]}" wait --for=condition=Ready "pod/$1" --timeout=60s || { kctl describe pod "$1" >&2; return 1; }
}

# container_id NAME: the containerd id of the pod's container.
container_id() {
	kctl get pod "$1" -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's#^containerd://##'
}

# fails_with REGEX CMD...: CMD must fail (any non-zero exit) and print REGEX.
fails_with() {
	local re=$1
	shift
	output=$(timeout "$STEP_TIMEOUT" "$@" 2>&1 </dev/null) && status=0 || status=$?
	[[ $status -ne 0 && $status -ne 124 ]] || { _show "expected a failure" "$*"; return 1; }
	[[ $output =~ $re ]] || { _show "output does not match /$re/" "$*"; return 1; }
}

# describe_has POD TEXT: `kubectl describe pod POD` mentions TEXT.
describe_has() { kctl describe pod "$1" | grep -qF -- "$2"; }

@test "k8s: the node is Ready, kubectl and the RuntimeClass rauha work" {
	ok_match "Server Version: $K8S_VERSION" "${KCTL[@]}" version
	ok_match 'localhost +Ready' "${KCTL[@]}" get nodes
	ok_match '^rauha +rauha' "${KCTL[@]}" get runtimeclass --no-headers
}

@test "k8s: without a zone (runc) a pod writes /etc and reaches both ports" {
	pod plain "" '{}'
	wait_ready plain
	ok "${KCTL[@]}" exec plain -- sh -c 'echo x >/etc/probe && cat /etc/probe'
	expect_eq "write to /etc" x "$output"
	ok_match "hello-$DENIED_PORT" "${KCTL[@]}" exec plain -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
	ok_match "hello-$ALLOWED_PORT" "${KCTL[@]}" exec plain -- wget -qO- "http://$K8S_GW:$ALLOWED_PORT/msg"
	ok "${KCTL[@]}" delete pod plain --wait=true --timeout=60s
}

@test "k8s: a rauha pod in zone web runs, and its sandbox and container are members" {
	pod web rauha "{\"org.rauha.zone\": \"$ZONE\"}"
	wait_ready web
	local id
	id=$(container_id web)
	[[ -n $id ]]
	zone_lists "$K8S_RAUHA_ROOT" "$ZONE" "$id"
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone inspect "$ZONE"
	# the pause sandbox gets the pod's annotations too
	expect_eq "members" 2 "$(jq '.members | length' <<<"$output")"
	echo "$id" >"$K_RUN/test/web.id"
}

@test "k8s: kubectl exec egress to a port the zone does not allow is denied, and recorded" {
	ok_match "hello-$ALLOWED_PORT" "${KCTL[@]}" exec web -- wget -qO- "http://$K8S_GW:$ALLOWED_PORT/msg"
	fails_with 'Operation not permitted' "${KCTL[@]}" exec web -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone events "$ZONE" --format json
	jq -se --arg obj "$K8S_GW:$DENIED_PORT (operation not permitted)" --arg id "$(cat "$K_RUN/test/web.id")" \
		'any(.[]; .control == "egress" and .decision == "deny" and .object == $obj and .container == $id)' \
		<<<"$output" >/dev/null || { echo "# no egress deny event in:"$'\n'"$output" >&2; false; }
}

@test "k8s: kubectl exec write to read-only /etc is denied, and recorded" {
	fails_with 'Read-only file system' "${KCTL[@]}" exec web -- sh -c 'echo x >/etc/probe'
	fails_with 'No such file' "${KCTL[@]}" exec web -- cat /etc/probe
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone events "$ZONE" --format json
	jq -se 'any(.[]; .control == "file" and .decision == "deny" and (.object | startswith("/etc/probe")))' \
		<<<"$output" >/dev/null || { echo "# no file deny event in:"$'\n'"$output" >&2; false; }
}

@test "k8s: zone verify says the pod's zone is isolated" {
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone verify "$ZONE"
	[[ $output == *"isolated:  yes"* ]] || { echo "$output" >&2; false; }
}

@test "k8s: deleting the pod leaves no zone member" {
	ok "${KCTL[@]}" delete pod web --wait=true --timeout=60s
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone inspect "$ZONE"
	expect_eq "members after delete" 0 "$(jq '.members | length' <<<"$output")"
	ok "$RT" --root "$K8S_RAUHA_ROOT" list -q
	expect_eq "rauha containers after delete" "" "$output"
}

@test "k8s: a pod naming an undefined zone does not start, and describe shows rauha's reason" {
	pod nozone rauha '{"org.rauha.zone": "nosuchzone"}'
	# the kubelet reports the sandbox failure as an event on the pod
	wait_for 60 describe_has nozone FailedCreatePodSandBox || true
	ok "${KCTL[@]}" describe pod nozone
	[[ $output == *"zone nosuchzone does not exist: create it first with 'rauha zone create nosuchzone"* ]] ||
		{ echo "# describe pod nozone:"$'\n'"$output" >&2; false; }
	[[ $output == *FailedCreatePodSandBox* ]] || { echo "$output" >&2; false; }
	ok "${KCTL[@]}" get pod nozone -o jsonpath='{.status.phase}'
	expect_eq "phase" Pending "$output"
	ok "${KCTL[@]}" delete pod nozone --wait=true --timeout=60s
}

# ----------------------------------------------------------- ZonePolicy and the node agent

AGENT_METRICS=127.0.0.1:19500

start_agent() {
	start_daemon "$K_RUN/test/agent.pid" "$K_RUN/test/agent.log" \
		nsenter --net="/run/netns/$K8S_NETNS" -- "$K_RUN/test/rauha-agent" run --node localhost \
		--root "$K8S_RAUHA_ROOT" --kubeconfig "$K8S_KUBECONFIG" --resync 2s --event-interval 1s --metrics-bind-address "$AGENT_METRICS"
}

# zonepolicy NAME PORT...: apply ZonePolicy NAME: /etc read-only, egress to
# the listed ports of the bridge's address only.
zonepolicy() {
	local name=$1 egress
	shift
	egress=$(printf '%s\n' "$@" | jq -R --arg gw "$K8S_GW" '$gw + ":" + .' | jq -sc .)
	ok_in "{\"apiVersion\": \"rauha.dev/v1alpha1\", \"kind\": \"ZonePolicy\", \"metadata\": {\"name\": \"$name\"},
		\"spec\": {\"policy\": {\"capabilities\": {\"allowed\": [\"CHOWN\", \"DAC_OVERRIDE\", \"FOWNER\", \"SETUID\", \"SETGID\", \"KILL\"]},
			\"filesystem\": {\"read_only\": [\"/etc\"]}, \"network\": {\"allowed_egress\": $egress}}}}" \
		"${KCTL[@]}" apply -f -
}

# node_status NAME FILTER: the jq FILTER holds for localhost's status entry.
node_status() {
	local out
	out=$(kctl get zonepolicy "$1" -o json) || return 1
	jqe "any(.status.nodes[]?; .node == \"localhost\" and ($2))" <<<"$out" >/dev/null
}

# zone_source NAME: the node's zone NAME exists and the agent made it.
zone_source() {
	local out
	out=$("$RT" --root "$K8S_RAUHA_ROOT" zone inspect "$1") || return 1
	jqe --arg s "zonepolicy:$1" '.policy_source == $s' <<<"$out" >/dev/null
}
zone_gone() { ! "$RT" --root "$K8S_RAUHA_ROOT" zone inspect "$1" >/dev/null 2>&1; }

@test "agent: the controller's Go tests pass against this cluster's API server" {
	cd "$BATS_TEST_DIRNAME/../.."
	run timeout 600 nsenter --net="/run/netns/$K8S_NETNS" -- env RAUHA_TEST_KUBECONFIG="$K8S_KUBECONFIG" \
		"${GO:-go}" test -count=1 -tags seccomp -run 'TestAgent|TestWebhook' -v ./agent/
	echo "$output" | tail -20 >&2
	[[ $status -eq 0 ]]
	[[ $output == *"--- PASS: TestAgentFollowsZonePolicies"* ]]
	[[ $output == *"--- PASS: TestWebhookSelectsZones"* ]]
	[[ $output == *"--- PASS: TestAgentEventsOnPods"* ]]
}

@test "agent: a ZonePolicy becomes the node's zone and the node reports its status" {
	ok "${KCTL[@]}" apply -f "$BATS_TEST_DIRNAME/../../deploy/crd.yaml"
	ok "${KCTL[@]}" wait --for=condition=Established crd/zonepolicies.rauha.dev --timeout=60s
	zonepolicy zpweb "$ALLOWED_PORT"
	start_agent
	wait_for 60 zone_source zpweb || { cat "$K_RUN/test/agent.log" >&2; false; }
	wait_for 60 node_status zpweb '.observedGeneration == 1 and .backend != "" and .error == null' ||
		{ kctl get zonepolicy zpweb -o yaml >&2; false; }
}

@test "agent: a pod in the ZonePolicy's zone is enforced; editing the ZonePolicy changes the running pod's enforcement" {
	pod zp rauha '{"org.rauha.zone": "zpweb"}'
	wait_ready zp
	ok_match "hello-$ALLOWED_PORT" "${KCTL[@]}" exec zp -- wget -qO- "http://$K8S_GW:$ALLOWED_PORT/msg"
	fails_with 'Operation not permitted' "${KCTL[@]}" exec zp -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone events zpweb --format json
	jq -se --arg obj "$K8S_GW:$DENIED_PORT (operation not permitted)" 'any(.[]; .control == "egress" and .object == $obj)' \
		<<<"$output" >/dev/null || { echo "# no egress deny event in:"$'\n'"$output" >&2; false; }
	wait_for 30 node_status zpweb '.members == 2 and .isolated == true' || { kctl get zonepolicy zpweb -o yaml >&2; false; }

	zonepolicy zpweb "$ALLOWED_PORT" "$DENIED_PORT"
	wait_for 60 node_status zpweb '.observedGeneration == 2' || { kctl get zonepolicy zpweb -o yaml >&2; false; }
	ok_match "hello-$DENIED_PORT" "${KCTL[@]}" exec zp -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
	zonepolicy zpweb "$ALLOWED_PORT"
	wait_for 60 node_status zpweb '.observedGeneration == 3' || { kctl get zonepolicy zpweb -o yaml >&2; false; }
	fails_with 'Operation not permitted' "${KCTL[@]}" exec zp -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
}

# log_denies ZONE CONTROL ID: how many denials of CONTROL rauha logged for container ID.
log_denies() {
	"$RT" --root "$K8S_RAUHA_ROOT" zone events "$1" --format json |
		jq -s --arg c "$2" --arg id "$3" '[.[] | select(.control == $c and .decision == "deny" and .container == $id)] | length'
}

# events_agree POD ZONE CONTROL REASON ID: POD has exactly one Event of REASON,
# and its count is the number of CONTROL's denials of container ID in the
# node's log: none lost, none sent twice.
events_agree() {
	local evs want
	evs=$(kctl get events --field-selector "involvedObject.name=$1,reason=$4" -o json) || return 1
	[[ $(jq '.items | length' <<<"$evs") == 1 ]] || return 1
	want=$(log_denies "$2" "$3" "$5") || return 1
	[[ $want -gt 0 && $(jq '.items[0].count' <<<"$evs") == "$want" ]]
}

# show_events POD ZONE: what the cluster and the node have, for a failure.
show_events() {
	echo "# Events of pod $1:" >&2
	kctl get events --field-selector "involvedObject.name=$1" -o yaml >&2
	echo "# the node's log of zone $2:" >&2
	"$RT" --root "$K8S_RAUHA_ROOT" zone events "$2" >&2
	tail -20 "$K_RUN/test/agent.log" >&2
}

@test "agent: a pod's denials are one Warning Event on the pod per control, counting them" {
	local id
	id=$(container_id zp)
	[[ -n $id ]]
	# 40 connections to the port the zone denies, in one exec
	run timeout "$STEP_TIMEOUT" "${KCTL[@]}" exec zp -- sh -c \
		"for i in \$(seq 40); do wget -qO- http://$K8S_GW:$DENIED_PORT/msg 2>/dev/null && echo LEAK; done; true"
	[[ $status -eq 0 && $output != *LEAK* ]] || { echo "$output" >&2; false; }
	fails_with 'Read-only file system' "${KCTL[@]}" exec zp -- sh -c 'echo x >/etc/probe'
	wait_for 30 events_agree zp zpweb egress DeniedEgress "$id" || { show_events zp zpweb; false; }
	wait_for 30 events_agree zp zpweb file DeniedFile "$id" || { show_events zp zpweb; false; }
	ok "${KCTL[@]}" get events --field-selector involvedObject.name=zp
	[[ $output =~ Warning\ +DeniedEgress\ +pod/zp\ +zone\ zpweb\ egress\ denied:\ $K8S_GW:$DENIED_PORT ]] ||
		{ echo "$output" >&2; false; }
	[[ $output =~ Warning\ +DeniedFile\ +pod/zp\ +zone\ zpweb\ file\ denied:\ /etc/probe ]] || { echo "$output" >&2; false; }
	ok "${KCTL[@]}" get events --field-selector involvedObject.name=zp,reason=DeniedEgress -o jsonpath='{.items[0].count}'
	((output >= 40)) || { echo "# count $output, want at least 40" >&2; false; }
	# matched by the pod's uid, as describe does
	describe_has zp DeniedEgress || { kctl describe pod zp >&2; false; }
}

@test "agent: /metrics serves the zone's counters" {
	ok nsenter --net="/run/netns/$K8S_NETNS" -- busybox wget -qO- "http://$AGENT_METRICS/metrics"
	[[ $output =~ rauha_zone_members\{root=\"$K8S_RAUHA_ROOT\",zone=\"zpweb\"\}\ 2 ]] || { echo "$output" | grep rauha_ >&2; false; }
	[[ $output =~ rauha_zone_denies_total\{control=\"egress\",root=\"$K8S_RAUHA_ROOT\",zone=\"zpweb\"\}\ [1-9] ]] || { echo "$output" | grep rauha_ >&2; false; }
}

@test "agent: killed and restarted, the agent loses nothing; with the API server gone the node keeps enforcing" {
	local pid
	pid=$(<"$K_RUN/test/agent.pid")
	kill -KILL "$pid"
	rm -f "$K_RUN/test/agent.pid"
	# Edited while no agent runs: the restarted agent applies it.
	zonepolicy zpweb "$ALLOWED_PORT" "$DENIED_PORT"
	start_agent
	wait_for 60 node_status zpweb '.observedGeneration == 4' || { cat "$K_RUN/test/agent.log" >&2; false; }
	ok_match "hello-$DENIED_PORT" "${KCTL[@]}" exec zp -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone inspect zpweb
	expect_eq "members after the agent's restart" 2 "$(jq '.members | length' <<<"$output")"

	# The API server away: the zone, its members and its verdict stay.
	stop_daemon "$K_RUN/apiserver.pid" "$K8S_BIN/kube-apiserver"
	sleep 5 # several resyncs of the agent against no API server
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone verify zpweb
	[[ $output == *"isolated:  yes"* ]] || { echo "$output" >&2; false; }
	ok "$RT" --root "$K8S_RAUHA_ROOT" zone inspect zpweb
	expect_eq "members with the API server away" 2 "$(jq '.members | length' <<<"$output")"
	kill -0 "$(<"$K_RUN/test/agent.pid")"
	set_in_cluster
	start_apiserver
	zonepolicy zpweb "$ALLOWED_PORT"
	wait_for 60 node_status zpweb '.observedGeneration == 5' || { cat "$K_RUN/test/agent.log" >&2; false; }
	fails_with 'Operation not permitted' "${KCTL[@]}" exec zp -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
	# The Event counts every denial once across the restart and the outage.
	wait_for 30 events_agree zp zpweb egress DeniedEgress "$(container_id zp)" || { show_events zp zpweb; false; }
}

@test "agent: deleting the pod leaves no member; deleting the ZonePolicy removes the zone" {
	ok "${KCTL[@]}" delete pod zp --wait=true --timeout=60s
	wait_for 30 node_status zpweb '.members == 0'
	ok "${KCTL[@]}" delete zonepolicy zpweb --wait=true --timeout=60s
	wait_for 30 zone_gone zpweb || { cat "$K_RUN/test/agent.log" >&2; false; }
	# A zone made by hand is not the agent's to delete.
	"$RT" --root "$K8S_RAUHA_ROOT" zone inspect "$ZONE" >/dev/null
}

# ------------------------------------------- zone selection: the admission webhook

WEBHOOK=127.0.0.1:19443

# webhook_certs DIR: a CA and the webhook's serving certificate for
# 127.0.0.1 (the API server calls it there: both run in the cluster's
# network namespace).
webhook_certs() {
	local d=$1
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=rauha-webhook-ca &&
			openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj /CN=rauha-webhook &&
			printf 'subjectAltName=IP:127.0.0.1\n' >tls.ext &&
			openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days 1 -extfile tls.ext
	) >/dev/null 2>&1
}

# selpolicy NAME SPEC_JSON: apply ZonePolicy NAME, /etc read-only, with the
# selectors or default of SPEC_JSON.
selpolicy() {
	ok_in "$(jq -n --arg name "$1" --argjson spec "$2" '{apiVersion: "rauha.dev/v1alpha1", kind: "ZonePolicy",
		metadata: {name: $name}, spec: ({policy: {
			capabilities: {allowed: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL"]},
			filesystem: {read_only: ["/etc"]}}} + $spec)}')" "${KCTL[@]}" apply -f -
}

# selpod_json NAME NAMESPACE LABELS_JSON ANNOTATIONS_JSON: a rauha busybox pod.
selpod_json() {
	jq -n --arg name "$1" --arg ns "$2" --argjson labels "$3" --argjson ann "$4" --arg image "$IMAGE_NAME" '{
		apiVersion: "v1", kind: "Pod", metadata: {name: $name, namespace: $ns, labels: $labels, annotations: $ann},
		spec: {runtimeClassName: "rauha", nodeName: "localhost", terminationGracePeriodSeconds: 2,
			automountServiceAccountToken: false, enableServiceLinks: false,
			containers: [{name: "app", image: $image, imagePullPolicy: "Never",
				command: ["sh", "-c", "trap \"exit 0\" TERM; sleep 600 & wait"]}]}}'
}

# selpod NAME NAMESPACE LABELS_JSON ANNOTATIONS_JSON: create that pod.
selpod() { ok_in "$(selpod_json "$@")" "${KCTL[@]}" create -f -; }

# in_zone POD NAMESPACE ZONE BY: the pod carries org.rauha.zone=ZONE (and
# rauha.dev/zone-selected-by=BY, "" for none), its container is a member of
# ZONE on the node, and the zone's read-only /etc holds in it.
in_zone() {
	local pod=$1 ns=$2 zone=$3 by=$4 id
	ok "${KCTL[@]}" -n "$ns" wait --for=condition=Ready "pod/$pod" --timeout=60s || { kctl -n "$ns" describe pod "$pod" >&2; return 1; }
	ok "${KCTL[@]}" -n "$ns" get pod "$pod" -o json
	expect_eq "org.rauha.zone of $pod" "$zone" "$(jq -r '.metadata.annotations["org.rauha.zone"] // ""' <<<"$output")" || return 1
	expect_eq "rauha.dev/zone-selected-by of $pod" "$by" "$(jq -r '.metadata.annotations["rauha.dev/zone-selected-by"] // ""' <<<"$output")" || return 1
	id=$(jq -r '.status.containerStatuses[0].containerID' <<<"$output" | sed 's#^containerd://##')
	[[ -n $id ]] || return 1
	zone_lists "$K8S_RAUHA_ROOT" "$zone" "$id" || return 1
	fails_with 'Read-only file system' "${KCTL[@]}" -n "$ns" exec "$pod" -- sh -c 'echo x >/etc/probe'
}

@test "webhook: rauha-agent webhook serves, the MutatingWebhookConfiguration of deploy/ points the API server at it" {
	webhook_certs "$K_RUN/test/webhook"
	start_daemon "$K_RUN/test/webhook.pid" "$K_RUN/test/webhook.log" \
		nsenter --net="/run/netns/$K8S_NETNS" -- "$K_RUN/test/rauha-agent" webhook --kubeconfig "$K8S_KUBECONFIG" \
		--cert-dir "$K_RUN/test/webhook" --host "${WEBHOOK%:*}" --port "${WEBHOOK#*:}"
	wait_for 30 in_net openssl s_client -connect "$WEBHOOK" -CAfile "$K_RUN/test/webhook/ca.crt" -verify_return_error </dev/null ||
		{ cat "$K_RUN/test/webhook.log" >&2; false; }
	# deploy/webhook.yaml's configuration, with the test's address and CA
	# instead of the Service and the operator's CA.
	ok "${KCTL[@]}" create --dry-run=client -o json -f "$BATS_TEST_DIRNAME/../../deploy/webhook.yaml"
	local cfg
	cfg=$(jq --arg url "https://$WEBHOOK/mutate-pods" --arg ca "$(base64 -w0 "$K_RUN/test/webhook/ca.crt")" \
		'select(.kind == "MutatingWebhookConfiguration") | .webhooks[0].clientConfig = {url: $url, caBundle: $ca}' <<<"$output")
	ok_in "$cfg" "${KCTL[@]}" apply -f -
	selpolicy zpsel '{"podSelector": {"matchLabels": {"rauha-test": "selected"}}}'
	selpolicy zpns '{"namespaceSelector": {"matchLabels": {"rauha-test": "zoned"}}}'
	selpolicy zpdefault '{"default": true}'
	ok_in '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "zoned", "labels": {"rauha-test": "zoned"}}}' \
		"${KCTL[@]}" apply -f -
	local z
	for z in zpsel zpns zpdefault; do
		wait_for 60 zone_source "$z" || { cat "$K_RUN/test/agent.log" >&2; false; }
	done
}

@test "webhook: a rauha pod whose labels match a ZonePolicy's podSelector, naming no zone, is in that zone" {
	selpod labelled default '{"rauha-test": "selected"}' '{}'
	in_zone labelled default zpsel "podSelector of ZonePolicy zpsel"
}

@test "webhook: a rauha pod in a namespace matching a ZonePolicy's namespaceSelector is in that zone" {
	selpod innamespace zoned '{}' '{}'
	in_zone innamespace zoned zpns "namespaceSelector of ZonePolicy zpns"
}

@test "webhook: a rauha pod matching no selector is in the ZonePolicy with spec.default" {
	selpod unmatched default '{"app": "other"}' '{}'
	in_zone unmatched default zpdefault "spec.default of ZonePolicy zpdefault"
}

@test "webhook: an explicit org.rauha.zone wins over a matching selector; pods of other runtime classes are left alone" {
	selpod explicit zoned '{"rauha-test": "selected"}' '{"org.rauha.zone": "zpdefault"}'
	in_zone explicit zoned zpdefault ""
	ok_in "$(selpod_json plainsel default '{"rauha-test": "selected"}' '{}' | jq 'del(.spec.runtimeClassName)')" \
		"${KCTL[@]}" create -f -
	ok "${KCTL[@]}" get pod plainsel -o json
	expect_eq "annotations of a runc pod with a selected label" '{}' "$(jq -c '.metadata.annotations // {}' <<<"$output")"
}

@test "webhook: two ZonePolicies with spec.default refuse a pod that needs the default, saying which" {
	selpolicy zpdefault2 '{"default": true}'
	local pod
	pod=$(selpod_json twodefaults default '{}' '{}')
	output=$(timeout "$STEP_TIMEOUT" "${KCTL[@]}" create -f - 2>&1 <<<"$pod") && status=0 || status=$?
	[[ $status -ne 0 && $output == *"ZonePolicies zpdefault, zpdefault2 all set spec.default"* ]] ||
		{ echo "# status $status: $output" >&2; false; }
	ok "${KCTL[@]}" get pod twodefaults --ignore-not-found -o name
	expect_eq "pod twodefaults" "" "$output"
	ok "${KCTL[@]}" delete zonepolicy zpdefault2 --wait=true --timeout=60s
}

@test "admission: a ZonePolicy this node cannot enforce under strict admission: its pod does not start, and describe says why" {
	# mode audit with an exec allow-list: no backend can log-and-allow what
	# an allow-list would deny (docs/design.md), so strict admission refuses it.
	ok_in '{"apiVersion": "rauha.dev/v1alpha1", "kind": "ZonePolicy", "metadata": {"name": "zpaudit"},
		"spec": {"policy": {"zone": {"mode": "audit", "admission": "strict"}, "exec": {"allow": ["/bin"]}}}}' \
		"${KCTL[@]}" apply -f -
	wait_for 60 node_status zpaudit '.error != null and (.error | contains("cannot be enforced here"))' ||
		{ kctl get zonepolicy zpaudit -o yaml >&2; false; }
	zone_gone zpaudit
	pod audited rauha '{"org.rauha.zone": "zpaudit"}'
	wait_for 60 describe_has audited FailedCreatePodSandBox || true
	ok "${KCTL[@]}" describe pod audited
	[[ $output == *"zone zpaudit does not exist on this node: this node refused ZonePolicy zpaudit (generation 1): zone zpaudit (admission strict): filesystem and exec rules in audit mode cannot be enforced here"* ]] ||
		{ echo "# describe pod audited:"$'\n'"$output" >&2; false; }
	ok "${KCTL[@]}" get pod audited -o jsonpath='{.status.phase}'
	expect_eq "phase" Pending "$output"
	ok "${KCTL[@]}" delete pod audited --wait=true --timeout=60s
}

@test "webhook: cleanup: pods, ZonePolicies and the webhook configuration go" {
	ok "${KCTL[@]}" delete mutatingwebhookconfiguration rauha-zone
	ok "${KCTL[@]}" delete pod labelled unmatched plainsel --wait=true --timeout=60s
	ok "${KCTL[@]}" -n zoned delete pod innamespace explicit --wait=true --timeout=60s
	ok "${KCTL[@]}" delete zonepolicy zpsel zpns zpdefault zpaudit --wait=true --timeout=60s
	for z in zpsel zpns zpdefault; do
		wait_for 30 zone_gone "$z" || { cat "$K_RUN/test/agent.log" >&2; false; }
	done
	ok "${KCTL[@]}" delete namespace zoned --wait=false
}

# ----------------------------------------------------------- the agent as a DaemonSet

# agent_daemonset: deploy/agent.yaml's DaemonSet as JSON, changed only where
# this cluster differs from a real one: the node's rauha root is the test's
# (mounted at the same path, as the manifest does: the root's path names its
# BPF pin directory), resyncs and Event writes are faster, and what the
# missing kube-controller-manager, kube-proxy and ServiceAccount admission
# would give the pod is given by hand: the API server's address (no Service
# proxy: 127.0.0.1:6443 of the host network) and the service account token
# volume.
agent_daemonset() {
	kctl create --dry-run=client -o json -f "$BATS_TEST_DIRNAME/../../deploy/agent.yaml" |
		jq --arg rootdir "$K_RUN/runtime-rauha" --arg root "$K8S_RAUHA_ROOT" '
		.spec.template.spec.volumes |= map(if .name == "root" then .hostPath.path = $rootdir else . end)
		| .spec.template.spec.volumes += [{name: "token", projected: {sources: [
			{serviceAccountToken: {path: "token", expirationSeconds: 3607}},
			{configMap: {name: "kube-root-ca.crt", items: [{key: "ca.crt", path: "ca.crt"}]}},
			{downwardAPI: {items: [{path: "namespace", fieldRef: {fieldPath: "metadata.namespace"}}]}}]}}]
		| .spec.template.spec.containers[0] |= (
			.volumeMounts |= map(if .name == "root" then .mountPath = $rootdir else . end)
			| .volumeMounts += [{name: "token", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true}]
			| .args |= map(if . == "/run/containerd/rauha/k8s.io" then $root else . end)
			| .args += ["--resync", "2s", "--event-interval", "1s"]
			| .env += [{name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1"}, {name: "KUBERNETES_SERVICE_PORT", value: "6443"}])'
}

# agent_pod_ready: the DaemonSet's pod on localhost is Ready.
agent_pod_ready() {
	kctl -n rauha-system get pods -l app=rauha-agent -o json |
		jqe 'any(.items[]; .spec.nodeName == "localhost" and any(.status.conditions[]?; .type == "Ready" and .status == "True"))'
}

show_agent_pod() {
	kctl -n rauha-system describe pods -l app=rauha-agent >&2
	kctl -n rauha-system logs -l app=rauha-agent --tail=30 >&2
}

@test "agent: deploy/agent.yaml runs the agent image on the node; it becomes Ready, applies a ZonePolicy and reports a pod's denials" {
	# One agent per node: the process stops, the DaemonSet's pod takes over
	# (and the cursor of Events the process left in the root).
	stop_daemon "$K_RUN/test/agent.pid" rauha-agent
	set_in_cluster
	ok bash "$BATS_TEST_DIRNAME/../../scripts/agent-image.sh" "$K_RUN/test/rauha-agent" "$K_RUN/test/agent-image.tar"
	ok nsenter "${IN_CLUSTER[@]}" ctr --address "$K8S_SOCK" -n k8s.io images import "$K_RUN/test/agent-image.tar"
	ok "${KCTL[@]}" apply -f "$BATS_TEST_DIRNAME/../../deploy/crd.yaml" -f "$BATS_TEST_DIRNAME/../../deploy/rbac.yaml"
	ok "${KCTL[@]}" wait --for=condition=Established crd/zonepolicies.rauha.dev --timeout=60s
	ok "${KCTL[@]}" label node localhost rauha.dev/runtime=true --overwrite
	# kube-controller-manager's root CA publisher would write this.
	ok "${KCTL[@]}" -n rauha-system create configmap kube-root-ca.crt --from-file=ca.crt="$K_RUN/pki/ca.crt"
	local ds uid
	ds=$(agent_daemonset)
	ok_in "$ds" "${KCTL[@]}" apply -f -
	# This cluster runs no kube-controller-manager and no scheduler: the
	# DaemonSet controller would create this pod (with a node affinity the
	# scheduler binds), so the test creates it, from the DaemonSet's own
	# template, owned by the DaemonSet and bound to the node.
	uid=$(kctl -n rauha-system get daemonset rauha-agent -o jsonpath='{.metadata.uid}')
	ok_in "$(jq --arg uid "$uid" '.spec.template | .apiVersion = "v1" | .kind = "Pod"
		| .metadata += {name: "rauha-agent-localhost", namespace: "rauha-system",
			ownerReferences: [{apiVersion: "apps/v1", kind: "DaemonSet", name: "rauha-agent", uid: $uid,
				controller: true, blockOwnerDeletion: true}]}
		| .spec.nodeName = "localhost"' <<<"$ds")" "${KCTL[@]}" apply -f -
	wait_for 90 agent_pod_ready || { show_agent_pod; false; }

	zonepolicy zpds "$ALLOWED_PORT"
	wait_for 60 zone_source zpds || { show_agent_pod; false; }
	wait_for 60 node_status zpds '.observedGeneration == 1 and .error == null' || { kctl get zonepolicy zpds -o yaml >&2; false; }
	pod dspod rauha '{"org.rauha.zone": "zpds"}'
	wait_ready dspod
	fails_with 'Operation not permitted' "${KCTL[@]}" exec dspod -- wget -qO- "http://$K8S_GW:$DENIED_PORT/msg"
	wait_for 30 events_agree dspod zpds egress DeniedEgress "$(container_id dspod)" || { show_events dspod zpds; show_agent_pod; false; }
	wait_for 30 node_status zpds '.members == 2 and .isolated == true' || { kctl get zonepolicy zpds -o yaml >&2; false; }

	ok "${KCTL[@]}" delete pod dspod --wait=true --timeout=60s
	ok "${KCTL[@]}" delete zonepolicy zpds --wait=true --timeout=60s
	wait_for 30 zone_gone zpds || { show_agent_pod; false; }
	ok "${KCTL[@]}" -n rauha-system delete pod rauha-agent-localhost --wait=true --timeout=60s
	ok "${KCTL[@]}" -n rauha-system delete daemonset rauha-agent
}
