/* SPDX-License-Identifier: MIT
 *
 * main.c - samples/fused: the mlp model (see samples/mlp) trained with a
 * fused multi-tensor Adam in the style of PyTorch's FusedAdam.
 *
 * Model (K = the data file's context, 8 for build/data/mlp.rec):
 *   x = concat(E[tok_0..tok_{K-1}]), h = tanh(W1 x + b1), logits = W2 h + b2,
 *   loss = mean cross-entropy;  E [96][16], W1 [64][16K], b1 [64],
 *   W2 [96][64], b2 [96].
 *
 * Mixed precision as in PyTorch bf16 training with fp32 master weights: one
 * fp32 allocation per parameter tensor, one __nv_bfloat16 allocation per
 * gradient (the backward kernels round fp32 sums to bf16 on store), fp32
 * Adam moments.  The optimizer is ONE launch per step of
 * multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamFunctor<bf16>>,
 * whose first argument -- passed BY VALUE, 2904 bytes -- holds the four
 * pointer lists (param, grad, exp_avg, exp_avg_sq), the sizes and the
 * block-to-chunk map of every tensor.
 *
 * Contract: single-threaded; one stream; every CUDA call checked; the only
 * output on stdout is one `step K loss V` line per step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sample.h"
#include "tensor_list.h"

_Static_assert(sizeof(struct tensor_list_metadata4) == MTA_STRUCT_BYTES, "layout shared with kernels.cu");

extern const unsigned char samples_obj_fused_kernels_fatbin[];

enum { V = 96, D = 16, H = 64, BLOCK = 128 };
enum { T_E, T_W1, T_B1, T_W2, T_B2, NTENSORS };

struct tensor {
	const char *name;
	size_t n;          /* elements                                   */
	float init_scale;  /* uniform in [-s, s); 0: zeros                */
	CUdeviceptr p;     /* fp32 master weights                          */
	CUdeviceptr g;     /* bf16 gradient                                */
	CUdeviceptr m, v;  /* fp32 Adam moments                            */
};

static CUfunction k_embed_fwd, k_linear_fwd, k_xent, k_loss_mean, k_lin_bwd_in, k_lin_bwd_w,
	k_embed_bwd, k_adam;

static const struct sample_kernel kernels[] = {
	{&k_embed_fwd, "_Z13embed_forwardPKhiiiPKfPfiii"},
	{&k_linear_fwd, "_Z14linear_forwardPKfS0_S0_Pfiiii"},
	{&k_xent, "_Z12softmax_xentPKfPKhiiiPfS3_iifi"},
	{&k_loss_mean, "_Z9loss_meanPKfiPf"},
	{&k_lin_bwd_in, "_Z21linear_backward_inputPKfS0_S0_Pfiiii"},
	{&k_lin_bwd_w, "_Z27linear_backward_weight_bf16PKfS0_P13__nv_bfloat16S2_iii"},
	{&k_embed_bwd, "_Z19embed_backward_bf16PKhiiiPKfP13__nv_bfloat16iiii"},
	{&k_adam, "_Z25multi_tensor_apply_kernelI18TensorListMetadataILi4EE16FusedAdamFunctorI13__nv_"
		  "bfloat16EJfffffffEEvT_T0_DpT1_"},
};

/* One thread per element of a `threads`-element output, BLOCK per block. */
#define LAUNCH(f, threads, s, args) \
	CK(cuLaunchKernel(f, sample_blocks(threads, BLOCK), 1, 1, BLOCK, 1, 1, 0, s, args, NULL))

#define USAGE "fused --data PATH [--steps N] [--batch B] [--lr X] [--weight-decay W] [--seed S] " \
	      "[--save PATH]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL;
	int steps = 300, batch = 16;
	float lr = 3e-3f, wd = 0.0f;
	float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 65536, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 1e3, NULL, 0},
		{"--weight-decay", SAMPLE_OPT_FLOAT, &wd, 0, 1e3, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
	};
	struct tensor_list_metadata4 tl;
	struct sample_data data;
	struct sample_rng rng;
	struct tensor t[NTENSORS];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUstream stream;
	CUdeviceptr d_rec, d_x, d_h, d_logits, d_dlogits, d_dh, d_dx, d_loss, d_loss_mean;
	unsigned char *h_rec, functor = 0;
	float *h_buf;
	size_t i, total = 0;
	int K, in, rb, step, nblocks = 0;
	double t0;

	sample_prog = "fused";
	setvbuf(stdout, NULL, _IOLBF, 0); /* one step line at a time, even into a pipe */
	sample_parse_args(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), USAGE);
	sample_data_open(&data, data_path);
	K = (int)data.context;
	if (K > 64)
		sample_die(1, "%s: context %d is larger than this model's 64", data_path, K);
	in = K * D;
	rb = (int)data.record_bytes;

	t[T_E] = (struct tensor){"E", (size_t)V * D, 0.5f, 0, 0, 0, 0};
	t[T_W1] = (struct tensor){"W1", (size_t)H * in, 1.0f / sqrtf((float)in), 0, 0, 0, 0};
	t[T_B1] = (struct tensor){"b1", H, 0.0f, 0, 0, 0, 0};
	t[T_W2] = (struct tensor){"W2", (size_t)V * H, 1.0f / sqrtf((float)H), 0, 0, 0, 0};
	t[T_B2] = (struct tensor){"b2", V, 0.0f, 0, 0, 0, 0};
	for (i = 0; i < NTENSORS; i++)
		total += t[i].n;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxPushCurrent(ctx));
	CK(cuModuleLoadData(&mod, samples_obj_fused_kernels_fatbin));
	sample_get_kernels(mod, kernels, sizeof(kernels) / sizeof(kernels[0]));
	CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

	h_buf = malloc(total * sizeof(float));
	h_rec = malloc((size_t)batch * rb);
	if (h_buf == NULL || h_rec == NULL)
		sample_die(1, "out of host memory");
	sample_rng_init(&rng, seed, 0);
	memset(&tl, 0, sizeof(tl));
	for (i = 0; i < NTENSORS; i++) {
		int chunk, nchunks = (int)((t[i].n + MTA_CHUNK_SIZE - 1) / MTA_CHUNK_SIZE);

		if (t[i].init_scale > 0.0f)
			sample_rng_uniform(&rng, h_buf, t[i].n, t[i].init_scale);
		else
			memset(h_buf, 0, t[i].n * sizeof(float));
		CK(cuMemAlloc(&t[i].p, t[i].n * sizeof(float)));
		CK(cuMemAlloc(&t[i].g, t[i].n * 2)); /* __nv_bfloat16 */
		CK(cuMemAlloc(&t[i].m, t[i].n * sizeof(float)));
		CK(cuMemAlloc(&t[i].v, t[i].n * sizeof(float)));
		CK(cuMemcpyHtoD(t[i].p, h_buf, t[i].n * sizeof(float)));
		CK(cuMemsetD32(t[i].m, 0, t[i].n));
		CK(cuMemsetD32(t[i].v, 0, t[i].n));
		/* the tensor list: every tensor fits one launch */
		tl.addresses[0][i] = (void *)(uintptr_t)t[i].p;
		tl.addresses[1][i] = (void *)(uintptr_t)t[i].g;
		tl.addresses[2][i] = (void *)(uintptr_t)t[i].m;
		tl.addresses[3][i] = (void *)(uintptr_t)t[i].v;
		tl.sizes[i] = (int)t[i].n;
		for (chunk = 0; chunk < nchunks; chunk++) {
			if (nblocks == MTA_MAX_BLOCKS)
				sample_die(1, "model too large for one multi-tensor launch");
			tl.block_to_tensor[nblocks] = (unsigned char)i;
			tl.block_to_chunk[nblocks] = chunk;
			nblocks++;
		}
	}
	tl.start_tensor_this_launch = 0;
	sample_rng_close(&rng);

	CK(cuMemAlloc(&d_rec, (size_t)batch * rb));
	CK(cuMemAlloc(&d_x, (size_t)batch * in * sizeof(float)));
	CK(cuMemAlloc(&d_dx, (size_t)batch * in * sizeof(float)));
	CK(cuMemAlloc(&d_h, (size_t)batch * H * sizeof(float)));
	CK(cuMemAlloc(&d_dh, (size_t)batch * H * sizeof(float)));
	CK(cuMemAlloc(&d_logits, (size_t)batch * V * sizeof(float)));
	CK(cuMemAlloc(&d_dlogits, (size_t)batch * V * sizeof(float)));
	CK(cuMemAlloc(&d_loss, (size_t)batch * sizeof(float)));
	CK(cuMemAlloc(&d_loss_mean, sizeof(float)));

	/* the synchronous copies and sets above may still be in flight on the
	 * legacy default stream, which a non-blocking stream does not wait for */
	CK(cuCtxSynchronize());
	t0 = sample_now();
	for (step = 1; step <= steps; step++) {
		int v = V, hh = H, d = D, one = 1, zero = 0, tanh_act = 1, none = 0;
		float scale = 1.0f / (float)batch, loss;
		float bc1 = 1.0f - powf(beta1, (float)step), bc2 = 1.0f - powf(beta2, (float)step);
		void *emb[] = {&d_rec, &rb, &one, &zero, &t[T_E].p, &d_x, &batch, &K, &d};
		void *l1[] = {&d_x, &t[T_W1].p, &t[T_B1].p, &d_h, &batch, &in, &hh, &tanh_act};
		void *l2[] = {&d_h, &t[T_W2].p, &t[T_B2].p, &d_logits, &batch, &hh, &v, &none};
		void *xe[] = {&d_logits, &d_rec, &rb, &one, &K, &d_loss, &d_dlogits, &batch, &v, &scale, &zero};
		void *lm[] = {&d_loss, &batch, &d_loss_mean};
		void *gw2[] = {&d_h, &d_dlogits, &t[T_W2].g, &t[T_B2].g, &batch, &hh, &v};
		void *gh[] = {&d_dlogits, &t[T_W2].p, &d_h, &d_dh, &batch, &hh, &v, &tanh_act};
		void *gw1[] = {&d_x, &d_dh, &t[T_W1].g, &t[T_B1].g, &batch, &in, &hh};
		void *gx[] = {&d_dh, &t[T_W1].p, &d_x, &d_dx, &batch, &in, &hh, &none};
		void *ge[] = {&d_rec, &rb, &one, &zero, &d_dx, &t[T_E].g, &batch, &K, &v, &d};
		void *adam[] = {&tl, &functor, &lr, &beta1, &beta2, &eps, &wd, &bc1, &bc2};

		sample_data_read(&data, h_rec, (size_t)batch);
		CK(cuMemcpyHtoDAsync(d_rec, h_rec, (size_t)batch * rb, stream));
		LAUNCH(k_embed_fwd, (long)batch * in, stream, emb);
		LAUNCH(k_linear_fwd, (long)batch * H, stream, l1);
		LAUNCH(k_linear_fwd, (long)batch * V, stream, l2);
		LAUNCH(k_xent, batch, stream, xe);
		CK(cuLaunchKernel(k_loss_mean, 1, 1, 1, 1, 1, 1, 0, stream, lm, NULL));
		LAUNCH(k_lin_bwd_w, (long)V * (H + 1), stream, gw2);
		LAUNCH(k_lin_bwd_in, (long)batch * H, stream, gh);
		LAUNCH(k_lin_bwd_w, (long)H * (in + 1), stream, gw1);
		LAUNCH(k_lin_bwd_in, (long)batch * in, stream, gx);
		LAUNCH(k_embed_bwd, (long)V * D, stream, ge);
		CK(cuLaunchKernel(k_adam, (unsigned)nblocks, 1, 1, MTA_BLOCK_THREADS, 1, 1, 0, stream, adam,
				  NULL));
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
		CK(cuMemFree(t[i].v));
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
	CK(cuCtxPopCurrent(NULL));
	CK(cuDevicePrimaryCtxRelease(dev));
	free(h_buf);
	free(h_rec);
	sample_data_close(&data);
	return 0;
}
