#!/usr/bin/env bats
# Filesystem rules beyond open(): on read_only and deny paths, metadata
# changes (chmod, chown, utimensat, setxattr), other names of a denied inode
# (a hard link in the image, a new hard link, a file handle), renaming and
# removing a denied file, unix sockets in a denied directory, and a file
# created at a denied path after start, and a zone update that adds rules
# under processes already running. Each attack
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
# hard link /opt/shadow.bak, a read-only tree /srv/ro, the fileattack
# helper, and the capabilities an attacker wants (CHOWN, FOWNER,
# DAC_OVERRIDE, DAC_READ_SEARCH, FSETID).
attack_bundle() {
	local r
	make_bundle "$1" "${@:2}"
	r=$(bundle_dir "$1")/rootfs
	cp "$(build_helper fileattack)" "$r/bin/fileattack"
	echo secret >"$r/etc/shadow"
	chmod 0640 "$r/etc/shadow"
	mkdir -p "$r/opt"
	ln "$r/etc/shadow" "$r/opt/shadow.bak"
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

# round I: the loops of the two running containers (bundles r and z, run
# as plain and zoned) take round I; it returns when both have finished it.
round() {
	touch "$(bundle_dir r)/rootfs/tmp/go$1" "$(bundle_dir z)/rootfs/tmp/go$1"
	retry 100 0.1 grep -q "^$1 done" "$BATS_TEST_TMPDIR/plain.out"
	retry 100 0.1 grep -q "^$1 done" "$BATS_TEST_TMPDIR/zoned.out"
}

# said NAME I: what container NAME printed in round I.
said() { grep "^$2 " "$BATS_TEST_TMPDIR/$1.out"; }

# start_both ZONE WANT [POLICY]: zone ZONE (POLICY, else denying /etc/shadow
# alone) for bundle z; bundle r runs under plain runc as plain, z in the zone
# as zoned; both take round 0, which must print WANT.
start_both() {
	in_zone z "$1" "${3:-$(policy "$1" <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)}"
	runc_run plain r
	run_ct zoned z
	round 0
	local b
	for b in plain zoned; do
		assert_eq "$(said $b 0)" "$2"
	done
}

# check_passed ZONE NAME: verify's check NAME passed.
check_passed() {
	rrun rt zone verify "$1" --format json
	jqe --arg n "$2" '.checks[] | select(.name == $n) | .passed' <<<"$stdout" >/dev/null ||
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

@test "new and removed names in a read_only tree: mkdir, rm, mv, ln -s fail, each with an event" {
	attack_bundle r
	attack_bundle z
	in_zone z names2 "$(guarded names2)"
	runc_run plain r
	hr=$(bundle_dir r)/rootfs
	hz=$(bundle_dir z)/rootfs

	# Plain runc: every name is made or removed in the image.
	for cmd in "mkdir /srv/ro/newdir" "ln -s /x /srv/ro/link" "mv /srv/ro/file /srv/ro/moved" "rm /srv/ro/moved"; do
		# shellcheck disable=SC2086 # the command's words
		in_ct runc_rt plain $cmd
		assert_success
	done
	[[ -d $hr/srv/ro/newdir && -L $hr/srv/ro/link && ! -e $hr/srv/ro/file && ! -e $hr/srv/ro/moved ]] ||
		fail "plain runc: the names were not changed: $(ls -la "$hr/srv/ro")"

	run_ct zoned z
	for cmd in "mkdir /srv/ro/newdir" "ln -s /x /srv/ro/link" "mv /srv/ro/file /srv/ro/moved" "rm /srv/ro/file"; do
		# shellcheck disable=SC2086
		rexec zoned $cmd
		assert_failure 1
		assert_match "$stderr" "Read-only file system|Permission denied"
	done
	[[ ! -e $hz/srv/ro/newdir && ! -L $hz/srv/ro/link && -f $hz/srv/ro/file && ! -e $hz/srv/ro/moved ]] ||
		fail "a name changed in the read_only tree: $(ls -la "$hz/srv/ro")"

	wait_event names2 '.control == "file" and .comm == "mkdir" and (.object | startswith("/srv/ro/newdir ("))' >/dev/null
	wait_event names2 '.control == "file" and .comm == "ln" and (.object | startswith("/srv/ro/link ("))' >/dev/null
	wait_event names2 '.control == "file" and .comm == "mv" and (.object | startswith("/srv/ro/file ("))' >/dev/null
	wait_event names2 '.control == "file" and .comm == "rm" and (.object | startswith("/srv/ro/file ("))' >/dev/null

	check_passed names2 "container zoned: read-only paths"
	check_passed names2 "container zoned: denied paths"
	rrun rt zone verify names2
	assert_success
}

@test "other names of a denied file: a hard link in the image, a new hard link, a file handle" {
	attack_bundle r
	attack_bundle z
	in_zone z names "$(guarded names)"
	runc_run plain r
	handle=$("$(build_helper fileattack)" handle "$(bundle_dir r)/rootfs/etc/shadow")

	in_ct runc_rt plain cat /opt/shadow.bak
	assert_success
	assert_eq "$stdout" secret
	in_ct runc_rt plain ln /etc/shadow /opt/shadow.new
	assert_success
	in_ct runc_rt plain fileattack byhandle / $handle
	assert_success
	assert_eq "$stdout" secret

	run_ct zoned z
	handle=$("$(build_helper fileattack)" handle "$(bundle_dir z)/rootfs/etc/shadow")
	rexec zoned cat /opt/shadow.bak
	assert_failure 1
	assert_match "$stderr" "can't open '/opt/shadow.bak': Permission denied"
	# A link never crosses mounts: the denied file is a mount of its own.
	rexec zoned ln /etc/shadow /opt/shadow.new
	assert_failure 1
	assert_match "$stderr" "Invalid cross-device link"
	rexec zoned fileattack byhandle / $handle
	assert_failure 1
	assert_eq "$stderr" "open_by_handle_at: operation not permitted"
	# Other files still read and link.
	rexec zoned sh -c 'ln /etc/passwd /opt/passwd.new && cat /opt/passwd.new | head -n1'
	assert_success
	assert_eq "$stdout" root:x:0:0:root:/root:/bin/sh

	wait_event names '.control == "file" and .object == "/opt/shadow.bak (permission denied)" and .comm == "cat"' >/dev/null
	wait_event names '.control == "file" and .object == "open_by_handle_at (operation not permitted)" and .comm == "fileattack"' >/dev/null
	# The new link's EXDEV comes from the denied file's mount: an event
	# names the denied path.
	wait_event names '.control == "file" and .object == "link /etc/shadow (invalid cross-device link)" and .comm == "ln"' >/dev/null

	rrun rt zone verify names --format json
	assert_success
	jqe '.checks[] | select(.name == "container zoned: denied paths") | .passed and (.detail | test("/opt/shadow.bak"))' <<<"$stdout" >/dev/null ||
		fail "verify does not check the hard link: $stdout"
}

@test "unix socket in a denied directory: connect finds no name; verify fails when the mask is removed" {
	local sr sz
	sr=$BATS_TEST_TMPDIR/sock-r
	sz=$BATS_TEST_TMPDIR/sock-z
	mkdir -p "$sr" "$sz"
	tool=$(build_helper fileattack)
	bg "$tool" listen "$sr/s"
	bg "$tool" listen "$sz/s"
	retry 50 0.1 test -S "$sr/s"
	retry 50 0.1 test -S "$sz/s"
	attack_bundle r
	attack_bundle z
	cfg r '.mounts += [{destination: "/run/sock", type: "bind", source: $s, options: ["rbind"]}]' --arg s "$sr"
	cfg z '.mounts += [{destination: "/run/sock", type: "bind", source: $s, options: ["rbind"]}]' --arg s "$sz"
	in_zone z sock "$(guarded sock)"
	runc_run plain r

	in_ct runc_rt plain fileattack connect /run/sock/s
	assert_success
	assert_eq "$stdout" hello

	run_ct zoned z
	rexec zoned fileattack connect /run/sock/s
	assert_failure 1
	assert_eq "$stderr" "connect: no such file or directory"
	# A relative name is resolved against the working directory.
	rexec zoned sh -c 'cd /run && exec fileattack connect sock/s'
	assert_failure 1
	assert_eq "$stderr" "connect: no such file or directory"
	wait_event sock '.control == "file" and .object == "unix connect /run/sock/s (no such file or directory)" and .comm == "fileattack"' >/dev/null
	assert_eq "$(zone_events sock | jq -c 'select(.object == "unix connect /run/sock/s (no such file or directory)")' | wc -l)" 2
	rexec zoned ls /run/sock
	assert_failure 1
	assert_match "$stderr" "Permission denied"
	# The host's socket is untouched.
	"$tool" connect "$sz/s" >"$BATS_TEST_TMPDIR/host.out"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/host.out")" hello

	check_passed sock "container zoned: denied paths"
	rrun rt zone verify sock
	assert_success
	# Removing the mask by hand reopens the route: verify must say so.
	nsenter -t "$(ct_pid zoned)" -m umount /run/sock
	rexec zoned fileattack connect /run/sock/s
	assert_success
	rrun rt zone verify sock --format json
	assert_failure 1
	jqe '.isolated == false and any(.checks[]; .name == "container zoned: denied paths" and (.passed | not) and (.detail | test("/run/sock: the directory is not masked")))' <<<"$stdout" >/dev/null ||
		fail "verify does not notice the missing mask: $stdout"
}

@test "a file created at a denied path after start is not readable by a process already running" {
	local script='until [ -e /tmp/go ]; do sleep 0.1; done; cat /data/later; echo rc=$?; exec sleep 3600'
	attack_bundle r sh -c "$script"
	attack_bundle z sh -c "$script"
	in_zone z later "$(guarded later)"
	runc_run plain r
	run_ct zoned z

	for b in r z; do
		echo secret >"$(bundle_dir $b)/rootfs/data/later"
		touch "$(bundle_dir $b)/rootfs/tmp/go"
	done
	retry 100 0.1 grep -q rc= "$BATS_TEST_TMPDIR/plain.out"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/plain.out")" $'secret\nrc=0'
	retry 100 0.1 grep -q rc= "$BATS_TEST_TMPDIR/zoned.out"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.out")" rc=1
	assert_match "$(cat "$BATS_TEST_TMPDIR/zoned.err")" "can't open '/data/later': Permission denied"
	# Nor can a process of the container create or replace it.
	rexec zoned sh -c 'echo x >/data/later'
	assert_failure 1
	assert_match "$stderr" "can't create /data/later: Permission denied"
	rexec zoned rm -f /data/later
	assert_failure 1
	assert_match "$stderr" "can't remove '/data/later': Device or resource busy"

	wait_event later '.control == "file" and .object == "/data/later (permission denied)" and .comm == "cat"' >/dev/null
	wait_event later '.control == "file" and .object == "unlink /data/later (device or resource busy)" and .comm == "rm"' >/dev/null
	check_passed later "container zoned: denied paths"
}

@test "rename and unlink of a denied file fail with EBUSY, a link through a directory fd with EXDEV, each an event; runc's /etc/hosts mount leaves none" {
	local hosts=$BATS_TEST_TMPDIR/hosts b hr hz
	echo "127.0.0.1 localhost" >"$hosts"
	attack_bundle r
	attack_bundle z
	for b in r z; do
		cfg $b '.mounts += [{destination: "/etc/hosts", type: "bind", source: $h, options: ["rbind", "ro"]}]' --arg h "$hosts"
	done
	in_zone z busy "$(guarded busy)"
	runc_run plain r
	hr=$(bundle_dir r)/rootfs
	hz=$(bundle_dir z)/rootfs

	# Plain runc: the denied file is linked, renamed and removed, by names
	# relative to a directory fd and to the working directory; /etc/hosts
	# is a mount of runc's, which no unlink removes.
	in_ct runc_rt plain rm /etc/hosts
	assert_failure 1
	assert_match "$stderr" "can't remove '/etc/hosts': Device or resource busy"
	in_ct runc_rt plain fileattack linkat /etc shadow ../opt/shadow.new
	assert_success
	assert_eq "$(cat "$hr/opt/shadow.new")" secret
	in_ct runc_rt plain sh -c 'cd /etc && mv shadow shadow.moved && mv shadow.moved shadow'
	assert_success
	in_ct runc_rt plain fileattack renameat /etc shadow ../opt/moved
	assert_success
	in_ct runc_rt plain fileattack renameat /opt moved ../etc/shadow
	assert_success
	in_ct runc_rt plain sh -c 'cd /etc && rm shadow'
	assert_success
	[[ ! -e $hr/etc/shadow ]] || fail "plain runc: /etc/shadow not removed"

	run_ct zoned z
	rexec zoned rm /etc/hosts
	assert_failure 1
	assert_match "$stderr" "can't remove '/etc/hosts': Device or resource busy"
	rexec zoned fileattack linkat /etc shadow ../opt/shadow.new
	assert_failure 1
	assert_eq "$stderr" "linkat: invalid cross-device link"
	rexec zoned sh -c 'cd /etc && mv shadow shadow.moved'
	assert_failure 1
	assert_match "$stderr" "can't rename 'shadow': Device or resource busy"
	rexec zoned fileattack renameat /etc shadow ../opt/moved
	assert_failure 1
	assert_eq "$stderr" "renameat: device or resource busy"
	rexec zoned sh -c 'cd /etc && rm shadow'
	assert_failure 1
	assert_match "$stderr" "can't remove 'shadow': Device or resource busy"
	assert_eq "$(cat "$hz/etc/shadow")" secret
	[[ ! -e $hz/opt/shadow.new && ! -e $hz/opt/moved && ! -e $hz/etc/shadow.moved ]] || fail "a new name of the denied file was made"

	wait_event busy '.control == "file" and .object == "link /etc/shadow (invalid cross-device link)" and .comm == "fileattack"' >/dev/null
	wait_event busy '.control == "file" and .object == "rename /etc/shadow (device or resource busy)" and .comm == "mv"' >/dev/null
	wait_event busy '.control == "file" and .object == "rename /etc/shadow (device or resource busy)" and .comm == "fileattack"' >/dev/null
	wait_event busy '.control == "file" and .object == "unlink /etc/shadow (device or resource busy)" and .comm == "rm"' >/dev/null
	# The EBUSY of /etc/hosts (before the events above) is not the zone's.
	no_event busy '.object | test("hosts")'
	rrun rt zone verify busy
	assert_success
}

@test "mount errors through a symlink, a '..' after one, a working directory entered by one, a path longer than an event's, and on another name of a denied file name the path the kernel took; a symlink out of a rule path leaves none" {
	local b r long
	long=srv/ro/$(printf 'd%.0s' {1..200})/$(printf 'e%.0s' {1..200})
	for b in r z; do
		attack_bundle $b
		cfg $b '.mounts += [{destination: "/scratch", type: "tmpfs", source: "tmpfs", options: ["nosuid"]}]'
		r=$(bundle_dir $b)/rootfs
		mkdir -p "$r/srv/ro/sub" "$r/tmp"
		for f in a b c d; do echo $f >"$r/srv/ro/$f"; done
		ln -s /srv/ro "$r/lnk"
		ln -s etc "$r/etclnk"
		ln -s /srv/ro/sub "$r/tmp/deep"
		ln -s /scratch "$r/srv/ro/out"
		mkdir -p "$r/$long"
		echo deep >"$r/$long/f"
	done
	in_zone z links "$(guarded links)"
	runc_run plain r
	r=$(bundle_dir r)/rootfs

	# Plain runc: each name reaches the file, which moves or goes.
	in_ct runc_rt plain fileattack renameat / lnk/a tmp/a
	assert_success
	in_ct runc_rt plain fileattack renameat /tmp deep/../b b
	assert_success
	in_ct runc_rt plain sh -c 'cd /lnk && fileattack rename c /tmp/c'
	assert_success
	in_ct runc_rt plain rm /etclnk/shadow
	assert_success
	in_ct runc_rt plain fileattack renameat / $long/f tmp/f
	assert_success
	in_ct runc_rt plain rm /opt/shadow.bak
	assert_success
	in_ct runc_rt plain fileattack renameat / lnk/d tmp/d
	assert_success
	[[ -e $r/tmp/a && -e $r/tmp/b && -e $r/tmp/c && -e $r/tmp/f && ! -e $r/etc/shadow && ! -e $r/opt/shadow.bak ]] ||
		fail "plain runc: the files did not move"
	# /srv/ro/out/x is /scratch/x, a tmpfs of the container's own: its
	# EXDEV is no rule's.
	in_ct runc_rt plain sh -c 'echo x >/scratch/x && fileattack renameat / srv/ro/out/x tmp/x'
	assert_failure 1
	assert_eq "$stderr" "renameat: invalid cross-device link"

	run_ct zoned z
	rexec zoned fileattack renameat / lnk/a tmp/a
	assert_failure 1
	assert_eq "$stderr" "renameat: invalid cross-device link"
	rexec zoned fileattack renameat /tmp deep/../b b
	assert_failure 1
	assert_eq "$stderr" "renameat: invalid cross-device link"
	rexec zoned sh -c 'cd /lnk && fileattack rename c /tmp/c'
	assert_failure 1
	assert_eq "$stderr" "rename: invalid cross-device link"
	rexec zoned sh -c 'echo x >/scratch/x && fileattack renameat / srv/ro/out/x tmp/x'
	assert_failure 1
	assert_eq "$stderr" "renameat: invalid cross-device link"
	rexec zoned fileattack renameat / $long/f tmp/f
	assert_failure 1
	assert_eq "$stderr" "renameat: invalid cross-device link"
	# The other name of the denied file in the image is held as it is.
	rexec zoned rm /opt/shadow.bak
	assert_failure 1
	assert_match "$stderr" "can't remove '/opt/shadow.bak': Device or resource busy"
	rexec zoned rm /etclnk/shadow
	assert_failure 1
	assert_match "$stderr" "can't remove '/etclnk/shadow': Device or resource busy"
	r=$(bundle_dir z)/rootfs
	[[ -e $r/srv/ro/a && -e $r/srv/ro/b && -e $r/srv/ro/c && -e $r/$long/f && -e $r/etc/shadow && -e $r/opt/shadow.bak ]] ||
		fail "a file of a rule path moved"

	wait_event links '.control == "file" and .object == "rename /srv/ro/a (invalid cross-device link)" and .comm == "fileattack"' >/dev/null
	wait_event links '.control == "file" and .object == "rename /srv/ro/b (invalid cross-device link)" and .comm == "fileattack"' >/dev/null
	wait_event links '.control == "file" and .object == "rename /srv/ro/c (invalid cross-device link)" and .comm == "fileattack"' >/dev/null
	wait_event links '.control == "file" and .object == "rename /'"$long"'/f (invalid cross-device link)" and .comm == "fileattack"' >/dev/null
	wait_event links '.control == "file" and .object == "unlink /opt/shadow.bak (device or resource busy)" and .comm == "rm"' >/dev/null
	wait_event links '.control == "file" and .object == "unlink /etc/shadow (device or resource busy)" and .comm == "rm"' >/dev/null
	# The rename out of /scratch came before the unlink: its event would be
	# there by now.
	no_event links '.object | test("scratch|out|/x ")'
	rrun rt zone verify links
	assert_success

	# A member stopped before the drain: its paths resolve in its root
	# file system.
	rexec zoned fileattack renameat / lnk/d tmp/d
	assert_failure 1
	assert_eq "$stderr" "renameat: invalid cross-device link"
	rrun rt kill zoned KILL
	assert_success
	wait_status zoned stopped
	wait_event links '.control == "file" and .object == "rename /srv/ro/d (invalid cross-device link)" and .comm == "fileattack"' >/dev/null
}

@test "writable_paths: metadata outside the writable paths fails with EROFS, inside it works" {
	attack_bundle r
	attack_bundle z
	in_zone z wonly "$(policy wonly <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
	EOF
	)"
	runc_run plain r
	in_ct runc_rt plain chmod u+s /bin/busybox
	assert_success
	assert_eq "$(stat -c %a "$(bundle_dir r)/rootfs/bin/busybox")" 4755

	run_ct zoned z
	rexec zoned chmod u+s /bin/busybox
	assert_failure 1
	assert_match "$stderr" "chmod: /bin/busybox: Read-only file system"
	rexec zoned chown 1:1 /etc/passwd
	assert_failure 1
	assert_match "$stderr" "Read-only file system"
	assert_eq "$(stat -c %a "$(bundle_dir z)/rootfs/bin/busybox")" 755
	rexec zoned sh -c 'echo x >/tmp/f && chown 1:1 /tmp/f && chmod 4700 /tmp/f && stat -c "%a %u" /tmp/f'
	assert_success
	assert_eq "$stdout" "4700 1"

	wait_event wonly '.control == "file" and .object == "/bin/busybox (read-only file system)" and .comm == "chmod"' >/dev/null
	check_passed wonly "container zoned: read-only paths"
}


# late_bundle NAME: an attack bundle with a read-only volume /vol (the host
# directory $BATS_TEST_TMPDIR/vol-NAME) and a tmpfs of its own on /scratch,
# whose init reads the late files once /tmp/go1 exists and /vol/late2 again
# once /tmp/go2 exists.
late_bundle() {
	local v=$BATS_TEST_TMPDIR/vol-$1
	local script='until [ -e /tmp/go1 ]; do sleep 0.1; done
		for f in /vol/late /vol/new/deep/late /data/a/b/late /scratch/x/late; do cat $f; echo "$f rc=$?"; done
		until [ -e /tmp/go2 ]; do sleep 0.1; done
		cat /vol/new/deep/late; echo "again rc=$?"; exec sleep 3600'
	mkdir -p "$v"
	attack_bundle "$1" sh -c "$script"
	cfg "$1" '.mounts += [{destination: "/vol", type: "bind", source: $v, options: ["rbind", "ro"]},
		{destination: "/scratch", type: "tmpfs", source: "tmpfs", options: ["nosuid"]}]' --arg v "$v"
}

@test "deny paths missing at create, their directories too, stay denied when the host creates them later" {
	local b pid v
	late_bundle r
	late_bundle z
	in_zone z late "$(policy late <<-'EOF'
		[filesystem]
		deny = ["/vol/late", "/vol/new/deep/late", "/data/a/b/late", "/scratch/x/late"]
	EOF
	)"
	runc_run plain r
	run_ct zoned z

	# The host (or another container on the same volume) creates the files
	# in the volume and the rootfs, and in the container's own tmpfs.
	for b in r z; do
		v=$BATS_TEST_TMPDIR/vol-$b
		echo secret >"$v/late"
		mkdir -p "$v/new/deep" && echo secret >"$v/new/deep/late"
		mkdir -p "$(bundle_dir $b)/rootfs/data/a/b" && echo secret >"$(bundle_dir $b)/rootfs/data/a/b/late"
	done
	pid=$(runc_rt state plain | jq -r .pid)
	mkdir -p "/proc/$pid/root/scratch/x" && echo secret >"/proc/$pid/root/scratch/x/late"
	# In the zone the null device holds the name: nobody can create it.
	rrun bash -c "echo secret >/proc/$(ct_pid zoned)/root/scratch/x/late"
	assert_failure 1
	assert_match "$stderr" "/scratch/x/late: Permission denied"
	rexec zoned sh -c 'echo x >/scratch/x/late'
	assert_failure 1
	assert_match "$stderr" "can't create /scratch/x/late: Permission denied"
	touch "$(bundle_dir r)/rootfs/tmp/go1" "$(bundle_dir z)/rootfs/tmp/go1"

	retry 100 0.1 grep -q x/late "$BATS_TEST_TMPDIR/plain.out"
	assert_eq "$(grep -c '^secret$' "$BATS_TEST_TMPDIR/plain.out")" 4
	assert_eq "$(grep -c ' rc=0$' "$BATS_TEST_TMPDIR/plain.out")" 4
	retry 100 0.1 grep -q x/late "$BATS_TEST_TMPDIR/zoned.out"
	assert_eq "$(grep -c secret "$BATS_TEST_TMPDIR/zoned.out")" 0
	assert_eq "$(grep -c ' rc=1$' "$BATS_TEST_TMPDIR/zoned.out")" 4
	for f in /vol/late /vol/new/deep/late /data/a/b/late /scratch/x/late; do
		assert_match "$(cat "$BATS_TEST_TMPDIR/zoned.err")" "can't open '$f': Permission denied"
		wait_event late ".control == \"file\" and .object == \"$f (permission denied)\" and .comm == \"cat\"" >/dev/null
	done
	check_passed late "container zoned: denied paths"

	# Replacing the file by a rename (as editors and package managers do)
	# takes the null device's mount with the old name: Landlock still
	# denies the new file (its directory existed when the domain was made
	# and grants nothing to entries made later), and verify names the
	# missing mount.
	v=$BATS_TEST_TMPDIR/vol-z
	echo secret >"$v/new/deep/tmp" && mv "$v/new/deep/tmp" "$v/new/deep/late"
	touch "$(bundle_dir z)/rootfs/tmp/go2"
	retry 100 0.1 grep -q 'again rc=' "$BATS_TEST_TMPDIR/zoned.out"
	assert_eq "$(grep 'again rc=' "$BATS_TEST_TMPDIR/zoned.out")" "again rc=1"
	rrun rt zone verify late --format json
	assert_failure 1
	jqe '.isolated == false and any(.checks[]; .name == "container zoned: denied paths" and (.passed | not) and (.detail | test("/vol/new/deep/late: no mount")))' <<<"$stdout" >/dev/null ||
		fail "verify does not notice the lost mount: $stdout"
}

@test "zone update: a deny path whose directories are missing reaches new containers and the running one" {
	attack_bundle z1
	attack_bundle z2
	in_zone z1 upd "$(policy upd <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)"
	in_zone z2 upd
	run_ct c1 z1
	check_passed upd "container c1: denied paths"
	rrun rt zone update upd --policy "$(policy upd2 <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow", "/data/a/b/late"]
	EOF
	)"
	assert_success
	run_ct c2 z2
	mkdir -p "$(bundle_dir z1)/rootfs/data/a/b" "$(bundle_dir z2)/rootfs/data/a/b"
	echo secret >"$(bundle_dir z1)/rootfs/data/a/b/late"
	echo secret >"$(bundle_dir z2)/rootfs/data/a/b/late"
	for c in c1 c2; do
		rexec $c cat /data/a/b/late
		assert_failure 1
		assert_match "$stderr" "can't open '/data/a/b/late': Permission denied"
	done
	check_passed upd "container c1: denied paths"
	check_passed upd "container c2: denied paths"
}

@test "zone update: new deny and read_only paths hold for a process already running in the container" {
	# The init is the attacker: a shell that, at each go file, reads a
	# denied file and its hard link, lists a denied directory and appends to
	# a read_only file itself (sh redirections: no new process), so what it
	# meets after the update is what its own domain and the mounts give.
	local script='i=0; while :; do until [ -e /tmp/go$i ]; do sleep 0.1; done
		for f in /data/secret /opt/secret.bak /data/dir/key; do if read -r l <$f; then echo "$i $f=$l"; else echo "$i $f=fail"; fi; done
		if echo w >>/srv/ro/file; then echo "$i write=ok"; else echo "$i write=fail"; fi
		echo "$i done"; i=$((i+1)); done'
	local b r
	for b in r z; do
		attack_bundle $b sh -c "$script"
		r=$(bundle_dir $b)/rootfs
		echo secret >"$r/data/secret"
		ln "$r/data/secret" "$r/opt/secret.bak"
		mkdir "$r/data/dir" && echo key >"$r/data/dir/key"
	done
	# The zone denies /etc/shadow from create: the seccomp rule against
	# file handles is in place (update cannot add it to running processes).
	start_both held $'0 /data/secret=secret\n0 /opt/secret.bak=secret\n0 /data/dir/key=key\n0 write=ok\n0 done'
	local pid
	pid=$(ct_pid zoned)

	rrun rt zone update held --policy "$(policy held2 <<-'EOF'
		[filesystem]
		read_only = ["/srv/ro"]
		deny = ["/etc/shadow", "/data/secret", "/data/dir"]
	EOF
	)"
	assert_success

	# Plain runc: the attack still works. In the zone the same process
	# (the init, never exec'd again) is denied: the null device on the
	# denied file and on its other name (EACCES), the empty tmpfs on the
	# denied directory (ENOENT), the read-only copy of /srv/ro (EROFS).
	round 1
	assert_eq "$(said plain 1)" $'1 /data/secret=secret\n1 /opt/secret.bak=secret\n1 /data/dir/key=key\n1 write=ok\n1 done'
	assert_eq "$(said zoned 1)" $'1 /data/secret=fail\n1 /opt/secret.bak=fail\n1 /data/dir/key=fail\n1 write=fail\n1 done'
	assert_eq "$(ct_pid zoned)" "$pid"
	local err
	err=$(cat "$BATS_TEST_TMPDIR/zoned.err")
	assert_eq "$err" $'sh: can\'t open /data/secret: Permission denied\nsh: can\'t open /opt/secret.bak: Permission denied\nsh: can\'t open /data/dir/key: no such file\nsh: can\'t create /srv/ro/file: Read-only file system'
	wait_event held '.control == "file" and .object == "/data/secret (permission denied)" and .comm == "sh"' >/dev/null
	wait_event held '.control == "file" and .object == "/opt/secret.bak (permission denied)" and .comm == "sh"' >/dev/null
	wait_event held '.control == "file" and .object == "/srv/ro/file (read-only file system)" and .comm == "sh"' >/dev/null
	# An open beneath a denied directory finds no name (ENOENT), as in a
	# container created with the rule: no event, only a unix connect there
	# is reported.
	check_passed held "container zoned: denied paths"
	check_passed held "container zoned: read-only paths"
	# The other name the update found is recorded with those found at
	# create: verify lists its mask among the denied paths.
	rrun rt zone verify held --format json
	jqe 'any(.checks[]; .name == "container zoned: denied paths" and .passed and (.detail | test("/opt/secret\\.bak")))' <<<"$stdout" >/dev/null ||
		fail "verify does not check the mask on /opt/secret.bak: $stdout"

	# Nothing of it reached the host: the files are there as they were,
	# and no mount of the update is in the host's mount table.
	r=$(bundle_dir z)/rootfs
	assert_eq "$(cat "$r/data/secret" "$r/data/dir/key")" $'secret\nkey'
	if grep -F "$r" /proc/self/mountinfo; then
		fail "a mount in the container's rootfs is in the host's mount table"
	fi
	# The container cannot take the mounts away (no CAP_SYS_ADMIN).
	rexec zoned umount /data/secret
	assert_failure
	assert_match "$stderr" "Operation not permitted"
	# A second update with the same rules finds them held: nothing stacks.
	local before
	before=$(wc -l <"/proc/$pid/mountinfo")
	rrun rt zone update held --policy "$BATS_TEST_TMPDIR/held2.toml"
	assert_success
	assert_eq "$(wc -l <"/proc/$pid/mountinfo")" "$before"
	# Removing that mask by hand reopens the file under its other name:
	# verify must say so.
	nsenter -t "$pid" -m umount /opt/secret.bak
	round 2
	assert_eq "$(said zoned 2 | grep secret.bak)" "2 /opt/secret.bak=secret"
	rrun rt zone verify held --format json
	assert_failure 1
	jqe 'any(.checks[]; .name == "container zoned: denied paths" and (.passed | not) and (.detail | test("/opt/secret\\.bak: no mount")))' <<<"$stdout" >/dev/null ||
		fail "verify does not notice the missing mask on /opt/secret.bak: $stdout"
}

@test "io_uring requests on deny and read_only paths: denied in their completion, and reported" {
	attack_bundle r
	attack_bundle z
	for b in r z; do
		cp "$(build_helper iouring)" "$(bundle_dir $b)/rootfs/bin/iouring"
	done
	in_zone z ring "$(guarded ring)"
	runc_run plain r
	hr=$(bundle_dir r)/rootfs

	# Plain runc: the requests read the secret, write and remove the files.
	in_ct runc_rt plain iouring open /etc/shadow
	assert_success
	assert_match "$stdout" $'^res [0-9]+\nsecret$'
	in_ct runc_rt plain iouring open /srv/ro/file write
	assert_success
	assert_match "$stdout" '^res [0-9]+$'
	assert_eq "$(cat "$hr/srv/ro/file")" $'keep\npwned'
	in_ct runc_rt plain iouring unlink /srv/ro/file
	assert_success
	assert_eq "$stdout" "res 0"
	[[ ! -e $hr/srv/ro/file ]] || fail "plain runc: unlinkat left the file"

	# The zone: each completion carries the syscall's errno.
	run_ct zoned z
	hz=$(bundle_dir z)/rootfs
	rexec zoned iouring open /etc/shadow
	assert_success
	assert_eq "$stdout" "res -13" # EACCES
	rexec zoned iouring open /srv/ro/file write
	assert_success
	assert_eq "$stdout" "res -30" # EROFS
	rexec zoned iouring unlink /srv/ro/file
	assert_success
	assert_eq "$stdout" "res -30"
	assert_eq "$(cat "$hz/srv/ro/file")" keep
	# What the rules allow still works through io_uring.
	rexec zoned iouring open /srv/ro/file
	assert_success
	assert_match "$stdout" $'^res [0-9]+\nkeep$'

	# No syscall failed: only the completions' observer reports these. A
	# request that blocks runs in an io-wq worker thread of the process
	# (unlinkat does): its comm is "iou-wrk-<tid>".
	ours='(.comm | test("^(iouring|iou-wrk-[0-9]+)$"))'
	wait_event ring ".control == \"file\" and .object == \"io_uring openat /etc/shadow (permission denied)\" and $ours" >/dev/null
	wait_event ring ".control == \"file\" and .object == \"io_uring openat /srv/ro/file (read-only file system)\" and $ours" >/dev/null
	wait_event ring ".control == \"file\" and .object == \"io_uring unlinkat /srv/ro/file (read-only file system)\" and $ours" >/dev/null

	check_passed ring "container zoned: read-only paths"
	check_passed ring "container zoned: denied paths"
	rrun rt zone verify ring
	assert_success
}

@test "zone update: a running member the new mounts cannot reach is named, and verify fails it" {
	# With rootfsPropagation "shared" the container's root is a peer of the
	# host's mounts: a mount made on it would appear on the host too.
	attack_bundle z1
	attack_bundle z2
	cfg z1 '.linux.rootfsPropagation = "shared"'
	for b in z1 z2; do
		echo secret >"$(bundle_dir $b)/rootfs/data/secret"
	done
	in_zone z1 shared "$(policy shared <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)"
	in_zone z2 shared
	run_ct c1 z1
	run_ct c2 z2
	rrun rt zone update shared --policy "$(policy shared2 <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow", "/data/secret"]
	EOF
	)"
	assert_failure 1
	assert_match "$stderr" "zone shared is updated, but its new file rules do not hold in running containers"
	assert_match "$stderr" "container c1: /data/secret is on a shared mount \(/\)"
	if [[ $stderr == *"container c2"* ]]; then
		fail "c2 was guarded, yet the error names it: $stderr"
	fi
	if grep -F "$(bundle_dir z1)/rootfs" /proc/self/mountinfo; then
		fail "a mount of the update reached the host"
	fi
	# The other member holds the rule; the store has the new policy.
	rexec c2 cat /data/secret
	assert_failure 1
	assert_match "$stderr" "Permission denied"
	rrun rt zone verify shared --format json
	assert_failure 1
	jqe 'any(.checks[]; .name == "container c2: denied paths" and .passed) and
		any(.checks[]; .name == "container c1: denied paths" and (.passed | not) and (.detail | test("/data/secret: no mount")))' <<<"$stdout" >/dev/null ||
		fail "verify: $stdout"
}

@test "zone update: writable_paths make the root read-only under a process already running" {
	local script='i=0; while :; do until [ -e /tmp/go$i ]; do sleep 0.1; done
		if echo w >>/srv/ro/file; then echo "$i root=ok"; else echo "$i root=fail"; fi
		if echo w >>/tmp/f; then echo "$i tmp=ok"; else echo "$i tmp=fail"; fi
		echo "$i done"; i=$((i+1)); done'
	attack_bundle r sh -c "$script"
	attack_bundle z sh -c "$script"
	start_both wupd $'0 root=ok\n0 tmp=ok\n0 done'

	rrun rt zone update wupd --policy "$(policy wupd2 <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		deny = ["/etc/shadow"]
	EOF
	)"
	assert_success
	round 1
	assert_eq "$(said plain 1)" $'1 root=ok\n1 tmp=ok\n1 done'
	assert_eq "$(said zoned 1)" $'1 root=fail\n1 tmp=ok\n1 done'
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.err")" "sh: can't create /srv/ro/file: Read-only file system"
	assert_eq "$(cat "$(bundle_dir z)/rootfs/tmp/f")" $'w\nw'
	wait_event wupd '.control == "file" and .object == "/srv/ro/file (read-only file system)" and .comm == "sh"' >/dev/null
	check_passed wupd "container zoned: read-only paths"
}

@test "zone update: new deny and read_only paths hold in a running container with a user namespace" {
	requires userns
	local script='i=0; while :; do until [ -e /tmp/go$i ]; do sleep 0.1; done
		if read -r l </data/secret; then echo "$i secret=$l"; else echo "$i secret=fail"; fi
		if echo w >>/srv/ro/file; then echo "$i write=ok"; else echo "$i write=fail"; fi
		echo "$i done"; i=$((i+1)); done'
	local b d
	for b in r z; do
		attack_bundle $b sh -c "$script"
		echo secret >"$(bundle_dir $b)/rootfs/data/secret"
		cfg $b '.linux.namespaces += [{type: "user"}]
			| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
			| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
			| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
		chown -R 100000:100000 "$(bundle_dir $b)/rootfs"
	done
	d=$BATS_TEST_TMPDIR
	while [[ $d != / && $d != /tmp ]]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
	start_both usr $'0 secret=secret\n0 write=ok\n0 done'
	rrun rt zone update usr --policy "$(policy usr2 <<-'EOF'
		[filesystem]
		read_only = ["/srv/ro"]
		deny = ["/etc/shadow", "/data/secret"]
	EOF
	)"
	assert_success
	round 1
	assert_eq "$(said plain 1)" $'1 secret=secret\n1 write=ok\n1 done'
	assert_eq "$(said zoned 1)" $'1 secret=fail\n1 write=fail\n1 done'
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.err")" $'sh: can\'t open /data/secret: Permission denied\nsh: can\'t create /srv/ro/file: Read-only file system'
	# Root of the user namespace holds no CAP_SYS_ADMIN here either.
	rexec zoned umount /data/secret
	assert_failure
	check_passed usr "container zoned: denied paths"
	check_passed usr "container zoned: read-only paths"
}

@test "zone update: new exec rules close written, copied and memfd code and new exec.deny files to a process already running" {
	# The init is the attacker, as above: at each go file it runs a copy of
	# busybox it writes to /tmp, an executable memfd (asked with MFD_EXEC,
	# and without flags), and a binary the update denies. Its children
	# inherit the init's Landlock domain, made before the zone had exec
	# rules: only the mounts and vm.memfd_noexec the update makes hold them.
	local script='i=0; while :; do until [ -e /tmp/go$i ]; do sleep 0.1; done
		mkdir /tmp/c$i; cp /bin/busybox /tmp/c$i/true; /tmp/c$i/true; echo "$i copy=$?"
		/usr/local/bin/execroute memfd-exec exec /bin/busybox true; echo "$i memfd-exec=$?"
		/usr/local/bin/execroute memfd-exec noflags /bin/busybox true; echo "$i memfd=$?"
		/usr/local/bin/execroute mmap-exec /tmp/code$i; echo "$i mmap=$?"
		/opt/deny/true; echo "$i deny=$?"
		/opt/ddir/true; echo "$i deny-dir=$?"
		/opt/out/true; echo "$i outside=$?"
		echo "$i done"; i=$((i+1)); done'
	local b r host
	host=$(cat /proc/sys/vm/memfd_noexec)
	for b in r z; do
		make_bundle $b sh -c "$script"
		r=$(bundle_dir $b)/rootfs
		mkdir -p "$r/usr/local/bin"
		cp "$(build_helper execroute)" "$r/usr/local/bin/execroute"
		# Copies, not links: busybox runs the applet its name names.
		mkdir -p "$r/opt/deny" "$r/opt/ddir" "$r/opt/out"
		cp "$BUSYBOX" "$r/opt/deny/true"
		cp "$BUSYBOX" "$r/opt/ddir/true"
		cp "$BUSYBOX" "$r/opt/out/true"
	done
	start_both xupd $'0 copy=0\n0 memfd-exec=0\n0 memfd=0\n0 mmap=0\n0 deny=0\n0 deny-dir=0\n0 outside=0\n0 done'
	local pid
	pid=$(ct_pid zoned)
	rrun rt zone verify --container zoned --format json
	[[ $stdout != *"exec: writable paths noexec"* ]] || fail "verify checks exec routes before the zone has exec rules: $stdout"

	rrun rt zone update xupd --policy "$(policy xupd2 <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		deny = ["/etc/shadow"]
		[exec]
		allow = ["/bin", "/usr/local/bin"]
		deny = ["/opt/deny/true", "/opt/ddir"]
	EOF
	)"
	assert_success

	# Plain runc: every route still runs. The zone's init, never exec'd
	# again: the copy is on a noexec mount (execve EACCES, exit 126), the
	# memfd is refused or sealed non-executable (EACCES), code written to
	# /tmp cannot be mapped executable (EPERM), the denied
	# file is the null device (EACCES), the denied directory a noexec copy
	# of itself (execve EACCES). The known limit: an image binary
	# outside the new exec.allow still runs from the init's old domain.
	round 1
	assert_eq "$(said plain 1)" $'1 copy=0\n1 memfd-exec=0\n1 memfd=0\n1 mmap=0\n1 deny=0\n1 deny-dir=0\n1 outside=0\n1 done'
	assert_eq "$(said zoned 1)" $'1 copy=126\n1 memfd-exec=126\n1 memfd=126\n1 mmap=126\n1 deny=126\n1 deny-dir=126\n1 outside=0\n1 done'
	assert_eq "$(ct_pid zoned)" "$pid"
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.err")" $'sh: /tmp/c1/true: Permission denied\nmemfd_create: permission denied\nexecveat: permission denied\nmmap: operation not permitted\nsh: /opt/deny/true: Permission denied\nsh: /opt/ddir/true: Permission denied'
	wait_event xupd '.control == "exec" and .object == "/tmp/c1/true (permission denied)" and .container == "zoned"' >/dev/null
	wait_event xupd '.control == "exec" and .object == "memfd_create MFD_EXEC payload (permission denied)" and .container == "zoned"' >/dev/null
	wait_event xupd '.control == "exec" and .object == "execveat fd memfd:payload (permission denied)" and .container == "zoned"' >/dev/null
	wait_event xupd '.control == "exec" and .object == "mmap PROT_EXEC of code1 (operation not permitted)" and .container == "zoned"' >/dev/null
	wait_event xupd '.control == "exec" and .object == "/opt/deny/true (permission denied)" and .container == "zoned"' >/dev/null
	wait_event xupd '.control == "exec" and .object == "/opt/ddir/true (permission denied)" and .container == "zoned"' >/dev/null

	# verify passes the exec checks of the running member and names what
	# the update cannot reach: the image's binaries outside exec.allow.
	rrun rt zone verify --container zoned --format json
	assert_success
	jqe '
		any(.checks[]; .name == "container zoned: exec: writable paths noexec" and .passed) and
		any(.checks[]; .name == "container zoned: exec: memfd" and .passed and (.detail | test("vm.memfd_noexec is 2"))) and
		any(.limits[]; test("exec.allow is a Landlock domain that cannot change in a running process"))' <<<"$stdout" >/dev/null ||
		fail "verify: $stdout"
	# A process started after the update has the new domain.
	rexec zoned /opt/out/true
	assert_failure 126
	# A second update with the same rules finds them held: nothing stacks.
	local before
	before=$(wc -l <"/proc/$pid/mountinfo")
	rrun rt zone update xupd --policy "$BATS_TEST_TMPDIR/xupd2.toml"
	assert_success
	assert_eq "$(wc -l <"/proc/$pid/mountinfo")" "$before"
	# The host's value is untouched, and no mount reached the host.
	assert_eq "$(cat /proc/sys/vm/memfd_noexec)" "$host"
	if grep -F "$(bundle_dir z)/rootfs" /proc/self/mountinfo; then
		fail "a mount in the container's rootfs is in the host's mount table"
	fi
}

@test "zone update: new exec rules name a running member without a pid namespace of its own, and verify fails it" {
	# vm.memfd_noexec of the host's pid namespace is the host's, and a
	# running process's seccomp filter cannot gain a memfd_create rule:
	# the update closes the writable mounts, names the member for memfds.
	local b host
	host=$(cat /proc/sys/vm/memfd_noexec)
	for b in z1 z2; do
		make_bundle $b
		mkdir -p "$(bundle_dir $b)/rootfs/usr/local/bin"
		cp "$(build_helper execroute)" "$(bundle_dir $b)/rootfs/usr/local/bin/execroute"
	done
	host_pid z1
	in_zone z1 xpid "$(policy xpid <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow"]
	EOF
	)"
	in_zone z2 xpid
	run_ct c1 z1
	run_ct c2 z2
	rrun rt zone update xpid --policy "$(policy xpid2 <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		deny = ["/etc/shadow"]
		[exec]
		deny = ["/opt/none"]
	EOF
	)"
	assert_failure 1
	assert_match "$stderr" "zone xpid is updated, but its new file rules do not hold in running containers"
	assert_match "$stderr" "container c1: exec: memfd_create stays allowed to its processes: vm.memfd_noexec cannot be raised for it alone"
	[[ $stderr != *"container c2"* ]] || fail "c2 was reached, yet the error names it: $stderr"
	assert_eq "$(cat /proc/sys/vm/memfd_noexec)" "$host"
	# What verify fails: a memfd still runs in c1, not in c2.
	rexec c1 execroute memfd-exec noflags /bin/busybox echo memfd-ran
	assert_success
	assert_eq "$stdout" memfd-ran
	rexec c2 execroute memfd-exec noflags /bin/busybox echo memfd-ran
	assert_failure 126
	assert_eq "$stderr" "execveat: permission denied"
	rrun rt zone verify xpid --format json
	assert_failure 1
	jqe '
		any(.checks[]; .name == "container c1: exec: memfd" and (.passed | not)) and
		any(.checks[]; .name == "container c1: exec: writable paths noexec" and .passed) and
		any(.checks[]; .name == "container c2: exec: memfd" and .passed) and
		any(.checks[]; .name == "container c2: exec: writable paths noexec" and .passed)' <<<"$stdout" >/dev/null ||
		fail "verify: $stdout"
}

@test "zone update: writable_paths alone (no deny, no read_only) make the root read-only under a process already running" {
	local script='i=0; while :; do until [ -e /tmp/go$i ]; do sleep 0.1; done
		if echo w >>/srv/ro/file; then echo "$i root=ok"; else echo "$i root=fail"; fi
		if echo w >>/tmp/f; then echo "$i tmp=ok"; else echo "$i tmp=fail"; fi
		if echo w 2>/dev/null >>/dev/shm/f; then echo "$i shm=ok"; else echo "$i shm=fail"; fi
		echo "$i done"; i=$((i+1)); done'
	attack_bundle r sh -c "$script"
	attack_bundle z sh -c "$script"
	# A zone without file rules: no Landlock domain, no mounts at create.
	start_both wonly $'0 root=ok\n0 tmp=ok\n0 shm=ok\n0 done' "$(policy wonly <<-'EOF'
		[filesystem]
	EOF
	)"
	rrun rt zone update wonly --policy "$(policy wonly2 <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
	EOF
	)"
	assert_success
	round 1
	assert_eq "$(said plain 1)" $'1 root=ok\n1 tmp=ok\n1 shm=ok\n1 done'
	# The container's own tmpfs mounts outside writable_paths too: the
	# running process's Landlock domain is the old one.
	assert_eq "$(said zoned 1)" $'1 root=fail\n1 tmp=ok\n1 shm=fail\n1 done'
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.err")" "sh: can't create /srv/ro/file: Read-only file system"
	assert_eq "$(cat "$(bundle_dir z)/rootfs/srv/ro/file")" $'keep\nw' # round 0's write only
	assert_eq "$(cat "$(bundle_dir z)/rootfs/tmp/f")" $'w\nw'
	wait_event wonly '.control == "file" and .object == "/srv/ro/file (read-only file system)" and .comm == "sh"' >/dev/null
	wait_event wonly '.control == "file" and .object == "/dev/shm/f (read-only file system)" and .comm == "sh"' >/dev/null
	check_passed wonly "container zoned: read-only paths"
}

@test "zone update: a read_only file made a deny path in a member the first update could not guard is masked by the next" {
	local script='i=0; while :; do until [ -e /tmp/go$i ]; do sleep 0.1; done
		if read -r l </data/f; then echo "$i f=$l"; else echo "$i f=fail"; fi
		echo "$i done"; i=$((i+1)); done'
	local b
	for b in r z; do
		attack_bundle $b sh -c "$script"
		echo secret >"$(bundle_dir $b)/rootfs/data/f"
		# A file where the new deny path needs a directory: the update
		# cannot make its mount point, so it guards nothing in the member.
		echo x >"$(bundle_dir $b)/rootfs/data/x"
	done
	# The zone denies /etc/shadow from create: the seccomp rule against
	# file handles is in place.
	start_both rof $'0 f=secret\n0 done' "$(policy rof <<-'EOF'
		[filesystem]
		read_only = ["/data/f"]
		deny = ["/etc/shadow"]
	EOF
	)"
	rrun rt zone update rof --policy "$(policy rof2 <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow", "/data/f", "/data/x/y"]
	EOF
	)"
	assert_failure 1
	assert_match "$stderr" "container zoned: filesystem.deny /data/x/y"
	round 1
	assert_eq "$(said zoned 1)" $'1 f=secret\n1 done'
	# The read-only bind the read_only rule made holds no deny rule:
	# verify says so.
	rrun rt zone verify rof --format json
	assert_failure 1
	jqe 'any(.checks[]; .name == "container zoned: denied paths" and (.passed | not) and (.detail | test("/data/f: only a read-only mount holds it")))' <<<"$stdout" >/dev/null ||
		fail "verify: $stdout"
	# The cause removed, the update again: the read-only bind that held
	# /data/f as read_only gets the null device on it.
	rm "$(bundle_dir z)/rootfs/data/x"
	rrun rt zone update rof --policy "$BATS_TEST_TMPDIR/rof2.toml"
	assert_success
	round 2
	assert_eq "$(said plain 2)" $'2 f=secret\n2 done'
	assert_eq "$(said zoned 2)" $'2 f=fail\n2 done'
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.err")" "sh: can't open /data/f: Permission denied"
	wait_event rof '.control == "file" and .object == "/data/f (permission denied)" and .comm == "sh"' >/dev/null
	check_passed rof "container zoned: denied paths"
}

@test "zone reconcile: makes the mounts of a deny path in a running member that an update could not make" {
	local script='i=0; while :; do until [ -e /tmp/go$i ]; do sleep 0.1; done
		if read -r l </data/secret; then echo "$i secret=$l"; else echo "$i secret=fail"; fi
		echo "$i done"; i=$((i+1)); done'
	local b
	for b in r z; do
		attack_bundle $b sh -c "$script"
		echo secret >"$(bundle_dir $b)/rootfs/data/secret"
		echo x >"$(bundle_dir $b)/rootfs/data/x" # where /data/x/y needs a directory
	done
	start_both rec $'0 secret=secret\n0 done'
	rrun rt zone update rec --policy "$(policy rec2 <<-'EOF'
		[filesystem]
		deny = ["/etc/shadow", "/data/secret", "/data/x/y"]
	EOF
	)"
	assert_failure 1
	assert_match "$stderr" "container zoned: filesystem.deny /data/x/y"
	round 1
	assert_eq "$(said zoned 1)" $'1 secret=secret\n1 done'
	rrun rt zone verify rec --format json
	assert_failure 1
	# The cause removed, reconcile makes what the update could not.
	rm "$(bundle_dir z)/rootfs/data/x"
	rrun rt zone reconcile
	assert_success
	round 2
	assert_eq "$(said plain 2)" $'2 secret=secret\n2 done'
	assert_eq "$(said zoned 2)" $'2 secret=fail\n2 done'
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.err")" "sh: can't open /data/secret: Permission denied"
	wait_event rec '.control == "file" and .object == "/data/secret (permission denied)" and .comm == "sh"' >/dev/null
	check_passed rec "container zoned: denied paths"
	# Held now: a second reconcile mounts nothing more.
	local pid before
	pid=$(ct_pid zoned)
	before=$(wc -l <"/proc/$pid/mountinfo")
	rrun rt zone reconcile
	assert_success
	assert_eq "$(wc -l <"/proc/$pid/mountinfo")" "$before"
}

@test "delete: a member's pending mount errors are judged before it goes, through the symlinks of its root file system" {
	# The rename goes through a symlink: only the member's root says that
	# /lnk/file is /srv/ro/file; by its words it is no path of the rules.
	local script='until [ -e /tmp/go ]; do sleep 0.1; done
		if fileattack renameat / lnk/file tmp/x; then echo rename=ok; else echo rename=fail; fi'
	local b
	for b in r z; do
		attack_bundle $b sh -c "$script"
		ln -s /srv/ro "$(bundle_dir $b)/rootfs/lnk"
	done
	in_zone z gone "$(guarded gone)"
	runc_run plain r
	run_ct zoned z
	touch "$(bundle_dir r)/rootfs/tmp/go" "$(bundle_dir z)/rootfs/tmp/go"
	retry 100 0.1 grep -q "^rename=" "$BATS_TEST_TMPDIR/plain.out"
	wait_status zoned stopped
	assert_eq "$(cat "$BATS_TEST_TMPDIR/plain.out")" rename=ok
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.out")" rename=fail
	assert_eq "$(cat "$BATS_TEST_TMPDIR/zoned.err")" "renameat: invalid cross-device link"
	# Nothing drained the event yet: delete judges it, then the record
	# and the state go.
	rrun rt delete zoned
	assert_success
	wait_event gone '.control == "file" and .object == "rename /srv/ro/file (invalid cross-device link)" and .comm == "fileattack"' >/dev/null
}
