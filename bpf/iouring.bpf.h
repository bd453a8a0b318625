/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * io_uring observer. A zone task can open, rename, unlink, link and change
 * files through io_uring requests instead of syscalls. Landlock and the LSM
 * hooks judge those requests as they judge the syscalls (the request runs
 * the same VFS code in the task, one of its io-wq worker threads or its
 * SQPOLL thread, all in its cgroup), but a denial comes back as the result
 * of a completion, not as a failed syscall: the sys_exit observer never
 * sees it. These programs report completions of zone tasks whose result is
 * -EACCES, -EPERM or -EROFS, as that observer does for syscalls.
 *
 * The path a request names is copied into the kernel at submission and
 * freed before its completion, so it is read at submission
 * (io_uring_submit_req, called io_uring_submit_sqe in 6.1: the loader
 * attaches the one the kernel has) and kept by request until the
 * completion (iouring_paths). Only the path opcodes of zone tasks are kept;
 * a completion costs a read of its opcode and result, and for a path
 * opcode the deletion of its entry (a hash lookup when there is none). An
 * fd request (ftruncate, fsetxattr) is named by its file's path.
 */
#ifndef RAUHA_IOURING_BPF_H
#define RAUHA_IOURING_BPF_H

#include "common.bpf.h"
#include "observer.bpf.h"

/* The path a request named, by request, from submission to completion.
 * Two-path requests (rename, link) keep the old path in the first half and
 * the new one in the second. An LRU: a request whose completion is never
 * posted (IOSQE_CQE_SKIP_SUCCESS) leaves an entry the next ones push out. */
struct iouring_path {
	char path[PATH_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct iouring_path);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} iouring_paths SEC(".maps");

static __always_inline bool iouring_path_op(__u8 op)
{
	switch (op) {
	case IORING_OP_OPENAT:
	case IORING_OP_OPENAT2:
	case IORING_OP_RENAMEAT:
	case IORING_OP_UNLINKAT:
	case IORING_OP_MKDIRAT:
	case IORING_OP_SYMLINKAT:
	case IORING_OP_LINKAT:
	case IORING_OP_SETXATTR:
		return true;
	}
	return false;
}

/* iouring_control is the control a denied request counts for, or -1. */
static __always_inline int iouring_control(__u8 op, int res)
{
	if (iouring_path_op(op) || op == IORING_OP_FSETXATTR || op == IORING_OP_FTRUNCATE)
		return CONTROL_FILE;
	/* EPERM from connect is our own cgroup program, which already emitted
	 * the event; Landlock's TCP denial is EACCES. */
	if (op == IORING_OP_CONNECT && res == -EACCES)
		return CONTROL_EGRESS;
	return -1;
}

/*
 * The path fields of the opcodes' structs in req->cmd are io_uring's own
 * and change between releases: a `struct filename *` up to 6.x, a struct
 * that wraps that pointer in later kernels (Debian's 7.2). A relocation
 * the running kernel cannot resolve would fail the load of every program,
 * so each form is looked for (the ___wrapped flavors match a field of any
 * struct type) and the pointer read at the field's offset; a kernel with
 * neither gets the request reported without its path.
 */
struct rauha_filename_ref {
	struct filename *name;
};
struct io_open___wrapped {
	struct rauha_filename_ref filename;
} __attribute__((preserve_access_index));
struct io_unlink___wrapped {
	struct rauha_filename_ref filename;
} __attribute__((preserve_access_index));
struct io_mkdir___wrapped {
	struct rauha_filename_ref filename;
} __attribute__((preserve_access_index));
struct io_xattr___wrapped {
	struct rauha_filename_ref filename;
} __attribute__((preserve_access_index));
struct io_link___wrapped {
	struct rauha_filename_ref oldpath;
	struct rauha_filename_ref newpath;
} __attribute__((preserve_access_index));
struct io_rename___wrapped {
	struct rauha_filename_ref oldpath;
	struct rauha_filename_ref newpath;
} __attribute__((preserve_access_index));

/* iouring_name is the struct filename pointer at offset off of cmd, or
 * NULL for off < 0. */
static __always_inline struct filename *iouring_name(void *cmd, long off)
{
	struct filename *f = NULL;
	if (off >= 0)
		bpf_probe_read_kernel(&f, sizeof(f), cmd + off);
	return f;
}

#define IOURING_NAME(type, field)                                                                     \
	iouring_name(cmd, bpf_core_field_exists(((struct type *)cmd)->field)                              \
				  ? (long)bpf_core_field_offset(((struct type *)cmd)->field)              \
			  : bpf_core_field_exists(((struct type##___wrapped *)cmd)->field) &&             \
					  bpf_core_field_size(((struct type##___wrapped *)cmd)->field) == \
						  sizeof(void *)                                  \
				  ? (long)bpf_core_field_offset(((struct type##___wrapped *)cmd)->field)  \
				  : -1L)

static __always_inline void iouring_submit(struct io_kiocb *req)
{
	__u8 op = BPF_CORE_READ(req, opcode);
	if (!iouring_path_op(op) || !current_zone())
		return;
	/* io_kiocb_to_cmd: each opcode's struct sits in req->cmd. */
	void *cmd = __builtin_preserve_access_index(&req->cmd);
	struct filename *first = NULL, *second = NULL;
	switch (op) {
	case IORING_OP_OPENAT:
	case IORING_OP_OPENAT2:
		first = IOURING_NAME(io_open, filename);
		break;
	case IORING_OP_UNLINKAT:
		first = IOURING_NAME(io_unlink, filename);
		break;
	case IORING_OP_MKDIRAT:
		first = IOURING_NAME(io_mkdir, filename);
		break;
	case IORING_OP_SETXATTR:
		first = IOURING_NAME(io_xattr, filename);
		break;
	case IORING_OP_SYMLINKAT: /* oldpath is the link's content */
		first = IOURING_NAME(io_link, newpath);
		break;
	case IORING_OP_LINKAT:
		first = IOURING_NAME(io_link, oldpath);
		second = IOURING_NAME(io_link, newpath);
		break;
	case IORING_OP_RENAMEAT:
		first = IOURING_NAME(io_rename, oldpath);
		second = IOURING_NAME(io_rename, newpath);
		break;
	}
	if (!first)
		return;
	struct iouring_path p = {};
	if (second) {
		bpf_probe_read_kernel_str(p.path, PATH_LEN / 2, BPF_CORE_READ(first, name));
		bpf_probe_read_kernel_str(p.path + PATH_LEN / 2, PATH_LEN / 2, BPF_CORE_READ(second, name));
	} else {
		bpf_probe_read_kernel_str(p.path, PATH_LEN, BPF_CORE_READ(first, name));
	}
	__u64 key = (__u64)req;
	bpf_map_update_elem(&iouring_paths, &key, &p, BPF_ANY);
}

/* After prep, which copied the paths into the kernel (6.0 and later). */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(observe_io_uring_submit, struct io_kiocb *req)
{
	iouring_submit(req);
	return 0;
}

/* The same tracepoint before its rename (6.1's name; 5.x had other arguments). */
SEC("tp_btf/io_uring_submit_sqe")
int BPF_PROG(observe_io_uring_submit_sqe, struct io_kiocb *req, bool force_nonblock)
{
	iouring_submit(req);
	return 0;
}

/* iouring_complete reports the completion of req with result res when it
 * is a denial of a zone task, and ends what submission kept of it. */
static __always_inline void iouring_complete(struct io_kiocb *req, int res)
{
	__u8 op = BPF_CORE_READ(req, opcode);
	__u64 key = (__u64)req;
	if (res != -EACCES && res != -EPERM && res != -EROFS) {
		if (iouring_path_op(op))
			bpf_map_delete_elem(&iouring_paths, &key);
		return;
	}
	int control = iouring_control(op, res);
	__u32 zone = control >= 0 ? current_zone() : 0;
	if (!zone || control >= NUM_CONTROLS) {
		bpf_map_delete_elem(&iouring_paths, &key);
		return;
	}
	struct counters *c = counters_of(zone);
	if (c)
		c->observed[control]++;
	struct event *e = event_new(zone, c, control, HOOK_IO_URING, VERDICT_OBSERVED, res);
	if (!e) {
		bpf_map_delete_elem(&iouring_paths, &key);
		return;
	}
	e->syscall = op;
	void *cmd = __builtin_preserve_access_index(&req->cmd);
	if (iouring_path_op(op)) {
		struct iouring_path *p = bpf_map_lookup_elem(&iouring_paths, &key);
		if (p)
			__builtin_memcpy(e->path, p->path, sizeof(e->path));
		bpf_map_delete_elem(&iouring_paths, &key);
	} else if (op == IORING_OP_CONNECT) {
		/* The address as passed, in the task's memory (io-wq workers
		 * share it), as the sys_exit observer reads connect's. */
		struct sockaddr_in6_min sa = {};
		void *uaddr = NULL;
		int len = 0;
		if (bpf_core_field_exists(((struct io_connect *)cmd)->addr) &&
		    bpf_core_field_exists(((struct io_connect *)cmd)->addr_len)) {
			uaddr = BPF_CORE_READ((struct io_connect *)cmd, addr);
			len = BPF_CORE_READ((struct io_connect *)cmd, addr_len);
		}
		if (uaddr && bpf_probe_read_user(&sa, 8, uaddr) == 0) {
			e->family = sa.family;
			e->port = bpf_ntohs(sa.port);
			if (sa.family == AF_INET)
				__builtin_memcpy(e->addr, &sa.flowinfo, 4);
			else if (sa.family == AF_INET6 && len >= (int)sizeof(sa) &&
				 bpf_probe_read_user(&sa, sizeof(sa), uaddr) == 0)
				__builtin_memcpy(e->addr, sa.addr, 16);
		}
	} else {
		/* ftruncate, fsetxattr: the request's file is held until it is
		 * freed, after its completion. */
		struct file *f = BPF_CORE_READ(req, file);
		if (f && !learn_file_path(f, e->path))
			__builtin_memset(e->path, 0, sizeof(e->path));
	}
	bpf_ringbuf_submit(e, 0);
}

/*
 * The completion tracepoint changed its arguments: up to 6.12 at least
 * (ctx, req, user_data, res, cflags, extra1, extra2), later (ctx, req,
 * cqe). The loader attaches the program for the kernel's (kernel.go,
 * iouringCompleteArgs).
 */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(observe_io_uring_complete, void *ring, void *req, struct io_uring_cqe *cqe)
{
	iouring_complete(req, BPF_CORE_READ(cqe, res));
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(observe_io_uring_complete_res, void *ring, void *req, u64 user_data, int res)
{
	iouring_complete(req, res);
	return 0;
}

#endif /* RAUHA_IOURING_BPF_H */
