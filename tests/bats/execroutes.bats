#!/usr/bin/env bats
# Exec rules against code that runs without an execve of the file that
# holds it: a copy of a denied binary, a memfd executed with execveat, the
# dynamic loader run on a file, mmap(PROT_EXEC) of a file. Each attack first
# runs under plain runc with the same bundle (it works there), then in a
# zone with exec rules: the exact error, an event, and what verify says.

load helpers
load zone_helpers

eval "zone_$(declare -f teardown)"

teardown() {
	local id
	if [[ -d ${RUNC_ROOT:-} ]]; then
		for id in $(timeout 20 "$RUNC" --root "$RUNC_ROOT" list -q 2>/dev/null); do
			timeout 20 "$RUNC" --root "$RUNC_ROOT" delete --force "$id" >/dev/null 2>&1 || true
		done
	fi
	zone_teardown
}

RUNC=${RUNC:-$(command -v runc || echo /usr/sbin/runc)}

# runc_exec BUNDLE CMD...: run BUNDLE's container under plain runc, exec CMD
# in it (result in $status/$stdout/$stderr, see rrun), remove the container.
runc_exec() {
	local b=$1 id=plain-$1
	shift
	[[ -x $RUNC ]] || skip "plain runc is needed to show the attack works without a zone"
	RUNC_ROOT=$BATS_TEST_TMPDIR/runc-state
	timeout 30 "$RUNC" --root "$RUNC_ROOT" run -d --bundle "$(bundle_dir "$b")" "$id" \
		>"$BATS_TEST_TMPDIR/$id.out" 2>"$BATS_TEST_TMPDIR/$id.err" </dev/null ||
		fail "runc run -d $id: $(cat "$BATS_TEST_TMPDIR/$id.err")"
	rrun timeout 30 "$RUNC" --root "$RUNC_ROOT" exec "$id" "$@"
	local st=$status out=$stdout err=$stderr
	timeout 30 "$RUNC" --root "$RUNC_ROOT" delete --force "$id" >/dev/null 2>&1 || true
	status=$st stdout=$out stderr=$err
}

ev_is() {
	jqe "$2" <<<"$1" >/dev/null || fail "event $1 does not satisfy ($2)"
}

# exec_zone BUNDLE ZONE TOML: the bundle joins ZONE with policy TOML (stdin).
exec_zone() {
	in_zone "$1" "$2" "$(policy "$2")"
}

# denied_binary BUNDLE: /usr/local/bin/denyme (a busybox copy) in the rootfs.
denied_binary() {
	mkdir -p "$(bundle_dir "$1")/rootfs/usr/local/bin"
	cp "$BUSYBOX" "$(bundle_dir "$1")/rootfs/usr/local/bin/denyme"
}

# with_helper BUNDLE: the execroute helper at /usr/local/bin/execroute.
with_helper() {
	local h
	h=$(build_helper execroute)
	mkdir -p "$(bundle_dir "$1")/rootfs/usr/local/bin"
	cp "$h" "$(bundle_dir "$1")/rootfs/usr/local/bin/execroute"
}

# verify_exec_checks ID: verify of the container passes, with both exec
# checks named and passed.
verify_exec_checks() {
	rrun rt zone verify --container "$1" --format json
	assert_success
	jqe --arg c "container $1" '
		any(.checks[]; .name == ($c + ": exec: writable paths noexec") and .passed) and
		any(.checks[]; .name == ($c + ": exec: memfd") and .passed) and .isolated' <<<"$stdout" >/dev/null ||
		fail "verify does not pass the exec checks of $1: $stdout"
}

@test "exec routes: a copy of a denied binary in a writable path does not run (noexec), a script still does" {
	denied_binary b
	runc_exec b sh -c 'cp /usr/local/bin/denyme /tmp/echo && /tmp/echo copy-ran'
	assert_success
	assert_eq "$stdout" copy-ran

	exec_zone b nocopy <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		deny = ["/usr/local/bin/denyme"]
	EOF
	run_ct copy b
	# The same bytes from an allowed name (denyme is a busybox copy).
	rexec copy sh -c 'cp /bin/busybox /tmp/echo && /tmp/echo copy-ran'
	assert_failure 126
	assert_match "$stderr" "/tmp/echo: Permission denied"
	[[ $stdout != *copy-ran* ]] || fail "the copy ran"
	ev=$(wait_event nocopy '.control == "exec" and (.object | startswith("/tmp/echo"))')
	ev_is "$ev" '.object == "/tmp/echo (permission denied)" and .container == "copy" and .decision == "deny"'
	# The denied file itself: the fallback's Landlock domain does not let
	# it be read (the dynamic loader would map it); bpf-lsm judges the
	# copy's exec and maps instead, and it runs no better from /tmp.
	rexec copy sh -c 'cp /usr/local/bin/denyme /tmp/copy2 && /tmp/copy2 echo copy-ran'
	if [[ $(rt zone verify --container copy --format json | jq -r .backend) == landlock ]]; then
		assert_failure 1
		assert_match "$stderr" "can't open '/usr/local/bin/denyme': Permission denied"
	else
		assert_failure 126
	fi
	[[ $stdout != *copy-ran* ]] || fail "the copy ran"

	# An interpreter reading a script is not an exec of the script.
	rexec copy sh -c 'echo "echo script-ran" >/tmp/x.sh && sh /tmp/x.sh'
	assert_success
	assert_eq "$stdout" script-ran
	# The denied binary itself stays denied, the others run.
	rexec copy sh -c 'denyme true'
	assert_failure 126
	rexec copy sh -c 'echo ok | tr a-z A-Z'
	assert_success
	assert_eq "$stdout" OK
	verify_exec_checks copy
}

@test "exec routes: memfd_create + execveat of busybox is refused (EACCES), with exec events" {
	with_helper b
	runc_exec b execroute memfd-exec exec /bin/busybox echo memfd-ran
	assert_success
	assert_eq "$stdout" memfd-ran

	exec_zone b nomemfd <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		allow = ["/bin", "/usr/local/bin"]
	EOF
	run_ct memfd b
	# Asked for an executable memfd: refused by vm.memfd_noexec=2.
	rexec memfd execroute memfd-exec exec /bin/busybox echo memfd-ran
	assert_failure 126
	assert_eq "$stderr" "memfd_create: permission denied"
	# Without flags the memfd is sealed non-executable: execveat fails.
	rexec memfd execroute memfd-exec noflags /bin/busybox echo memfd-ran
	assert_failure 126
	assert_eq "$stderr" "execveat: permission denied"
	[[ $stdout != *memfd-ran* ]] || fail "the memfd ran"

	ev=$(wait_event nomemfd '.control == "exec" and (.object | startswith("memfd_create"))')
	ev_is "$ev" '.object == "memfd_create MFD_EXEC payload (permission denied)" and .container == "memfd" and .comm == "execroute"'
	ev=$(wait_event nomemfd '.control == "exec" and (.object | startswith("execveat"))')
	ev_is "$ev" '.object == "execveat fd memfd:payload (permission denied)" and .container == "memfd"'
	verify_exec_checks memfd
}

@test "exec routes: mmap(PROT_EXEC) of a file written to /tmp is refused (EPERM), with an exec event" {
	with_helper b
	runc_exec b execroute mmap-exec /tmp/code
	assert_success
	assert_eq "$stdout" "ran: 42"

	denied_binary b
	exec_zone b nommap <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		deny = ["/usr/local/bin/denyme"]
	EOF
	run_ct mmap b
	rexec mmap execroute mmap-exec /tmp/code
	assert_failure 126
	assert_eq "$stderr" "mmap: operation not permitted"
	[[ $stdout != *ran* ]] || fail "the mapped code ran"
	ev=$(wait_event nommap '.control == "exec" and (.object | startswith("mmap"))')
	ev_is "$ev" '.object == "mmap PROT_EXEC of code (operation not permitted)" and .container == "mmap" and .comm == "execroute"'
	verify_exec_checks mmap
}

# LD: the dynamic loader's path (the host's, copied into bundles by
# with_loader).
LD=/lib64/ld-linux-x86-64.so.2

# with_loader BUNDLE: the host's dynamic loader and libc, and the host's
# dynamic /bin/true as /opt/true and /opt/denied, in the bundle's rootfs.
with_loader() {
	local r libc
	[[ -e $LD && -x /bin/true ]] || skip "needs the host's $LD and a dynamic /bin/true"
	libc=$(ldd /bin/true | awk '$1 ~ /^libc\.so/ {print $3}')
	[[ -n $libc ]] || skip "cannot find the libc of /bin/true"
	r=$(bundle_dir "$1")/rootfs
	mkdir -p "$r/lib64" "$r$(dirname "$libc")" "$r/opt"
	cp -L "$LD" "$r$LD"
	cp -L "$libc" "$r$libc"
	cp /bin/true "$r/opt/true"
	cp /bin/true "$r/opt/denied"
}

@test "exec routes: the dynamic loader cannot run a binary copied to /tmp, the image's own dynamic binaries run" {
	local ld=$LD
	with_loader b
	runc_exec b sh -c "cp /opt/true /tmp/t && $ld /tmp/t && $ld /opt/denied && echo loader-ran"
	assert_success
	assert_eq "$stdout" loader-ran

	exec_zone b noloader <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		deny = ["/opt/denied"]
	EOF
	run_ct loader b
	rexec loader sh -c "/opt/true && $ld /opt/true && echo image-ran"
	assert_success
	assert_eq "$stdout" image-ran
	rexec loader sh -c "cp /opt/true /tmp/t && $ld /tmp/t && echo loader-ran"
	assert_failure 127
	assert_match "$stderr" "/tmp/t: error while loading shared libraries: /tmp/t: failed to map segment from shared object"
	[[ $stdout != *loader-ran* ]] || fail "the loader ran the copy"
	ev=$(wait_event noloader '.control == "exec" and (.object | startswith("mmap"))')
	ev_is "$ev" '.object == "mmap PROT_EXEC of t (operation not permitted)" and .container == "loader"'
	# The denied binary itself, where the image has it: the loader cannot
	# read it (fallback: Landlock; bpf-lsm: lsm/mmap_file refuses the map).
	rexec loader sh -c "$ld /opt/denied && echo denied-ran"
	assert_failure 127
	assert_match "$stderr" "/opt/denied: .*(Permission denied|failed to map segment)"
	[[ $stdout != *denied-ran* ]] || fail "the loader ran the denied binary"
	wait_event noloader '(.control == "file" or .control == "exec") and (.object | startswith("/opt/denied"))' >/dev/null
	verify_exec_checks loader
}

@test "exec routes: a writable root file system without writable_paths is refused by strict admission, flagged by verify under audit" {
	denied_binary b
	exec_zone b rootrw <<-'EOF'
		[exec]
		deny = ["/usr/local/bin/denyme"]
	EOF
	rrun rt run -d --bundle "$(bundle_dir b)" rootrw
	assert_failure
	assert_match "$stderr" "zone rootrw \(admission strict\) refuses container rootrw: .*the root file system is writable"
	assert_nothing_left rootrw

	make_bundle a
	denied_binary a
	exec_zone a rootrw-audit <<-'EOF'
		[zone]
		admission = "audit"
		[exec]
		deny = ["/usr/local/bin/denyme"]
	EOF
	run_ct rootrw-audit a
	rrun rt zone verify --container rootrw-audit --format json
	assert_failure 1
	jqe '.checks[] | select(.name == "container rootrw-audit: exec: writable paths noexec") |
		(.passed | not) and (.detail | test("root file system is writable"))' <<<"$stdout" >/dev/null ||
		fail "verify does not name the writable root: $stdout"

	# A read-only root needs no writable_paths: the writable mounts are noexec.
	make_bundle ro
	cfg ro '.root.readonly = true'
	denied_binary ro
	exec_zone ro rootro <<-'EOF'
		[exec]
		deny = ["/usr/local/bin/denyme"]
	EOF
	run_ct rootro ro
	rexec rootro sh -c 'echo "echo x" >/dev/shm/x && chmod +x /dev/shm/x && /dev/shm/x'
	assert_failure 126
	verify_exec_checks rootro
}

@test "exec routes: a container sharing the host pid namespace gets no memfd_create (EPERM) instead of vm.memfd_noexec" {
	local host
	host=$(cat /proc/sys/vm/memfd_noexec)
	with_helper b
	host_pid b
	denied_binary b
	exec_zone b sharedpid <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		deny = ["/usr/local/bin/denyme"]
	EOF
	run_ct sharedpid b
	rexec sharedpid execroute memfd-exec noflags /bin/busybox echo memfd-ran
	assert_failure 126
	assert_eq "$stderr" "memfd_create: operation not permitted"
	ev=$(wait_event sharedpid '.control == "exec" and (.object | startswith("memfd_create"))')
	ev_is "$ev" '.object == "memfd_create payload (operation not permitted)" and .container == "sharedpid"'
	# The host's value is untouched.
	assert_eq "$(cat /proc/sys/vm/memfd_noexec)" "$host"
	rrun rt zone verify --container sharedpid --format json
	jqe '.checks[] | select(.name == "container sharedpid: exec: memfd") | .passed' <<<"$stdout" >/dev/null ||
		fail "verify does not pass the memfd check: $stdout"
}

@test "exec routes: an allow-list that allows the dynamic loader is refused by strict admission, verify names it under audit" {
	with_loader b
	runc_exec b sh -c "$LD /opt/true && echo outside-ran"
	assert_success
	assert_eq "$stdout" outside-ran

	exec_zone b ldallowed <<-'EOF'
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		allow = ["/bin", "/lib", "/lib64"]
	EOF
	rrun rt run -d --bundle "$(bundle_dir b)" ldallowed
	assert_failure
	assert_match "$stderr" "refuses container ldallowed: .*the dynamic loader /lib64/ld-linux-x86-64.so.2 is allowed"
	assert_nothing_left ldallowed

	# Under audit admission the route is open, and verify says so: the
	# allow-list stops the execve, not the loader's mapping.
	make_bundle a
	with_loader a
	exec_zone a ldaudit <<-'EOF'
		[zone]
		admission = "audit"
		[filesystem]
		writable_paths = ["/tmp"]
		[exec]
		allow = ["/bin", "/lib", "/lib64"]
	EOF
	run_ct ldaudit a
	rexec ldaudit /opt/true
	assert_failure 126
	rexec ldaudit sh -c "$LD /opt/true && echo outside-ran"
	assert_success
	assert_eq "$stdout" outside-ran
	rrun rt zone verify --container ldaudit --format json
	assert_failure 1
	jqe '.checks[] | select(.name == "container ldaudit: exec: loader") |
		(.passed | not) and (.detail | test("/lib64/ld-linux-x86-64.so.2"))' <<<"$stdout" >/dev/null ||
		fail "verify does not name the allowed loader: $stdout"
}
