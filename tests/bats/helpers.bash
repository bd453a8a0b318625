#!/usr/bin/env bash
# Shared helpers of the end-to-end suite. Every test is written against the
# runc CLI contract, so the suite runs unchanged against runc
# (RUNTIME=/usr/sbin/runc) and against rauha (the default).
#
# Knobs: RUNTIME (binary under test), RAUHA (default $REPO_ROOT/rauha),
#        RT_TIMEOUT (seconds one runtime call may take, default 60),
#        BUSYBOX (static busybox to build rootfs from, default /bin/busybox).

REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
RAUHA=${RAUHA:-$REPO_ROOT/rauha}
RUNTIME=${RUNTIME:-$RAUHA}
BUSYBOX=${BUSYBOX:-/bin/busybox}
RT_TIMEOUT=${RT_TIMEOUT:-60}
# Every cgroup this suite makes lives under this prefix, in every hierarchy.
CG_PREFIX=${CG_PREFIX:-/rauha-test}
# Built once per bats run, shared by all files (read-only after build).
CACHE_DIR=${BATS_RUN_TMPDIR:-/tmp}/rauha-bats-cache

# ---------------------------------------------------------------- guards

# requires FEATURE...: skip the test with a reason when the host lacks it.
requires() {
	local f
	for f in "$@"; do
		case $f in
		root) [[ $EUID -eq 0 ]] || skip "needs root" ;;
		cgroups_v1) [[ -d /sys/fs/cgroup/memory && -d /sys/fs/cgroup/pids ]] ||
			skip "needs cgroup v1 memory and pids hierarchies" ;;
		cgroups_hybrid) [[ -f /sys/fs/cgroup/unified/cgroup.procs ]] ||
			skip "needs cgroup2 mounted at /sys/fs/cgroup/unified (hybrid host)" ;;
		freezer) [[ -d /sys/fs/cgroup/freezer || -f /sys/fs/cgroup/cgroup.freeze ]] ||
			skip "needs a freezer cgroup" ;;
		go) command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]] ||
			skip "needs the go toolchain to build a test helper" ;;
		python3) command -v python3 >/dev/null || skip "needs python3" ;;
		strace) command -v strace >/dev/null || skip "needs strace (its fault injection: -e inject)" ;;
		userns) [[ -e /proc/self/ns/user ]] || skip "needs user namespaces" ;;
		seccomp) grep -q "^Seccomp:" /proc/self/status 2>/dev/null || skip "needs seccomp" ;;
		rauha) is_rauha || skip "rauha-only behaviour" ;;
		*) fail "requires: unknown feature '$f'" ;;
		esac
	done
}

# is_rauha: true when the runtime under test is rauha (not runc).
is_rauha() {
	[[ $(runtime_version) == rauha\ version* ]]
}

# runtime_version: first line of `$RUNTIME --version`, asked once per run.
runtime_version() {
	local f=$CACHE_DIR/version.$(echo "$RUNTIME" | md5sum | cut -c1-8)
	if [[ ! -s $f ]]; then
		mkdir -p "$CACHE_DIR"
		{ "$RUNTIME" --version 2>/dev/null | head -n1; } >"$f.$$" || true
		mv "$f.$$" "$f"
	fi
	cat "$f"
}

# is_runc_1_1: true for runc 1.1.x, whose documented deviations from the issue
# contract are skipped (with the reason) rather than asserted.
is_runc_1_1() {
	[[ $(runtime_version) =~ ^runc\ version\ 1\.1\. ]]
}

# runc_1_1_differs REASON: skip under runc 1.1.x only; rauha must pass.
# STRICT=1 runs the assertion anyway (to re-check the reason).
runc_1_1_differs() {
	if [[ ${STRICT:-0} != 1 ]] && is_runc_1_1; then
		skip "runc 1.1.x differs from the contract: $1"
	fi
}

fail() {
	echo "FAIL: $*" >&2
	return 1
}

# ---------------------------------------------------------------- runtime calls

# rt ARGS...: the runtime with this test's private --root.
rt() {
	timeout -k 5 "$RT_TIMEOUT" "$RUNTIME" --root "$ROOT" "$@"
}

# rrun CMD...: like bats' `run`, but stdout and stderr go to files. A container
# started by CMD inherits those files instead of a pipe, so a detached or
# created container never keeps the test waiting for EOF. Sets $status,
# $output (stdout then stderr), $stdout, $stderr, $lines.
rrun() {
	local o=$BATS_TEST_TMPDIR/rrun.out e=$BATS_TEST_TMPDIR/rrun.err
	status=0
	"$@" >"$o" 2>"$e" </dev/null || status=$?
	stdout=$(cat "$o")
	stderr=$(cat "$e")
	output=$stdout
	if [[ -n $stderr ]]; then
		output+=${output:+$'\n'}$stderr
	fi
	mapfile -t lines <<<"$output"
	if [[ $status -eq 124 ]]; then
		echo "# timed out after ${RT_TIMEOUT}s: $*" >&2
	fi
	return 0
}

# show: print the last rrun result (shown by bats when a test fails).
show() {
	echo "status=$status"
	echo "stdout: $stdout"
	echo "stderr: $stderr"
}

# ---------------------------------------------------------------- assertions

assert_success() {
	if [[ $status -ne 0 ]]; then
		show
		fail "expected exit 0, got $status"
	fi
}

# assert_failure [CODE]: non-zero exit (exactly CODE when given).
assert_failure() {
	local want=${1:-}
	if [[ $status -eq 0 ]]; then
		show
		fail "expected failure, got exit 0"
	elif [[ -n $want && $status -ne $want ]]; then
		show
		fail "expected exit $want, got $status"
	fi
}

# assert_match STRING REGEX
assert_match() {
	if ! [[ $1 =~ $2 ]]; then
		fail "'$1' does not match /$2/"
	fi
}

# assert_eq GOT WANT
assert_eq() {
	if [[ "$1" != "$2" ]]; then
		fail "got '$1', want '$2'"
	fi
}

# assert_error_line REGEX [CODES]: the last call failed with an exit code in
# CODES (default 1; e.g. "1|255") and printed one non-empty line on stderr
# that matches REGEX (case-insensitive).
assert_error_line() {
	local codes=${2:-1}
	if ! [[ $status =~ ^($codes)$ ]]; then
		show
		fail "expected exit $codes, got $status"
	fi
	local n
	n=$(grep -c . <<<"$stderr" || true)
	if [[ $n -ne 1 ]]; then
		show
		fail "expected exactly one error line on stderr, got $n"
	fi
	if ! grep -qiE "$1" <<<"$stderr"; then
		show
		fail "error line does not name the problem (/$1/)"
	fi
}

# jqe ARGS...: `jq -e ARGS` on standard input that also fails when the input
# is empty: jq 1.6's -e exits 0 when it reads nothing, so a check fed by a
# command that printed nothing would pass.
jqe() {
	local in
	in=$(cat) || return 1
	[[ $in =~ [^[:space:]] ]] || { echo "jqe: empty input" >&2; return 1; }
	jq -e "$@" <<<"$in"
}

# ---------------------------------------------------------------- bundles

# build_rootfs_cache: one busybox rootfs per run; bundles copy it.
build_rootfs_cache() {
	local r=$CACHE_DIR/rootfs
	[[ -x $r/bin/busybox ]] && return 0
	command -v jq >/dev/null || fail "jq is required (scripts/setup-debian.sh)"
	[[ -x $BUSYBOX ]] || fail "$BUSYBOX missing (apt-get install busybox-static)"
	if ! file -L "$BUSYBOX" | grep -q 'statically linked'; then
		fail "$BUSYBOX is not statically linked (apt-get install busybox-static)"
	fi
	local tmp=$CACHE_DIR/rootfs.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,run,var/tmp,home,mnt}
	chmod 1777 "$tmp/tmp" "$tmp/var/tmp"
	chmod 0700 "$tmp/root"
	install -m 0755 "$BUSYBOX" "$tmp/bin/busybox"
	# One perl process instead of a fork per applet (forks cost 5-10 ms here).
	"$BUSYBOX" --list-full | perl -e '
		my $root = shift;
		while (my $a = <STDIN>) {
			chomp $a;
			next if $a eq "" || $a eq "bin/busybox";
			symlink("/bin/busybox", "$root/$a") or die "symlink $a: $!\n";
		}' "$tmp" || fail "cannot create busybox applet links"
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/bin/false' \
		'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$tmp/etc/passwd"
	printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'tty:x:5:' 'wheel:x:10:' 'nogroup:x:65534:' >"$tmp/etc/group"
	: >"$tmp/etc/hosts"
	: >"$tmp/etc/resolv.conf"
	write_config_template "$tmp/../config.json.$$"
	mv "$tmp/../config.json.$$" "$CACHE_DIR/config.json"
	mv "$tmp" "$r"
}

# cg_path NAME: the absolute cgroupsPath of bundle NAME in this test.
cg_path() {
	echo "$CG_PREFIX/$TEST_UID-$1"
}

# make_bundle NAME [ARGS...]: $BATS_TEST_TMPDIR/NAME with a private copy of
# the busybox rootfs and a runc-spec-like config.json (terminal false,
# writable root, absolute cgroupsPath /rauha-test/<test-uid>-NAME, no ambient
# capabilities: process.bats covers those on their own).
# Default process: sleep 3600. The path is `bundle_dir NAME`.
make_bundle() {
	local name=$1
	shift
	[[ $# -gt 0 ]] || set -- sleep 3600
	local dir=$BATS_TEST_TMPDIR/$name
	mkdir -p "$dir"
	cp -a "$CACHE_DIR/rootfs" "$dir/rootfs"
	jq --arg cg "$(cg_path "$name")" '.linux.cgroupsPath = $cg | .process.args = $ARGS.positional' \
		"$CACHE_DIR/config.json" --args -- "$@" >"$dir/config.json"
}

# write_config_template: the runc-spec-like default config every bundle
# starts from (process args and cgroupsPath are set per bundle).
write_config_template() {
	jq -n '{
	  ociVersion: "1.0.2-dev",
	  process: {
	    terminal: false,
	    user: {uid: 0, gid: 0},
	    args: ["sleep", "3600"],
	    env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"],
	    cwd: "/",
	    capabilities: {
	      bounding: ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
	      effective: ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
	      permitted: ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
	    },
	    rlimits: [{type: "RLIMIT_NOFILE", hard: 1024, soft: 1024}],
	    noNewPrivileges: true
	  },
	  root: {path: "rootfs", readonly: false},
	  hostname: "rauha",
	  mounts: [
	    {destination: "/proc", type: "proc", source: "proc"},
	    {destination: "/dev", type: "tmpfs", source: "tmpfs",
	     options: ["nosuid", "strictatime", "mode=755", "size=65536k"]},
	    {destination: "/dev/pts", type: "devpts", source: "devpts",
	     options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
	    {destination: "/dev/shm", type: "tmpfs", source: "shm",
	     options: ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
	    {destination: "/dev/mqueue", type: "mqueue", source: "mqueue",
	     options: ["nosuid", "noexec", "nodev"]},
	    {destination: "/sys", type: "sysfs", source: "sysfs",
	     options: ["nosuid", "noexec", "nodev", "ro"]},
	    {destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
	     options: ["nosuid", "noexec", "nodev", "relatime", "ro"]}
	  ],
	  linux: {
	    cgroupsPath: "",
	    resources: {devices: [{allow: false, access: "rwm"}]},
	    namespaces: [{type: "pid"}, {type: "network"}, {type: "ipc"}, {type: "uts"}, {type: "mount"}],
	    maskedPaths: ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	      "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
	    readonlyPaths: ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
	  }
	}' >"$1"
}

bundle_dir() {
	echo "$BATS_TEST_TMPDIR/$1"
}

# userns_bundle [NAME]: bundle NAME (default b) gets a user namespace of
# its own, root mapped to host uid 100000. The rootfs belongs to host root,
# which is unmapped (nobody) inside: busybox stays world-readable and
# executable. sysfs and cgroup mounts need privileges over the host's
# objects: they are dropped, as rootless does.
userns_bundle() {
	local b=${1:-b} d=$BATS_TEST_TMPDIR
	requires userns
	cfg "$b" '.linux.namespaces += [{type: "user"}]
		| .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
		| .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	# Mapped root (host uid 100000) must reach and own the rootfs; bats'
	# temp dirs are 0700.
	chown -R 100000:100000 "$(bundle_dir "$b")/rootfs"
	while [[ $d != / && $d != /tmp ]]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
}

# cfg NAME JQ-FILTER [jq args...]: edit bundle NAME's config.json in place.
cfg() {
	local f
	f=$(bundle_dir "$1")/config.json
	shift
	local filter=$1
	shift
	# Options (e.g. --arg) go before the file; --args (positional) after it.
	local opts=() pos=()
	while [[ $# -gt 0 && $1 != --args ]]; do opts+=("$1"); shift; done
	# "--" keeps jq from reading process args like "-c" as its own options.
	[[ $# -gt 0 ]] && pos=(--args -- "${@:2}")
	jq "${opts[@]}" "$filter" "$f" "${pos[@]}" >"$f.tmp" && mv "$f.tmp" "$f"
}

# set_args NAME ARGS...: process.args of bundle NAME.
set_args() {
	local name=$1
	shift
	cfg "$name" '.process.args = $ARGS.positional' --args "$@"
}

# ---------------------------------------------------------------- lifecycle

# create_ct ID [BUNDLE-NAME] [extra create flags...]: create, failing the test
# on error. The container's stdio goes to $BATS_TEST_TMPDIR/ID.{out,err}.
create_ct() {
	local id=$1 b=${2:-b}
	shift 2 || shift $#
	if ! rt create --bundle "$(bundle_dir "$b")" "$@" "$id" \
		>"$BATS_TEST_TMPDIR/$id.out" 2>"$BATS_TEST_TMPDIR/$id.err" </dev/null; then
		cat "$BATS_TEST_TMPDIR/$id.err" >&2
		fail "create $id failed"
	fi
}

# run_ct ID [BUNDLE-NAME]: create + start (via run --detach).
run_ct() {
	local id=$1 b=${2:-b}
	if ! rt run --detach --bundle "$(bundle_dir "$b")" "$id" \
		>"$BATS_TEST_TMPDIR/$id.out" 2>"$BATS_TEST_TMPDIR/$id.err" </dev/null; then
		cat "$BATS_TEST_TMPDIR/$id.err" >&2
		fail "run -d $id failed"
	fi
	wait_status "$id" running
}

# ct_status ID: the status field of `state`, or "" when state fails.
ct_status() {
	rt state "$1" 2>/dev/null | jq -r .status 2>/dev/null
}

ct_pid() {
	rt state "$1" | jq -r .pid
}

# retry TRIES DELAY CMD...: run CMD until it succeeds. The caller's shell
# expands CMD's arguments once: a value that must be re-read on every try
# goes in a function or in eval '...' (single quotes).
retry() {
	local tries=$1 delay=$2 i
	shift 2
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep "$delay"
	done
	echo "retry: '$*' still failing after $tries tries" >&2
	return 1
}

# wait_status ID STATUS [SECONDS]: poll state until it reports STATUS. An
# exited init may stay a zombie for 1-2 s on this host; runtimes report
# "stopped" for it, so polling for stopped is reliable.
wait_status() {
	local id=$1 want=$2 secs=${3:-10} i got=
	for ((i = 0; i < secs * 10; i++)); do
		got=$(ct_status "$id")
		[[ $got == "$want" ]] && return 0
		sleep 0.1
	done
	fail "container $id: status '$got', wanted '$want' within ${secs}s"
}

# wait_file PATH [SECONDS]: until PATH exists and is non-empty.
wait_file() {
	local p=$1 secs=${2:-10} i
	for ((i = 0; i < secs * 10; i++)); do
		[[ -s $p ]] && return 0
		sleep 0.1
	done
	fail "$p did not appear within ${secs}s"
}

# ---------------------------------------------------------------- cgroups

# cg_dirs PATH: every existing directory for cgroupsPath PATH, all hierarchies.
cg_dirs() {
	local h
	for h in /sys/fs/cgroup/*/; do
		[[ -d ${h%/}$1 ]] && echo "${h%/}$1"
	done
	return 0
}

# assert_nothing_left ID [BUNDLE-NAME]: no state dir, no cgroup dir in any
# hierarchy and (rauha) no record listed for ID.
assert_nothing_left() {
	local id=$1 b=${2:-b} left
	if [[ -n $id && $id != . && $id != .. && -e $ROOT/$id ]]; then
		fail "state dir $ROOT/$id left behind"
	fi
	left=$(cg_dirs "$(cg_path "$b")")
	if [[ -n $left ]]; then
		fail "cgroup dirs left behind: $left"
	fi
	if is_rauha && [[ -n $id ]] && rt list -q 2>/dev/null | grep -qxF -- "$id"; then
		fail "rauha still lists $id"
	fi
	return 0
}

# deny_entrypoint NAME: bundle NAME's entrypoint is /usr/local/bin/sleep (a
# busybox copy), which its container's zone "noexec" may not execute
# (rauha-only). Prints nothing; the zone comes with the container.
deny_entrypoint() {
	local dir
	dir=$(bundle_dir "$1")
	mkdir -p "$dir/rootfs/usr/local/bin"
	cp "$BUSYBOX" "$dir/rootfs/usr/local/bin/sleep"
	# Exec rules need writable_paths (or a read-only root): they are noexec.
	printf '[filesystem]\nwritable_paths = ["/tmp"]\n[exec]\ndeny = ["/usr/local/bin/sleep"]\n' >"$BATS_TEST_TMPDIR/noexec.toml"
	cfg "$1" '.annotations["org.rauha.zone"] = "noexec" | .annotations["org.rauha.policy"] = $p' \
		--arg p "$BATS_TEST_TMPDIR/noexec.toml"
	set_args "$1" /usr/local/bin/sleep 100
}

# pin_dir_of ROOT: the BPF pin directory rauha uses for state root ROOT
# (bpf.PinDirFor: the first 6 bytes of sha256(root); the pin directory
# records its root as the symbolic link root).
pin_dir_of() {
	echo "/sys/fs/bpf/rauha-$(printf %s "$1" | sha256sum | cut -c1-12)"
}

# unregister_cgroup PIN_DIR CGID: remove cgroup CGID from the zone_by_cgid
# map pinned in PIN_DIR (its key: the id's 8 bytes, little-endian), what a
# create or delete killed between its kernel steps can leave.
unregister_cgroup() {
	local key i
	for i in 0 1 2 3 4 5 6 7; do key+=$(printf '%02x ' $((($2 >> (8 * i)) & 255))); done
	bpftool map delete pinned "$1/zone_by_cgid" key hex $key
}

# ---------------------------------------------------------------- helpers built from Go

# build_helper NAME: build tests/bats/helpers/NAME (static) once per run;
# prints the binary path.
build_helper() {
	local name=$1 out=$CACHE_DIR/bin/$1 gobin
	if [[ ! -x $out ]]; then
		gobin=$(command -v go || echo /usr/local/go/bin/go)
		mkdir -p "$CACHE_DIR/bin"
		(cd "$REPO_ROOT" && CGO_ENABLED=0 "$gobin" build -trimpath -o "$out.tmp" "./tests/bats/helpers/$name") >&2 ||
			fail "cannot build helper $name"
		mv "$out.tmp" "$out"
	fi
	echo "$out"
}

# bg CMD...: start a helper process in the background; teardown kills
# it by the pid recorded here.
bg() {
	"$@" &
	echo $! >>"$BATS_TEST_TMPDIR/bg.pids"
}

# ---------------------------------------------------------------- setup/teardown

setup() {
	requires root
	# Unique per test and per run: test number plus this test's process id.
	TEST_UID=t${BATS_SUITE_TEST_NUMBER:-0}-$$
	ROOT=$BATS_TEST_TMPDIR/state
	mkdir -p "$ROOT"
	build_rootfs_cache
	make_bundle b
}

teardown() {
	local id ids pid d
	# Helpers we started, by pid.
	if [[ -f $BATS_TEST_TMPDIR/bg.pids ]]; then
		while read -r pid; do
			kill -9 "$pid" 2>/dev/null || true
		done <"$BATS_TEST_TMPDIR/bg.pids"
	fi
	if [[ -n ${ROOT:-} && -d $ROOT ]]; then
		ids=$(
			{
				timeout 20 "$RUNTIME" --root "$ROOT" list -q 2>/dev/null || true
				find "$ROOT" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null
			} | sort -u
		)
		for id in $ids; do
			timeout 20 "$RUNTIME" --root "$ROOT" delete --force "$id" >/dev/null 2>&1 || true
		done
		# rauha: drop the zones the test left and the root's BPF pins with
		# them (every root has its own pin directory).
		if "$RUNTIME" --version 2>/dev/null | grep -q '^rauha'; then
			for id in $(timeout 20 "$RUNTIME" --root "$ROOT" zone list --format json 2>/dev/null | jq -r '.[].name' 2>/dev/null); do
				timeout 20 "$RUNTIME" --root "$ROOT" zone delete --force "$id" >/dev/null 2>&1 || true
			done
			timeout 20 "$RUNTIME" --root "$ROOT" zone reconcile >/dev/null 2>&1 || true
		fi
	fi
	# Whatever still runs in this test's cgroups was started by this test
	# (through the runtime): kill it by pid, then remove the directories.
	[[ -n ${TEST_UID:-} ]] || return 0
	for d in /sys/fs/cgroup/*"$CG_PREFIX"/"$TEST_UID"-*; do
		[[ -d $d ]] || continue
		if [[ -f $d/freezer.state ]]; then echo THAWED >"$d/freezer.state" 2>/dev/null || true; fi
		while read -r pid; do
			[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null || true
		done < <(cat "$d/cgroup.procs" 2>/dev/null)
	done
	for d in /sys/fs/cgroup/*"$CG_PREFIX"/"$TEST_UID"-*; do
		[[ -d $d ]] || continue
		retry 20 0.1 rmdir_tree "$d" || echo "# teardown: could not remove $d" >&2
	done
	return 0
}

# rmdir_tree DIR: depth-first rmdir (cgroup dirs cannot be rm -r'd).
rmdir_tree() {
	find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
	[[ ! -d $1 ]]
}
