#!/usr/bin/env bats
# linux.seccomp

load helpers

@test "seccomp: SCMP_ACT_ERRNO on mkdir/mkdirat gives EPERM" {
	requires seccomp
	cfg b '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW",
		syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 1}]}'
	set_args b sh -c 'mkdir /newdir'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "$output" 'Operation not permitted'
	[[ ! -d $(bundle_dir b)/rootfs/newdir ]] || fail "mkdir succeeded"
}

@test "seccomp: the filter applies to exec'd processes too" {
	requires seccomp
	cfg b '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW",
		syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 1}]}'
	run_ct c1
	rrun rt exec c1 mkdir /newdir
	assert_failure
	assert_match "$output" 'Operation not permitted'
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$(ct_pid c1)/status" || fail "init not in filter mode"
}

@test "seccomp: a custom errno (ENOSYS=38)" {
	requires seccomp
	cfg b '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW",
		syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO", errnoRet: 38}]}'
	set_args b sh -c 'mkdir /newdir'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_match "$output" 'Function not implemented'
}

@test "seccomp: default ERRNO with an allow list (like docker's profile)" {
	requires seccomp
	# Allow what sh + echo need; everything else fails with EPERM.
	allow='["read","write","openat","open","close","fstat","newfstatat","stat","lstat","mmap","munmap","mprotect","brk","rt_sigaction","rt_sigprocmask","rt_sigreturn","ioctl","getpid","getppid","getuid","geteuid","getgid","getegid","execve","exit","exit_group","arch_prctl","set_tid_address","futex","uname","fcntl","getcwd","wait4","clone","clone3","fork","vfork","dup2","dup3","prctl","capget","capset","setgroups","setuid","setgid","setresuid","setresgid","getdents64","statx","readlink","readlinkat","access","faccessat","faccessat2","sigaltstack","set_robust_list","rseq","prlimit64","getrandom","nanosleep","clock_nanosleep","pipe","pipe2","lseek","sched_yield","fchdir","chdir","getpgrp","setpgid","kill","tgkill","select","pselect6","poll","ppoll","epoll_pwait","fsync","umask","sendto","socket","connect","fstatfs","statfs","openat2","close_range"]'
	cfg b '.linux.seccomp = {defaultAction: "SCMP_ACT_ERRNO", defaultErrnoRet: 1,
		syscalls: [{names: $a, action: "SCMP_ACT_ALLOW"}]}' --argjson a "$allow"
	set_args b sh -c 'echo allowed-ok; mkdir /x'
	rrun rt run --bundle "$(bundle_dir b)" c1
	assert_failure
	assert_eq "$stdout" allowed-ok
	assert_match "$stderr" 'Operation not permitted'
}

@test "seccomp: an unknown action fails" {
	requires seccomp
	cfg b '.linux.seccomp = {defaultAction: "SCMP_ACT_BOGUS"}'
	rrun rt create --bundle "$(bundle_dir b)" c1
	assert_error_line 'seccomp|action|SCMP_ACT_BOGUS'
	assert_nothing_left c1
}
