/* SPDX-License-Identifier: MIT
 *
 * steptrainer.c - a minimal single-GPU trainer for the failure tests of
 * issue 21 (tests/e2e/launcher/diverge.sh, stall_default.sh): one parameter
 * tensor, a gradient kernel and an SGD kernel per step (steptrainer.cu),
 * driven through the driver API as an unmodified program would be.  Each
 * rank's data differs (x depends on RANK and the step).  One fault, on one
 * rank, at one step, from the environment:
 *   STEP_FAULT=skip   that step is skipped (no kernels: one optimizer step
 *                     fewer on that rank)
 *   STEP_FAULT=noopt  that step runs its gradient kernel but not its SGD
 *                     kernel (the optimizer step alone is skipped)
 *   STEP_FAULT=spin   the rank busy-loops forever in that step, before its
 *                     kernels (no progress, not inside a collective)
 *   STEP_FAULT=slow   that step launches its gradient kernel every 0.25 s
 *                     for STEP_SLOW seconds (slow but progressing)
 *   STEP_FAULT_RANK (default 1; -1: every rank alike), STEP_FAULT_AT (default 5)
 * STEP_DATA_RANK=K: every rank reads rank K's input (the same batches: no
 * sharding), for tests/e2e/launcher/same_input.sh.
 * How it ends, from STEP_END (none frees its buffers: the context's end
 * frees them):
 *   release (default) cuDevicePrimaryCtxRelease of the primary context
 *   reset             cuDevicePrimaryCtxReset
 *   destroy           a context of its own (cuCtxCreate, not the primary
 *                     one: the host backend only) destroyed with cuCtxDestroy
 *   exit              nothing: the process exits with its context
 * It prints "step N" on stdout after each step and "fault: rank R MODE at
 * step N" on stderr when the fault happens.
 * Usage: steptrainer STEPS
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern const unsigned char tests_e2e_progs_steptrainer_fatbin[];

#define N 4096

static void ck(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "steptrainer: %s failed (%d)\n", what, (int)r);
		exit(1);
	}
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 20, n = N;
	int rank = env_int("RANK", 0), fault_rank = env_int("STEP_FAULT_RANK", 1);
	int fault_at = env_int("STEP_FAULT_AT", 5);
	int data_rank = env_int("STEP_DATA_RANK", rank); /* whose input this rank reads */
	if (fault_rank == -1)
		fault_rank = rank;
	const char *fault = getenv("STEP_FAULT") ? getenv("STEP_FAULT") : "";
	double slow = env_int("STEP_SLOW", 3);
	float lr = 0.1f, *x = malloc(sizeof(float) * N), w0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fgrad, fsgd;
	CUdeviceptr w, xd, g;

	if (!x)
		return 1;
	ck(cuInit(0), "cuInit");
	ck(cuDeviceGet(&dev, 0), "cuDeviceGet");
	const char *end = getenv("STEP_END") ? getenv("STEP_END") : "release";
	if (!strcmp(end, "destroy")) {
		ck(cuCtxCreate(&ctx, NULL, 0, dev), "cuCtxCreate"); /* (CUDA 13: _v4) */
	} else {
		/* the primary context, as the runtime API uses: NCCL needs it */
		ck(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
		ck(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	}
	ck(cuModuleLoadData(&mod, tests_e2e_progs_steptrainer_fatbin), "cuModuleLoadData");
	ck(cuModuleGetFunction(&fgrad, mod, "_Z16steptrainer_gradPKfS0_Pfi"), "cuModuleGetFunction grad");
	ck(cuModuleGetFunction(&fsgd, mod, "_Z22steptrainer_sgd_updatePfPKffi"), "cuModuleGetFunction sgd");
	ck(cuMemAlloc(&w, sizeof(float) * N), "cuMemAlloc w");
	ck(cuMemAlloc(&xd, sizeof(float) * N), "cuMemAlloc x");
	ck(cuMemAlloc(&g, sizeof(float) * N), "cuMemAlloc g");
	ck(cuMemsetD32(w, 0, N), "cuMemsetD32");
	for (int s = 1; s <= steps; s++) {
		void *ga[] = { &w, &xd, &g, &n }, *sa[] = { &w, &g, &lr, &n };
		if (rank == fault_rank && s == fault_at && *fault) {
			fprintf(stderr, "fault: rank %d %s at step %d\n", rank, fault, s);
			fflush(stderr);
			if (!strcmp(fault, "skip"))
				continue;
			if (!strcmp(fault, "spin"))
				for (volatile unsigned long spin = 0;; spin++)
					;
		}
		for (int i = 0; i < N; i++)
			x[i] = (float)(data_rank + 1) * 0.5f + (float)s * 0.01f + (float)i * 1e-4f;
		ck(cuMemcpyHtoD(xd, x, sizeof(float) * N), "cuMemcpyHtoD");
		if (rank == fault_rank && s == fault_at && !strcmp(fault, "slow")) {
			for (double t = 0; t < slow; t += 0.25) {
				ck(cuLaunchKernel(fgrad, N / 256, 1, 1, 256, 1, 1, 0, NULL, ga, NULL), "grad");
				ck(cuCtxSynchronize(), "sync");
				usleep(250000);
			}
		}
		ck(cuLaunchKernel(fgrad, N / 256, 1, 1, 256, 1, 1, 0, NULL, ga, NULL), "cuLaunchKernel grad");
		if (!(rank == fault_rank && s == fault_at && !strcmp(fault, "noopt")))
			ck(cuLaunchKernel(fsgd, N / 256, 1, 1, 256, 1, 1, 0, NULL, sa, NULL), "cuLaunchKernel sgd");
		ck(cuCtxSynchronize(), "cuCtxSynchronize");
		printf("step %d\n", s);
		fflush(stdout);
	}
	ck(cuMemcpyDtoH(&w0, w, sizeof w0), "cuMemcpyDtoH");
	printf("done w0=%.6f\n", w0);
	fflush(stdout);
	if (!strcmp(end, "destroy"))
		ck(cuCtxDestroy(ctx), "cuCtxDestroy");
	else if (!strcmp(end, "reset"))
		ck(cuDevicePrimaryCtxReset(dev), "cuDevicePrimaryCtxReset");
	else if (strcmp(end, "exit"))
		ck(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
	return 0;
}
