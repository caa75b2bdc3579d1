/* SPDX-License-Identifier: MIT
 *
 * sim_occupancy.c - the occupancy calculator (cuOccupancy*), answered for
 * the H100-like device the CPU device reports, so that programs sizing
 * their grids from cudaOccupancy* get the numbers they would get on a GPU
 * for a kernel using SIM_FUNC_REGS registers per thread and no static
 * shared memory (what cuFuncGetAttribute reports for every kernel here).
 *
 * Resident blocks per multiprocessor = the least of
 *   SIM_SM_BLOCKS,
 *   warps per SM / warps per block (64 / ceil(blockSize / 32)),
 *   registers per SM / (SIM_FUNC_REGS * 32 * warps per block),
 *   shared memory per SM / (dynamic shared bytes + the 1 KiB the GPU
 *   reserves per block)  (only when the block uses shared memory);
 * 0 when the block is larger than the kernel allows or the dynamic shared
 * memory exceeds the kernel's limit (cudaFuncSetAttribute).  Timing and
 * scheduling on the CPU device have nothing to do with these numbers.
 *
 * Contract: pure functions of the function's attributes; any thread.
 */
#include "sim_internal.h"
#include "sim_exec.h"

static CUresult sim_occ_func(CUfunction h, struct CUfunc_st **out)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(h);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = f;
	return CUDA_SUCCESS;
}

static int sim_occ_blocks(const struct CUfunc_st *f, int block, size_t dyn)
{
	if (block <= 0 || (unsigned)block > SIM_MAX_BLOCK_THREADS || dyn > (size_t)f->max_dyn_shared)
		return 0;
	int warps = (block + 31) / 32;
	int n = SIM_SM_BLOCKS;
	int by_warps = SIM_SM_THREADS / 32 / warps;
	int by_regs = SIM_SM_REGS / (SIM_FUNC_REGS * 32 * warps);
	if (by_warps < n)
		n = by_warps;
	if (by_regs < n)
		n = by_regs;
	if (dyn) {
		size_t by_shared = SIM_SM_SHARED / (dyn + SIM_BLOCK_SHARED_RESERVED);
		if (by_shared < (size_t)n)
			n = (int)by_shared;
	}
	return n;
}

static CUresult sim_occ_active(int *num, CUfunction func, int block, size_t dyn, unsigned flags)
{
	struct CUfunc_st *f;
	CUresult rc = sim_occ_func(func, &f);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!num || flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	*num = sim_occ_blocks(f, block, dyn);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
								size_t dynamicSMemSize)
{
	return sim_occ_active(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
									 int blockSize, size_t dynamicSMemSize,
									 unsigned int flags)
{
	return sim_occ_active(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

/* The block size (a multiple of 32, at most the limit) with the most
 * resident threads per SM; ties go to the larger block, as with the driver. */
static CUresult sim_occ_potential(int *min_grid, int *block_out, CUfunction func, CUoccupancyB2DSize b2d,
				  size_t dyn, int limit, unsigned flags)
{
	struct CUfunc_st *f;
	CUresult rc = sim_occ_func(func, &f);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!min_grid || !block_out || limit < 0 || flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	int max = (int)SIM_MAX_BLOCK_THREADS;
	if (limit > 0 && limit < max)
		max = limit;
	int best_block = 0, best_threads = 0, best_blocks = 0;
	for (int b = (max + 31) / 32 * 32; b > 0; b -= 32) {
		int block = b > max ? max : b;
		size_t d = b2d ? b2d(block) : dyn;
		int n = sim_occ_blocks(f, block, d);
		if (n * block > best_threads) {
			best_threads = n * block;
			best_block = block;
			best_blocks = n;
		}
	}
	*block_out = best_block;
	*min_grid = best_blocks * SIM_SM_COUNT;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
						     CUoccupancyB2DSize blockSizeToDynamicSMemSize,
						     size_t dynamicSMemSize, int blockSizeLimit)
{
	return sim_occ_potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
				 blockSizeLimit, 0);
}

SIM_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
							      CUoccupancyB2DSize blockSizeToDynamicSMemSize,
							      size_t dynamicSMemSize, int blockSizeLimit,
							      unsigned int flags)
{
	return sim_occ_potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
				 blockSizeLimit, flags);
}

SIM_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
							    int blockSize)
{
	struct CUfunc_st *f;
	CUresult rc = sim_occ_func(func, &f);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0 || (unsigned)blockSize > SIM_MAX_BLOCK_THREADS)
		return CUDA_ERROR_INVALID_VALUE;
	if (sim_occ_blocks(f, blockSize, 0) < numBlocks) {
		*dynamicSmemSize = 0;
		return CUDA_SUCCESS;
	}
	size_t per = SIM_SM_SHARED / (unsigned)numBlocks;
	per = per > SIM_BLOCK_SHARED_RESERVED ? per - SIM_BLOCK_SHARED_RESERVED : 0;
	if (per > (size_t)f->max_dyn_shared)
		per = (size_t)f->max_dyn_shared;
	*dynamicSmemSize = per;
	return CUDA_SUCCESS;
}
