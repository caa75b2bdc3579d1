/* SPDX-License-Identifier: MIT
 *
 * main.c - samples/generic: a next-token classifier written the way a C +
 * CUDA framework of the darknet kind writes a network.  Layers are structs
 * with weights and an UPDATE buffer each; forward, backward and the update
 * run through the same generic kernels (fill, copy, axpy, scal, mul);
 * the program loads its own data, runs its own batches and steps, and saves
 * its weights.
 *
 * Model (K = the data file's context, 8 for build/data/mlp.rec):
 *   x = concat(E[tok_0], ..., E[tok_{K-1}]) * embed_scale   E: [96][16]
 *   h = tanh(W1 x + b1)                                      W1: [H][16K], b1: [H]
 *   logits = W2 h + b2;  cost = softmax cross-entropy         W2: [96][H],  b2: [96]
 * H = 64, or --hidden H: a tiny layer (--hidden 8: its bias b1 is 8 floats,
 * 32 bytes, updated by the same axpy as every weight, as darknet's tiny
 * layers are)
 *
 * Deltas are negative gradients summed over the batch (truth - p); backward
 * ACCUMULATES into each tensor's update buffer `dw` (gemm and bias kernels
 * add).  The update, per tensor, as the framework writes it:
 *
 *   --optimizer sgd (default): dw is the gradient accumulator AND the momentum
 *     axpy(-decay*batch, w, dw); axpy(lr/batch, dw, w); scal(momentum, dw)
 *   --optimizer adam: m and v are formed by generic kernels, then adam_kernel
 *     axpy(-decay*batch, w, dw); scal(1/batch, dw)
 *     scal(B1, m); axpy(1-B1, dw, m)
 *     copy(dw, tmp); mul(dw, tmp); scal(B2, v); axpy(1-B2, tmp, v)
 *     adam_kernel(w, m, v, ..., t); fill(0, dw)
 *   --optimizer fused: the sgd arithmetic for every tensor in ONE launch of
 *     apply_updates_kernel, its pointers in a by-value struct (an update
 *     libddp cannot find: the test of "never silent, never late")
 *
 * --save PATH writes the weights at the end; --save-every N also writes
 * PATH.<step> every N steps (the framework's backups).
 *
 * Contract: single-threaded; one stream; every CUDA call checked; the only
 * output on stdout is one `step K loss V` line per step.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sample.h"

extern const unsigned char samples_obj_generic_kernels_fatbin[];

enum { V = 96, D = 16, BLOCK = 128 };
enum { OPT_SGD, OPT_ADAM, OPT_FUSED };

/* --optimizer fused: kernels.cu's struct update_list, same layout */
#define UPDATE_MAX_TENSORS 8
struct update_list {
	CUdeviceptr w[UPDATE_MAX_TENSORS];
	CUdeviceptr dw[UPDATE_MAX_TENSORS];
	int n[UPDATE_MAX_TENSORS];
	int count;
	float lr_over_batch, decay_times_batch, momentum;
};

/* one parameter tensor of a layer */
struct param {
	size_t n;
	float init_scale;  /* uniform in [-s, s); 0: zeros */
	CUdeviceptr w;     /* weights                       */
	CUdeviceptr dw;    /* update buffer (accumulator)   */
	CUdeviceptr m, v;  /* adam moments                  */
};

struct network {
	int batch, K, in, rb, optimizer, t;
	int H; /* hidden units (--hidden): b1 holds H floats */
	float lr, momentum, decay, B1, B2, eps, embed_scale;
	struct param E, W1, b1, W2, b2;
	CUdeviceptr rec, x, dx, h, dh, dact, logits, delta, cdelta, loss, tmp;
	CUstream s;
};

static CUfunction k_fill, k_copy, k_axpy, k_scal, k_mul, k_embed, k_embed_bwd, k_gemm_nt, k_gemm_tn,
	k_gemm_nn, k_add_bias, k_bwd_bias, k_tanh, k_grad_tanh, k_cost, k_adam, k_apply;

static const struct sample_kernel kernels[] = {
	{&k_fill, "_Z11fill_kernelifPf"},
	{&k_copy, "_Z11copy_kerneliPKfPf"},
	{&k_axpy, "_Z11axpy_kernelifPKfPf"},
	{&k_scal, "_Z11scal_kernelifPf"},
	{&k_mul, "_Z10mul_kerneliPKfPf"},
	{&k_embed, "_Z12embed_kernelPKhiPKfPfiii"},
	{&k_embed_bwd, "_Z21embed_backward_kernelPKhiPKfPfiiii"},
	{&k_gemm_nt, "_Z14gemm_nt_kerneliiiPKfS0_Pf"},
	{&k_gemm_tn, "_Z14gemm_tn_kerneliiiPKfS0_Pf"},
	{&k_gemm_nn, "_Z14gemm_nn_kerneliiiPKfS0_Pf"},
	{&k_add_bias, "_Z15add_bias_kernelPfPKfii"},
	{&k_bwd_bias, "_Z20backward_bias_kernelPfPKfii"},
	{&k_tanh, "_Z20activate_tanh_kerneliPf"},
	{&k_grad_tanh, "_Z20gradient_tanh_kerneliPKfPf"},
	{&k_cost, "_Z19softmax_cost_kernelPKfPKhiiPfS3_ii"},
	{&k_adam, "_Z11adam_kerneliPfPKfS1_ffffi"},
	{&k_apply, "_Z20apply_updates_kernel11update_list"},
};

static void launch(CUfunction f, long threads, CUstream s, void **args)
{
	CK(cuLaunchKernel(f, sample_blocks(threads, BLOCK), 1, 1, BLOCK, 1, 1, 0, s, args, NULL));
}

/* the framework's BLAS-like wrappers */
static void fill_gpu(struct network *net, int n, float a, CUdeviceptr x)
{
	void *args[] = {&n, &a, &x};
	launch(k_fill, n, net->s, args);
}
static void copy_gpu(struct network *net, int n, CUdeviceptr x, CUdeviceptr y)
{
	void *args[] = {&n, &x, &y};
	launch(k_copy, n, net->s, args);
}
static void axpy_gpu(struct network *net, int n, float a, CUdeviceptr x, CUdeviceptr y)
{
	void *args[] = {&n, &a, &x, &y};
	launch(k_axpy, n, net->s, args);
}
static void scal_gpu(struct network *net, int n, float a, CUdeviceptr x)
{
	void *args[] = {&n, &a, &x};
	launch(k_scal, n, net->s, args);
}
static void mul_gpu(struct network *net, int n, CUdeviceptr x, CUdeviceptr y)
{
	void *args[] = {&n, &x, &y};
	launch(k_mul, n, net->s, args);
}
static void gemm_gpu(struct network *net, CUfunction f, long threads, int rows, int out, int in, CUdeviceptr a,
		     CUdeviceptr b, CUdeviceptr c)
{
	void *args[] = {&rows, &out, &in, &a, &b, &c};
	launch(f, threads, net->s, args);
}

static void make_param(struct param *p, size_t n, float init_scale, struct sample_rng *rng, float *h_buf)
{
	p->n = n;
	p->init_scale = init_scale;
	if (init_scale > 0.0f)
		sample_rng_uniform(rng, h_buf, n, init_scale);
	else
		memset(h_buf, 0, n * sizeof(float));
	CK(cuMemAlloc(&p->w, n * sizeof(float)));
	CK(cuMemAlloc(&p->dw, n * sizeof(float)));
	CK(cuMemAlloc(&p->m, n * sizeof(float)));
	CK(cuMemAlloc(&p->v, n * sizeof(float)));
	CK(cuMemcpyHtoD(p->w, h_buf, n * sizeof(float)));
	CK(cuMemsetD32(p->dw, 0, n));
	CK(cuMemsetD32(p->m, 0, n));
	CK(cuMemsetD32(p->v, 0, n));
}

static void free_param(struct param *p)
{
	CK(cuMemFree(p->w));
	CK(cuMemFree(p->dw));
	CK(cuMemFree(p->m));
	CK(cuMemFree(p->v));
}

static void forward_network(struct network *net)
{
	int rows = net->batch, K = net->K, d = D, rb = net->rb;
	void *emb[] = {&net->rec, &rb, &net->E.w, &net->x, &rows, &K, &d};
	int hh = net->H, v = V, n;
	void *bias1[] = {&net->h, &net->b1.w, &rows, &hh};
	void *bias2[] = {&net->logits, &net->b2.w, &rows, &v};
	void *cost[] = {&net->logits, &net->rec, &rb, &K, &net->loss, &net->cdelta, &rows, &v};

	launch(k_embed, (long)rows * net->in, net->s, emb);
	scal_gpu(net, rows * net->in, net->embed_scale, net->x);
	/* connected layer 1 */
	fill_gpu(net, rows * net->H, 0.0f, net->h);
	gemm_gpu(net, k_gemm_nt, (long)rows * net->H, rows, net->H, net->in, net->x, net->W1.w, net->h);
	launch(k_add_bias, (long)rows * net->H, net->s, bias1);
	n = rows * net->H;
	{
		void *act[] = {&n, &net->h};
		launch(k_tanh, n, net->s, act);
	}
	/* connected layer 2 */
	fill_gpu(net, rows * V, 0.0f, net->logits);
	gemm_gpu(net, k_gemm_nt, (long)rows * V, rows, V, net->H, net->h, net->W2.w, net->logits);
	launch(k_add_bias, (long)rows * V, net->s, bias2);
	/* cost layer */
	launch(k_cost, rows, net->s, cost);
}

static void backward_network(struct network *net)
{
	int rows = net->batch, K = net->K, d = D, v = V, hh = net->H, rb = net->rb, n = rows * net->H;
	void *bb2[] = {&net->b2.dw, &net->delta, &rows, &v};
	void *bb1[] = {&net->b1.dw, &net->dh, &rows, &hh};
	void *gt[] = {&n, &net->h, &net->dact};
	void *eb[] = {&net->rec, &rb, &net->dx, &net->E.dw, &rows, &K, &d, &v};

	/* the cost layer adds its delta into the network's delta */
	fill_gpu(net, rows * V, 0.0f, net->delta);
	axpy_gpu(net, rows * V, 1.0f, net->cdelta, net->delta);
	/* connected layer 2 */
	launch(k_bwd_bias, V, net->s, bb2);
	gemm_gpu(net, k_gemm_tn, (long)V * net->H, rows, V, net->H, net->delta, net->h, net->W2.dw);
	fill_gpu(net, rows * net->H, 0.0f, net->dh);
	gemm_gpu(net, k_gemm_nn, (long)rows * net->H, rows, V, net->H, net->delta, net->W2.w, net->dh);
	/* connected layer 1 */
	launch(k_grad_tanh, n, net->s, gt);
	mul_gpu(net, n, net->dact, net->dh);
	launch(k_bwd_bias, net->H, net->s, bb1);
	gemm_gpu(net, k_gemm_tn, (long)net->H * net->in, rows, net->H, net->in, net->dh, net->x, net->W1.dw);
	fill_gpu(net, rows * net->in, 0.0f, net->dx);
	gemm_gpu(net, k_gemm_nn, (long)rows * net->in, rows, net->H, net->in, net->dh, net->W1.w, net->dx);
	/* embedding */
	scal_gpu(net, rows * net->in, net->embed_scale, net->dx);
	launch(k_embed_bwd, (long)V * D, net->s, eb);
}

static void update_param(struct network *net, struct param *p)
{
	int n = (int)p->n;
	float batch = (float)net->batch;

	if (net->optimizer == OPT_SGD) {
		axpy_gpu(net, n, -net->decay * batch, p->w, p->dw);
		axpy_gpu(net, n, net->lr / batch, p->dw, p->w);
		scal_gpu(net, n, net->momentum, p->dw);
		return;
	}
	axpy_gpu(net, n, -net->decay * batch, p->w, p->dw);
	scal_gpu(net, n, 1.0f / batch, p->dw);
	scal_gpu(net, n, net->B1, p->m);
	axpy_gpu(net, n, 1.0f - net->B1, p->dw, p->m);
	copy_gpu(net, n, p->dw, net->tmp);
	mul_gpu(net, n, p->dw, net->tmp);
	scal_gpu(net, n, net->B2, p->v);
	axpy_gpu(net, n, 1.0f - net->B2, net->tmp, p->v);
	{
		void *args[] = {&n, &p->w, &p->m, &p->v, &net->B1, &net->B2, &net->lr, &net->eps, &net->t};
		launch(k_adam, n, net->s, args);
	}
	fill_gpu(net, n, 0.0f, p->dw);
}

static void update_network(struct network *net)
{
	net->t++;
	if (net->optimizer == OPT_FUSED) {
		struct param *ps[] = {&net->b2, &net->W2, &net->b1, &net->W1, &net->E};
		struct update_list L;
		void *args[] = {&L};
		size_t most = 0;

		memset(&L, 0, sizeof(L));
		for (int i = 0; i < 5; i++) {
			L.w[i] = ps[i]->w;
			L.dw[i] = ps[i]->dw;
			L.n[i] = (int)ps[i]->n;
			most = ps[i]->n > most ? ps[i]->n : most;
		}
		L.count = 5;
		L.lr_over_batch = net->lr / (float)net->batch;
		L.decay_times_batch = net->decay * (float)net->batch;
		L.momentum = net->momentum;
		CK(cuLaunchKernel(k_apply, sample_blocks((long)most, BLOCK), 5, 1, BLOCK, 1, 1, 0, net->s, args,
				  NULL));
		return;
	}
	/* the framework updates layer by layer, last layer first */
	update_param(net, &net->b2);
	update_param(net, &net->W2);
	update_param(net, &net->b1);
	update_param(net, &net->W1);
	update_param(net, &net->E);
}

static void save_weights(struct network *net, const char *path, float *h_buf)
{
	struct param *ps[] = {&net->E, &net->W1, &net->b1, &net->W2, &net->b2};
	size_t i, off = 0;

	CK(cuStreamSynchronize(net->s));
	for (i = 0; i < 5; i++) {
		CK(cuMemcpyDtoH(h_buf + off, ps[i]->w, ps[i]->n * sizeof(float)));
		off += ps[i]->n;
	}
	sample_save(path, h_buf, off);
}

#define USAGE "generic --data PATH [--steps N] [--batch B] [--optimizer sgd|adam|fused] [--lr X] " \
	      "[--momentum M] [--decay W] [--seed S] [--save PATH] [--save-every N] [--hidden H]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL;
	int steps = 100, save_every = 0, step;
	uint64_t seed = 1;
	struct network net;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &net.batch, 1, 65536, NULL, 0},
		{"--optimizer", SAMPLE_OPT_CHOICE, &net.optimizer, 0, 0, "sgd|adam|fused", 0},
		{"--lr", SAMPLE_OPT_FLOAT, &net.lr, 0, 1e3, NULL, 0},
		{"--momentum", SAMPLE_OPT_FLOAT, &net.momentum, 0, 1, NULL, 0},
		{"--decay", SAMPLE_OPT_FLOAT, &net.decay, 0, 1, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
		{"--save-every", SAMPLE_OPT_INT, &save_every, 0, 1e9, NULL, 0},
		{"--hidden", SAMPLE_OPT_INT, &net.H, 1, 4096, NULL, 0},
	};
	struct sample_data data;
	struct sample_rng rng;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	unsigned char *h_rec;
	float *h_buf, *h_loss;
	size_t biggest, tmp_n;
	double t0;

	memset(&net, 0, sizeof(net));
	net.batch = 16;
	net.H = 64;
	net.lr = 0.05f;
	net.momentum = 0.9f;
	net.decay = 0.0005f;
	net.B1 = 0.9f;
	net.B2 = 0.999f;
	net.eps = 1e-7f;
	sample_prog = "generic";
	setvbuf(stdout, NULL, _IOLBF, 0);
	sample_parse_args(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), USAGE);
	sample_data_open(&data, data_path);
	net.K = (int)data.context;
	net.in = net.K * D;
	net.rb = (int)data.record_bytes;
	net.embed_scale = 1.0f / sqrtf((float)D);

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&mod, samples_obj_generic_kernels_fatbin));
	sample_get_kernels(mod, kernels, sizeof(kernels) / sizeof(kernels[0]));
	CK(cuStreamCreate(&net.s, CU_STREAM_NON_BLOCKING));

	biggest = (size_t)net.H * net.in;
	h_buf = malloc(((size_t)V * D + biggest + net.H + (size_t)V * net.H + V) * sizeof(float));
	h_rec = malloc((size_t)net.batch * net.rb);
	h_loss = malloc((size_t)net.batch * sizeof(float));
	if (h_buf == NULL || h_rec == NULL || h_loss == NULL)
		sample_die(1, "out of host memory");
	sample_rng_init(&rng, seed, 0);
	make_param(&net.E, (size_t)V * D, 1.0f, &rng, h_buf);
	make_param(&net.W1, biggest, 1.0f / sqrtf((float)net.in), &rng, h_buf);
	make_param(&net.b1, net.H, 0.0f, &rng, h_buf);
	make_param(&net.W2, (size_t)V * net.H, 1.0f / sqrtf((float)net.H), &rng, h_buf);
	make_param(&net.b2, V, 0.0f, &rng, h_buf);
	sample_rng_close(&rng);

	CK(cuMemAlloc(&net.rec, (size_t)net.batch * net.rb));
	CK(cuMemAlloc(&net.x, (size_t)net.batch * net.in * sizeof(float)));
	CK(cuMemAlloc(&net.dx, (size_t)net.batch * net.in * sizeof(float)));
	CK(cuMemAlloc(&net.h, (size_t)net.batch * net.H * sizeof(float)));
	CK(cuMemAlloc(&net.dh, (size_t)net.batch * net.H * sizeof(float)));
	CK(cuMemAlloc(&net.dact, (size_t)net.batch * net.H * sizeof(float)));
	CK(cuMemAlloc(&net.logits, (size_t)net.batch * V * sizeof(float)));
	CK(cuMemAlloc(&net.delta, (size_t)net.batch * V * sizeof(float)));
	CK(cuMemAlloc(&net.cdelta, (size_t)net.batch * V * sizeof(float)));
	CK(cuMemAlloc(&net.loss, (size_t)net.batch * sizeof(float)));
	/* adam's scratch: the largest tensor */
	tmp_n = biggest > (size_t)V * D ? biggest : (size_t)V * D;
	tmp_n = tmp_n > (size_t)V * net.H ? tmp_n : (size_t)V * net.H;
	CK(cuMemAlloc(&net.tmp, tmp_n * sizeof(float)));
	CK(cuCtxSynchronize());

	t0 = sample_now();
	for (step = 1; step <= steps; step++) {
		double sum = 0.0;
		int r;

		sample_data_read(&data, h_rec, (size_t)net.batch);
		CK(cuMemcpyHtoDAsync(net.rec, h_rec, (size_t)net.batch * net.rb, net.s));
		forward_network(&net);
		backward_network(&net);
		update_network(&net);
		CK(cuMemcpyDtoHAsync(h_loss, net.loss, (size_t)net.batch * sizeof(float), net.s));
		CK(cuStreamSynchronize(net.s));
		for (r = 0; r < net.batch; r++)
			sum += h_loss[r];
		printf("step %d loss %.6f\n", step, sum / net.batch);
		if (save_path && save_every > 0 && step % save_every == 0) {
			char path[4096];

			snprintf(path, sizeof(path), "%s.%d", save_path, step);
			save_weights(&net, path, h_buf);
		}
	}
	fflush(stdout);
	sample_report(dev, steps, sample_now() - t0);
	if (save_path)
		save_weights(&net, save_path, h_buf);

	free_param(&net.E);
	free_param(&net.W1);
	free_param(&net.b1);
	free_param(&net.W2);
	free_param(&net.b2);
	CK(cuMemFree(net.rec));
	CK(cuMemFree(net.x));
	CK(cuMemFree(net.dx));
	CK(cuMemFree(net.h));
	CK(cuMemFree(net.dh));
	CK(cuMemFree(net.dact));
	CK(cuMemFree(net.logits));
	CK(cuMemFree(net.delta));
	CK(cuMemFree(net.cdelta));
	CK(cuMemFree(net.loss));
	CK(cuMemFree(net.tmp));
	CK(cuStreamDestroy(net.s));
	CK(cuModuleUnload(mod));
	CK(cuDevicePrimaryCtxRelease(dev));
	free(h_buf);
	free(h_rec);
	free(h_loss);
	sample_data_close(&data);
	return 0;
}
