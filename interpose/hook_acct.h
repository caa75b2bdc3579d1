/* SPDX-License-Identifier: MIT
 *
 * hook_acct.h - copy accounting shared by the generated copy/set hooks
 * (hooks_gen.c) and the trace arguments (bytes) of a hook frame.
 *
 * Contract: called from a hook after a successful driver call, on the
 * calling thread's own counters (hook_acct.c); no lock, no allocation.
 */
#ifndef DDP_HOOK_ACCT_H
#define DDP_HOOK_ACCT_H

#include "hook.h"
#include "ddp_sync.h"

/* Typed stubs for symbols the driver lacks (hooks_gen.c). */
extern const union hook_real hook_missing_ HOOK_HIDDEN;

/* A copy or memset of n bytes in direction d; one that writes device memory
 * is told to gradient synchronisation with where it wrote (dst, reach
 * bytes; dst 0: not known, as a copy into an array). */
static inline void hook_acct_copy_at(struct hook_frame *f, enum ddp_copy_dir d, uint64_t dst, uint64_t reach,
				     uint64_t n)
{
	f->bytes = n;
	if (f->st)
		ddp_stats_copy(f->st, d, n);
	if (__builtin_expect(ddp_sync_on_, 0) && (d == DDP_COPY_HTOD || d == DDP_COPY_DTOD || d == DDP_COPY_SET))
		ddp_sync_device_written(dst, reach);
}

static inline void hook_acct_copy(struct hook_frame *f, enum ddp_copy_dir d, uint64_t n)
{
	hook_acct_copy_at(f, d, 0, 0, n);
}

/* cuMemcpy/cuMemcpyAsync (unified addressing): direction from the
 * allocation table (an address no allocation holds counts as host). */
void hook_acct_unified(struct hook_frame *f, CUdeviceptr dst, CUdeviceptr src, uint64_t n) HOOK_HIDDEN;
/* cuMemcpyHtoD(Async) from host bytes src to dst: the counters, and, when
 * gradient synchronisation is on, the bytes it wrote
 * (ddp_sync_host_copied: input data and start-up state) and the host bytes
 * it read (ddp_sync_input_copy: do the ranks read different input; src NULL:
 * not known). */
void hook_acct_htod(struct hook_frame *f, CUdeviceptr dst, const void *src, uint64_t n) HOOK_HIDDEN;
/* cuMemcpyDtoD(Async): the counters, and the copy told to gradient
 * synchronisation (ddp_sync_copied) when it is on. */
void hook_acct_dtod(struct hook_frame *f, CUdeviceptr dst, CUdeviceptr src, uint64_t n) HOOK_HIDDEN;
void hook_acct_2d(struct hook_frame *f, const CUDA_MEMCPY2D *p) HOOK_HIDDEN;
void hook_acct_3d(struct hook_frame *f, const CUDA_MEMCPY3D *p) HOOK_HIDDEN;
void hook_acct_3d_peer(struct hook_frame *f, const CUDA_MEMCPY3D_PEER *p) HOOK_HIDDEN;

#endif /* DDP_HOOK_ACCT_H */
