/* SPDX-License-Identifier: MIT
 *
 * alloc.h - samples/torchlike's device memory allocator: PyTorch's CUDA
 * caching allocator (c10/cuda/CUDACachingAllocator.cpp) in its three modes,
 * as the driver sees them.
 *
 *   caching     requests rounded up to 512 B; <= 1 MiB served from 2 MiB
 *               cuMemAlloc segments (small pool), larger ones from 20 MiB
 *               segments (or their own segment rounded to 2 MiB when >=
 *               10 MiB); best fit; a block is split when the rest is at
 *               least 512 B (small) / more than 1 MiB (large); freed blocks
 *               merge with free neighbours and are reused, never returned.
 *   expandable  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: one
 *               cuMemAddressReserve per pool, grown at its end by 2 MiB
 *               (small) / 20 MiB (large) pages (cuMemCreate + cuMemMap +
 *               cuMemSetAccess); a block may straddle pages.
 *   async       backend:cudaMallocAsync: one cuMemAllocAsync per request at
 *               its exact size, cuMemFreeAsync on free, the default pool's
 *               release threshold at UINT64_MAX.
 *
 * Contract: one stream; the caller serialises calls (the training loop and
 * the backward thread never allocate at the same time).  Out of memory
 * prints one line and exits 1.
 */
#ifndef TORCHLIKE_ALLOC_H
#define TORCHLIKE_ALLOC_H

#include <stddef.h>
#include <cuda.h>

enum ta_mode { TA_CACHING, TA_EXPANDABLE, TA_ASYNC };

void ta_init(enum ta_mode mode, CUstream stream);
CUdeviceptr ta_alloc(size_t bytes);
void ta_free(CUdeviceptr p);

struct ta_stats {
	size_t segments;        /* cuMemAlloc segments / mapped pages / live async allocations */
	size_t reserved_bytes;  /* device memory held                                          */
	size_t allocated_bytes; /* in live blocks (rounded)                                    */
	size_t live_blocks;
};
void ta_stats(struct ta_stats *out);

#endif
