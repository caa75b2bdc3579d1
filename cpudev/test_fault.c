/* SPDX-License-Identifier: MIT
 *
 * test_fault.c - the CPU device's fault table: DDP_SIM_FAIL=name:N[+][:code]
 * fails the Nth call (or, with '+', every call from the Nth) of an entry
 * point, by its exported name; every entry point of sim_api.def has the
 * check (generated), with the default code of sim_faults.def.  main() sets
 * the variable before the first driver call, since the table is read once.
 * test_fault_all.c fails every entry point once.
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

/* Entry points that had no fault check before it was generated into all. */
TEST(any_entry_point_fails)
{
	setup();
	CHECK_EQ_INT(cuCtxSynchronize(), CUDA_ERROR_UNKNOWN); /* cuCtxSynchronize:1 */
	CU_OK(cuCtxSynchronize());
	CUdevice dev;
	CHECK_EQ_INT(cuCtxGetDevice(&dev), CUDA_ERROR_NOT_READY); /* cuCtxGetDevice:1:600 */
	CU_OK(cuCtxGetDevice(&dev));
	CUdeviceptr d = 0;
	CUstream s;
	CU_OK(cuStreamCreateWithPriority(&s, 0, 0));
	CHECK_EQ_INT(cuMemAllocAsync(&d, 64, s), CUDA_ERROR_OUT_OF_MEMORY); /* cuMemAllocAsync:1, counted once */
	CU_OK(cuMemAllocAsync(&d, 64, s));
	CU_OK(cuMemFreeAsync(d, s));
	CU_OK(cuStreamSynchronize(s));
	CU_OK(cuStreamDestroy(s));
}

/* The function cuGetProcAddress hands out is the exported one, with the check. */
TEST(through_cuGetProcAddress)
{
	setup();
	void *fn = NULL;
	CUdriverProcAddressQueryResult st;
	CU_OK(cuGetProcAddress("cuDeviceGetAttribute", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
	REQUIRE(fn == (void *)cuDeviceGetAttribute);
	int v = 0;
	CUresult (*get)(int *, CUdevice_attribute, CUdevice) = (CUresult (*)(int *, CUdevice_attribute, CUdevice))fn;
	CHECK_EQ_INT(get(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), CUDA_ERROR_UNKNOWN); /* cuDeviceGetAttribute:1 */
	CU_OK(get(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
	CHECK_EQ_INT(v, 32);
}

int main(int argc, char **argv)
{
	setenv("DDP_SIM_FAIL", "cuMemAlloc_v2:3,cuStreamCreate:2+:800,cuMemcpyHtoD_v2:1,cuCtxSynchronize:1,"
			       "cuCtxGetDevice:1:600,cuMemAllocAsync:1,cuDeviceGetAttribute:1", 1);
	return check_main(argc, argv);
}
