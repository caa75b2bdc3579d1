/* SPDX-License-Identifier: MIT
 *
 * test_loader.c - the CPU device loaded the way cudart loads a driver:
 * dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), and every other entry
 * point through it, under the legacy and per-thread flavours.  This binary
 * does not link libcuda; it finds the CPU device through its RUNPATH.  Its
 * kernels (kernels/test_kernels.cu) run from test_loader.kern.so next to it:
 * a launch through the RTLD_LOCAL handle must change memory (it used to
 * return CUDA_SUCCESS and do nothing: the kernel library read a private copy
 * of threadIdx & co. that the scheduler never wrote).
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>

extern const unsigned char cpudev_kernels_test_kernels_fatbin[];

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

/* Looks name up with flags 0 into the function pointer fp (typed). */
#define LOOKUP(fp, name) do { \
	*(void **)&(fp) = entry((name), 0); \
	REQUIRE((fp) != NULL); \
} while (0)

TEST(kernels_run_through_an_rtld_local_handle)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	REQUIRE(h != NULL);
	if (!get_proc)
		get_proc = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
	REQUIRE(get_proc != NULL);
	/* The condition of the bug: the driver is not in the global scope. */
	REQUIRE(dlsym(RTLD_DEFAULT, "cuInit") == NULL);

	CUresult (*init)(unsigned);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*set_current)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free_)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*load)(CUmodule *, const void *);
	CUresult (*unload)(CUmodule);
	CUresult (*get_fn)(CUfunction *, CUmodule, const char *);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, CUstream, void **, void **);
	CUresult (*sync)(void);
	LOOKUP(init, "cuInit");
	LOOKUP(retain, "cuDevicePrimaryCtxRetain");
	LOOKUP(set_current, "cuCtxSetCurrent");
	LOOKUP(alloc, "cuMemAlloc");
	LOOKUP(free_, "cuMemFree");
	LOOKUP(htod, "cuMemcpyHtoD");
	LOOKUP(dtoh, "cuMemcpyDtoH");
	LOOKUP(load, "cuModuleLoadData");
	LOOKUP(unload, "cuModuleUnload");
	LOOKUP(get_fn, "cuModuleGetFunction");
	LOOKUP(launch, "cuLaunchKernel");
	LOOKUP(sync, "cuCtxSynchronize");

	REQUIRE(init(0) == CUDA_SUCCESS);
	CUcontext c;
	REQUIRE(retain(&c, 0) == CUDA_SUCCESS);
	REQUIRE(set_current(c) == CUDA_SUCCESS);
	CUmodule m;
	REQUIRE(load(&m, cpudev_kernels_test_kernels_fatbin) == CUDA_SUCCESS);

	/* plain_fill: threadIdx/blockIdx only. */
	enum { N = 300 };
	int host[N], v = 7, n = N - 5;
	CUdeviceptr d;
	CUfunction fill;
	REQUIRE(get_fn(&fill, m, "plain_fill") == CUDA_SUCCESS);
	REQUIRE(alloc(&d, sizeof(host)) == CUDA_SUCCESS);
	for (int i = 0; i < N; i++)
		host[i] = -1;
	CHECK_EQ_INT(htod(d, host, sizeof(host)), CUDA_SUCCESS);
	void *fill_args[] = {&d, &v, &n};
	CHECK_EQ_INT(launch(fill, 3, 1, 1, 128, 1, 1, 0, NULL, fill_args, NULL), CUDA_SUCCESS);
	CHECK_EQ_INT(sync(), CUDA_SUCCESS);
	CHECK_EQ_INT(dtoh(host, d, sizeof(host)), CUDA_SUCCESS);
	int wrong = 0;
	for (int i = 0; i < N; i++)
		wrong += host[i] != (i < n ? 7 : -1);
	CHECK_EQ_INT(wrong, 0);
	CHECK_EQ_INT(host[5], 7);

	/* A barrier and a shuffle: the runtime the driver hands the library. */
	enum { B = 64, G = 3 };
	int in[B * G], out[B * G], want[B * G];
	for (int i = 0; i < B * G; i++)
		in[i] = i * 3 + 1, out[i] = 0;
	for (int i = 0; i < B * G; i++) {
		int base = i / B * B, t = i % B, w0 = t / 32 * 32, sum = 0;
		for (int l = w0; l < w0 + 32; l++)
			sum += in[base + B - 1 - l];
		want[i] = in[base + B - 1 - t] + 1000 * sum;
	}
	CUdeviceptr din, dout;
	CUfunction rev;
	REQUIRE(get_fn(&rev, m, "_Z22block_reverse_warp_sumPKiPi") == CUDA_SUCCESS);
	REQUIRE(alloc(&din, sizeof(in)) == CUDA_SUCCESS);
	REQUIRE(alloc(&dout, sizeof(out)) == CUDA_SUCCESS);
	CHECK_EQ_INT(htod(din, in, sizeof(in)), CUDA_SUCCESS);
	CHECK_EQ_INT(htod(dout, out, sizeof(out)), CUDA_SUCCESS);
	void *rev_args[] = {&din, &dout};
	CHECK_EQ_INT(launch(rev, G, 1, 1, B, 1, 1, 0, NULL, rev_args, NULL), CUDA_SUCCESS);
	CHECK_EQ_INT(sync(), CUDA_SUCCESS);
	CHECK_EQ_INT(dtoh(out, dout, sizeof(out)), CUDA_SUCCESS);
	wrong = 0;
	for (int i = 0; i < B * G; i++)
		wrong += out[i] != want[i];
	CHECK_EQ_INT(wrong, 0);
	CHECK_EQ_INT(out[0], want[0]);

	CHECK_EQ_INT(free_(d), CUDA_SUCCESS);
	CHECK_EQ_INT(free_(din), CUDA_SUCCESS);
	CHECK_EQ_INT(free_(dout), CUDA_SUCCESS);
	CHECK_EQ_INT(unload(m), CUDA_SUCCESS);
	dlclose(h);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
