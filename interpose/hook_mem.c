/* SPDX-License-Identifier: MIT
 *
 * hook_mem.c - what the allocation hooks do: every successful allocation
 * enters the allocation table (runtime/track/ddp_alloc.c), every free leaves
 * it.  The hook bodies are generated from hooks.def, whose TRACK_* after-
 * columns name the three actions here (run only when the call succeeded).
 *
 *   cuMemAlloc_v2, cuMemAllocPitch_v2      plain   (pitch: pitch * height)
 *   cuMemAllocAsync(+_ptsz), FromPool      async-pool
 *   cuMemAllocManaged                      managed
 *   cuMemMap / cuMemUnmap                  VMM: the mapped range is the
 *                                          allocation (Reserve/Create/Release/
 *                                          AddressFree are generated passthroughs)
 *   cuMemFree_v2, cuMemFreeAsync(+_ptsz)   removed (async: at enqueue time);
 *                                          before the call, FREEING: the
 *                                          tracker's last look (ddp_sync_freeing)
 *   cuCtxDestroy_v2, cuDevicePrimaryCtxRelease_v2 (the last retain),
 *   cuDevicePrimaryCtxReset_v2             before the call, CTX_GOING: the
 *                                          tracker's last look when the
 *                                          context holds the parameters
 *                                          (ddp_sync_ctx_going); the primary
 *                                          contexts' retains are counted
 *                                          (cuDevicePrimaryCtxRetain: CTX_DONE)
 *
 * Contract: any thread.  The table takes its own writer lock; a failed
 * driver call changes nothing (the generated body runs no after-action for
 * it).  A free of an address the table does not hold (allocated before
 * libddp saw it, or by ddp itself) is passed on silently (DEBUG).
 */
#include "hook.h"
#include "hook_mem.h"
#include "ddp_sync.h"

void hook_mem_alloced(struct hook_frame *f, const CUdeviceptr *dptr, size_t size, enum ddp_alloc_kind kind)
{
	if (!dptr)
		return;
	f->addr = *dptr;
	f->bytes = size;
	ddp_alloc_insert(*dptr, size, kind, f->id, NULL);
	DDP_DEBUG(ALLOC, "%s: 0x%llx + %zu (%s)", hook_info_[f->id].name, (unsigned long long)*dptr, size,
		  ddp_alloc_kind_name(kind));
}

void hook_mem_freeing(struct hook_frame *f, CUdeviceptr p)
{
	(void)f;
	if (p && __atomic_load_n(&ddp_sync_on_, __ATOMIC_RELAXED))
		ddp_sync_freeing((uint64_t)p);
}

void hook_mem_freed(struct hook_frame *f, CUdeviceptr p)
{
	struct ddp_alloc_ent e;
	if (!p)
		return;
	f->addr = p;
	if (ddp_alloc_remove(p, &e) == DDP_OK) {
		f->bytes = e.size;
		DDP_DEBUG(ALLOC, "%s: 0x%llx (%llu bytes)", hook_info_[f->id].name, (unsigned long long)p,
			  (unsigned long long)e.size);
	} else {
		DDP_DEBUG(ALLOC, "%s: 0x%llx was not tracked", hook_info_[f->id].name, (unsigned long long)p);
	}
}

void hook_mem_unmapped(struct hook_frame *f, CUdeviceptr p, size_t size)
{
	size_t n = ddp_alloc_remove_range(p, size);
	f->addr = p;
	f->bytes = size;
	DDP_DEBUG(ALLOC, "cuMemUnmap 0x%llx + %zu: %zu mapping(s) removed", (unsigned long long)p, size, n);
}

/* Retains of each device's primary context seen through the hooks (cudart
 * and NCCL retain it through them too; libddp's own driver calls do not
 * come here and are balanced), and the context's handle. */
#define HOOK_CTX_DEVS 64
static int prim_refs[HOOK_CTX_DEVS];
static CUcontext prim_ctx[HOOK_CTX_DEVS];

void hook_mem_ctx_going(struct hook_frame *f, enum hook_ctx_how how, CUcontext ctx, int dev)
{
	(void)f;
	if (!__atomic_load_n(&ddp_sync_on_, __ATOMIC_RELAXED))
		return;
	if (how == HOOK_CTX_DESTROY) {
		ddp_sync_ctx_going(ctx, "cuCtxDestroy");
		return;
	}
	if (dev < 0 || dev >= HOOK_CTX_DEVS)
		return;
	CUcontext p = __atomic_load_n(&prim_ctx[dev], __ATOMIC_ACQUIRE);
	if (how == HOOK_CTX_RESET)
		ddp_sync_ctx_going(p, "cuDevicePrimaryCtxReset");
	else if (__atomic_load_n(&prim_refs[dev], __ATOMIC_ACQUIRE) == 1) /* the last one */
		ddp_sync_ctx_going(p, "cuDevicePrimaryCtxRelease");
}

void hook_mem_ctx_done(struct hook_frame *f, enum hook_ctx_how how, CUcontext ctx, int dev)
{
	(void)f;
	if (dev < 0 || dev >= HOOK_CTX_DEVS)
		return;
	if (how == HOOK_CTX_RETAIN) {
		if (ctx)
			__atomic_store_n(&prim_ctx[dev], ctx, __ATOMIC_RELEASE);
		__atomic_add_fetch(&prim_refs[dev], 1, __ATOMIC_ACQ_REL);
	} else if (how == HOOK_CTX_RESET) {
		__atomic_store_n(&prim_refs[dev], 0, __ATOMIC_RELEASE);
	} else if (__atomic_load_n(&prim_refs[dev], __ATOMIC_ACQUIRE) > 0) {
		__atomic_sub_fetch(&prim_refs[dev], 1, __ATOMIC_ACQ_REL);
	}
}
