#!/usr/bin/env bats
# docker 20.10 -> containerd 1.6 -> containerd-shim-runc-v2 driving the runtime
# under test through a daemon.json `runtimes` entry named "rauha" (also the
# default runtime of this private dockerd). Every runtime call carries
# --root $D_RT_ROOT --log <taskdir>/log.json --log-format json.
# Steps share one long-running container ($C) and run in file order.
# Validate against runc: RAUHA=/usr/sbin/runc bats tests/bats/docker.bats

load ../clients/setup.bash

C=rauha-dk-main

setup_file() {
	clients_enabled || return 0
	runtime_ok
	docker_setup
}

teardown_file() {
	clients_enabled || return 0
	docker_teardown
}

main_pid() { "$DOCKER" inspect -f '{{.State.Pid}}' "$C"; }
state_of() { "$DOCKER" inspect -f '{{.State.Status}}' "$1"; }

@test "docker: info lists the rauha runtime as default" {
	ok_match "^rauha .*rauha:" "$DOCKER" info -f '{{.DefaultRuntime}} {{range $k, $v := .Runtimes}}{{$k}}:{{$v.Path}} {{end}}'
	[[ $output == *"rauha:$RT"* ]] || { echo "# runtimes: $output" >&2; false; }
}

@test "docker: run --rm, exit code passes through" {
	ok_match '^hi$' "$DOCKER" run --rm --runtime rauha --network none "$IMAGE_NAME" echo hi
	exits_with 7 '' "$DOCKER" run --rm --network none "$IMAGE_NAME" sh -c 'exit 7'
}

@test "docker: run -it on a terminal" {
	in_pty '/dev/pts/[0-9]+.*42' \
		"$DOCKER run -it --rm --network none $IMAGE_NAME sh" \
		$'tty; echo $((6*7)); exit\n'
}

@test "docker: run -d" {
	ok "$DOCKER" run -d --name "$C" "$IMAGE_NAME" sh -c 'trap "exit 0" TERM; sleep 600 & wait'
	ok_match '^running rauha$' "$DOCKER" inspect -f '{{.State.Status}} {{.HostConfig.Runtime}}' "$C"
}

@test "docker: exec" {
	ok_match '^hi-exec$' "$DOCKER" exec "$C" echo hi-exec
}

@test "docker: exec -t" {
	ok_match '^/dev/pts/[0-9]+' "$DOCKER" exec -t "$C" tty
}

@test "docker: exec -i" {
	ok_in 'piped-in' "$DOCKER" exec -i "$C" cat
	expect_eq "exec -i output" piped-in "$output"
}

@test "docker: exec -d" {
	ok "$DOCKER" exec -d "$C" sleep 4242
	wait_for 10 sh -c "'$DOCKER' top '$C' | grep -q 'sleep 4242'"
}

@test "docker: exec -u -e -w" {
	ok_match '^65534 X=1 /tmp$' "$DOCKER" exec -u nobody -e X=1 -w /tmp "$C" sh -c 'echo $(id -u) X=$X $(pwd)'
}

@test "docker: top (runtime ps --format json)" {
	ok_match 'sleep 600' "$DOCKER" top "$C"
}

@test "docker: pause and unpause" {
	ok "$DOCKER" pause "$C"
	expect_eq "state" paused "$(state_of "$C")"
	expect_eq "freezer.state" FROZEN "$(cgroup_value freezer freezer.state "$(main_pid)")"
	ok "$DOCKER" unpause "$C"
	expect_eq "state" running "$(state_of "$C")"
	expect_eq "freezer.state" THAWED "$(cgroup_value freezer freezer.state "$(main_pid)")"
}

@test "docker: update --memory reaches the cgroup" {
	ok "$DOCKER" update --memory 96m --memory-swap 192m "$C"
	expect_eq "memory.limit_in_bytes" $((96 * 1024 * 1024)) "$(cgroup_value memory memory.limit_in_bytes "$(main_pid)")"
}

@test "docker: stats --no-stream" {
	ok_match "^$C " "$DOCKER" stats --no-stream --format '{{.Name}} {{.MemUsage}}' "$C"
}

@test "docker: kill -s USR1 keeps pid 1 running" {
	ok "$DOCKER" kill -s USR1 "$C"
	expect_eq "state" running "$(state_of "$C")"
}

@test "docker: stop" {
	ok "$DOCKER" stop -t 5 "$C"
	ok_match '^exited 0$' "$DOCKER" inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$C"
}

@test "docker: start" {
	ok "$DOCKER" start "$C"
	expect_eq "state" running "$(state_of "$C")"
	ok_match '^hi$' "$DOCKER" exec "$C" echo hi
}

@test "docker: restart" {
	local before
	before=$(main_pid)
	ok "$DOCKER" restart -t 5 "$C"
	expect_eq "state" running "$(state_of "$C")"
	[[ $(main_pid) != "$before" ]] || { echo "# pid unchanged after restart: $before" >&2; false; }
}

@test "docker: kill" {
	ok "$DOCKER" kill "$C"
	wait_for 20 sh -c "'$DOCKER' inspect -f '{{.State.Status}}' '$C' | grep -qx exited"
	ok_match '^137$' "$DOCKER" inspect -f '{{.State.ExitCode}}' "$C"
}

@test "docker: rm -f removes the container, its state and its cgroup" {
	local id
	id=$("$DOCKER" inspect -f '{{.Id}}' "$C")
	ok "$DOCKER" start "$C"
	ok "$DOCKER" rm -f "$C"
	exits_with 1 'No such object' "$DOCKER" inspect "$C"
	! cgroup_exists "/docker/$id" || { echo "# cgroup /docker/$id left behind" >&2; false; }
	# A runtime root that is gone holds no container (list fails on a
	# missing --root, as runc 1.5's does); one that exists must not list it.
	if [[ -d $D_RT_ROOT ]]; then
		ok "$RT" --root "$D_RT_ROOT" list
		[[ $output != *"$id"* ]] || { echo "# runtime still lists $id:"$'\n'"$output" >&2; false; }
	fi
}

@test "docker: the shim's second delete --force of a deleted id succeeds" {
	local id logdir
	ok "$DOCKER" run -d --network none "$IMAGE_NAME" sleep 600
	id=$output
	ok "$DOCKER" rm -f "$id"
	# containerd-shim-runc-v2 deletes, then deletes again with --force on
	# shutdown; the second call hits an id that is gone and must exit 0.
	logdir=$(mktemp -d /tmp/rauha-clients-dd.XXXXXX)
	ok "$RT" --root "$D_RT_ROOT" --log "$logdir/log.json" --log-format json delete --force "$id" ||
		{ cat "$logdir/log.json" >&2; rm -rf "$logdir"; false; }
	rm -rf "$logdir"
}

@test "docker: create, start, wait returns the exit code" {
	local id
	ok "$DOCKER" create --network none "$IMAGE_NAME" sh -c 'exit 5'
	id=$output
	ok "$DOCKER" start "$id"
	ok_match '^5$' "$DOCKER" wait "$id"
	ok "$DOCKER" rm "$id"
}

@test "docker: --read-only" {
	exits_with 1 'Read-only file system' "$DOCKER" run --rm --network none --read-only "$IMAGE_NAME" touch /x
	ok "$DOCKER" run --rm --network none --read-only --tmpfs /tmp "$IMAGE_NAME" touch /tmp/x
}

@test "docker: --cap-drop ALL --cap-add NET_ADMIN" {
	ok_match 'CapEff:[[:space:]]+0000000000001000' \
		"$DOCKER" run --rm --network none --cap-drop ALL --cap-add NET_ADMIN "$IMAGE_NAME" grep CapEff /proc/self/status
}

@test "docker: --memory and --pids-limit reach the cgroup" {
	local pid
	ok "$DOCKER" run -d --name rauha-dk-limits --network none --memory 64m --pids-limit 50 "$IMAGE_NAME" sleep 600
	pid=$("$DOCKER" inspect -f '{{.State.Pid}}' rauha-dk-limits)
	expect_eq "memory.limit_in_bytes" 67108864 "$(cgroup_value memory memory.limit_in_bytes "$pid")"
	expect_eq "pids.max" 50 "$(cgroup_value pids pids.max "$pid")"
	ok "$DOCKER" rm -f rauha-dk-limits
}

@test "docker: --network none has loopback only" {
	ok "$DOCKER" run --rm --network none "$IMAGE_NAME" ls /sys/class/net
	expect_eq "interfaces" lo "$output"
}

@test "docker: default bridge (libnetwork prestart hook) reaches the host's bridge address" {
	host_listener "$D_GW" 18482 hello-from-host
	ok "$DOCKER" run --rm "$IMAGE_NAME" wget -qO- "http://$D_GW:18482/msg" || { stop_listener; false; }
	stop_listener
	# dockerd warns about ip_forward=0 on stderr; the reply is the last line
	expect_eq "reply" hello-from-host "${output##*$'\n'}"
}

@test "docker: --init runs docker-init as pid 1" {
	ok_match 'docker-init' "$DOCKER" run --rm --network none --init "$IMAGE_NAME" sh -c 'tr "\0" " " </proc/1/cmdline'
}

@test "docker: a runtime error reaches the user (JSON log)" {
	# the shim reads the runtime's message from log.json; docker prints it
	exits_with 127 'OCI runtime create failed:.*/nonexistent.*(no such file|not found)' \
		"$DOCKER" run --rm --network none "$IMAGE_NAME" /nonexistent
}

@test "docker: --annotation reaches the zone" {
	"$DOCKER" run --help 2>&1 | grep -q -- '--annotation' ||
		skip "docker $("$DOCKER" version -f '{{.Client.Version}}') has no --annotation (API 1.43, docker 24+): each container gets its own zone"
	ok "$DOCKER" run -d --name rauha-dk-zone --network none \
		--annotation org.rauha.zone=dk-zone --annotation org.rauha.policy=standard "$IMAGE_NAME" sleep 600
	require_rauha "zone inspect"
	zone_lists "$D_RT_ROOT" dk-zone "$("$DOCKER" inspect -f '{{.Id}}' rauha-dk-zone)"
}
