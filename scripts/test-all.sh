#!/usr/bin/env bash
# test-all.sh - the project's full test run (what CI runs through .ci/run):
#   1. scripts/check-selfcontained.sh   no file refers outside the project
#   2. scripts/setup-debian.sh   packages and toolchain
#   3. make build                the rauha binary
#   4. go vet ./...
#      cross: go vet and the static cgo build for arm64 (cross gcc and
#      libseccomp-dev:arm64), run once under qemu-aarch64
#   5. go test ./...             unit tests
#   6. go test -fuzz             each fuzz target for FUZZTIME (100000x)
#   7. tests/clients/setup.bash install   podman, docker, containerd, crictl
#   8. bats --jobs 1 tests/bats/*.bats   end-to-end tests against ./rauha
#   9. tests/k8s                 a real single-node Kubernetes (kube-apiserver,
#                                etcd, kubelet, containerd) running pods with
#                                rauha: tests/k8s/build.sh (cached), pods.bats
#  10. bpf/vmtest.sh             the bpf-lsm backend in QEMU guests, started
#                                in the background beside stages 8 and 9
#                                (tests/vm/run-in-vm.sh)
# Prints per-stage timings and closes with "N passed, N failed, N skipped"
# (go tests + bats tests; a failed check/build/vet stage counts as one
# failure).
# Exits non-zero if anything failed. Works from any cwd.
#
# Nothing here may hang: every stage's commands run under timeout(1) with a
# KILL after the grace period, every bats test under BATS_TEST_TIMEOUT, so a
# stuck test costs minutes and the summary is always printed.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 1
[[ -x /usr/local/go/bin/go ]] && export PATH=/usr/local/go/bin:$PATH
LOGDIR=$(mktemp -d /tmp/rauha-test-all.XXXXXX)

passed=0 failed=0 skipped=0
timings=()
stage_failed=()

# stage NAME CMD...: run CMD, record its wall time and whether it failed.
stage() {
	local name=$1 start rc=0
	shift
	echo "=== $name"
	start=${EPOCHREALTIME/./}
	"$@" || rc=$?
	local ms=$(((${EPOCHREALTIME/./} - start) / 1000))
	timings+=("$(printf '%-13s %5d.%01ds  %s' "$name" $((ms / 1000)) $((ms % 1000 / 100)) "$([[ $rc -eq 0 ]] && echo ok || echo "FAILED (exit $rc)")")")
	if [[ $rc -ne 0 ]]; then
		stage_failed+=("$name")
	fi
	return $rc
}

# limited SECONDS CMD...: CMD, killed (its whole process group) after
# SECONDS and KILLed 30s later; exit status 124 says it timed out.
limited() {
	local secs=$1 rc=0
	shift
	timeout -k 30 "$secs" "$@" || rc=$?
	if [[ $rc -eq 124 || $rc -eq 137 ]]; then
		echo "TIMEOUT: '$*' did not finish within ${secs}s" >&2
	fi
	return $rc
}

run_setup() {
	if [[ $EUID -eq 0 ]]; then
		limited 1500 bash "$REPO/scripts/setup-debian.sh"
	else
		echo "not root: skipping scripts/setup-debian.sh"
	fi
}

run_go_test() {
	local log=$LOGDIR/go-test.log rc=0
	limited 900 go test -tags seccomp -count=1 -timeout 10m -v ./... >"$log" 2>&1 || rc=$?
	# Package lines (ok / FAIL / no test files) and every failure in full.
	grep -E '^(ok|FAIL|---|\?)\s' "$log" | grep -vE '^\s*--- (PASS|SKIP)' || true
	if [[ $rc -ne 0 ]]; then
		echo "--- go test output (failures) ---"
		grep -B2 -A20 -E -- '--- FAIL|^FAIL|panic:|cannot|undefined' "$log" | head -200
	fi
	local p f s
	p=$(grep -cE '^\s*--- PASS:' "$log" || true)
	f=$(grep -cE '^\s*--- FAIL:' "$log" || true)
	s=$(grep -cE '^\s*--- SKIP:' "$log" || true)
	# A package that fails to build has no "--- FAIL" line: count it.
	local broken
	broken=$(grep -cE '^FAIL\s+\S+\s+\[(build|setup) failed\]' "$log" || true)
	echo "go test: $p passed, $((f + broken)) failed, $s skipped"
	passed=$((passed + p))
	failed=$((failed + f + broken))
	skipped=$((skipped + s))
	return $rc
}

run_bats() {
	local log=$LOGDIR/bats.tap rc=0
	local files=("$REPO"/tests/bats/*.bats)
	if [[ ! -e ${files[0]} ]]; then
		echo "no bats files" >&2
		return 1
	fi
	# bats writes to a file that tail follows until bats exits: a container
	# that outlives a killed test and holds the output open cannot hang the
	# run (as it would with a pipe to tee).
	: >"$log"
	BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300} limited "${E2E_TIMEOUT:-2400}" \
		bats --jobs 1 --timing "${files[@]}" >"$log" 2>&1 </dev/null &
	local bats_pid=$!
	tail -n +1 --pid="$bats_pid" -f "$log"
	wait "$bats_pid" || rc=$?
	local p f s
	s=$(grep -cE '^ok [0-9]+ .*# skip' "$log" || true)
	p=$(grep -cE '^ok [0-9]+ ' "$log" || true)
	f=$(grep -cE '^not ok [0-9]+ ' "$log" || true)
	p=$((p - s))
	# A test that failed is run once more on its own; one that passes then
	# is reported as flaky (by name, so it gets fixed) and not as a failure.
	local name re flaky=() retried=0
	while IFS= read -r name; do
		[[ -n $name ]] || continue
		# A broken build fails everything: retrying each would only burn time.
		((retried++ < 5)) || break
		re=$(printf '%s' "$name" | sed 's/[][\.*^$()+?{}|/]/\\&/g')
		if BATS_TEST_TIMEOUT=300 limited 400 bats --jobs 1 --filter "^$re\$" "${files[@]}" \
			>>"$LOGDIR/bats-retry.tap" 2>&1 </dev/null; then
			flaky+=("$name")
		fi
	done < <(sed -nE 's/^not ok [0-9]+ (.*) in [0-9]+ms( # timeout.*)?$/\1/p' "$log")
	if [[ ${#flaky[@]} -gt 0 ]]; then
		printf 'FLAKY (failed, then passed on a retry): %s\n' "${flaky[@]}"
		f=$((f - ${#flaky[@]}))
		p=$((p + ${#flaky[@]}))
		[[ $f -eq 0 ]] && rc=0
	fi
	echo "bats: $p passed, $f failed, $s skipped"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	# bats exits non-zero with no "not ok" line when it could not run a file.
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		echo "bats exited $rc without a failed test" >&2
		failed=$((failed + 1))
	fi
	return $rc
}

# A real kubelet and API server drive rauha through containerd
# (tests/k8s/cluster.sh). The Kubernetes binaries are built from the Go module
# proxy once per machine (tests/k8s/build.sh: minutes cold, nothing when
# cached in /var/cache/rauha-k8s). Skipped, with the reason, only where the
# host cannot run a kubelet at all.
run_k8s() {
	local log=$LOGDIR/k8s.tap why rc=0
	if ! why=$(bash "$REPO/tests/k8s/cluster.sh" can-run 2>&1); then
		echo "SKIPPED: this host cannot run a kubelet: $why"
		skipped=$((skipped + 1))
		return 0
	fi
	limited 2400 bash "$REPO/tests/k8s/build.sh" >"$LOGDIR/k8s-build.log" 2>&1 </dev/null || {
		tail -30 "$LOGDIR/k8s-build.log"
		failed=$((failed + 1))
		return 1
	}
	grep '^k8s-build:' "$LOGDIR/k8s-build.log"
	BATS_TEST_TIMEOUT=300 limited 1200 bats --jobs 1 --timing "$REPO/tests/k8s" >"$log" 2>&1 </dev/null || rc=$?
	cat "$log"
	local p f s
	s=$(grep -cE '^ok [0-9]+ .*# skip' "$log" || true)
	p=$(grep -cE '^ok [0-9]+ ' "$log" || true)
	f=$(grep -cE '^not ok [0-9]+ ' "$log" || true)
	p=$((p - s))
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		echo "bats exited $rc without a failed test" >&2
		f=1
	fi
	echo "k8s: $p passed, $f failed, $s skipped"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	return $rc
}

# arm64 is built like amd64 (static, cgo, libseccomp) with the cross
# compiler; --version under qemu-user shows the binary starts and links
# libseccomp.
run_cross() {
	limited 900 make vet-arm64 || return 1
	limited 900 make build-arm64 || return 1
	file rauha-arm64 | grep -q 'ARM aarch64.*statically linked' || { file rauha-arm64; return 1; }
	limited 60 qemu-aarch64 ./rauha-arm64 --version | grep -q '^libseccomp: ' || return 1
	echo "arm64: $(file -b rauha-arm64 | cut -d, -f1-2), runs under qemu-aarch64"
}

run_clients_install() {
	limited 1200 bash "$REPO/tests/clients/setup.bash" install
}

# Parsers face untrusted input: each fuzz target runs a fixed number of
# executions (FUZZTIME, default 100000x, 5-20 s each here). A count, not a
# duration: Go 1.26's fuzz coordinator can fail a duration run with a bare
# "context deadline exceeded" at the deadline (golang/go#75804), which CI hit.
run_fuzz() {
	local rc=0 t log
	for t in zone:FuzzParsePolicy zone:FuzzParseEgress zone:FuzzValidateName \
		zone:FuzzParseSubnet zone:FuzzParsePorts zone:FuzzSimulateEvents bpf:FuzzDecodeLearned \
		libzone:FuzzSpecConversion libzone:FuzzParseProcess \
		internal/process:FuzzNewProcess internal/process:FuzzRecvFile; do
		log=$LOGDIR/fuzz-${t#*:}.log
		if limited 300 go test -run='^$' -fuzz="^${t#*:}\$" -fuzztime="${FUZZTIME:-100000x}" "./${t%%:*}/" >"$log" 2>&1; then
			echo "${t#*:}: $(grep -E '^fuzz: elapsed' "$log" | tail -1)"
		else
			rc=1
			echo "${t#*:}: FAILED"
			grep -vE '^fuzz: elapsed' "$log" | head -30
		fi
	done
	return $rc
}

# The bpf-lsm backend in QEMU guests with Debian's kernels (this host refuses
# LSM programs): every hook must deny on every kernel. Emulated guests (no
# KVM here or in CI) keep one core busy for about half an hour, while the
# end-to-end and Kubernetes stages mostly wait on the kernel and on other
# processes: so the lane starts in the background with them (after every apt
# install: the lane's own apt calls read the host's lists), at a lower
# priority than the tests beside it, and stage vm waits for it. Nothing it
# does touches the host's kernel state: the guests have their own.
start_vm() {
	vm_started=$SECONDS
	# Sharing the machine, one kernel's guest may take twice its time alone.
	VM_TIMEOUT=${VM_TIMEOUT:-1500} nice -n 10 timeout -k 30 "${VM_LANE_TIMEOUT:-3000}" bash "$REPO/bpf/vmtest.sh" ${VM_KERNELS:-6.1 6.12 sid nobpf} \
		>"$LOGDIR/vm.log" 2>&1 </dev/null &
	vm_pid=$!
}

# run_vm waits for the lane and counts the bpf package's Go tests (--- PASS/FAIL)
# and the rauha matrix's TAP lines (tests/vm/matrix.sh: ok N / not ok N /
# ok N ... # SKIP) of every kernel.
run_vm() {
	local log=$LOGDIR/vm.log rc=0
	wait "$vm_pid" || rc=$?
	if [[ $rc -eq 124 || $rc -eq 137 ]]; then
		echo "TIMEOUT: the VM lane did not finish within ${VM_LANE_TIMEOUT:-3000}s" >&2
	fi
	echo "VM lane ran $((SECONDS - vm_started))s (in the background from the e2e stage on)"
	grep -E '^=== vmtest|^(FAIL|PASS)|--- FAIL|vmtest:|^not ok [0-9]+ |^ok [0-9]+ .*# SKIP|^# rauha matrix|^FILEDENY:|^  FAIL  ' "$log" | head -100
	local p f s
	# Go tests (--- PASS), matrix.sh (TAP ok / not ok), filedeny.sh (ok / FAIL).
	p=$(grep -cE '^\s*--- PASS:|^  ok    ' "$log" || true)
	f=$(grep -cE '^\s*--- FAIL:|^  FAIL  ' "$log" || true)
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$log" || true)
	p=$((p + $(grep -E '^ok [0-9]+ ' "$log" | grep -cv '# SKIP' || true)))
	f=$((f + $(grep -cE '^not ok [0-9]+ ' "$log" || true)))
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		f=1
		tail -30 "$log"
	fi
	echo "vm lane: $p passed, $f failed, $s skipped"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	return $rc
}

total_start=$SECONDS
stage selfcontained limited 60 bash "$REPO/scripts/check-selfcontained.sh" || { failed=$((failed + 1)); }
stage setup run_setup || { failed=$((failed + 1)); }
stage build limited 900 make build || { failed=$((failed + 1)); }
stage vet limited 600 go vet ./... || { failed=$((failed + 1)); }
stage cross run_cross || { failed=$((failed + 1)); }
stage unit run_go_test
stage fuzz run_fuzz || { failed=$((failed + 1)); }
stage client-setup run_clients_install || { failed=$((failed + 1)); }
# Every test removes the BPF pins it made (a pin directory keeps a host-wide
# sys_exit program attached, slowing every task on the machine). Any the
# end-to-end run leaves is a test bug: named, counted as a failure, removed.
# The same for the empty anchor cgroups a pin directory of the fallback
# keeps (bpf/anchor.go): they go with their pins.
kernel_state() { ls -d /sys/fs/bpf/rauha* /sys/fs/cgroup/unified/rauha*.anchor /sys/fs/cgroup/rauha*.anchor 2>/dev/null | sort; }
pins_before=$(kernel_state)
# A cold build of the Kubernetes binaries takes minutes of both cores; the
# end-to-end tests mostly wait, so it starts now, at the lowest priority, and
# run_k8s's own build.sh waits for it (build.sh holds a lock) and finds the
# binaries built.
if bash "$REPO/tests/k8s/cluster.sh" can-run >/dev/null 2>&1; then
	nice -n 19 timeout -k 30 2400 bash "$REPO/tests/k8s/build.sh" >"$LOGDIR/k8s-build-early.log" 2>&1 </dev/null &
fi
start_vm
stage e2e run_bats
stage k8s run_k8s
leaked=$(comm -13 <(echo "$pins_before") <(kernel_state) || true)
if [[ -n $leaked ]]; then
	echo "FAILED: the e2e and k8s runs left $(wc -l <<<"$leaked") BPF pin directories or anchor cgroups; removing them:"
	echo "$leaked" | head -20
	grep '^/sys/fs/bpf/' <<<"$leaked" | xargs -r rm -rf
	grep '\.anchor$' <<<"$leaked" | xargs -r rmdir
	failed=$((failed + 1))
fi
stage vm run_vm

echo
echo "=== timings"
printf '%s\n' "${timings[@]}"
echo "total        $((SECONDS - total_start))s   (logs: $LOGDIR)"
if [[ ${#stage_failed[@]} -gt 0 ]]; then
	echo "failed stages: ${stage_failed[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 && ${#stage_failed[@]} -eq 0 ]]
