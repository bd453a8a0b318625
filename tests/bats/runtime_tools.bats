#!/usr/bin/env bats
# OCI runtime-tools validation programs (github.com/opencontainers/runtime-tools)
# against the runtime under test. The tagged release v0.9.0 has no go.mod and
# does not build against today's dependencies, so a pinned commit of the
# development branch is used. Built once into a cache outside the repo with
# `go install module@version` (the project's go.mod is not touched).

load helpers

RT_TOOLS_VERSION=v0.9.1-0.20251114084447-edf4cb3d2116
RT_TOOLS_MOD=github.com/opencontainers/runtime-tools
RT_TOOLS_DIR=${RT_TOOLS_DIR:-/var/tmp/rauha-runtime-tools/$RT_TOOLS_VERSION}
# Validation programs that check what runc 1.1.5 also gets right here.
RT_TOOLS_PROGRAMS=(default create state kill hostname process process_user
	process_oom_score_adj linux_sysctl mounts linux_devices linux_masked_paths
	linux_readonly_paths linux_ns_nopath root_readonly_true)

setup_file() {
	local gobin
	gobin=$(command -v go || echo /usr/local/go/bin/go)
	[[ -x $gobin ]] || return 0
	if [[ ! -f $RT_TOOLS_DIR/.complete ]]; then
		mkdir -p "$RT_TOOLS_DIR/bin"
		# Static: runtimetest runs inside the tool's busybox rootfs.
		local pkgs=("$RT_TOOLS_MOD/cmd/runtimetest@$RT_TOOLS_VERSION") p
		for p in "${RT_TOOLS_PROGRAMS[@]}"; do
			pkgs+=("$RT_TOOLS_MOD/validation/$p@$RT_TOOLS_VERSION")
		done
		if ! CGO_ENABLED=0 GOBIN=$RT_TOOLS_DIR/bin GOFLAGS= timeout 600 "$gobin" install "${pkgs[@]}" \
			>"$RT_TOOLS_DIR/build.log" 2>&1; then
			return 0 # each test skips, pointing at build.log
		fi
		local modcache
		modcache=$("$gobin" env GOMODCACHE)
		install -m 0644 "$modcache/$RT_TOOLS_MOD@$RT_TOOLS_VERSION/rootfs-amd64.tar.gz" "$RT_TOOLS_DIR/" &&
			touch "$RT_TOOLS_DIR/.complete"
	fi
}

# rt_tools_run PROGRAM: run one validation program in a scratch dir, through
# a wrapper that adds --root and gives every container an absolute
# cgroupsPath under /rauha-test (the programs set none, which would nest
# the container in the caller's own cgroup).
rt_tools_run() {
	[[ -f $RT_TOOLS_DIR/.complete ]] ||
		skip "runtime-tools $RT_TOOLS_VERSION did not build (go and the module proxy needed; see $RT_TOOLS_DIR/build.log)"
	[[ $(uname -m) == x86_64 ]] || skip "the runtime-tools rootfs is amd64 only"
	local work=$BATS_TEST_TMPDIR/rtwork
	mkdir -p "$work"
	cp "$RT_TOOLS_DIR/bin/runtimetest" "$RT_TOOLS_DIR/rootfs-amd64.tar.gz" "$work/"
	cat >"$work/runtime" <<'WRAP'
#!/usr/bin/env bash
bundle=$PWD
for ((i = 1; i <= $#; i++)); do
	case ${!i} in
	--bundle | -b) j=$((i + 1)); bundle=${!j} ;;
	--bundle=*) bundle=${!i#--bundle=} ;;
	esac
done
case " $* " in
*" create "* | *" run "*)
	n=$(cat "$RT_ROOT/.n" 2>/dev/null || echo 0)
	echo $((n + 1)) >"$RT_ROOT/.n"
	jq --arg cg "$RT_CGPREFIX-$n" '.linux.cgroupsPath = $cg' "$bundle/config.json" >"$bundle/config.json.w" &&
		mv "$bundle/config.json.w" "$bundle/config.json"
	;;
esac
exec timeout 60 "$RT_REAL" --root "$RT_ROOT" "$@"
WRAP
	chmod +x "$work/runtime"
	# Bundles go to TMPDIR; a user-namespace root (linux_ns_nopath) must be
	# able to reach them, and bats' temp dirs are 0700.
	local d=$BATS_TEST_TMPDIR
	while [[ $d != / && $d != /tmp ]]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
	status=0
	local real=$RUNTIME
	(cd "$work" && RT_REAL=$real RUNTIME=$work/runtime RT_ROOT=$ROOT RT_CGPREFIX="$(cg_path rt)" \
		TMPDIR=$BATS_TEST_TMPDIR timeout 300 "$RT_TOOLS_DIR/bin/$1") >"$work/tap" 2>&1 || status=$?
	output=$(cat "$work/tap")
	local ok notok
	ok=$(grep -c '^ok ' "$work/tap" || true)
	notok=$(grep -c '^not ok ' "$work/tap" || true)
	if [[ $status -ne 0 || $ok -eq 0 || $notok -ne 0 ]]; then
		grep -E -A12 '^not ok ' "$work/tap" | head -60
		[[ $ok -gt 0 ]] || tail -20 "$work/tap"
		fail "$1: exit $status, $ok ok, $notok not ok"
	fi
}

@test "runtime-tools: default" { rt_tools_run default; }
@test "runtime-tools: create" { rt_tools_run create; }
@test "runtime-tools: state" { rt_tools_run state; }
@test "runtime-tools: kill" { rt_tools_run kill; }
@test "runtime-tools: hostname" { rt_tools_run hostname; }
@test "runtime-tools: process" { rt_tools_run process; }
@test "runtime-tools: process_user" { rt_tools_run process_user; }
@test "runtime-tools: process_oom_score_adj" { rt_tools_run process_oom_score_adj; }
@test "runtime-tools: linux_sysctl" { rt_tools_run linux_sysctl; }
@test "runtime-tools: mounts" {
	# runtime-tools asks for a bind mount with filesystem data options, which
	# libcontainer 1.5's config validation (and so runc 1.5.x) refuses:
	# "bind mounts cannot have any filesystem-specific options applied".
	is_rauha && skip "libcontainer 1.5 (runc 1.5.x) refuses bind mounts with filesystem options, as this program asks"
	rt_tools_run mounts
}
@test "runtime-tools: linux_devices" {
	# The program creates a "p" (FIFO) device with major:minor 8:666 and
	# expects them on the node; libcontainer 1.5 creates FIFOs with mkfifo,
	# which has no device number (runc 1.5.x behaves the same).
	is_rauha && skip "libcontainer 1.5 (runc 1.5.x) creates FIFO devices without a device number"
	rt_tools_run linux_devices
}
@test "runtime-tools: linux_masked_paths" { rt_tools_run linux_masked_paths; }
@test "runtime-tools: linux_readonly_paths" { rt_tools_run linux_readonly_paths; }
@test "runtime-tools: linux_ns_nopath" { rt_tools_run linux_ns_nopath; }
@test "runtime-tools: root_readonly_true" { rt_tools_run root_readonly_true; }
