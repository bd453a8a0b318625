#!/usr/bin/env bats
# podman 4.3 + conmon driving the runtime under test, both as the named runtime
# "rauha" of a private containers.conf and as `podman --runtime $RT`.
# Steps share one long-running container ($C) and run in file order.
# Validate against runc: RAUHA=/usr/sbin/runc bats tests/bats/podman.bats

load ../clients/setup.bash

C=rauha-pm-main
ZONE=pm-zone

setup_file() {
	clients_enabled || return 0
	runtime_ok
	podman_setup
}

teardown_file() {
	clients_enabled || return 0
	podman_teardown
	zone_forget /run/rauha "$ZONE"
	zone_forget /run/rauha pm-enforced
	if is_rauha; then "$RT" --root /run/rauha zone reconcile >/dev/null 2>&1 || true; fi
}

# main_pid: host pid of $C's init.
main_pid() { podman inspect -f '{{.State.Pid}}' "$C"; }

@test "podman: info names the configured runtime" {
	ok_match "^rauha $RT\$" podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Path}}'
}

@test "podman: run --rm (named runtime)" {
	ok_match '^hi$' podman run --rm --network none "$IMAGE_NAME" echo hi
}

@test "podman: run --rm --runtime PATH, exit code passes through" {
	ok_match '^hi$' podman --runtime "$RT" run --rm --network none "$IMAGE_NAME" echo hi
	exits_with 7 '' podman --runtime "$RT" run --rm --network none "$IMAGE_NAME" sh -c 'exit 7'
}

@test "podman: run -it on a terminal" {
	in_pty '/dev/pts/[0-9]+.*42' \
		"podman run -it --rm --network none $IMAGE_NAME sh" \
		$'tty; echo $((6*7)); exit\n'
}

@test "podman: run -d" {
	ok podman run -d --name "$C" "$IMAGE_NAME" sh -c 'trap "exit 0" TERM; sleep 600 & wait'
	ok_match '^running rauha$' podman inspect -f '{{.State.Status}} {{.OCIRuntime}}' "$C"
}

@test "podman: exec" {
	ok_match '^hi-exec$' podman exec "$C" echo hi-exec
}

@test "podman: exec -t" {
	ok_match '^/dev/pts/[0-9]+' podman exec -t "$C" tty
}

@test "podman: exec -i" {
	ok_in 'piped-in' podman exec -i "$C" cat
	expect_eq "exec -i output" piped-in "$output"
}

@test "podman: exec -d" {
	ok podman exec -d "$C" sleep 4242
	wait_for 10 sh -c "podman top '$C' args | grep -q 'sleep 4242'"
}

@test "podman: exec -u -e -w" {
	ok_match '^65534 X=1 /tmp$' podman exec -u nobody -e X=1 -w /tmp "$C" sh -c 'echo $(id -u) X=$X $(pwd)'
}

@test "podman: top" {
	ok_match 'sleep 600' podman top "$C"
}

@test "podman: pause and unpause" {
	ok podman pause "$C"
	ok_match '^paused$' podman inspect -f '{{.State.Status}}' "$C"
	expect_eq "freezer.state" FROZEN "$(cgroup_value freezer freezer.state "$(main_pid)")"
	ok podman unpause "$C"
	ok_match '^running$' podman inspect -f '{{.State.Status}}' "$C"
	expect_eq "freezer.state" THAWED "$(cgroup_value freezer freezer.state "$(main_pid)")"
}

@test "podman: update --memory reaches the cgroup" {
	ok podman update --memory 96m "$C"
	expect_eq "memory.limit_in_bytes" $((96 * 1024 * 1024)) "$(cgroup_value memory memory.limit_in_bytes "$(main_pid)")"
}

@test "podman: stats --no-stream" {
	ok_match "^$C " podman stats --no-stream --format '{{.Name}} {{.MemUsage}}' "$C"
}

@test "podman: kill -s USR1 keeps pid 1 running" {
	ok podman kill -s USR1 "$C"
	ok_match '^running$' podman inspect -f '{{.State.Status}}' "$C"
}

@test "podman: stop" {
	ok podman stop -t 5 "$C"
	ok_match '^exited 0$' podman inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$C"
}

@test "podman: start" {
	ok podman start "$C"
	ok_match '^running$' podman inspect -f '{{.State.Status}}' "$C"
	ok_match '^hi$' podman exec "$C" echo hi
}

@test "podman: restart" {
	local before
	before=$(main_pid)
	ok podman restart -t 5 "$C"
	ok_match '^running$' podman inspect -f '{{.State.Status}}' "$C"
	[[ $(main_pid) != "$before" ]] || { echo "# pid unchanged after restart: $before" >&2; false; }
}

@test "podman: kill" {
	ok podman kill "$C"
	wait_for 20 sh -c "podman inspect -f '{{.State.Status}}' '$C' | grep -qx exited"
	ok_match '^137$' podman inspect -f '{{.State.ExitCode}}' "$C"
}

@test "podman: rm -f removes the container and its cgroup" {
	local id
	id=$(podman inspect -f '{{.Id}}' "$C")
	ok podman start "$C"
	ok podman rm -f -t 0 "$C"
	exits_with 1 '' podman container exists "$C"
	! cgroup_exists "/libpod_parent/libpod-$id" || { echo "# cgroup /libpod_parent/libpod-$id left behind" >&2; false; }
}

@test "podman: create, start, wait returns the exit code" {
	local id
	ok podman create --network none "$IMAGE_NAME" sh -c 'exit 5'
	id=$output
	ok podman start "$id"
	ok_match '^5$' podman wait "$id"
	ok podman rm "$id"
}

@test "podman: --read-only" {
	exits_with 1 'Read-only file system' podman run --rm --network none --read-only "$IMAGE_NAME" touch /x
	ok podman run --rm --network none --read-only "$IMAGE_NAME" touch /tmp/x
}

@test "podman: --cap-drop ALL --cap-add NET_ADMIN" {
	# CAP_NET_ADMIN is bit 12
	ok_match 'CapEff:[[:space:]]+0000000000001000' \
		podman run --rm --network none --cap-drop ALL --cap-add NET_ADMIN "$IMAGE_NAME" grep CapEff /proc/self/status
}

@test "podman: --memory and --pids-limit reach the cgroup" {
	local pid
	ok podman run -d --name rauha-pm-limits --network none --memory 64m --pids-limit 50 "$IMAGE_NAME" sleep 600
	pid=$(podman inspect -f '{{.State.Pid}}' rauha-pm-limits)
	expect_eq "memory.limit_in_bytes" 67108864 "$(cgroup_value memory memory.limit_in_bytes "$pid")"
	expect_eq "pids.max" 50 "$(cgroup_value pids pids.max "$pid")"
	ok podman rm -f -t 0 rauha-pm-limits
}

@test "podman: --network none has loopback only" {
	ok podman run --rm --network none "$IMAGE_NAME" ls /sys/class/net
	expect_eq "interfaces" lo "$output"
}

@test "podman: default bridge network reaches the host's bridge address" {
	host_listener "$P_GW" 18481 hello-from-host
	ok podman run --rm "$IMAGE_NAME" wget -qO- "http://$P_GW:18481/msg" || { stop_listener; false; }
	stop_listener
	expect_eq "reply" hello-from-host "$output"
}

@test "podman: zone annotations reach the runtime" {
	ok podman run -d --name rauha-pm-zone --network none \
		--annotation org.rauha.zone=$ZONE --annotation org.rauha.policy=standard "$IMAGE_NAME" sleep 600
	ok jq -r '.annotations["org.rauha.zone"] + " " + .annotations["org.rauha.policy"]' \
		"$(podman_config_json rauha-pm-zone)"
	expect_eq "annotations in config.json" "$ZONE standard" "$output"
}

@test "podman: rauha zone inspect lists the container (root /run/rauha)" {
	require_rauha "zone inspect"
	zone_lists /run/rauha "$ZONE" "$(podman inspect -f '{{.Id}}' rauha-pm-zone)"
}

@test "podman: rm -f leaves the zone" {
	local id
	id=$(podman inspect -f '{{.Id}}' rauha-pm-zone)
	ok podman rm -f -t 0 rauha-pm-zone
	is_rauha || skip "zone membership needs rauha"
	zone_lacks /run/rauha "$ZONE" "$id"
}

@test "podman: a policy named by annotation is enforced on the container, with events" {
	require_rauha "zone enforcement"
	local pol=$BATS_FILE_TMPDIR/deny-group.toml
	printf '[zone]\nadmission = "audit"\n[filesystem]\ndeny = ["/etc/group"]\n' >"$pol"
	ok podman run -d --name rauha-pm-enf --network none \
		--annotation org.rauha.zone=pm-enforced --annotation org.rauha.policy="$pol" "$IMAGE_NAME" sleep 600
	exits_with 1 "Permission denied" podman exec rauha-pm-enf cat /etc/group
	ok_match "root:x:0:0" podman exec rauha-pm-enf cat /etc/passwd
	ok_match '"object":"/etc/group' "$RT" --root /run/rauha zone events pm-enforced --format json
	ok podman rm -f -t 0 rauha-pm-enf
	ok "$RT" --root /run/rauha zone delete pm-enforced
}
