/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Egress enforcement on zone members' cgroup-v2 directories (AddMember):
 *   - cgroup/connect{4,6} and cgroup/sendmsg{4,6} (fallback backend) judge
 *     the address a task passes: connect()/sendmsg() fail with EPERM and
 *     leave an event;
 *   - cgroup_skb/egress (both backends) judges every IP packet a member's
 *     socket sends by where it really goes, which the address passed does
 *     not tell for raw and ICMP sockets or with source routing;
 *   - cgroup_skb/ingress (both backends) judges every IP packet delivered
 *     to a member's socket by the zone of the member that sent it.
 * Returning 0 denies.
 *
 * These programs run only for tasks under a member's cgroup, so a task that
 * resolves to zone 0 here sits in a member whose registration is being added
 * or removed. It is treated like a zone without a policy (egress restricted,
 * nothing allowed): attach happens before registration and unregistration
 * before detach, so those windows fail closed.
 */
#ifndef RAUHA_EGRESS_BPF_H
#define RAUHA_EGRESS_BPF_H

#include "common.bpf.h"

static __always_inline int sock_addr4(struct bpf_sock_addr *ctx, __u16 hook)
{
	__u32 addr[4] = { ctx->user_ip4, 0, 0, 0 };
	__u16 port = bpf_ntohs((__u16)ctx->user_port);
	struct event *e;
	__u64 member;
	__u32 zone = current_member(&member);
	int ret = egress_check(zone, member, AF_INET, addr, port, bpf_get_netns_cookie(ctx),
			       ctx->protocol, hook, &e);

	if (e)
		bpf_ringbuf_submit(e, 0);
	return ret ? 0 : 1;
}

static __always_inline int sock_addr6(struct bpf_sock_addr *ctx, __u16 hook)
{
	__u32 addr[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };
	__u16 port = bpf_ntohs((__u16)ctx->user_port);
	struct event *e;
	__u64 member;
	__u32 zone = current_member(&member);
	int ret = egress_check(zone, member, AF_INET6, addr, port, bpf_get_netns_cookie(ctx),
			       ctx->protocol, hook, &e);

	if (e)
		bpf_ringbuf_submit(e, 0);
	return ret ? 0 : 1;
}

SEC("cgroup/connect4")
int egress_connect4(struct bpf_sock_addr *ctx)
{
	return sock_addr4(ctx, HOOK_CONNECT4);
}

SEC("cgroup/connect6")
int egress_connect6(struct bpf_sock_addr *ctx)
{
	return sock_addr6(ctx, HOOK_CONNECT6);
}

/* Unconnected UDP: connect() never runs for sendto()/sendmsg() with an address. */
SEC("cgroup/sendmsg4")
int egress_sendmsg4(struct bpf_sock_addr *ctx)
{
	return sock_addr4(ctx, HOOK_SENDMSG4);
}

SEC("cgroup/sendmsg6")
int egress_sendmsg6(struct bpf_sock_addr *ctx)
{
	return sock_addr6(ctx, HOOK_SENDMSG6);
}

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IPOPT_LSRR 131
#define IPOPT_SSRR 137
#define IPPROTO_ICMPV6 58
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_AUTH 51
#define NEXTHDR_DEST 60
#define MAX_IP6_EXT 8

struct skb_ratelimit {
	__u64 ts;     /* when the tokens were last refilled */
	__u64 tokens; /* events that may still be reported */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_ZONES);
	__type(key, __u32);
	__type(value, struct skb_ratelimit);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} skb_event_limit SEC(".maps");

/* What the packet program judges: where a packet goes and what it carries. */
struct packet {
	__u32 daddr[4];
	__u32 saddr[4];
	__u16 dport; /* host byte order; 0 without a port (ICMP, raw, later fragments) */
	__u16 sport;
	__u8 family;
	__u8 proto;
	/* Source-routed (IPv4 LSRR/SSRR, IPv6 routing header) or not parseable:
	 * the destination in the header is not where the packet ends. */
	bool unjudgeable;
};

/* Zone of the socket that sends skb: the cgroup it was created in. */
static __always_inline __u32 skb_member(struct __sk_buff *skb, __u64 *member)
{
	*member = 0;
	for (int l = 1; l <= MAX_LEVEL; l++) {
		__u64 id = bpf_skb_ancestor_cgroup_id(skb, l);
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

/*
 * What the packet programs know about the sockets of one cgroup: its zone
 * (the walk above), that zone's policy flags and the zones_in_use switch,
 * read at net_gen's generation gen, and the last destination egress_skb
 * allowed one of its sockets for a reason that holds for every packet with
 * the same family, protocol, addresses and destination port from that
 * cgroup at that generation.
 */
struct cg_entry {
	__u64 cgid; /* the socket's cgroup; 0: empty */
	__u64 gen;
	__u64 member;
	__u32 zone;
	__u32 flags;
	__u32 daddr[4];
	__u32 saddr[4];
	__u16 dport;
	__u8 family;
	__u8 proto;
	__u8 zones_used;
	__u8 allowed; /* daddr to proto hold an allowed destination */
	__u16 pad;
};

struct verdict_slot {
	struct bpf_spin_lock lock;
	__u32 pad;
	struct cg_entry e;
};

/*
 * A cache of cg_entry, so that most packets skip the walk from their
 * socket's cgroup to the zone and the lookups of the verdict, new sockets'
 * first packets too: VERDICT_SLOTS slots for each of the first
 * VERDICT_CPUS CPUs (later CPUs share theirs), a cgroup's slot chosen by
 * its id. A slot holds one cgroup at a time and is valid while net_gen has
 * the generation it was read at: userspace bumps it after every change of
 * what a verdict is read from. Every access holds the slot's lock, which
 * also keeps interrupts off: no packet reads a slot half-written by another
 * CPU or by a program it interrupted.
 */
enum {
	VERDICT_CPUS = 64,
	VERDICT_SLOTS = 64,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VERDICT_CPUS * VERDICT_SLOTS);
	__type(key, __u32);
	__type(value, struct verdict_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} verdict_slots SEC(".maps");

/* The slot of cgroup cgid on this CPU, NULL for cgid 0 (no full socket:
 * time-wait sockets, kernel packets), which is judged without one. */
static __always_inline struct verdict_slot *slot_of(__u64 cgid)
{
	if (!cgid)
		return NULL;
	__u32 k = (bpf_get_smp_processor_id() % VERDICT_CPUS) * VERDICT_SLOTS +
		  (__u32)((cgid ^ (cgid >> 6)) % VERDICT_SLOTS);
	return bpf_map_lookup_elem(&verdict_slots, &k);
}

static __always_inline struct gen_value *net_gen_value(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&net_gen, &k);
}

/*
 * *e := the slot's entry; true when it holds cgid at the current
 * generation. The generation is read without its lock here: a packet that
 * passes while userspace bumps it is judged as if it had left just before.
 */
static __always_inline bool slot_cached(struct verdict_slot *vs, struct gen_value *g, __u64 cgid,
					struct cg_entry *e)
{
	if (!vs || !g)
		return false;
	bpf_spin_lock(&vs->lock);
	*e = vs->e;
	bpf_spin_unlock(&vs->lock);
	return e->cgid == cgid && e->gen == g->gen;
}

/*
 * Fills the zone part of *e by walking from skb's socket to its zone, and
 * stores it in the slot with the generation read first, under net_gen's
 * lock: that orders the reads after it, so they see every map change made
 * before that generation was set.
 */
static __always_inline void slot_resolve(struct __sk_buff *skb, struct verdict_slot *vs,
					 struct gen_value *g, __u64 cgid, struct cg_entry *e)
{
	struct policy pol;

	e->gen = 0;
	if (vs && g) {
		bpf_spin_lock(&g->lock);
		e->gen = g->gen;
		bpf_spin_unlock(&g->lock);
	}
	e->zone = skb_member(skb, &e->member);
	load_policy(e->zone, &pol);
	e->cgid = cgid;
	e->flags = pol.flags;
	e->zones_used = zones_used();
	e->allowed = 0;
	if (vs && g) {
		bpf_spin_lock(&vs->lock);
		vs->e = *e;
		bpf_spin_unlock(&vs->lock);
	}
}

/* Ports of the transport header at off, for protocols that have them
 * where TCP and UDP do. */
static __always_inline void transport_ports(struct __sk_buff *skb, __u32 off, struct packet *p)
{
	__u16 ports[2];

	switch (p->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)) == 0) {
			p->sport = bpf_ntohs(ports[0]);
			p->dport = bpf_ntohs(ports[1]);
		}
	}
}

/* Whether the IPv4 options (len bytes after the fixed header) hold a loose
 * or strict source route, or cannot be read. */
static __always_inline bool ip4_source_routed(struct __sk_buff *skb, __u32 len)
{
	__u8 opt[64];

	if (len == 0)
		return false;
	/* The verifier of older kernels (6.1) refuses a length it cannot bound
	 * away from zero, and clang folds "len == 0 || len > 40" into one
	 * comparison on a copy. Bound the register the helper gets itself,
	 * above and then (signed) below, with clang kept from merging them. */
	__u32 n = len;
	asm volatile("" : "+r"(n));
	if (n > 40)
		return true;
	asm volatile("" : "+r"(n));
	if ((__s32)n < 1 || bpf_skb_load_bytes(skb, 20, opt, n) < 0)
		return true;
	__u32 i = 0;
	for (int n = 0; n < 40; n++) {
		if (i >= len)
			break;
		__u8 type = opt[i & 63];
		if (type == 0) /* end of options */
			break;
		if (type == 1) { /* no-op */
			i++;
			continue;
		}
		if (type == IPOPT_LSRR || type == IPOPT_SSRR)
			return true;
		if (i + 1 >= len)
			return true;
		__u8 olen = opt[(i + 1) & 63];
		if (olen < 2)
			return true;
		i += olen;
	}
	return false;
}

static __always_inline void parse_ip4(struct __sk_buff *skb, struct packet *p)
{
	__u8 h[20];

	p->family = AF_INET;
	if (bpf_skb_load_bytes(skb, 0, h, sizeof(h)) < 0) {
		p->unjudgeable = true;
		return;
	}
	__u32 hlen = (h[0] & 0xf) * 4;
	p->proto = h[9];
	__builtin_memcpy(&p->saddr[0], &h[12], 4);
	__builtin_memcpy(&p->daddr[0], &h[16], 4);
	if (hlen < 20) {
		p->unjudgeable = true;
		return;
	}
	if (hlen > 20 && ip4_source_routed(skb, hlen - 20))
		p->unjudgeable = true;
	/* A fragment after the first has no transport header. */
	if (!(((h[6] << 8) | h[7]) & 0x1fff))
		transport_ports(skb, hlen, p);
}

static __always_inline void parse_ip6(struct __sk_buff *skb, struct packet *p)
{
	__u8 h[40];

	p->family = AF_INET6;
	if (bpf_skb_load_bytes(skb, 0, h, sizeof(h)) < 0) {
		p->unjudgeable = true;
		return;
	}
	__builtin_memcpy(p->saddr, &h[8], 16);
	__builtin_memcpy(p->daddr, &h[24], 16);
	__u8 next = h[6];
	__u32 off = 40;
	bool first = true;
	for (int n = 0; n < MAX_IP6_EXT; n++) {
		__u8 e[4];
		switch (next) {
		case NEXTHDR_ROUTING:
			p->unjudgeable = true; /* and read on, for the event's port */
			/* fall through */
		case NEXTHDR_HOP:
		case NEXTHDR_DEST:
		case NEXTHDR_AUTH:
			if (bpf_skb_load_bytes(skb, off, e, 2) < 0) {
				p->unjudgeable = true;
				return;
			}
			next = e[0];
			off += next == NEXTHDR_AUTH ? (e[1] + 2) * 4 : (e[1] + 1) * 8;
			continue;
		case NEXTHDR_FRAGMENT:
			if (bpf_skb_load_bytes(skb, off, e, 4) < 0) {
				p->unjudgeable = true;
				return;
			}
			next = e[0];
			first = !(((e[2] << 8) | e[3]) & 0xfff8);
			off += 8;
			continue;
		}
		p->proto = next;
		if (first)
			transport_ports(skb, off, p);
		return;
	}
	p->unjudgeable = true; /* more extension headers than are read */
}

/*
 * A packet of an inbound TCP connection: the SYN-ACK a listener sends, or a
 * segment of a socket whose local address and port have a listener (an
 * accepted connection). No outbound TCP connection of a zone task reaches a
 * forbidden peer this way: every active open passes cgroup/connect (or
 * lsm/socket_connect), which judged the peer it was given, and the peer of
 * a TCP connection is the address given unless source routing changes it,
 * which the caller denies first. Raw sockets are never "inbound".
 */
static __always_inline bool inbound_tcp(struct __sk_buff *skb, const struct packet *p)
{
	struct bpf_sock *sk = skb->sk;

	if (!sk || p->proto != IPPROTO_TCP)
		return false;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->type != SOCK_STREAM || sk->protocol != IPPROTO_TCP)
		return false;
	if (sk->state == BPF_TCP_LISTEN)
		return true;

	/* Seen from the listener: the peer is the source, port 0 so that no
	 * established socket (ours) matches and the lookup falls to listeners. */
	struct bpf_sock_tuple t = {};
	__u32 size;
	if (p->family == AF_INET) {
		t.ipv4.saddr = p->daddr[0];
		t.ipv4.daddr = p->saddr[0];
		t.ipv4.dport = bpf_htons(p->sport);
		size = sizeof(t.ipv4);
	} else {
		__builtin_memcpy(t.ipv6.saddr, p->daddr, 16);
		__builtin_memcpy(t.ipv6.daddr, p->saddr, 16);
		t.ipv6.dport = bpf_htons(p->sport);
		size = sizeof(t.ipv6);
	}
	struct bpf_sock *l = bpf_sk_lookup_tcp(skb, &t, size, BPF_F_CURRENT_NETNS, 0);
	if (!l)
		return false;
	bool listening = l->state == BPF_TCP_LISTEN;
	bpf_sk_release(l);
	return listening;
}

/*
 * The kernel socket behind skb, NULL if none. The verifier forbids
 * arithmetic on a socket pointer: its value is read through the stack, and
 * fields through CO-RE probe reads.
 */
static __always_inline struct sock *skb_sock(struct __sk_buff *skb)
{
	struct bpf_sock *bsk = skb->sk;
	struct sock *sk = NULL;

	if (bsk)
		bpf_probe_read_kernel(&sk, sizeof(sk), &bsk);
	return sk;
}

/* The network namespace cookie of sk, 0 if unknown (bpf_get_netns_cookie
 * takes a __sk_buff only since 6.17). */
static __always_inline __u64 sock_cookie_of_netns(struct sock *sk)
{
	if (!sk)
		return 0;
	struct net *net = BPF_CORE_READ(sk, __sk_common.skc_net.net);
	if (!bpf_core_field_exists(net->net_cookie))
		return 0;
	return BPF_CORE_READ(net, net_cookie);
}

/*
 * The network namespace's own signalling: its kernel sockets (neighbour
 * discovery, MLD, IGMP, ICMP errors and echo replies, TCP resets) belong
 * to the cgroup of the task that created the netns, usually the member's
 * init. Their packets carry no data a task chose. Kernel UDP sockets
 * (tunnels: VXLAN, WireGuard) carry what tasks send and stay judged.
 */
static __always_inline bool kernel_signalling(struct sock *sk, const struct packet *p)
{
	if (!sk || !BPF_CORE_READ_BITFIELD_PROBED(sk, sk_kern_sock))
		return false;
	return p->proto == IPPROTO_ICMP || p->proto == IPPROTO_ICMPV6 || p->proto == IPPROTO_IGMP ||
	       p->proto == IPPROTO_TCP;
}

/* One event per denied packet would let a flood fill the ring buffer and
 * crowd out every other event: a token bucket per zone and CPU. */
static __always_inline bool skb_event_allowed(__u32 zone)
{
	struct skb_ratelimit *rl = bpf_map_lookup_elem(&skb_event_limit, &zone);

	if (!rl)
		return false;
	__u64 now = bpf_ktime_get_boot_ns();
	__u64 refill = (now - rl->ts) / (1000000000ULL / SKB_EVENT_RATE);
	if (refill) {
		rl->tokens = rl->tokens + refill > SKB_EVENT_BURST ? SKB_EVENT_BURST : rl->tokens + refill;
		rl->ts = now;
	}
	if (!rl->tokens)
		return false;
	rl->tokens--;
	return true;
}

/* Whether p goes where e's allowed destination is, from the same address. */
static __always_inline bool same_destination(const struct cg_entry *e, const struct packet *p)
{
	return e->allowed && !p->unjudgeable && e->family == p->family && e->proto == p->proto &&
	       e->dport == p->dport && e->daddr[0] == p->daddr[0] && e->daddr[1] == p->daddr[1] &&
	       e->daddr[2] == p->daddr[2] && e->daddr[3] == p->daddr[3] && e->saddr[0] == p->saddr[0] &&
	       e->saddr[1] == p->saddr[1] && e->saddr[2] == p->saddr[2] && e->saddr[3] == p->saddr[3];
}

/* Keeps p's destination as allowed, unless the slot was refilled since e
 * was read (another cgroup, another generation). */
static __always_inline void slot_remember(struct verdict_slot *vs, const struct cg_entry *e,
					  const struct packet *p)
{
	if (!vs)
		return;
	bpf_spin_lock(&vs->lock);
	if (vs->e.cgid == e->cgid && vs->e.gen == e->gen) {
		__builtin_memcpy(vs->e.daddr, p->daddr, 16);
		__builtin_memcpy(vs->e.saddr, p->saddr, 16);
		vs->e.dport = p->dport;
		vs->e.family = p->family;
		vs->e.proto = p->proto;
		vs->e.allowed = 1;
	}
	bpf_spin_unlock(&vs->lock);
}

static __always_inline void skb_event(__u32 zone, __u32 pflags, struct counters *c,
				      struct __sk_buff *skb, const struct packet *p, __u16 control,
				      __u16 hook, __u32 peer, __u64 flags)
{
	if (!skb_event_allowed(zone))
		return;
	/* No task fields: a packet may leave in softirq (TCP timers), where
	 * current is whatever ran, and kernels before 6.10 do not give these
	 * programs current's helpers. The socket's cgroup names the member. */
	struct event *e = event_reserve(zone, c, control, hook,
					(pflags & POLICY_AUDIT) ? VERDICT_AUDITED : VERDICT_DENIED,
					(pflags & POLICY_AUDIT) ? 0 : -EPERM);
	if (!e)
		return;
	e->cgid = bpf_skb_cgroup_id(skb);
	e->target_zone = peer;
	e->family = p->family;
	e->arg = p->proto | flags;
	if (hook == HOOK_SKB_INGRESS) {
		e->port = p->sport;
		__builtin_memcpy(e->addr, p->saddr, 16);
	} else {
		e->port = p->dport;
		__builtin_memcpy(e->addr, p->daddr, 16);
	}
	bpf_ringbuf_submit(e, 0);
}

enum skb_verdict {
	SKB_DENY,
	SKB_ALLOW,
	SKB_ALLOW_KEPT, /* allowed for a reason slot_remember may keep */
};

static __always_inline int egress_judge(struct __sk_buff *skb, const struct cg_entry *e,
					const struct packet *p, __u32 *peer, __u64 *flags)
{
	__u32 zone = e->zone;
	bool restricted = e->flags & (POLICY_EGRESS_RESTRICTED | POLICY_ZONES_RESTRICTED);
	bool denies = e->flags & POLICY_EGRESS_DENIES;

	if (p->unjudgeable) {
		/* Where it ends is unknown: it may be another zone's member, or
		 * a denied address. */
		if (!restricted && !denies && (!e->zones_used || addr_zone(p->family, p->saddr) == zone))
			return SKB_ALLOW;
		*flags = PACKET_UNJUDGEABLE;
		return SKB_DENY;
	}
	if (denies && egress_denied(zone, p->family, p->daddr, p->dport)) {
		/* denied_egress wins over every allow; only inbound TCP and the
		 * netns's own signalling pass. Never kept: a cached destination
		 * is one no deny covered. */
		if (inbound_tcp(skb, p) || kernel_signalling(skb_sock(skb), p))
			return SKB_ALLOW;
		return SKB_DENY;
	}
	*peer = addr_zone(p->family, p->daddr);
	if (*peer == zone) {
		/* A zone's members always reach each other under allowed_zones;
		 * without it, allowed_egress judges their addresses as before. */
		if (e->flags & POLICY_ZONES_RESTRICTED)
			return SKB_ALLOW_KEPT;
		*peer = 0;
	}
	if (*peer && e->zones_used && addr_zone(p->family, p->saddr) != zone) {
		*flags = PACKET_UNREGISTERED;
	} else if (*peer && (e->flags & POLICY_ZONES_RESTRICTED)) {
		if (net_peer_allowed(zone, *peer))
			return SKB_ALLOW_KEPT;
	} else if (!(e->flags & POLICY_EGRESS_RESTRICTED)) {
		return SKB_ALLOW_KEPT;
	} else {
		/* The allow-list first: the socket's fields cost probe reads. */
		bool loopback;
		if (p->family == AF_INET) {
			if (egress4_allowed(zone, p->daddr[0], p->dport))
				return SKB_ALLOW_KEPT;
			loopback = is_loopback4(p->daddr[0]);
		} else {
			if (egress6_allowed(zone, p->daddr, p->dport))
				return SKB_ALLOW_KEPT;
			loopback = is_loopback6(p->daddr);
		}
		/* Not kept: the socket's netns decides, not its cgroup. */
		if (loopback && own_loopback(e->member, sock_cookie_of_netns(skb_sock(skb)), true))
			return SKB_ALLOW;
	}
	/* Not kept: the socket's state and the listeners change. */
	if (inbound_tcp(skb, p) || kernel_signalling(skb_sock(skb), p))
		return SKB_ALLOW;
	return SKB_DENY;
}

/*
 * A learning zone records where its raw and ICMP ("ping") sockets send:
 * the address hooks never see a raw socket's destination (connect and
 * sendmsg hooks are TCP's and UDP's; with IP_HDRINCL the header holds it)
 * and see a ping socket's only when it connects. TCP and UDP are recorded
 * there, by the armed process that did it. Packet programs may not ask
 * which task is current before Linux 6.14: a packet is recorded for its
 * socket's member while the zone learns, without the program's name. The
 * runtime's own set-up opens no such socket, and the netns's kernel sockets
 * (ICMP errors and echo replies) are skipped.
 */
static __always_inline void learn_packet(struct __sk_buff *skb, const struct cg_entry *e,
					 const struct packet *p)
{
	struct bpf_sock *bsk = skb->sk;

	if (!bsk || p->unjudgeable || !learn_on() || !zone_learns(e->zone))
		return;
	bsk = bpf_sk_fullsock(bsk);
	if (!bsk)
		return;
	bool ping = bsk->type == SOCK_DGRAM && (bsk->protocol == IPPROTO_ICMP || bsk->protocol == IPPROTO_ICMPV6);
	if (bsk->type != SOCK_RAW && !ping)
		return;
	struct sock *sk = skb_sock(skb);
	if (!sk || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_kern_sock))
		return;
	learn_destination(e->zone, e->member, p->family, p->daddr, p->dport, sock_cookie_of_netns(sk), p->proto,
			  addr_zone(p->family, p->daddr), true, e->cgid);
}

/*
 * Every IPv4/IPv6 packet a member's socket sends (TCP, UDP, raw, ICMP
 * "ping"), after routing, with the destination it really has. Other
 * families (packet sockets) never reach cgroup_skb programs: they need
 * CAP_NET_RAW, which libzone takes from egress-restricted zones.
 * A destination denied_egress covers is denied first. An address of
 * another zone's member is judged by allowed_zones, when the policy has
 * it, every other by allowed_egress. While any zone uses
 * allowed_zones, a packet to another zone's member must come from an
 * address registered to the sender's zone, whatever the sender's policy:
 * the receiver's ingress program judges the sender by that address, so an
 * address it cannot attribute (one added after create, or spoofed) must
 * not reach it. The netns's own signalling passes (kernel_signalling), and
 * so do inbound TCP connections (inbound_tcp). Packets from a cgroup to
 * the destination it was last allowed skip the judgement (verdict_slots)
 * until net_gen changes.
 */
SEC("cgroup_skb/egress")
int egress_skb(struct __sk_buff *skb)
{
	__u64 cgid = bpf_skb_cgroup_id(skb);
	struct verdict_slot *vs = slot_of(cgid);
	struct gen_value *g = net_gen_value();
	struct cg_entry e = {};
	bool cached = slot_cached(vs, g, cgid, &e);

	if (!cached)
		slot_resolve(skb, vs, g, cgid, &e);
	bool restricted = e.flags & (POLICY_EGRESS_RESTRICTED | POLICY_ZONES_RESTRICTED);
	if (!restricted && !(e.flags & (POLICY_EGRESS_DENIES | POLICY_LEARN)) && !e.zones_used)
		return 1;

	struct packet p = {};
	if (skb->protocol == bpf_htons(ETH_P_IP))
		parse_ip4(skb, &p);
	else if (skb->protocol == bpf_htons(ETH_P_IPV6))
		parse_ip6(skb, &p);
	else
		return 1; /* not IP: no address to judge */
	if (e.flags & POLICY_LEARN)
		learn_packet(skb, &e, &p);

	struct counters *c = counters_of(e.zone);
	count_check(c, CONTROL_EGRESS);
	if (cached && same_destination(&e, &p))
		return 1;
	__u32 peer = 0;
	__u64 flags = 0;
	int v = egress_judge(skb, &e, &p, &peer, &flags);
	if (v == SKB_ALLOW_KEPT)
		slot_remember(vs, &e, &p);
	if (v != SKB_DENY)
		return 1;
	if (c)
		c->denies[CONTROL_EGRESS]++;
	skb_event(e.zone, e.flags, c, skb, &p, CONTROL_EGRESS, HOOK_SKB_EGRESS, peer, flags);
	return (e.flags & POLICY_AUDIT) ? 1 : 0;
}

/*
 * Every IPv4/IPv6 packet delivered to a member's socket, in a zone whose
 * policy sets allowed_zones: one from an address of another zone's member
 * passes only if this zone allows that zone. The sender's egress program
 * has made sure that such a source address is really the sender's.
 */
SEC("cgroup_skb/ingress")
int ingress_skb(struct __sk_buff *skb)
{
	__u64 cgid = bpf_skb_cgroup_id(skb);
	struct verdict_slot *vs = slot_of(cgid);
	struct gen_value *g = net_gen_value();
	struct cg_entry e = {};

	if (!slot_cached(vs, g, cgid, &e))
		slot_resolve(skb, vs, g, cgid, &e);
	if (!(e.flags & POLICY_ZONES_RESTRICTED))
		return 1;

	struct packet p = {};
	if (skb->protocol == bpf_htons(ETH_P_IP))
		parse_ip4(skb, &p);
	else if (skb->protocol == bpf_htons(ETH_P_IPV6))
		parse_ip6(skb, &p);
	else
		return 1;

	struct counters *c = counters_of(e.zone);
	count_check(c, CONTROL_INGRESS);
	/* The source is in the fixed header: an unparsable rest does not hide it. */
	__u32 peer = addr_zone(p.family, p.saddr);
	if (!peer || net_peer_allowed(e.zone, peer))
		return 1;
	if (c)
		c->denies[CONTROL_INGRESS]++;
	skb_event(e.zone, e.flags, c, skb, &p, CONTROL_INGRESS, HOOK_SKB_INGRESS, peer, 0);
	return (e.flags & POLICY_AUDIT) ? 1 : 0;
}

#endif /* RAUHA_EGRESS_BPF_H */
