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
 * exits. The programs (learn_exec, learn_fork, learn_exit, learn_signal,
 * and the observer's sys_exit, observer.bpf.h) are global tracepoints on
 * both backends; the egress programs and the bpf-lsm hooks record what they
 * see of armed processes.
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

/* learn_record counts one occurrence of key's object. */
static __always_inline void learn_record(struct learn_key *key)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct learn_value *v = bpf_map_lookup_elem(&learned, key);

	if (!v) {
		struct learn_value nv = { .count = 1, .first_ns = now, .last_ns = now };
		nv.cgid = bpf_get_current_cgroup_id();
		bpf_get_current_comm(nv.comm, sizeof(nv.comm));
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

static __always_inline void learn_u32(__u32 zone, __u16 kind, __u32 value)
{
	struct learn_key *key = learn_key_new(zone, kind);

	if (!key)
		return;
	__builtin_memcpy(key->object, &value, sizeof(value));
	learn_record(key);
}

/*
 * learn_egress records where an armed process of a learning zone sent to:
 * the zone of another zone's member (judged by network.allowed_zones when
 * enforced), or the address. Loopback of the member's own network namespace
 * is not egress. proto 0: the caller cannot tell (a packet program); nothing
 * is recorded.
 */
static __always_inline void learn_egress(__u32 zone, __u64 member, __u8 family, const __u32 addr[4],
					 __u16 port, __u64 netns_cookie, __u8 proto, __u32 peer)
{
	if (!proto || learning_zone() != zone)
		return;
	if (peer && peer != zone) {
		learn_u32(zone, LEARN_PEER_ZONE, peer);
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
	struct learn_addr a = { .proto = proto, .family = family, .port = port };
	if (family == AF_INET)
		__builtin_memcpy(a.addr, addr, 4);
	else
		__builtin_memcpy(a.addr, addr, 16);
	__builtin_memcpy(key->object, &a, sizeof(a));
	learn_record(key);
}

#endif /* RAUHA_LEARN_BPF_H */
