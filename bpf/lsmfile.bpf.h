/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The bpf-lsm backend's file rules beyond open and exec: the inode-keyed
 * file_deny list judged on every other way to reach or change an inode.
 *
 *   - metadata: inode_setattr (chmod, chown, utimensat, truncate),
 *     inode_setxattr, inode_removexattr, inode_set_acl and
 *     inode_remove_acl;
 *   - names: inode_link, inode_rename, inode_unlink and inode_rmdir (a
 *     listed inode gets no new name, is not moved out from below a listed
 *     directory, and is neither removed nor replaced);
 *   - unix sockets: unix_stream_connect and unix_may_send judge the inode
 *     the peer socket is bound to (connect never opens it);
 *   - the path hooks (path_chmod, path_chown, path_truncate, path_unlink,
 *     path_rmdir, path_link, path_rename) judge the same changes knowing
 *     the mount, so their walk crosses mount points; and path_mknod (open
 *     O_CREAT, mknod, unix bind), path_mkdir, path_symlink, path_link and
 *     path_rename refuse new entries inside denied and read_only trees and
 *     at denied names;
 *   - files that were not there when the list was resolved: a zone whose
 *     list holds directories (POLICY_FILE_TREES) has every check walk up
 *     the directories above the inode, so a file created or moved below a
 *     denied directory after the last push is denied too, whoever made it;
 *     a zone whose list holds names (POLICY_FILE_NAMES: a listed path
 *     that was missing, by its parent directory and final name) has every
 *     check look up the name of the inode's dentry and of each directory
 *     above it, so a file created at a denied path later is denied too;
 *     and a zone whose list holds chains of names (POLICY_FILE_CHAINS: a
 *     listed path whose directory was missing too, by the deepest
 *     directory of it that existed and the names below) has every check
 *     follow the chains that start at those names down through the
 *     dentries it came up from, so a path made later, directory by
 *     directory or by moving a directory into place, is denied too;
 *   - file systems mounted below a listed directory after the push: the
 *     path hooks and file_open walk up through the mount points (the
 *     inode hooks stop at the root of the file system); every walk goes
 *     up the file system above the root of a bind mount first.
 *
 * Handles need nothing here: open_by_handle_at ends in file_open, which is
 * keyed by inode like every hook here, so any name and any handle of a
 * denied inode is denied.
 *
 * Denied (FILE_DENY_OPEN) inodes are also closed to metadata changes and new
 * names; read_only roots carry FILE_DENY_CHANGE alone (Landlock keeps them
 * from being written, created in or removed from).
 */
#ifndef RAUHA_LSMFILE_BPF_H
#define RAUHA_LSMFILE_BPF_H

#include "common.bpf.h"

/* Deeper than any path PATH_MAX can spell; a walk that gets there denies. */
#define WALK_MAX 4096

/*
 * One file check (file_verdict): what is judged, then the state of the walk
 * up from it. The hook fills in the first part and hands the struct over by
 * pointer, so the verifier checks the walk once per program, knowing
 * nothing of the fields' values, however many times the program judges a
 * file and whichever hook it is.
 */
struct walk {
	/* What is judged: inode, reached through dentry d (or a new entry newd
	 * about to be made in d's directory) in the mount below (given as a
	 * struct vfsmount *); the file_deny bits that deny this access, and the
	 * control and hook that count and report it. */
	__u64 inode;
	__u64 d;
	__u64 newd;
	__u32 zone;
	__u32 bits;
	__u16 control;
	__u16 hook;

	__u64 dentry; /* the last dentry looked at */
	/* Its struct mount (the hook's struct vfsmount * until the walk
	 * starts); 0 when the hook has only a dentry. */
	__u64 mount;
	/* The dentries the walk has left, by depth (a ring): a chain of names
	 * is followed down through them. */
	__u64 below[FILE_CHAIN_MAX];
	/* Where to go on once the walk within a file system above a bind
	 * mount's root is over (see walk_up), and the ring as it was there;
	 * resume_dentry 0: the walk ends then. */
	__u64 resume_dentry;
	__u64 resume_mount;
	__u64 resume_below[FILE_CHAIN_MAX];
	__u32 resume_depth;
	__u32 depth;
	__u32 dev;
	__u64 ino; /* out: the denied directory, or the parent of the denied name */
	__u8 hit;
	__u8 done;
	__u8 trees;  /* the zone lists directories: look each parent up */
	__u8 names;  /* the zone lists names: look each dentry's name up too */
	__u8 chains; /* the zone lists chains of names: follow them too */
	__u8 resume; /* the walk is within a file system above a bind mount's root */
	__u8 named;  /* out: a name denied it: the name of named_at */
	__u64 named_at;
};

/* bpf_loop's context must be on the stack: the walk is reached through it. */
struct walk_ctx {
	struct walk *w;
};

/* The name of d into buf (NUL-padded); false when it is too long to be
 * listed. */
static __always_inline bool read_name(char *buf, struct dentry *d)
{
	if (BPF_CORE_READ(d, d_name.len) >= FILE_NAME_LEN)
		return false;
	__builtin_memset(buf, 0, FILE_NAME_LEN);
	bpf_probe_read_kernel_str(buf, FILE_NAME_LEN, BPF_CORE_READ(d, d_name.name));
	return true;
}

/* A denial by the listed name in k, the name of dentry at: reported by
 * its key. */
static __always_inline bool named_hit(struct walk *w, struct file_name_key *k, struct dentry *at)
{
	w->hit = w->named = 1;
	w->dev = k->dev;
	w->ino = k->ino;
	w->named_at = (__u64)at;
	return true;
}

/*
 * Whether the name of dentry d, in the directory whose inode is parent, is
 * a denied name of w's zone (file_deny_names). A name too long to be
 * listed is not looked up.
 */
static __always_inline bool name_denied(struct walk *w, struct dentry *d, struct inode *parent)
{
	struct file_name_key k = {
		.zone = w->zone,
		.dev = BPF_CORE_READ(parent, i_sb, s_dev),
		.ino = BPF_CORE_READ(parent, i_ino),
	};

	if (!read_name(k.name, d))
		return false;
	__u32 *mask = bpf_map_lookup_elem(&file_deny_names, &k);
	if (!mask || !(*mask & w->bits))
		return false;
	return named_hit(w, &k, d);
}

/* One step down a chain (chain_denied): its state between the steps. */
struct chain_step {
	struct walk *w;
	struct file_name_key k; /* the link to look up */
	__u64 at;               /* the dentry whose name k holds */
	__u8 hit;
};

static long chain_down(__u64 j, void *arg)
{
	struct chain_step *c = arg;
	struct walk *w = c->w;
	struct file_chain_link *l = bpf_map_lookup_elem(&file_deny_chains, &c->k);

	if (!l)
		return 1;
	if (l->mask & w->bits) {
		c->hit = 1;
		return 1;
	}
	if (!l->next || j + 1 > w->depth)
		return 1;
	c->k.dev = 0;
	c->k.ino = l->next;
	struct dentry *d = (void *)w->below[(w->depth - j - 1) & (FILE_CHAIN_MAX - 1)];
	if (!read_name(c->k.name, d))
		return 1;
	c->at = (__u64)d;
	return 0;
}

/*
 * Whether a chain of names of w's zone (file_deny_chains) starts at the
 * name of dentry d in the directory whose inode is parent, and goes on
 * down through the dentries the walk came up from to a link whose bits
 * deny: the path the chain spells is what the walk started at or below.
 * Reported by the key of that last link. The steps down are a loop of
 * their own, which the verifier checks once.
 */
static __always_inline bool chain_denied(struct walk *w, struct dentry *d, struct inode *parent)
{
	struct chain_step c = {
		.w = w,
		.at = (__u64)d,
		.k = {
			.zone = w->zone,
			.dev = BPF_CORE_READ(parent, i_sb, s_dev),
			.ino = BPF_CORE_READ(parent, i_ino),
		},
	};

	if (!read_name(c.k.name, d))
		return false;
	bpf_loop(FILE_CHAIN_MAX, chain_down, &c, 0);
	if (!c.hit)
		return false;
	return named_hit(w, &c.k, (struct dentry *)c.at);
}

static __always_inline long walk_end(struct walk *w)
{
	w->done = 1;
	return 1;
}

/*
 * One step up: to the parent directory, or, at the root of a mount whose
 * mount is known, to the directory it is mounted on (which is not looked
 * up: its own inode is hidden by the mount). Stops at the root of the
 * mount namespace, or of the file system when the mount is not known.
 * With names, the name of the dentry it leaves is looked up first: a
 * listed name denies what is at it and, like a directory, what is below;
 * with chains, the chains that start at that name are followed down.
 *
 * The root of a bind mount of a directory (or of a detached clone,
 * open_tree) is not the root of its file system: the directories above it
 * in the file system are walked first, then the walk goes on at its mount
 * point. Else a directory made below a listed one after the push and
 * bound elsewhere would take what is below it out of the listed tree.
 */
static long walk_up(__u64 i, void *arg)
{
	struct walk *w = ((struct walk_ctx *)arg)->w;
	struct dentry *d = (void *)w->dentry;
	struct dentry *parent = BPF_CORE_READ(d, d_parent);

	if (w->mount) {
		struct mount *m = (void *)w->mount;
		if ((__u64)BPF_CORE_READ(m, mnt.mnt_root) == w->dentry) {
			struct mount *up = BPF_CORE_READ(m, mnt_parent);
			if (parent && parent != d && !w->resume) {
				w->resume = 1;
				w->resume_dentry = up == m ? 0 : (__u64)BPF_CORE_READ(m, mnt_mountpoint);
				w->resume_mount = (__u64)up;
				w->resume_depth = w->depth;
				__builtin_memcpy(w->resume_below, w->below, sizeof(w->below));
				w->mount = 0;
				return 0;
			}
			if (up == m)
				return walk_end(w);
			w->dentry = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
			w->mount = (__u64)up;
			return 0;
		}
	}
	if (!parent || parent == d) {
		if (w->resume && w->resume_dentry) {
			w->resume = 0;
			w->dentry = w->resume_dentry;
			w->mount = w->resume_mount;
			w->depth = w->resume_depth;
			__builtin_memcpy(w->below, w->resume_below, sizeof(w->below));
			return 0;
		}
		return walk_end(w);
	}
	w->dentry = (__u64)parent;

	struct inode *inode = BPF_CORE_READ(parent, d_inode);
	if (w->names && name_denied(w, d, inode))
		return 1;
	if (w->chains && chain_denied(w, d, inode))
		return 1;
	w->below[w->depth & (FILE_CHAIN_MAX - 1)] = (__u64)d;
	w->depth++;
	if (!w->trees)
		return 0;
	struct file_key k = {
		.zone = w->zone,
		.dev = BPF_CORE_READ(inode, i_sb, s_dev),
		.ino = BPF_CORE_READ(inode, i_ino),
	};
	__u32 *mask = bpf_map_lookup_elem(&file_deny, &k);
	if (mask && (*mask & w->bits)) {
		w->hit = 1;
		w->dev = k.dev;
		w->ino = k.ino;
		return 1;
	}
	return 0;
}

/*
 * The LSM verdict of a file check's result: an error code in [-4095, -1],
 * which the verifier requires of an LSM program and cannot know of a value
 * returned by a global function or read from memory; 0 otherwise.
 */
static __always_inline int lsm_verdict(__s64 r)
{
	__s64 verdict = (int)r;

	barrier_var(verdict);
	if (verdict < 0) {
		if (verdict < -4095)
			return -EPERM;
		return verdict;
	}
	return 0;
}

/*
 * The file_deny decision of a file check (struct walk's first part): the
 * inode itself, then, in a zone whose list holds directories, every
 * directory above it, and in a zone that lists names or chains of names,
 * the name of d and of every directory above it. Counts the check, and on
 * a denial reports the denied inode (the directory's, with the file's name
 * in path, when a directory denied it; the parent's, or a chain's last
 * link, with the listed name in path, when a name denied it).
 *
 * newd, when not 0, is a new entry about to be made in the directory inode
 * (d is the directory's dentry): the walk starts at it, so its own name is
 * looked up too, and events carry it in path.
 *
 * A global function: the verifier checks it once per program, apart from
 * its callers, knowing nothing of w's contents, so the walk's loops are
 * checked once with every field unknown instead of once for every value the
 * verifier tracks in a caller's stack and for every file check a program
 * makes (inlined, they made path_rename, which judges up to four entries,
 * too large for 6.12's verifier). Its only output is the verdict: callers
 * never read w back, since the verifier checks them apart from it too and
 * what it knew of w before the call must not decide what runs after.
 */
__noinline int file_verdict(struct walk *w)
{
	if (!w)
		return 0;
	__u32 zone = w->zone;
	__u32 bits = w->bits;
	__u16 control = w->control;
	struct inode *inode = (void *)w->inode;
	struct counters *c = counters_of(zone);
	struct file_key k = {
		.zone = zone,
		.dev = BPF_CORE_READ(inode, i_sb, s_dev),
		.ino = BPF_CORE_READ(inode, i_ino),
	};
	struct policy p;
	bool below = false;

	count_check(c, control);
	load_policy(zone, &p);
	__u32 *mask = bpf_map_lookup_elem(&file_deny, &k);
	if (!mask || !(*mask & bits)) {
		if (!(p.flags & (POLICY_FILE_TREES | POLICY_FILE_NAMES | POLICY_FILE_CHAINS)))
			return 0;
		w->names = !!(p.flags & POLICY_FILE_NAMES);
		w->trees = !!(p.flags & POLICY_FILE_TREES);
		w->chains = !!(p.flags & POLICY_FILE_CHAINS);
		w->dentry = w->newd ? w->newd : w->d;
		if (w->mount)
			w->mount -= bpf_core_field_offset(struct mount, mnt);
		w->depth = 0;
		w->resume = 0;
		w->hit = 0;
		w->done = 0;
		w->named = 0;
		struct walk_ctx ctx = { .w = w };
		bpf_loop(WALK_MAX, walk_up, &ctx, 0);
		if (w->hit) {
			k.dev = w->dev;
			k.ino = w->ino;
			below = true;
		} else if (w->done) {
			return 0;
		}
	}

	struct event *e;
	int ret = deny(zone, &p, c, control, w->hook, EACCES, &e);
	if (e) {
		e->dev = k.dev;
		e->arg = k.ino;
		struct dentry *at = (void *)w->named_at;
		struct dentry *newd = (void *)w->newd;
		struct dentry *d = (void *)w->d;
		if (w->named)
			bpf_probe_read_kernel_str(e->path, FILE_NAME_LEN, BPF_CORE_READ(at, d_name.name));
		else if (newd)
			bpf_probe_read_kernel_str(e->path, sizeof(e->path),
						  BPF_CORE_READ(newd, d_name.name));
		else if (below)
			bpf_probe_read_kernel_str(e->path, sizeof(e->path), BPF_CORE_READ(d, d_name.name));
		bpf_ringbuf_submit(e, 0);
	}
	return ret;
}

static __always_inline int entry_denied(__u32 zone, struct inode *inode, struct dentry *d,
					__u64 mount, __u32 bits, __u16 control, __u16 hook,
					struct dentry *newd)
{
	struct walk w = {
		.inode = (__u64)inode,
		.d = (__u64)d,
		.newd = (__u64)newd,
		.mount = mount,
		.zone = zone,
		.bits = bits,
		.control = control,
		.hook = hook,
	};

	return lsm_verdict(file_verdict(&w));
}

static __always_inline int inode_denied(__u32 zone, struct inode *inode, struct dentry *d,
					__u64 mount, __u32 bits, __u16 control, __u16 hook)
{
	return entry_denied(zone, inode, d, mount, bits, control, hook, 0);
}

/* Metadata changes and new names: denied inodes and read_only trees. */
#define FILE_DENY_CHANGES (FILE_DENY_OPEN | FILE_DENY_CHANGE)

static __always_inline int change_denied(struct dentry *d, __u16 hook)
{
	__u32 zone = current_zone();

	if (!zone)
		return 0;
	return entry_denied(zone, BPF_CORE_READ(d, d_inode), d, 0, FILE_DENY_CHANGES, CONTROL_FILE,
			    hook, 0);
}

/*
 * A new entry d in the directory whose dentry is parent (in mount, a
 * struct vfsmount *, 0 when unknown): refused inside a denied or read_only
 * tree (parent listed, or a listed directory above it) and at a listed
 * name. Without it a zone could fill a denied directory, or plant a file
 * at a denied name for a host process to find.
 */
static __always_inline int create_denied(struct dentry *parent, __u64 mount, struct dentry *d,
					 __u16 hook)
{
	__u32 zone = current_zone();

	if (!zone)
		return 0;
	return entry_denied(zone, BPF_CORE_READ(parent, d_inode), parent, mount, FILE_DENY_CHANGES,
			    CONTROL_FILE, hook, d);
}

/*
 * The previous program's verdict, in the slot after the n arguments of a
 * hook whose argument count differs between kernels, as lsm_verdict
 * makes it; 0 when there is none.
 */
static __always_inline int prev_verdict(unsigned long long *ctx, __u64 n)
{
	__s64 prev = 0;

	bpf_probe_read_kernel(&prev, sizeof(prev), (void *)ctx + n * 8);
	return lsm_verdict(prev);
}

/*
 * chmod (setuid bits included), chown, utimensat and truncate: every
 * attribute change goes through notify_change and this hook. inode_setattr
 * gained an idmap first argument in 6.9, so the dentry is read as the
 * second to last argument.
 */
SEC("lsm/inode_setattr")
int BPF_PROG(zone_inode_setattr)
{
	__u64 n = bpf_get_func_arg_cnt(ctx);
	__u64 d = 0;

	if (n < 2 || n > 3)
		return 0;
	int ret = prev_verdict(ctx, n);
	if (ret)
		return ret;
	if (bpf_get_func_arg(ctx, n - 2, &d) || !d)
		return 0;
	return change_denied((struct dentry *)d, HOOK_LSM_INODE_SETATTR);
}

SEC("lsm/inode_setxattr")
int BPF_PROG(zone_inode_setxattr, void *idmap, struct dentry *dentry, const char *name,
	     const void *value, size_t size, int flags, int ret)
{
	if (ret)
		return ret;
	return change_denied(dentry, HOOK_LSM_INODE_SETXATTR);
}

SEC("lsm/inode_removexattr")
int BPF_PROG(zone_inode_removexattr, void *idmap, struct dentry *dentry, const char *name, int ret)
{
	if (ret)
		return ret;
	return change_denied(dentry, HOOK_LSM_INODE_REMOVEXATTR);
}

/* A new hard link: another name that no deny path covers. */
SEC("lsm/inode_link")
int BPF_PROG(zone_inode_link, struct dentry *old_dentry, struct inode *dir, struct dentry *new_dentry,
	     int ret)
{
	if (ret)
		return ret;
	return change_denied(old_dentry, HOOK_LSM_INODE_LINK);
}

/* Moving a denied inode (or one below a denied directory) elsewhere, or
 * another file over it (which removes it). An exchange calls the hook for
 * each side. */
SEC("lsm/inode_rename")
int BPF_PROG(zone_inode_rename, struct inode *old_dir, struct dentry *old_dentry,
	     struct inode *new_dir, struct dentry *new_dentry, int ret)
{
	if (ret)
		return ret;
	ret = change_denied(old_dentry, HOOK_LSM_INODE_RENAME);
	if (ret || !BPF_CORE_READ(new_dentry, d_inode))
		return ret;
	return change_denied(new_dentry, HOOK_LSM_INODE_RENAME);
}

/* Removing a listed inode's name (or one below a listed directory): the
 * file may be the host's, and a removed denied path is one a zone task may
 * then create afresh. */
SEC("lsm/inode_unlink")
int BPF_PROG(zone_inode_unlink, struct inode *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	return change_denied(dentry, HOOK_LSM_INODE_UNLINK);
}

SEC("lsm/inode_rmdir")
int BPF_PROG(zone_inode_rmdir, struct inode *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	return change_denied(dentry, HOOK_LSM_INODE_RMDIR);
}

/*
 * POSIX ACLs (setfacl: setxattr of system.posix_acl_*) reach the file
 * system without inode_setxattr since 6.2, through these hooks. Kernels
 * before have neither: there the loader attaches the two programs to
 * inode_setxattr and inode_removexattr (bpf/kernel.go, fallback), which see
 * ACLs, and they judge only ACL names (the xattr programs judge the rest).
 * Either way the dentry is the second argument and the name the third.
 */
static __always_inline int acl_denied(unsigned long long *ctx, __u16 hook)
{
#define ACL_PREFIX "system.posix_acl_"
	__u64 n = bpf_get_func_arg_cnt(ctx);
	__u64 d = 0, name = 0;
	char buf[sizeof(ACL_PREFIX)] = {};

	if (n < 3 || n > 6)
		return 0;
	int ret = prev_verdict(ctx, n);
	if (ret)
		return ret;
	if (bpf_get_func_arg(ctx, 1, &d) || !d || bpf_get_func_arg(ctx, 2, &name))
		return 0;
	bpf_probe_read_kernel_str(buf, sizeof(buf), (void *)name);
#pragma unroll
	for (int i = 0; i < sizeof(ACL_PREFIX) - 1; i++)
		if (buf[i] != ACL_PREFIX[i])
			return 0;
	return change_denied((struct dentry *)d, hook);
}

SEC("lsm/inode_set_acl")
int BPF_PROG(zone_inode_set_acl)
{
	return acl_denied(ctx, HOOK_LSM_INODE_SET_ACL);
}

SEC("lsm/inode_remove_acl")
int BPF_PROG(zone_inode_remove_acl)
{
	return acl_denied(ctx, HOOK_LSM_INODE_REMOVE_ACL);
}

/*
 * A unix socket bound to a path is reached by that path without an open:
 * judge the socket's inode (an abstract or unbound socket has none).
 */
static __always_inline int unix_peer_denied(struct sock *peer, __u16 hook)
{
	__u32 zone = current_zone();

	if (!zone)
		return 0;
	struct unix_sock *u = (void *)peer;
	struct dentry *d = BPF_CORE_READ(u, path.dentry);
	if (!d)
		return 0;
	return inode_denied(zone, BPF_CORE_READ(d, d_inode), d, (__u64)BPF_CORE_READ(u, path.mnt),
			    FILE_DENY_OPEN, CONTROL_FILE, hook);
}

SEC("lsm/unix_stream_connect")
int BPF_PROG(zone_unix_stream_connect, struct sock *sock, struct sock *other, struct sock *newsk,
	     int ret)
{
	if (ret)
		return ret;
	return unix_peer_denied(other, HOOK_LSM_UNIX_CONNECT);
}

/* Datagram connect() and every send to a datagram socket. */
SEC("lsm/unix_may_send")
int BPF_PROG(zone_unix_may_send, struct socket *sock, struct socket *other, int ret)
{
	if (ret)
		return ret;
	return unix_peer_denied(BPF_CORE_READ(other, sk), HOOK_LSM_UNIX_SEND);
}

/*
 * The path hooks (CONFIG_SECURITY_PATH) of the syscalls that change or
 * name files. The inode hooks above see a dentry but not its mount, so
 * their walk stops at the root of the file system; these see the mount
 * and walk on through the mount point into the file system above, so a
 * file made after the push in a tmpfs or bind mount nested below a listed
 * directory is judged like one made in the directory itself. They run
 * before the inode hooks of the same syscall; the inode hooks stay for
 * what reaches a file without a path hook (utimensat, xattrs, ACLs) and
 * for in-kernel callers.
 *
 * New entries are judged here only: every syscall that makes one (open
 * with O_CREAT, mknod, unix socket bind, mkdir, symlink, link, rename)
 * calls a path hook before the file system's inode hook, so
 * inode_create and its siblings would never be the first to refuse.
 */
static __always_inline int path_denied(const struct path *path, __u16 hook)
{
	__u32 zone = current_zone();

	if (!zone)
		return 0;
	struct dentry *d = BPF_CORE_READ(path, dentry);
	return inode_denied(zone, BPF_CORE_READ(d, d_inode), d, (__u64)BPF_CORE_READ(path, mnt),
			    FILE_DENY_CHANGES, CONTROL_FILE, hook);
}

/* dentry, an existing entry of the directory dir. */
static __always_inline int entry_in_denied(const struct path *dir, struct dentry *dentry, __u16 hook)
{
	__u32 zone = current_zone();

	if (!zone)
		return 0;
	return inode_denied(zone, BPF_CORE_READ(dentry, d_inode), dentry,
			    (__u64)BPF_CORE_READ(dir, mnt), FILE_DENY_CHANGES, CONTROL_FILE, hook);
}

/* dentry, a new entry of the directory dir. */
static __always_inline int create_in_denied(const struct path *dir, struct dentry *dentry, __u16 hook)
{
	return create_denied(BPF_CORE_READ(dir, dentry), (__u64)BPF_CORE_READ(dir, mnt), dentry, hook);
}

SEC("lsm/path_chmod")
int BPF_PROG(zone_path_chmod, const struct path *path, umode_t mode, int ret)
{
	if (ret)
		return ret;
	return path_denied(path, HOOK_LSM_PATH_CHMOD);
}

SEC("lsm/path_chown")
int BPF_PROG(zone_path_chown, const struct path *path, __u64 uid, __u64 gid, int ret)
{
	if (ret)
		return ret;
	return path_denied(path, HOOK_LSM_PATH_CHOWN);
}

SEC("lsm/path_truncate")
int BPF_PROG(zone_path_truncate, const struct path *path, int ret)
{
	if (ret)
		return ret;
	return path_denied(path, HOOK_LSM_PATH_TRUNCATE);
}

SEC("lsm/path_unlink")
int BPF_PROG(zone_path_unlink, const struct path *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	return entry_in_denied(dir, dentry, HOOK_LSM_PATH_UNLINK);
}

SEC("lsm/path_rmdir")
int BPF_PROG(zone_path_rmdir, const struct path *dir, struct dentry *dentry, int ret)
{
	if (ret)
		return ret;
	return entry_in_denied(dir, dentry, HOOK_LSM_PATH_RMDIR);
}

/* open(O_CREAT) too: may_o_create calls it for every regular file. */
SEC("lsm/path_mknod")
int BPF_PROG(zone_path_mknod, const struct path *dir, struct dentry *dentry, umode_t mode,
	     unsigned int dev, int ret)
{
	if (ret)
		return ret;
	return create_in_denied(dir, dentry, HOOK_LSM_PATH_MKNOD);
}

SEC("lsm/path_mkdir")
int BPF_PROG(zone_path_mkdir, const struct path *dir, struct dentry *dentry, umode_t mode, int ret)
{
	if (ret)
		return ret;
	return create_in_denied(dir, dentry, HOOK_LSM_PATH_MKDIR);
}

SEC("lsm/path_symlink")
int BPF_PROG(zone_path_symlink, const struct path *dir, struct dentry *dentry,
	     const char *old_name, int ret)
{
	if (ret)
		return ret;
	return create_in_denied(dir, dentry, HOOK_LSM_PATH_SYMLINK);
}

/* A hard link stays within one mount: old_dentry is in new_dir's. */
SEC("lsm/path_link")
int BPF_PROG(zone_path_link, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry, int ret)
{
	if (ret)
		return ret;
	ret = entry_in_denied(new_dir, old_dentry, HOOK_LSM_PATH_LINK);
	if (ret)
		return ret;
	return create_in_denied(new_dir, new_dentry, HOOK_LSM_PATH_LINK);
}

#define RENAME_EXCHANGE (1 << 1)

SEC("lsm/path_rename")
int BPF_PROG(zone_path_rename, const struct path *old_dir, struct dentry *old_dentry,
	     const struct path *new_dir, struct dentry *new_dentry, unsigned int flags, int ret)
{
	if (ret)
		return ret;
	ret = entry_in_denied(old_dir, old_dentry, HOOK_LSM_PATH_RENAME);
	if (ret)
		return ret;
	if (BPF_CORE_READ(new_dentry, d_inode))
		ret = entry_in_denied(new_dir, new_dentry, HOOK_LSM_PATH_RENAME);
	else
		ret = create_in_denied(new_dir, new_dentry, HOOK_LSM_PATH_RENAME);
	if (ret || !(flags & RENAME_EXCHANGE))
		return ret;
	/* The other side moves into old_dir. */
	return create_in_denied(old_dir, old_dentry, HOOK_LSM_PATH_RENAME);
}

#endif /* RAUHA_LSMFILE_BPF_H */
