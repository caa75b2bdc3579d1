/* SPDX-License-Identifier: MIT
 *
 * main.c - samples/patterns: the mlp model (see samples/mlp) trained the way
 * hand-written CUDA C trainers in the style of llm.c keep their memory and
 * run their optimizer.  --pattern N picks one of six ways (kernels.cu):
 *
 *   1  fp32; adamw_kernel2 (every pointer non-const) once over all params
 *   2  fp32; squared grad norm into a slice of the activation allocation,
 *      the host reads it and clips; adamw_clipped once over all params
 *   3  fp32; grad_norm into a device scalar, then adamw_update per tensor
 *      on sub-ranges, the gradient pointer non-const
 *   4  bf16 params + fp32 master + fp32 grads; per tensor adamw_master then
 *      copy_and_cast_kernel of that tensor
 *   5  bf16 params + fp32 master + bf16 grads + fp32 m/v; adamw_kernel3 per
 *      tensor on sub-ranges
 *   6  fp32; SGD in a kernel named update_weights
 *   7  fp32; SGD with weight decay per tensor by sgd_block, which updates
 *      a 2-D block (rows x cols, ld apart; one thread per column) while
 *      each of its integer arguments covers one row or a few
 *
 * Memory as llm.c keeps it: ONE flat allocation each for the parameters
 * (bf16 params and fp32 master weights for 4 and 5), the gradients, AdamW's
 * m and v, and ONE allocation for every activation, activation gradient and
 * scratch value (tensors are slices).  Patterns 3-5 start every tensor of
 * the flat buffers on a 256-element boundary, so the buffers hold padding
 * that no tensor uses; 1, 2 and 6 pack the tensors.
 *
 * --save writes the fp32 parameters (the master weights for 4 and 5) in
 * tensor order E, W1, b1, W2, b2 without padding.
 *
 * Contract: single-threaded; one stream; every CUDA call checked; the only
 * output on stdout is one `step K loss V` line per step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sample.h"

extern const unsigned char samples_obj_patterns_kernels_fatbin[];

enum { V = 96, D = 16, H = 64, BLOCK = 128, NORM_THREADS = 256, NORM_BLOCKS = 16 };
enum { T_E, T_W1, T_B1, T_W2, T_B2, NTENSORS };

struct tensor {
	const char *name;
	size_t off, n;       /* elements: offset in the flat buffers, count    */
	float init_scale;    /* uniform in [-s, s); 0: zeros                   */
};

static CUfunction k_embed_fwd, k_linear_fwd, k_xent, k_loss_mean, k_lin_bwd_in, k_lin_bwd_w, k_embed_bwd,
	k_embed_fwd16, k_linear_fwd16, k_lin_bwd_in16, k_lin_bwd_w16, k_embed_bwd16, k_cast, k_adamw2,
	k_norm_sq, k_norm_agg, k_adamw_clipped, k_grad_norm, k_adamw_update, k_adamw_master, k_adamw3,
	k_update, k_sgd_block;

static const struct sample_kernel kernels[] = {
	{&k_embed_fwd, "_Z13embed_forwardPKhiiiPKfPfiii"},
	{&k_linear_fwd, "_Z14linear_forwardPKfS0_S0_Pfiiii"},
	{&k_xent, "_Z12softmax_xentPKfPKhiiiPfS3_iifi"},
	{&k_loss_mean, "_Z9loss_meanPKfiPf"},
	{&k_lin_bwd_in, "_Z21linear_backward_inputPKfS0_S0_Pfiiii"},
	{&k_lin_bwd_w, "_Z22linear_backward_weightPKfS0_PfS1_iiii"},
	{&k_embed_bwd, "_Z14embed_backwardPKhiiiPKfPfiiiii"},
	{&k_embed_fwd16, "_Z18embed_forward_bf16PKhiiiPK13__nv_bfloat16Pfiii"},
	{&k_linear_fwd16, "_Z19linear_forward_bf16PKfPK13__nv_bfloat16S3_Pfiiii"},
	{&k_lin_bwd_in16, "_Z26linear_backward_input_bf16PKfPK13__nv_bfloat16S0_Pfiiii"},
	{&k_lin_bwd_w16, "_Z27linear_backward_weight_bf16PKfS0_P13__nv_bfloat16S2_iii"},
	{&k_embed_bwd16, "_Z19embed_backward_bf16PKhiiiPKfP13__nv_bfloat16iiii"},
	{&k_cast, "_Z20copy_and_cast_kernelP13__nv_bfloat16PKfl"},
	{&k_adamw2, "_Z13adamw_kernel2PfS_S_S_lfffffff"},
	{&k_norm_sq, "_Z19global_norm_squaredPfPKfl"},
	{&k_norm_agg, "_Z29global_norm_squared_aggregatePfi"},
	{&k_adamw_clipped, "_Z13adamw_clippedPfPKfS_S_lffffffff"},
	{&k_grad_norm, "_Z9grad_normPKfiPf"},
	{&k_adamw_update, "_Z12adamw_updatePfS_S_S_PKfffffffffi"},
	{&k_adamw_master, "_Z12adamw_masterPfPKfS_S_ifffffff"},
	{&k_adamw3, "_Z13adamw_kernel3P13__nv_bfloat16PfPKS_S1_S1_mfffffff"},
	{&k_update, "_Z14update_weightsPfPKflf"},
	{&k_sgd_block, "_Z9sgd_blockPfPKfiiiff"},
};

/* One thread per element of a `threads`-element output, BLOCK per block. */
#define LAUNCH(f, threads, s, args) \
	CK(cuLaunchKernel(f, sample_blocks(threads, BLOCK), 1, 1, BLOCK, 1, 1, 0, s, args, NULL))

#define USAGE "patterns --pattern 1-7 --data PATH [--steps N] [--batch B] [--lr X] [--clip MAXNORM] " \
	      "[--seed S] [--save PATH]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL;
	int pattern = 0, steps = 30, batch = 16;
	float lr = 1e-2f, clip = 1.0f, wd = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--pattern", SAMPLE_OPT_INT, &pattern, 1, 7, NULL, 1},
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 65536, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 1e3, NULL, 0},
		{"--clip", SAMPLE_OPT_FLOAT, &clip, 1e-30, 3.4e38, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
	};
	struct tensor t[NTENSORS];
	struct sample_data data;
	struct sample_rng rng;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUstream stream;
	/* flat buffers; params16 only for bf16 patterns (4, 5), where params
	 * holds the fp32 master weights */
	CUdeviceptr d_params = 0, d_params16 = 0, d_grads = 0, d_m = 0, d_v = 0, d_norm = 0, d_acts, d_rec;
	CUdeviceptr a_x, a_h, a_logits, a_dlogits, a_dh, a_dx, a_loss, a_loss_mean, a_partials;
	unsigned char *h_rec;
	float *h_par;
	size_t i, total = 0, used = 0, acts_bytes, align;
	int K, in, rb, step, bf16_params, bf16_grads;
	double t0;

	sample_prog = "patterns";
	setvbuf(stdout, NULL, _IOLBF, 0); /* one step line at a time, even into a pipe */
	sample_parse_args(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), USAGE);
	sample_data_open(&data, data_path);
	K = (int)data.context;
	if (K > 64)
		sample_die(1, "%s: context %d is larger than this model's 64", data_path, K);
	in = K * D;
	rb = (int)data.record_bytes;
	bf16_params = pattern == 4 || pattern == 5;
	bf16_grads = pattern == 5;
	align = pattern >= 3 && pattern <= 5 ? 256 : 1;

	t[T_E] = (struct tensor){"E", 0, (size_t)V * D, 0.5f};
	t[T_W1] = (struct tensor){"W1", 0, (size_t)H * in, 1.0f / sqrtf((float)in)};
	t[T_B1] = (struct tensor){"b1", 0, H, 0.0f};
	t[T_W2] = (struct tensor){"W2", 0, (size_t)V * H, 1.0f / sqrtf((float)H)};
	t[T_B2] = (struct tensor){"b2", 0, V, 0.0f};
	for (i = 0; i < NTENSORS; i++) {
		t[i].off = total;
		total += (t[i].n + align - 1) / align * align;
		used += t[i].n;
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
	CK(cuModuleLoadData(&mod, samples_obj_patterns_kernels_fatbin));
	sample_get_kernels(mod, kernels, sizeof(kernels) / sizeof(kernels[0]));
	CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

	CK(cuMemAlloc(&d_params, total * sizeof(float)));
	CK(cuMemcpyHtoD(d_params, h_par, total * sizeof(float)));
	CK(cuMemAlloc(&d_grads, total * (bf16_grads ? 2 : sizeof(float))));
	CK(cuMemsetD8(d_grads, 0, total * (bf16_grads ? 2 : sizeof(float))));
	if (pattern != 6 && pattern != 7) {
		CK(cuMemAlloc(&d_m, total * sizeof(float)));
		CK(cuMemAlloc(&d_v, total * sizeof(float)));
		CK(cuMemsetD32(d_m, 0, total));
		CK(cuMemsetD32(d_v, 0, total));
	}
	if (pattern == 3)
		CK(cuMemAlloc(&d_norm, sizeof(float)));

	/* every activation, activation gradient and scratch value: one allocation */
	acts_bytes = ((size_t)batch * (2 * in + 2 * H + 2 * V + 1) + 1 + NORM_BLOCKS) * sizeof(float);
	CK(cuMemAlloc(&d_acts, acts_bytes));
	a_x = d_acts;
	a_h = a_x + (size_t)batch * in * sizeof(float);
	a_logits = a_h + (size_t)batch * H * sizeof(float);
	a_dlogits = a_logits + (size_t)batch * V * sizeof(float);
	a_dh = a_dlogits + (size_t)batch * V * sizeof(float);
	a_dx = a_dh + (size_t)batch * H * sizeof(float);
	a_loss = a_dx + (size_t)batch * in * sizeof(float);
	a_loss_mean = a_loss + (size_t)batch * sizeof(float);
	a_partials = a_loss_mean + sizeof(float);
	CK(cuMemAlloc(&d_rec, (size_t)batch * rb));

	if (bf16_params) {
		/* the bf16 working copy, cast from the master weights */
		long n = (long)total;
		void *cast[] = {&d_params16, &d_params, &n};

		CK(cuMemAlloc(&d_params16, total * 2));
		CK(cuCtxSynchronize());
		LAUNCH(k_cast, n, stream, cast);
	}

	/* the synchronous copies and sets above may still be in flight on the
	 * legacy default stream, which a non-blocking stream does not wait for */
	CK(cuCtxSynchronize());
	t0 = sample_now();
	for (step = 1; step <= steps; step++) {
		size_t pe = bf16_params ? 2 : sizeof(float), ge = bf16_grads ? 2 : sizeof(float);
		CUdeviceptr fp = bf16_params ? d_params16 : d_params; /* what forward reads */
		CUdeviceptr pE = fp + t[T_E].off * pe, pW1 = fp + t[T_W1].off * pe, pB1 = fp + t[T_B1].off * pe;
		CUdeviceptr pW2 = fp + t[T_W2].off * pe, pB2 = fp + t[T_B2].off * pe;
		CUdeviceptr gE = d_grads + t[T_E].off * ge, gW1 = d_grads + t[T_W1].off * ge;
		CUdeviceptr gB1 = d_grads + t[T_B1].off * ge, gW2 = d_grads + t[T_W2].off * ge;
		CUdeviceptr gB2 = d_grads + t[T_B2].off * ge;
		int v = V, hh = H, d = D, one = 1, zero = 0, tanh_act = 1, none = 0;
		float scale = 1.0f / (float)batch, loss;
		float b1c = 1.0f - powf(beta1, (float)step), b2c = 1.0f - powf(beta2, (float)step);
		void *emb[] = {&d_rec, &rb, &one, &zero, &pE, &a_x, &batch, &K, &d};
		void *l1[] = {&a_x, &pW1, &pB1, &a_h, &batch, &in, &hh, &tanh_act};
		void *l2[] = {&a_h, &pW2, &pB2, &a_logits, &batch, &hh, &v, &none};
		void *xe[] = {&a_logits, &d_rec, &rb, &one, &K, &a_loss, &a_dlogits, &batch, &v, &scale, &zero};
		void *lm[] = {&a_loss, &batch, &a_loss_mean};
		void *gw2[] = {&a_h, &a_dlogits, &gW2, &gB2, &batch, &hh, &v, &zero};
		void *gh[] = {&a_dlogits, &pW2, &a_h, &a_dh, &batch, &hh, &v, &tanh_act};
		void *gw1[] = {&a_x, &a_dh, &gW1, &gB1, &batch, &in, &hh, &zero};
		void *gx[] = {&a_dh, &pW1, &a_x, &a_dx, &batch, &in, &hh, &none};
		void *ge_[] = {&d_rec, &rb, &one, &zero, &a_dx, &gE, &batch, &K, &v, &d, &zero};

		sample_data_read(&data, h_rec, (size_t)batch);
		CK(cuMemcpyHtoDAsync(d_rec, h_rec, (size_t)batch * rb, stream));
		/* forward */
		LAUNCH(bf16_params ? k_embed_fwd16 : k_embed_fwd, (long)batch * in, stream, emb);
		LAUNCH(bf16_params ? k_linear_fwd16 : k_linear_fwd, (long)batch * H, stream, l1);
		LAUNCH(bf16_params ? k_linear_fwd16 : k_linear_fwd, (long)batch * V, stream, l2);
		LAUNCH(k_xent, batch, stream, xe);
		CK(cuLaunchKernel(k_loss_mean, 1, 1, 1, 1, 1, 1, 0, stream, lm, NULL));
		/* backward (the bf16-gradient kernels take no accumulate flag) */
		LAUNCH(bf16_grads ? k_lin_bwd_w16 : k_lin_bwd_w, (long)V * (H + 1), stream, gw2);
		LAUNCH(bf16_params ? k_lin_bwd_in16 : k_lin_bwd_in, (long)batch * H, stream, gh);
		LAUNCH(bf16_grads ? k_lin_bwd_w16 : k_lin_bwd_w, (long)H * (in + 1), stream, gw1);
		LAUNCH(bf16_params ? k_lin_bwd_in16 : k_lin_bwd_in, (long)batch * in, stream, gx);
		LAUNCH(bf16_grads ? k_embed_bwd16 : k_embed_bwd, (long)V * D, stream, ge_);

		/* the update */
		if (pattern == 1) {
			long n = (long)total;
			void *up[] = {&d_params, &d_grads, &d_m, &d_v, &n, &lr, &beta1, &beta2, &b1c, &b2c, &eps, &wd};

			LAUNCH(k_adamw2, n, stream, up);
		} else if (pattern == 2) {
			long n = (long)total;
			int nb = NORM_BLOCKS;
			float norm2, grad_scale;
			void *sq[] = {&a_partials, &d_grads, &n};
			void *agg[] = {&a_partials, &nb};
			void *up[] = {&d_params, &d_grads, &d_m, &d_v, &n, &lr, &beta1, &beta2, &b1c, &b2c, &eps,
				      &wd, &grad_scale};

			CK(cuLaunchKernel(k_norm_sq, NORM_BLOCKS, 1, 1, NORM_THREADS, 1, 1, 0, stream, sq, NULL));
			CK(cuLaunchKernel(k_norm_agg, 1, 1, 1, 1, 1, 1, 0, stream, agg, NULL));
			CK(cuMemcpyDtoHAsync(&norm2, a_partials, sizeof(float), stream));
			CK(cuStreamSynchronize(stream));
			grad_scale = sqrtf(norm2) > clip ? clip / sqrtf(norm2) : 1.0f;
			LAUNCH(k_adamw_clipped, n, stream, up);
		} else if (pattern == 3) {
			int n_all = (int)total;
			void *nm[] = {&d_grads, &n_all, &d_norm};

			CK(cuLaunchKernel(k_grad_norm, 1, 1, 1, NORM_THREADS, 1, 1, 0, stream, nm, NULL));
			for (i = 0; i < NTENSORS; i++) {
				CUdeviceptr p = d_params + t[i].off * 4, g = d_grads + t[i].off * 4;
				CUdeviceptr m = d_m + t[i].off * 4, vv = d_v + t[i].off * 4;
				int n = (int)t[i].n;
				void *up[] = {&p, &g, &m, &vv, &d_norm, &clip, &lr, &beta1, &beta2, &b1c, &b2c, &eps,
					      &wd, &n};

				LAUNCH(k_adamw_update, n, stream, up);
			}
		} else if (pattern == 4) {
			for (i = 0; i < NTENSORS; i++) {
				CUdeviceptr p = d_params + t[i].off * 4, g = d_grads + t[i].off * 4;
				CUdeviceptr m = d_m + t[i].off * 4, vv = d_v + t[i].off * 4;
				CUdeviceptr p16 = d_params16 + t[i].off * 2;
				int n = (int)t[i].n;
				long ln = n;
				void *up[] = {&p, &g, &m, &vv, &n, &lr, &beta1, &beta2, &b1c, &b2c, &eps, &wd};
				void *cast[] = {&p16, &p, &ln};

				LAUNCH(k_adamw_master, n, stream, up);
				LAUNCH(k_cast, n, stream, cast);
			}
		} else if (pattern == 5) {
			for (i = 0; i < NTENSORS; i++) {
				CUdeviceptr p16 = d_params16 + t[i].off * 2, p = d_params + t[i].off * 4;
				CUdeviceptr g = d_grads + t[i].off * 2;
				CUdeviceptr m = d_m + t[i].off * 4, vv = d_v + t[i].off * 4;
				size_t n = t[i].n;
				void *up[] = {&p16, &p, &g, &m, &vv, &n, &lr, &beta1, &beta2, &b1c, &b2c, &eps, &wd};

				LAUNCH(k_adamw3, (long)n, stream, up);
			}
		} else if (pattern == 7) {
			/* E V x D, W1 H x in, b1 1 x H, W2 V x H, b2 1 x V (row-major) */
			const int cols[NTENSORS] = {D, in, H, H, V}, rows[NTENSORS] = {V, H, 1, V, 1};
			for (i = 0; i < NTENSORS; i++) {
				CUdeviceptr p = d_params + t[i].off * 4, g = d_grads + t[i].off * 4;
				int c = cols[i], r = rows[i], ld = cols[i];
				void *up[] = {&p, &g, &c, &r, &ld, &lr, &wd};

				LAUNCH(k_sgd_block, c, stream, up);
			}
		} else {
			long n = (long)total;
			void *up[] = {&d_params, &d_grads, &n, &lr};

			LAUNCH(k_update, n, stream, up);
		}
		CK(cuMemcpyDtoHAsync(&loss, a_loss_mean, sizeof(float), stream));
		CK(cuStreamSynchronize(stream));
		printf("step %d loss %.6f\n", step, loss);
	}
	fflush(stdout);
	sample_report(dev, steps, sample_now() - t0);

	if (save_path) {
		float *out = malloc(used * sizeof(float));
		size_t off = 0;

		if (out == NULL)
			sample_die(1, "out of host memory");
		CK(cuMemcpyDtoH(h_par, d_params, total * sizeof(float)));
		for (i = 0; i < NTENSORS; i++) {
			memcpy(out + off, h_par + t[i].off, t[i].n * sizeof(float));
			off += t[i].n;
		}
		sample_save(save_path, out, used);
		free(out);
	}

	CK(cuMemFree(d_params));
	CK(cuMemFree(d_grads));
	if (d_params16)
		CK(cuMemFree(d_params16));
	if (d_m) {
		CK(cuMemFree(d_m));
		CK(cuMemFree(d_v));
	}
	if (d_norm)
		CK(cuMemFree(d_norm));
	CK(cuMemFree(d_acts));
	CK(cuMemFree(d_rec));
	CK(cuStreamDestroy(stream));
	CK(cuModuleUnload(mod));
	CK(cuDevicePrimaryCtxRelease(dev));
	free(h_par);
	free(h_rec);
	sample_data_close(&data);
	return 0;
}
