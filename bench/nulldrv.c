/* SPDX-License-Identifier: MIT
 *
 * nulldrv.c - a "null" libcuda.so.1 for the launch-rate benchmark: the few
 * entry points the benchmark calls, each returning at once, so that the time
 * of a launch through libddp minus the time without it is the hooks' own
 * cost, free of any driver or CPU-device noise.  Not a driver: nothing runs.
 *
 * Contract: benchmark only; stateless apart from a bump allocator.
 */
#include <cuda.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
static uint64_t next_addr = 0x7f0000000000ull;

EXPORT CUresult cuInit(unsigned int f) { (void)f; return CUDA_SUCCESS; }
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned sh, CUstream s, void **p, void **e)
{
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)sh; (void)s;
	(void)p; (void)e;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t n)
{
	*d = __atomic_fetch_add(&next_addr, (n + 255) & ~(size_t)255, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr d) { (void)d; return CUDA_SUCCESS; }
EXPORT CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "?"; return CUDA_SUCCESS; }
