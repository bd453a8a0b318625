#!/usr/bin/env bats
# Never fail open, never lose state (docs/design.md "State", "Recovery"): rauha
# has no daemon, so any invocation can die at any instant and many run at
# once. These tests SIGKILL rauha in the middle of its operations, simulate
# a reboot, and run many operations in parallel, then check with
# check_leaks that the store, the state directory, the cgroups and the BPF
# pins agree and that live containers are enforced with their stored policy.
#
# Knobs: CRASH_KILLS (default 200) kills to inject; CRASH_WORKERS (16) and
#        CRASH_CONTAINERS (400) for the parallel test.

load helpers
load zone_helpers
load crash_helpers

setup() {
	helpers_setup
	requires rauha cgroups_hybrid
	PIN_DIR=$(pin_dir_of "$ROOT")
	[[ ! -e $PIN_DIR ]] || fail "pin directory $PIN_DIR of this test's root exists before the test"
	crash_setup
}

# try_killed DELAY CMD...: run CMD, SIGKILL it after DELAY seconds; counts a
# kill in KILLS when CMD was still running then.
try_killed() {
	local delay=$1 pid
	shift
	# The runtime itself, not the rt wrapper: killing the subshell that runs
	# rt would leave timeout(1) and rauha running on in the background.
	[[ $1 == rt ]] && set -- "$RUNTIME" --root "$ROOT" "${@:2}"
	{
		"$@" >/dev/null 2>&1 &
		pid=$!
		sleep "$delay"
		if kill -9 "$pid" 2>/dev/null; then
			KILLS=$((KILLS + 1))
		fi
		wait "$pid" || true
	} 2>/dev/null # bash reports every killed job on stderr
}

# op_time CMD...: seconds CMD takes, as a decimal.
op_time() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	t1=$(date +%s%N)
	echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}

# kernel_looser: succeeds when the kernel lets zone cz do more than its
# stored policy: the store allows no egress while egress4 holds an entry
# (cz is the only zone of this root).
kernel_looser() {
	local stored
	stored=$(rt zone list --format json | jq -c '.[] | select(.name == "cz") | .policy.network.allowed_egress')
	[[ $stored == "[]" ]] || return 1
	[[ $(bpftool -j map dump pinned "$PIN_DIR/egress4" | jq length) -gt 0 ]]
}

# rand_delay MAX: a random delay in [0, MAX] seconds.
rand_delay() {
	echo "scale=3; $RANDOM * $1 / 32767" | bc
}

@test "crash: SIGKILL at random moments leaves nothing behind after reconcile" {
	local want=${CRASH_KILLS:-200} tc ts te tu td i id b t0 pol
	local strict
	strict=$(policy strict2 <<-'EOF2'
		[zone]
		mode = "enforce"
		admission = "audit"
		[filesystem]
		deny = ["/etc/shadow"]
		[network]
		allowed_egress = []
	EOF2
	)
	# The two policies differ in egress only: the kernel's egress rules
	# change for running members at once, so a killed update shows there;
	# a deny path added by an update reaches running members on the
	# fallback only at their restart (their mounts are made at create), and
	# verify would rightly fail them.
	# Typical durations, measured on one unkilled round.
	b=$(crash_bundle m0)
	tc=$(op_time rt create --bundle "$b" m0)
	ts=$(op_time rt start m0)
	te=$(op_time rt exec m0 true)
	tu=$(op_time rt zone update --policy "$strict" cz)
	td=$(op_time rt delete --force m0)
	echo "# durations (s): create $tc start $ts exec $te update $tu delete $td" >&3
	KILLS=0 LOOSER=0
	t0=$SECONDS
	i=0
	while [[ $KILLS -lt $want ]]; do
		i=$((i + 1))
		id=k$i
		b=$(crash_bundle "$id")
		try_killed "$(rand_delay "$tc")" rt create --bundle "$b" "$id"
		try_killed "$(rand_delay "$ts")" rt start "$id"
		try_killed "$(rand_delay "$te")" rt exec "$id" sh -c 'sleep 0.2'
		if ((i % 2)); then pol=$strict; else pol=$CRASH_POLICY; fi
		try_killed "$(rand_delay "$tu")" rt zone update --policy "$pol" cz
		# docs/design.md "Recovery": a stale kernel policy may be stricter, never looser.
		if kernel_looser; then
			LOOSER=$((LOOSER + 1))
			echo "# round $i: the kernel allows egress the stored policy of cz does not" >&3
		fi
		# Two containers of three stay, so reconcile meets live members and
		# the debris of killed creates that no later delete cleaned up.
		if ((i % 3 == 0)); then
			try_killed "$(rand_delay "$td")" rt delete --force "$id"
		fi
		((SECONDS - t0 < 280)) || break
	done
	echo "# $KILLS kills injected in $i rounds, $((SECONDS - t0))s; kernel looser than the store: $LOOSER times" >&3
	[[ $LOOSER -eq 0 ]] || fail "a killed zone update left the kernel looser than the store $LOOSER times"
	check_leaks
	echo "# before reconcile: $LEAKS inconsistencies" >&3
	rrun rt zone reconcile
	show
	assert_success
	check_leaks
	echo "# after reconcile: $LEAKS leaks" >&3
	[[ $KILLS -ge $want ]] || fail "only $KILLS kills in the time budget"
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks after reconcile"
	# What is left can be deleted normally.
	for id in $(rt list -q); do rt delete --force "$id" || fail "delete $id"; done
	check_leaks
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks after deleting everything"
}

# simulate_reboot: what a reboot does to this root: every container process
# dies, every cgroup and every BPF pin of the root is gone. The state
# directory and the store (on disk) stay.
simulate_reboot() {
	local pid h d
	for pid in $(jq -r '.init_process_pid' "$ROOT"/*/state.json); do
		kill -9 "$pid" 2>/dev/null || true
	done
	for pid in $(jq -r '.init_process_pid' "$ROOT"/*/state.json); do
		while kill -0 "$pid" 2>/dev/null && [[ $(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null) != Z ]]; do sleep 0.05; done
	done
	for h in /sys/fs/cgroup/*/; do
		for d in "${h%/}$CG_BASE"/*/; do
			[[ -d $d ]] && rmdir "$d"
		done
	done
	rm -rf "$PIN_DIR"
}

@test "crash: a create killed between its created mark and the end of its join runs nothing until reconcile joins it" {
	local b cg
	b=$(crash_bundle j1)
	rt create --bundle "$b" j1 </dev/null >/dev/null 2>&1 || fail "create j1"
	[[ ! -e $ROOT/j1/joining ]] || fail "a finished create left its joining file"
	cg=$(rt zone inspect cz | jq -r '.members[] | select(.id == "j1") | .cgroup_id')
	zone_cgids | grep -qx "$cg" || fail "j1's cgroup $cg is not registered after create"
	# What such a create leaves (create stores the mark beside the join):
	# a record that says created, the init waiting, its cgroup in no zone
	# and the joining file in the state directory.
	unregister_cgroup "$PIN_DIR" "$cg"
	touch "$ROOT/j1/joining"
	rrun rt start j1
	assert_failure 1
	assert_match "$stderr" "container j1 never finished joining its zone"
	assert_eq "$(rt state j1 | jq -r .status)" created
	rrun rt exec j1 true
	assert_failure
	assert_match "$stderr" "container j1 never finished joining its zone"
	rrun rt zone reconcile
	assert_success
	assert_match "$stdout" "container j1: joined zone cz"
	[[ ! -e $ROOT/j1/joining ]] || fail "reconcile left the joining file"
	zone_cgids | grep -qx "$cg" || fail "reconcile did not register j1's cgroup $cg"
	rrun rt start j1
	assert_success
	rrun rt zone verify cz
	show
	assert_success
	check_leaks
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks"
	rt delete --force j1 || fail "delete j1"
}

@test "reboot: the next command after pins and cgroups vanish restores enforcement" {
	local id b
	for id in r1 r2; do
		b=$(crash_bundle "$id")
		rt create --bundle "$b" "$id" || fail "create $id"
		rt start "$id" || fail "start $id"
	done
	simulate_reboot
	[[ ! -e $PIN_DIR ]] || fail "pins still there"
	# The first command that touches the kernel restores the root.
	b=$(crash_bundle r3)
	rt create --bundle "$b" r3 || fail "create after reboot"
	rt start r3 || fail "start r3"
	for id in r1 r2; do
		assert_eq "$(rt state "$id" | jq -r .status)" stopped
	done
	assert_eq "$(rt state r3 | jq -r .status)" running
	[[ -e $PIN_DIR/zone_by_cgid ]] || fail "kernel programs not reinstalled"
	rrun rt zone verify cz
	show
	assert_success
	check_leaks
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks after the reboot"
	for id in r1 r2 r3; do rt delete --force "$id" || fail "delete $id"; done
	check_leaks
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks after deleting"
}

@test "reboot: the records of an earlier boot are not read; reconcile removes what they held" {
	local b own file
	b=$(crash_bundle e1)
	rt create --bundle "$b" e1 || fail "create e1"
	rt start e1 || fail "start e1"
	# A container without a zone annotation: a zone of its own.
	own=$BATS_TEST_TMPDIR/bundles/e2
	mkdir -p "$own"
	jq 'del(.annotations["org.rauha.zone"])' "$(crash_bundle e2)/config.json" >"$own/config.json.new"
	mv "$own/config.json.new" "$own/config.json"
	rt create --bundle "$own" e2 || fail "create e2"
	# The records are in this boot's containers file, not in rauha.db.
	file=$ROOT/containers-$(cat /proc/sys/kernel/random/boot_id).db
	[[ -s $file ]] || fail "no containers file $file: $(ls "$ROOT")"
	assert_eq "$(rt zone inspect e2 | jq -r '.members[].id')" e2
	simulate_reboot
	# After a reboot the boot id differs: the file is an earlier boot's.
	mv "$file" "$ROOT/containers-00000000-0000-0000-0000-000000000000.db"
	# Opening the root restores its kernel state first (a reconcile that
	# logs its repairs), so the command's own reconcile may find nothing.
	# e2's own zone was in the earlier boot's file too: it is gone.
	rrun rt zone reconcile
	show
	assert_success
	assert_eq "$(rt zone inspect cz | jq '.members | length')" 0
	assert_match "$stdout$stderr" "removed stopped container e1: it had no record \(it ran in an earlier boot, or its create died\)"
	assert_match "$stdout$stderr" "removed stopped container e2"
	assert_eq "$(rt zone list --format json | jq -r '.[].name')" cz
	rt list --format json | jq -e 'length == 0' >/dev/null || fail "containers listed: $(rt list)"
	# The first record of this boot removes the earlier boot's file.
	rt create --bundle "$(crash_bundle e3)" e3 || fail "create e3"
	[[ ! -e $ROOT/containers-00000000-0000-0000-0000-000000000000.db ]] || fail "the earlier boot's containers file is still there"
	[[ -s $file ]] || fail "no containers file of this boot"
	rt delete --force e3 || fail "delete e3"
	check_leaks
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks after the reconcile"
}

@test "reboot: pins removed under live containers are restored by the next command" {
	local id b
	for id in p1 p2; do
		b=$(crash_bundle "$id")
		rt create --bundle "$b" "$id" || fail "create $id"
	done
	rt start p1 || fail "start p1"
	rm -rf "$PIN_DIR"
	rt zone update --policy "$CRASH_POLICY" cz || fail "zone update after pins vanished"
	[[ -e $PIN_DIR/zone_by_cgid ]] || fail "kernel programs not reinstalled"
	# Both live containers are members again, with the stored policy.
	assert_eq "$(zone_cgids | sort | tr '\n' ' ')" \
		"$(rt zone list --format json | jq -r '.[] | select(.name == "cz") | .members[].cgroup_id' | sort | tr '\n' ' ')"
	rrun rt zone verify cz
	show
	assert_success
	check_leaks
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks after pins were restored"
}

# worker W FIRST LAST: create, start, exec into and delete containers
# wFIRST..wLAST one after another; every failed operation is a line in
# $BATS_TEST_TMPDIR/fail.W, every completed one a line in done.W.
worker() {
	local w=$1 i id b op
	for ((i = $2; i <= $3; i++)); do
		id=c$i
		b=$(crash_bundle "$id")
		for op in "create --bundle $b $id" "start $id" "exec $id true" "delete --force $id"; do
			# shellcheck disable=SC2086 # op is a word list
			if rt $op >"$BATS_TEST_TMPDIR/out.$w" 2>&1; then
				echo "$op" >>"$BATS_TEST_TMPDIR/done.$w"
			else
				echo "$op: $(tr '\n' ' ' <"$BATS_TEST_TMPDIR/out.$w")" >>"$BATS_TEST_TMPDIR/fail.$w"
			fi
		done
	done
}

@test "concurrency: parallel workers lose no record and see no lock failure" {
	local workers=${CRASH_WORKERS:-16} n=${CRASH_CONTAINERS:-400} w per t0 pids=() done failed
	per=$((n / workers))
	t0=$SECONDS
	for ((w = 0; w < workers; w++)); do
		worker "$w" $((w * per + 1)) $(((w + 1) * per)) &
		pids+=($!)
	done
	for w in "${pids[@]}"; do wait "$w"; done
	done=$(cat "$BATS_TEST_TMPDIR"/done.* 2>/dev/null | wc -l)
	failed=$(cat "$BATS_TEST_TMPDIR"/fail.* 2>/dev/null | wc -l)
	echo "# $workers workers, $((per * workers)) containers: $done operations completed, $failed failed, $((SECONDS - t0))s" >&3
	if [[ $failed -gt 0 ]]; then
		head -20 "$BATS_TEST_TMPDIR"/fail.* >&3
		fail "$failed operations failed"
	fi
	assert_eq "$done" $((4 * per * workers))
	assert_eq "$(rt list -q | wc -l)" 0
	assert_eq "$(rt zone list --format json | jq '[.[] | select(.name == "cz") | .members[]] | length')" 0
	check_leaks
	[[ $LEAKS -eq 0 ]] || fail "$LEAKS leaks after the parallel run"
}

@test "concurrency: creates racing zone updates never leave the kernel looser than the store" {
	local rounds=${RACE_ROUNDS:-12} r i b pids stale=0 strict
	strict=$(policy race-strict <<-'EOF2'
		[zone]
		mode = "enforce"
		admission = "audit"
		[filesystem]
		deny = ["/etc/shadow"]
		[network]
		allowed_egress = []
	EOF2
	)
	for ((r = 0; r < rounds; r++)); do
		# Creates read the zone's (loose) policy while an update makes it
		# strict: a create that pushed what it read after the update would
		# leave the kernel looser than the store.
		rt zone update cz --policy "$CRASH_POLICY" >/dev/null
		pids=()
		for ((i = 0; i < 6; i++)); do
			b=$(crash_bundle "r$r-$i")
			rt create --bundle "$b" "r$r-$i" >/dev/null 2>&1 </dev/null &
			pids+=($!)
		done
		sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
		rt zone update cz --policy "$strict" >/dev/null
		for i in "${pids[@]}"; do wait "$i" || fail "a create failed in round $r"; done
		rrun rt zone verify cz --format json
		if ! jqe 'any(.checks[]; .name == "kernel policy" and .passed)' <<<"$stdout" >/dev/null; then
			stale=$((stale + 1))
			echo "# round $r: $(jq -r '.checks[] | select(.name == "kernel policy") | .detail' <<<"$stdout")" >&3
		fi
		for ((i = 0; i < 6; i++)); do rt delete --force "r$r-$i" >/dev/null; done
	done
	echo "# $rounds rounds of 6 creates racing a zone update: kernel looser than the store after $stale" >&3
	assert_eq "$stale" 0
}
