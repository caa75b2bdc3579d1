/* SPDX-License-Identifier: MIT
 *
 * hiddenupd.c - a small trainer for the never-late tests
 * (tests/e2e/sync/never_late.sh), written for them and shaped like none of
 * the samples: one linear layer (w 64x32, b 64) with tanh and a squared
 * error, driven through the driver API as an unmodified program would be.
 * Each rank's data differs (x and t depend on RANK and the step); it writes
 * no file.  Modes:
 *   hidden  the update runs in hu_apply: the weights and the bias in ONE
 *           launch of a kernel named like no optimizer (libddp cannot find
 *           that update; the rules bound the bias alone, from its count)
 *   list    the same update with its pointers in a by-value struct (no
 *           update is found at all)
 *   found   the same arithmetic, one hu_step launch per tensor (an
 *           elementwise update the data flow finds)
 *   infer   forward and loss only (evaluation): nothing is rewritten
 * It prints "step N" on stdout after each step and, at the end,
 * "done w0=X checksum=Y" (the first weight and the sum of all weights).
 * Usage: hiddenupd hidden|list|found|infer STEPS
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char tests_e2e_progs_hiddenupd_fatbin[];

/* hiddenupd.cu's struct hu_list */
struct hu_list {
	CUdeviceptr p[2], g[2];
	int n[2];
};

#define NO 64
#define NI 32

static void ck(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "hiddenupd: %s failed (%d)\n", what, (int)r);
		exit(1);
	}
}

static CUfunction fn(CUmodule mod, const char *name)
{
	CUfunction f;
	ck(cuModuleGetFunction(&f, mod, name), name);
	return f;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "hidden";
	int steps = argc > 2 ? atoi(argv[2]) : 20, no = NO, ni = NI, nw = NO * NI;
	int rank = getenv("RANK") ? atoi(getenv("RANK")) : 0;
	float lr = 0.05f, hw[NO * NI], hb[NO], hx[NI], ht[NO];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUdeviceptr w, b, x, t, y, dy, dw, db;

	if (strcmp(mode, "hidden") && strcmp(mode, "list") && strcmp(mode, "found") && strcmp(mode, "infer")) {
		fprintf(stderr, "usage: hiddenupd hidden|list|found|infer STEPS\n");
		return 2;
	}
	ck(cuInit(0), "cuInit");
	ck(cuDeviceGet(&dev, 0), "cuDeviceGet");
	ck(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	ck(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	ck(cuModuleLoadData(&mod, tests_e2e_progs_hiddenupd_fatbin), "cuModuleLoadData");
	CUfunction ffwd = fn(mod, "_Z10hu_forwardPKfS0_S0_Pfii"), floss = fn(mod, "_Z12hu_loss_gradPKfS0_Pfi");
	CUfunction fbwd = fn(mod, "_Z11hu_backwardPKfS0_PfS1_ii"), fapply = fn(mod, "_Z8hu_applyPfPKfS_S1_iif");
	CUfunction fstep = fn(mod, "_Z7hu_stepPfPKffi"), flist = fn(mod, "_Z13hu_apply_list7hu_listf");
	ck(cuMemAlloc(&w, sizeof hw), "cuMemAlloc w");
	ck(cuMemAlloc(&b, sizeof hb), "cuMemAlloc b");
	ck(cuMemAlloc(&x, sizeof hx), "cuMemAlloc x");
	ck(cuMemAlloc(&t, sizeof ht), "cuMemAlloc t");
	ck(cuMemAlloc(&y, sizeof ht), "cuMemAlloc y");
	ck(cuMemAlloc(&dy, sizeof ht), "cuMemAlloc dy");
	ck(cuMemAlloc(&dw, sizeof hw), "cuMemAlloc dw");
	ck(cuMemAlloc(&db, sizeof hb), "cuMemAlloc db");
	for (int i = 0; i < nw; i++)
		hw[i] = (float)((i * 37) % 101 - 50) * 0.002f;
	for (int i = 0; i < NO; i++)
		hb[i] = (float)(i % 7) * 0.01f;
	ck(cuMemcpyHtoD(w, hw, sizeof hw), "cuMemcpyHtoD w");
	ck(cuMemcpyHtoD(b, hb, sizeof hb), "cuMemcpyHtoD b");
	for (int s = 1; s <= steps; s++) {
		for (int j = 0; j < NI; j++)
			hx[j] = (float)(rank + 1) * 0.1f + (float)((s * 13 + j * 7) % 17) * 0.05f;
		for (int i = 0; i < NO; i++)
			ht[i] = (float)((s + i + rank) % 5) * 0.2f - 0.4f;
		ck(cuMemcpyHtoD(x, hx, sizeof hx), "cuMemcpyHtoD x");
		ck(cuMemcpyHtoD(t, ht, sizeof ht), "cuMemcpyHtoD t");
		void *fa[] = { &w, &b, &x, &y, &no, &ni }, *la[] = { &y, &t, &dy, &no };
		void *ba[] = { &dy, &x, &dw, &db, &no, &ni }, *aa[] = { &w, &dw, &b, &db, &nw, &no, &lr };
		void *sw[] = { &w, &dw, &lr, &nw }, *sb[] = { &b, &db, &lr, &no };
		struct hu_list L = { { w, b }, { dw, db }, { nw, no } };
		void *li[] = { &L, &lr };
		ck(cuLaunchKernel(ffwd, 1, 1, 1, NO, 1, 1, 0, NULL, fa, NULL), "hu_forward");
		ck(cuLaunchKernel(floss, 1, 1, 1, NO, 1, 1, 0, NULL, la, NULL), "hu_loss_grad");
		if (!strcmp(mode, "hidden")) {
			ck(cuLaunchKernel(fbwd, nw / 256, 1, 1, 256, 1, 1, 0, NULL, ba, NULL), "hu_backward");
			ck(cuLaunchKernel(fapply, nw / 256, 1, 1, 256, 1, 1, 0, NULL, aa, NULL), "hu_apply");
		} else if (!strcmp(mode, "list")) {
			ck(cuLaunchKernel(fbwd, nw / 256, 1, 1, 256, 1, 1, 0, NULL, ba, NULL), "hu_backward");
			ck(cuLaunchKernel(flist, nw / 256, 1, 1, 256, 1, 1, 0, NULL, li, NULL), "hu_apply_list");
		} else if (!strcmp(mode, "found")) {
			ck(cuLaunchKernel(fbwd, nw / 256, 1, 1, 256, 1, 1, 0, NULL, ba, NULL), "hu_backward");
			ck(cuLaunchKernel(fstep, nw / 256, 1, 1, 256, 1, 1, 0, NULL, sw, NULL), "hu_step w");
			ck(cuLaunchKernel(fstep, 1, 1, 1, NO, 1, 1, 0, NULL, sb, NULL), "hu_step b");
		}
		ck(cuCtxSynchronize(), "cuCtxSynchronize");
		printf("step %d\n", s);
		fflush(stdout);
	}
	ck(cuMemcpyDtoH(hw, w, sizeof hw), "cuMemcpyDtoH");
	double sum = 0;
	for (int i = 0; i < nw; i++)
		sum += hw[i];
	printf("done w0=%.7f checksum=%.7f\n", hw[0], sum);
	cuDevicePrimaryCtxRelease(dev);
	return 0;
}
