/* SPDX-License-Identifier: MIT
 *
 * test_preload_probe.c - libsim_preload_probe.so, LD_PRELOADed by
 * test_preload: exports three driver names the way libddp.so does (a
 * hand-written entry point, a generated stream-ordered one, a NOT_SUPPORTED
 * stub), each returning SIM_PROBE_MARK so a call that lands here is visible.
 *
 * Contract: no state; any thread.
 */
#include <cuda.h>

#define SIM_PROBE_MARK 4242

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	(void)p;
	(void)n;
	return (CUresult)SIM_PROBE_MARK;
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n)
{
	(void)d;
	(void)h;
	(void)n;
	return (CUresult)SIM_PROBE_MARK;
}

__attribute__((visibility("default"))) CUresult cuGraphCreate(CUgraph *g, unsigned flags)
{
	(void)g;
	(void)flags;
	return (CUresult)SIM_PROBE_MARK;
}
