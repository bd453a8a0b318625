#!/usr/bin/env bats
# A root's pin directory (bpf/pindir.go): it records the root it belongs to
# and the BPF object it was installed from. Removed by hand, it comes back
# with the next rauha command of any kind; installed by an older rauha, it
# gets the new programs without a moment in which a member is not
# enforced; outliving its root, it is removed by any root's reconcile; and
# the explicit delete of a root's last zone takes it away.
#
# Knob: RAUHA_OLD: an older rauha binary for the upgrade test (default:
#       built by setup_file from the commit before the last change of the
#       BPF object).

load helpers
load zone_helpers

# The container of these tests runs a probe loop: each time the host
# creates /tmp/go in its rootfs it tries a connect outside its zone
# (192.0.2.1, TEST-NET-1: its own network namespace has no route there, so
# "Network is unreachable" is what an unenforced connect gets) and to read
# /etc/shadow, writes what each said to /tmp/out, then creates /tmp/done.
# While /tmp/loop exists it connects over and over, counting attempts in
# /tmp/count and writing every answer that is not EPERM to /tmp/leak.
probe_loop='
while :; do
	if [ -e /tmp/go ]; then
		rm -f /tmp/go /tmp/done
		{ nc -w1 192.0.2.1 80 </dev/null; echo "nc=$?"; cat /etc/shadow; echo "cat=$?"; } >/tmp/out 2>&1
		echo done >/tmp/done
	fi
	n=0
	while [ -e /tmp/loop ]; do
		nc -w1 192.0.2.1 80 </dev/null 2>/tmp/r
		grep -q "not permitted" /tmp/r || cat /tmp/r >>/tmp/leak
		n=$((n + 1))
		echo $n >/tmp/count
	done
	sleep 0.05
done'

# guarded BUNDLE ZONE: the bundle's container runs the probe loop in ZONE,
# whose policy allows no egress and denies /etc/shadow (which holds a
# secret).
guarded() {
	echo secret >"$(bundle_dir "$1")/rootfs/etc/shadow"
	set_args "$1" sh -c "$probe_loop"
	in_zone "$1" "$2" "$(policy "$2" <<-'EOF'
		[network]
		allowed_egress = []
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)"
}

# probe BUNDLE: one round of the probe loop; prints /tmp/out.
probe() {
	local r
	r=$(bundle_dir "$1")/rootfs/tmp
	rm -f "$r/done"
	touch "$r/go"
	if ! wait_file "$r/done" 10 >&2; then
		echo "# the probe loop did not answer; container output:" >&2
		cat "$BATS_TEST_TMPDIR"/*.out "$BATS_TEST_TMPDIR"/*.err >&2 2>/dev/null
		ls -la "$r" >&2
		return 1
	fi
	cat "$r/out"
}

# enforced BUNDLE: the probe is denied both ways.
enforced() {
	local out
	out=$(probe "$1")
	[[ $out == *"Operation not permitted"* && $out == *"nc=1"* ]] || fail "egress not denied: $out"
	[[ $out == *"Permission denied"* && $out != *secret* ]] || fail "/etc/shadow readable: $out"
}

# shadow_event ZONE SINCE: an event of the /etc/shadow denial newer than
# SINCE (RFC 3339) is recorded.
shadow_event() {
	wait_event "$1" ".control == \"file\" and (.object | startswith(\"/etc/shadow\")) and .time > \"$2\"" >/dev/null
}

now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }

# ---------------------------------------------------------------- restore

# The pins removed under a running member: egress is no longer denied (the
# cgroup programs went with their pins; Landlock still denies the file, but
# the observer that reports it went too). The next command restores both.
pins_removed_then() {
	local t out
	guarded b g
	run_ct c b
	enforced b
	rm -rf "$PIN_DIR"
	out=$(probe b)
	[[ $out == *"Network is unreachable"* ]] || fail "egress still denied without pins: $out"
	t=$(now)
	rrun rt "$@"
	assert_success
	[[ -e $PIN_DIR/link_observe_sys_exit ]] || fail "'rauha $*' did not restore the pins"
	enforced b
	shadow_event g "$t"
	rrun rt zone verify g
	show
	assert_success
}

@test "pins removed by hand: the next 'rauha list' restores enforcement, with events" {
	pins_removed_then list
}

@test "pins removed by hand: the next 'rauha state ID' restores enforcement, with events" {
	pins_removed_then state c
}

@test "pins removed by hand: the next 'rauha zone list' restores enforcement, with events" {
	pins_removed_then zone list
}

@test "pins: a root without zones gets no pins from list or state" {
	rrun rt list
	assert_success
	rrun rt zone list
	assert_success
	[[ ! -e $PIN_DIR ]] || fail "a root without zones got pins"
}

@test "pins: a create whose zone enforcement cannot be opened fails and leaves nothing" {
	is_rauha || skip "rauha-only behaviour"
	for n in b1 b2 b3; do
		make_bundle "$n" sleep 300
		in_zone "$n" z privileged
	done
	run_ct c1 b1
	# A pin of the other backend's: the root now looks like it holds both,
	# which no rauha opens. The container and its init are made while the
	# kernel's state opens beside them, so all of that must be undone.
	bpftool map create "$PIN_DIR/link_zone_file_open" type array key 4 value 4 entries 1 name rauha_fake ||
		fail "bpftool map create"
	rrun rt create --bundle "$(bundle_dir b2)" c2
	assert_failure
	assert_match "$output" "zone enforcement: .*holds the fallback backend"
	rm "$PIN_DIR/link_zone_file_open"
	assert_nothing_left c2 b2
	rrun rt zone inspect z
	assert_success
	jqe '[.members[].id] == ["c1"]' <<<"$stdout" >/dev/null || fail "c2 left its record: $stdout"
	run_ct c3 b3
	wait_status c1 running
}

# ---------------------------------------------------------------- upgrade

# setup_file builds the older rauha of the upgrade test once, outside any
# test's timeout (about two minutes on a busy 2-CPU host): from the commit
# before the last change of the BPF object, unless RAUHA_OLD names one.
# OLD_RAUHA is the binary, or "skip: REASON".
setup_file() {
	export OLD_RAUHA=${RAUHA_OLD:-}
	[[ -n $OLD_RAUHA ]] && return 0
	if ! is_rauha; then
		OLD_RAUHA="skip: rauha-only behaviour"
		return 0
	fi
	local rev out gobin dir
	rev=$(git -C "$REPO_ROOT" log -1 --format=%H -- bpf/rauha_x86_bpfel.o 2>/dev/null)
	[[ -n $rev ]] && rev=$(git -C "$REPO_ROOT" rev-parse -q --verify "$rev~" 2>/dev/null)
	if [[ -z $rev ]]; then
		OLD_RAUHA="skip: no git history to build an older rauha from (set RAUHA_OLD)"
		return 0
	fi
	dir=$CACHE_DIR/old-$rev
	out=$dir/rauha
	if [[ ! -x $out ]]; then
		gobin=$(command -v go || echo /usr/local/go/bin/go)
		rm -rf "$dir"
		mkdir -p "$dir/src"
		git -C "$REPO_ROOT" archive "$rev" | tar -x -C "$dir/src" || return 1
		(cd "$dir/src" && PATH=$(dirname "$gobin"):$PATH make build COMMIT="${rev:0:7}") >&2 || return 1
		mv "$dir/src/rauha" "$out"
		rm -rf "$dir/src"
	fi
	OLD_RAUHA=$out
}

# count_above FILE N: FILE holds a number above N (the loop rewrites it,
# so it may be empty for a moment).
count_above() {
	local n
	n=$(cat "$1")
	[[ -n $n && $n -gt $2 ]]
}

# link_prog PIN: the program id a pinned link runs.
link_prog() {
	bpftool -j link show pinned "$1" | jq -r .prog_id
}

@test "upgrade: a member created by an older rauha stays enforced while the new one replaces its programs" {
	local old=$OLD_RAUHA t count want rootfs before check
	[[ $old != skip:* ]] || skip "${old#skip: }"
	rootfs=$(bundle_dir b)/rootfs
	guarded b up
	if ! "$old" --root "$ROOT" run -d --bundle "$(bundle_dir b)" c >"$BATS_TEST_TMPDIR/c.out" 2>&1 </dev/null; then
		cat "$BATS_TEST_TMPDIR/c.out" >&2
		fail "the older rauha could not run the container"
	fi
	# Before: the older rauha's programs enforce, and report.
	t=$(now)
	enforced b
	"$old" --root "$ROOT" zone events up --format json | jqe --arg t "$t" 'select(.control == "file" and .time > $t)' >/dev/null ||
		fail "the older rauha recorded no event"
	[[ $(readlink "$PIN_DIR/object") != "sha256:$(sha256sum <"$REPO_ROOT/bpf/rauha_x86_bpfel.o" | cut -d' ' -f1)" ]] ||
		fail "the older rauha's pins already record this object"
	before=$(link_prog "$PIN_DIR/link_observe_sys_exit")

	# During: the member connects in a loop while the new rauha upgrades
	# (verify opens the enforcer) and reconciles.
	touch "$rootfs/tmp/loop"
	wait_file "$rootfs/tmp/count"
	# (verify may fail the container for what the older rauha did not set
	# up, e.g. its seccomp profile; the kernel's checks must pass.)
	rrun rt zone verify up
	show
	for check in "hooks attached" "kernel policy" "container c: member"; do
		grep -Eq "^PASS +$check " <<<"$stdout" || fail "verify after the upgrade: $check does not pass"
	done
	rrun rt zone reconcile
	assert_success
	# The loop went on after the upgrade, too.
	count=$(cat "$rootfs/tmp/count")
	retry 100 0.1 count_above "$rootfs/tmp/count" "${count:-0}"
	rm "$rootfs/tmp/loop"
	[[ ! -s $rootfs/tmp/leak ]] || fail "connects got through during the upgrade: $(sort "$rootfs/tmp/leak" | uniq -c)"
	echo "# $(cat "$rootfs/tmp/count") connects during the upgrade, all denied" >&3

	# After: the pins hold the new object's programs, and they enforce.
	want="sha256:$(sha256sum <"$REPO_ROOT/bpf/rauha_x86_bpfel.o" | cut -d' ' -f1)"
	assert_eq "$(readlink "$PIN_DIR/object")" "$want"
	assert_eq "$(readlink "$PIN_DIR/root")" "$ROOT"
	[[ $(link_prog "$PIN_DIR/link_observe_sys_exit") != "$before" ]] || fail "the observer still runs the older program"
	t=$(now)
	enforced b
	shadow_event up "$t"
	rrun rt delete --force c
	assert_success
}

# ---------------------------------------------------------------- orphans

@test "reconcile: the pins of a root that is gone are removed by another root's reconcile" {
	local other pins
	other=$BATS_TEST_TMPDIR/other-root
	pins=$(pin_dir_of "$other")
	echo "$pins" >"$BATS_TEST_TMPDIR/other-pins"
	in_zone b kept "$(policy kept <<-'EOF'
		[network]
		allowed_egress = []
	EOF
	)"
	set_args b true
	"$RAUHA" --root "$other" run --bundle "$(bundle_dir b)" c || fail "run in the other root"
	[[ -e $pins/link_observe_sys_exit ]] || fail "the other root has no pins"
	assert_eq "$(readlink "$pins/root")" "$other"
	# The zone outlives its container; then the root's state goes.
	rm -rf "$other"
	rrun rt zone reconcile
	assert_success
	assert_match "removed the kernel programs and pins of $pins: its root is gone"
	[[ ! -e $pins ]] || fail "$pins still there"
	[[ ! -e $(bpf_anchor_of "$pins") ]] || fail "the anchor cgroup of $pins still there"
}

# bpf_anchor_of PINS: the anchor cgroup of a pin directory (bpf/anchor.go).
bpf_anchor_of() {
	local u=/sys/fs/cgroup
	[[ -f /sys/fs/cgroup/unified/cgroup.procs ]] && u=/sys/fs/cgroup/unified
	echo "$u/$(basename "$1").anchor"
}

@test "zone delete: the root's last zone takes its pins and anchor cgroup, a container's own zone does not" {
	make_bundle own sleep 600
	run_ct solo own
	[[ -e $PIN_DIR ]] || fail "no pins after the first container"
	rrun rt delete --force solo
	assert_success
	[[ -e $PIN_DIR ]] || fail "the delete of a container alone in its zone removed the pins (the next create would reinstall them)"
	in_zone b last standard
	run_ct c b
	rrun rt zone delete --force last
	assert_success
	[[ ! -e $PIN_DIR ]] || fail "zone delete of the last zone left $PIN_DIR"
	[[ ! -e $(bpf_anchor_of "$PIN_DIR") ]] || fail "zone delete of the last zone left the anchor cgroup"
}

# The other root's zone and pins, should the orphan test fail before its
# reconcile removed them.
eval "zone_$(declare -f teardown)"
teardown() {
	local pins
	if [[ -f $BATS_TEST_TMPDIR/other-pins ]]; then
		pins=$(cat "$BATS_TEST_TMPDIR/other-pins")
		if [[ -d $BATS_TEST_TMPDIR/other-root ]]; then
			timeout 30 "$RAUHA" --root "$BATS_TEST_TMPDIR/other-root" zone delete --force kept >&2 || true
		fi
		if [[ -e $pins ]]; then
			echo "# teardown: removing $pins" >&2
			rm -rf "$pins"
			rmdir "$(bpf_anchor_of "$pins")" 2>/dev/null || true
		fi
	fi
	zone_teardown
}
