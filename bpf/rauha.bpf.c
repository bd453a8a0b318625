//go:build ignore

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Rauha's kernel programs, one object for both backends: the loader picks
 * the fallback set (cgroup egress + deny observer) or the bpf-lsm set and
 * never loads the other, so the LSM programs cost nothing where the kernel
 * refuses them.
 */
#include "common.bpf.h"
#include "egress.bpf.h"
#include "observer.bpf.h"
#include "iouring.bpf.h"
#include "lsm.bpf.h"
#include "sigio.bpf.h"

/* The kernel's name for the SPDX line above; the LSM and tracing helpers
 * load only into programs with a GPL-compatible license. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";
