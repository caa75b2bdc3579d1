/* SPDX-License-Identifier: MIT
 *
 * launch_rate.c - launch-rate benchmark of libddp's hooks.
 *
 *   launch_rate launches M [FATBIN]   M launches of an empty kernel; prints
 *                                     "ns_per_launch X".  With FATBIN (the
 *                                     CPU device) the kernel is loaded and
 *                                     synchronised at the end; without it (the
 *                                     null driver) a fake handle is launched.
 *   launch_rate allocs N              N live allocations; prints
 *                                     "rss_kb_per_1000_allocs X"
 *
 * Run by bench/run.sh with and without LD_PRELOAD=libddp.so.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, rss = 0;
	if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return rss * 4;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: launch_rate launches M [FATBIN] | allocs N\n");
		return 2;
	}
	long m = atol(argv[2]);
	if (cuInit(0) != CUDA_SUCCESS)
		return 1;
	if (!strcmp(argv[1], "allocs")) {
		CUdeviceptr *d = malloc((size_t)m * sizeof *d);
		CUdeviceptr warm;
		cuMemAlloc(&warm, 64); /* library init happens here */
		long before = rss_kb();
		for (long i = 0; i < m; i++)
			cuMemAlloc(&d[i], 256);
		long after = rss_kb();
		printf("rss_kb_per_1000_allocs %.2f\n", (after - before) * 1000.0 / m);
		return 0;
	}
	CUfunction f = (CUfunction)(uintptr_t)0x1234;
	if (argc > 3) {
		CUdevice dev;
		CUcontext ctx;
		CUmodule mod;
		FILE *fb = fopen(argv[3], "rb");
		static unsigned char img[1 << 22];
		if (!fb || !fread(img, 1, sizeof img, fb))
			return 1;
		fclose(fb);
		if (cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
		    cuModuleLoadData(&mod, img) || cuModuleGetFunction(&f, mod, "empty_kernel"))
			return 1;
	}
	for (int i = 0; i < 1000; i++) /* warm up: first-launch discovery */
		cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	double t0 = now();
	for (long i = 0; i < m; i++)
		cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	double t1 = now();
	if (argc > 3)
		cuCtxSynchronize();
	printf("ns_per_launch %.2f\n", (t1 - t0) / m);
	return 0;
}
