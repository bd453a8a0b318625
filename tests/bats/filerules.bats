#!/usr/bin/env bats
# Filesystem rules beyond open(): on read_only and deny paths, metadata
# changes (chmod, chown, utimensat, setxattr), other names of a denied inode
# (a hard link in the image, a file handle), unix sockets in a denied
# directory, and a file created at a denied path after start. Each attack
# first succeeds under plain runc with the same bundle, then the zone denies
# it (errno), the denial is an event where the mechanism gives one, and
# verify checks the mounts that hold the rules.

load helpers
load zone_helpers

RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}

# runc_rt ARGS...: plain runc with a root of this test's own.
runc_rt() {
	timeout -k 5 "$RT_TIMEOUT" "$RUNC" --root "$BATS_TEST_TMPDIR/runc-state" "$@"
}

# runc_run ID BUNDLE-NAME: runc run --detach, failing the test on error.
runc_run() {
	if ! runc_rt run --detach --bundle "$(bundle_dir "$2")" "$1" \
		>"$BATS_TEST_TMPDIR/$1.out" 2>"$BATS_TEST_TMPDIR/$1.err" </dev/null; then
		cat "$BATS_TEST_TMPDIR/$1.err" >&2
		fail "runc run -d $1 failed"
	fi
}

# xattr FILE: the user.rauha attribute of a host file, empty when unset.
xattr() { "$(build_helper fileattack)" getxattr "$1" user.rauha 2>/dev/null || true; }

eval "zone_$(declare -f teardown)"
teardown() {
	local id
	for id in $(runc_rt list -q 2>/dev/null); do
		runc_rt delete --force "$id" >/dev/null 2>&1 || true
	done
	zone_teardown
}

# attack_bundle NAME: a bundle whose root holds a secret /etc/shadow with a
# hard link /home/shadow.bak, a read-only tree /srv/ro, the fileattack
# helper, and the capabilities an attacker wants (CHOWN, FOWNER,
# DAC_OVERRIDE, DAC_READ_SEARCH, FSETID).
attack_bundle() {
	local r
	make_bundle "$1" "${@:2}"
	r=$(bundle_dir "$1")/rootfs
	cp "$(build_helper fileattack)" "$r/bin/fileattack"
	echo secret >"$r/etc/shadow"
	chmod 0640 "$r/etc/shadow"
	ln "$r/etc/shadow" "$r/home/shadow.bak"
	mkdir -p "$r/srv/ro" "$r/data"
	echo keep >"$r/srv/ro/file"
	cfg "$1" '.process.capabilities |= with_entries(.value += ["CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FSETID"])'
}

# guarded ZONE: the policy of the zone the tests put the bundle in.
guarded() {
	policy "$1" <<-'EOF'
		[filesystem]
		read_only = ["/srv/ro"]
		deny = ["/etc/shadow", "/run/sock", "/data/later"]
	EOF
}

# in_ct RUNTIME-FN ID CMD...: run CMD in container ID through runc_rt or rt.
in_ct() {
	local fn=$1 id=$2
	shift 2
	rrun "$fn" exec "$id" "$@"
}

# perms FILE: mode, owner and mtime of a file on the host.
perms() { stat -c '%a %u:%g %Y' "$1"; }

# check_passed ZONE NAME: verify's check NAME passed.
check_passed() {
	rrun rt zone verify "$1" --format json
	jq -e --arg n "$2" '.checks[] | select(.name == $n) | .passed' <<<"$stdout" >/dev/null ||
		fail "verify check '$2' did not pass: $stdout"
}

@test "metadata on read_only and deny paths: chmod u+s, chown, utimensat, setxattr fail with EROFS" {
	attack_bundle r
	attack_bundle z
	in_zone z meta "$(guarded meta)"
	runc_run plain r
	hr=$(bundle_dir r)/rootfs
	hz=$(bundle_dir z)/rootfs

	# Plain runc: every change lands on the image's files.
	for f in /etc/shadow /srv/ro/file; do
		in_ct runc_rt plain chown 1:1 "$f"
		assert_success
		in_ct runc_rt plain chmod u+s "$f"
		assert_success
		in_ct runc_rt plain touch -d '2001-01-01 00:00:00' "$f"
		assert_success
		in_ct runc_rt plain fileattack setxattr "$f" user.rauha owned
		assert_success
		assert_match "$(perms "$hr$f")" "^464[04] 1:1 978307200$"
		assert_eq "$(xattr "$hr$f")" owned
	done

	run_ct zoned z
	before_s=$(perms "$hz/etc/shadow")
	before_r=$(perms "$hz/srv/ro/file")
	for f in /etc/shadow /srv/ro/file; do
		rexec zoned chmod u+s "$f"
		assert_failure 1
		assert_match "$stderr" "Read-only file system"
		rexec zoned chown 1:1 "$f"
		assert_failure 1
		assert_match "$stderr" "Read-only file system"
		rexec zoned touch -d '2001-01-01 00:00:00' "$f"
		assert_failure 1
		assert_match "$stderr" "Read-only file system"
		rexec zoned fileattack setxattr "$f" user.rauha owned
		assert_failure 1
		assert_eq "$stderr" "setxattr: read-only file system"
	done
	assert_eq "$(perms "$hz/etc/shadow")" "$before_s"
	assert_eq "$(perms "$hz/srv/ro/file")" "$before_r"
	[[ -z $(xattr "$hz/etc/shadow") ]] || fail "xattr set on the denied file"
	[[ -z $(xattr "$hz/srv/ro/file") ]] || fail "xattr set on the read-only file"
	# Reading stays as the rules say: read_only readable, deny EACCES.
	rexec zoned cat /srv/ro/file
	assert_success
	assert_eq "$stdout" keep
	rexec zoned cat /etc/shadow
	assert_failure 1
	assert_match "$stderr" "Permission denied"

	wait_event meta '.control == "file" and .object == "/etc/shadow (read-only file system)" and .comm == "chmod"' >/dev/null
	wait_event meta '.control == "file" and .object == "/srv/ro/file (read-only file system)" and .comm == "chown"' >/dev/null
	wait_event meta '.control == "file" and .object == "/srv/ro/file (read-only file system)" and .comm == "fileattack"' >/dev/null
	wait_event meta '.control == "file" and .object == "/etc/shadow (read-only file system)" and .comm == "touch"' >/dev/null

	check_passed meta "container zoned: read-only paths"
	check_passed meta "container zoned: denied paths"
	rrun rt zone verify meta
	assert_success
}
