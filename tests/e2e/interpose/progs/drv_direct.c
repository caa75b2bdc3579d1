/* SPDX-License-Identifier: MIT
 *
 * drv_direct.c - a Driver-API program linked to libcuda (-lcuda), used by
 * tests/e2e/interpose/run.sh to prove the exported-symbol path of libddp.so.
 *
 *   drv_direct run FATBIN      allocs, copies, module, launches (kernelParams,
 *                              extra buffer, by-value struct); prints results
 *   drv_direct dlsym           dlsym of cu* / non-cu / cudnn names; prints where
 *                              each answer lives (libddp or not)
 *   drv_direct corrupt         cuModuleLoadData on garbage: prints the result
 *                              and carries on with an allocation
 *   drv_direct nullargs FATBIN a launch with NULL kernelParams and extra
 *
 * Output is deterministic so that runs with and without LD_PRELOAD compare.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
	const char *n_ = "?"; cuGetErrorName(r_, &n_); \
	fprintf(stderr, "drv_direct: %s failed: %s (line %d)\n", #x, n_, __LINE__); exit(1); } } while (0)

static CUcontext ctx;

static void setup(void)
{
	CUdevice dev;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "drv_direct: cannot open %s\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = malloc((size_t)n + 16);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

struct ptr_list {
	float *p[4];
	int n[4];
	int count;
};

static int run(const char *fatbin)
{
	size_t len;
	void *img = read_file(fatbin, &len);
	CUmodule mod;
	CUfunction f_scale, f_axpy, f_list;
	CUdeviceptr x, y, l[4];
	float hx[256], hy[256];
	int n = 256;

	setup();
	CK(cuModuleLoadData(&mod, img));
	CK(cuModuleGetFunction(&f_scale, mod, "c_scale"));
	CK(cuModuleGetFunction(&f_axpy, mod, "_Z4axpyIfEvPKT_PS0_S0_i"));
	CK(cuModuleGetFunction(&f_list, mod, "_Z9list_fill8ptr_listf"));
	CK(cuMemAlloc(&x, n * sizeof(float)));
	CK(cuMemAlloc(&y, n * sizeof(float)));
	for (int i = 0; i < n; i++) {
		hx[i] = (float)i;
		hy[i] = 1.0f;
	}
	CK(cuMemcpyHtoD(x, hx, sizeof hx));
	CK(cuMemcpyHtoD(y, hy, sizeof hy));
	/* kernelParams */
	float a = 2.0f;
	void *p1[] = { &x, &a, &n };
	CK(cuLaunchKernel(f_scale, 1, 1, 1, 256, 1, 1, 0, NULL, p1, NULL));
	void *p2[] = { &x, &y, &a, &n };
	CK(cuLaunchKernel(f_axpy, 1, 1, 1, 256, 1, 1, 0, NULL, p2, NULL));
	/* extra: packed buffer, cuda.h's layout for (float*, float, int) */
	struct { CUdeviceptr x; float a; int n; } packed = { x, 0.5f, n };
	size_t psize = sizeof packed;
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
			  &psize, CU_LAUNCH_PARAM_END };
	CK(cuLaunchKernel(f_scale, 1, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
	/* a by-value struct with device pointers */
	struct ptr_list pl;
	memset(&pl, 0, sizeof pl);
	for (int t = 0; t < 4; t++) {
		CK(cuMemAlloc(&l[t], 64 * sizeof(float)));
		pl.p[t] = (float *)(uintptr_t)l[t];
		pl.n[t] = 64;
	}
	pl.count = 4;
	float v = 3.0f;
	void *p3[] = { &pl, &v };
	CK(cuLaunchKernel(f_list, 1, 1, 1, 32, 1, 1, 0, NULL, p3, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(hx, x, sizeof hx));
	CK(cuMemcpyDtoH(hy, y, sizeof hy));
	float hl[64];
	CK(cuMemcpyDtoH(hl, l[3], sizeof hl));
	printf("x[10]=%g y[10]=%g l3[63]=%g\n", hx[10], hy[10], hl[63]);
	for (int t = 0; t < 4; t++)
		CK(cuMemFree(l[t]));
	CK(cuMemFree(x));
	CK(cuMemFree(y));
	CK(cuModuleUnload(mod));
	free(img);
	return 0;
}

static const char *where(void *p)
{
	Dl_info di;
	if (!p)
		return "null";
	if (!dladdr(p, &di) || !di.dli_fname)
		return "unknown";
	return strstr(di.dli_fname, "libddp") ? "libddp" : strstr(di.dli_fname, "libcuda") ? "libcuda" : "other";
}

static int dlsym_test(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY);
	setup();
	printf("handle cuMemAlloc_v2: %s\n", where(dlsym(h, "cuMemAlloc_v2")));
	printf("handle cuLaunchKernel_ptsz: %s\n", where(dlsym(h, "cuLaunchKernel_ptsz")));
	printf("default cuLaunchKernel: %s\n", where(dlsym(RTLD_DEFAULT, "cuLaunchKernel")));
	printf("handle cuDeviceGetCount: %s\n", where(dlsym(h, "cuDeviceGetCount")));
	printf("handle cuGetProcAddress_v2: %s\n", where(dlsym(h, "cuGetProcAddress_v2")));
	printf("default printf: %s\n", where(dlsym(RTLD_DEFAULT, "printf")));
	printf("default cudnnCreate: %s\n", where(dlsym(RTLD_DEFAULT, "cudnnCreate")));
	printf("next malloc: %s\n", where(dlsym(RTLD_NEXT, "malloc")));
	/* the answer is callable */
	CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult (*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
	CUresult (*fre)(CUdeviceptr) = (CUresult (*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
	CUdeviceptr d;
	CK(alloc(&d, 1000));
	CK(fre(d));
	printf("alloc through dlsym: ok\n");
	return 0;
}

static int corrupt(void)
{
	static const unsigned char junk[64] = { 0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0xff, 0xff, 0xff, 0x7f };
	static const char text[] = "this is not a module";
	CUmodule m;
	CUdeviceptr d;
	setup();
	CUresult r1 = cuModuleLoadData(&m, junk);
	CUresult r2 = cuModuleLoadData(&m, text);
	printf("corrupt fatbin: %d, text: %d\n", (int)r1, (int)r2);
	CK(cuMemAlloc(&d, 4096));
	CK(cuMemFree(d));
	printf("still running\n");
	return 0;
}

static int nullargs(const char *fatbin)
{
	size_t len;
	void *img = read_file(fatbin, &len);
	CUmodule mod;
	CUfunction f;
	setup();
	CK(cuModuleLoadData(&mod, img));
	CK(cuModuleGetFunction(&f, mod, "c_scale"));
	CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	printf("null args launch: %d\n", (int)r);
	void *bad_extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, NULL, CU_LAUNCH_PARAM_END };
	r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, bad_extra);
	printf("bad extra launch: %d\n", (int)r);
	cuCtxSynchronize();
	printf("still running\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return run(argv[2]);
	if (argc >= 2 && !strcmp(argv[1], "dlsym"))
		return dlsym_test();
	if (argc >= 2 && !strcmp(argv[1], "corrupt"))
		return corrupt();
	if (argc >= 3 && !strcmp(argv[1], "nullargs"))
		return nullargs(argv[2]);
	fprintf(stderr, "usage: drv_direct run|dlsym|corrupt|nullargs [FATBIN]\n");
	return 2;
}
