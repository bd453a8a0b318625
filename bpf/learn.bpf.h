/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Learning zones (POLICY_LEARN): nothing is denied, and what the zone's
 * workload does is recorded in the learned map, aggregated by {zone, kind,
 * object}, for the engine to drain into the zone's recording.
 *
 * Only armed processes are recorded, so the runtime's own set-up never
 * is: a process is armed when, as a member of a learning zone, it execs a
 * file inside the container's mount namespace (learn_members holds it per
 * member), which the runtime's `init` never does (it is exec'd in the
 * runtime's mount namespace and enters the container's afterwards). Its
 * children inherit the arming at fork; it is forgotten when the process
 * exits. The tracepoints learn_exec, learn_fork, learn_exit, learn_signal
 * (both backends) and learn_capable (the fallback, Linux 6.14 and later;
 * bpf-lsm records capabilities in lsm/capable) are attached only while
 * some zone learns: they run for every exec, fork, exit, signal and
 * capability check of the host. The deny observer's sys_exit, which stays
 * attached for its events, records syscalls, files and ptrace
 * (observer.bpf.h); the egress programs and the bpf-lsm hooks record what
 * they see of armed processes.
 */
#ifndef RAUHA_LEARN_BPF_H
#define RAUHA_LEARN_BPF_H

/* Included by common.bpf.h after the zone and policy helpers. */

/* [0]: non-zero while some zone learns: the sys_exit observer runs for every
 * syscall of the host, and this keeps its cost one array lookup otherwise. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} learn_active SEC(".maps");

/* Members of learning zones: cgroup-v2 id -> inode of the container's mount
 * namespace, in which an exec arms the process. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} learn_members SEC(".maps");

/* Armed processes: tgid (initial pid namespace) -> zone. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} learn_tasks SEC(".maps");

/* The recording, drained (looked up and deleted) by every rauha command.
 * A full map drops new objects until the next drain; repeats of recorded
 * ones are still counted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct learn_key);
	__type(value, struct learn_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} learned SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_ZONES);
	__type(key, __u32);
	__type(value, struct learn_syscall_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} learn_syscalls SEC(".maps");

/* A key is 264 bytes: built here, not on the 512-byte stack. Pinned like
 * every map, so that the pinned programs use only pinned maps. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct learn_key);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} learn_scratch SEC(".maps");

static __always_inline bool learn_on(void)
{
	__u32 k = 0;
	__u32 *on = bpf_map_lookup_elem(&learn_active, &k);

	return on && *on;
}

static __always_inline bool zone_learns(__u32 zone)
{
	struct policy *p = bpf_map_lookup_elem(&zone_policy, &zone);

	return p && (p->flags & POLICY_LEARN);
}

/* The zone of the current process when it is armed and its zone still
 * learns; 0 otherwise. */
static __always_inline __u32 learning_zone(void)
{
	if (!learn_on())
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *z = bpf_map_lookup_elem(&learn_tasks, &tgid);
	if (!z || !zone_learns(*z))
		return 0;
	return *z;
}

/* A zeroed key in the per-CPU scratch, for the caller to fill the object of. */
static __always_inline struct learn_key *learn_key_new(__u32 zone, __u16 kind)
{
	__u32 k = 0;
	struct learn_key *key = bpf_map_lookup_elem(&learn_scratch, &k);

	if (!key)
		return NULL;
	__builtin_memset(key, 0, sizeof(*key));
	key->zone = zone;
	key->kind = kind;
	return key;
}

/*
 * learn_record_by counts one occurrence of key's object. packet: the
 * caller is a packet program, which before Linux 6.14 may not ask for the
 * current task's cgroup and name: cgid is the sending socket's cgroup, and
 * no program is named. Callers pass packet as a constant, so the other
 * branch is not compiled in.
 */
static __always_inline void learn_record_by(struct learn_key *key, bool packet, __u64 cgid)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct learn_value *v = bpf_map_lookup_elem(&learned, key);

	if (!v) {
		struct learn_value nv = { .count = 1, .first_ns = now, .last_ns = now };
		if (packet) {
			nv.cgid = cgid;
		} else {
			nv.cgid = bpf_get_current_cgroup_id();
			bpf_get_current_comm(nv.comm, sizeof(nv.comm));
		}
		if (bpf_map_update_elem(&learned, key, &nv, BPF_NOEXIST) == 0)
			return;
		/* Another CPU recorded it first (or the map is full). */
		v = bpf_map_lookup_elem(&learned, key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->count, 1);
	v->last_ns = now;
}

/* learn_record counts one occurrence of key's object, by the current task. */
static __always_inline void learn_record(struct learn_key *key)
{
	learn_record_by(key, false, 0);
}

static __always_inline void learn_u32(__u32 zone, __u16 kind, __u32 value)
{
	struct learn_key *key = learn_key_new(zone, kind);

	if (!key)
		return;
	__builtin_memcpy(key->object, &value, sizeof(value));
	learn_record(key);
}

/*
 * learn_destination records where zone's workload sent to: the zone of
 * another zone's member (judged by network.allowed_zones when enforced),
 * or the address. Loopback of the member's own network namespace is not
 * egress. packet and cgid as for learn_record_by.
 */
static __always_inline void learn_destination(__u32 zone, __u64 member, __u8 family, const __u32 addr[4],
					      __u16 port, __u64 netns_cookie, __u8 proto, __u32 peer,
					      bool packet, __u64 cgid)
{
	if (peer && peer != zone) {
		struct learn_key *key = learn_key_new(zone, LEARN_PEER_ZONE);
		if (key) {
			__builtin_memcpy(key->object, &peer, sizeof(peer));
			learn_record_by(key, packet, cgid);
		}
		return;
	}
	if (peer == zone)
		return;
	bool loopback = family == AF_INET ? (bpf_ntohl(addr[0]) >> 24) == 127 :
					    (addr[0] == 0 && addr[1] == 0 && addr[2] == 0 && addr[3] == bpf_htonl(1));
	if (loopback && netns_cookie) {
		__u64 *own = bpf_map_lookup_elem(&member_netns, &member);
		if (own && *own == netns_cookie)
			return;
	}
	struct learn_key *key = learn_key_new(zone, LEARN_EGRESS);
	if (!key)
		return;
	/* ICMP "ping" sockets pass their echo id as the port: a protocol
	 * without ports is recorded without one. */
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP && proto != IPPROTO_SCTP && proto != IPPROTO_UDPLITE)
		port = 0;
	struct learn_addr a = { .proto = proto, .family = family, .port = port };
	if (family == AF_INET)
		__builtin_memcpy(a.addr, addr, 4);
	else
		__builtin_memcpy(a.addr, addr, 16);
	__builtin_memcpy(key->object, &a, sizeof(a));
	learn_record_by(key, packet, cgid);
}

/*
 * learn_egress records where an armed process of a learning zone sent to
 * (learn_destination). proto 0: the caller cannot tell; nothing is
 * recorded.
 */
static __always_inline void learn_egress(__u32 zone, __u64 member, __u8 family, const __u32 addr[4],
					 __u16 port, __u64 netns_cookie, __u8 proto, __u32 peer)
{
	if (!proto || learning_zone() != zone)
		return;
	learn_destination(zone, member, family, addr, port, netns_cookie, proto, peer, false, 0);
}

#endif /* RAUHA_LEARN_BPF_H */
