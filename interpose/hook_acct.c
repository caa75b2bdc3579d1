/* SPDX-License-Identifier: MIT
 *
 * hook_acct.c - copy direction and size of the structured copies (2D, 3D,
 * unified-address copies), for the generated copy hooks.
 *
 * Contract: called after a successful copy from the copying thread; reads
 * the caller's descriptor and the allocation table (lock-free); no
 * allocation.
 */
#include "hook_acct.h"
#include "ddp_alloc.h"
#include "ddp_sync.h"

static int is_device(CUmemorytype t, CUdeviceptr dev)
{
	if (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY)
		return 1;
	if (t == CU_MEMORYTYPE_UNIFIED)
		return ddp_alloc_find((uint64_t)dev, NULL);
	return 0;
}

static enum ddp_copy_dir dir_of(int dst_dev, int src_dev)
{
	if (dst_dev)
		return src_dev ? DDP_COPY_DTOD : DDP_COPY_HTOD;
	return src_dev ? DDP_COPY_DTOH : DDP_COPY_HTOH;
}

void hook_acct_dtod(struct hook_frame *f, CUdeviceptr dst, CUdeviceptr src, uint64_t n)
{
	hook_acct_copy_at(f, DDP_COPY_DTOD, (uint64_t)dst, n, n);
	if (__builtin_expect(ddp_sync_on_, 0))
		ddp_sync_copied((uint64_t)dst, (uint64_t)src, n);
}

void hook_acct_htod(struct hook_frame *f, CUdeviceptr dst, const void *src, uint64_t n)
{
	hook_acct_copy_at(f, DDP_COPY_HTOD, (uint64_t)dst, n, n);
	if (__builtin_expect(ddp_sync_on_, 0)) {
		ddp_sync_host_copied((uint64_t)dst, n);
		if (src)
			ddp_sync_input_copy(src, n);
	}
}

void hook_acct_unified(struct hook_frame *f, CUdeviceptr dst, CUdeviceptr src, uint64_t n)
{
	enum ddp_copy_dir d = dir_of(ddp_alloc_find(dst, NULL), ddp_alloc_find(src, NULL));
	if (d == DDP_COPY_HTOD)
		hook_acct_htod(f, dst, (const void *)(uintptr_t)src, n);
	else
		hook_acct_copy_at(f, d, (uint64_t)dst, n, n);
}

void hook_acct_2d(struct hook_frame *f, const CUDA_MEMCPY2D *p)
{
	if (!p)
		return;
	hook_acct_copy(
		f, dir_of(is_device(p->dstMemoryType, p->dstDevice), is_device(p->srcMemoryType, p->srcDevice)),
		(uint64_t)p->WidthInBytes * p->Height);
}

void hook_acct_3d(struct hook_frame *f, const CUDA_MEMCPY3D *p)
{
	if (!p)
		return;
	hook_acct_copy(
		f, dir_of(is_device(p->dstMemoryType, p->dstDevice), is_device(p->srcMemoryType, p->srcDevice)),
		(uint64_t)p->WidthInBytes * p->Height * (p->Depth ? p->Depth : 1));
}

void hook_acct_3d_peer(struct hook_frame *f, const CUDA_MEMCPY3D_PEER *p)
{
	if (!p)
		return;
	hook_acct_copy(
		f, dir_of(is_device(p->dstMemoryType, p->dstDevice), is_device(p->srcMemoryType, p->srcDevice)),
		(uint64_t)p->WidthInBytes * p->Height * (p->Depth ? p->Depth : 1));
}
