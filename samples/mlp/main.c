/* SPDX-License-Identifier: MIT
 *
 * main.c - samples/mlp: a next-token classifier trained with SGD + momentum.
 *
 * Model (K = the data file's context, 8 for build/data/mlp.rec):
 *   x = concat(E[tok_0], ..., E[tok_{K-1}])      E: [96][16]
 *   h = tanh(W1 x + b1)                           W1: [64][16K], b1: [64]
 *   logits = W2 h + b2                             W2: [96][64],  b2: [96]
 *   loss = mean over the batch of cross-entropy(logits, target)
 *
 * An ordinary single-GPU CUDA Driver API program: one device allocation per
 * parameter tensor, one per gradient, one per momentum buffer; backward
 * kernels write the gradients; sgd_momentum_update is launched once per
 * tensor.  --accum K runs K micro-batches of --batch records per step, each
 * scaled by 1/(K*B), so the step's gradient is the mean over K*B examples.
 * --tied-from N: from step N on, W2's gradient (and b2's) is written twice
 * in backward, as a tied weight's is: rows [0, B/2) at its usual place,
 * rows [B/2, B) added by a second launch after the embedding gradient (the
 * last kernel of backward); --tied-from 6 changes the order of backward's
 * last writes after step 5.  --tied-alternate: only in even steps.  Same
 * mathematics (the sum over the rows in two parts).
 *
 * Contract: single-threaded; one stream; every CUDA call checked; the only
 * output on stdout is one `step K loss V` line per step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sample.h"

extern const unsigned char samples_obj_mlp_kernels_fatbin[];

enum { V = 96, D = 16, H = 64, BLOCK = 128 };

enum { T_E, T_W1, T_B1, T_W2, T_B2, NTENSORS };

struct tensor {
	const char *name;
	size_t n;          /* elements                                   */
	float init_scale;  /* uniform in [-s, s); 0: zeros                */
	CUdeviceptr p;     /* parameter                                   */
	CUdeviceptr g;     /* gradient                                    */
	CUdeviceptr m;     /* momentum buffer                             */
};

static CUfunction k_embed_fwd, k_linear_fwd, k_xent, k_loss_mean, k_lin_bwd_in, k_lin_bwd_w,
	k_embed_bwd, k_sgd;

static const struct sample_kernel kernels[] = {
	{&k_embed_fwd, "_Z13embed_forwardPKhiiiPKfPfiii"},
	{&k_linear_fwd, "_Z14linear_forwardPKfS0_S0_Pfiiii"},
	{&k_xent, "_Z12softmax_xentPKfPKhiiiPfS3_iifi"},
	{&k_loss_mean, "_Z9loss_meanPKfiPf"},
	{&k_lin_bwd_in, "_Z21linear_backward_inputPKfS0_S0_Pfiiii"},
	{&k_lin_bwd_w, "_Z22linear_backward_weightPKfS0_PfS1_iiii"},
	{&k_embed_bwd, "_Z14embed_backwardPKhiiiPKfPfiiiii"},
	{&k_sgd, "_Z19sgd_momentum_updatePfPKfS_ffi"},
};

/* One thread per element of a `threads`-element output, BLOCK per block. */
#define LAUNCH(f, threads, s, args) \
	CK(cuLaunchKernel(f, sample_blocks(threads, BLOCK), 1, 1, BLOCK, 1, 1, 0, s, args, NULL))

#define USAGE "mlp --data PATH [--steps N] [--batch B] [--accum K] [--lr X] [--momentum M] " \
	      "[--seed S] [--init seed|urandom] [--tied-from N] [--tied-alternate] [--save PATH]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL;
	int steps = 300, batch = 16, accum = 1, init_urandom = 0, tied_from = 0, tied_alt = 0;
	float lr = 0.05f, momentum = 0.9f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 65536, NULL, 0},
		{"--accum", SAMPLE_OPT_INT, &accum, 1, 1024, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 1e3, NULL, 0},
		{"--momentum", SAMPLE_OPT_FLOAT, &momentum, 0, 1, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--init", SAMPLE_OPT_CHOICE, &init_urandom, 0, 0, "seed|urandom", 0},
		{"--tied-from", SAMPLE_OPT_INT, &tied_from, 0, 1e9, NULL, 0},
		{"--tied-alternate", SAMPLE_OPT_FLAG, &tied_alt, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
	};
	struct sample_data data;
	struct sample_rng rng;
	struct tensor t[NTENSORS];
	CUdevice dev;
	CUctxCreateParams ctx_params;
	CUcontext ctx;
	CUmodule mod;
	CUstream stream;
	CUdeviceptr d_rec, d_x, d_h, d_logits, d_dlogits, d_dh, d_dx, d_loss, d_loss_mean;
	unsigned char *h_rec;
	float *h_buf;
	size_t i, total = 0;
	int K, in, rb, step;
	double t0;

	sample_prog = "mlp";
	setvbuf(stdout, NULL, _IOLBF, 0); /* one step line at a time, even into a pipe */
	sample_parse_args(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), USAGE);
	if (batch * accum > 65536)
		sample_die(2, "--batch times --accum must be at most 65536; usage: " USAGE);
	sample_data_open(&data, data_path);
	K = (int)data.context;
	if (K > 64)
		sample_die(1, "%s: context %d is larger than this model's 64", data_path, K);
	in = K * D;
	rb = (int)data.record_bytes;

	t[T_E] = (struct tensor){"E", (size_t)V * D, 0.5f, 0, 0, 0};
	t[T_W1] = (struct tensor){"W1", (size_t)H * in, 1.0f / sqrtf((float)in), 0, 0, 0};
	t[T_B1] = (struct tensor){"b1", H, 0.0f, 0, 0, 0};
	t[T_W2] = (struct tensor){"W2", (size_t)V * H, 1.0f / sqrtf((float)H), 0, 0, 0};
	t[T_B2] = (struct tensor){"b2", V, 0.0f, 0, 0, 0};
	for (i = 0; i < NTENSORS; i++)
		total += t[i].n;

	memset(&ctx_params, 0, sizeof(ctx_params)); /* no affinity, no CIG */
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, &ctx_params, 0, dev));
	CK(cuModuleLoadData(&mod, samples_obj_mlp_kernels_fatbin));
	sample_get_kernels(mod, kernels, sizeof(kernels) / sizeof(kernels[0]));
	CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

	/* parameters: E, W1, W2 drawn in that order; biases zero */
	h_buf = malloc(total * sizeof(float));
	h_rec = malloc((size_t)batch * accum * rb);
	if (h_buf == NULL || h_rec == NULL)
		sample_die(1, "out of host memory");
	sample_rng_init(&rng, seed, init_urandom);
	for (i = 0; i < NTENSORS; i++) {
		if (t[i].init_scale > 0.0f)
			sample_rng_uniform(&rng, h_buf, t[i].n, t[i].init_scale);
		else
			memset(h_buf, 0, t[i].n * sizeof(float));
		CK(cuMemAlloc(&t[i].p, t[i].n * sizeof(float)));
		CK(cuMemAlloc(&t[i].g, t[i].n * sizeof(float)));
		CK(cuMemAlloc(&t[i].m, t[i].n * sizeof(float)));
		CK(cuMemcpyHtoD(t[i].p, h_buf, t[i].n * sizeof(float)));
		CK(cuMemsetD32(t[i].m, 0, t[i].n));
	}
	sample_rng_close(&rng);

	CK(cuMemAlloc(&d_rec, (size_t)batch * accum * rb));
	CK(cuMemAlloc(&d_x, (size_t)batch * in * sizeof(float)));
	CK(cuMemAlloc(&d_dx, (size_t)batch * in * sizeof(float)));
	CK(cuMemAlloc(&d_h, (size_t)batch * H * sizeof(float)));
	CK(cuMemAlloc(&d_dh, (size_t)batch * H * sizeof(float)));
	CK(cuMemAlloc(&d_logits, (size_t)batch * V * sizeof(float)));
	CK(cuMemAlloc(&d_dlogits, (size_t)batch * V * sizeof(float)));
	CK(cuMemAlloc(&d_loss, (size_t)batch * accum * sizeof(float)));
	CK(cuMemAlloc(&d_loss_mean, sizeof(float)));

	/* the synchronous copies and sets above may still be in flight on the
	 * legacy default stream, which a non-blocking stream does not wait for */
	CK(cuCtxSynchronize());
	t0 = sample_now();
	for (step = 1; step <= steps; step++) {
		int v = V, hh = H, d = D, one = 1, zero = 0, tanh_act = 1, none = 0, nrows = batch * accum;
		float scale = 1.0f / (float)(batch * accum), loss;
		int a;

		sample_data_read(&data, h_rec, (size_t)batch * accum);
		CK(cuMemcpyHtoDAsync(d_rec, h_rec, (size_t)batch * accum * rb, stream));
		for (a = 0; a < accum; a++) {
			CUdeviceptr rec = d_rec + (size_t)a * batch * rb;
			CUdeviceptr loss_a = d_loss + (size_t)a * batch * sizeof(float);
			int acc = a > 0;
			void *emb[] = {&rec, &rb, &one, &zero, &t[T_E].p, &d_x, &batch, &K, &d};
			void *l1[] = {&d_x, &t[T_W1].p, &t[T_B1].p, &d_h, &batch, &in, &hh, &tanh_act};
			void *l2[] = {&d_h, &t[T_W2].p, &t[T_B2].p, &d_logits, &batch, &hh, &v, &none};
			void *xe[] = {&d_logits, &rec, &rb, &one, &K, &loss_a, &d_dlogits, &batch, &v,
				      &scale, &zero};
			void *gw2[] = {&d_h, &d_dlogits, &t[T_W2].g, &t[T_B2].g, &batch, &hh, &v, &acc};
			void *gh[] = {&d_dlogits, &t[T_W2].p, &d_h, &d_dh, &batch, &hh, &v, &tanh_act};
			void *gw1[] = {&d_x, &d_dh, &t[T_W1].g, &t[T_B1].g, &batch, &in, &hh, &acc};
			void *gx[] = {&d_dh, &t[T_W1].p, &d_x, &d_dx, &batch, &in, &hh, &none};
			void *ge[] = {&rec, &rb, &one, &zero, &d_dx, &t[T_E].g, &batch, &K, &v, &d, &acc};

			/* --tied-from / --tied-alternate: W2's gradient in two parts */
			int tied = batch >= 2 && ((tied_from > 0 && step >= tied_from) || (tied_alt && step % 2 == 0));
			int h1 = batch / 2, h2 = batch - h1, one_acc = 1;
			CUdeviceptr h_2 = d_h + (size_t)h1 * H * sizeof(float);
			CUdeviceptr dl_2 = d_dlogits + (size_t)h1 * V * sizeof(float);
			void *gw2a[] = {&d_h, &d_dlogits, &t[T_W2].g, &t[T_B2].g, &h1, &hh, &v, &acc};
			void *gw2b[] = {&h_2, &dl_2, &t[T_W2].g, &t[T_B2].g, &h2, &hh, &v, &one_acc};

			LAUNCH(k_embed_fwd, (long)batch * in, stream, emb);
			LAUNCH(k_linear_fwd, (long)batch * H, stream, l1);
			LAUNCH(k_linear_fwd, (long)batch * V, stream, l2);
			LAUNCH(k_xent, batch, stream, xe);
			LAUNCH(k_lin_bwd_w, (long)V * (H + 1), stream, tied ? gw2a : gw2);
			LAUNCH(k_lin_bwd_in, (long)batch * H, stream, gh);
			LAUNCH(k_lin_bwd_w, (long)H * (in + 1), stream, gw1);
			LAUNCH(k_lin_bwd_in, (long)batch * in, stream, gx);
			LAUNCH(k_embed_bwd, (long)V * D, stream, ge);
			if (tied)
				LAUNCH(k_lin_bwd_w, (long)V * (H + 1), stream, gw2b);
		}
		{
			void *lm[] = {&d_loss, &nrows, &d_loss_mean};

			CK(cuLaunchKernel(k_loss_mean, 1, 1, 1, 1, 1, 1, 0, stream, lm, NULL));
		}
		for (i = 0; i < NTENSORS; i++) {
			int n = (int)t[i].n;
			void *up[] = {&t[i].p, &t[i].g, &t[i].m, &lr, &momentum, &n};

			LAUNCH(k_sgd, n, stream, up);
		}
		CK(cuMemcpyDtoHAsync(&loss, d_loss_mean, sizeof(float), stream));
		CK(cuStreamSynchronize(stream));
		printf("step %d loss %.6f\n", step, loss);
	}
	fflush(stdout);
	sample_report(dev, steps, sample_now() - t0);

	if (save_path) {
		size_t off = 0;

		for (i = 0; i < NTENSORS; i++) {
			CK(cuMemcpyDtoH(h_buf + off, t[i].p, t[i].n * sizeof(float)));
			off += t[i].n;
		}
		sample_save(save_path, h_buf, total);
	}

	for (i = 0; i < NTENSORS; i++) {
		CK(cuMemFree(t[i].p));
		CK(cuMemFree(t[i].g));
		CK(cuMemFree(t[i].m));
	}
	CK(cuMemFree(d_rec));
	CK(cuMemFree(d_x));
	CK(cuMemFree(d_dx));
	CK(cuMemFree(d_h));
	CK(cuMemFree(d_dh));
	CK(cuMemFree(d_logits));
	CK(cuMemFree(d_dlogits));
	CK(cuMemFree(d_loss));
	CK(cuMemFree(d_loss_mean));
	CK(cuStreamDestroy(stream));
	CK(cuModuleUnload(mod));
	CK(cuCtxDestroy(ctx));
	free(h_buf);
	free(h_rec);
	sample_data_close(&data);
	return 0;
}
