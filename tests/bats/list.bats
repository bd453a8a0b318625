#!/usr/bin/env bats
# list: every container under --root.

load helpers

@test "list: empty root prints only the header" {
	rrun rt list
	assert_success
	assert_eq "$(awk '{$1=$1; print}' <<<"$stdout")" "ID PID STATUS BUNDLE CREATED OWNER"
}

@test "list: table header and one row per container" {
	make_bundle b2
	create_ct c1 b
	run_ct c2 b2
	rrun rt list
	assert_success
	assert_eq "$(head -n1 <<<"$stdout" | awk '{$1=$1; print}')" "ID PID STATUS BUNDLE CREATED OWNER"
	assert_eq "$(wc -l <<<"$stdout")" 3
	row=$(awk '$1=="c1"' <<<"$stdout")
	read -r id pid st bundle created owner <<<"$row"
	assert_eq "$pid" "$(ct_pid c1)"
	assert_eq "$st" created
	assert_eq "$bundle" "$(bundle_dir b)"
	assert_match "$created" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'
	assert_eq "$owner" root
	assert_eq "$(awk '$1=="c2"{print $3}' <<<"$stdout")" running
}

@test "list: columns are aligned like runc's tabwriter" {
	create_ct c1
	rrun rt list
	assert_success
	# Every column starts at the same offset in the header and in the row.
	hdr=$(sed -n 1p <<<"$stdout")
	row=$(sed -n 2p <<<"$stdout")
	for col in PID STATUS BUNDLE CREATED OWNER; do
		off=${hdr%%"$col"*}
		off=${#off}
		[[ ${row:off-1:1} == " " && ${row:off:1} != " " ]] || fail "column $col not aligned: '$hdr' / '$row'"
	done
}

@test "list: -q prints only ids" {
	make_bundle b2
	create_ct c1 b
	create_ct c2 b2
	rrun rt list -q
	assert_success
	assert_eq "$(sort <<<"$stdout" | tr '\n' ' ')" "c1 c2 "
}

@test "list: --format json" {
	cfg b '.annotations = {"k": "v"}'
	create_ct c1
	rrun rt list --format json
	assert_success
	assert_eq "$(jq -r 'type' <<<"$stdout")" array
	assert_eq "$(jq -r 'length' <<<"$stdout")" 1
	assert_eq "$(jq -r '.[0].id' <<<"$stdout")" c1
	assert_eq "$(jq -r '.[0].status' <<<"$stdout")" created
	assert_eq "$(jq -r '.[0].pid' <<<"$stdout")" "$(ct_pid c1)"
	assert_eq "$(jq -r '.[0].bundle' <<<"$stdout")" "$(bundle_dir b)"
	assert_eq "$(jq -r '.[0].rootfs' <<<"$stdout")" "$(bundle_dir b)/rootfs"
	assert_eq "$(jq -r '.[0].owner' <<<"$stdout")" root
	assert_eq "$(jq -c '.[0].annotations' <<<"$stdout")" '{"k":"v"}'
	jqe '.[0] | has("created") and has("ociVersion")' <<<"$stdout" >/dev/null || fail "missing fields: $stdout"
}

@test "list: --format json on an empty root is null or []" {
	rrun rt list --format json
	assert_success
	[[ $stdout == null || $(jq -c . <<<"$stdout") == "[]" ]] || fail "got '$stdout'"
}

@test "list: -f table is the default" {
	create_ct c1
	rrun rt list -f table
	assert_success
	assert_eq "$(head -n1 <<<"$stdout" | awk '{$1=$1; print}')" "ID PID STATUS BUNDLE CREATED OWNER"
}

@test "list: unknown --format fails" {
	rrun rt list --format yaml
	assert_failure 1
}

@test "list: a stopped container is listed as stopped with pid 0" {
	set_args b true
	create_ct c1
	rt start c1
	wait_status c1 stopped
	rrun rt list
	assert_success
	assert_eq "$(awk '$1=="c1"{print $2, $3}' <<<"$stdout")" "0 stopped"
}

@test "list and zone list: 40 containers, read in parallel, in id order with their statuses" {
	# 40 bundles on one rootfs, each with its own cgroup.
	for i in $(seq -w 1 40); do
		mkdir -p "$BATS_TEST_TMPDIR/m$i"
		jq --arg root "$(bundle_dir b)/rootfs" --arg cg "$(cg_path "m$i")" \
			'.root.path = $root | .linux.cgroupsPath = $cg' \
			"$(bundle_dir b)/config.json" >"$BATS_TEST_TMPDIR/m$i/config.json"
		create_ct "c$i" "m$i"
	done
	rt start c07
	rt start c33
	rrun rt list
	assert_success
	assert_eq "$(sed 1d <<<"$stdout" | awk '{print $1}' | tr '\n' ' ')" "$(printf 'c%s ' $(seq -w 1 40))"
	assert_eq "$(awk '$3=="running"{print $1}' <<<"$stdout" | tr '\n' ' ')" "c07 c33 "
	assert_eq "$(awk '$3=="created"' <<<"$stdout" | wc -l)" 38
	assert_eq "$(awk -v p="$(ct_pid c21)" '$1=="c21"{print ($2==p)}' <<<"$stdout")" 1
	# Each container is the one member of its own zone, found through the
	# member index, with the same live status.
	rrun rt zone list
	assert_success
	assert_eq "$(awk 'NR>1 && $1 ~ /^c[0-9]+$/ && $5 == 1' <<<"$stdout" | wc -l)" 40
	rrun rt zone inspect c33
	assert_success
	assert_eq "$(jq -r '.members | map(.id + "=" + .status) | join(" ")' <<<"$stdout")" "c33=running"
}

@test "list: a --root that does not exist fails" {
	runc_1_1_differs "runc 1.1 lists a missing --root as empty"
	rrun "$RUNTIME" --root "$BATS_TEST_TMPDIR/no-such-root" list
	assert_error_line "no-such-root.*(no such file|not exist)"
	[[ ! -e $BATS_TEST_TMPDIR/no-such-root ]] || fail "list created the root"
}

@test "list: global flags after the command (runc 1.5)" {
	runc_1_1_differs "urfave/cli v1 takes global flags only before the command"
	run_ct c1
	rrun "$RUNTIME" list -q --root "$ROOT"
	assert_success
	assert_eq "$stdout" c1
}
