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
 *   launch_rate sync M T DIR          a training step as gradient
 *                                     synchronisation sees it (null driver,
 *                                     bench/nullk.h kernels), two steps, then
 *                                     M launches of the non-optimizer kernel
 *                                     `forward` from T threads at once (M/T
 *                                     each); prints "ns_per_launch X" (mean
 *                                     over the threads of the thread's CPU time / its
 *                                     launches).  Under `ddprun -n 2` only
 *                                     rank 0 times; the other ranks wait for
 *                                     DIR/timed (so they take no CPU), then
 *                                     every rank runs one more step.
 *
 * Run by bench/run.sh with and without LD_PRELOAD=libddp.so.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nullk.h"

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

/* ---- sync mode */
struct sync_thread {
	pthread_t t;
	pthread_barrier_t *go;
	long n;
	void **args;
	double ns;
};

/* The thread's CPU time (ns): on a machine shared with other jobs, wall
 * time would count the time the thread was not running. */
static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *sync_launcher(void *arg)
{
	struct sync_thread *st = arg;
	CUfunction fwd = NULLK_HANDLE(NULLK_FORWARD);
	pthread_barrier_wait(st->go);
	double t0 = thread_cpu();
	for (long i = 0; i < st->n; i++)
		cuLaunchKernel(fwd, 1, 1, 1, 1, 1, 1, 0, NULL, st->args, NULL);
	st->ns = thread_cpu() - t0;
	return NULL;
}

static int sync_step(void **bwd_args, void **sgd_args, void **fwd_args)
{
	return cuLaunchKernel(NULLK_HANDLE(NULLK_FORWARD), 1, 1, 1, 1, 1, 1, 0, NULL, fwd_args, NULL) ||
	       cuLaunchKernel(NULLK_HANDLE(NULLK_BACKWARD), 1, 1, 1, 1, 1, 1, 0, NULL, bwd_args, NULL) ||
	       cuLaunchKernel(NULLK_HANDLE(NULLK_SGD), 1, 1, 1, 1, 1, 1, 0, NULL, sgd_args, NULL);
}

static int sync_mode(long m, int nthreads, const char *dir)
{
	const int n = 1024;
	CUdeviceptr x, p, g, y;
	float lr = 0.01f;
	const char *rank_s = getenv("RANK");
	int rank = rank_s ? atoi(rank_s) : 0;
	char path[4096];

	if (nthreads < 1 || nthreads > 64 || cuMemAlloc(&x, n * 4) || cuMemAlloc(&p, n * 4) ||
	    cuMemAlloc(&g, n * 4) || cuMemAlloc(&y, n * 4))
		return 1;
	void *fwd_args[] = { &x, &p, &y, (void *)&n };
	void *bwd_args[] = { &g, &x, (void *)&n };
	void *sgd_args[] = { &p, &g, &lr, (void *)&n };
	/* two steps: gradients and parameters learned, the reduction point too */
	if (sync_step(bwd_args, sgd_args, fwd_args) || sync_step(bwd_args, sgd_args, fwd_args))
		return 1;
	snprintf(path, sizeof path, "%s/timed", dir);
	if (rank == 0) {
		for (int i = 0; i < 1000; i++) /* warm up */
			cuLaunchKernel(NULLK_HANDLE(NULLK_FORWARD), 1, 1, 1, 1, 1, 1, 0, NULL, fwd_args, NULL);
		struct sync_thread th[64];
		pthread_barrier_t go;
		double sum = 0;
		pthread_barrier_init(&go, NULL, (unsigned)nthreads);
		for (int i = 0; i < nthreads; i++) {
			th[i].go = &go;
			th[i].n = m / nthreads;
			th[i].args = fwd_args;
			if (i && pthread_create(&th[i].t, NULL, sync_launcher, &th[i]))
				return 1;
		}
		sync_launcher(&th[0]);
		for (int i = 1; i < nthreads; i++)
			pthread_join(th[i].t, NULL);
		for (int i = 0; i < nthreads; i++)
			sum += th[i].ns / (double)th[i].n;
		printf("ns_per_launch %.2f\n", sum / nthreads);
		fflush(stdout);
		FILE *f = fopen(path, "w");
		if (!f)
			return 1;
		fclose(f);
	} else {
		struct timespec ms = { 0, 1000000 };
		while (access(path, F_OK) != 0)
			nanosleep(&ms, NULL);
	}
	return sync_step(bwd_args, sgd_args, fwd_args) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: launch_rate launches M [FATBIN] | allocs N | sync M T DIR\n");
		return 2;
	}
	long m = atol(argv[2]);
	if (cuInit(0) != CUDA_SUCCESS)
		return 1;
	if (!strcmp(argv[1], "sync"))
		return sync_mode(m, argc > 3 ? atoi(argv[3]) : 1, argc > 4 ? argv[4] : ".");
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
