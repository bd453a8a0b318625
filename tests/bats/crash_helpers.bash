#!/usr/bin/env bash
# Helpers of crash.bats: containers sharing one read-only rootfs, an
# operation runner that SIGKILLs rauha at a random moment, and a leak
# checker comparing the store, the state directory, every cgroup hierarchy
# and the root's BPF pins.

# crash_setup: a policy-enforced zone "cz" (fallback backend here) and the
# shared bundle template. Containers live under cgroup $CG_BASE/<id>.
crash_setup() {
	CG_BASE=$CG_PREFIX/$TEST_UID-crash
	SHARED_ROOTFS=$BATS_TEST_TMPDIR/b/rootfs
	CRASH_POLICY=$(policy crash <<-'EOF2'
		[zone]
		mode = "enforce"
		admission = "audit"
		[filesystem]
		deny = ["/etc/shadow"]
		[network]
		allowed_egress = ["127.0.0.1:9"]
	EOF2
	)
	rt zone create --policy "$CRASH_POLICY" cz >/dev/null || fail "zone create cz"
}

# crash_bundle ID: a bundle directory for container ID in zone cz, sharing
# the read-only rootfs; prints its path.
crash_bundle() {
	local id=$1 dir=$BATS_TEST_TMPDIR/bundles/$1
	mkdir -p "$dir"
	jq --arg cg "$CG_BASE/$id" --arg root "$SHARED_ROOTFS" \
		'.linux.cgroupsPath = $cg | .root = {path: $root, readonly: true} |
		 .annotations["org.rauha.zone"] = "cz"' \
		"$BATS_TEST_TMPDIR/b/config.json" >"$dir/config.json"
	echo "$dir"
}

# zone_cgids: the cgroup ids registered in the kernel's zone_by_cgid map of
# this root, one decimal per line.
zone_cgids() {
	local m=$PIN_DIR/zone_by_cgid
	[[ -e $m ]] || return 0
	bpftool -j map dump pinned "$m" | jq -r '.[] |
		(if (.key|type) == "array" then
			[.key[] | ltrimstr("0x")] | reverse | join("") | "0x" + . else .key end)' |
		while read -r k; do printf '%d\n' "$k"; done
}

# check_leaks: print one line per leak, return the count as $LEAKS.
# A leak is: a cgroup (any hierarchy) under $CG_BASE of no container with
# state; a state directory without a record or a record without state; a
# registered cgroup id or member pin directory of no live record; a live
# container that is not enforced with its stored policy (zone verify).
check_leaks() {
	local out=$BATS_TEST_TMPDIR/leaks
	: >"$out"
	local recs=$BATS_TEST_TMPDIR/recs.json
	rt zone list --format json >"$BATS_TEST_TMPDIR/zones.json" 2>/dev/null ||
		echo "zone list failed" >>"$out"
	jq '[.[] | select(.name == "cz") | .members[]?]' "$BATS_TEST_TMPDIR/zones.json" >"$recs" 2>/dev/null || echo '[]' >"$recs"
	# Every zone other than cz is implicit and would be a leak too.
	jq -r '.[] | select(.name != "cz") | "zone \(.name) left behind"' "$BATS_TEST_TMPDIR/zones.json" >>"$out" 2>/dev/null
	local id h d cgid
	declare -A hasrec=() hasstate=() livecg=()
	for id in $(jq -r '.[].id' "$recs"); do hasrec[$id]=1; done
	for d in "$ROOT"/*/; do
		[[ -d $d ]] || continue
		id=$(basename "$d")
		[[ $id == events ]] && continue
		if [[ ! -f $d/state.json ]]; then
			echo "orphan state directory $d (no state.json)" >>"$out"
			continue
		fi
		hasstate[$id]=1
		[[ -n ${hasrec[$id]:-} ]] || echo "container $id has state but no record" >>"$out"
	done
	for id in "${!hasrec[@]}"; do
		[[ -n ${hasstate[$id]:-} ]] || echo "record $id has no container" >>"$out"
	done
	for h in /sys/fs/cgroup/*/; do
		for d in "${h%/}$CG_BASE"/*/; do
			[[ -d $d ]] || continue
			id=$(basename "$d")
			[[ -n ${hasstate[$id]:-} ]] || echo "cgroup $d of no container" >>"$out"
		done
	done
	# Live records: their cgroup ids may be in the kernel, nothing else.
	for cgid in $(jq -r '.[] | select(.status == "running" or .status == "created" or .status == "paused") | .cgroup_id' "$recs"); do
		livecg[$cgid]=1
	done
	for cgid in $(zone_cgids); do
		[[ -n ${livecg[$cgid]:-} ]] || echo "stale zone_by_cgid entry $cgid" >>"$out"
	done
	if [[ -d $PIN_DIR/members ]]; then
		for d in "$PIN_DIR"/members/*/; do
			[[ -d $d ]] || continue
			cgid=$(basename "$d")
			[[ -n ${livecg[$cgid]:-} ]] || echo "stale member pin $d" >>"$out"
		done
	fi
	# Every live member is registered and the kernel holds the stored policy.
	if [[ ${#livecg[@]} -gt 0 ]] && ! rt zone verify cz >"$BATS_TEST_TMPDIR/verify" 2>&1; then
		grep -iE 'fail|✗|not ' "$BATS_TEST_TMPDIR/verify" | sed 's/^/verify: /' >>"$out"
		[[ -s $out ]] || echo "zone verify cz failed" >>"$out"
	fi
	LEAKS=$(wc -l <"$out")
	if [[ $LEAKS -gt 0 ]]; then
		sed 's/^/# leak: /' "$out" >&3
	fi
}
