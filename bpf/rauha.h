/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Everything that crosses the user/kernel boundary: map keys and values,
 * the event record and the constants both sides interpret. The Go loader
 * gets all of them through bpf2go -type.
 *
 * Zone 0 is "no zone" (the host). Every program allows everything for it.
 */
#ifndef RAUHA_H
#define RAUHA_H

/*
 * Constants are enums, not #defines, so that bpf2go hands them to Go
 * (-type limits, -type policy_flag, ...) and the two sides cannot drift.
 */
enum limits {
	MAX_ZONES = 1024, /* array-indexed maps (zone_counters) bound the zone id */
	MAX_LEVEL = 8,    /* deepest cgroup-v2 level at which a member is recognised */
	FILE_CHAIN_MAX = 8, /* most components of a chain of names (file_deny_chains) */
	PATH_LEN = 256,
	COMM_LEN = 16,
	LONG_PATH_LEN = 4096, /* PATH_MAX: every path a syscall takes is shorter */
};

/* policy.flags. The zero value is the most restrictive mode (enforce). */
enum policy_flag {
	POLICY_AUDIT = 1 << 0,             /* log would-be denials, allow them */
	POLICY_DENY_SIGNAL = 1 << 1,       /* no signals across zones unless a peer entry allows */
	POLICY_DENY_PTRACE = 1 << 2,       /* no ptrace across zones unless a peer entry allows */
	POLICY_EGRESS_RESTRICTED = 1 << 3, /* egress only to the zone's allow-list */
	/* network.allowed_zones is set: traffic with other zones' members (both
	 * directions) only with the zones whose PEER_NET entries this zone wrote */
	POLICY_ZONES_RESTRICTED = 1 << 4,
	POLICY_FILE_TREES = 1 << 5,        /* file_deny holds directories: judge what is below them */
	POLICY_FILE_NAMES = 1 << 6,        /* file_deny_names has entries: judge names too */
	POLICY_EGRESS_DENIES = 1 << 7,     /* egress_deny{4,6} have entries: judge every destination */
	/* The zone learns: nothing is denied, what its armed tasks do is
	 * recorded in the learned map (learn.bpf.h). */
	POLICY_LEARN = 1 << 8,
	/* The fallback holds file rules with mounts: the observer also reports
	 * the EXDEV, EBUSY and ENOENT they give (observer.bpf.h, mount_error). */
	POLICY_FILE_MOUNTS = 1 << 9,
	POLICY_FILE_CHAINS = 1 << 10,      /* file_deny_chains has entries: judge chains of names */
	/*
	 * What a member of a zone without a zone_policy entry gets: a
	 * half-written or half-deleted zone is never less restrictive than a
	 * complete one.
	 */
	POLICY_MISSING_FLAGS = POLICY_DENY_SIGNAL | POLICY_DENY_PTRACE | POLICY_EGRESS_RESTRICTED |
			       POLICY_ZONES_RESTRICTED,
};

/* zone_peers value bits: what actor may do to target. */
enum peer_bit {
	PEER_SIGNAL = 1 << 0,
	PEER_PTRACE = 1 << 1,
	PEER_NET = 1 << 2, /* packets both ways between actor's and target's members */
};

/*
 * file_deny value bits. A directory's bits hold for everything below it.
 * FILE_DENY_OPEN also denies what FILE_DENY_CHANGE does.
 */
enum file_access {
	FILE_DENY_OPEN = 1 << 0,
	FILE_DENY_EXEC = 1 << 1,
	FILE_DENY_CHANGE = 1 << 2, /* read_only: no metadata change, no new name */
};

/* Controls: the index into the counter arrays and event.control. */
enum control {
	CONTROL_FILE,
	CONTROL_EXEC,
	CONTROL_SIGNAL,
	CONTROL_PTRACE,
	CONTROL_EGRESS,
	CONTROL_CAPABILITY,
	CONTROL_CGROUP,
	CONTROL_INGRESS,
	NUM_CONTROLS,
};

/* event.hook: the program that produced an event. */
enum hook {
	HOOK_CONNECT4 = 1,
	HOOK_CONNECT6,
	HOOK_SENDMSG4,
	HOOK_SENDMSG6,
	HOOK_SYS_EXIT,
	HOOK_LSM_FILE_OPEN,
	HOOK_LSM_BPRM_CHECK,
	HOOK_LSM_PTRACE,
	HOOK_LSM_TASK_KILL,
	HOOK_LSM_SOCKET_CONNECT,
	HOOK_LSM_SOCKET_SENDMSG,
	HOOK_LSM_CAPABLE,
	HOOK_LSM_MMAP_FILE,
	HOOK_LSM_FILE_MPROTECT,
	HOOK_SKB_EGRESS,
	HOOK_LSM_FILE_SEND_SIGIOTASK,
	HOOK_LSM_FILE_FCNTL,
	HOOK_LSM_FILE_IOCTL,
	HOOK_SKB_INGRESS,
	HOOK_LSM_INODE_SETATTR,
	HOOK_LSM_INODE_SETXATTR,
	HOOK_LSM_INODE_REMOVEXATTR,
	HOOK_LSM_INODE_LINK,
	HOOK_LSM_INODE_RENAME,
	HOOK_LSM_UNIX_CONNECT,
	HOOK_LSM_UNIX_SEND,
	HOOK_LSM_INODE_SET_ACL,
	HOOK_LSM_INODE_REMOVE_ACL,
	HOOK_LSM_INODE_UNLINK,
	HOOK_LSM_INODE_RMDIR,
	HOOK_LSM_PATH_CHMOD,
	HOOK_LSM_PATH_CHOWN,
	HOOK_LSM_PATH_TRUNCATE,
	HOOK_LSM_PATH_UNLINK,
	HOOK_LSM_PATH_RMDIR,
	HOOK_LSM_PATH_MKNOD,
	HOOK_LSM_PATH_MKDIR,
	HOOK_LSM_PATH_SYMLINK,
	HOOK_LSM_PATH_LINK,
	HOOK_LSM_PATH_RENAME,
	HOOK_IO_URING, /* a completion of an io_uring request; event.syscall: its IORING_OP_* */
};

/*
 * event.arg of an observer event for an error the fallback's mounts give
 * (EXDEV, EBUSY, ENOENT): what the task tried. For FILE_OP_LINK and
 * FILE_OP_RENAME event.path holds two paths, the old name in its first
 * PATH_LEN / 2 bytes and the new name in the rest. When a path does not
 * fit there, the ring buffer record is a struct long_event: event.path is
 * empty and the paths follow the event.
 */
enum file_op {
	FILE_OP_LINK = 1,
	FILE_OP_RENAME,
	FILE_OP_UNLINK,
	FILE_OP_RMDIR,
	FILE_OP_UNIX_CONNECT,
};

enum verdict {
	VERDICT_DENIED = 1,   /* the policy denied it and the task got event.ret */
	VERDICT_AUDITED = 2,  /* the policy would deny it; audit mode allowed it */
	VERDICT_OBSERVED = 3, /* a syscall of a zone task failed with EACCES/EPERM */
};

struct policy {
	__u32 flags;
	__u32 pad;
	__u64 cap_deny; /* bit n set: capable(n) is denied */
};

/*
 * Egress allow-list: LPM tries keyed {zone, port, address}. The zone and the
 * port are matched in full (they precede the address, and every entry's
 * prefixlen covers them), the address by longest prefix. port 0 means "any
 * port"; a lookup tries the exact port first, then port 0. Value: unused (1).
 * prefixlen = 64 + address prefix length. The deny-list (network.denied_egress)
 * has tries of its own with the same keys: a destination any deny entry
 * covers is denied, whatever the allow-list's longest match says.
 */
struct egress4_key {
	__u32 prefixlen;
	__u32 zone;
	__u32 port; /* host byte order */
	__u8 addr[4];
};

struct egress6_key {
	__u32 prefixlen;
	__u32 zone;
	__u32 port;
	__u8 addr[16];
};

/* {actor zone, target zone} -> PEER_* bits, written by the target's policy. */
struct peer_key {
	__u32 actor;
	__u32 target;
};

/*
 * Addresses of zone members (zone_addr, member_addr): IPv4 as the
 * IPv4-mapped IPv6 address ::ffff:a.b.c.d, so one map holds both families.
 */
struct addr_key {
	__u8 addr[16];
};

/* member_addr key: one address of one member's network namespace. */
struct member_addr_key {
	__u64 cgid;
	__u8 addr[16];
};

/*
 * net_gen's only value: the generation of everything a packet verdict is
 * read from (members, policies, allow-lists, peers, addresses, member_netns,
 * zones_in_use, the programs themselves). Userspace bumps gen, with
 * BPF_F_LOCK, after every change of those, so that what the packet
 * programs cached before it (verdict_slots) is judged again. The lock orders
 * a program's reads after it: one that sees a generation sees the map
 * changes made before it.
 */
struct gen_value {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 gen;
};

/* event.arg bits of the packet programs above the IP protocol. */
enum packet_flag {
	PACKET_UNJUDGEABLE = 1 << 8,     /* source-routed or unparsable */
	PACKET_UNREGISTERED = 1 << 9,    /* to another zone's member from a source address
					  * not registered to the sender's zone */
};

/* {zone, kernel dev_t of the superblock, inode} -> FILE_DENY_* bits. */
struct file_key {
	__u32 zone;
	__u32 dev; /* MAJOR << 20 | MINOR, the kernel's encoding */
	__u64 ino;
};

/*
 * A denied path by name: {zone, parent directory's dev and inode, final
 * name} -> FILE_DENY_* bits. It denies whatever inode is at that name,
 * including one created or moved there after the list was resolved. Names
 * of FILE_NAME_LEN bytes or more are never listed (the policy refuses
 * them) and never looked up.
 */
enum { FILE_NAME_LEN = 64 };

struct file_name_key {
	__u32 zone;
	__u32 dev; /* the parent's, MAJOR << 20 | MINOR */
	__u64 ino; /* the parent's */
	char name[FILE_NAME_LEN]; /* NUL-padded */
};

/*
 * A denied path whose directory did not exist either, by a chain of names:
 * the deepest directory on its path that existed (the anchor) and the
 * FILE_CHAIN_MAX components at most below it. file_deny_chains holds one
 * link per component, keyed like file_deny_names: the first by the anchor's
 * dev and inode and the first component, each further one by dev 0 (no
 * superblock has it) and the node id the link before it names in next, and
 * its component. A link's mask denies what is at its name and below it;
 * next (0: none) leads to the links of the components below it. The kernel
 * matches a chain walking up: when the name of a dentry it leaves is a first
 * link in the directory above, it follows next down through the dentries
 * it came up from. Node ids are chosen by userspace; chains that share a
 * prefix share its links.
 */
struct file_chain_link {
	__u32 mask; /* FILE_DENY_* bits of the path ending at this link */
	__u32 pad;
	__u64 next; /* the node id of the links below, 0 when none */
};

struct counters {
	__u64 checks[NUM_CONTROLS];   /* decisions taken for zone tasks */
	__u64 denies[NUM_CONTROLS];   /* decisions that denied (or would, in audit mode) */
	__u64 observed[NUM_CONTROLS]; /* failed syscalls seen by the observer */
	__u64 dropped;                /* events lost because the ring buffer was full */
};

/* Rate limit of the packet program's events, per zone and CPU: a burst of
 * SKB_EVENT_BURST, then SKB_EVENT_RATE a second. Every drop is counted. */
enum skb_events {
	SKB_EVENT_BURST = 32,
	SKB_EVENT_RATE = 4,
};

struct event {
	__u64 ts_ns; /* CLOCK_BOOTTIME */
	__u64 cgid;  /* cgroup-v2 id of the task */
	__u64 arg;   /* file/exec: inode (a denied directory's when path is set); observer file: enum file_op
		      * or 0; signal: signo; ptrace: mode or request;
		      * capability: cap; packet programs: IP protocol | PACKET_* flags */
	__u64 dev;   /* file/exec: kernel dev_t */
	__u32 zone;
	__u32 pid; /* thread id, initial pid namespace (a file's owner signal: the task that set the owner) */
	__u32 tgid;
	__u32 uid;
	__s32 target_pid; /* signal/ptrace target, as passed (observer) or its tgid (LSM) */
	__u32 target_zone; /* signal/ptrace target's zone; egress/ingress: the peer's */
	__s32 ret; /* error returned to the task (negative); 0 when allowed */
	__u32 syscall; /* observer: the syscall number of the kernel's architecture;
			* HOOK_IO_URING: the request's IORING_OP_* opcode */
	__u16 control;
	__u16 hook;
	__u8 verdict;
	__u8 family; /* egress: AF_INET or AF_INET6 */
	__u16 port;  /* egress: destination port, host byte order */
	__u8 addr[16]; /* egress: destination, ingress: source (4 bytes used for AF_INET) */
	char comm[COMM_LEN];
	char path[PATH_LEN]; /* observer open/exec: the path argument as passed; observer file_op
			      * events: absolute (see arg); HOOK_IO_URING: the path the request
			      * named (rename, link: the old one in the first half, the new one in
			      * the second); LSM file hooks: the name of a file denied by a
			      * directory above it */
};

/*
 * The paths of an observer event for an error of the fallback's mounts
 * that do not fit in event.path (see enum file_op), NUL-terminated: a
 * reader that decodes struct event alone sees the event without its path.
 */
struct long_paths {
	char path[LONG_PATH_LEN];
	char new_path[LONG_PATH_LEN]; /* FILE_OP_LINK and FILE_OP_RENAME: the new name */
};

struct long_event {
	struct event e;
	struct long_paths p;
};

/*
 * What a learning zone records (learn.bpf.h), aggregated in the kernel by
 * {zone, kind, object}: the learned map holds one entry per object with
 * its count, so a busy workload costs a lookup, not a ring-buffer record,
 * per repeat. Every rauha command's drain takes the entries out.
 */
enum learn_kind {
	LEARN_EXEC = 1,   /* object: the path exec'd, as passed (bprm->filename) */
	LEARN_READ,       /* object: a path opened read-only, as passed */
	LEARN_WRITE,      /* object: a path opened for writing, created, removed or changed */
	LEARN_EGRESS,     /* object: struct learn_addr */
	LEARN_PEER_ZONE,  /* object: __u32 zone id of the member addressed */
	LEARN_CAPABILITY, /* object: __u32 capability number */
	LEARN_SIGNAL,     /* object: __u32 zone id of the target (0: the host) */
	LEARN_PTRACE,     /* object: as LEARN_SIGNAL */
	LEARN_SYSCALL,    /* object: __u32 syscall number (the kernel's architecture) */
	LEARN_OBJECT_LEN = 256,
	LEARN_SYSCALL_WORDS = 8, /* syscall numbers below 512 */
};

struct learn_addr {
	__u8 proto; /* IPPROTO_TCP, IPPROTO_UDP, ... */
	__u8 family;
	__u16 port; /* host byte order */
	__u8 addr[16]; /* 4 bytes used for AF_INET */
};

struct learn_key {
	__u32 zone;
	__u16 kind;
	__u16 pad;
	char object[LEARN_OBJECT_LEN]; /* NUL-padded */
};

struct learn_value {
	__u64 count;
	__u64 first_ns; /* CLOCK_BOOTTIME */
	__u64 last_ns;
	__u64 cgid;     /* cgroup of the task that did it first */
	char comm[COMM_LEN];
};

/* learn_syscalls value: bit n set: record syscall n (the base policy's syscalls.deny). */
struct learn_syscall_set {
	__u64 bits[LEARN_SYSCALL_WORDS];
};

/* Keeps the enums in the object's BTF for bpf2go -type. */
struct enums {
	enum limits limits;
	enum policy_flag policy_flag;
	enum peer_bit peer_bit;
	enum file_access file_access;
	enum control control;
	enum hook hook;
	enum verdict verdict;
	enum skb_events skb_events;
	enum packet_flag packet_flag;
	enum learn_kind learn_kind;
	enum file_op file_op;
};

#endif /* RAUHA_H */
