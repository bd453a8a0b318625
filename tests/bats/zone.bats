#!/usr/bin/env bats
# `rauha zone ...` end to end: lifecycle, membership, admission, verify and
# the event log. The controls themselves are in enforce.bats.

load helpers
load zone_helpers

# check_passed REPORT NAME: the report has check NAME and it passed.
check_passed() {
	jqe --arg n "$2" 'any(.checks[]; .name == $n and .passed)' <<<"$1" >/dev/null ||
		fail "check '$2' missing or failed in: $1"
}

# check_failed REPORT NAME REGEX: check NAME failed with a detail matching REGEX.
check_failed() {
	local d
	d=$(jq -r --arg n "$2" '.checks[] | select(.name == $n and (.passed | not)) | .detail' <<<"$1")
	[[ -n $d ]] || fail "check '$2' missing or passed in: $1"
	assert_match "$d" "$3"
}

@test "default zone: a container without annotations gets its own standard zone, busybox works unchanged" {
	run_ct plain b
	rrun rt zone inspect plain
	assert_success
	jqe '.name == "plain" and .policy_source == "preset:standard" and .implicit and ([.members[].id] == ["plain"])' <<<"$stdout" >/dev/null ||
		fail "unexpected zone: $stdout"
	rt zone list | grep -qE '^plain +[0-9]+ +enforce +preset:standard +1$' || fail "zone list: $(rt zone list)"

	rexec plain sh -c 'ls / >/dev/null && echo hello >/tmp/x && cat /tmp/x | tr a-z A-Z && echo quiet >/dev/null && head -c4 /dev/zero | wc -c && id -u && hostname'
	assert_success
	assert_eq "$stdout" $'HELLO\n4\n0\nrauha'
	assert_eq "$stderr" ""

	rrun rt delete --force plain
	assert_success
	zone_exists plain && fail "the implicit zone outlived its container"
	assert_nothing_left plain
}

@test "zone lifecycle: create, list, inspect members, delete refused with members, delete --force" {
	rrun rt zone create web
	assert_success
	rrun rt zone create web
	assert_error_line "zone web already exists"
	rrun rt zone create --policy "$(policy db <<-'EOF'
		[zone]
		admission = "audit"
		[network]
		allowed_egress = ["10.0.0.0/8:5432"]
	EOF
	)" db
	assert_success

	rrun rt zone list --format json
	assert_success
	assert_eq "$(jq -c '[.[] | {name, src: .policy_source, n: (.members | length)}] | sort_by(.name)' <<<"$stdout")" \
		"[{\"name\":\"db\",\"src\":\"file:$BATS_TEST_TMPDIR/db.toml\",\"n\":0},{\"name\":\"web\",\"src\":\"preset:standard\",\"n\":0}]"

	in_zone b web
	run_ct w1 b
	make_bundle b2
	in_zone b2 web
	run_ct w2 b2
	rrun rt zone inspect web
	assert_success
	assert_eq "$(jq -c '[.members[].id] | sort' <<<"$stdout")" '["w1","w2"]'
	jqe '.members[] | select(.id == "w1") | .cgroup_id > 0' <<<"$stdout" >/dev/null || fail "no cgroup id: $stdout"

	# A member asking for another policy than the zone's is refused.
	make_bundle b3
	in_zone b3 web strict
	rrun rt run -d --bundle "$(bundle_dir b3)" w3
	assert_failure
	assert_match "$stderr" "zone web already exists with policy preset:standard"
	assert_nothing_left w3 b3

	rrun rt zone delete web
	assert_error_line "zone web has 2 member\(s\) \(w1, w2\): delete them first, or use --force"
	assert_eq "$(ct_status w1)" running
	rrun rt zone delete --force web
	assert_success
	zone_exists web && fail "zone web still listed"
	assert_nothing_left w1 b
	assert_nothing_left w2 b2

	rrun rt zone delete db
	assert_success
	rrun rt zone list --format json
	assert_eq "$stdout" "[]"
	rrun rt zone inspect db
	assert_error_line "zone db does not exist"
}

@test "admission strict: a container asking for an unavailable control is refused, nothing left" {
	pol=$(policy audit-files <<-'EOF'
		[zone]
		admission = "strict"
		mode = "audit"
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)
	in_zone b needy "$pol"
	rrun rt create --bundle "$(bundle_dir b)" needy
	assert_failure
	assert_match "$stderr" "zone needy \(admission strict\) refuses container needy: .*filesystem and exec rules in audit mode"
	assert_nothing_left needy
	zone_exists needy && fail "zone needy was left behind"
	rrun rt list -q
	assert_eq "$stdout" ""
	# Admission came before every write: not even the database was created
	# (the zone came with the container, so there is no event log either),
	# and no kernel programs were installed for the root.
	assert_eq "$(ls -A "$ROOT")" ""
	[[ ! -e $PIN_DIR ]] || fail "the refused create installed $PIN_DIR"
}

@test "admission strict: a container refused by an existing zone is an admission event of the zone, nothing else is left" {
	rt zone create iso --policy "$(policy iso <<-'EOF'
		[zone]
		admission = "strict"
		[network]
		mode = "isolated"
	EOF
	)" >/dev/null
	local reason="network.mode=isolated needs a network namespace, but the container shares the host's" ev
	host_net b
	in_zone b iso
	rrun rt run -d --bundle "$(bundle_dir b)" hostnet
	assert_error_line "zone iso \(admission strict\) refuses container hostnet: $reason"
	assert_nothing_left hostnet
	rrun rt list -q
	assert_eq "$stdout" ""
	assert_eq "$(zone_json iso | jq -c '.members')" "[]"

	# The bundle asks for another policy than the zone's: refused, recorded.
	make_bundle b2
	in_zone b2 iso strict
	rrun rt run -d --bundle "$(bundle_dir b2)" other
	assert_match "$stderr" "zone iso already exists with policy file:$BATS_TEST_TMPDIR/iso.toml"
	assert_nothing_left other b2

	ev=$(zone_events iso | jq -c 'select(.control == "admission")')
	assert_eq "$(jq -r '[.container, .decision, .comm, .object] | join("|")' <<<"$ev")" \
		"hostnet|deny|rauha|$reason
other|deny|rauha|annotation org.rauha.policy=strict asks for another policy than the zone's file:$BATS_TEST_TMPDIR/iso.toml"
	rrun rt zone events iso
	assert_success
	assert_match "$stdout" "DENY zone=iso container=hostnet pid=[0-9]+ comm=rauha control=admission object=\"network.mode=isolated needs"
	# Only the zone that exists has a log: nothing for the refused ids.
	assert_eq "$(ls "$ROOT/events")" "iso.jsonl"
}

@test "admission strict: zone create refuses a policy with an unavailable control" {
	pol=$(policy audit-files <<-'EOF'
		[zone]
		admission = "strict"
		mode = "audit"
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)
	rrun rt zone create --policy "$pol" needy
	assert_failure
	assert_match "$stderr" "filesystem and exec rules in audit mode"
	zone_exists needy && fail "zone needy was stored although its policy cannot be enforced"
	return 0
}

@test "a zone named by annotation must exist unless the bundle names its policy: a typo does not unconfine" {
	rt zone create web --preset strict >/dev/null
	# A typo in the zone name: refused, with how to create the zone.
	in_zone b wbe
	rrun rt run -d --bundle "$(bundle_dir b)" typo
	assert_error_line "zone wbe does not exist: create it first with 'rauha zone create wbe --preset strict\|standard\|privileged\|audit' or 'rauha zone create wbe --policy FILE', or name its policy in the annotation org.rauha.policy"
	assert_nothing_left typo
	zone_exists wbe && fail "a zone was made for the typo"

	# The operator's zone create was refused (strict admission, a control
	# this kernel cannot give): the containers meant for it are refused too.
	rrun rt zone create --policy "$(policy audit-files <<-'EOF'
		[zone]
		admission = "strict"
		mode = "audit"
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)" jail
	assert_failure
	in_zone b jail
	rrun rt run -d --bundle "$(bundle_dir b)" meant-for-jail
	assert_error_line "zone jail does not exist: create it first"
	assert_nothing_left meant-for-jail
	zone_exists jail && fail "zone jail exists"

	# The zone that exists is joined; a bundle naming a policy creates its zone.
	in_zone b web
	run_ct w1 b
	make_bundle b2
	in_zone b2 fresh standard
	run_ct f1 b2
	rrun rt zone inspect fresh
	assert_success
	jqe '.policy_source == "preset:standard" and (.implicit | not)' <<<"$stdout" >/dev/null || fail "zone fresh: $stdout"
}

@test "admission audit: the container starts and verify names the unavailable control (exit 1)" {
	in_zone b lenient "$(policy lenient <<-'EOF'
		[zone]
		admission = "audit"
		mode = "audit"
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)"
	run_ct lenient b
	assert_match "$(cat "$BATS_TEST_TMPDIR/lenient.err")" "zone lenient admits container lenient without: filesystem and exec rules in audit mode"

	rrun rt zone verify lenient --format json
	assert_failure 1
	jqe '.isolated == false' <<<"$stdout" >/dev/null || fail "isolated: $stdout"
	check_failed "$stdout" "controls available" "filesystem and exec rules in audit mode"
	rrun rt zone verify lenient
	assert_failure 1
	assert_match "$stdout" "filesystem and exec rules in audit mode"
}

@test "verify: a normal zone is isolated; the JSON report names zone, model, backend and checks" {
	in_zone b v strict
	run_ct vc b
	rrun rt zone verify v --format json
	assert_success
	r=$stdout
	jqe '.zone == "v" and .model == "SyscallPolicy" and .isolated == true' <<<"$r" >/dev/null || fail "report: $r"
	# This host refuses BPF-LSM programs (see ENFORCEMENT.md).
	assert_eq "$(jq -r .backend <<<"$r")" landlock
	for c in "zone recorded" "controls available" "container vc: state" "container vc: cgroup" \
		"container vc: namespaces" "hooks attached" "kernel policy" "container vc: member" events; do
		check_passed "$r" "$c"
	done

	rrun rt zone verify --container vc --format json
	assert_success
	jqe '.zone == "v" and .container == "vc" and .isolated' <<<"$stdout" >/dev/null || fail "report: $stdout"
	rrun rt zone verify nosuchzone
	assert_failure
}

@test "verify: names the known limits that apply to the zone, and only those" {
	in_zone b v strict
	run_ct vc b
	rrun rt zone verify v --format json
	assert_success
	jqe '.backend == "landlock"
		and any(.limits[]; startswith("zone update: a running process'"'"'s Landlock domain cannot change"))
		and any(.limits[]; startswith("zone update: capabilities and syscalls.deny"))
		and all(.limits[]; startswith("signals:") | not)' <<<"$stdout" >/dev/null || fail "limits: $stdout"
	rrun rt zone verify v
	assert_match "$stdout" "KNOWN LIMITS"

	# A member that shares a pid namespace is signal-scoped on this backend:
	# a SIGIO that Landlock refuses leaves no event.
	make_bundle b2
	host_pid b2
	run_ct hc b2
	rrun rt zone verify --container hc --format json
	jqe 'any(.limits[]; startswith("signals: a SIGIO or SIGURG"))' <<<"$stdout" >/dev/null || fail "limits: $stdout"

	make_bundle b3
	in_zone b3 p privileged
	run_ct pc b3
	rrun rt zone verify p --format json
	assert_success
	jqe '.limits == []' <<<"$stdout" >/dev/null || fail "a zone without rules has limits: $stdout"
	rrun rt zone verify p
	[[ $stdout != *"KNOWN LIMITS"* ]] || fail "$stdout"
}

@test "verify and reconcile: programs left on an unpinned map are named by verify and reinstalled by reconcile" {
	in_zone b v strict
	run_ct vc b
	# The next command pins a fresh zone_by_cgid; the installed programs
	# still read the old one, so no update reaches them any more.
	rm "$PIN_DIR/zone_by_cgid"
	rrun rt zone verify v --format json
	assert_failure 1
	check_failed "$stdout" "hooks attached" "not pinned here"
	rrun rt zone reconcile
	assert_success
	assert_match "$stdout" "kernel programs reinstalled"
	rrun rt zone verify v --format json
	assert_success
	check_passed "$stdout" "hooks attached"
	check_passed "$stdout" "container vc: member"
}

@test "verify: a member sharing the host's network and pid namespaces fails the namespaces check" {
	host_net b
	host_pid b
	run_ct hostish b
	rrun rt zone verify --container hostish --format json
	assert_failure 1
	jqe '.isolated == false' <<<"$stdout" >/dev/null || fail "report: $stdout"
	check_failed "$stdout" "container hostish: namespaces" "shares the host's pid, net namespace"
	check_passed "$stdout" "container hostish: member"
}

@test "events: kept per zone under <root>/events without a follower, and outlive the container" {
	for z in ea eb; do
		make_bundle "$z"
		shadow_denied "$z" "$z"
		run_ct "c$z" "$z"
		rexec "c$z" cat /etc/shadow
		assert_failure 1
	done
	wait_event ea '.control == "file"' >/dev/null
	[[ -s $ROOT/events/ea.jsonl && -s $ROOT/events/eb.jsonl ]] || fail "event files: $(ls -l "$ROOT/events")"
	assert_eq "$(zone_events ea | jq -r '.container' | sort -u)" cea
	assert_eq "$(zone_events eb | jq -r '.container' | sort -u)" ceb
	assert_eq "$(rt zone events --format json | jq -r .zone | sort -u | tr '\n' ' ')" "ea eb "
	rrun rt zone events ea --since "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
	assert_success
	assert_eq "$stdout" ""
	rrun rt zone events ea
	assert_success
	assert_match "$stdout" "DENY zone=ea container=cea pid=[0-9]+ comm=cat control=file object=\"/etc/shadow \(permission denied\)\""

	rt delete --force cea
	assert_eq "$(zone_events ea | jq -r .object | sort -u)" "/etc/shadow (permission denied)"
}

@test "events --follow: a running follower receives a new event" {
	shadow_denied b followed
	run_ct fol b
	# Started directly (not under timeout, whose child would outlive a kill of
	# it) and without bats' fd 3; stopped by pid here, or by teardown.
	bg "$RAUHA" --root "$ROOT" zone events followed --follow --format json \
		>"$BATS_TEST_TMPDIR/follow.out" 2>"$BATS_TEST_TMPDIR/follow.err" </dev/null 3>&-
	follower=$(tail -n1 "$BATS_TEST_TMPDIR/bg.pids")
	# The follower prints the events already logged first: once the first
	# denial is printed, it is following, and the second one is new to it.
	rexec fol cat /etc/shadow
	assert_failure 1
	retry 100 0.1 eval '[[ $(grep -c . "$BATS_TEST_TMPDIR/follow.out") -ge 1 ]]' ||
		fail "follower printed: $(cat "$BATS_TEST_TMPDIR/follow.out" "$BATS_TEST_TMPDIR/follow.err")"
	rexec fol cat /etc/shadow
	assert_failure 1
	retry 100 0.1 eval '[[ $(grep -c . "$BATS_TEST_TMPDIR/follow.out") -ge 2 ]]' ||
		fail "follower printed: $(cat "$BATS_TEST_TMPDIR/follow.out" "$BATS_TEST_TMPDIR/follow.err")"
	[[ $(jq -c 'select(.zone == "followed" and .container == "fol" and .control == "file")' "$BATS_TEST_TMPDIR/follow.out" | grep -c .) -eq 2 ]] ||
		fail "follower printed: $(cat "$BATS_TEST_TMPDIR/follow.out" "$BATS_TEST_TMPDIR/follow.err")"
	kill -TERM "$follower"
	wait "$follower" || fail "the follower exited with $? on SIGTERM: $(cat "$BATS_TEST_TMPDIR/follow.err")"
}

@test "reconcile: member pins registered in no zone are removed, a live member's stay" {
	make_bundle b2
	in_zone b v strict
	in_zone b2 v strict
	run_ct vc b
	run_ct vd b2
	[[ -d $PIN_DIR/members ]] || skip "this backend pins no per-member links"
	local cg
	cg=$(rt zone inspect v | jq -r '.members[] | select(.id == "vd") | .cgroup_id')
	[[ -d $PIN_DIR/members/$cg ]] || fail "no member pins for vd (cgroup $cg): $(ls "$PIN_DIR/members")"
	rt kill vd KILL
	wait_status vd stopped
	# What a create or delete killed between its two kernel steps leaves:
	# the cgroup's links pinned, the cgroup registered in no zone.
	unregister_cgroup "$PIN_DIR" "$cg"
	rrun rt zone reconcile
	assert_success
	assert_match "$stdout" "removed the member pins of cgroup $cg: registered in no zone"
	[[ ! -e $PIN_DIR/members/$cg ]] || fail "vd's member pins are still there: $(ls "$PIN_DIR/members/$cg")"
	rrun rt zone verify v --format json
	assert_success
	check_passed "$stdout" "container vc: member"
	rrun rt delete vd
	assert_success
}

@test "reconcile: a kernel policy of no zone is removed, the live zone's stays" {
	in_zone b v strict
	run_ct vc b
	local m=$PIN_DIR/zone_policy size vid
	size=$(bpftool -j map show pinned "$m" | jq -r .bytes_value)
	vid=$(rt zone inspect v | jq -r .id)
	# What a zone delete killed between the store and the kernel leaves:
	# a policy under an id no zone has.
	bpftool map update pinned "$m" key hex 07 02 00 00 value hex $(printf '00 %.0s' $(seq "$size"))
	rrun rt zone reconcile
	assert_success
	assert_match "$stdout" "removed the policy of zone id 519: no zone has that id"
	bpftool map lookup pinned "$m" key hex 07 02 00 00 >/dev/null 2>&1 && fail "the policy of zone id 519 is still there"
	rrun rt zone verify v --format json
	assert_success
	check_passed "$stdout" "container vc: member"
	[[ $vid != 519 ]] || fail "the live zone has id 519"
}

@test "zone ids: a root that has seen more zones than the kernel's maps hold (1023) still creates and enforces them" {
	# Every container without a zone annotation has a zone of its own, so a
	# busy root goes through more zones than that within hours.
	rt zone create keeper >/dev/null
	local i keeper last id le
	keeper=$(zone_json keeper | jq .id)
	for ((i = 0; i < 1030; i++)); do
		rt zone create "churn$i" >/dev/null || fail "zone create churn$i failed"
		[[ $i -lt 1029 ]] || last=$(zone_json "churn$i" | jq .id)
		rt zone delete "churn$i" || fail "zone delete churn$i failed"
	done
	# The ids went round: the next one after the last, skipping keeper's.
	id=$((last % 1023 + 1))
	[[ $id -ne $keeper ]] || id=$((id % 1023 + 1))
	# What a zone delete killed before its kernel removal leaves when keeper
	# let that zone signal and ptrace it: an entry granting the id to come.
	le() { printf '%02x %02x %02x %02x ' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
	bpftool map update pinned "$PIN_DIR/zone_peers" key hex $(le "$id") $(le "$keeper") value hex $(le 3)
	rrun rt zone verify keeper
	assert_failure
	make_bundle b
	shadow_denied b late
	run_ct late-ct b
	assert_eq "$(zone_json late | jq .id)" "$id"
	bpftool map lookup pinned "$PIN_DIR/zone_peers" key hex $(le "$id") $(le "$keeper") >/dev/null 2>&1 &&
		fail "keeper still lets zone id $id, now late's, signal it"
	rrun rt zone verify keeper
	assert_success
	rexec late-ct cat /etc/shadow
	assert_failure 1
	wait_event late '.control == "file" and .container == "late-ct"' >/dev/null
	rrun rt zone verify late
	assert_success
	rrun rt delete --force late-ct
	assert_success
	assert_nothing_left late-ct b
}
