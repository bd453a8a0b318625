/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The bpf-lsm backend. Every hook: an earlier program's non-zero verdict
 * wins, then tasks outside every zone are allowed before anything else.
 *
 * Never NULL-check an LSM hook's pointer argument: verifiers since ~6.12
 * type them as trusted non-NULL and fold the check away together with the
 * code behind it. Where NULL is a real value (task_kill's cred) the raw
 * context slot is read as a scalar.
 */
#ifndef RAUHA_LSM_BPF_H
#define RAUHA_LSM_BPF_H

#include "common.bpf.h"
#include "lsmfile.bpf.h"

#define FMODE_WRITE 0x2
#define CGROUP2_SUPER_MAGIC 0x63677270
#define SOCK_STREAM 1
#define MSG_FASTOPEN 0x20000000
#define CAP_OPT_NOAUDIT (1u << 1)
#define PROT_EXEC 0x4

/* open and exec of an inode in the deny list, by any name or handle
 * (lsmfile.bpf.h). */
static __always_inline int file_denied(__u32 zone, struct file *file, __u32 bit, __u16 control,
				       __u16 hook)
{
	return inode_denied(zone, BPF_CORE_READ(file, f_inode), BPF_CORE_READ(file, f_path.dentry),
			    (__u64)BPF_CORE_READ(file, f_path.mnt), bit, control, hook);
}

/*
 * Cgroup-escape guard: a zone task may open cgroup-v2 files for writing only
 * in cgroups of its own zone (its member's subtree, or another member of the
 * same zone). cgroup.procs/cgroup.threads elsewhere would move it out of the
 * zone's enforcement; cgroup.kill elsewhere signals tasks task_kill never
 * sees; limits elsewhere are another zone's or the host's. Only v2 counts:
 * zone membership is v2 membership.
 *
 * Not inlined: its locals stay off file_open's stack, which holds the file
 * check's struct walk (a program and the functions it calls share 512
 * bytes).
 */
static __noinline int cgroup_escape(__u32 zone, struct file *file)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);

	if (BPF_CORE_READ(inode, i_sb, s_magic) != CGROUP2_SUPER_MAGIC)
		return 0;
	if (!(BPF_CORE_READ(file, f_mode) & FMODE_WRITE))
		return 0;

	/* The file's parent directory is the cgroup; its kernfs node's priv is
	 * the struct cgroup. */
	struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
	struct kernfs_node *kn = BPF_CORE_READ(d, d_parent, d_inode, i_private);
	struct cgroup *cg = BPF_CORE_READ(kn, priv);
	struct counters *c = counters_of(zone);
	count_check(c, CONTROL_CGROUP);
	__u32 target = cgroup_zone(cg);
	if (target == zone)
		return 0;

	struct policy p;
	struct event *e;
	load_policy(zone, &p);
	int ret = deny(zone, &p, c, CONTROL_CGROUP, HOOK_LSM_FILE_OPEN, EPERM, &e);
	if (e) {
		e->target_zone = target;
		e->arg = BPF_CORE_READ(cg, kn, id);
		bpf_probe_read_kernel_str(e->path, sizeof(e->path), BPF_CORE_READ(d, d_name.name));
		bpf_ringbuf_submit(e, 0);
	}
	return ret;
}

SEC("lsm/file_open")
int BPF_PROG(zone_file_open, struct file *file, int ret)
{
	if (ret)
		return ret;
	__u32 zone = current_zone();
	if (!zone)
		return 0;

	ret = file_denied(zone, file, FILE_DENY_OPEN, CONTROL_FILE, HOOK_LSM_FILE_OPEN);
	if (ret)
		return ret;
	return cgroup_escape(zone, file);
}

SEC("lsm/bprm_check_security")
int BPF_PROG(zone_bprm_check, struct linux_binprm *bprm, int ret)
{
	if (ret)
		return ret;
	__u32 zone = current_zone();
	if (!zone)
		return 0;
	return file_denied(zone, BPF_CORE_READ(bprm, file), FILE_DENY_EXEC, CONTROL_EXEC,
			   HOOK_LSM_BPRM_CHECK);
}

/*
 * exec.deny holds for every way to run a denied file's code: mapping it
 * executable (the dynamic loader does, "ld.so /denied/binary") is judged
 * like executing it.
 */
SEC("lsm/mmap_file")
int BPF_PROG(zone_mmap_file, struct file *file, unsigned long reqprot, unsigned long prot,
	     unsigned long flags, int ret)
{
	if (ret)
		return ret;
	if (!(prot & PROT_EXEC))
		return 0;
	__u32 zone = current_zone();
	if (!zone)
		return 0;
	/* file is NULL for an anonymous mapping: read the slot as a scalar
	 * (a NULL check on the argument itself is folded away, see above). */
	__u64 f = 0;
	bpf_probe_read_kernel(&f, sizeof(f), &ctx[0]);
	if (!f)
		return 0;
	return file_denied(zone, (struct file *)f, FILE_DENY_EXEC, CONTROL_EXEC, HOOK_LSM_MMAP_FILE);
}

/* The same for a mapping made executable afterwards with mprotect. */
SEC("lsm/file_mprotect")
int BPF_PROG(zone_file_mprotect, struct vm_area_struct *vma, unsigned long reqprot,
	     unsigned long prot, int ret)
{
	if (ret)
		return ret;
	if (!(prot & PROT_EXEC))
		return 0;
	__u32 zone = current_zone();
	if (!zone)
		return 0;
	struct file *file = BPF_CORE_READ(vma, vm_file);
	if (!file)
		return 0;
	return file_denied(zone, file, FILE_DENY_EXEC, CONTROL_EXEC, HOOK_LSM_FILE_MPROTECT);
}

static __always_inline int cross_zone(__u32 zone, struct task_struct *target, __u32 peer_bit,
				      __u32 deny_flag, __u16 control, __u16 hook, __u64 arg)
{
	struct counters *c = counters_of(zone);
	struct policy p;

	count_check(c, control);
	load_policy(zone, &p);
	__u32 tz = task_zone(target);
	if (cross_zone_allowed(zone, &p, tz, peer_bit, deny_flag))
		return 0;

	struct event *e;
	int ret = deny(zone, &p, c, control, hook, EPERM, &e);
	if (e) {
		e->target_zone = tz;
		e->target_pid = BPF_CORE_READ(target, tgid);
		e->arg = arg;
		bpf_ringbuf_submit(e, 0);
	}
	return ret;
}

SEC("lsm/ptrace_access_check")
int BPF_PROG(zone_ptrace, struct task_struct *child, unsigned int mode, int ret)
{
	if (ret)
		return ret;
	__u32 zone = current_zone();
	if (!zone)
		return 0;
	if (learning_zone() == zone) {
		__u32 target = task_zone(child);
		if (target != zone)
			learn_u32(zone, LEARN_PTRACE, target);
	}
	return cross_zone(zone, child, PEER_PTRACE, POLICY_DENY_PTRACE, CONTROL_PTRACE,
			  HOOK_LSM_PTRACE, mode);
}

SEC("lsm/task_kill")
int BPF_PROG(zone_task_kill, struct task_struct *p, struct kernel_siginfo *info, int sig,
	     const struct cred *cred, int ret)
{
	if (ret)
		return ret;

	/* A non-NULL cred means asynchronous delivery: current is not the
	 * sender. Its only caller is usbfs async I/O, whose signals go to the
	 * task that submitted the request or opened the device; SIGIO and
	 * SIGURG never come here (sigio.bpf.h judges them). The raw slot,
	 * never `cred` itself. */
	__u64 raw_cred = 0;
	bpf_probe_read_kernel(&raw_cred, sizeof(raw_cred), &ctx[3]);
	if (raw_cred)
		return 0;

	__u32 zone = current_zone();
	if (!zone)
		return 0;
	return cross_zone(zone, p, PEER_SIGNAL, POLICY_DENY_SIGNAL, CONTROL_SIGNAL,
			  HOOK_LSM_TASK_KILL, sig);
}

static __always_inline __u64 sock_netns_cookie(struct socket *sock)
{
	struct net *net = BPF_CORE_READ(sock, sk, __sk_common.skc_net.net);

	if (!bpf_core_field_exists(net->net_cookie))
		return 0;
	return BPF_CORE_READ(net, net_cookie);
}

/*
 * Egress check of a kernel-side sockaddr. Addresses too short for their
 * family and other families are left to the kernel, which rejects or does
 * not route them.
 */
static __always_inline int sockaddr_egress(__u32 zone, __u64 member, struct socket *sock, void *sa,
					   int len, __u16 hook)
{
	__u16 family = 0;
	bpf_probe_read_kernel(&family, sizeof(family), sa);

	__u32 addr[4] = {};
	__u16 port_be = 0;
	if (family == AF_INET && len >= 16) {
		bpf_probe_read_kernel(&port_be, 2, sa + 2);
		bpf_probe_read_kernel(&addr[0], 4, sa + 4);
	} else if (family == AF_INET6 && len >= 24) {
		bpf_probe_read_kernel(&port_be, 2, sa + 2);
		bpf_probe_read_kernel(addr, 16, sa + 8);
	} else {
		return 0;
	}

	struct event *e;
	int ret = egress_check(zone, member, family, addr, bpf_ntohs(port_be), sock_netns_cookie(sock),
			       BPF_CORE_READ(sock, sk, sk_protocol), hook, &e);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return ret;
}

static __always_inline bool inet_socket(struct socket *sock)
{
	__u16 f = BPF_CORE_READ(sock, sk, __sk_common.skc_family);

	return f == AF_INET || f == AF_INET6;
}

SEC("lsm/socket_connect")
int BPF_PROG(zone_socket_connect, struct socket *sock, struct sockaddr *address, int addrlen,
	     int ret)
{
	if (ret)
		return ret;
	__u64 member;
	__u32 zone = current_member(&member);
	if (!zone || !inet_socket(sock))
		return 0;
	return sockaddr_egress(zone, member, sock, address, addrlen, HOOK_LSM_SOCKET_CONNECT);
}

/*
 * socket_connect does not see sendto()/sendmsg() with an address on an
 * unconnected datagram socket, nor TCP Fast Open. msg_name is a kernel copy.
 */
SEC("lsm/socket_sendmsg")
int BPF_PROG(zone_socket_sendmsg, struct socket *sock, struct msghdr *msg, int size, int ret)
{
	if (ret)
		return ret;
	__u64 member;
	__u32 zone = current_member(&member);
	if (!zone || !inet_socket(sock))
		return 0;

	void *name = BPF_CORE_READ(msg, msg_name);
	int len = BPF_CORE_READ(msg, msg_namelen);
	if (!name)
		return 0;
	/* A connected stream socket ignores the address unless it is Fast Open. */
	if (BPF_CORE_READ(sock, type) == SOCK_STREAM &&
	    !(BPF_CORE_READ(msg, msg_flags) & MSG_FASTOPEN))
		return 0;
	return sockaddr_egress(zone, member, sock, name, len, HOOK_LSM_SOCKET_SENDMSG);
}

SEC("lsm/capable")
int BPF_PROG(zone_capable, const struct cred *cred, struct user_namespace *ns, int cap,
	     unsigned int opts, int ret)
{
	if (ret)
		return ret;
	__u32 zone = current_zone();
	if (!zone || cap < 0 || cap > 63)
		return 0;
	/* A learning zone records every capability its armed processes were
	 * granted, in any user namespace (NOAUDIT probes aside). */
	if (!(opts & CAP_OPT_NOAUDIT) && learning_zone() == zone)
		learn_u32(zone, LEARN_CAPABILITY, cap);

	/* Only capabilities in a user namespace below the initial one. In the
	 * initial one a zone task holds no more than the container's OCI sets
	 * (bounding set included), and the runtime itself needs its full set
	 * there: `rauha exec` joins the member cgroup before it enters the
	 * container's namespaces (setns needs CAP_SYS_ADMIN). A user namespace
	 * a zone task creates would give it every capability again; this is
	 * where the zone's list still holds. */
	if (BPF_CORE_READ(ns, level) == 0)
		return 0;

	/* Only the task's own credentials: not has_capability() on another
	 * task, not kernel code running on overridden creds (overlayfs copy-up
	 * uses the mounter's), which current does not own. Raw slot, as above. */
	__u64 raw_cred = 0;
	bpf_probe_read_kernel(&raw_cred, sizeof(raw_cred), &ctx[0]);
	struct task_struct *task = bpf_get_current_task_btf();
	if (raw_cred != (__u64)BPF_CORE_READ(task, real_cred))
		return 0;

	struct counters *c = counters_of(zone);
	struct policy p;
	count_check(c, CONTROL_CAPABILITY);
	load_policy(zone, &p);
	if (!(p.cap_deny & (1ull << cap)))
		return 0;

	struct event *e;
	ret = deny(zone, &p, c, CONTROL_CAPABILITY, HOOK_LSM_CAPABLE, EPERM, &e);
	if (e) {
		/* NOAUDIT checks are probes whose failure is expected (e.g.
		 * "may I skip this limit?"): counted, not reported. */
		if (opts & CAP_OPT_NOAUDIT) {
			bpf_ringbuf_discard(e, 0);
		} else {
			e->arg = cap;
			bpf_ringbuf_submit(e, 0);
		}
	}
	return ret;
}

#endif /* RAUHA_LSM_BPF_H */
