/* SPDX-License-Identifier: MIT
 *
 * test_loader.c - the CPU device loaded the way cudart loads a driver:
 * dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), and every other entry
 * point through it, under the legacy and per-thread flavours.  This binary
 * does not link libcuda; it finds the CPU device through its RUNPATH.
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *lib;
static get_proc_fn get_proc;

static void *entry(const char *name, int flags)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult st = 99;
	if (get_proc(name, &p, 12080, (cuuint64_t)flags, &st) != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS)
		return NULL;
	return p;
}

TEST(dlopen_and_get_proc_address)
{
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	REQUIRE(lib != NULL);
	get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
	REQUIRE(get_proc != NULL);
	CHECK(dlsym(lib, "sim_mem_classify") == NULL); /* internals are hidden */
	CHECK(dlsym(lib, "ddp_module_parse") == NULL);
}

TEST(round_trip_through_looked_up_entries)
{
	REQUIRE(get_proc != NULL);
	CUresult (*init)(unsigned) = (CUresult (*)(unsigned))entry("cuInit", 0);
	CUresult (*retain)(CUcontext *, CUdevice) = (CUresult (*)(CUcontext *, CUdevice))entry("cuDevicePrimaryCtxRetain", 0);
	CUresult (*set_current)(CUcontext) = (CUresult (*)(CUcontext))entry("cuCtxSetCurrent", 0);
	CUresult (*get_name)(char *, int, CUdevice) = (CUresult (*)(char *, int, CUdevice))entry("cuDeviceGetName", 0);
	CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult (*)(CUdeviceptr *, size_t))entry("cuMemAlloc", 0);
	CUresult (*free_)(CUdeviceptr) = (CUresult (*)(CUdeviceptr))entry("cuMemFree", 0);
	CUresult (*htod)(CUdeviceptr, const void *, size_t) =
		(CUresult (*)(CUdeviceptr, const void *, size_t))entry("cuMemcpyHtoD", 2);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t) = (CUresult (*)(void *, CUdeviceptr, size_t))entry("cuMemcpyDtoH", 1);
	REQUIRE(init && retain && set_current && get_name && alloc && free_ && htod && dtoh);
	CHECK(htod == dlsym(lib, "cuMemcpyHtoD_v2_ptds"));
	CHECK(dtoh == dlsym(lib, "cuMemcpyDtoH_v2"));
	CHECK(alloc == dlsym(lib, "cuMemAlloc_v2"));
	REQUIRE(init(0) == CUDA_SUCCESS);
	CUcontext c;
	REQUIRE(retain(&c, 0) == CUDA_SUCCESS);
	REQUIRE(set_current(c) == CUDA_SUCCESS);
	char name[64] = "";
	CHECK_EQ_INT(get_name(name, sizeof(name), 0), CUDA_SUCCESS);
	CHECK(strstr(name, "simcuda") != NULL);
	CUdeviceptr d;
	REQUIRE(alloc(&d, 16) == CUDA_SUCCESS);
	char out[16] = "hello, device", back[16] = "";
	CHECK_EQ_INT(htod(d, out, sizeof(out)), CUDA_SUCCESS);
	CHECK_EQ_INT(dtoh(back, d, sizeof(back)), CUDA_SUCCESS);
	CHECK_EQ_STR(back, "hello, device");
	CHECK_EQ_INT(free_(d), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
