#!/bin/bash
# Guest side (tests/vm/run-in-vm.sh, a VM whose kernel loads BPF-LSM programs):
# the bpf-lsm backend enforces filesystem.deny and exec.deny with the LSM
# file_deny map (libzone/filedeny.go), so
#   - open of a denied file is EACCES and exec of a denied binary is 126,
#     each with an event that names the policy path;
#   - "rauha zone update" lifts and restores both denials for the SAME
#     running process (the container's init opens and execs in a loop);
#   - mode = "audit" lets the open through and records an audit event.
# FILEDENY_OVERLAY=1 runs the container on an overlayfs root (tmpfs upper,
# VM_MODULES=overlay), as image-based engines do: the kernel keys by the
# overlay superblock's dev, stat(2) must report the same.
# Needs rauha (cgo): VM_BINS=/path/to/rauha RUNTIME=/path/to/rauha. Prints
# "FILEDENY: PASS|FAIL" and exits 0/1. Example (host):
#   P=$(mktemp -d); cp tests/vm/filedeny.sh $P/
#   VM_BINS=$PWD/rauha tests/vm/run-in-vm.sh $P RUNTIME=$PWD/rauha ./filedeny.sh
set -u
RT=${RUNTIME:-rauha}
R=$(mktemp -d /run/rauha-filedeny.XXXXXX) # fresh: the event log outlives its zone
B=/tmp/fdbundle
Z=fd
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "  ok    $*"; }
bad() { fail=$((fail + 1)); echo "  FAIL  $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
rt() { "$RT" --root "$R" "$@"; }

command -v "$RT" >/dev/null || { echo "FILEDENY: FAIL ($RT not in the guest; pass VM_BINS=/path/to/rauha)"; exit 1; }

mkdir -p $B/rootfs/bin $B/rootfs/etc $B/rootfs/proc $B/rootfs/sys $B/rootfs/dev $B/rootfs/tmp $B/rootfs/run
# The init reports through a writable bind mount: the root is read-only, as
# a zone with exec rules needs (a writable one would let a copy of the
# denied binary run).
statedir=/tmp/fdstate
mkdir -p $statedir
cp /usr/bin/busybox $B/rootfs/bin/busybox
for a in $(/usr/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox $B/rootfs/bin/$a; done
# An executable of its own: a busybox applet is the busybox inode.
printf '#!/bin/sh\nexit 0\n' >$B/rootfs/bin/tool
chmod +x $B/rootfs/bin/tool
echo secret >$B/rootfs/etc/secret
echo public >$B/rootfs/etc/motd
mkdir -p $B/rootfs/srv/private/sub
echo key >$B/rootfs/srv/private/sub/key
# The init reports, twice a second, whether it can open /etc/secret itself
# (a redirection in the shell, no new process) and exec /bin/tool.
cat >$B/rootfs/loop.sh <<'IN'
#!/bin/sh
while :; do
	if read x </etc/secret 2>/dev/null; then o=open; else o=denied; fi
	/bin/tool true 2>/dev/null; e=$?
	echo "open=$o exec=$e" >/run/state.tmp && mv /run/state.tmp /run/state
	sleep 0.5
done
IN
chmod +x $B/rootfs/loop.sh
# For the file routes (file_routes below): the helper and the mount point.
mkdir -p $B/rootfs/meta
[ -x "${FILEATTACK:-/payload/bin/fileattack}" ] && cp "${FILEATTACK:-/payload/bin/fileattack}" $B/rootfs/bin/fileattack
rootpath=rootfs
if [ "${FILEDENY_OVERLAY:-0}" = 1 ]; then
	mkdir -p /tmp/ov/upper /tmp/ov/work /tmp/ov/merged
	mount -t overlay overlay -o lowerdir=$B/rootfs,upperdir=/tmp/ov/upper,workdir=/tmp/ov/work /tmp/ov/merged ||
		{ echo "FILEDENY: FAIL (no overlayfs: VM_MODULES=overlay)"; exit 1; }
	rootpath=/tmp/ov/merged
	echo "== overlayfs root: $(stat -c 'dev %d' /tmp/ov/merged/etc/secret), lower $(stat -c 'dev %d' $B/rootfs/etc/secret)"
fi
cat >$B/config.json <<'IN'
{
  "ociVersion": "1.0.2-dev",
  "process": {
    "terminal": false, "user": {"uid": 0, "gid": 0},
    "args": ["/loop.sh"],
    "env": ["PATH=/bin"], "cwd": "/",
    "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"], "permitted": ["CAP_KILL"]},
    "noNewPrivileges": true
  },
  "root": {"path": "ROOTPATH", "readonly": true},
  "hostname": "fd",
  "annotations": {"org.rauha.zone": "fd"},
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
    {"destination": "/run", "type": "bind", "source": "STATEDIR", "options": ["rbind", "rw"]}
  ],
  "linux": {
    "cgroupsPath": "/rauha-filedeny/c1",
    "resources": {"devices": [{"allow": false, "access": "rwm"}]},
    "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]
  }
}
IN
sed -i -e "s|ROOTPATH|$rootpath|" -e "s|STATEDIR|$statedir|" $B/config.json
policy() { # policy FILE MODE DENY?
	{
		printf '[zone]\nmode = "%s"\nadmission = "strict"\n' "$2"
		if [ "$3" = deny ]; then
			printf '[filesystem]\ndeny = ["/etc/secret", "/srv/private"]\n[exec]\ndeny = ["/bin/tool"]\n'
		fi
	} >"$1"
}
policy /tmp/deny.toml enforce deny
policy /tmp/open.toml enforce none
policy /tmp/audit.toml audit deny

# state WANT: wait until the init's last report is WANT (a fresh one).
state() {
	local i
	for i in $(seq 1 30); do
		rm -f $statedir/state
		sleep 0.6
		[ "$(cat $statedir/state 2>/dev/null)" = "$1" ] && return 0
	done
	echo "    state: $(cat $statedir/state 2>/dev/null), want $1" >&2
	return 1
}
events() { rt zone events $Z --format json 2>/dev/null; }
has_event() { events | grep "\"control\":\"$1\"" | grep "\"decision\":\"$2\"" | grep -q "\"object\":\"$3"; }

cleanup() {
	rt kill c1 KILL >/dev/null 2>&1
	rt kill c2 KILL >/dev/null 2>&1
	sleep 0.5
	rt delete --force c1 >/dev/null 2>&1
	rt delete --force c2 >/dev/null 2>&1
	rt zone delete --force $Z >/dev/null 2>&1
	rt zone delete --force fm >/dev/null 2>&1
	umount /tmp/fdsrc 2>/dev/null
}
trap cleanup EXIT

echo "== $($RT --version | head -1)"
check "zone create with the deny policy" rt zone create $Z --policy /tmp/deny.toml
rt zone inspect $Z | grep -i backend
cd $B || exit 1
if ! rt run -d c1 </dev/null >/tmp/run.log 2>&1; then cat /tmp/run.log; fi
check "container c1 runs" sh -c "$RT --root $R state c1 | grep -q running"
pid=$(rt state c1 | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')

echo "== enforce: the init cannot open /etc/secret nor exec /bin/tool"
check "init: open denied, exec 126" state "open=denied exec=126"
out=$(rt exec c1 cat /etc/secret 2>&1); rc=$?
echo "    exec cat /etc/secret: rc=$rc $out"
check "exec'd cat /etc/secret: EACCES" eval '[ $rc = 1 ] && [ -z "${out##*Permission denied*}" ]'
out=$(rt exec c1 cat /srv/private/sub/key 2>&1); rc=$?
echo "    exec cat /srv/private/sub/key: rc=$rc $out"
check "a file inside a denied directory: EACCES" eval '[ $rc = 1 ] && [ -z "${out##*Permission denied*}" ]'
out=$(rt exec c1 cat /etc/motd 2>&1)
check "the sibling /etc/motd opens" [ "$out" = public ]
out=$(rt exec c1 sh -c '/bin/tool true; echo rc=$?' 2>&1)
echo "    exec /bin/tool: $out"
check "exec'd sh: /bin/tool is 126" eval '[ -z "${out##*rc=126*}" ]'
events | head -5
check "file event names /etc/secret (deny)" has_event file deny /etc/secret
check "exec event names /bin/tool (deny)" has_event exec deny /bin/tool
check "file event names /srv/private/sub/key (deny)" has_event file deny /srv/private/sub/key
n=$(events | grep -c '"object":"/srv/private/sub/key')
check "one event for one denied open (the observer's twin is dropped), got $n" [ "$n" = 1 ]
rt zone verify $Z | grep -E 'backend|kernel policy|isolated'
check "verify: the kernel policy (with the resolved inodes) equals the stored one" \
	sh -c "$RT --root $R zone verify $Z | grep 'kernel policy' | grep -q 'kernel maps equal'"

echo "== live update: the same init, without the deny lists"
check "zone update to the open policy" rt zone update $Z --policy /tmp/open.toml
check "init (same pid): open ok, exec 0" state "open=open exec=0"
out=$(rt exec c1 cat /etc/secret 2>&1)
check "exec'd cat /etc/secret reads it" [ "$out" = secret ]

echo "== live update back to the deny policy"
check "zone update to the deny policy" rt zone update $Z --policy /tmp/deny.toml
check "init (same pid): open denied, exec 126 again" state "open=denied exec=126"

echo "== audit mode: denials are logged, not enforced"
check "zone update to the audit policy" rt zone update $Z --policy /tmp/audit.toml
check "init (same pid): open ok, exec 0 in audit mode" state "open=open exec=0"
check "file event names /etc/secret (audit)" has_event file audit /etc/secret
check "exec event names /bin/tool (audit)" has_event exec audit /bin/tool
events | grep '"decision":"audit"' | head -2
check "the init is still the same process" sh -c "[ \"\$($RT --root $R state c1 | sed -n 's/.*\"pid\": \([0-9]*\).*/\1/p')\" = $pid ]"

# ------------------------------------------------------------------ file routes
# The ways to reach or change a listed inode other than open and exec
# (bpf/lsmfile.bpf.h), in a zone of their own (fm) whose deny and read_only
# paths lie on a writable bind mount (/meta): on a read-only mount every
# change fails with EROFS before any LSM hook runs. The denied paths are in
# /meta/w, a sibling of the read_only /meta/ro: Landlock (which holds
# read_only against writes) takes the right to create entries from /meta
# itself, and would refuse links and renames there before the LSM hooks
# run. Each route is denied with EACCES and an event; files and sockets
# made below the denied directory after the container started are too, and
# so is a file the host creates at a denied path that was missing then.
# Below the denied and the read_only directory the container has a tmpfs
# (tm) and a bind of a subdirectory of another file system (bm): the inode
# hooks of utimensat, xattr and ACL changes walk up only within one file
# system, so a file made there after the push is judged only because the
# push lists the roots of those mounts too (libzone/filedeny.go).
file_routes() {
	local Z2=fm B2=/tmp/fmbundle M=/tmp/fdmeta S=/tmp/fdsrc tool=${FILEATTACK:-/payload/bin/fileattack}
	[ -x $B/rootfs/bin/fileattack ] || { bad "file routes: no fileattack helper at $tool"; return; }
	rm -rf $M $B2 # a fresh tree: the script runs twice in one guest (FILEDENY_OVERLAY)
	mkdir -p $M/ro/sub $M/w/private $B2
	mkdir -p $M/w/private/tm $M/w/private/bm $M/ro/tm $M/ro/bm $S
	umount $S 2>/dev/null
	mount -t tmpfs tmpfs $S && mkdir -p $S/d/inner $S/r/inner
	echo secret >$M/w/secret
	echo ro >$M/ro/sub/file
	echo key >$M/w/private/key
	echo free >$M/w/free
	"$tool" listen $M/w/private/sock0 >/dev/null 2>&1 & # in the list: it exists at start
	local srv0=$!
	printf '[zone]\nmode = "enforce"\nadmission = "strict"\n[filesystem]\ndeny = ["/meta/w/secret", "/meta/w/private", "/meta/w/later", "/meta/w/deep/a/b/secret", "/meta/w/moved/x/secret", "/meta/w/zdeep/a/secret"]\nread_only = ["/meta/ro"]\n' >/tmp/fm.toml
	sed -e 's|"/loop.sh"|"/bin/sleep", "1000"|' -e 's|"org.rauha.zone": "fd"|"org.rauha.zone": "fm"|' \
		-e 's|/rauha-filedeny/c1|/rauha-filedeny/c2|' -e "s|\"path\": \"rootfs\"|\"path\": \"$B/rootfs\"|" \
		-e "s|\(\"destination\": \"/run\".*\]}\)|\1,\n    {\"destination\": \"/meta\", \"type\": \"bind\", \"source\": \"$M\", \"options\": [\"rbind\", \"rw\"]}$(nested_mounts $S)|" \
		$B/config.json >$B2/config.json
	check "zone create fm (deny and read_only on /meta)" rt zone create $Z2 --policy /tmp/fm.toml
	if ! (cd $B2 && rt run -d c2 </dev/null >/tmp/run2.log 2>&1); then cat /tmp/run2.log; fi
	check "container c2 runs" sh -c "$RT --root $R state c2 | grep -q running"
	# Made by the host after the start AT a denied path that did not exist
	# then: listed by its directory and name, which verify expects while the
	# kernel holds it (checked before files appear below /meta/w/private,
	# which verify expects as inodes: "rauha zone update" lists those).
	echo later >$M/w/later
	check "verify: the kernel policy (/meta/w/later held by name) equals the stored one" \
		sh -c "$RT --root $R zone verify $Z2 | grep 'kernel policy' | grep -q 'kernel maps equal'"
	# Made after the start, below the denied directory: in no list.
	echo late >$M/w/private/late
	mkdir $M/w/private/d
	"$tool" listen $M/w/private/sock >/dev/null 2>&1 &
	local srv=$!
	for i in $(seq 1 50); do [ -S $M/w/private/sock ] && [ -S $M/w/private/sock0 ] && break; sleep 0.1; done

	denied() { # denied WHAT CMD...: exits non-zero with "Permission denied"
		local what=$1 out rc
		shift
		out=$(rt exec c2 "$@" 2>&1); rc=$?
		echo "    $*: rc=$rc $out"
		check "$what: EACCES" eval '[ $rc != 0 ] && { [ -z "${out##*Permission denied*}" ] || [ -z "${out##*permission denied*}" ]; }'
	}
	local f
	for f in /meta/w/secret /meta/ro/sub/file; do
		denied "chmod 4755 $f" chmod 4755 $f
		denied "chown 0:0 $f" chown 0:0 $f
		denied "touch -d 2000-01-01 $f" touch -d 2000-01-01 $f
		denied "setxattr user.rauha on $f" fileattack setxattr $f user.rauha owned
	done
	denied "ln /meta/w/secret (a new name)" ln /meta/w/secret /meta/w/link
	check "ln /meta/ro/sub/file fails" sh -c "! $RT --root $R exec c2 ln /meta/ro/sub/file /meta/w/link2"
	check "the host sees /meta/w/secret unchanged (mode 644)" [ "$(stat -c %a $M/w/secret)" = 644 ]
	check "and /meta/ro/sub/file" [ "$(stat -c %a $M/ro/sub/file)" = 644 ]
	# Made by the host after the push in the mounts nested below the
	# listed directories: utimensat, setxattr, removexattr and an ACL
	# change have only inode hooks.
	local pid2
	pid2=$(rt state c2 | sed -n 's/.*"pid": \([0-9]*\).*/\1/p')
	echo late >$S/d/inner/late2
	echo late >$S/r/inner/late2
	nsenter -t "$pid2" -m sh -c 'echo late >/meta/w/private/tm/late2 && echo late >/meta/ro/tm/late2'
	for f in /meta/w/private/tm/late2 /meta/w/private/bm/late2 /meta/ro/tm/late2 /meta/ro/bm/late2; do
		# user xattrs on tmpfs need 6.6: there the denial still comes first.
		nsenter -t "$pid2" -m /bin/fileattack setxattr $f user.rauha host 2>/dev/null
		denied "touch -d 2000-01-01 $f (nested mount, made after the push)" touch -d 2000-01-01 $f
		denied "setxattr $f" fileattack setxattr $f user.rauha owned
		denied "removexattr $f" fileattack removexattr $f user.rauha
		denied "setfacl -m u:1000:r $f" fileattack setacl $f
	done
	check "the host's late2 files keep their times" sh -c "out=\$(nsenter -t $pid2 -m stat -c %y /meta/w/private/tm/late2 /meta/w/private/bm/late2 /meta/ro/tm/late2 /meta/ro/bm/late2) && [ \$(echo \"\$out\" | grep -c .) = 4 ] && ! echo \"\$out\" | grep -q '^2000'"
	denied "cat /meta/w/private/late (created after start)" cat /meta/w/private/late
	denied "chmod /meta/w/private/late" chmod 600 /meta/w/private/late
	denied "mv /meta/w/private/late out of the denied directory" mv /meta/w/private/late /meta/w/moved
	denied "connect /meta/w/private/sock0 (listed)" fileattack connect /meta/w/private/sock0
	denied "connect /meta/w/private/sock (bound after start)" fileattack connect /meta/w/private/sock
	check "the host reaches /meta/w/private/sock" sh -c "\"$tool\" connect $M/w/private/sock | grep -q hello"
	denied "rm /meta/w/secret (the host's file)" rm -f /meta/w/secret
	denied "rmdir /meta/w/private/d (below the denied directory)" rmdir /meta/w/private/d
	check "the host still has /meta/w/secret and /meta/w/private/d" sh -c "[ \"\$(cat $M/w/secret)\" = secret ] && [ -d $M/w/private/d ]"
	denied "cat /meta/w/later (created by the host after start)" cat /meta/w/later
	denied "rm /meta/w/later" rm -f /meta/w/later
	check "the host reads /meta/w/later" [ "$(cat $M/w/later)" = later ]
	# Deny paths whose directory was missing at the push too (/meta/w/deep,
	# /meta/w/moved and /meta/w/zdeep did not exist): listed by a chain of
	# names from /meta/w, matched walking up from what is opened. The host
	# makes the directories and the file; a directory with the file in it
	# is moved into place; the zone itself makes the directories, then the
	# file (refused). Each file is first shown readable where no rule
	# covers it.
	mkdir -p $M/w/deep/a/b && echo deep >$M/w/deep/a/b/secret
	check "the host made /meta/w/deep/a/b/secret and reads it" [ "$(cat $M/w/deep/a/b/secret)" = deep ]
	denied "cat /meta/w/deep/a/b/secret (directories and file made by the host after start)" cat /meta/w/deep/a/b/secret
	mkdir -p $M/w/tmpdir/x && echo moved >$M/w/tmpdir/x/secret
	check "the zone reads /meta/w/tmpdir/x/secret before the move" sh -c "$RT --root $R exec c2 cat /meta/w/tmpdir/x/secret | grep -q moved"
	mv $M/w/tmpdir $M/w/moved
	denied "cat /meta/w/moved/x/secret (a directory moved into place)" cat /meta/w/moved/x/secret
	denied "touch -d 2000-01-01 /meta/w/moved/x/secret" touch -d 2000-01-01 /meta/w/moved/x/secret
	check "the zone makes /meta/w/zdeep/a (on the way to a denied path)" rt exec c2 mkdir -p /meta/w/zdeep/a
	denied "echo >/meta/w/zdeep/a/secret (the zone creates the denied path)" sh -c 'echo z >/meta/w/zdeep/a/secret'
	check "nothing was made at /meta/w/zdeep/a/secret" [ ! -e $M/w/zdeep/a/secret ]
	echo host >$M/w/zdeep/a/secret
	denied "cat /meta/w/zdeep/a/secret (then made by the host)" cat /meta/w/zdeep/a/secret
	check "verify: the kernel policy (chains held) equals the stored one" \
		sh -c "$RT --root $R zone verify $Z2 | grep 'kernel policy' | grep -q 'kernel maps equal'"
	check "chmod of an unlisted file works" rt exec c2 chmod 600 /meta/w/free
	check "ln of an unlisted file works" rt exec c2 ln /meta/w/free /meta/w/free2
	check "read_only is no deny: cat /meta/ro/sub/file" sh -c "$RT --root $R exec c2 cat /meta/ro/sub/file | grep -q ro"

	# New entries inside the denied directory (lsm/path_mknod, path_mkdir,
	# path_symlink, path_link, path_rename): each works from the host and
	# in an unlisted directory, and is refused in the zone.
	denied "touch /meta/w/private/new (a new file)" touch /meta/w/private/new
	denied "mkdir /meta/w/private/newdir" mkdir /meta/w/private/newdir
	denied "mkfifo /meta/w/private/fifo" mkfifo /meta/w/private/fifo
	denied "ln -s /etc/passwd /meta/w/private/sym" ln -s /etc/passwd /meta/w/private/sym
	denied "ln /meta/w/free /meta/w/private/hard" ln /meta/w/free /meta/w/private/hard
	denied "mv /meta/w/free2 /meta/w/private/moved" mv /meta/w/free2 /meta/w/private/moved
	check "nothing was made in /meta/w/private" sh -c "! ls $M/w/private | grep -Eq '^(new|newdir|fifo|sym|hard|moved)\$'"
	check "the zone makes files in an unlisted directory" rt exec c2 sh -c 'touch /meta/w/new && mkdir /meta/w/newdir && ln -s x /meta/w/sym'
	check "the host makes files in /meta/w/private" sh -c "touch $M/w/private/hostnew && mkdir $M/w/private/hostdir"

	# A tmpfs mounted in the container below the denied directory after the
	# push, with a file the host makes there: the path hooks walk up through
	# the mount point to /meta/w/private.
	mkdir $M/w/private/mnt
	check "mount a tmpfs at /meta/w/private/mnt in c2" nsenter -t "$pid2" -m mount -t tmpfs tmpfs /meta/w/private/mnt
	check "the host makes /meta/w/private/mnt/f in it" nsenter -t "$pid2" -m sh -c 'echo f >/meta/w/private/mnt/f'
	denied "chmod 4755 /meta/w/private/mnt/f (nested mount)" chmod 4755 /meta/w/private/mnt/f
	denied "rm /meta/w/private/mnt/f (nested mount)" rm -f /meta/w/private/mnt/f
	denied "touch /meta/w/private/mnt/g (nested mount)" touch /meta/w/private/mnt/g
	check "the host still has /meta/w/private/mnt/f, mode 644" nsenter -t "$pid2" -m sh -c '[ "$(stat -c %a /meta/w/private/mnt/f)" = 644 ]'
	# A directory made below the denied one after the push, bound outside
	# it: what is below it stays denied through the bind (the walk goes up
	# the file system above the bind's root before the mount point).
	mkdir $M/w/private/bdir $M/w/out && echo b >$M/w/private/bdir/f
	check "bind /meta/w/private/bdir to /meta/w/out in c2" nsenter -t "$pid2" -m mount --bind /meta/w/private/bdir /meta/w/out
	denied "cat /meta/w/out/f (a bind of a directory made below the denied one)" cat /meta/w/out/f
	denied "touch -d 2000-01-01 /meta/w/out/f (through the bind)" touch -d 2000-01-01 /meta/w/out/f
	mkdir $M/w/free.d
	check "mount a tmpfs at /meta/w/free.d in c2 (in no listed tree)" nsenter -t "$pid2" -m sh -c 'mount -t tmpfs tmpfs /meta/w/free.d && echo f >/meta/w/free.d/f'
	check "touch -d of a file in an unlisted mount works" rt exec c2 touch -d 2000-01-01 /meta/w/free.d/f


	ev2() { rt zone events $Z2 --format json 2>/dev/null | grep '"control":"file"' | grep '"decision":"deny"' | grep -q "\"object\":\"$1"; }
	check "event: setattr /meta/w/secret" ev2 "setattr /meta/w/secret"
	check "event: setattr /meta/ro (read_only, below)" ev2 "setattr /meta/ro/…/file"
	check "event: setxattr /meta/w/secret" ev2 "setxattr /meta/w/secret"
	check "event: link /meta/w/secret" ev2 "link /meta/w/secret"
	check "event: open /meta/w/private/…/late" ev2 "/meta/w/private/…/late"
	check "event: rename /meta/w/private/…/late" ev2 "rename /meta/w/private/…/late"
	check "event: unlink /meta/w/secret" ev2 "unlink /meta/w/secret"
	check "event: rmdir /meta/w/private/…/d" ev2 "rmdir /meta/w/private/…/d"
	check "event: open /meta/w/later (by name)" ev2 "/meta/w/later"
	check "event: unlink /meta/w/later (by name)" ev2 "unlink /meta/w/later"
	check "event: unix connect /meta/w/private/sock0" ev2 "unix connect /meta/w/private/sock0"
	check "event: unix connect /meta/w/private/…/sock" ev2 "unix connect /meta/w/private/…/sock"
	check "event: create /meta/w/private/…/new" ev2 "create /meta/w/private/…/new"
	check "event: mkdir /meta/w/private/…/newdir" ev2 "mkdir /meta/w/private/…/newdir"
	check "event: create /meta/w/private/…/fifo" ev2 "create /meta/w/private/…/fifo"
	check "event: symlink /meta/w/private/…/sym" ev2 "symlink /meta/w/private/…/sym"
	check "event: link /meta/w/private/…/hard" ev2 "link /meta/w/private/…/hard"
	check "event: rename /meta/w/private/…/moved" ev2 "rename /meta/w/private/…/moved"
	check "event: chmod /meta/w/private/…/f (nested mount)" ev2 "chmod /meta/w/private/…/f"
	check "event: unlink /meta/w/private/…/f (nested mount)" ev2 "unlink /meta/w/private/…/f"
	check "event: create /meta/w/private/…/g (nested mount)" ev2 "create /meta/w/private/…/g"
	local mnt
	for mnt in /meta/w/private/tm /meta/w/private/bm /meta/ro/tm /meta/ro/bm; do
		check "event: setattr $mnt/…/late2" ev2 "setattr $mnt/…/late2"
		check "event: setxattr $mnt/…/late2" ev2 "setxattr $mnt/…/late2"
		check "event: removexattr $mnt/…/late2" ev2 "removexattr $mnt/…/late2"
		# Before 6.2 ACLs reach the xattr hooks, where either program may
		# be the first to deny.
		check "event: set acl $mnt/…/late2" sh -c "$RT --root $R zone events $Z2 --format json 2>/dev/null | grep '\"decision\":\"deny\"' | grep -Eq '\"object\":\"(set acl|setxattr) $mnt/…/late2'"
	done
	check "event: open /meta/w/deep/a/b/secret (chain)" ev2 "/meta/w/deep/a/b/secret"
	check "event: open /meta/w/moved/x/secret (chain)" ev2 "/meta/w/moved/x/secret"
	check "event: setattr /meta/w/moved/x/secret (chain)" ev2 "setattr /meta/w/moved/x/secret"
	check "event: create /meta/w/zdeep/a/secret (chain)" ev2 "create /meta/w/zdeep/a/secret"
	check "event: open /meta/w/zdeep/a/secret (chain)" ev2 "/meta/w/zdeep/a/secret"
	check "event: open /meta/w/private/…/f (bind out of the denied directory)" sh -c "$RT --root $R zone events $Z2 --format json | grep '\"control\":\"file\"' | grep '\"comm\":\"cat\"' | grep -q '\"object\":\"/meta/w/private/…/f'"
	rt zone events $Z2 --format json 2>/dev/null | grep '"control":"file"' | grep -E '"comm":"(ln|mv)"'

	# The tmpfs at /meta/w/private/mnt was mounted after the push: its root
	# is in no list, so verify fails until a push lists it.
	rt zone verify $Z2 | grep -E 'kernel policy|mounts below' | cut -c1-300
	check "verify: 'mounts below listed directories' fails naming /meta/w/private/mnt (mounted after the push)" \
		sh -c "$RT --root $R zone verify $Z2 | grep -E '^FAIL +mounts below listed directories ' | grep -q 'container c2: /meta/w/private/mnt:'"
	check "verify: the kernel policy fails without the root of /meta/w/private/mnt" \
		sh -c "$RT --root $R zone verify $Z2 | grep -Eq '^FAIL +kernel policy '"
	check "zone reconcile" rt zone reconcile
	rt zone verify $Z2 | grep -E 'file |unix sockets|listed directories'
	local route
	for route in "file metadata" "file names" "new entries" "file handles" "unix sockets" "files below listed directories" "mounts below listed directories"; do
		check "verify: $route" sh -c "$RT --root $R zone verify $Z2 | grep -Eq '^PASS +$route '"
	done
	check "verify: the nested mounts are listed" sh -c "$RT --root $R zone verify $Z2 | grep -E '^PASS +mounts below listed directories ' | grep -q 'container c2: /meta/ro/bm'"
	# Files and directories made below /meta/w/private since the push (late,
	# d, sock, hostnew, hostdir, the mount's f): covered by the walk up.
	check "verify: the kernel policy passes with files made below the denied directory since the push" \
		sh -c "$RT --root $R zone verify $Z2 | grep 'kernel policy' | grep -q 'kernel maps equal'"
	nsenter -t "$pid2" -m sh -c 'echo h >/meta/w/private/mnt/h'
	denied "touch -d 2000-01-01 /meta/w/private/mnt/h (mounted before the reconcile, made after)" touch -d 2000-01-01 /meta/w/private/mnt/h
	nsenter -t "$pid2" -m umount /meta/w/private/mnt /meta/w/free.d /meta/w/out

	kill $srv $srv0 2>/dev/null
	rt kill c2 KILL >/dev/null 2>&1
	sleep 0.5
	rt delete --force c2 >/dev/null 2>&1
	rt zone delete --force $Z2 >/dev/null 2>&1
	umount $S
}

# nested_mounts SRC: the mounts of c2 nested below the denied and the
# read_only directory, as config.json lines (sed replacement text).
nested_mounts() {
	local d
	for d in /meta/w/private /meta/ro; do
		printf ',\\n    {"destination": "%s/tm", "type": "tmpfs", "source": "tmpfs", "options": ["mode=755"]}' $d
	done
	printf ',\\n    {"destination": "/meta/w/private/bm", "type": "bind", "source": "%s/d/inner", "options": ["bind", "rw"]}' "$1"
	printf ',\\n    {"destination": "/meta/ro/bm", "type": "bind", "source": "%s/r/inner", "options": ["bind", "rw"]}' "$1"
}
echo "== file routes beyond open (lsm/inode_*, lsm/unix_*)"
file_routes

echo "FILEDENY: $([ $fail = 0 ] && echo PASS || echo FAIL) ($pass passed, $fail failed)"
[ $fail = 0 ]
