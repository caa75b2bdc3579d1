/* SPDX-License-Identifier: MIT
 *
 * hook_mem.c - allocation hooks: every successful allocation enters the
 * allocation table (runtime/track/ddp_alloc.c), every free leaves it.
 *
 *   cuMemAlloc_v2, cuMemAllocPitch_v2      plain   (pitch: pitch * height)
 *   cuMemAllocAsync(+_ptsz), FromPool      async-pool
 *   cuMemAllocManaged                      managed
 *   cuMemMap / cuMemUnmap                  VMM: the mapped range is the
 *                                          allocation (Reserve/Create/Release/
 *                                          AddressFree are generated passthroughs)
 *   cuMemFree_v2, cuMemFreeAsync(+_ptsz)   removed (async: at enqueue time)
 *
 * Contract: any thread.  The table takes its own writer lock; a failed
 * driver call changes nothing.  A free of an address the table does not
 * hold (allocated before libddp saw it, or by ddp itself) is passed on
 * silently (DEBUG).
 */
#include "hook.h"
#include "ddp_alloc.h"

static void track_alloc(struct hook_frame *f, CUresult r, const CUdeviceptr *dptr, size_t size,
			enum ddp_alloc_kind kind)
{
	if (r != CUDA_SUCCESS || !dptr)
		return;
	f->addr = *dptr;
	f->bytes = size;
	ddp_alloc_insert(*dptr, size, kind, f->id, NULL);
	DDP_DEBUG(ALLOC, "%s: 0x%llx + %zu (%s)", hook_info_[f->id].name,
		  (unsigned long long)*dptr, size, ddp_alloc_kind_name(kind));
}

static void track_free(struct hook_frame *f, CUresult r, CUdeviceptr p)
{
	struct ddp_alloc_ent e;
	if (r != CUDA_SUCCESS || !p)
		return;
	f->addr = p;
	if (ddp_alloc_remove(p, &e) == DDP_OK) {
		f->bytes = e.size;
		DDP_DEBUG(ALLOC, "%s: 0x%llx (%llu bytes)", hook_info_[f->id].name,
			  (unsigned long long)p, (unsigned long long)e.size);
	} else {
		DDP_DEBUG(ALLOC, "%s: 0x%llx was not tracked", hook_info_[f->id].name,
			  (unsigned long long)p);
	}
}

CUresult hook_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuMemAlloc_v2))
		return HOOK_REAL(cuMemAlloc_v2)(dptr, bytesize);
	CUresult r = HOOK_REAL(cuMemAlloc_v2)(dptr, bytesize);
	track_alloc(&f, r, dptr, bytesize, DDP_ALLOC_PLAIN);
	HOOK_FINISH(&f, r, (dptr, bytesize));
	return r;
}

CUresult hook_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
				 size_t Height, unsigned int ElementSizeBytes)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuMemAllocPitch_v2))
		return HOOK_REAL(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	CUresult r = HOOK_REAL(cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	size_t size = (r == CUDA_SUCCESS && pPitch) ? *pPitch * Height : WidthInBytes * Height;
	track_alloc(&f, r, dptr, size, DDP_ALLOC_PLAIN);
	HOOK_FINISH(&f, r, (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
	return r;
}

CUresult hook_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuMemAllocManaged))
		return HOOK_REAL(cuMemAllocManaged)(dptr, bytesize, flags);
	CUresult r = HOOK_REAL(cuMemAllocManaged)(dptr, bytesize, flags);
	track_alloc(&f, r, dptr, bytesize, DDP_ALLOC_MANAGED);
	HOOK_FINISH(&f, r, (dptr, bytesize, flags));
	return r;
}

#define ALLOC_ASYNC(sym) \
	CUresult hook_##sym(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) \
	{ \
		struct hook_frame f; \
		if (!hook_begin(&f, HOOK_ID_##sym)) \
			return HOOK_REAL(sym)(dptr, bytesize, hStream); \
		CUresult r = HOOK_REAL(sym)(dptr, bytesize, hStream); \
		track_alloc(&f, r, dptr, bytesize, DDP_ALLOC_ASYNC); \
		HOOK_FINISH(&f, r, (dptr, bytesize, hStream)); \
		return r; \
	}
ALLOC_ASYNC(cuMemAllocAsync)
ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define ALLOC_POOL(sym) \
	CUresult hook_##sym(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) \
	{ \
		struct hook_frame f; \
		if (!hook_begin(&f, HOOK_ID_##sym)) \
			return HOOK_REAL(sym)(dptr, bytesize, pool, hStream); \
		CUresult r = HOOK_REAL(sym)(dptr, bytesize, pool, hStream); \
		track_alloc(&f, r, dptr, bytesize, DDP_ALLOC_ASYNC); \
		HOOK_FINISH(&f, r, (dptr, bytesize, pool, hStream)); \
		return r; \
	}
ALLOC_POOL(cuMemAllocFromPoolAsync)
ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz)

CUresult hook_cuMemFree_v2(CUdeviceptr dptr)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuMemFree_v2))
		return HOOK_REAL(cuMemFree_v2)(dptr);
	CUresult r = HOOK_REAL(cuMemFree_v2)(dptr);
	track_free(&f, r, dptr);
	HOOK_FINISH(&f, r, (dptr));
	return r;
}

#define FREE_ASYNC(sym) \
	CUresult hook_##sym(CUdeviceptr dptr, CUstream hStream) \
	{ \
		struct hook_frame f; \
		if (!hook_begin(&f, HOOK_ID_##sym)) \
			return HOOK_REAL(sym)(dptr, hStream); \
		CUresult r = HOOK_REAL(sym)(dptr, hStream); \
		track_free(&f, r, dptr); \
		HOOK_FINISH(&f, r, (dptr, hStream)); \
		return r; \
	}
FREE_ASYNC(cuMemFreeAsync)
FREE_ASYNC(cuMemFreeAsync_ptsz)

CUresult hook_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		       CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuMemMap))
		return HOOK_REAL(cuMemMap)(ptr, size, offset, handle, flags);
	CUresult r = HOOK_REAL(cuMemMap)(ptr, size, offset, handle, flags);
	track_alloc(&f, r, &ptr, size, DDP_ALLOC_VMM);
	HOOK_FINISH(&f, r, (ptr, size, offset, handle, flags));
	return r;
}

CUresult hook_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct hook_frame f;
	if (!hook_begin(&f, HOOK_ID_cuMemUnmap))
		return HOOK_REAL(cuMemUnmap)(ptr, size);
	CUresult r = HOOK_REAL(cuMemUnmap)(ptr, size);
	if (r == CUDA_SUCCESS) {
		size_t n = ddp_alloc_remove_range(ptr, size);
		f.addr = ptr;
		f.bytes = size;
		DDP_DEBUG(ALLOC, "cuMemUnmap 0x%llx + %zu: %zu mapping(s) removed",
			  (unsigned long long)ptr, size, n);
	}
	HOOK_FINISH(&f, r, (ptr, size));
	return r;
}
