//go:build ignore

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * BPF-LSM probe. Loading is not enough: a kernel can refuse the load (this
 * project's CI VM returns EPERM), or accept and attach it while the bpf LSM
 * is not active, so the hook never runs. The loader attaches this program,
 * opens a file and checks that the hook counted its own process.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

volatile const __u32 probe_tgid;
__u64 probe_hits;

SEC("lsm/file_open")
int BPF_PROG(probe_file_open, struct file *file, int ret)
{
	if ((bpf_get_current_pid_tgid() >> 32) == probe_tgid)
		__sync_fetch_and_add(&probe_hits, 1);
	return ret;
}

/* The kernel's name for the SPDX line above; the LSM and tracing helpers
 * load only into programs with a GPL-compatible license. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
