/* SPDX-License-Identifier: MIT
 *
 * main.c - samples/torchlike: a CUDA Driver API program that does, at the
 * driver level, what a PyTorch training script does on a GPU: the same
 * kernels (PyTorch's real mangled names and argument layouts, kernels.cu),
 * the same allocator (alloc.c: caching / expandable segments /
 * cudaMallocAsync), backward on a second host thread, AccumulateGrad, and
 * the step sequences of torch.optim's foreach AdamW / Adam / SGD and of
 * clip_grad_norm_ (../shared/PYTORCH.md, section 3).
 *
 * Model (304 parameter tensors, 150 of them 16-element biases; --layers N
 * gives 2N+4):
 *   x: the K = 8 context bytes of a record as floats (tok/96 - 0.5)
 *   h1 = relu(W0 x + b0)                      W0 [16][8],  b0 [16]
 *   h_{l+1} = h_l + relu(W_l h_l + b_l)       W_l [16][16], b_l [16], l = 1..150
 *   logits = Wh h + bh                        Wh [96][16], bh [96]
 *   loss = mean cross-entropy(logits, the record's last byte)
 * Linear layers are cuBLASLt-style GEMMs with bias/ReLU epilogues forward
 * and dReLU/bias-gradient epilogues backward, residual adds and
 * AccumulateGrad's `grad += new` are PyTorch's add kernel.
 *
 * A step (--accum K micro-batches of --batch records):
 *   zero_grad        set_to_none: the gradients are freed (default);
 *                    --set-to-none 0: _foreach_zero_ over them
 *   forward          activations allocated from the caching allocator
 *   backward         on the autograd thread, same stream; activations freed
 *                    as they are consumed; the first gradient of a
 *                    parameter is the GEMM's output itself (AccumulateGrad
 *                    steals it), later ones are added (`grad += new`)
 *   clip             --clip M > 0: _foreach_norm (LpNorm + lpnorm_cleanup),
 *                    torch.stack, vector_norm, max/(n+1e-6), clamp(max=1),
 *                    _foreach_mul_(grads, coef)
 *   step             foreach AdamW/Adam (states created with zeros_like in
 *                    step 1), or foreach SGD with momentum (step 1 clones
 *                    the gradients)
 * stdout: one `step K loss V` line per step (the mean loss of its micro-
 * batches, read with a device-to-host copy as loss.item() does).
 *
 * Not yet (rejected with a message): --scaler 1, --impl fused|forloop,
 * --dtype bf16, --layout cuda12.
 *
 * Contract: knows nothing of ddprun.  Every CUDA call checked.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sample.h"
#include "alloc.h"

extern const unsigned char samples_obj_torchlike_kernels_fatbin[];

enum { IN = 8, D = 16, V = 96, MAX_LAYERS = 150, MAX_PARAMS = 2 * MAX_LAYERS + 4 };
static int LAYERS = MAX_LAYERS;  /* --layers: residual blocks (default 150: 304 tensors) */
static int NPARAMS = MAX_PARAMS;
/* PyTorch launches its multi-tensor kernels with 512 threads per block
 * (kBlockSize).  On the CPU device every thread of a block receives its own
 * copy of the ~25 KB by-value metadata struct (a C++ call per thread), so
 * the sample uses 32: the kernels stride by blockDim.x, the results and
 * every argument byte are the same, only the launch's block size differs. */
enum { BLOCK = 128, MTA_BLOCK = 32, CHUNK = 65536, MAX_BLOCKS = 2240 };

/* ---- kernels */
enum {
	K_ADD, K_FILL, K_ADD_SCALAR, K_SCALAR_DIV, K_MUL_SCALAR, K_ADD_EPS, K_LERP, K_ADDCMUL, K_SQRT, K_ZERO,
	K_DIV_SL, K_ADDCDIV_SL, K_LPNORM, K_CLEANUP, K_CLIP_MUL, K_ADD_ALPHA, K_CAT, K_VNORM,
	K_GEMM_FWD, K_GEMM_DGRAD, K_GEMM_WGRAD, K_XENT, K_CLAMP, NK
};
static CUfunction kf[NK];
static const struct sample_kernel kernels[] = {
	{&kf[K_ADD], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EELb0EEEviT0_T1_"},
	{&kf[K_FILL], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EELb0EEEviT0_T1_"},
	{&kf[K_ADD_SCALAR], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_21CUDAFunctorOnSelf_addIfEESt5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_SCALAR_DIV], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10DivFunctorIfEEEESt5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_MUL_SCALAR], "_ZN2at6native57_GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_"},
	{&kf[K_ADD_EPS], "_ZN2at6native57_GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_"},
	{&kf[K_LERP], "_ZN2at6native52_GLOBAL__N__913c22e1_19_ForeachTernaryOp_cu_5285c63625multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_22TernaryOpScalarFunctorIfLi2ELi2ELi0EEEJNS0_11LerpFunctorIfEEfEEEvT_T0_DpT1_"},
	{&kf[K_ADDCMUL], "_ZN2at6native54_GLOBAL__N__ae7e1889_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_apply_kernelINS1_18TensorListMetadataILi3EEENS1_24PointwiseOpScalarFunctorIfLi3ELi3ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_"},
	{&kf[K_SQRT], "_ZN2at6native50_GLOBAL__N__637ba612_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_14UnaryOpFunctorIfLi2ELi1ELi1EEEJNS0_4SqrtIfEEEEEvT_T0_DpT1_"},
	{&kf[K_ZERO], "_ZN2at6native50_GLOBAL__N__637ba612_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_11ZeroFunctorIfLi1ELi1ELi0EEEJEEEvT_T0_DpT1_"},
	{&kf[K_DIV_SL], "_ZN2at6native61_GLOBAL__N__832b9cb6_28_ForeachBinaryOpScalarList_cu_dda10a6925multi_tensor_apply_kernelINS1_28TensorListScalarListMetadataIfLi1EEENS1_25BinaryOpScalarListFunctorIfLi1ELi1ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_"},
	{&kf[K_ADDCDIV_SL], "_ZN2at6native54_GLOBAL__N__ae7e1889_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_apply_kernelINS1_28TensorListScalarListMetadataIfLi3EEENS1_28PointwiseOpScalarListFunctorIfLi3ELi3ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_"},
	{&kf[K_LPNORM], "_ZN2at6native51_GLOBAL__N__99dedba0_18_ForeachReduceOp_cu_b83ec48c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS0_13LpNormFunctorIfLNS0_8NormTypeE2EfLi1ELi1ELi0EEEJPfPKlEEEvT_T0_DpT1_"},
	{&kf[K_CLEANUP], "_ZN2at6native14lpnorm_cleanupIfLNS0_8NormTypeE2EfLb1EfEEvPKT3_NS0_19TensorListAddressesEPKli"},
	{&kf[K_CLIP_MUL], "_ZN2at6native63_GLOBAL__N__d2244290_30_ForeachBinaryOpScalarTensor_cu_64fe0ca525multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_27BinaryOpScalarTensorFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEPffEEEvT_T0_DpT1_"},
	{&kf[K_ADD_ALPHA], "_ZN2at6native55_GLOBAL__N__f86471ef_22_ForeachBinaryOpList_cu_a911ec4325multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_24BinaryOpListAlphaFunctorIfLi2ELi2ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_"},
	{&kf[K_CAT], "_ZN2at6native40_GLOBAL__N__f1f992fe_8_Shape_cu_49f7391c26CatArrayBatchedCopy_contigINS1_10OpaqueTypeILj4EEEjLi1ELi128ELi1EEEvPT_NS1_25CatArrInputTensorMetadataIS5_T0_XT2_EXT3_EEENS1_16TensorSizeStrideIS8_Lj4EEEiS8_"},
	{&kf[K_VNORM], "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_10NormTwoOpsIfffLb0EEEjfLi4ELi4EEEEEvT1_"},
	{&kf[K_GEMM_FWD], "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize16x16x8_execute_kernel__5x_cublas"},
	{&kf[K_GEMM_DGRAD], "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize16x16x8_execute_kernel__5x_cublas"},
	{&kf[K_GEMM_WGRAD], "sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize16x16x8_bgrad_execute_kernel__5x_cublas"},
	{&kf[K_XENT], "torchlike_cross_entropy_standin"},
	{&kf[K_CLAMP], "torchlike_clamp_max_standin"},
};

static CUstream stream;
static CUcontext ctx;

/* ---- CUDA 13 metadata layouts (MultiTensorApply.cuh, large-argument
 * configuration; kernels.cu asserts the same sizes on the device side) */
struct mta_layout {
	int depth, max_tensors, scalarlist, has_start;
	size_t off_numel, off_scalars, off_btt, off_btc, off_start, size;
};

static struct mta_layout layout_of(int depth, int scalarlist)
{
	static const int tensors[5] = {770, 448, 336, 252, 210}, tensors_sl[5] = {672, 448, 336, 252, 210};
	struct mta_layout l = {0};
	l.depth = depth;
	l.scalarlist = scalarlist;
	l.max_tensors = scalarlist ? tensors_sl[depth - 1] : tensors[depth - 1];
	size_t off = 8u * depth * l.max_tensors;
	l.off_numel = off;
	off += 8u * l.max_tensors;
	if (scalarlist) {
		l.off_scalars = off;
		off += 4u * l.max_tensors;
	}
	l.off_btt = off;
	off += 2u * MAX_BLOCKS;
	l.off_btc = off;
	off += 4u * MAX_BLOCKS;
	l.has_start = !scalarlist;
	if (l.has_start) {
		l.off_start = off;
		off += 4;
	}
	l.size = (off + 7) / 8 * 8;
	return l;
}

/* A multi_tensor_apply call: lists[d][t] of ntensors tensors of numel[t]
 * elements; scalars[t] for scalar-list kernels; extra arguments after the
 * metadata and the (empty) functor. */
struct mta_call {
	CUfunction f;
	int depth, scalarlist;
	CUdeviceptr *lists[4];
	const size_t *numel;
	int ntensors;
	const float *scalars;
	void *extra[4];
	int nextra;
};

/* The host copy of the struct: never cleared between launches, as in
 * PyTorch (slots past the live count keep older pointers). */
static unsigned char meta_buf[32768];

static void mta_launch(const struct mta_call *c, unsigned blocks)
{
	static unsigned char functor;
	void *params[2 + 4];
	params[0] = meta_buf;
	params[1] = &functor;
	for (int i = 0; i < c->nextra; i++)
		params[2 + i] = c->extra[i];
	CK(cuLaunchKernel(c->f, blocks, 1, 1, MTA_BLOCK, 1, 1, 0, stream, params, NULL));
}

/* PyTorch's multi_tensor_apply loop: tensors into slots, chunks into blocks;
 * a launch when the slots or the blocks are full (a tensor whose chunks do
 * not all fit continues in slot 0 of the next launch), and one at the end. */
static void mta_apply(const struct mta_call *c)
{
	struct mta_layout l = layout_of(c->depth, c->scalarlist);
	int loc_block = 0, loc_tensor = 0;
	int32_t start = 0;
	if (l.has_start)
		memcpy(meta_buf + l.off_start, &start, 4);
	for (int t = 0; t < c->ntensors; t++) {
		int64_t n = (int64_t)c->numel[t];
		if (n == 0)
			continue;
		memcpy(meta_buf + l.off_numel + 8 * loc_tensor, &n, 8);
		if (l.scalarlist)
			memcpy(meta_buf + l.off_scalars + 4 * loc_tensor, &c->scalars[t], 4);
		for (int d = 0; d < c->depth; d++) {
			uint64_t a = c->lists[d][t];
			memcpy(meta_buf + 8 * ((size_t)d * l.max_tensors + loc_tensor), &a, 8);
		}
		loc_tensor++;
		int64_t chunks = (n + CHUNK - 1) / CHUNK;
		for (int64_t ch = 0; ch < chunks; ch++) {
			uint16_t bt = (uint16_t)(loc_tensor - 1);
			int32_t bc = (int32_t)ch;
			memcpy(meta_buf + l.off_btt + 2 * loc_block, &bt, 2);
			memcpy(meta_buf + l.off_btc + 4 * loc_block, &bc, 4);
			loc_block++;
			int tensors_full = loc_tensor == l.max_tensors && ch == chunks - 1;
			int blocks_full = loc_block == MAX_BLOCKS;
			if (tensors_full || blocks_full) {
				mta_launch(c, (unsigned)loc_block);
				loc_block = 0;
				if (ch == chunks - 1) {
					loc_tensor = 0;
					start = t + 1;
				} else {
					memmove(meta_buf + l.off_numel, meta_buf + l.off_numel + 8 * (loc_tensor - 1), 8);
					if (l.scalarlist)
						memmove(meta_buf + l.off_scalars,
							meta_buf + l.off_scalars + 4 * (loc_tensor - 1), 4);
					for (int d = 0; d < c->depth; d++)
						memmove(meta_buf + 8 * ((size_t)d * l.max_tensors),
							meta_buf + 8 * ((size_t)d * l.max_tensors + loc_tensor - 1), 8);
					loc_tensor = 1;
					start = t;
				}
				if (l.has_start)
					memcpy(meta_buf + l.off_start, &start, 4);
			}
		}
	}
	if (loc_block)
		mta_launch(c, (unsigned)loc_block);
}

/* ---- elementwise kernels (std::array<char*, N> argument) */
static void ew_launch(CUfunction f, int n, const void *functor, CUdeviceptr *ptrs)
{
	int32_t cnt = n;
	void *params[3] = {&cnt, (void *)functor, ptrs};
	CK(cuLaunchKernel(f, sample_blocks(n, BLOCK), 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
}

static void add_into(CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, int n)
{
	float alpha = 1.0f;
	CUdeviceptr arr[3] = {out, a, b};
	ew_launch(kf[K_ADD], n, &alpha, arr);
}

static void fill(CUdeviceptr out, float v, int n)
{
	CUdeviceptr arr[1] = {out};
	ew_launch(kf[K_FILL], n, &v, arr);
}

/* ---- GEMMs (cuBLASLt-style, opaque by-value parameters) */
struct gemm_params {
	CUdeviceptr a, b, c, bias, bias_grad, aux;
	int m, n, k, epilogue;
	unsigned char reserved[192];
};
#define EPI_BIAS 1
#define EPI_RELU 2
#define EPI_DRELU 4
#define EPI_BGRAD 8

static void gemm(int which, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr bias, CUdeviceptr bgrad,
		 CUdeviceptr aux, int m, int n, int k, int epi)
{
	struct gemm_params p;
	memset(&p, 0, sizeof p);
	p.a = a, p.b = b, p.c = c, p.bias = bias, p.bias_grad = bgrad, p.aux = aux;
	p.m = m, p.n = n, p.k = k, p.epilogue = epi;
	void *params[1] = {&p};
	long threads = which == K_GEMM_WGRAD ? (long)m * (n + 1) : (long)m * n;
	CK(cuLaunchKernel(kf[which], sample_blocks(threads, BLOCK), 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
}

/* ---- parameters */
struct param {
	int rows, cols;     /* W: [rows][cols]; bias: rows x 1 */
	size_t n;
	CUdeviceptr w, grad, m, v;
	int has_grad, has_state;
};
static struct param P[MAX_PARAMS];
/* parameter order (model.parameters()): W0 b0 W1 b1 ... W150 b150 Wh bh */
#define PW(l) (&P[2 * (l)])
#define PB(l) (&P[2 * (l) + 1])
#define PWH (&P[2 * (LAYERS + 1)])
#define PBH (&P[2 * (LAYERS + 1) + 1])

/* AccumulateGrad: the first gradient becomes .grad (stolen), later ones
 * are added into it and the new tensor is freed. */
static void accumulate(struct param *p, CUdeviceptr newg)
{
	if (!p->has_grad) {
		p->grad = newg;
		p->has_grad = 1;
		return;
	}
	add_into(p->grad, p->grad, newg, (int)p->n);
	ta_free(newg);
}

/* ---- forward / backward */
struct acts {
	int rows;
	CUdeviceptr x, target;          /* input [rows][IN], target int64 [rows] */
	CUdeviceptr a[MAX_LAYERS + 1];  /* a[0] = h1; a[l] = relu(W_l h_l + b_l)  */
	CUdeviceptr h[MAX_LAYERS + 2];      /* h[1] = a[0]; h[l+1] = h[l] + a[l]      */
	CUdeviceptr logits, dlogits, loss_rows;
	float scale;
};

static void forward(struct acts *A)
{
	int r = A->rows;
	A->a[0] = ta_alloc((size_t)r * D * 4);
	gemm(K_GEMM_FWD, A->x, PW(0)->w, A->a[0], PB(0)->w, 0, 0, r, D, IN, EPI_BIAS | EPI_RELU);
	A->h[1] = A->a[0];
	for (int l = 1; l <= LAYERS; l++) {
		A->a[l] = ta_alloc((size_t)r * D * 4);
		gemm(K_GEMM_FWD, A->h[l], PW(l)->w, A->a[l], PB(l)->w, 0, 0, r, D, D, EPI_BIAS | EPI_RELU);
		A->h[l + 1] = ta_alloc((size_t)r * D * 4);
		add_into(A->h[l + 1], A->h[l], A->a[l], r * D);
	}
	A->logits = ta_alloc((size_t)r * V * 4);
	gemm(K_GEMM_FWD, A->h[LAYERS + 1], PWH->w, A->logits, PBH->w, 0, 0, r, V, D, EPI_BIAS);
	A->loss_rows = ta_alloc((size_t)r * 4);
	A->dlogits = ta_alloc((size_t)r * V * 4);
	int rows = r, classes = V;
	void *params[7] = {&A->logits, &A->target, &A->loss_rows, &A->dlogits, &rows, &classes, &A->scale};
	CK(cuLaunchKernel(kf[K_XENT], sample_blocks(r, BLOCK), 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
	ta_free(A->logits);
}

/* loss.backward(): runs on the autograd thread. */
static void backward(struct acts *A)
{
	int r = A->rows;
	CUdeviceptr dW, db, dh, t, dnext;
	/* head */
	dW = ta_alloc((size_t)V * D * 4);
	db = ta_alloc((size_t)V * 4);
	gemm(K_GEMM_WGRAD, A->dlogits, A->h[LAYERS + 1], dW, 0, db, 0, V, D, r, EPI_BGRAD);
	accumulate(PWH, dW);
	accumulate(PBH, db);
	dh = ta_alloc((size_t)r * D * 4);
	gemm(K_GEMM_DGRAD, A->dlogits, PWH->w, dh, 0, 0, 0, r, D, V, 0);
	ta_free(A->dlogits);
	ta_free(A->h[LAYERS + 1]);
	/* blocks, last first: h_{l+1} = h_l + relu(z_l) */
	for (int l = LAYERS; l >= 1; l--) {
		dW = ta_alloc((size_t)D * D * 4);
		db = ta_alloc((size_t)D * 4);
		gemm(K_GEMM_WGRAD, dh, A->h[l], dW, 0, db, A->a[l], D, D, r, EPI_DRELU | EPI_BGRAD);
		accumulate(PW(l), dW);
		accumulate(PB(l), db);
		t = ta_alloc((size_t)r * D * 4);
		gemm(K_GEMM_DGRAD, dh, PW(l)->w, t, 0, 0, A->a[l], r, D, D, EPI_DRELU);
		dnext = ta_alloc((size_t)r * D * 4);
		add_into(dnext, dh, t, r * D);
		ta_free(t);
		ta_free(dh);
		ta_free(A->a[l]);
		if (l > 1)
			ta_free(A->h[l]);
		dh = dnext;
	}
	/* first layer: h1 = relu(W0 x + b0) */
	dW = ta_alloc((size_t)D * IN * 4);
	db = ta_alloc((size_t)D * 4);
	gemm(K_GEMM_WGRAD, dh, A->x, dW, 0, db, A->a[0], D, IN, r, EPI_DRELU | EPI_BGRAD);
	accumulate(PW(0), dW);
	accumulate(PB(0), db);
	ta_free(dh);
	ta_free(A->a[0]);
	ta_free(A->x);
	ta_free(A->target);
}

/* ---- the autograd thread */
static pthread_mutex_t bw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bw_cv = PTHREAD_COND_INITIALIZER;
static struct acts *bw_job;
static int bw_done, bw_quit;

static void *autograd_thread(void *arg)
{
	(void)arg;
	CK(cuCtxSetCurrent(ctx));
	pthread_mutex_lock(&bw_mu);
	for (;;) {
		while (!bw_job && !bw_quit)
			pthread_cond_wait(&bw_cv, &bw_mu);
		if (bw_quit)
			break;
		struct acts *a = bw_job;
		pthread_mutex_unlock(&bw_mu);
		backward(a);
		pthread_mutex_lock(&bw_mu);
		bw_job = NULL;
		bw_done = 1;
		pthread_cond_broadcast(&bw_cv);
	}
	pthread_mutex_unlock(&bw_mu);
	return NULL;
}

/* The main thread blocks in loss.backward() while the engine works. */
static void run_backward(struct acts *a)
{
	pthread_mutex_lock(&bw_mu);
	bw_job = a;
	bw_done = 0;
	pthread_cond_broadcast(&bw_cv);
	while (!bw_done)
		pthread_cond_wait(&bw_cv, &bw_mu);
	pthread_mutex_unlock(&bw_mu);
}

/* ---- lists */
static CUdeviceptr L_params[MAX_PARAMS], L_grads[MAX_PARAMS], L_m[MAX_PARAMS], L_v[MAX_PARAMS], L_tmp[MAX_PARAMS];
static size_t L_numel[MAX_PARAMS];
static float L_scalars[MAX_PARAMS];

static void gather_lists(void)
{
	for (int i = 0; i < NPARAMS; i++) {
		L_params[i] = P[i].w;
		L_grads[i] = P[i].grad;
		L_m[i] = P[i].m;
		L_v[i] = P[i].v;
		L_numel[i] = P[i].n;
	}
}

/* ---- clip_grad_norm_(params, max_norm), foreach */
static CUdeviceptr *pinned_offsets;

static void clip_grad_norm(float max_norm)
{
	static CUdeviceptr norms[MAX_PARAMS];
	int n = NPARAMS;
	/* _foreach_norm: per-chunk partial sums, then one cleanup block per tensor */
	int64_t *off = (int64_t *)pinned_offsets;
	off[0] = 0;
	for (int i = 0; i < n; i++)
		off[i + 1] = off[i] + (int64_t)((L_numel[i] + CHUNK - 1) / CHUNK);
	CUdeviceptr d_off = ta_alloc((size_t)(n + 1) * 8);
	CK(cuMemcpyHtoDAsync(d_off, off, (size_t)(n + 1) * 8, stream));
	CUdeviceptr partial = ta_alloc((size_t)off[n] * 4);
	for (int i = 0; i < n; i++)
		norms[i] = ta_alloc(4);
	struct mta_call c = {kf[K_LPNORM], 1, 0, {L_grads}, L_numel, n, NULL, {&partial, &d_off}, 2};
	mta_apply(&c);
	static unsigned char addrs[25600];
	for (int base = 0; base < n; base += 3200) {
		int cnt = n - base < 3200 ? n - base : 3200;
		memcpy(addrs, &norms[base], (size_t)cnt * 8);
		int toff = base;
		void *params[4] = {&partial, addrs, &d_off, &toff};
		CK(cuLaunchKernel(kf[K_CLEANUP], (unsigned)cnt, 1, 1, MTA_BLOCK, 1, 1, 0, stream, params, NULL));
	}
	ta_free(partial);
	ta_free(d_off);
	/* total_norm = vector_norm(stack(norms)) */
	CUdeviceptr stacked = ta_alloc((size_t)n * 4);
	static unsigned char cat_meta[2720];
	unsigned char os[32] = {0};
	for (int base = 0; base < n; base += 128) {
		int cnt = n - base < 128 ? n - base : 128;
		memset(cat_meta, 0, sizeof cat_meta);
		for (int i = 0; i < cnt; i++) {
			uint32_t offv = (uint32_t)(base + i), one = 1;
			memcpy(cat_meta + 8 * i, &norms[base + i], 8);
			memcpy(cat_meta + 1024 + 4 * i, &offv, 4);   /* offset    */
			memcpy(cat_meta + 1536 + 4 * i, &one, 4);    /* dimSize   */
			memcpy(cat_meta + 2048 + 4 * i, &one, 4);    /* nElements */
			cat_meta[2560 + i] = 1;                      /* isContiguous */
		}
		int concat_dim = 0;
		unsigned dim_stride = 1;
		void *params[5] = {&stacked, cat_meta, os, &concat_dim, &dim_stride};
		CK(cuLaunchKernel(kf[K_CAT], 1, (unsigned)cnt, 1, 128, 1, 1, 0, stream, params, NULL));
	}
	for (int i = 0; i < n; i++)
		ta_free(norms[i]);
	CUdeviceptr total = ta_alloc(4);
	struct {
		unsigned char ops[8];
		CUdeviceptr src, dst;
		uint32_t numel;
		unsigned char reserved[1048 - 28];
	} red;
	memset(&red, 0, sizeof red);
	red.src = stacked;
	red.dst = total;
	red.numel = (uint32_t)n;
	void *rp[1] = {&red};
	CK(cuLaunchKernel(kf[K_VNORM], 1, 1, 1, MTA_BLOCK, 1, 1, 0, stream, rp, NULL));
	ta_free(stacked);
	/* clip_coef = max_norm / (total_norm + 1e-6); clamped to 1 */
	CUdeviceptr t1 = ta_alloc(4), coef = ta_alloc(4), clamped = ta_alloc(4);
	float on_self[2] = {1e-6f, 1.0f};
	CUdeviceptr arr2[2] = {t1, total};
	ew_launch(kf[K_ADD_SCALAR], 1, on_self, arr2);
	struct {
		unsigned char f;
		float a;
	} aun = {0, max_norm};
	CUdeviceptr arr3[2] = {coef, t1};
	ew_launch(kf[K_SCALAR_DIV], 1, &aun, arr3);
	float one = 1.0f;
	int n1 = 1;
	void *cp[4] = {&clamped, &coef, &one, &n1};
	CK(cuLaunchKernel(kf[K_CLAMP], 1, 1, 1, BLOCK, 1, 1, 0, stream, cp, NULL));
	/* _foreach_mul_(grads, clip_coef_clamped) */
	static unsigned char op;
	float alpha = 1.0f;
	struct mta_call m = {kf[K_CLIP_MUL], 1, 0, {L_grads}, L_numel, n, NULL, {&op, &clamped, &alpha}, 3};
	mta_apply(&m);
	ta_free(total);
	ta_free(t1);
	ta_free(coef);
	ta_free(clamped);
}

/* ---- optimizers (torch.optim, foreach=True) */
enum { OPT_ADAMW, OPT_ADAM, OPT_SGD };

static void adam_step(int adamw, int step, float lr, float b1, float b2, float eps, float wd)
{
	static unsigned char op;
	int n = NPARAMS;
	if (step == 1) /* _init_group: exp_avg, exp_avg_sq = zeros_like(p) */
		for (int i = 0; i < n; i++) {
			P[i].m = ta_alloc(P[i].n * 4);
			fill(P[i].m, 0.0f, (int)P[i].n);
			P[i].v = ta_alloc(P[i].n * 4);
			fill(P[i].v, 0.0f, (int)P[i].n);
			P[i].has_state = 1;
		}
	gather_lists();
	if (adamw && wd != 0) {
		float s = 1.0f - lr * wd;
		struct mta_call c = {kf[K_MUL_SCALAR], 1, 0, {L_params}, L_numel, n, NULL, {&op, &s}, 2};
		mta_apply(&c);
	}
	float w = 1.0f - b1;
	struct mta_call lerp = {kf[K_LERP], 2, 0, {L_m, L_grads}, L_numel, n, NULL, {&op, &w}, 2};
	mta_apply(&lerp);
	struct mta_call mul = {kf[K_MUL_SCALAR], 1, 0, {L_v}, L_numel, n, NULL, {&op, &b2}, 2};
	mta_apply(&mul);
	float val = 1.0f - b2;
	struct mta_call acm = {kf[K_ADDCMUL], 3, 0, {L_v, L_grads, L_grads}, L_numel, n, NULL, {&op, &val}, 2};
	mta_apply(&acm);
	double bc1 = 1.0 - pow(b1, step), bc2 = 1.0 - pow(b2, step);
	/* exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs): new tensors */
	for (int i = 0; i < n; i++)
		L_tmp[i] = ta_alloc(P[i].n * 4);
	struct mta_call sq = {kf[K_SQRT], 2, 0, {L_v, L_tmp}, L_numel, n, NULL, {&op}, 1};
	mta_apply(&sq);
	for (int i = 0; i < n; i++)
		L_scalars[i] = (float)sqrt(bc2);
	struct mta_call dv = {kf[K_DIV_SL], 1, 1, {L_tmp}, L_numel, n, L_scalars, {&op}, 1};
	mta_apply(&dv);
	struct mta_call ae = {kf[K_ADD_EPS], 1, 0, {L_tmp}, L_numel, n, NULL, {&op, &eps}, 2};
	mta_apply(&ae);
	for (int i = 0; i < n; i++)
		L_scalars[i] = (float)(-(lr / bc1));
	struct mta_call acd = {kf[K_ADDCDIV_SL], 3, 1, {L_params, L_m, L_tmp}, L_numel, n, L_scalars, {&op}, 1};
	mta_apply(&acd);
	for (int i = 0; i < n; i++)
		ta_free(L_tmp[i]);
}

static void sgd_step(int step, float lr, float momentum)
{
	static unsigned char op;
	int n = NPARAMS;
	gather_lists();
	if (momentum == 0) {
		float a = -lr;
		struct mta_call c = {kf[K_ADD_ALPHA], 2, 0, {L_params, L_grads}, L_numel, n, NULL, {&op, &a}, 2};
		mta_apply(&c);
		return;
	}
	if (step == 1) { /* buf = torch.clone(grad).detach(): a device-to-device copy */
		for (int i = 0; i < n; i++) {
			P[i].m = ta_alloc(P[i].n * 4);
			CK(cuMemcpyDtoDAsync(P[i].m, P[i].grad, P[i].n * 4, stream));
			P[i].has_state = 1;
		}
		gather_lists();
	} else {
		struct mta_call mu = {kf[K_MUL_SCALAR], 1, 0, {L_m}, L_numel, n, NULL, {&op, &momentum}, 2};
		mta_apply(&mu);
		float one = 1.0f;
		struct mta_call ad = {kf[K_ADD_ALPHA], 2, 0, {L_m, L_grads}, L_numel, n, NULL, {&op, &one}, 2};
		mta_apply(&ad);
	}
	float a = -lr;
	struct mta_call up = {kf[K_ADD_ALPHA], 2, 0, {L_params, L_m}, L_numel, n, NULL, {&op, &a}, 2};
	mta_apply(&up);
}

static void zero_grad(int set_to_none)
{
	int n = NPARAMS;
	if (set_to_none) {
		for (int i = 0; i < n; i++)
			if (P[i].has_grad) {
				ta_free(P[i].grad);
				P[i].has_grad = 0;
			}
		return;
	}
	for (int i = 0; i < n; i++)
		if (!P[i].has_grad)
			return; /* nothing to zero before the first backward */
	gather_lists();
	struct mta_call z = {kf[K_ZERO], 1, 0, {L_grads}, L_numel, n, NULL, {NULL}, 0};
	mta_apply(&z);
}

#define USAGE "torchlike --data PATH [--steps N] [--batch B] [--lr X] [--seed S] [--save PATH] " \
	      "[--optim adamw|adam|sgd] [--impl foreach|fused|forloop] [--clip MAXNORM] [--scaler 0|1] " \
	      "[--set-to-none 0|1] [--accum K] [--alloc caching|expandable|async] [--layout cuda13|cuda12] " \
	      "[--dtype fp32|bf16] [--momentum M] [--weight-decay W] [--layers N]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL;
	int steps = 60, batch = 16, accum = 1, optim = OPT_ADAMW, impl = 0, scaler = 0, set_to_none = 1;
	int alloc_mode = 0, layout = 0, dtype = 0;
	float lr = 3e-3f, clip = 0, momentum = 0.9f, wd = 0.01f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 4096, NULL, 0},
		{"--accum", SAMPLE_OPT_INT, &accum, 1, 64, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 10, NULL, 0},
		{"--momentum", SAMPLE_OPT_FLOAT, &momentum, 0, 1, NULL, 0},
		{"--weight-decay", SAMPLE_OPT_FLOAT, &wd, 0, 1, NULL, 0},
		{"--clip", SAMPLE_OPT_FLOAT, &clip, 0, 1e6, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
		{"--optim", SAMPLE_OPT_CHOICE, &optim, 0, 0, "adamw|adam|sgd", 0},
		{"--impl", SAMPLE_OPT_CHOICE, &impl, 0, 0, "foreach|fused|forloop", 0},
		{"--scaler", SAMPLE_OPT_INT, &scaler, 0, 1, NULL, 0},
		{"--set-to-none", SAMPLE_OPT_INT, &set_to_none, 0, 1, NULL, 0},
		{"--alloc", SAMPLE_OPT_CHOICE, &alloc_mode, 0, 0, "caching|expandable|async", 0},
		{"--layout", SAMPLE_OPT_CHOICE, &layout, 0, 0, "cuda13|cuda12", 0},
		{"--dtype", SAMPLE_OPT_CHOICE, &dtype, 0, 0, "fp32|bf16", 0},
		{"--layers", SAMPLE_OPT_INT, &LAYERS, 1, MAX_LAYERS, NULL, 0},
	};
	sample_prog = "torchlike";
	sample_parse_args(argc, argv, opts, sizeof opts / sizeof *opts, USAGE);
	if (impl != 0)
		sample_die(2, "--impl %s is not implemented yet (only foreach)", impl == 1 ? "fused" : "forloop");
	if (scaler)
		sample_die(2, "--scaler 1 is not implemented yet (the AMP unscale kernel's name holds a lambda)");
	if (layout)
		sample_die(2, "--layout cuda12 is not implemented yet (only the CUDA 13 layouts)");
	if (dtype)
		sample_die(2, "--dtype bf16 is not implemented yet");
	NPARAMS = 2 * LAYERS + 4;

	struct sample_data data;
	sample_data_open(&data, data_path);
	if (data.context != IN)
		sample_die(1, "%s: records hold %u context bytes, torchlike needs %d (build/data/mlp.rec)",
			   data_path, data.context, IN);

	CUdevice dev;
	CUmodule mod;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	CK(cuModuleLoadData(&mod, samples_obj_torchlike_kernels_fatbin));
	sample_get_kernels(mod, kernels, sizeof kernels / sizeof *kernels);
	ta_init((enum ta_mode)alloc_mode, stream);
	CK(cuMemAllocHost((void **)&pinned_offsets, (MAX_PARAMS + 1) * 8));

	/* parameters: torch.nn.Linear's init, U(-1/sqrt(in), 1/sqrt(in)) */
	struct sample_rng rng;
	sample_rng_init(&rng, seed, 0);
	size_t total = 0;
	for (int i = 0; i < NPARAMS; i++) {
		int layer = i / 2, is_bias = i % 2;
		int out = layer == LAYERS + 1 ? V : D, in = layer == 0 ? IN : D;
		P[i].rows = out;
		P[i].cols = is_bias ? 1 : in;
		P[i].n = (size_t)P[i].rows * P[i].cols;
		total += P[i].n;
	}
	float *host = malloc(total * 4);
	unsigned char *recs = malloc((size_t)batch * data.record_bytes);
	float *hx = malloc((size_t)batch * IN * 4), *hloss = malloc((size_t)batch * 4);
	int64_t *hy = malloc((size_t)batch * 8);
	if (!host || !recs || !hx || !hy || !hloss)
		sample_die(1, "out of host memory");
	for (int i = 0, o = 0; i < NPARAMS; i++) {
		int in = (i / 2) == 0 ? IN : D;
		float s = 1.0f / sqrtf((float)in);
		if (i / 2 >= 1 && i / 2 <= LAYERS)
			s *= 0.02f; /* residual blocks start near the identity (150 of them) */
		sample_rng_uniform(&rng, host + o, P[i].n, s);
		P[i].w = ta_alloc(P[i].n * 4);
		CK(cuMemcpyHtoD(P[i].w, host + o, P[i].n * 4));
		o += (int)P[i].n;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, autograd_thread, NULL))
		sample_die(1, "cannot start the autograd thread");

	double t0 = sample_now();
	for (int step = 1; step <= steps; step++) {
		zero_grad(set_to_none);
		double loss = 0;
		for (int k = 0; k < accum; k++) {
			struct acts A;
			sample_data_read(&data, recs, (size_t)batch);
			for (int b = 0; b < batch; b++) {
				const unsigned char *r = recs + (size_t)b * data.record_bytes;
				for (int j = 0; j < IN; j++)
					hx[b * IN + j] = r[j] / 96.0f - 0.5f;
				hy[b] = r[IN];
			}
			A.rows = batch;
			A.scale = 1.0f / (float)(batch * accum);
			A.x = ta_alloc((size_t)batch * IN * 4);
			A.target = ta_alloc((size_t)batch * 8);
			CK(cuMemcpyHtoDAsync(A.x, hx, (size_t)batch * IN * 4, stream));
			CK(cuMemcpyHtoDAsync(A.target, hy, (size_t)batch * 8, stream));
			forward(&A);
			CUdeviceptr lr_rows = A.loss_rows;
			run_backward(&A);
			CK(cuMemcpyDtoHAsync(hloss, lr_rows, (size_t)batch * 4, stream));
			CK(cuStreamSynchronize(stream));
			ta_free(lr_rows);
			for (int b = 0; b < batch; b++)
				loss += hloss[b];
		}
		if (clip > 0) {
			gather_lists();
			clip_grad_norm(clip);
		}
		if (optim == OPT_SGD)
			sgd_step(step, lr, momentum);
		else
			adam_step(optim == OPT_ADAMW, step, lr, 0.9f, 0.999f, 1e-8f, optim == OPT_ADAMW ? wd : 0.0f);
		printf("step %d loss %.6f\n", step, loss / (batch * accum));
		fflush(stdout);
	}
	CK(cuStreamSynchronize(stream));
	double t1 = sample_now();

	pthread_mutex_lock(&bw_mu);
	bw_quit = 1;
	pthread_cond_broadcast(&bw_cv);
	pthread_mutex_unlock(&bw_mu);
	pthread_join(th, NULL);

	if (save_path) {
		for (int i = 0, o = 0; i < NPARAMS; i++) {
			CK(cuMemcpyDtoH(host + o, P[i].w, P[i].n * 4));
			o += (int)P[i].n;
		}
		sample_save(save_path, host, total);
	}
	struct ta_stats st;
	ta_stats(&st);
	fprintf(stderr, "torchlike: %d parameter tensors, %zu segments/pages, %zu bytes reserved, %zu live blocks\n",
		NPARAMS, st.segments, st.reserved_bytes, st.live_blocks);
	sample_report(dev, steps, t1 - t0);
	sample_data_close(&data);
	sample_rng_close(&rng);
	free(host);
	free(recs);
	free(hx);
	free(hy);
	free(hloss);
	return 0;
}
