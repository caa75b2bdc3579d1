/* SPDX-License-Identifier: MIT
 *
 * nulldrv.c - a "null" libcuda.so.1 for the launch-rate benchmark: the entry
 * points the benchmark and libddp's gradient synchronisation call, each
 * returning at once, so that the time of a launch through libddp minus the
 * time without it is the hooks' own cost, free of any driver or CPU-device
 * noise.  Not a driver: no kernel runs.
 *
 * What it does implement, because sync on needs it (bench/run.sh, "sync on"):
 * - memory: device allocations are real memory (a bump allocator in one
 *   MAP_NORESERVE arena, so untouched pages cost no RSS), pinned host memory
 *   is malloc; copies are memcpy, done when issued;
 * - streams and events: handles only; every queue is always drained, so
 *   records, waits, queries and synchronisations succeed at once; a host
 *   function (cuLaunchHostFunc) runs at once on the calling thread, which is
 *   what an idle stream does with it, only sooner;
 * - kernels: the handles of bench/nullk.h, with their mangled names and
 *   parameter layouts (cuFuncGetName, cuFuncGetParamInfo), so libddp
 *   discovers, classifies and decodes them as on a real driver.
 *
 * Contract: benchmark only; thread-safe (the bump pointer is atomic, the rest
 * is stateless).
 */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "nullk.h"

#define EXPORT __attribute__((visibility("default")))
#define ARENA (64ull << 30)
static char *arena;
static uint64_t next_off;
static int ctx_dummy, stream_dummy, event_dummy;

EXPORT CUresult cuInit(unsigned int f)
{
	(void)f;
	if (!__atomic_load_n(&arena, __ATOMIC_ACQUIRE)) {
		void *p = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);
		if (p == MAP_FAILED)
			return CUDA_ERROR_OUT_OF_MEMORY;
		char *expect = NULL;
		if (!__atomic_compare_exchange_n(&arena, &expect, (char *)p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			munmap(p, ARENA);
	}
	return CUDA_SUCCESS;
}
EXPORT CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice *d, int o) { (void)o; *d = 0; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	*v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetCurrent(CUcontext *c) { *c = (CUcontext)&ctx_dummy; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetStreamPriorityRange(int *lo, int *hi)
{
	if (lo)
		*lo = 0;
	if (hi)
		*hi = -5;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned sh, CUstream s, void **p, void **e)
{
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)sh; (void)s;
	(void)p; (void)e;
	return CUDA_SUCCESS;
}

/* ---- kernels (bench/nullk.h) */
static const struct nullk *kernel_of(CUfunction f)
{
	uintptr_t h = (uintptr_t)f;
	if (h < NULLK_BASE || (h - NULLK_BASE) % 16 || (h - NULLK_BASE) / 16 >= NULLK_COUNT)
		return NULL;
	return &nullk_table[(h - NULLK_BASE) / 16];
}
EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
	const struct nullk *k = kernel_of(f);
	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	*name = k->name;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
	const struct nullk *k = kernel_of(f);
	size_t o = 0;
	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	if (i >= k->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t j = 0; j <= i; j++) {
		o = (o + k->size[j] - 1) / k->size[j] * k->size[j];
		if (j < i)
			o += k->size[j];
	}
	*off = o;
	*size = k->size[i];
	return CUDA_SUCCESS;
}

/* ---- memory and copies */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t n)
{
	if (!arena)
		return CUDA_ERROR_NOT_INITIALIZED;
	uint64_t off = __atomic_fetch_add(&next_off, (n + 255) & ~(size_t)255, __ATOMIC_RELAXED);
	if (off + n > ARENA)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*d = (CUdeviceptr)(uintptr_t)(arena + off);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr d) { (void)d; return CUDA_SUCCESS; }
EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n) { return (*p = malloc(n)) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY; }
EXPORT CUresult cuMemFreeHost(void *p) { free(p); return CUDA_SUCCESS; }
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	(void)s;
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	(void)s;
	memcpy((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { return cuMemcpyDtoHAsync_v2(dst, src, n, NULL); }
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { return cuMemcpyHtoDAsync_v2(dst, src, n, NULL); }

/* ---- streams and events: every queue is always empty */
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned fl) { (void)fl; *s = (CUstream)&stream_dummy; return CUDA_SUCCESS; }
EXPORT CUresult cuStreamCreateWithPriority(CUstream *s, unsigned fl, int pr) { (void)pr; return cuStreamCreate(s, fl); }
EXPORT CUresult cuStreamDestroy_v2(CUstream s) { (void)s; return CUDA_SUCCESS; }
EXPORT CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }
EXPORT CUresult cuStreamQuery(CUstream s) { (void)s; return CUDA_SUCCESS; }
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned fl) { (void)s; (void)e; (void)fl; return CUDA_SUCCESS; }
EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user) { (void)s; fn(user); return CUDA_SUCCESS; }
EXPORT CUresult cuEventCreate(CUevent *e, unsigned fl) { (void)fl; *e = (CUevent)&event_dummy; return CUDA_SUCCESS; }
EXPORT CUresult cuEventDestroy_v2(CUevent e) { (void)e; return CUDA_SUCCESS; }
EXPORT CUresult cuEventRecord(CUevent e, CUstream s) { (void)e; (void)s; return CUDA_SUCCESS; }
EXPORT CUresult cuEventQuery(CUevent e) { (void)e; return CUDA_SUCCESS; }
EXPORT CUresult cuEventSynchronize(CUevent e) { (void)e; return CUDA_SUCCESS; }
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { (void)a; (void)b; *ms = 0; return CUDA_SUCCESS; }
EXPORT CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "?"; return CUDA_SUCCESS; }
EXPORT CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "?"; return CUDA_SUCCESS; }
