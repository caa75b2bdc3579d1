/* SPDX-License-Identifier: MIT
 *
 * test_fault.c - the CPU device's fault table: DDP_SIM_FAIL=name:N[+][:code]
 * fails the Nth call (or, with '+', every call from the Nth) of an entry
 * point, by its exported name.  main() sets the variable before the first
 * driver call, since the table is read once.
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <stdlib.h>

#define CU_OK(x) CHECK_EQ_INT((x), CUDA_SUCCESS)

static void setup(void)
{
	static CUcontext ctx;
	if (!ctx) {
		REQUIRE(cuInit(0) == CUDA_SUCCESS);
		REQUIRE(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
	}
	REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

TEST(third_alloc_fails_once)
{
	setup();
	CUdeviceptr p[5] = { 0 };
	CU_OK(cuMemAlloc(&p[0], 64));
	CU_OK(cuMemAlloc(&p[1], 64));
	CHECK_EQ_INT(cuMemAlloc(&p[2], 64), CUDA_ERROR_OUT_OF_MEMORY);
	CU_OK(cuMemAlloc(&p[3], 64));
	CU_OK(cuMemAlloc(&p[4], 64));
	for (int i = 0; i < 5; i++)
		if (p[i])
			CU_OK(cuMemFree(p[i]));
}

TEST(persistent_rule_with_code)
{
	setup();
	CUstream s[3];
	CU_OK(cuStreamCreate(&s[0], 0));
	CHECK_EQ_INT(cuStreamCreate(&s[1], 0), CUDA_ERROR_NOT_PERMITTED);
	CHECK_EQ_INT(cuStreamCreate(&s[2], 0), CUDA_ERROR_NOT_PERMITTED);
	CU_OK(cuStreamDestroy(s[0]));
}

TEST(generated_entry_point_fails)
{
	setup();
	CUdeviceptr d;
	char buf[8] = "abc";
	CU_OK(cuMemAlloc(&d, 8));
	CHECK_EQ_INT(cuMemcpyHtoD(d, buf, 8), CUDA_ERROR_UNKNOWN); /* cuMemcpyHtoD_v2:1 */
	CU_OK(cuMemcpyHtoD(d, buf, 8));
	CU_OK(cuMemFree(d));
}

int main(int argc, char **argv)
{
	setenv("DDP_SIM_FAIL", "cuMemAlloc_v2:3,cuStreamCreate:2+:800,cuMemcpyHtoD_v2:1", 1);
	return check_main(argc, argv);
}
