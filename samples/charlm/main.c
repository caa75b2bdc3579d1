/* SPDX-License-Identifier: MIT
 *
 * main.c - samples/charlm: a small character language model trained with
 * AdamW, global-norm gradient clipping and optional loss scaling.
 *
 * Each record holds T+1 tokens (T = 32 for build/data/charlm.rec); position
 * t (0..T-1) predicts token t+1 from tokens t-3..t (token 0 before the start
 * of the record):
 *   x = concat(E[tok_{t-3}], ..., E[tok_t])       E: [96][16]
 *   h = tanh(W1 x + b1)                            W1: [64][64], b1: [64]
 *   logits = W2 h + b2                              W2: [96][64], b2: [96]
 *   loss = mean over batch and positions of cross-entropy
 *
 * ALL parameters live in ONE flat device allocation (tensors are sub-ranges
 * at the offsets of `layout` below), all gradients in another, AdamW's m and
 * v in two more.  Each step: forward, backward into the flat gradient
 * buffer, [--amp: unscale + found-inf check; the host reads the flag and
 * skips the update on overflow], the global gradient norm into a device
 * scalar, then adamw_update once per parameter tensor, each reading the clip
 * factor from that scalar.
 *
 * Contract: single-threaded; one stream; every CUDA call checked; the only
 * output on stdout is one `step K loss V[ skipped]` line per step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sample.h"

extern const unsigned char samples_obj_charlm_kernels_fatbin[];

enum { V = 96, D = 16, C = 4, H = 64, BLOCK = 128, NORM_THREADS = 256 };
enum { GOOD_STEPS_TO_GROW = 200 };

enum { T_E, T_W1, T_B1, T_W2, T_B2, NTENSORS };

struct tensor {
	const char *name;
	size_t off, n;       /* sub-range of the flat buffers, in floats      */
	float init_scale;    /* uniform in [-s, s); 0: zeros                   */
	int decay;           /* 1: AdamW weight decay applies                  */
};

static CUfunction k_embed_fwd, k_linear_fwd, k_xent, k_loss_mean, k_lin_bwd_in, k_lin_bwd_w,
	k_embed_bwd, k_unscale, k_norm, k_adamw;

static const struct sample_kernel kernels[] = {
	{&k_embed_fwd, "_Z13embed_forwardPKhiiiPKfPfiii"},
	{&k_linear_fwd, "_Z14linear_forwardPKfS0_S0_Pfiiii"},
	{&k_xent, "_Z12softmax_xentPKfPKhiiiPfS3_iifi"},
	{&k_loss_mean, "_Z9loss_meanPKfiPf"},
	{&k_lin_bwd_in, "_Z21linear_backward_inputPKfS0_S0_Pfiiii"},
	{&k_lin_bwd_w, "_Z22linear_backward_weightPKfS0_PfS1_iiii"},
	{&k_embed_bwd, "_Z14embed_backwardPKhiiiPKfPfiiiii"},
	{&k_unscale, "_Z17amp_unscale_gradsPfifPi"},
	{&k_norm, "_Z16global_grad_normPKfiPf"},
	{&k_adamw, "_Z12adamw_updatePfPKfS_S_S1_ffffffii"},
};

/* One thread per element of a `threads`-element output, BLOCK per block. */
#define LAUNCH(f, threads, s, args) \
	CK(cuLaunchKernel(f, sample_blocks(threads, BLOCK), 1, 1, BLOCK, 1, 1, 0, s, args, NULL))

#define USAGE "charlm --data PATH [--steps N] [--batch B] [--lr X] [--seed S] [--save PATH] " \
	      "[--clip MAXNORM] [--weight-decay W] [--amp] [--loss-scale S]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL;
	int steps = 300, batch = 4, amp = 0;
	float lr = 1e-2f, clip = 1.0f, wd = 0.01f, loss_scale = 65536.0f;
	const float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 4096, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 1e3, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
		{"--clip", SAMPLE_OPT_FLOAT, &clip, 1e-30, 3.4e38, NULL, 0},
		{"--weight-decay", SAMPLE_OPT_FLOAT, &wd, 0, 1e3, NULL, 0},
		{"--amp", SAMPLE_OPT_FLAG, &amp, 0, 0, NULL, 0},
		{"--loss-scale", SAMPLE_OPT_FLOAT, &loss_scale, 1, 3.4e38, NULL, 0},
	};
	struct tensor t[NTENSORS];
	struct sample_data data;
	struct sample_rng rng;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUstream stream;
	CUdeviceptr d_par, d_grad, d_m, d_v, d_rec, d_x, d_h, d_logits, d_dlogits, d_dh, d_dx, d_loss,
		d_loss_mean, d_norm, d_found_inf;
	unsigned char *h_rec;
	float *h_par;
	size_t i, total = 0;
	int T, in = C * D, rb, rows, step, updates = 0, good = 0;
	double t0;

	sample_prog = "charlm";
	setvbuf(stdout, NULL, _IOLBF, 0); /* one step line at a time, even into a pipe */
	sample_parse_args(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), USAGE);
	sample_data_open(&data, data_path);
	T = (int)data.context;
	rb = (int)data.record_bytes;
	if ((long)batch * T > 65536)
		sample_die(2, "--batch %d times the context %d must be at most 65536; usage: " USAGE, batch, T);
	rows = batch * T;

	/* the flat layout: every tensor starts on a 16-byte boundary */
	t[T_E] = (struct tensor){"E", 0, (size_t)V * D, 0.5f, 1};
	t[T_W1] = (struct tensor){"W1", 0, (size_t)H * in, 1.0f / sqrtf((float)in), 1};
	t[T_B1] = (struct tensor){"b1", 0, H, 0.0f, 0};
	t[T_W2] = (struct tensor){"W2", 0, (size_t)V * H, 1.0f / sqrtf((float)H), 1};
	t[T_B2] = (struct tensor){"b2", 0, V, 0.0f, 0};
	for (i = 0; i < NTENSORS; i++) {
		t[i].off = total;
		total += (t[i].n + 3) & ~(size_t)3;
	}

	h_par = calloc(total, sizeof(float));
	h_rec = malloc((size_t)batch * rb);
	if (h_par == NULL || h_rec == NULL)
		sample_die(1, "out of host memory");
	sample_rng_init(&rng, seed, 0);
	for (i = 0; i < NTENSORS; i++)
		if (t[i].init_scale > 0.0f)
			sample_rng_uniform(&rng, h_par + t[i].off, t[i].n, t[i].init_scale);
	sample_rng_close(&rng);

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&mod, samples_obj_charlm_kernels_fatbin));
	sample_get_kernels(mod, kernels, sizeof(kernels) / sizeof(kernels[0]));
	CK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));

	CK(cuMemAlloc(&d_par, total * sizeof(float)));
	CK(cuMemAlloc(&d_grad, total * sizeof(float)));
	CK(cuMemAlloc(&d_m, total * sizeof(float)));
	CK(cuMemAlloc(&d_v, total * sizeof(float)));
	CK(cuMemcpyHtoD(d_par, h_par, total * sizeof(float)));
	CK(cuMemsetD32(d_grad, 0, total));
	CK(cuMemsetD32(d_m, 0, total));
	CK(cuMemsetD32(d_v, 0, total));
	CK(cuMemAlloc(&d_rec, (size_t)batch * rb));
	CK(cuMemAlloc(&d_x, (size_t)rows * in * sizeof(float)));
	CK(cuMemAlloc(&d_dx, (size_t)rows * in * sizeof(float)));
	CK(cuMemAlloc(&d_h, (size_t)rows * H * sizeof(float)));
	CK(cuMemAlloc(&d_dh, (size_t)rows * H * sizeof(float)));
	CK(cuMemAlloc(&d_logits, (size_t)rows * V * sizeof(float)));
	CK(cuMemAlloc(&d_dlogits, (size_t)rows * V * sizeof(float)));
	CK(cuMemAlloc(&d_loss, (size_t)rows * sizeof(float)));
	CK(cuMemAlloc(&d_loss_mean, sizeof(float)));
	CK(cuMemAlloc(&d_norm, sizeof(float)));
	CK(cuMemAlloc(&d_found_inf, sizeof(int)));

	/* the synchronous copies and sets above may still be in flight on the
	 * legacy default stream, which a non-blocking stream does not wait for */
	CK(cuCtxSynchronize());
	t0 = sample_now();
	for (step = 1; step <= steps; step++) {
		CUdeviceptr pE = d_par + t[T_E].off * sizeof(float), gE = d_grad + t[T_E].off * sizeof(float);
		CUdeviceptr pW1 = d_par + t[T_W1].off * sizeof(float), gW1 = d_grad + t[T_W1].off * sizeof(float);
		CUdeviceptr pB1 = d_par + t[T_B1].off * sizeof(float), gB1 = d_grad + t[T_B1].off * sizeof(float);
		CUdeviceptr pW2 = d_par + t[T_W2].off * sizeof(float), gW2 = d_grad + t[T_W2].off * sizeof(float);
		CUdeviceptr pB2 = d_par + t[T_B2].off * sizeof(float), gB2 = d_grad + t[T_B2].off * sizeof(float);
		int v = V, hh = H, d = D, c = C, zero = 0, one = 1, tanh_act = 1, none = 0, shift = -(C - 1);
		int n_total = (int)total, skipped = 0;
		float scale = (amp ? loss_scale : 1.0f) / (float)rows, loss;
		void *emb[] = {&d_rec, &rb, &T, &shift, &pE, &d_x, &rows, &c, &d};
		void *l1[] = {&d_x, &pW1, &pB1, &d_h, &rows, &in, &hh, &tanh_act};
		void *l2[] = {&d_h, &pW2, &pB2, &d_logits, &rows, &hh, &v, &none};
		void *xe[] = {&d_logits, &d_rec, &rb, &T, &one, &d_loss, &d_dlogits, &rows, &v, &scale, &amp};
		void *lm[] = {&d_loss, &rows, &d_loss_mean};
		void *gw2[] = {&d_h, &d_dlogits, &gW2, &gB2, &rows, &hh, &v, &zero};
		void *gh[] = {&d_dlogits, &pW2, &d_h, &d_dh, &rows, &hh, &v, &tanh_act};
		void *gw1[] = {&d_x, &d_dh, &gW1, &gB1, &rows, &in, &hh, &zero};
		void *gx[] = {&d_dh, &pW1, &d_x, &d_dx, &rows, &in, &hh, &none};
		void *ge[] = {&d_rec, &rb, &T, &shift, &d_dx, &gE, &rows, &c, &v, &d, &zero};

		sample_data_read(&data, h_rec, (size_t)batch);
		CK(cuMemcpyHtoDAsync(d_rec, h_rec, (size_t)batch * rb, stream));
		/* forward */
		LAUNCH(k_embed_fwd, (long)rows * in, stream, emb);
		LAUNCH(k_linear_fwd, (long)rows * H, stream, l1);
		LAUNCH(k_linear_fwd, (long)rows * V, stream, l2);
		LAUNCH(k_xent, rows, stream, xe);
		CK(cuLaunchKernel(k_loss_mean, 1, 1, 1, 1, 1, 1, 0, stream, lm, NULL));
		/* backward: every gradient sub-range is written */
		LAUNCH(k_lin_bwd_w, (long)V * (H + 1), stream, gw2);
		LAUNCH(k_lin_bwd_in, (long)rows * H, stream, gh);
		LAUNCH(k_lin_bwd_w, (long)H * (in + 1), stream, gw1);
		LAUNCH(k_lin_bwd_in, (long)rows * in, stream, gx);
		LAUNCH(k_embed_bwd, (long)V * D, stream, ge);
		if (amp) {
			float inv = 1.0f / loss_scale;
			int found = 0;
			void *us[] = {&d_grad, &n_total, &inv, &d_found_inf};

			CK(cuMemsetD32Async(d_found_inf, 0, 1, stream));
			LAUNCH(k_unscale, n_total, stream, us);
			CK(cuMemcpyDtoHAsync(&found, d_found_inf, sizeof(int), stream));
			CK(cuStreamSynchronize(stream));
			if (found) {
				skipped = 1;
				loss_scale *= 0.5f;
				good = 0;
			} else if (++good == GOOD_STEPS_TO_GROW) {
				good = 0;
				loss_scale = loss_scale * 2.0f < 3.4e38f ? loss_scale * 2.0f : loss_scale;
			}
		}
		if (!skipped) {
			void *nm[] = {&d_grad, &n_total, &d_norm};

			updates++;
			CK(cuLaunchKernel(k_norm, 1, 1, 1, NORM_THREADS, 1, 1, 0, stream, nm, NULL));
			for (i = 0; i < NTENSORS; i++) {
				CUdeviceptr p = d_par + t[i].off * sizeof(float);
				CUdeviceptr g = d_grad + t[i].off * sizeof(float);
				CUdeviceptr m = d_m + t[i].off * sizeof(float);
				CUdeviceptr vv = d_v + t[i].off * sizeof(float);
				float w = t[i].decay ? wd : 0.0f;
				int n = (int)t[i].n;
				void *up[] = {&p, &g, &m, &vv, &d_norm, &clip, &lr, (void *)&beta1,
					      (void *)&beta2, (void *)&eps, &w, &updates, &n};

				LAUNCH(k_adamw, n, stream, up);
			}
		}
		CK(cuMemcpyDtoHAsync(&loss, d_loss_mean, sizeof(float), stream));
		CK(cuStreamSynchronize(stream));
		printf("step %d loss %.6f%s\n", step, loss, skipped ? " skipped" : "");
	}
	fflush(stdout);
	sample_report(dev, steps, sample_now() - t0);

	if (save_path) {
		float *out = malloc(total * sizeof(float));
		size_t off = 0;

		if (out == NULL)
			sample_die(1, "out of host memory");
		CK(cuMemcpyDtoH(h_par, d_par, total * sizeof(float)));
		for (i = 0; i < NTENSORS; i++) {
			memcpy(out + off, h_par + t[i].off, t[i].n * sizeof(float));
			off += t[i].n;
		}
		sample_save(save_path, out, off);
		free(out);
	}

	CK(cuMemFree(d_par));
	CK(cuMemFree(d_grad));
	CK(cuMemFree(d_m));
	CK(cuMemFree(d_v));
	CK(cuMemFree(d_rec));
	CK(cuMemFree(d_x));
	CK(cuMemFree(d_dx));
	CK(cuMemFree(d_h));
	CK(cuMemFree(d_dh));
	CK(cuMemFree(d_logits));
	CK(cuMemFree(d_dlogits));
	CK(cuMemFree(d_loss));
	CK(cuMemFree(d_loss_mean));
	CK(cuMemFree(d_norm));
	CK(cuMemFree(d_found_inf));
	CK(cuStreamDestroy(stream));
	CK(cuModuleUnload(mod));
	CK(cuDevicePrimaryCtxRelease(dev));
	free(h_par);
	free(h_rec);
	sample_data_close(&data);
	return 0;
}
