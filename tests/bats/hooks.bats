#!/usr/bin/env bats
# OCI hooks: each runs at its point of the lifecycle with the state on stdin.

load helpers

# Each host-side hook writes its stdin (the state JSON) to $MARK/<name>.
# startContainer runs inside the container (after pivot_root), so its path
# and its marker are inside the rootfs.
setup_hooks() {
	MARK=$BATS_TEST_TMPDIR/hooks
	mkdir -p "$MARK"
	host_hook() {
		jq -n --arg n "$1" --arg d "$MARK" '{path: "/bin/sh", args: ["sh", "-c", "cat > \($d)/\($n)"], env: ["PATH=/usr/bin:/bin"]}'
	}
	cfg b '.hooks = {
		prestart: [$pre], createRuntime: [$cr], createContainer: [$cc],
		startContainer: [{path: "/bin/sh", args: ["sh", "-c", "cat > /startContainer"]}],
		poststart: [$ps], poststop: [$pst]}' \
		--argjson pre "$(host_hook prestart)" --argjson cr "$(host_hook createRuntime)" \
		--argjson cc "$(host_hook createContainer)" --argjson ps "$(host_hook poststart)" \
		--argjson pst "$(host_hook poststop)"
}

# hook_status FILE: the status field of the state a hook received.
hook_status() {
	jq -r .status "$1"
}

@test "hooks: prestart, createRuntime, createContainer run at create with status creating" {
	setup_hooks
	create_ct c1
	pid=$(ct_pid c1)
	for h in prestart createRuntime createContainer; do
		[[ -s $MARK/$h ]] || fail "$h did not run at create"
		assert_eq "$(hook_status "$MARK/$h")" creating
		assert_eq "$(jq -r .id "$MARK/$h")" c1
		assert_eq "$(jq -r .bundle "$MARK/$h")" "$(bundle_dir b)"
	done
	assert_eq "$(jq -r .pid "$MARK/prestart")" "$pid"
	assert_eq "$(jq -r .pid "$MARK/createRuntime")" "$pid"
	# createContainer runs in the container's namespaces: runc reports the
	# pid as seen there (1).
	[[ $(jq -r .pid "$MARK/createContainer") =~ ^(1|$pid)$ ]] || fail "createContainer pid"
	[[ ! -e $(bundle_dir b)/rootfs/startContainer ]] || fail "startContainer ran at create"
	[[ ! -e $MARK/poststop ]] || fail "poststop ran at create"
	runc_1_1_differs "runc 1.1 runs poststart hooks at create (moved to start by runc PR #5186)"
	[[ ! -e $MARK/poststart ]] || fail "poststart ran at create"
}

@test "hooks: startContainer (inside) and poststart run at start" {
	setup_hooks
	create_ct c1
	rrun rt start c1
	assert_success
	sc=$(bundle_dir b)/rootfs/startContainer
	wait_file "$sc"
	assert_eq "$(hook_status "$sc")" created
	assert_eq "$(jq -r .id "$sc")" c1
	wait_file "$MARK/poststart"
	# runc 1.1 reports "created" (state read before the process ran).
	assert_match "$(hook_status "$MARK/poststart")" '^(created|running)$'
	[[ ! -e $MARK/poststop ]] || fail "poststop ran at start"
}

@test "hooks: start runs the poststart hooks of create time, not of a config.json changed since" {
	setup_hooks
	create_ct c1
	# runc keeps the hooks of create in its state; a bundle edited between
	# create and start changes nothing.
	cfg b '.hooks.poststart = [$h]' --argjson h "$(host_hook edited)"
	rrun rt start c1
	assert_success
	wait_file "$MARK/poststart"
	[[ ! -e $MARK/edited ]] || fail "start ran a poststart hook added to config.json after create"
	rrun rt delete --force c1
	create_ct c2
	rrun rt start c2
	assert_success
	wait_file "$MARK/edited"
}

@test "hooks: poststop runs at delete with status stopped" {
	setup_hooks
	run_ct c1
	rt kill c1 KILL
	wait_status c1 stopped
	[[ ! -e $MARK/poststop ]] || fail "poststop ran before delete"
	rrun rt delete c1
	assert_success
	wait_file "$MARK/poststop"
	assert_eq "$(hook_status "$MARK/poststop")" stopped
	assert_eq "$(jq -r .id "$MARK/poststop")" c1
}

@test "hooks: order prestart < createRuntime < createContainer < startContainer < poststart" {
	cfg b '.hooks = {}'
	for h in prestart createRuntime createContainer poststart; do
		cfg b '.hooks[$h] = [{path: "/bin/sh", args: ["sh", "-c", "echo \($h) >> \($f)"], env: ["PATH=/usr/bin:/bin"]}]' \
			--arg h "$h" --arg f "$BATS_TEST_TMPDIR/order"
	done
	# startContainer runs in the container; /order-in is the same file via a
	# bind mount. It is slow on purpose: poststart must still wait for it,
	# since it runs before the user process and poststart after it.
	touch "$BATS_TEST_TMPDIR/order"
	cfg b '.mounts += [{destination: "/order-in", type: "bind", source: $f, options: ["rbind", "rw"]}]
		| .hooks.startContainer = [{path: "/bin/sh", args: ["sh", "-c", "sleep 1; echo startContainer >> /order-in"]}]' \
		--arg f "$BATS_TEST_TMPDIR/order"
	run_ct c1
	retry 50 0.1 grep -q poststart "$BATS_TEST_TMPDIR/order"
	retry 50 0.1 grep -q startContainer "$BATS_TEST_TMPDIR/order"
	runc_1_1_differs "poststart runs at create, before startContainer (runc PR #5186 moved it)"
	assert_eq "$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/order")" "prestart createRuntime createContainer startContainer poststart "
}

@test "hooks: a failing prestart hook fails create and leaves nothing" {
	cfg b '.hooks = {prestart: [{path: "/bin/false"}]}'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'hook'
	assert_nothing_left c1
	runc_1_1_differs "runc 1.1 does not name the hook's kind (\"error running hook #0\")"
	assert_error_line 'error running prestart hook #0: '
}

@test "hooks: a hook that times out fails create" {
	cfg b '.hooks = {createRuntime: [{path: "/bin/sleep", args: ["sleep", "30"], timeout: 1}]}'
	start=$SECONDS
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_failure 1
	[[ $((SECONDS - start)) -lt 20 ]] || fail "timeout not honoured"
	assert_nothing_left c1
}

@test "hooks: a failing poststop hook fails delete, which still removes everything" {
	cfg b '.hooks = {poststop: [{path: "/bin/false"}]}'
	run_ct c1
	rt kill c1 KILL
	wait_status c1 stopped
	rrun rt delete c1
	if ! is_runc_1_1 || [[ ${STRICT:-0} == 1 ]]; then
		# runc 1.1 logs the failure and exits 0.
		assert_error_line 'error running poststop hook #0: '
	fi
	rrun rt state c1
	assert_failure 1
	assert_nothing_left c1
	is_rauha || return 0
	# As after any delete: no zone, no record, no member pins.
	assert_eq "$(rt zone list --format json | jq -r '[.[].name] | join(",")')" ""
	local pins
	pins=$(pin_dir_of "$ROOT")
	assert_eq "$(find "$pins/members" -mindepth 1 2>/dev/null | wc -l)" 0
}

@test "hooks: a failing poststart hook fails start with runc's message" {
	cfg b '.hooks = {poststart: [{path: "/bin/false"}]}'
	runc_1_1_differs "poststart runs at create, before startContainer (runc PR #5186 moved it)"
	create_ct c1
	rrun rt start c1
	assert_error_line 'error running poststart hook #0: '
}

@test "hooks: env and args reach the hook" {
	cfg b '.hooks = {prestart: [{path: "/bin/sh", args: ["sh", "-c", "echo \"$0 $HOOKVAR\" > \($f)", "arg0"], env: ["HOOKVAR=hv"]}]}' \
		--arg f "$BATS_TEST_TMPDIR/hookenv"
	create_ct c1
	assert_eq "$(cat "$BATS_TEST_TMPDIR/hookenv")" "arg0 hv"
}
