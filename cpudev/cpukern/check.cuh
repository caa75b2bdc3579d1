/* SPDX-License-Identifier: MIT
 *
 * check.cuh - what the cpudev/cpukern programs share: CK() stops on a
 * failed CUDA runtime call with one line, expect() prints one
 * "ok - NAME" / "not ok - NAME" line (tests/run_tests.sh counts them) and
 * remembers failures for the exit status.
 *
 * Contract: header only, host code; each program includes it once.
 */
#ifndef CPUK_CHECK_CUH
#define CPUK_CHECK_CUH
#include <cstdio>
#include <cstdlib>

static int cpuk_failures;

#define CK(call)                                                                                     \
	do {                                                                                         \
		cudaError_t e_ = (call);                                                             \
		if (e_ != cudaSuccess) {                                                             \
			printf("not ok - %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_),   \
			       __FILE__, __LINE__);                                                  \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

static void expect(const char *name, bool cond)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", name);
	if (!cond)
		cpuk_failures++;
}
#endif
