/* SPDX-License-Identifier: MIT
 *
 * evalonly.c - an evaluation program written the way users write one, for
 * tests/e2e/sync/evalonly.sh: it loads trained weights from a file, runs
 * the forward pass (one linear layer and an arg max) over its input file
 * in batches, and writes one prediction per row to an output file at the
 * end; no optimizer, no parameter rewritten.  Under ddprun --shard each
 * rank reads its share of the rows.  Driven through the driver API.
 *   evalonly WEIGHTS DATA PRED [BATCH]
 * WEIGHTS: OUT*IN floats (W, row-major) then OUT floats (b); DATA: rows of
 * IN floats; PRED: "ROW CLASS" per line, ROW counting this rank's rows.
 * It prints "rows N" on stdout at the end.  EVAL_NUDGE=1 (a control):
 * after each batch a kernel rewrites the weights (a hidden update).
 * EVAL_STAGE=1: all rows are read first and copied to the device once,
 * before the first launch (batches are offsets into them).
 * EVAL_HOSTUPD=1 (a control): after each batch the weights are copied to
 * the host, changed by the batch's predictions and copied back (an update
 * made on the host: launch by launch it looks like the next inputs).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char tests_e2e_progs_evalonly_fatbin[];

#define IN 16
#define OUT 4
#define MAXB 64

static void ck(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "evalonly: %s failed (%d)\n", what, (int)r);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: evalonly WEIGHTS DATA PRED [BATCH]\n");
		return 2;
	}
	int batch = argc > 4 ? atoi(argv[4]) : 8, in = IN, out = OUT, nw = OUT * IN;
	int nudge = getenv("EVAL_NUDGE") && atoi(getenv("EVAL_NUDGE"));
	int stage = getenv("EVAL_STAGE") && atoi(getenv("EVAL_STAGE"));
	int hostupd = getenv("EVAL_HOSTUPD") && atoi(getenv("EVAL_HOSTUPD"));
	float *hall = NULL;
	size_t nrows = 0, next = 0;
	CUdeviceptr xs = 0;
	float hw[OUT * IN + OUT], hx[MAXB * IN];
	int hp[MAXB], *all = NULL;
	size_t nall = 0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction flin, fmax, fnudge;
	CUdeviceptr w, b, x, y, p;

	if (batch < 1 || batch > MAXB)
		batch = 8;
	FILE *f = fopen(argv[1], "rb");
	if (!f || fread(hw, sizeof(float), OUT * IN + OUT, f) != OUT * IN + OUT) {
		fprintf(stderr, "evalonly: cannot read the weights from %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	ck(cuInit(0), "cuInit");
	ck(cuDeviceGet(&dev, 0), "cuDeviceGet");
	ck(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	ck(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	ck(cuModuleLoadData(&mod, tests_e2e_progs_evalonly_fatbin), "cuModuleLoadData");
	ck(cuModuleGetFunction(&flin, mod, "_Z9ev_linearPKfS0_S0_Pfiii"), "ev_linear");
	ck(cuModuleGetFunction(&fmax, mod, "_Z9ev_argmaxPKfPiii"), "ev_argmax");
	ck(cuModuleGetFunction(&fnudge, mod, "_Z8ev_nudgePfPKfi"), "ev_nudge");
	ck(cuMemAlloc(&w, sizeof(float) * OUT * IN), "cuMemAlloc w");
	ck(cuMemAlloc(&b, sizeof(float) * OUT), "cuMemAlloc b");
	ck(cuMemAlloc(&x, sizeof(float) * MAXB * IN), "cuMemAlloc x");
	ck(cuMemAlloc(&y, sizeof(float) * MAXB * OUT), "cuMemAlloc y");
	ck(cuMemAlloc(&p, sizeof(int) * MAXB), "cuMemAlloc p");
	ck(cuMemcpyHtoD(w, hw, sizeof(float) * OUT * IN), "load w");
	ck(cuMemcpyHtoD(b, hw + OUT * IN, sizeof(float) * OUT), "load b");

	f = fopen(argv[2], "rb");
	if (!f) {
		fprintf(stderr, "evalonly: cannot open %s\n", argv[2]);
		return 1;
	}
	if (stage) { /* every row first, on the device once, before any launch */
		size_t got;
		while ((got = fread(hx, sizeof(float) * IN, (size_t)batch, f)) > 0) {
			float *na = realloc(hall, sizeof(float) * IN * (nrows + (size_t)batch));
			if (!na)
				return 1;
			hall = na;
			memset(hx + got * IN, 0, sizeof(float) * IN * ((size_t)batch - got));
			memcpy(hall + nrows * IN, hx, sizeof(float) * IN * (size_t)batch);
			nrows += got;
			if (got < (size_t)batch)
				break;
		}
		ck(cuMemAlloc(&xs, sizeof(float) * IN * (nrows + (size_t)batch)), "cuMemAlloc xs");
		if (nrows)
			ck(cuMemcpyHtoD(xs, hall, sizeof(float) * IN * ((nrows + (size_t)batch - 1) / (size_t)batch) *
							  (size_t)batch),
			   "cuMemcpyHtoD xs");
	}
	for (;;) {
		size_t got;
		if (stage) {
			got = nrows - next < (size_t)batch ? nrows - next : (size_t)batch;
			x = xs + sizeof(float) * IN * next;
			next += got;
		} else {
			got = fread(hx, sizeof(float) * IN, (size_t)batch, f);
		}
		if (!got)
			break;
		int rows = (int)got;
		if (!stage) {
			/* a short last batch is padded with zeros: every launch alike */
			memset(hx + got * IN, 0, sizeof(float) * IN * (size_t)(batch - rows));
			ck(cuMemcpyHtoD(x, hx, sizeof(float) * IN * (size_t)batch), "cuMemcpyHtoD x");
		}
		void *la[] = { &w, &b, &x, &y, &batch, &in, &out }, *ma[] = { &y, &p, &batch, &out };
		ck(cuLaunchKernel(flin, (batch * OUT + 63) / 64, 1, 1, 64, 1, 1, 0, NULL, la, NULL), "ev_linear");
		ck(cuLaunchKernel(fmax, 1, 1, 1, 64, 1, 1, 0, NULL, ma, NULL), "ev_argmax");
		if (nudge) {
			void *na[] = { &w, &y, &nw };
			ck(cuLaunchKernel(fnudge, (nw + 63) / 64, 1, 1, 64, 1, 1, 0, NULL, na, NULL), "ev_nudge");
		}
		ck(cuMemcpyDtoH(hp, p, sizeof(int) * (size_t)batch), "cuMemcpyDtoH");
		if (hostupd) { /* the weights changed on the host by this rank's batch */
			float hw2[OUT * IN];
			ck(cuMemcpyDtoH(hw2, w, sizeof hw2), "cuMemcpyDtoH w");
			for (int i = 0; i < OUT * IN; i++)
				hw2[i] -= 1e-3f * (float)(hp[0] + 1);
			ck(cuMemcpyHtoD(w, hw2, sizeof hw2), "cuMemcpyHtoD w");
		}
		int *na2 = realloc(all, (nall + got) * sizeof *all);
		if (!na2)
			return 1;
		all = na2;
		memcpy(all + nall, hp, got * sizeof *all);
		nall += got;
	}
	fclose(f);
	FILE *o = fopen(argv[3], "w");
	if (!o) {
		fprintf(stderr, "evalonly: cannot write %s\n", argv[3]);
		return 1;
	}
	for (size_t i = 0; i < nall; i++)
		fprintf(o, "%zu %d\n", i, all[i]);
	fclose(o);
	printf("rows %zu\n", nall);
	free(all);
	free(hall);
	cuDevicePrimaryCtxRelease(dev);
	return 0;
}
