/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fallback egress enforcement: cgroup/connect{4,6} and cgroup/sendmsg{4,6},
 * attached only to zone members' cgroup-v2 directories (AddMember).
 * Returning 0 makes connect()/sendmsg() fail with EPERM.
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
	int ret = egress_check(current_zone(), AF_INET, addr, port, bpf_get_netns_cookie(ctx), hook, &e);

	if (e)
		bpf_ringbuf_submit(e, 0);
	return ret ? 0 : 1;
}

static __always_inline int sock_addr6(struct bpf_sock_addr *ctx, __u16 hook)
{
	__u32 addr[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };
	__u16 port = bpf_ntohs((__u16)ctx->user_port);
	struct event *e;
	int ret = egress_check(current_zone(), AF_INET6, addr, port, bpf_get_netns_cookie(ctx), hook, &e);

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

#endif /* RAUHA_EGRESS_BPF_H */
