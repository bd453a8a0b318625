/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Signals a file sends to its owner (bpf-lsm backend): SIGIO, or any signal
 * chosen with F_SETSIG, when I/O is possible on a file with O_ASYNC, and
 * SIGURG when TCP urgent data arrives on a socket. The owner is set with
 * fcntl(F_SETOWN, F_SETOWN_EX) or ioctl(FIOSETOWN, SIOCSPGRP); the signal
 * is sent later by whatever task or softirq makes the I/O happen, and never
 * passes task_kill: file_send_sigiotask judges it, for each task it would
 * reach (a process group is judged task by task).
 *
 * The sender is the task that set the owner, not current, so
 * file_set_fowner records who that was: sigio_owners maps the file to the
 * setter's zone and identity while a zone task's setting stands. A host
 * task's setting removes the record (the host may signal anyone), and the
 * file's release removes it for good. file_set_fowner cannot refuse
 * anything, so the record must never be missing: the fcntl and ioctl that
 * set an owner reserve it first, and a zone task whose record finds the map
 * full is refused there (EPERM, an event) instead of owning a file nobody
 * judges. The other ways to set an owner (dnotify, leases, a tun device's
 * fasync) name the setter's own process, and signals to one's own process
 * are never cross-zone.
 *
 * Kernels that call file_set_fowner after the owner is set (6.12, and
 * 6.1.112-era stable kernels onwards with "fs: Fix file_set_fowner LSM hook
 * inconsistencies") call it only when the owner changes. Older ones call it
 * before, also when a dnotify or lease leaves an existing owner in place:
 * there a later host dnotify or lease on a zone's file removes its record.
 */
#ifndef RAUHA_SIGIO_BPF_H
#define RAUHA_SIGIO_BPF_H

#include "common.bpf.h"

#define F_SETOWN 8
#define F_SETOWN_EX 15
#define FIOSETOWN 0x8901
#define SIOCSPGRP 0x8902
#define SIGIO 29

/* Who set a file's owner: the event of a denied signal names this task. */
struct sigio_owner {
	__u64 cgid;
	__u32 zone;
	__u32 pid;
	__u32 tgid;
	__u32 uid;
	char comm[COMM_LEN];
};

/* struct file address -> the zone task that set its owner. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct sigio_owner);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sigio_owners SEC(".maps");

/* ctx_slot reads argument i of an LSM hook as a number: the map key is the
 * file's address, never a pointer the verifier would track. */
static __always_inline __u64 ctx_slot(unsigned long long *ctx, int i)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &ctx[i]);
	return v;
}

/* Before 6.12 the fown_struct is inside struct file; since then the file
 * points to it and it points back. */
struct file___fown_embedded {
	struct fown_struct f_owner;
} __attribute__((preserve_access_index));

static __always_inline void sigio_owner_fill(struct sigio_owner *o, __u32 zone)
{
	__u64 id = bpf_get_current_pid_tgid();

	o->zone = zone;
	o->cgid = bpf_get_current_cgroup_id();
	o->pid = (__u32)id;
	o->tgid = id >> 32;
	o->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(o->comm, sizeof(o->comm));
}

/* sigio_record: current, a task of zone, sets file's owner. Returns false
 * when the map has no room for a new record. */
static __always_inline bool sigio_record(__u64 key, __u32 zone)
{
	struct sigio_owner *o = bpf_map_lookup_elem(&sigio_owners, &key);

	if (o) {
		sigio_owner_fill(o, zone);
		return true;
	}
	struct sigio_owner n = {};
	sigio_owner_fill(&n, zone);
	return bpf_map_update_elem(&sigio_owners, &key, &n, BPF_NOEXIST) == 0 ||
	       bpf_map_lookup_elem(&sigio_owners, &key) != NULL;
}

static __always_inline void sigio_forget(__u64 key)
{
	/* The lookup is lock-free; most files never had a record. */
	if (bpf_map_lookup_elem(&sigio_owners, &key))
		bpf_map_delete_elem(&sigio_owners, &key);
}

/* sigio_reserve: the fcntl/ioctl that is about to set file's owner. */
static __always_inline int sigio_reserve(__u64 file, __u16 hook)
{
	__u32 zone = current_zone();

	if (!zone || sigio_record(file, zone))
		return 0;

	struct counters *c = counters_of(zone);
	struct policy p;
	struct event *e;
	load_policy(zone, &p);
	count_check(c, CONTROL_SIGNAL);
	int ret = deny(zone, &p, c, CONTROL_SIGNAL, hook, EPERM, &e);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return ret;
}

SEC("lsm/file_fcntl")
int BPF_PROG(zone_file_fcntl, struct file *file, unsigned int cmd, unsigned long arg, int ret)
{
	if (ret)
		return ret;
	if (cmd != F_SETOWN && cmd != F_SETOWN_EX)
		return 0;
	return sigio_reserve(ctx_slot(ctx, 0), HOOK_LSM_FILE_FCNTL);
}

SEC("lsm/file_ioctl")
int BPF_PROG(zone_file_ioctl_owner, struct file *file, unsigned int cmd, unsigned long arg, int ret)
{
	if (ret)
		return ret;
	if (cmd != FIOSETOWN && cmd != SIOCSPGRP)
		return 0;
	return sigio_reserve(ctx_slot(ctx, 0), HOOK_LSM_FILE_IOCTL);
}

SEC("lsm/file_set_fowner")
int BPF_PROG(zone_file_set_fowner, struct file *file)
{
	__u32 zone = current_zone();

	if (zone)
		sigio_record(ctx_slot(ctx, 0), zone); /* reserved by the fcntl/ioctl, or the setter's own process */
	else
		sigio_forget(ctx_slot(ctx, 0));
	return 0;
}

SEC("lsm/file_free_security")
int BPF_PROG(zone_file_free, struct file *file)
{
	sigio_forget(ctx_slot(ctx, 0));
	return 0;
}

SEC("lsm/file_send_sigiotask")
int BPF_PROG(zone_file_send_sigiotask, struct task_struct *tsk, struct fown_struct *fown, int sig,
	     int ret)
{
	if (ret)
		return ret;

	__u64 key;
	if (bpf_core_field_exists(fown->file))
		key = (__u64)BPF_CORE_READ(fown, file);
	else
		key = ctx_slot(ctx, 1) - bpf_core_field_offset(struct file___fown_embedded, f_owner);
	struct sigio_owner *o = bpf_map_lookup_elem(&sigio_owners, &key);
	if (!o)
		return 0; /* set by the host, or by no one */

	__u32 zone = o->zone;
	if (!zone)
		return 0;
	__u32 target_tgid = BPF_CORE_READ(tsk, tgid);
	if (target_tgid == o->tgid)
		return 0; /* the setter's own process */

	struct counters *c = counters_of(zone);
	struct policy p;
	count_check(c, CONTROL_SIGNAL);
	load_policy(zone, &p);
	__u32 tz = task_zone(tsk);
	if (cross_zone_allowed(zone, &p, tz, PEER_SIGNAL, POLICY_DENY_SIGNAL))
		return 0;

	/* Not deny(): the event names the task that set the owner, which
	 * is not current (current made the I/O happen, or is a softirq). */
	ret = (p.flags & POLICY_AUDIT) ? 0 : -EPERM;
	if (c)
		c->denies[CONTROL_SIGNAL]++;
	struct event *e = event_reserve(zone, c, CONTROL_SIGNAL, HOOK_LSM_FILE_SEND_SIGIOTASK,
					ret ? VERDICT_DENIED : VERDICT_AUDITED, ret);
	if (e) {
		e->cgid = o->cgid;
		e->pid = o->pid;
		e->tgid = o->tgid;
		e->uid = o->uid;
		__builtin_memcpy(e->comm, o->comm, sizeof(e->comm));
		e->target_zone = tz;
		e->target_pid = target_tgid;
		e->arg = sig ? sig : SIGIO;
		bpf_ringbuf_submit(e, 0);
	}
	return ret;
}

#endif /* RAUHA_SIGIO_BPF_H */
