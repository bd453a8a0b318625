/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Deny observer. Landlock enforces files and exec on both backends (and
 * signals and TCP connect on the fallback) but reports nothing to us, so
 * this program turns failed syscalls of zone tasks (-EACCES/-EPERM, and
 * -EROFS from opens and metadata syscalls) into events, and, in zones whose
 * file rules the fallback holds with mounts, the EXDEV, EBUSY and ENOENT
 * those mounts give (mount_error). On the bpf-lsm backend the loader keeps
 * only its file and exec events: the LSM hooks report the rest themselves.
 *
 * Only sys_exit is hooked: the arguments are read from the pt_regs the
 * kernel saved at syscall entry (syscalls do not modify them), and a failed
 * open/exec returns to the same address space, so the path pointer is still
 * valid. That makes the cost for every other syscall one test of the
 * return value (observed_errno): no helper call, no map, no sys_enter
 * program and no per-task stash. What a task rewrote in its own memory between entry and exit is
 * what gets reported; this is an observer, never a decision.
 *
 * Syscall numbers and the saved registers differ per architecture: bpf2go
 * builds one object per target and defines __TARGET_ARCH_<arch> for it.
 * 32-bit compat syscalls (their numbers are another table) are skipped.
 */
#ifndef RAUHA_OBSERVER_BPF_H
#define RAUHA_OBSERVER_BPF_H

#include "common.bpf.h"

#if defined(__TARGET_ARCH_x86)

#define NR_open 2
#define NR_mmap 9
#define NR_mprotect 10
#define NR_connect 42
#define NR_execve 59
#define NR_kill 62
#define NR_rt_sigqueueinfo 129
#define NR_ptrace 101
#define NR_tkill 200
#define NR_tgkill 234
#define NR_rt_tgsigqueueinfo 297
#define NR_pidfd_send_signal 424
#define NR_openat 257
#define NR_memfd_create 319
#define NR_execveat 322
#define NR_openat2 437
#define NR_bpf 321

/* Metadata and name changes: Landlock has no right for them, so on the
 * fallback read-only mounts deny them with EROFS (libzone/fileguard.go),
 * as they deny a write open before Landlock sees it. */
#define NR_link 86
#define NR_chmod 90
#define NR_fchmod 91
#define NR_chown 92
#define NR_fchown 93
#define NR_lchown 94
#define NR_utime 132
#define NR_setxattr 188
#define NR_lsetxattr 189
#define NR_fsetxattr 190
#define NR_utimes 235
#define NR_fchownat 260
#define NR_futimesat 261
#define NR_linkat 265
#define NR_fchmodat 268
#define NR_utimensat 280
#define NR_open_by_handle_at 304
#define NR_fchmodat2 452
#define NR_setxattrat 463

/* Names a learning zone records as written (learn_sys_exit). */
#define NR_rename 82
#define NR_mkdir 83
#define NR_rmdir 84
#define NR_creat 85
#define NR_unlink 87
#define NR_symlink 88
#define NR_truncate 76
#define NR_mknod 133
#define NR_mknodat 259
#define NR_mkdirat 258
#define NR_unlinkat 263
#define NR_renameat 264
#define NR_symlinkat 266
#define NR_renameat2 316
#define NR_ftruncate 77

#define TS_COMPAT 0x0002
#define PROT_EXEC 0x4

static __always_inline bool compat_syscall(struct pt_regs *regs)
{
	struct task_struct *task = bpf_get_current_task_btf();
	return BPF_CORE_READ(task, thread_info.status) & TS_COMPAT;
}

/* A load, not a helper call: regs is the tracepoint's own argument (a
 * pointer the verifier knows), and this runs for every EXDEV, EBUSY and
 * ENOENT of the host (mount_error). */
static __always_inline long syscall_nr(struct pt_regs *regs)
{
	return regs->orig_ax;
}

static __always_inline void syscall_args(struct pt_regs *regs, unsigned long a[3])
{
	a[0] = BPF_CORE_READ(regs, di);
	a[1] = BPF_CORE_READ(regs, si);
	a[2] = BPF_CORE_READ(regs, dx);
}

/* syscall_arg5 is the fifth argument (mmap's fd). */
static __always_inline unsigned long syscall_arg5(struct pt_regs *regs)
{
	return BPF_CORE_READ(regs, r8);
}

static __always_inline unsigned long syscall_arg4(struct pt_regs *regs)
{
	return BPF_CORE_READ(regs, r10);
}

/* user_ip is where the task resumes in user space. */
static __always_inline unsigned long user_ip(struct pt_regs *regs)
{
	return BPF_CORE_READ(regs, ip);
}

#elif defined(__TARGET_ARCH_arm64)

/* The generic syscall table: there is no open(2). */
#define NR_openat 56
#define NR_ptrace 117
#define NR_kill 129
#define NR_tkill 130
#define NR_tgkill 131
#define NR_rt_sigqueueinfo 138
#define NR_rt_tgsigqueueinfo 240
#define NR_pidfd_send_signal 424
#define NR_connect 203
#define NR_execve 221
#define NR_mmap 222
#define NR_mprotect 226
#define NR_memfd_create 279
#define NR_bpf 280
#define NR_execveat 281
#define NR_openat2 437
/* Metadata and name changes (see above); the generic table has only the
 * *at and f* forms. */
#define NR_setxattr 5
#define NR_lsetxattr 6
#define NR_fsetxattr 7
#define NR_linkat 37
#define NR_fchmod 52
#define NR_fchmodat 53
#define NR_fchownat 54
#define NR_fchown 55
#define NR_utimensat 88
#define NR_open_by_handle_at 265
#define NR_fchmodat2 452
#define NR_setxattrat 463
#define NR_mknodat 33
#define NR_mkdirat 34
#define NR_unlinkat 35
#define NR_symlinkat 36
#define NR_renameat 38
#define NR_truncate 45
#define NR_ftruncate 46
#define NR_renameat2 276

/* headers/vmlinux.h is x86's: the arm64 pt_regs fields are declared here and
 * CO-RE relocates them against the running kernel's struct pt_regs (the
 * ___rauha suffix is ignored when matching). x0 already holds the return
 * value at sys_exit; the first argument is kept in orig_x0. */
struct pt_regs___rauha {
	__u64 regs[31];
	__u64 pc;
	__u64 pstate;
	__u64 orig_x0;
	__s32 syscallno;
} __attribute__((preserve_access_index));

#define PSR_MODE32_BIT 0x10
#define PROT_EXEC 0x4

static __always_inline bool compat_syscall(struct pt_regs *regs)
{
	return BPF_CORE_READ((struct pt_regs___rauha *)regs, pstate) & PSR_MODE32_BIT;
}

static __always_inline long syscall_nr(struct pt_regs *regs)
{
	return ((struct pt_regs___rauha *)regs)->syscallno;
}

static __always_inline void syscall_args(struct pt_regs *regs, unsigned long a[3])
{
	struct pt_regs___rauha *r = (struct pt_regs___rauha *)regs;
	a[0] = BPF_CORE_READ(r, orig_x0);
	a[1] = BPF_CORE_READ(r, regs[1]);
	a[2] = BPF_CORE_READ(r, regs[2]);
}

static __always_inline unsigned long syscall_arg5(struct pt_regs *regs)
{
	return BPF_CORE_READ((struct pt_regs___rauha *)regs, regs[4]);
}

static __always_inline unsigned long syscall_arg4(struct pt_regs *regs)
{
	return BPF_CORE_READ((struct pt_regs___rauha *)regs, regs[3]);
}

static __always_inline unsigned long user_ip(struct pt_regs *regs)
{
	return BPF_CORE_READ((struct pt_regs___rauha *)regs, pc);
}

#else
#error "observer.bpf.h: no syscall numbers for this architecture"
#endif

#define ENOENT 2
#define EBUSY 16
#define EXDEV 18
#define EROFS 30
#define AF_UNIX 1
#define AT_REMOVEDIR 0x200

/* observed_errno: ret is an error some observed syscall is reported for.
 * One bit test: this runs for every syscall of the host. */
#define OBSERVED_ERRNOS (1UL << EPERM | 1UL << ENOENT | 1UL << EACCES | 1UL << EBUSY | 1UL << EXDEV | 1UL << EROFS)

static __always_inline bool observed_errno(long ret)
{
	unsigned long e = -ret;
	return e < 64 && ((OBSERVED_ERRNOS >> e) & 1);
}

struct sockaddr_in6_min {
	__u16 family;
	__u16 port;
	__u32 flowinfo;
	__u32 addr[4];
};

/* metadata_syscall: 1 when the path is argument 0, 2 when it is argument
 * 1, 3 when there is none (an fd or a handle); 0 for other syscalls. */
static __always_inline int metadata_syscall(long nr)
{
	switch (nr) {
#ifdef NR_link /* the legacy path forms (x86_64) */
	case NR_link:
	case NR_chmod:
	case NR_chown:
	case NR_lchown:
	case NR_utime:
	case NR_utimes:
#endif
	case NR_setxattr:
	case NR_lsetxattr:
		return 1;
#ifdef NR_futimesat
	case NR_futimesat:
#endif
	case NR_fchownat:
	case NR_linkat:
	case NR_fchmodat:
	case NR_utimensat:
	case NR_fchmodat2:
	case NR_setxattrat:
		return 2;
	case NR_fchmod:
	case NR_fchown:
	case NR_fsetxattr:
	case NR_open_by_handle_at:
		return 3;
	}
	return 0;
}

/* name_syscall: for a syscall that makes or removes a name or truncates
 * (Landlock's MAKE_*, REMOVE_* and TRUNCATE rights refuse them with
 * EACCES in denied and read_only trees, the fallback's read-only mounts
 * with EROFS), where the name made or removed is (a rename's old one, a
 * symlink's link path), as metadata_syscall says it: 1 argument 0, 2
 * argument 1, 4 argument 2, 5 the file of the fd in argument 0; 0 for
 * other syscalls. */
static __always_inline int name_syscall(long nr)
{
	switch (nr) {
#ifdef NR_mkdir
	case NR_mkdir:
	case NR_rmdir:
	case NR_unlink:
	case NR_creat:
	case NR_mknod:
	case NR_rename:
#endif
	case NR_truncate:
		return 1;
#ifdef NR_symlink
	case NR_symlink:
#endif
	case NR_mkdirat:
	case NR_unlinkat:
	case NR_mknodat:
	case NR_renameat:
	case NR_renameat2:
		return 2;
	case NR_symlinkat:
		return 4;
	case NR_ftruncate:
		return 5;
	}
	return 0;
}

static __always_inline int observed_control(long nr, long ret)
{
	if (metadata_syscall(nr) || name_syscall(nr))
		return CONTROL_FILE;
	switch (nr) {
#ifdef NR_open
	case NR_open:
#endif
	case NR_openat:
	case NR_openat2:
		return CONTROL_FILE;
	case NR_execve:
	case NR_execveat:
		return CONTROL_EXEC;
	/* The ways around execve that a zone with exec rules closes: a file on
	 * a noexec mount mapped executable (EPERM from mmap, EACCES from
	 * mprotect, what the dynamic loader hits) and an executable memfd
	 * refused by vm.memfd_noexec=2 (EACCES) or seccomp (EPERM). The prot
	 * argument is checked by the caller. */
	case NR_mmap:
		return ret == -EPERM ? CONTROL_EXEC : -1;
	case NR_mprotect:
		return ret == -EACCES ? CONTROL_EXEC : -1;
	case NR_memfd_create:
		return CONTROL_EXEC;
	case NR_kill:
	case NR_tkill:
	case NR_tgkill:
	case NR_rt_sigqueueinfo:
	case NR_rt_tgsigqueueinfo:
	case NR_pidfd_send_signal:
		return CONTROL_SIGNAL;
	case NR_ptrace:
		return CONTROL_PTRACE;
	case NR_connect:
		/* EPERM from connect is our own cgroup program, which already
		 * emitted the event; Landlock's TCP denial is EACCES. */
		return ret == -EACCES ? CONTROL_EGRESS : -1;
	case NR_bpf:
		/* The seccomp rule a member without CAP_BPF or CAP_SYS_ADMIN
		 * gets (libzone/controls.go, keepsBPF): no LSM hook sees it. */
		return ret == -EPERM ? CONTROL_CAPABILITY : -1;
	}
	return -1;
}

/*
 * mount_error is the file_op of a syscall that failed with an error the
 * fallback's mounts give for file rules Landlock has no right for
 * (libzone/fileguard.go), or 0: a new hard link to a denied file, or a
 * rename or link across a read_only bind, fails with EXDEV; removing or
 * renaming a mount point (a denied file, a denied or read_only directory,
 * the null device on a missing deny path) with EBUSY; connect() to a unix
 * socket in a denied directory (under an empty tmpfs) with ENOENT. Each is
 * common for reasons of no zone's (runc's bind mount of /etc/hosts, glibc
 * probing nscd's socket), so they are reported only for zones with
 * POLICY_FILE_MOUNTS, and the engine keeps only those whose path is, or is
 * below, a deny or read_only path of the zone.
 */
static __always_inline int mount_error(long nr, long ret)
{
	switch (nr) {
#ifdef NR_link
	case NR_link:
#endif
	case NR_linkat:
		return ret == -EXDEV ? FILE_OP_LINK : 0;
#ifdef NR_rename
	case NR_rename:
#endif
	case NR_renameat:
	case NR_renameat2:
		return ret == -EXDEV || ret == -EBUSY ? FILE_OP_RENAME : 0;
#ifdef NR_unlink
	case NR_unlink:
#endif
	case NR_unlinkat:
		return ret == -EBUSY ? FILE_OP_UNLINK : 0;
#ifdef NR_rmdir
	case NR_rmdir:
		return ret == -EBUSY ? FILE_OP_RMDIR : 0;
#endif
	case NR_connect:
		return ret == -ENOENT ? FILE_OP_UNIX_CONNECT : 0;
	}
	return 0;
}

/* fd_file is the file at fd of the current task, or NULL. */
static __always_inline struct file *fd_file(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file *f = NULL;

	if (!fdt || fd < 0 || fd >= (int)BPF_CORE_READ(fdt, max_fds))
		return NULL;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

/* fd_name copies the last name of the file at fd of the current task into
 * buf ("memfd:NAME" for a memfd); it leaves buf empty when there is none. */
static __always_inline void fd_name(int fd, char *buf)
{
	struct file *f = fd_file(fd);
	if (!f)
		return;
	const unsigned char *name = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	bpf_probe_read_kernel_str(buf, PATH_LEN, name);
}

#define LEARN_PATH_DEPTH 16
#define LEARN_MOUNT_HOPS 4
#define LEARN_NAME_MAX 64
#define AT_FDCWD -100

/*
 * learn_path_of writes the path of the dentry d on the mount mnt as the
 * current task sees it (from its root) into out (LEARN_OBJECT_LEN bytes,
 * zeroed) and returns its length (0: the task's root itself): what d_path
 * does, which tracepoints may not call. It climbs out of at most
 * LEARN_MOUNT_HOPS mounts below the root's (a tmpfs on /tmp, a volume), at
 * most LEARN_PATH_DEPTH components of at most LEARN_NAME_MAX - 1 bytes; a
 * path beyond that, or outside the task's root: -1.
 */
static __noinline int learn_path_of(struct dentry *d, struct vfsmount *mnt, char *out)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dentry *root = BPF_CORE_READ(task, fs, root.dentry);
	struct vfsmount *rootmnt = BPF_CORE_READ(task, fs, root.mnt);
	struct dentry *parts[LEARN_PATH_DEPTH] = {};
	__u64 mnt_off = bpf_core_field_offset(struct mount, mnt);
	int n = 0, hops = 0;

	if (!out)
		return -1;
	for (int i = 0; i < LEARN_PATH_DEPTH + LEARN_MOUNT_HOPS; i++) {
		if (d == root && mnt == rootmnt)
			break;
		if (d == BPF_CORE_READ(mnt, mnt_root)) {
			/* The top of a mount: go on from where it is mounted. */
			struct mount *m = (struct mount *)((void *)mnt - mnt_off);
			struct mount *parent = BPF_CORE_READ(m, mnt_parent);
			if (parent == m || ++hops > LEARN_MOUNT_HOPS)
				return -1;
			d = BPF_CORE_READ(m, mnt_mountpoint);
			mnt = (struct vfsmount *)((void *)parent + mnt_off);
			continue;
		}
		if (n >= LEARN_PATH_DEPTH)
			return -1;
		parts[n & (LEARN_PATH_DEPTH - 1)] = d;
		n++;
		d = BPF_CORE_READ(d, d_parent);
	}
	if (d != root || mnt != rootmnt)
		return -1;
	__u32 off = 0;
	for (int i = LEARN_PATH_DEPTH - 1; i >= 0; i--) {
		if (i >= n)
			continue;
		if (off > LEARN_OBJECT_LEN - LEARN_NAME_MAX - 1)
			return -1;
		out[off & (LEARN_OBJECT_LEN - 1)] = '/';
		off++;
		const unsigned char *name = BPF_CORE_READ(parts[i], d_name.name);
		long r = bpf_probe_read_kernel_str(out + (off & (LEARN_OBJECT_LEN - LEARN_NAME_MAX - 1)), LEARN_NAME_MAX, name);
		if (r <= 1)
			return -1;
		off += r - 1;
	}
	return off;
}

/* learn_file_path writes the path of file into out (learn_path_of); false
 * when it has none there. */
static __always_inline bool learn_file_path(struct file *file, char *out)
{
	return learn_path_of(BPF_CORE_READ(file, f_path.dentry), BPF_CORE_READ(file, f_path.mnt), out) > 0;
}

/* dir_path writes the path of dirfd's directory (AT_FDCWD: the working
 * directory) into out (learn_path_of) and returns its length, or -1. */
static __always_inline int dir_path(int dirfd, char *out)
{
	struct dentry *d;
	struct vfsmount *mnt;

	if (dirfd == AT_FDCWD) {
		struct task_struct *task = bpf_get_current_task_btf();
		d = BPF_CORE_READ(task, fs, pwd.dentry);
		mnt = BPF_CORE_READ(task, fs, pwd.mnt);
	} else {
		struct file *f = fd_file(dirfd);
		if (!f)
			return -1;
		d = BPF_CORE_READ(f, f_path.dentry);
		mnt = BPF_CORE_READ(f, f_path.mnt);
	}
	return learn_path_of(d, mnt, out);
}

/*
 * observe_path writes the path at upath (user memory) into learn_scratch's
 * object, absolute: a relative path is resolved against dirfd (AT_FDCWD:
 * the working directory) from the task's root, for what a learning zone
 * records (learn_user_path_at). It returns the path's length, or 0 when it
 * cannot say which path it is: a relative path whose directory has no path
 * here (learn_path_of), or a path that does not fit (a truncated path could
 * name another file). A global function: the verifier checks it once, not
 * at each of its calls, which keeps the observer within what older
 * verifiers (Linux 6.1) accept.
 */
__noinline int observe_path(int dirfd, unsigned long upath)
{
	__u32 zero = 0;
	struct learn_key *s = bpf_map_lookup_elem(&learn_scratch, &zero);
	char c = 0;
	long r;

	if (!s || !upath || bpf_probe_read_user(&c, 1, (void *)upath) || c == 0)
		return 0;
	if (c == '/') {
		r = bpf_probe_read_user_str(s->object, LEARN_OBJECT_LEN, (void *)upath);
		return r > 1 && r < LEARN_OBJECT_LEN ? r - 1 : 0;
	}
	int off = dir_path(dirfd, s->object);
	if (off < 0 || off >= LEARN_OBJECT_LEN / 2 - 1)
		return 0;
	s->object[off & (LEARN_OBJECT_LEN / 2 - 1)] = '/';
	off++;
	r = bpf_probe_read_user_str(s->object + (off & (LEARN_OBJECT_LEN / 2 - 1)), LEARN_OBJECT_LEN / 2, (void *)upath);
	if (r <= 1 || r >= LEARN_OBJECT_LEN / 2)
		return 0;
	return off + r - 1;
}

/* The paths of a mount error are built here (8 KiB, not on the 512-byte
 * stack), then copied into its event. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct long_paths);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} mount_err_paths SEC(".maps");

/*
 * observe_long_path writes the path at upath into mount_err_paths (slot 0:
 * path, 1: new_path), absolute as observe_path makes it, and returns its
 * length, or 0 when it cannot say which path it is. Every absolute path a
 * syscall takes fits (LONG_PATH_LEN is PATH_MAX); a relative one does when
 * its directory's path fits learn_path_of and the name fits after it. A
 * global function, as observe_path.
 */
__noinline int observe_long_path(int dirfd, unsigned long upath, int slot)
{
	__u32 zero = 0;
	struct long_paths *lp = bpf_map_lookup_elem(&mount_err_paths, &zero);
	struct learn_key *s = bpf_map_lookup_elem(&learn_scratch, &zero);
	char c = 0;
	long r;

	if (!lp || !s || !upath || bpf_probe_read_user(&c, 1, (void *)upath) || c == 0)
		return 0;
	char *out = slot ? lp->new_path : lp->path;
	if (c == '/') {
		r = bpf_probe_read_user_str(out, LONG_PATH_LEN, (void *)upath);
		return r > 1 ? r - 1 : 0;
	}
	int off = dir_path(dirfd, s->object);
	if (off < 0 || off >= LEARN_OBJECT_LEN - 1)
		return 0;
	if (bpf_probe_read_kernel(out, LEARN_OBJECT_LEN, s->object))
		return 0;
	out[off & (LEARN_OBJECT_LEN - 1)] = '/';
	off++;
	r = bpf_probe_read_user_str(out + (off & (LEARN_OBJECT_LEN - 1)), LONG_PATH_LEN - LEARN_OBJECT_LEN, (void *)upath);
	if (r <= 1 || r >= LONG_PATH_LEN - LEARN_OBJECT_LEN)
		return 0;
	return off + r - 1;
}

/*
 * learn_user_path_at records a path in user memory that a syscall resolved
 * against dirfd (AT_FDCWD: the working directory), as a policy names it:
 * absolute (observe_path), which is what `cd /var/lib/app && touch x` and
 * mkdir -p's mkdirat(parent, "x") need. A relative path whose directory
 * has no path here (too deep, outside the root) or that leaves too little
 * room is recorded as passed: zone suggest reports it as unresolved.
 */
static __noinline void learn_user_path_at(__u32 zone, __u16 kind, int dirfd, const char *path)
{
	struct learn_key *key = learn_key_new(zone, kind);

	if (!key)
		return;
	/* observe_path writes into learn_scratch, which key is. */
	if (observe_path(dirfd, (unsigned long)path) > 0) {
		learn_record(key);
		return;
	}
	__builtin_memset(key->object, 0, sizeof(key->object));
	if (bpf_probe_read_user_str(key->object, sizeof(key->object), path) > 1)
		learn_record(key);
}

#define O_ACCMODE 03
#define O_CREAT 0100
#define O_TRUNC 01000
#define O_PATH 010000000

/* learn_open records a path opened, as read or write by its flags. */
static __always_inline void learn_open(__u32 zone, int dirfd, const void *path, __u64 flags)
{
	if (flags & O_PATH)
		return; /* a handle for *at calls: what they do is recorded itself */
	bool write = (flags & O_ACCMODE) || (flags & (O_CREAT | O_TRUNC));
	learn_user_path_at(zone, write ? LEARN_WRITE : LEARN_READ, dirfd, path);
}

#define PTRACE_ATTACH 16
#define PTRACE_SEIZE 0x4206

/*
 * learn_tracee records the zone of the task the current one attached to
 * last (outside its own zone): ptrace_link adds a new tracee at the head of
 * the tracer's ptraced list, and sys_exit runs in the tracer before it can
 * attach again. The pid passed is of the tracer's pid namespace, which no
 * helper resolves on every kernel; the list holds the task itself.
 */
static __always_inline void learn_tracee(__u32 zone)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct list_head *first = BPF_CORE_READ(cur, ptraced.next);

	if (!first || (void *)first == (void *)&cur->ptraced)
		return;
	struct task_struct *t = (void *)first - bpf_core_field_offset(struct task_struct, ptrace_entry);
	__u32 target = task_zone(t);
	if (target != zone)
		learn_u32(zone, LEARN_PTRACE, target);
}

/*
 * learn_sys_exit records what a syscall of an armed process of a learning
 * zone did: the syscalls its base policy denies (whatever they returned),
 * and the files it opened or whose names or metadata it changed (when the
 * syscall succeeded), and the zone of a task it attached to with ptrace.
 * Paths are recorded absolute (learn_user_path_at).
 */
static __always_inline void learn_sys_exit(struct pt_regs *regs, long ret)
{
	__u32 zone = learning_zone();
	if (!zone || compat_syscall(regs))
		return;
	long nr = syscall_nr(regs);
	if (nr >= 0 && nr < LEARN_SYSCALL_WORDS * 64) {
		struct learn_syscall_set *ls = bpf_map_lookup_elem(&learn_syscalls, &zone);
		if (ls && (ls->bits[(nr / 64) & (LEARN_SYSCALL_WORDS - 1)] >> (nr % 64)) & 1)
			learn_u32(zone, LEARN_SYSCALL, nr);
	}
	if (ret < 0)
		return;
	unsigned long a[3];
	syscall_args(regs, a);
	switch (metadata_syscall(nr)) {
	case 1:
		learn_user_path_at(zone, LEARN_WRITE, AT_FDCWD, (void *)a[0]);
		return;
	case 2:
		learn_user_path_at(zone, LEARN_WRITE, (int)a[0], (void *)a[1]);
		return;
	}
	switch (nr) {
	case NR_ptrace:
		if (a[0] == PTRACE_ATTACH || a[0] == PTRACE_SEIZE)
			learn_tracee(zone);
		break;
#ifdef NR_open
	case NR_open:
		learn_open(zone, AT_FDCWD, (void *)a[0], a[1]);
		break;
	case NR_creat:
	case NR_mkdir:
	case NR_rmdir:
	case NR_unlink:
	case NR_mknod:
		learn_user_path_at(zone, LEARN_WRITE, AT_FDCWD, (void *)a[0]);
		break;
	case NR_rename:
	case NR_symlink:
		learn_user_path_at(zone, LEARN_WRITE, AT_FDCWD, (void *)a[1]);
		if (nr == NR_rename)
			learn_user_path_at(zone, LEARN_WRITE, AT_FDCWD, (void *)a[0]);
		break;
#endif
	case NR_truncate:
		learn_user_path_at(zone, LEARN_WRITE, AT_FDCWD, (void *)a[0]);
		break;
	case NR_openat:
		learn_open(zone, (int)a[0], (void *)a[1], a[2]);
		break;
	case NR_openat2: {
		__u64 flags = 0; /* struct open_how starts with the flags */
		bpf_probe_read_user(&flags, sizeof(flags), (void *)a[2]);
		learn_open(zone, (int)a[0], (void *)a[1], flags);
		break;
	}
	case NR_mkdirat:
	case NR_mknodat:
	case NR_unlinkat:
		learn_user_path_at(zone, LEARN_WRITE, (int)a[0], (void *)a[1]);
		break;
	case NR_symlinkat:
		learn_user_path_at(zone, LEARN_WRITE, (int)a[1], (void *)a[2]);
		break;
	case NR_renameat:
	case NR_renameat2:
		learn_user_path_at(zone, LEARN_WRITE, (int)a[0], (void *)a[1]);
		learn_user_path_at(zone, LEARN_WRITE, (int)a[2], (void *)syscall_arg4(regs));
		break;
	}
}

/*
 * observe_mount_error reports a syscall of a zone task that failed with an
 * error of mount_error (op), when the zone's file rules are mounts: the
 * path or paths it named, made absolute (observe_long_path), for the engine
 * to match against the zone's deny and read_only paths. Paths that do not
 * fit in event.path are sent after it (struct long_event).
 */
static __noinline void observe_mount_error(struct pt_regs *regs, long nr, long ret, int op)
{
	__u32 zone = current_zone();
	struct policy *p = zone ? bpf_map_lookup_elem(&zone_policy, &zone) : NULL;
	__u32 zero = 0;

	if (!p || !(p->flags & POLICY_FILE_MOUNTS) || compat_syscall(regs))
		return;
	struct counters *c = counters_of(zone);
	if (c)
		c->observed[CONTROL_FILE]++;
	unsigned long a[3];
	syscall_args(regs, a);
	int n = 0, n2 = 0;
	switch (nr) {
#ifdef NR_link
	case NR_link:
	case NR_rename:
		n = observe_long_path(AT_FDCWD, a[0], 0);
		n2 = observe_long_path(AT_FDCWD, a[1], 1);
		break;
	case NR_unlink:
	case NR_rmdir:
		n = observe_long_path(AT_FDCWD, a[0], 0);
		break;
#endif
	case NR_linkat:
	case NR_renameat:
	case NR_renameat2:
		n = observe_long_path((int)a[0], a[1], 0);
		n2 = observe_long_path((int)a[2], syscall_arg4(regs), 1);
		break;
	case NR_unlinkat:
		if (a[2] & AT_REMOVEDIR)
			op = FILE_OP_RMDIR;
		n = observe_long_path((int)a[0], a[1], 0);
		break;
	case NR_connect: {
		/* struct sockaddr_un: the family, then the path (an abstract
		 * name starts with a NUL: no path, and no mount in the way). */
		__u16 family = 0;
		if (a[2] > 2 && bpf_probe_read_user(&family, sizeof(family), (void *)a[1]) == 0 && family == AF_UNIX)
			n = observe_long_path(AT_FDCWD, a[1] + 2, 0);
		break;
	}
	}
	struct long_paths *lp = bpf_map_lookup_elem(&mount_err_paths, &zero);
	if (!lp)
		return;
	struct event *e;
	bool two = op == FILE_OP_LINK || op == FILE_OP_RENAME;
	if (two ? n < PATH_LEN / 2 && n2 < PATH_LEN / 2 : n < PATH_LEN) {
		e = event_new(zone, c, CONTROL_FILE, HOOK_SYS_EXIT, VERDICT_OBSERVED, ret);
		if (!e)
			return;
		if (n > 0)
			bpf_probe_read_kernel_str(e->path, two ? PATH_LEN / 2 : PATH_LEN, lp->path);
		if (n2 > 0)
			bpf_probe_read_kernel_str(e->path + PATH_LEN / 2, PATH_LEN / 2, lp->new_path);
	} else {
		e = event_new_size(zone, c, CONTROL_FILE, HOOK_SYS_EXIT, VERDICT_OBSERVED, ret, sizeof(struct long_event));
		if (!e)
			return;
		struct long_event *le = (struct long_event *)e;
		le->p.path[0] = 0;
		le->p.new_path[0] = 0;
		if (n > 0)
			bpf_probe_read_kernel_str(le->p.path, LONG_PATH_LEN, lp->path);
		if (n2 > 0)
			bpf_probe_read_kernel_str(le->p.new_path, LONG_PATH_LEN, lp->new_path);
	}
	e->syscall = nr;
	e->arg = op;
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(observe_sys_exit, struct pt_regs *regs, long ret)
{
	learn_sys_exit(regs, ret);
	if (!observed_errno(ret))
		return 0;
	if (ret != -EACCES && ret != -EPERM && ret != -EROFS) {
		long nr = syscall_nr(regs);
		int op = mount_error(nr, ret);
		if (op)
			observe_mount_error(regs, nr, ret, op);
		return 0;
	}

	__u32 zone = current_zone();
	if (!zone)
		return 0;

	if (compat_syscall(regs))
		return 0;

	long nr = syscall_nr(regs);
	int control = observed_control(nr, ret);
	if (control < 0 || control >= NUM_CONTROLS)
		return 0;
	unsigned long a[3];
	syscall_args(regs, a);
	unsigned long a0 = a[0], a1 = a[1], a2 = a[2];
	/* mmap and mprotect count only when they asked for PROT_EXEC. */
	if ((nr == NR_mmap || nr == NR_mprotect) && !(a2 & PROT_EXEC))
		return 0;

	struct counters *c = counters_of(zone);
	if (c)
		c->observed[control]++;

	struct event *e = event_new(zone, c, control, HOOK_SYS_EXIT, VERDICT_OBSERVED, ret);
	if (!e)
		return 0;
	e->syscall = nr;

	int path_arg = metadata_syscall(nr);
	if (!path_arg)
		path_arg = name_syscall(nr);
	switch (path_arg) {
	case 1:
		bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)a0);
		break;
	case 2:
		bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)a1);
		break;
	case 4:
		bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)a2);
		break;
	case 5:
		fd_name((int)a0, e->path);
		break;
	}
	switch (nr) {
#ifdef NR_open
	case NR_open:
#endif
	case NR_execve:
		bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)a0);
		break;
	case NR_openat:
	case NR_openat2:
		bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)a1);
		break;
	case NR_execveat:
		/* fexecve passes an empty path: name the fd's file instead. */
		if (bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)a1) <= 1) {
			e->arg = a0;
			fd_name((int)a0, e->path);
		}
		break;
	case NR_mmap:
		e->arg = syscall_arg5(regs);
		fd_name((int)e->arg, e->path);
		break;
	case NR_mprotect:
		e->arg = a0;
		break;
	case NR_memfd_create:
		bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)a0);
		break;
	case NR_kill:
	case NR_tkill:
	case NR_rt_sigqueueinfo:
		e->target_pid = (__s32)a0;
		e->arg = a1;
		break;
	case NR_tgkill:
	case NR_rt_tgsigqueueinfo:
		e->target_pid = (__s32)a1;
		e->arg = a2;
		break;
	case NR_pidfd_send_signal:
		/* The target is a pidfd (or a /proc/PID directory): its name. */
		e->arg = a1;
		fd_name((int)a0, e->path);
		break;
	case NR_ptrace:
		e->target_pid = (__s32)a1;
		e->arg = a0;
		break;
	case NR_bpf:
		e->arg = a0; /* the bpf command */
		break;
	case NR_connect: {
		/* sockaddr_in is 16 bytes: read what every family has first. */
		struct sockaddr_in6_min sa = {};
		if (bpf_probe_read_user(&sa, 8, (void *)a1))
			break;
		e->family = sa.family;
		e->port = bpf_ntohs(sa.port);
		if (sa.family == AF_INET)
			__builtin_memcpy(e->addr, &sa.flowinfo, 4); /* sin_addr sits where sin6_flowinfo is */
		else if (sa.family == AF_INET6 && a2 >= sizeof(sa) &&
			 bpf_probe_read_user(&sa, sizeof(sa), (void *)a1) == 0)
			__builtin_memcpy(e->addr, sa.addr, 16);
		break;
	}
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* learn_vma_file is bpf_find_vma's callback: the file of the mapping. */
static long learn_vma_file(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	*(struct file **)data = BPF_CORE_READ(vma, vm_file);
	return 0;
}

/* learn_exec_file records file as executed, by its path, in key (an exec
 * key of the learning zone, reused). */
static __always_inline void learn_exec_file(struct learn_key *key, struct file *file)
{
	__builtin_memset(key->object, 0, sizeof(key->object));
	if (learn_file_path(file, key->object))
		learn_record(key);
}

/* An armed process's exec is recorded; a member of a learning zone is
 * armed by its first exec in the container's mount namespace (learn.bpf.h). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(learn_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	if (!learn_on())
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 zone = 0;
	__u32 *armed = bpf_map_lookup_elem(&learn_tasks, &tgid);
	if (armed) {
		zone = *armed;
	} else {
		__u64 member;
		zone = current_member(&member);
		__u64 *mnt = zone ? bpf_map_lookup_elem(&learn_members, &member) : NULL;
		if (!mnt || BPF_CORE_READ(p, nsproxy, mnt_ns, ns.inum) != *mnt)
			return 0;
		bpf_map_update_elem(&learn_tasks, &tgid, &zone, BPF_ANY);
	}
	if (!zone_learns(zone))
		return 0;
	struct learn_key *key = learn_key_new(zone, LEARN_EXEC);
	if (!key)
		return 0;
	/*
	 * The file that runs, by its path: what exec rules judge (a rule names
	 * a path and applies to the file it resolves to), whatever name led to
	 * it (a symlink such as /usr/bin/nc to busybox, /proc/self/exe, a
	 * descriptor). A script's file is gone by now (bprm->file is its
	 * interpreter's, and bprm->interp no longer the name passed): it is
	 * recorded by that name, and its interpreter by path. A file without a
	 * path here (learn_path_of): the name passed.
	 */
	struct file *file = BPF_CORE_READ(bprm, file);
	bool script = BPF_CORE_READ(bprm, interp) != BPF_CORE_READ(bprm, filename);
	if (script || !learn_file_path(file, key->object)) {
		__builtin_memset(key->object, 0, sizeof(key->object));
		if (bpf_probe_read_kernel_str(key->object, sizeof(key->object), BPF_CORE_READ(bprm, filename)) <= 1)
			return 0;
	}
	learn_record(key);

	/* The kernel also runs, and Landlock judges as executed, a script's
	 * interpreter and an ELF program's dynamic loader, which it maps and
	 * starts the program in: the mapping the new instruction pointer lies
	 * in. */
	if (script)
		learn_exec_file(key, file);
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct file *entry = NULL;
	if (bpf_find_vma(task, user_ip(regs), learn_vma_file, &entry, 0) == 0 && entry && entry != file)
		learn_exec_file(key, entry);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(learn_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!learn_on())
		return 0;
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	if (ptgid == ctgid)
		return 0; /* a thread: the process is armed or not as a whole */
	__u32 *zone = bpf_map_lookup_elem(&learn_tasks, &ptgid);
	if (zone)
		bpf_map_update_elem(&learn_tasks, &ctgid, zone, BPF_ANY);
	return 0;
}

/* The last thread of an armed process is gone: forget it (a pid that comes
 * back must not be armed). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(learn_exit, struct task_struct *p)
{
	if (!learn_on())
		return 0;
	__u32 tgid = BPF_CORE_READ(p, tgid);
	if (BPF_CORE_READ(p, signal, live.counter) == 0)
		bpf_map_delete_elem(&learn_tasks, &tgid);
	return 0;
}

#define SI_FROMKERNEL_MIN 1 /* si_code > 0: sent by the kernel (SIGCHLD, SIGSEGV, ...) */

/* Signals an armed process sends to tasks outside its zone (after every
 * permission check: only signals that are delivered). */
SEC("tp_btf/signal_generate")
int BPF_PROG(learn_signal, int sig, struct kernel_siginfo *info, struct task_struct *task)
{
	__u32 zone = learning_zone();
	if (!zone)
		return 0;
	/* SEND_SIG_NOINFO (0) is a user's kill(); SEND_SIG_PRIV (1) the kernel's. */
	__u64 raw = 0;
	bpf_probe_read_kernel(&raw, sizeof(raw), &ctx[1]);
	if (raw == 1)
		return 0;
	if (raw > 1) {
		int code = 0;
		bpf_probe_read_kernel(&code, sizeof(code), &info->si_code);
		if (code >= SI_FROMKERNEL_MIN)
			return 0;
	}
	__u32 target = task_zone(task);
	if (target != zone)
		learn_u32(zone, LEARN_SIGNAL, target);
	return 0;
}

/*
 * Capabilities an armed process was granted, on the fallback (bpf-lsm
 * records them in lsm/capable). The tracepoint exists from Linux 6.14: the
 * loader leaves the program out where the kernel lacks it. It fires after
 * the capability was computed, for every check of the host, so the loader
 * attaches it only while some zone learns. Unlike lsm/capable it cannot
 * tell a CAP_OPT_NOAUDIT probe from a check the process needed (the only
 * frequent one, CAP_SYS_ADMIN when memory is committed, succeeds only for
 * tasks that hold CAP_SYS_ADMIN); checks that failed are not recorded.
 */
SEC("tp_btf/cap_capable")
int BPF_PROG(learn_capable, const struct cred *cred, struct user_namespace *target_ns,
	     const struct user_namespace *capable_ns, int cap, int ret)
{
	if (ret || cap < 0 || cap > 63)
		return 0;
	__u32 zone = learning_zone();
	if (zone)
		learn_u32(zone, LEARN_CAPABILITY, cap);
	return 0;
}

#endif /* RAUHA_OBSERVER_BPF_H */
