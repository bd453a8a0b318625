#!/usr/bin/env bats
# Hostile input: every case is answered with one error line and exit 1 (runc:
# 1 or 255 for exec), no panic, and nothing left behind (state dir, cgroup,
# container or zone record, BPF pins). The parsers behind these inputs are
# also fuzzed (zone: FuzzValidateName, FuzzParsePolicy; libzone:
# FuzzSpecConversion, FuzzParseProcess; internal/process: FuzzNewProcess,
# FuzzRecvFile).

load helpers

# assert_clean ID: nothing of a refused container is left, and (rauha) no
# zone record and no BPF pin directory of this root exist.
assert_clean() {
	assert_nothing_left "$1"
	is_rauha || return 0
	local zones pins
	[[ -z $(rt list -q) ]] || fail "containers listed: $(rt list -q)"
	zones=$(rt zone list --format json | jq length)
	[[ $zones == 0 ]] || fail "zone records left: $(rt zone list)"
	pins=/sys/fs/bpf/rauha-$(printf %s "$ROOT" | sha256sum | cut -c1-12)
	[[ ! -e $pins ]] || fail "BPF pins left in $pins"
}

# refused REGEX CMD...: CMD fails with exit 1 and one error line matching
# REGEX, and no panic trace.
refused() {
	local re=$1
	shift
	rrun "$@"
	assert_error_line "$re" "${REFUSED_CODES:-1}"
	! grep -q 'panic\|goroutine' <<<"$stderr" || fail "panicked: $stderr"
}

# peak_rss_kib FILE CMD...: run CMD under /usr/bin/time, rrun-style; the
# peak RSS in KiB goes to FILE.
peak_rss() {
	local f=$1
	shift
	rrun /usr/bin/time -o "$f" -f %M "$@"
}

@test "hostile ids: every command refuses them, nothing escapes the root" {
	# NUL cannot be tested here: argv entries are C strings, so a NUL ends
	# the id before rauha sees it (bash's $'a\0b' is "a"). FuzzValidateName
	# covers ids with NUL, as a Go caller of the same check could pass one.
	local id cmd ids=(../x a/b .. ../../../../etc "$(printf 'a%.0s' {1..2048})" $'a\nb' $'a\x01b' 'a b')
	for id in "${ids[@]}"; do
		refused 'invalid container id' rt create --bundle "$(bundle_dir b)" "$id"
		refused 'invalid container id' rt run --bundle "$(bundle_dir b)" "$id"
		[[ $id == . || $id == .. || ! -e $ROOT/$id ]] || fail "state dir $ROOT/$id left behind"
	done
	# The other commands look an id up; one id of each kind is enough.
	for id in ../x "${ids[4]}" $'a\nb'; do
		for cmd in state start delete pause resume ps; do
			refused 'invalid container id' rt "$cmd" "$id"
		done
		refused 'invalid container id' rt delete --force "$id"
		refused 'invalid container id' rt kill "$id" KILL
		REFUSED_CODES=255 refused 'invalid container id' rt exec "$id" true
	done
	[[ -z $(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name x) && ! -e $ROOT/a ]] || fail "an id escaped the root"
	assert_clean ""
}

@test "hostile zone names in org.rauha.zone are refused like ids" {
	requires rauha
	local z
	for z in ../x a/b .. "$(printf 'z%.0s' {1..2048})" $'z\nx'; do
		cfg b '.annotations["org.rauha.zone"] = $z' --arg z "$z"
		refused 'invalid zone name' rt create --bundle "$(bundle_dir b)" c1
		assert_clean c1
	done
}

@test "bundle behind a symlink: followed, like runc" {
	ln -s "$(bundle_dir b)" "$BATS_TEST_TMPDIR/link"
	set_args b true
	rrun rt run --bundle "$BATS_TEST_TMPDIR/link" c1
	assert_success
}

@test "rootfs that is a symlink: refused, like runc" {
	# libcontainer (and so runc) wants the rootfs as a real directory: the
	# path checked is the path mounted, with no link to swap in between.
	mv "$(bundle_dir b)/rootfs" "$(bundle_dir b)/real-rootfs"
	ln -s real-rootfs "$(bundle_dir b)/rootfs"
	refused 'rootfs.*symlink' rt create --bundle "$(bundle_dir b)" c1
	assert_clean c1
}

@test "a symlink inside the rootfs cannot carry a mount out of it" {
	# Absolute and relative links to a host directory: mount destinations
	# are resolved inside the rootfs (securejoin), never on the host.
	local out=$BATS_TEST_TMPDIR/outside
	mkdir "$out"
	ln -s "$out" "$(bundle_dir b)/rootfs/abs"
	ln -s "../../../../../../../../..$out" "$(bundle_dir b)/rootfs/rel"
	cfg b '.mounts += [{destination: "/abs/m1", type: "tmpfs", source: "tmpfs"}, {destination: "/rel/m2", type: "tmpfs", source: "tmpfs"}]'
	set_args b true
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	[[ -z $(ls -A "$out") ]] || fail "mount destination created on the host: $(ls -A "$out")"
	! grep -q " $out" /proc/self/mountinfo || fail "something mounted under $out"
}

@test "config.json of 64 MiB: refused at once, in bounded memory" {
	[[ -x /usr/bin/time ]] || skip "needs /usr/bin/time (apt-get install time)"
	local f=$(bundle_dir b)/config.json
	truncate -s 64M "$f"
	SECONDS=0
	peak_rss "$BATS_TEST_TMPDIR/rss" "$RUNTIME" --root "$ROOT" create --bundle "$(bundle_dir b)" c1
	assert_failure 1
	[[ $SECONDS -le 2 ]] || fail "took ${SECONDS}s"
	grep -q 'more than the 16 MiB' <<<"$stderr" || { show; fail "error does not name the limit"; }
	[[ $(tail -1 "$BATS_TEST_TMPDIR/rss") -lt 65536 ]] || fail "peak RSS $(tail -1 "$BATS_TEST_TMPDIR/rss") KiB: the file was read"
	assert_clean c1
}

@test "config.json of 12 MiB (under the 16 MiB limit): runs, in bounded memory" {
	[[ -x /usr/bin/time ]] || skip "needs /usr/bin/time (apt-get install time)"
	head -c $((12 << 20)) /dev/zero | tr '\0' a >"$BATS_TEST_TMPDIR/big"
	cfg b '.annotations.big = $big' --rawfile big "$BATS_TEST_TMPDIR/big"
	set_args b true
	peak_rss "$BATS_TEST_TMPDIR/rss" "$RUNTIME" --root "$ROOT" run --bundle "$(bundle_dir b)" c1
	assert_success
	# Measured: about 120 MiB (the JSON, the decoded spec, libcontainer's
	# copy in its state file). 16 MiB configs stay well under 256 MiB.
	[[ $(tail -1 "$BATS_TEST_TMPDIR/rss") -lt 262144 ]] || fail "peak RSS $(tail -1 "$BATS_TEST_TMPDIR/rss") KiB"
}

@test "config.json that is a FIFO or a device: refused without blocking" {
	local f=$(bundle_dir b)/config.json
	rm "$f"
	mkfifo "$f"
	RT_TIMEOUT=10 refused 'not a regular file' rt create --bundle "$(bundle_dir b)" c1
	assert_clean c1
	rm "$f"
	ln -s /dev/zero "$f"
	RT_TIMEOUT=10 refused 'not a regular file' rt create --bundle "$(bundle_dir b)" c1
	assert_clean c1
}

# policy_refused REF REGEX: a container whose org.rauha.policy is REF is
# refused as REGEX says, quickly, and leaves nothing.
policy_refused() {
	cfg b '.annotations["org.rauha.zone"] = "hz" | .annotations["org.rauha.policy"] = $p' --arg p "$1"
	RT_TIMEOUT=10 refused "$2" rt create --bundle "$(bundle_dir b)" c1
	assert_clean c1
}

@test "policy annotation: a file others may not read is refused unread" {
	requires rauha
	# The bundle's author may be less privileged than the root rauha that
	# reads the annotation: only world-readable policy files are read, so
	# no secret's content can reach an error message or a log.
	local secret=$BATS_TEST_TMPDIR/secret.toml
	printf 'root:$6$SECRETHASH:19000:0:99999:7:::\n' >"$secret"
	chmod 0640 "$secret"
	policy_refused "$secret" 'not world-readable'
	grep -q SECRETHASH <<<"$stderr" && fail "the error shows the file's content"
	ln -s "$secret" "$BATS_TEST_TMPDIR/link.toml"
	policy_refused "$BATS_TEST_TMPDIR/link.toml" 'not world-readable'
	[[ -e /etc/shadow ]] && policy_refused /etc/shadow 'not world-readable'
	policy_refused /proc/self/environ 'not world-readable'
}

@test "policy annotation: FIFOs, devices, directories and huge files are refused" {
	requires rauha
	mkfifo "$BATS_TEST_TMPDIR/fifo.toml"
	policy_refused "$BATS_TEST_TMPDIR/fifo.toml" 'not a regular file \(a FIFO\)'
	policy_refused /dev/zero 'not a regular file \(a device\)'
	policy_refused /dev/tty 'not a regular file|no such device'
	policy_refused "$BATS_TEST_TMPDIR" 'not a regular file \(a directory\)'
	truncate -s 2M "$BATS_TEST_TMPDIR/huge.toml"
	policy_refused "$BATS_TEST_TMPDIR/huge.toml" 'more than the 1024 KiB'
	# World-readable pseudo-files are read (bounded) and refused as policies.
	policy_refused /proc/cpuinfo 'line [0-9]+'
}

@test "policy annotation: a world-readable policy behind a symlink is used" {
	requires rauha
	printf '[zone]\nmode = "audit"\n' >"$BATS_TEST_TMPDIR/p.toml"
	ln -s "$BATS_TEST_TMPDIR/p.toml" "$BATS_TEST_TMPDIR/plink"
	cfg b '.annotations["org.rauha.zone"] = "hz" | .annotations["org.rauha.policy"] = $p' --arg p "$BATS_TEST_TMPDIR/plink"
	set_args b true
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_success
	rrun rt zone inspect hz
	assert_success
	assert_match "$stdout" audit
}

@test "exec --process: empty FIFO, device, 64 MiB, invalid process: refused, container unharmed" {
	run_ct c1
	local p=$BATS_TEST_TMPDIR/p.json before
	# exec's own failures exit 255, as runc's.
	local REFUSED_CODES=255
	before=$(rt ps c1 | wc -l)
	# A FIFO works as runc's "exec -p <(...)": it waits for a writer (exec.bats);
	# one that writes nothing is empty.
	mkfifo "$p"
	bg sh -c ': >"$1"' _ "$p"
	RT_TIMEOUT=10 refused 'malformed JSON: EOF' rt exec --process "$p" c1
	rrun rt exec --process <(echo '{"args": ["/bin/echo", "from-a-pipe"], "cwd": "/"}') c1
	assert_success
	assert_eq "$stdout" from-a-pipe
	RT_TIMEOUT=10 refused 'not a regular file' rt exec --process /dev/zero c1
	rm "$p"
	truncate -s 64M "$p"
	refused 'more than the 16 MiB' rt exec --process "$p" c1
	echo '{"args": ["true"], "cwd": "relative"}' >"$p"
	refused 'absolute' rt exec --process "$p" c1
	echo '{"args": [], "cwd": "/"}' >"$p"
	refused 'args' rt exec --process "$p" c1
	echo '{"args": ["true"], "cwd": "/", "rlimits": [{"type": "RLIMIT_BOGUS"}]}' >"$p"
	refused 'RLIMIT_BOGUS' rt exec --process "$p" c1
	assert_eq "$(ct_status c1)" running
	assert_eq "$(rt ps c1 | wc -l)" "$before"
}
