# lib.bash - shared helpers of the real-client suites (podman.bats, docker.bats,
# cri.bats). Sourced at file level by every .bats file, so every variable here
# is recomputed for each test and nothing depends on setup_file's environment.
#
# Knobs:
#   RUNTIME or RAUHA  the OCI runtime under test (RUNTIME wins, as in
#                     tests/bats/helpers.bash); default $REPO_ROOT/rauha.
#                     RAUHA=/usr/sbin/runc validates the suites against runc.
#   STEP_TIMEOUT      seconds one client call may take (default 90)
#   CLIENTS_BIN       where setup.bash installs crictl (default /opt/rauha-clients/bin)
#   CLIENT_TESTS=0    skip these suites (e.g. when running all of tests/bats)

REPO_ROOT=$(cd "${BATS_TEST_DIRNAME:-$(dirname "${BASH_SOURCE[0]}")/../bats}/../.." && pwd)
CLIENTS_DIR=$REPO_ROOT/tests/clients
RT=${RUNTIME:-${RAUHA:-$REPO_ROOT/rauha}}
STEP_TIMEOUT=${STEP_TIMEOUT:-90}
CLIENTS_BIN=${CLIENTS_BIN:-/opt/rauha-clients/bin}
# Private state of the harness; the daemons here never share a socket or a
# directory with a system-wide podman, dockerd or containerd.
H_RUN=/run/rauha-harness
H_LIB=/var/lib/rauha-harness
IMAGE_NAME=localhost/rauha-busybox:latest
PAUSE_NAME=localhost/rauha-pause:latest
PATH=$CLIENTS_BIN:$PATH

# clients_enabled: CLIENT_TESTS=0 turns the client suites off (they need
# podman/docker/containerd and take minutes). bats 1.8 cannot skip from
# setup_file, so setup_file/teardown_file return early and setup() skips.
clients_enabled() { [[ ${CLIENT_TESTS:-1} != 0 ]]; }

setup() { clients_enabled || skip "CLIENT_TESTS=0: real-client suites turned off"; }

# runtime_ok: setup_file guard; fails with what to do when the runtime is missing.
runtime_ok() {
	[[ $RT == /* && -x $RT ]] && return 0
	echo "# runtime '$RT' is not an executable absolute path: build rauha with 'make build'," \
		"or validate the suite against runc with RAUHA=/usr/sbin/runc" >&2
	return 1
}

# is_rauha: true when the runtime under test is rauha (not runc or crun).
is_rauha() { "$RT" --version 2>/dev/null | grep -qi rauha; }

# require_rauha WHAT: skip a rauha-only assertion with the reason.
require_rauha() {
	is_rauha || skip "$1 needs rauha; runtime under test is $("$RT" --version 2>/dev/null | head -1)"
}

# ---------------------------------------------------------------- steps
# Every helper leaves the client's combined stdout+stderr in $output and its
# exit code in $status, and on failure prints the command and that output, so
# a failing @test shows the client's own error message.

_show() { printf '# %s\n# command: %s\n# exit code: %s\n%s\n' "$1" "$2" "$status" "$output" >&2; }

# ok CMD...: CMD must exit 0 (stdin is /dev/null).
ok() {
	output=$(timeout "$STEP_TIMEOUT" "$@" 2>&1 </dev/null) && status=0 || status=$?
	[[ $status -eq 0 ]] || { _show "client call failed" "$*"; return 1; }
}

# ok_in TEXT CMD...: like ok, with TEXT on stdin.
ok_in() {
	local text=$1
	shift
	output=$(timeout "$STEP_TIMEOUT" "$@" 2>&1 <<<"$text") && status=0 || status=$?
	[[ $status -eq 0 ]] || { _show "client call failed" "$*"; return 1; }
}

# ok_match REGEX CMD...: CMD must exit 0 and print something matching REGEX.
ok_match() {
	local re=$1
	shift
	ok "$@" || return 1
	[[ $output =~ $re ]] || { _show "output does not match /$re/" "$*"; return 1; }
}

# exits_with CODE REGEX CMD...: CMD must exit with CODE and print REGEX ("" = anything).
exits_with() {
	local code=$1 re=$2
	shift 2
	output=$(timeout "$STEP_TIMEOUT" "$@" 2>&1 </dev/null) && status=0 || status=$?
	[[ $status -eq $code ]] || { _show "expected exit code $code" "$*"; return 1; }
	[[ -z $re || $output =~ $re ]] || { _show "output does not match /$re/" "$*"; return 1; }
}

# in_pty REGEX CMDLINE INPUT: run CMDLINE (a shell string) on a fresh pseudo
# terminal through script(1), typing INPUT; the session must exit 0 and print REGEX.
in_pty() {
	local re=$1 cmdline=$2 input=$3
	output=$(printf '%s' "$input" | timeout "$STEP_TIMEOUT" script -qec "$cmdline" /dev/null 2>&1) && status=0 || status=$?
	output=${output//$'\r'/}
	[[ $status -eq 0 ]] || { _show "terminal session failed" "$cmdline"; return 1; }
	[[ $output =~ $re ]] || { _show "output does not match /$re/" "$cmdline"; return 1; }
}

# expect_eq WHAT WANT GOT
expect_eq() {
	[[ $2 == "$3" ]] && return 0
	printf '# %s: want %q, got %q\n' "$1" "$2" "$3" >&2
	return 1
}

# wait_for SECONDS CMD...: poll CMD (quietly) until it succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || { echo "# timed out after waiting for: $*" >&2; return 1; }
		sleep 0.2
	done
}

# ---------------------------------------------------------------- cgroups

# cgroup_dir CONTROLLER PID: the host directory of PID's cgroup in a v1 hierarchy.
cgroup_dir() {
	local rel
	rel=$(awk -F: -v c="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$2/cgroup")
	[[ -n $rel ]] || { echo "# pid $2 has no $1 cgroup" >&2; return 1; }
	echo "/sys/fs/cgroup/$1$rel"
}

# cgroup_value CONTROLLER FILE PID: print one cgroup file of PID's cgroup.
cgroup_value() {
	local d
	d=$(cgroup_dir "$1" "$3") || return 1
	cat "$d/$2"
}

# rm_cgroup_tree REL: rmdir REL (absolute, e.g. /docker/<id>) and its empty
# children in every hierarchy. Only for cgroups this harness made; busy ones
# are reported and kept.
rm_cgroup_tree() {
	local rel=$1 h d
	[[ $rel == /?* && $rel != *..* ]] || { echo "# refusing to remove cgroup '$rel'" >&2; return 1; }
	for h in /sys/fs/cgroup/*/; do
		d=${h%/}$rel
		[[ -d $d ]] || continue
		find "$d" -depth -type d -print0 2>/dev/null | while IFS= read -r -d '' c; do
			rmdir "$c" 2>/dev/null || echo "# kept busy cgroup $c" >&2
		done
	done
	return 0
}

# cgroup_exists REL: REL exists in some hierarchy (v1 or unified).
cgroup_exists() {
	local h
	for h in /sys/fs/cgroup/*/; do [[ -d ${h%/}$1 ]] && return 0; done
	return 1
}

# ---------------------------------------------------------------- zones

# jqe ARGS...: `jq -e ARGS` on standard input that also fails when the input
# is empty: jq 1.6's -e exits 0 when it reads nothing, so a check fed by a
# command that printed nothing would pass.
jqe() {
	local in
	in=$(cat) || return 1
	[[ $in =~ [^[:space:]] ]] || { echo "jqe: empty input" >&2; return 1; }
	jq -e "$@" <<<"$in"
}

# zone_lists ROOT ZONE ID: `rauha zone inspect ZONE` under ROOT (JSON: .name,
# .members[] = {id, zone, cgroup_path, ...}) has a member whose id is ID.
zone_lists() {
	local root=$1 zone=$2 id=$3
	ok "$RT" --root "$root" zone inspect "$zone" || return 1
	jqe --arg z "$zone" --arg id "$id" '.name == $z and any(.members[]?; .id == $id)' \
		<<<"$output" >/dev/null 2>&1 ||
		{ _show "zone $zone does not list member $id" "$RT --root $root zone inspect $zone"; return 1; }
}

# zone_lacks ROOT ZONE ID: ID is no member of ZONE any more (or ZONE is gone).
zone_lacks() {
	local root=$1 zone=$2 id=$3
	output=$(timeout "$STEP_TIMEOUT" "$RT" --root "$root" zone inspect "$zone" 2>&1) && status=0 || status=$?
	[[ $output != *"$id"* ]] || { _show "zone $zone still lists $id after delete" "$RT --root $root zone inspect $zone"; return 1; }
}

# zone_forget ROOT ZONE: teardown; delete a zone this suite made, where the
# runtime has `zone delete` (rauha only; errors ignored).
zone_forget() {
	is_rauha || return 0
	"$RT" --root "$1" zone delete "$2" >/dev/null 2>&1 || true
}

# ---------------------------------------------------------------- network

# host_listener IP PORT MESSAGE: serve MESSAGE as http://IP:PORT/msg with
# busybox httpd bound to IP only (never 0.0.0.0). Sets LISTENER_PID for
# stop_listener; the caller must not use command substitution (the server must
# stay our child so we can reap it).
host_listener() {
	local ip=$1 port=$2 msg=$3
	LISTENER_DIR=$(mktemp -d /tmp/rauha-clients-www.XXXXXX)
	printf '%s\n' "$msg" >"$LISTENER_DIR/msg"
	busybox httpd -f -p "$ip:$port" -h "$LISTENER_DIR" >/dev/null 2>&1 &
	LISTENER_PID=$!
	wait_for 5 busybox wget -qO- "http://$ip:$port/msg"
}

# stop_listener: stop the server host_listener started, by pid, and reap it.
stop_listener() {
	if [[ -n ${LISTENER_PID:-} ]]; then
		kill "$LISTENER_PID" 2>/dev/null || true
		wait "$LISTENER_PID" 2>/dev/null || true
	fi
	[[ -n ${LISTENER_DIR:-} ]] && rm -rf "$LISTENER_DIR"
	LISTENER_PID="" LISTENER_DIR=""
}
