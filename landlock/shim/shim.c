// rauha landlock exec shim.
//
// libcontainer's init ends with execve(Args[0]) and offers no hook between its
// last mount/capability step and the workload's first instruction. Landlock
// forbids mount and pivot_root once applied, so the domain cannot be entered
// earlier. The runtime therefore makes Args[0] this shim (a sealed memfd, see
// CVE-2019-5736) and hands it the ruleset fd; the shim enters the domain and
// execs the real program.
//
// argv: /proc/self/fd/<shim> rauha-landlock-shim <ruleset fd|-> <shim fd> <status fd|-> <argv...>
//
// Without a ruleset ("-") the shim enters no domain: it only execs and
// reports. The bpf-lsm backend starts an init that way when the zone's deny
// lists could refuse the entrypoint in an LSM hook, so that the refusal
// reaches "rauha start" as the Landlock one does.
//
// It fails closed: whenever the domain cannot be entered the workload is not
// run. Exit codes: 125 = not confined (the workload never ran), 126 = found
// but could not be executed, 127 = not found; like a shell's.
//
// The status fd (the write end of a FIFO whose reader is "rauha start") is
// how such a failure reaches the caller, as an exec error reaches runc's: the
// shim writes its message there instead of stderr, and marks it
// close-on-exec, so that a successful execve closes it without a word and
// the workload never sees it.
//
// Freestanding on purpose (no libc): a static binary of a few KiB that runs in
// any image, and whose only syscalls are landlock_create_ruleset,
// landlock_restrict_self and prctl (see AllowInSeccomp in seccomp.go) plus
// close, write, fcntl, execve and exit_group.

typedef unsigned long u64;
typedef long i64;

#if defined(__x86_64__)
#define NR_write 1
#define NR_close 3
#define NR_execve 59
#define NR_exit_group 231
#define NR_prctl 157
#define NR_fcntl 72
#elif defined(__aarch64__)
#define NR_write 64
#define NR_close 57
#define NR_execve 221
#define NR_exit_group 94
#define NR_prctl 167
#define NR_fcntl 25
#else
#error "unsupported architecture"
#endif
// The landlock syscalls share numbers across architectures.
#define NR_landlock_create_ruleset 444
#define NR_landlock_restrict_self 446

#define PR_SET_NO_NEW_PRIVS 38
#define F_SETFD 2
#define FD_CLOEXEC 1
#define LANDLOCK_CREATE_RULESET_VERSION 1
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON 2

#define EPERM 1
#define ENOENT 2
#define E2BIG 7
#define ENOEXEC 8
#define EBADF 9
#define ENOMEM 12
#define EACCES 13
#define EFAULT 14
#define ENOTDIR 20
#define EINVAL 22
#define ETXTBSY 26
#define ENAMETOOLONG 36
#define ENOSYS 38
#define ELOOP 40
#define EBADFD 77
#define EOPNOTSUPP 95

#define EXIT_UNCONFINED 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127

static i64 sys3(i64 n, i64 a, i64 b, i64 c) {
#if defined(__x86_64__)
	i64 ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register i64 x8 __asm__("x8") = n;
	register i64 x0 __asm__("x0") = a;
	register i64 x1 __asm__("x1") = b;
	register i64 x2 __asm__("x2") = c;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
#endif
}

static i64 sys5(i64 n, i64 a, i64 b, i64 c, i64 d, i64 e) {
#if defined(__x86_64__)
	i64 ret;
	register i64 r10 __asm__("r10") = d;
	register i64 r8 __asm__("r8") = e;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register i64 x8 __asm__("x8") = n;
	register i64 x0 __asm__("x0") = a;
	register i64 x1 __asm__("x1") = b;
	register i64 x2 __asm__("x2") = c;
	register i64 x3 __asm__("x3") = d;
	register i64 x4 __asm__("x4") = e;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
	return x0;
#endif
}

static u64 slen(const char *s) {
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

static int has_slash(const char *s) {
	for (; *s; s++)
		if (*s == '/')
			return 1;
	return 0;
}

static int starts_with(const char *s, const char *prefix) {
	for (; *prefix; s++, prefix++)
		if (*s != *prefix)
			return 0;
	return 1;
}

static int streq(const char *a, const char *b) {
	return starts_with(a, b) && a[slen(b)] == 0;
}

// parse_fd accepts a plain decimal fd number; anything else is -1.
static i64 parse_fd(const char *s) {
	i64 v = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 1000000)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

static const char *errname(i64 err) {
	switch (err) {
	case EPERM: return "operation not permitted";
	case ENOENT: return "no such file or directory";
	case E2BIG: return "argument list too long";
	case ENOEXEC: return "exec format error";
	case EBADF: return "bad file descriptor";
	case ENOMEM: return "out of memory";
	case EACCES: return "permission denied";
	case EFAULT: return "bad address";
	case ENOTDIR: return "not a directory";
	case EINVAL: return "invalid argument";
	case ETXTBSY: return "text file busy";
	case ENAMETOOLONG: return "file name too long";
	case ENOSYS: return "function not implemented";
	case ELOOP: return "too many levels of symbolic links";
	case EBADFD: return "file descriptor in bad state";
	case EOPNOTSUPP: return "operation not supported";
	}
	return "error";
}

// status_fd is the status fd once it is known to be close-on-exec; -1
// before that, or when there is none.
static i64 status_fd = -1;

#define PREFIX "rauha: landlock shim: "

// say writes one diagnostic line to the status fd if there is one (the
// runtime reports it, once), else to stderr; the parts are joined without
// separators. It is best effort: stderr may be closed.
static void say(const char *a, const char *b, const char *c, const char *d) {
	char buf[512];
	u64 n = 0;
	const char *parts[6] = {PREFIX, a, b, c, d, "\n"};
	for (int i = 0; i < 6; i++) {
		const char *p = parts[i];
		if (!p)
			continue;
		while (*p && n < sizeof(buf) - 1)
			buf[n++] = *p++;
	}
	if (buf[n - 1] != '\n')
		buf[n++] = '\n';
	if (status_fd >= 0) {
		u64 skip = sizeof(PREFIX) - 1;
		sys3(NR_write, status_fd, (i64)(buf + skip), (i64)(n - skip));
	} else {
		sys3(NR_write, 2, (i64)buf, (i64)n);
	}
}

static void __attribute__((noreturn)) die(int code) {
	for (;;)
		sys3(NR_exit_group, code, 0, 0);
}

// exec_path tries one candidate; it returns the errno when execve fails.
static i64 exec_path(const char *path, char **argv, char **envp) {
	return -sys3(NR_execve, (i64)path, (i64)argv, (i64)envp);
}

static void __attribute__((noreturn)) fail_exec(const char *name, i64 err) {
	say("exec: \"", name, "\": ", errname(err));
	die(err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

// run resolves argv[0] like exec.LookPath in libcontainer's init would have
// (PATH from the process environment, never relative to the working directory)
// and execs it. The search happens inside the domain, so an ExecDeny'd program
// fails with EACCES exactly as a direct execve would.
static void __attribute__((noreturn)) run(char **argv, char **envp) {
	const char *name = argv[0];
	if (has_slash(name))
		fail_exec(name, exec_path(name, argv, envp));

	const char *path = 0;
	for (char **e = envp; *e; e++)
		if (starts_with(*e, "PATH="))
			path = *e + 5;
	if (!path) {
		say("exec: \"", name, "\": executable file not found in $PATH", " (PATH is not set)");
		die(EXIT_NOT_FOUND);
	}

	u64 nlen = slen(name);
	i64 denied = 0;
	char buf[4096];
	while (*path) {
		const char *end = path;
		while (*end && *end != ':')
			end++;
		u64 dlen = (u64)(end - path);
		// Empty and relative entries would resolve against the working
		// directory; Go's LookPath refuses those results (exec.ErrDot).
		if (dlen > 0 && path[0] == '/' && dlen + 1 + nlen < sizeof(buf)) {
			for (u64 i = 0; i < dlen; i++)
				buf[i] = path[i];
			buf[dlen] = '/';
			for (u64 i = 0; i <= nlen; i++)
				buf[dlen + 1 + i] = name[i];
			i64 err = exec_path(buf, argv, envp);
			switch (err) {
			case EACCES:
				denied = EACCES;
				break;
			case ENOENT:
			case ENOTDIR:
			case ELOOP:
			case ENAMETOOLONG:
				break;
			default:
				fail_exec(buf, err);
			}
		}
		path = *end ? end + 1 : end;
	}
	if (denied)
		fail_exec(name, denied);
	say("exec: \"", name, "\": executable file not found in $PATH", 0);
	die(EXIT_NOT_FOUND);
}

static void __attribute__((noreturn)) unconfined(const char *what, i64 err) {
	say("cannot enter the zone's Landlock domain, the workload was not started: ", what, ": ", errname(err));
	die(EXIT_UNCONFINED);
}

// enter_domain restricts the shim, and so the workload, to ruleset; it
// returns only when that worked.
static void enter_domain(i64 ruleset) {
	i64 abi = sys3(NR_landlock_create_ruleset, 0, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0)
		unconfined("landlock_create_ruleset(version)", -abi);
	// Since ABI 7 denials are audited only for the program that called
	// restrict_self unless asked; the workload is the next program.
	i64 flags = abi >= 7 ? LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON : 0;

	// Without CAP_SYS_ADMIN the kernel requires no_new_privs. Try without it
	// first so that privileged containers keep setuid binaries working.
	i64 r = sys3(NR_landlock_restrict_self, ruleset, flags, 0);
	if (r == -EPERM) {
		i64 p = sys5(NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		if (p < 0)
			unconfined("prctl(PR_SET_NO_NEW_PRIVS)", -p);
		r = sys3(NR_landlock_restrict_self, ruleset, flags, 0);
	}
	if (r < 0)
		unconfined("landlock_restrict_self", -r);
}

void __attribute__((noreturn, used)) shim_main(i64 *sp) {
	i64 argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;

	if (argc < 6 || !streq(argv[1], "rauha-landlock-shim")) {
		say("must be started by the rauha runtime (usage: shim rauha-landlock-shim RULESET_FD|- SHIM_FD STATUS_FD|- ARGV...)", 0, 0, 0);
		die(EXIT_UNCONFINED);
	}
	i64 ruleset = streq(argv[2], "-") ? -1 : parse_fd(argv[2]);
	i64 self = parse_fd(argv[3]);
	i64 status = streq(argv[4], "-") ? -1 : parse_fd(argv[4]);
	if ((ruleset < 3 && !streq(argv[2], "-")) || self < 3 || (status < 3 && !streq(argv[4], "-"))) {
		say("bad file descriptor arguments \"", argv[2], "\" \"", argv[3]);
		die(EXIT_UNCONFINED);
	}
	// Close-on-exec, or closed now: the workload must never hold it. A
	// profile that denies fcntl costs the report, not the workload.
	if (status >= 0) {
		if (sys3(NR_fcntl, status, F_SETFD, FD_CLOEXEC) == 0)
			status_fd = status;
		else
			sys3(NR_close, status, 0, 0);
	}

	if (ruleset >= 0) {
		enter_domain(ruleset);
		sys3(NR_close, ruleset, 0, 0);
	}

	// The workload must see exactly the fds the caller preserved: ours are the
	// last passed files, so closing them keeps LISTEN_FDS/--preserve-fds
	// numbering intact.
	sys3(NR_close, self, 0, 0);

	run(argv + 5, envp);
}

#if defined(__x86_64__)
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	xor %rbp, %rbp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call shim_main\n"
	"	hlt\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x29, #0\n"
	"	mov x30, #0\n"
	"	mov x0, sp\n"
	"	bl shim_main\n"
	"	brk #0\n");
#endif
