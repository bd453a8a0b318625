/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Maps and helpers shared by every Rauha program: zone lookup for the
 * current task and for another task, policy, counters, events, and the
 * egress allow- and deny-list checks.
 */
#ifndef RAUHA_COMMON_BPF_H
#define RAUHA_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "rauha.h"

#define EPERM 1
#define EACCES 13
#define AF_INET 2
#define AF_INET6 10

/* All maps are pinned by name in the loader's pin directory and shared by
 * every program, whichever backend loaded it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);   /* cgroup-v2 id */
	__type(value, __u32); /* zone */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} zone_by_cgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ZONES);
	__type(key, __u32);
	__type(value, struct policy);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} zone_policy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__type(key, struct egress4_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} egress4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__type(key, struct egress6_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} egress6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16384);
	__type(key, struct egress4_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} egress_deny4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16384);
	__type(key, struct egress6_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} egress_deny6 SEC(".maps");

/*
 * The keys of egress_deny{4,6}, for the loader only: an LPM trie can only be
 * read whole, one key per call, and every zone of the standard preset has
 * entries there; these hashes are read in batches. The deny maps hold 16
 * entries for each of MAX_ZONES zones (standard has 3).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct egress4_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} egress_deny4_keys SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct egress6_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} egress_deny6_keys SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct peer_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} zone_peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct file_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} file_deny SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct file_name_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} file_deny_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct file_name_key);
	__type(value, struct file_chain_link);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} file_deny_chains SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_ZONES);
	__type(key, __u32);
	__type(value, struct counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} zone_counters SEC(".maps");

/*
 * Members whose network namespace is their zone's own (see own_loopback):
 * cgroup-v2 id of the member -> cookie of that network namespace.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} member_netns SEC(".maps");

/*
 * Which zone an address belongs to: every address of a member's network
 * namespace (loopback aside), registered at create and rebuilt by
 * reconcile. member_addr holds what each member registered, so a delete
 * removes an address only when no other member (a shared namespace) still
 * has it; zone_addr is derived from it and is what the programs read.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct addr_key);
	__type(value, __u32); /* zone */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} zone_addr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct member_addr_key);
	__type(value, __u32); /* zone */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} member_addr SEC(".maps");

/*
 * [0]: non-zero while some zone's policy sets network.allowed_zones. Only
 * then do the packet programs of the other zones parse their packets (to
 * keep a member's unregistered source address from reaching another zone).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} zones_in_use SEC(".maps");

/* [0]: the generation of the packet programs' inputs (struct gen_value). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} net_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 * 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} events SEC(".maps");

/* Keep struct event and the enums in the object's BTF for bpf2go -type.
 * No program uses them; the loader drops the .bss they land in. */
const struct event *unused_event __attribute__((unused));
const struct enums *unused_enums __attribute__((unused));
const struct learn_addr *unused_learn_addr __attribute__((unused));

static __always_inline __u32 lookup_zone(__u64 cgid)
{
	__u32 *z = bpf_map_lookup_elem(&zone_by_cgid, &cgid);
	return z ? *z : 0;
}

/*
 * Zone of the current task: walk its cgroup-v2 ancestors top-down, the
 * first registered one wins, so cgroups nested in a member inherit its zone
 * and cannot opt out by registering deeper. A task in the root cgroup costs
 * one helper call: ancestor level 1 does not exist for it. *member gets the
 * registered cgroup's id (0 outside zones).
 */
static __always_inline __u32 current_member(__u64 *member)
{
	*member = 0;
	for (int l = 1; l <= MAX_LEVEL; l++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(l);
		if (!id)
			return 0;
		__u32 z = lookup_zone(id);
		if (z) {
			*member = id;
			return z;
		}
	}
	return 0;
}

static __always_inline __u32 current_zone(void)
{
	__u64 member;

	return current_member(&member);
}

/* Kernels before 6.0 kept the ancestors' ids instead of pointers. */
struct cgroup___pre60 {
	int level;
	__u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/*
 * Zone of any cgroup, with the same top-down rule as current_zone. Uses
 * cgroup->ancestors[] (ancestors[level] is the cgroup itself) because
 * kernfs_node->parent was renamed in 6.15 and CO-RE cannot follow that.
 */
static __always_inline __u32 cgroup_zone(struct cgroup *cg)
{
	int level = BPF_CORE_READ(cg, level);

	for (int l = 1; l <= MAX_LEVEL; l++) {
		if (l > level)
			return 0;
		__u64 id = 0;
		if (bpf_core_field_exists(cg->ancestors)) {
			struct cgroup *anc = NULL;
			bpf_core_read(&anc, sizeof(anc), &cg->ancestors[l]);
			id = BPF_CORE_READ(anc, kn, id);
		} else {
			struct cgroup___pre60 *old = (void *)cg;
			bpf_core_read(&id, sizeof(id), &old->ancestor_ids[l]);
		}
		__u32 z = lookup_zone(id);
		if (z)
			return z;
	}
	return 0;
}

static __always_inline __u32 task_zone(struct task_struct *t)
{
	return cgroup_zone(BPF_CORE_READ(t, cgroups, dfl_cgrp));
}

static __always_inline void load_policy(__u32 zone, struct policy *out)
{
	struct policy *p = bpf_map_lookup_elem(&zone_policy, &zone);

	if (p) {
		*out = *p;
		return;
	}
	out->flags = POLICY_MISSING_FLAGS;
	out->pad = 0;
	out->cap_deny = 0;
}

static __always_inline struct counters *counters_of(__u32 zone)
{
	return bpf_map_lookup_elem(&zone_counters, &zone);
}

static __always_inline void count_check(struct counters *c, int control)
{
	if (c && control >= 0 && control < NUM_CONTROLS)
		c->checks[control]++;
}

/*
 * Reserves an event with the fields every event has except the task's. The
 * caller fills the control-specific ones and submits. NULL means the ring
 * buffer is full; that is counted, never silent.
 */
static __always_inline struct event *event_reserve_size(__u32 zone, struct counters *c, __u16 control,
							__u16 hook, __u8 verdict, __s32 ret, __u64 size)
{
	struct event *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e) {
		if (c)
			c->dropped++;
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_boot_ns();
	e->zone = zone;
	e->control = control;
	e->hook = hook;
	e->verdict = verdict;
	e->ret = ret;
	return e;
}

static __always_inline struct event *event_reserve(__u32 zone, struct counters *c, __u16 control,
						   __u16 hook, __u8 verdict, __s32 ret)
{
	return event_reserve_size(zone, c, control, hook, verdict, ret, sizeof(struct event));
}

/* event_reserve plus the current task: for programs that run in its
 * context. size: of the record, a struct event or one that starts with it. */
static __always_inline struct event *event_new_size(__u32 zone, struct counters *c, __u16 control,
						    __u16 hook, __u8 verdict, __s32 ret, __u64 size)
{
	struct event *e = event_reserve_size(zone, c, control, hook, verdict, ret, size);

	if (!e)
		return NULL;
	__u64 id = bpf_get_current_pid_tgid();
	e->cgid = bpf_get_current_cgroup_id();
	e->pid = (__u32)id;
	e->tgid = id >> 32;
	e->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	return e;
}

static __always_inline struct event *event_new(__u32 zone, struct counters *c, __u16 control,
					       __u16 hook, __u8 verdict, __s32 ret)
{
	return event_new_size(zone, c, control, hook, verdict, ret, sizeof(struct event));
}

/*
 * A policy decision to deny: counts it and reserves its event. Returns the
 * error the task gets, 0 in audit mode (then the event says "audited").
 */
static __always_inline int deny(__u32 zone, const struct policy *p, struct counters *c,
				__u16 control, __u16 hook, int err, struct event **ep)
{
	int ret = (p->flags & POLICY_AUDIT) ? 0 : -err;

	if (c && control < NUM_CONTROLS)
		c->denies[control]++;
	*ep = event_new(zone, c, control, hook, ret ? VERDICT_DENIED : VERDICT_AUDITED, ret);
	return ret;
}

/*
 * Signal/ptrace across zones. Host tasks (zone 0) are never reachable from
 * a zone; a peer entry written by the target's policy allows; otherwise the
 * deny flag of either side's policy denies.
 */
static __always_inline bool cross_zone_allowed(__u32 actor, const struct policy *ap, __u32 target,
					       __u32 peer_bit, __u32 deny_flag)
{
	if (actor == target)
		return true;
	if (target == 0)
		return false;

	struct peer_key k = { .actor = actor, .target = target };
	__u32 *bits = bpf_map_lookup_elem(&zone_peers, &k);
	if (bits && (*bits & peer_bit))
		return true;

	struct policy tp;
	load_policy(target, &tp);
	return !((ap->flags | tp.flags) & deny_flag);
}

/*
 * Loopback is the zone's own, not egress, only in the network namespace
 * rauha registered for the member (member_netns): one created for it that
 * no task outside the zone shares. In any other netns (the host's, a
 * joined one) loopback reaches services of tasks outside the zone.
 */
static __always_inline bool own_loopback(__u64 member, __u64 netns_cookie, bool is_loopback)
{
	if (!is_loopback || !netns_cookie)
		return false;
	__u64 *own = bpf_map_lookup_elem(&member_netns, &member);
	return own && *own == netns_cookie;
}

#include "learn.bpf.h"

static __always_inline bool egress4_allowed(__u32 zone, __u32 addr_be, __u16 port)
{
	struct egress4_key k = { .prefixlen = 64 + 32, .zone = zone, .port = port };

	__builtin_memcpy(k.addr, &addr_be, sizeof(k.addr));
	if (port && bpf_map_lookup_elem(&egress4, &k))
		return true;
	k.port = 0;
	return bpf_map_lookup_elem(&egress4, &k) != NULL;
}

static __always_inline bool egress6_allowed(__u32 zone, const __u32 addr_be[4], __u16 port)
{
	struct egress6_key k = { .prefixlen = 64 + 128, .zone = zone, .port = port };

	__builtin_memcpy(k.addr, addr_be, sizeof(k.addr));
	if (port && bpf_map_lookup_elem(&egress6, &k))
		return true;
	k.port = 0;
	return bpf_map_lookup_elem(&egress6, &k) != NULL;
}

/* Whether zone's denied_egress covers the destination (family AF_INET:
 * addr[0]; an IPv4-mapped IPv6 address is judged as the IPv4 one). Any
 * covering entry denies: the exact port's, then any port's. */
static __always_inline bool egress_denied(__u32 zone, __u8 family, const __u32 addr[4], __u16 port)
{
	if (family == AF_INET || (addr[0] == 0 && addr[1] == 0 && addr[2] == bpf_htonl(0xffff))) {
		struct egress4_key k = { .prefixlen = 64 + 32, .zone = zone, .port = port };
		__u32 a4 = family == AF_INET ? addr[0] : addr[3];

		__builtin_memcpy(k.addr, &a4, sizeof(k.addr));
		if (port && bpf_map_lookup_elem(&egress_deny4, &k))
			return true;
		k.port = 0;
		return bpf_map_lookup_elem(&egress_deny4, &k) != NULL;
	}
	struct egress6_key k = { .prefixlen = 64 + 128, .zone = zone, .port = port };

	__builtin_memcpy(k.addr, addr, sizeof(k.addr));
	if (port && bpf_map_lookup_elem(&egress_deny6, &k))
		return true;
	k.port = 0;
	return bpf_map_lookup_elem(&egress_deny6, &k) != NULL;
}

static __always_inline bool is_loopback4(__u32 addr_be)
{
	return (bpf_ntohl(addr_be) >> 24) == 127;
}

static __always_inline bool is_v4_mapped(const __u32 a[4])
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff);
}

static __always_inline bool is_loopback6(const __u32 a[4])
{
	return a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1);
}

/* The zone of a member that holds addr (family AF_INET: addr[0]), 0 if none. */
static __always_inline __u32 addr_zone(__u8 family, const __u32 addr[4])
{
	struct addr_key k;
	__u32 *z;

	if (family == AF_INET) {
		__u32 mapped[4] = { 0, 0, bpf_htonl(0xffff), addr[0] };
		__builtin_memcpy(k.addr, mapped, 16);
	} else {
		__builtin_memcpy(k.addr, addr, 16);
	}
	z = bpf_map_lookup_elem(&zone_addr, &k);
	return z ? *z : 0;
}

/* Whether zone's policy lets its members exchange packets with peer's. */
static __always_inline bool net_peer_allowed(__u32 zone, __u32 peer)
{
	struct peer_key k = { .actor = peer, .target = zone };
	__u32 *bits;

	if (peer == zone)
		return true;
	bits = bpf_map_lookup_elem(&zone_peers, &k);
	return bits && (*bits & PEER_NET);
}

static __always_inline bool zones_used(void)
{
	__u32 k = 0;
	__u32 *on = bpf_map_lookup_elem(&zones_in_use, &k);

	return on && *on;
}

/*
 * The egress decision for one destination, shared by the cgroup programs
 * and the LSM hooks. IPv4-mapped IPv6 destinations are IPv4 traffic and are
 * checked against the IPv4 list, so an IPv6 rule cannot widen IPv4.
 * Returns 0 or the negative error; fills *ep when it denied (or audited).
 * proto is the socket's IP protocol, 0 where the caller cannot tell (a
 * learning zone records only what has one).
 */
static __always_inline int egress_check(__u32 zone, __u64 member, __u8 family, const __u32 addr[4],
					__u16 port, __u64 netns_cookie, __u8 proto, __u16 hook,
					struct event **ep)
{
	struct counters *c = counters_of(zone);
	struct policy p;

	*ep = NULL;
	count_check(c, CONTROL_EGRESS);
	load_policy(zone, &p);
	if (p.flags & POLICY_LEARN) {
		learn_egress(zone, member, family, addr, port, netns_cookie, proto, addr_zone(family, addr));
		return 0;
	}
	if (!(p.flags & (POLICY_EGRESS_RESTRICTED | POLICY_ZONES_RESTRICTED | POLICY_EGRESS_DENIES)))
		return 0;

	/* denied_egress first: it wins over every allow. Then an address of
	 * another zone's member is judged by allowed_zones, every other by
	 * allowed_egress. (An IPv4-mapped IPv6 destination is its IPv4
	 * address's key as it stands.) */
	bool denied = (p.flags & POLICY_EGRESS_DENIES) && egress_denied(zone, family, addr, port);
	__u32 peer = 0;
	if (!denied && (p.flags & POLICY_ZONES_RESTRICTED)) {
		peer = addr_zone(family, addr);
		if (peer && net_peer_allowed(zone, peer))
			return 0;
	}
	if (denied || peer) {
		/* denied below */
	} else if (!(p.flags & POLICY_EGRESS_RESTRICTED)) {
		return 0;
	} else if (family == AF_INET || is_v4_mapped(addr)) {
		__u32 a4 = family == AF_INET ? addr[0] : addr[3];
		if (own_loopback(member, netns_cookie, is_loopback4(a4)) || egress4_allowed(zone, a4, port))
			return 0;
	} else {
		if (own_loopback(member, netns_cookie, is_loopback6(addr)) || egress6_allowed(zone, addr, port))
			return 0;
	}

	int ret = deny(zone, &p, c, CONTROL_EGRESS, hook, EPERM, ep);
	if (*ep) {
		(*ep)->target_zone = peer;
		(*ep)->family = family;
		(*ep)->port = port;
		__builtin_memcpy((*ep)->addr, addr, 16);
	}
	return ret;
}

#endif /* RAUHA_COMMON_BPF_H */
