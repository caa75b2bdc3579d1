/* SPDX-License-Identifier: MIT
 *
 * train_gpt.cu - samples/gpt: a small GPT-2-style language model trained the
 * way hand-written CUDA C trainers (llm.c) are written: the CUDA runtime API
 * (cudaMalloc, <<<>>> launches on a stream, cudaMemcpy, cudaMemset),
 * cuBLASLt for the linear layers (bias and GELU epilogues),
 * cublasGemmStridedBatchedEx for attention, and the kernels of kernels.cuh.
 * It knows nothing of distribution.
 *
 * Model (GPT-2 with tied embeddings): L = 2 layers, NH = 2 heads, C = 32
 * channels, context T = 16, vocabulary V = 96 (the tokens of ddp-mkdata)
 * padded to Vp = 128.  Each block: x += attn(ln1(x)); x += mlp(ln2(x)), mlp
 * = fcproj(GELU(fc(.))); then lnf and logits = lnf(x) wte^T; loss = mean
 * cross-entropy over the batch and positions.
 *
 * Memory, as llm.c keeps it:
 *   - ONE bf16 allocation for all parameters (16 tensors at fixed offsets),
 *     ONE bf16 allocation for all gradients (same offsets), zeroed with
 *     cudaMemset at the start of every step; fp32 master weights and AdamW's
 *     m and v, one allocation each;
 *   - ONE activation allocation carved into slices (forward activations kept
 *     for the backward pass, the backward pass's scratch, the losses); the
 *     logits slice doubles as scratch for the gradient-norm partial sums.
 * A step: K micro-steps (--accum K), each reading B rows from the token
 * file, forward, backward ADDING into the gradients (dloss = 1/(B*T*K));
 * then the global gradient norm (partial sums per block into the activation
 * slice, one aggregate, copied to the host), the clipping factor on the
 * host, and per parameter tensor: adamw_kernel (fp32 master, m, v; the
 * gradient pointer is not const) on its sub-range, then copy_and_cast_kernel
 * to its bf16 parameters.
 * --update layers: the update as llm.c's bf16 build (train_gpt2.cu,
 * gpt2_update and gpt2_calculate_grad_norm) writes it: per tensor KIND one
 * launch covering every layer, grid.y = the number of layers (1 for wte,
 * wpe, lnfw, lnfb) with stride arguments (element i of layer l at
 * offset + l * stride + i): the per-tensor squared norms accumulated into
 * the partial sums (zeroed first), one aggregate; at step 1 the fp32 master
 * weights cast from the bf16 parameters (copy_and_cast_kernel, strided);
 * adamw_kernel3 (every pointer non-const) updating the master weights and
 * writing the bf16 parameters by stochastic rounding, one seed per tensor
 * kind from a host xorshift.
 *
 * --log PATH: a log written as llm.c writes its own (train_gpt2.cu's
 * Logger): after the start-up (the parameters cast, and a validation loss on
 * the first batch: forward and the fused classifier, as llm.c evaluates at
 * step 0) the file is opened for writing, then one `s:STEP trl:LOSS` line a
 * step is written to it with fprintf (and flushed), the file staying open.
 *
 * Data: a token shard (llm.c's format: 256 int32 header, magic 20240520,
 * version 1, token count; then uint16 tokens) read with fopen/fseek/fread.
 * Each row is a window of T+1 consecutive tokens (inputs tokens 0..T-1,
 * targets 1..T); windows do not overlap, so a micro-step reads the next
 * B*(T+1) tokens, wrapping to the first token at the end of the file.
 *
 * Contract: single-threaded; one stream for every kernel and GEMM; every
 * CUDA and cuBLAS call checked (one line, exit 1); deterministic given
 * --seed; the only output on stdout is one `step K loss V` line per step.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

extern "C" {
#include "../common/sample.h"
}
#include "kernels.cuh"

/* ---- model configuration ------------------------------------------------- */

enum { L = 2, NH = 2, C = 32, T = 16, V = 96, Vp = 128, HS = C / NH };
enum { BLOCK = 256, NORM_BLOCKS = 32 };

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256

/* the parameter tensors, in the order of the flat buffers and of --save */
enum {
	P_WTE, P_WPE, P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_ATTPROJW, P_ATTPROJB, P_LN2W, P_LN2B, P_FCW, P_FCB,
	P_FCPROJW, P_FCPROJB, P_LNFW, P_LNFB, NUM_PARAMETER_TENSORS
};

static size_t param_sizes[NUM_PARAMETER_TENSORS];
static size_t param_offsets[NUM_PARAMETER_TENSORS];
static size_t num_parameters;

static void fill_param_sizes(void)
{
	size_t *s = param_sizes, off = 0;
	int i;

	s[P_WTE] = (size_t)Vp * C;
	s[P_WPE] = (size_t)T * C;
	s[P_LN1W] = s[P_LN1B] = (size_t)L * C;
	s[P_QKVW] = (size_t)L * 3 * C * C;
	s[P_QKVB] = (size_t)L * 3 * C;
	s[P_ATTPROJW] = (size_t)L * C * C;
	s[P_ATTPROJB] = (size_t)L * C;
	s[P_LN2W] = s[P_LN2B] = (size_t)L * C;
	s[P_FCW] = (size_t)L * 4 * C * C;
	s[P_FCB] = (size_t)L * 4 * C;
	s[P_FCPROJW] = (size_t)L * C * 4 * C;
	s[P_FCPROJB] = (size_t)L * C;
	s[P_LNFW] = s[P_LNFB] = C;
	for (i = 0; i < NUM_PARAMETER_TENSORS; i++) {
		param_offsets[i] = off;
		off += s[i];
	}
	num_parameters = off;
}

/* the layers a tensor kind holds (one launch covers them all in
 * --update layers): wte, wpe, lnfw and lnfb are one slice */
static int kind_slices(int i)
{
	return i < P_LN1W || i > P_FCPROJB ? 1 : L;
}

/* llm.c's random_u32 (xorshift*) */
static unsigned int random_u32(unsigned long long *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return (unsigned int)((*state * 0x2545F4914F6CDD1Dull) >> 32);
}

/* pointers into one flat buffer */
struct ParameterTensors {
	floatX *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw,
		*fcprojb, *lnfw, *lnfb;
};

static void point_parameters(struct ParameterTensors *p, floatX *base)
{
	floatX **ptrs[NUM_PARAMETER_TENSORS] = {
		&p->wte, &p->wpe, &p->ln1w, &p->ln1b, &p->qkvw, &p->qkvb, &p->attprojw, &p->attprojb,
		&p->ln2w, &p->ln2b, &p->fcw, &p->fcb, &p->fcprojw, &p->fcprojb, &p->lnfw, &p->lnfb,
	};
	for (int i = 0; i < NUM_PARAMETER_TENSORS; i++)
		*ptrs[i] = base + param_offsets[i];
}

/* the slices of the one activation allocation */
struct ActivationTensors {
	floatX *encoded;             /* (B, T, C)                                   */
	floatX *ln1;                 /* (L, B, T, C)                                */
	float *ln1_mean, *ln1_rstd;  /* (L, B, T)                                   */
	floatX *qkvr;                /* (L, 3, B, NH, T, HS): q, k, v per layer     */
	floatX *att;                 /* (L, B, NH, T, T)                            */
	floatX *atty;                /* (L, B, T, C)                                */
	floatX *residual2;           /* (L, B, T, C)                                */
	floatX *ln2;                 /* (L, B, T, C)                                */
	float *ln2_mean, *ln2_rstd;  /* (L, B, T)                                   */
	floatX *fch;                 /* (L, B, T, 4C) before GELU                   */
	floatX *fch_gelu;            /* (L, B, T, 4C)                               */
	floatX *residual3;           /* (L, B, T, C)                                */
	floatX *lnf;                 /* (B, T, C)                                   */
	float *lnf_mean, *lnf_rstd;  /* (B, T)                                      */
	float *losses;               /* (B, T)                                      */
	floatX *output;              /* (B, T, Vp) logits, then their gradient;
					also scratch for the norm's partials */
	floatX *scratch_qkv;         /* (B, T, 3C) qkv before the permute, then
					preatt and the attention's vaccum */
	floatX *scratch_btc;         /* (B, T, C) a projection's output           */
	/* backward */
	floatX *dresidual;           /* (B, T, C)                                   */
	floatX *dbtc;                /* (B, T, C) the gradient of a matmul input   */
	floatX *dfch;                /* (B, T, 4C)                                  */
	floatX *dqkv;                /* (B, T, 3C)                                  */
	floatX *dqkvr;               /* (3, B, NH, T, HS)                           */
	floatX *datt;                /* (B, NH, T, T)                               */
	floatX *dvaccum;             /* (B, NH, T, HS)                              */
};

static size_t carve(char *base, size_t *off, size_t bytes, void **out)
{
	size_t start = (*off + 255) & ~(size_t)255; /* 256-byte aligned slices */

	if (out)
		*out = base ? base + start : NULL;
	*off = start + bytes;
	return *off;
}

/* lays the slices out from base (NULL: only count); returns the bytes needed */
static size_t point_activations(struct ActivationTensors *a, char *base, int B)
{
	size_t off = 0, BT = (size_t)B * T, X = sizeof(floatX), F = sizeof(float);

	carve(base, &off, BT * C * X, (void **)&a->encoded);
	carve(base, &off, L * BT * C * X, (void **)&a->ln1);
	carve(base, &off, L * BT * F, (void **)&a->ln1_mean);
	carve(base, &off, L * BT * F, (void **)&a->ln1_rstd);
	carve(base, &off, L * 3 * BT * C * X, (void **)&a->qkvr);
	carve(base, &off, (size_t)L * B * NH * T * T * X, (void **)&a->att);
	carve(base, &off, L * BT * C * X, (void **)&a->atty);
	carve(base, &off, L * BT * C * X, (void **)&a->residual2);
	carve(base, &off, L * BT * C * X, (void **)&a->ln2);
	carve(base, &off, L * BT * F, (void **)&a->ln2_mean);
	carve(base, &off, L * BT * F, (void **)&a->ln2_rstd);
	carve(base, &off, L * BT * 4 * C * X, (void **)&a->fch);
	carve(base, &off, L * BT * 4 * C * X, (void **)&a->fch_gelu);
	carve(base, &off, L * BT * C * X, (void **)&a->residual3);
	carve(base, &off, BT * C * X, (void **)&a->lnf);
	carve(base, &off, BT * F, (void **)&a->lnf_mean);
	carve(base, &off, BT * F, (void **)&a->lnf_rstd);
	carve(base, &off, BT * F, (void **)&a->losses);
	carve(base, &off, BT * Vp * X, (void **)&a->output);
	carve(base, &off, BT * 3 * C * X, (void **)&a->scratch_qkv);
	carve(base, &off, BT * C * X, (void **)&a->scratch_btc);
	carve(base, &off, BT * C * X, (void **)&a->dresidual);
	carve(base, &off, BT * C * X, (void **)&a->dbtc);
	carve(base, &off, BT * 4 * C * X, (void **)&a->dfch);
	carve(base, &off, BT * 3 * C * X, (void **)&a->dqkv);
	carve(base, &off, 3 * BT * C * X, (void **)&a->dqkvr);
	carve(base, &off, (size_t)B * NH * T * T * X, (void **)&a->datt);
	return carve(base, &off, BT * C * X, (void **)&a->dvaccum);
}

/* ---- error checking ---------------------------------------------------------- */

static void cuda_check(cudaError_t e, const char *expr, const char *file, int line)
{
	if (e != cudaSuccess)
		sample_die(1, "%.*s failed: %s (%s:%d)", (int)strcspn(expr, "("), expr, cudaGetErrorName(e), file,
			   line);
}

static void cublas_check(cublasStatus_t st, const char *expr, const char *file, int line)
{
	if (st != CUBLAS_STATUS_SUCCESS)
		sample_die(1, "%.*s failed: %s (%s:%d)", (int)strcspn(expr, "("), expr, cublasGetStatusName(st), file,
			   line);
}

#define cudaCheck(call) cuda_check((call), #call, __FILE__, __LINE__)
#define cublasCheck(call) cublas_check((call), #call, __FILE__, __LINE__)
/* after a <<<>>> launch: a bad configuration is reported here */
#define launchCheck() cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

/* ---- cuBLAS / cuBLASLt ------------------------------------------------------------ */

static cublasHandle_t cublas_handle;
static cublasLtHandle_t cublaslt_handle;
static void *cublaslt_workspace;
static const size_t cublaslt_workspace_size = 4u << 20;
static int gelu_fusion; /* 0: GELU kernels; 1: fused into the fc forward; 2: also backward */

/* D (m x n, column-major) = op(A) op(B) [+ bias] [GELU], or += with
 * accumulate, through cuBLASLt, as llm.c's matmul_cublaslt.  pre_gelu with
 * !backward: GELU_AUX(_BIAS), the GELU input written to pre_gelu; with
 * backward: DGELU, D multiplied by GELU'(pre_gelu). */
static void matmul_cublaslt(floatX *d, const floatX *a, const floatX *b, const floatX *bias, int m, int n, int k,
			    cudaStream_t stream, bool transA, bool transB, bool accumulate, floatX *pre_gelu,
			    bool backward)
{
	cublasLtMatmulDesc_t desc;
	cublasLtMatmulPreference_t pref;
	cublasLtMatrixLayout_t ALayout, BLayout, CLayout, DLayout;
	cublasLtMatmulHeuristicResult_t heuristic;
	cublasOperation_t opN = CUBLAS_OP_N, opT = CUBLAS_OP_T;
	cublasLtEpilogue_t epilogue;
	cudaDataType_t scale_type = CUDA_R_32F, bias_type = CUDA_R_16BF;
	int returned = 0;
	const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;

	cublasCheck(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, transA ? &opT : &opN, sizeof(opT)));
	cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, transB ? &opT : &opN, sizeof(opN)));
	if (transA)
		cublasCheck(cublasLtMatrixLayoutCreate(&ALayout, CUDA_R_16BF, k, m, k));
	else
		cublasCheck(cublasLtMatrixLayoutCreate(&ALayout, CUDA_R_16BF, m, k, m));
	if (transB)
		cublasCheck(cublasLtMatrixLayoutCreate(&BLayout, CUDA_R_16BF, n, k, n));
	else
		cublasCheck(cublasLtMatrixLayoutCreate(&BLayout, CUDA_R_16BF, k, n, k));
	cublasCheck(cublasLtMatrixLayoutCreate(&CLayout, CUDA_R_16BF, m, n, m));
	cublasCheck(cublasLtMatrixLayoutCreate(&DLayout, CUDA_R_16BF, m, n, m));
	cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
	cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
							 &cublaslt_workspace_size, sizeof(cublaslt_workspace_size)));
	if (pre_gelu) {
		int64_t gelu_ld = m;

		cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &gelu_ld,
							   sizeof(gelu_ld)));
		cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &pre_gelu,
							   sizeof(pre_gelu)));
		if (backward)
			epilogue = CUBLASLT_EPILOGUE_DGELU;
		else
			epilogue = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
	} else {
		epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
	}
	cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
	if (bias) {
		cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
							   sizeof(bias_type)));
		cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
	}
	cublasCheck(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale_type,
						   sizeof(scale_type)));
	cublasCheck(cublasLtMatmulAlgoGetHeuristic(cublaslt_handle, desc, ALayout, BLayout, CLayout, DLayout, pref, 1,
						   &heuristic, &returned));
	if (returned == 0)
		sample_die(1, "no cuBLASLt algorithm for m %d n %d k %d (bias %d, epilogue %d)", m, n, k, bias != NULL,
			   (int)epilogue);
	cublasCheck(cublasLtMatmul(cublaslt_handle, desc, &alpha, a, ALayout, b, BLayout, &beta, d, CLayout, d, DLayout,
				   &heuristic.algo, cublaslt_workspace, cublaslt_workspace_size, stream));
	cublasCheck(cublasLtMatmulPreferenceDestroy(pref));
	cublasCheck(cublasLtMatmulDescDestroy(desc));
	cublasCheck(cublasLtMatrixLayoutDestroy(ALayout));
	cublasCheck(cublasLtMatrixLayoutDestroy(BLayout));
	cublasCheck(cublasLtMatrixLayoutDestroy(CLayout));
	cublasCheck(cublasLtMatrixLayoutDestroy(DLayout));
}

/* batched D = op(A) op(B) for attention (cuBLAS, column-major, bf16) */
static void matmul_cublas(floatX *d, const floatX *a, const floatX *b, int m, int n, int k, bool transA, bool transB,
			  int batch_count, long long strideA, long long strideB, long long strideOut)
{
	const float alpha = 1.0f, beta = 0.0f;

	cublasCheck(cublasGemmStridedBatchedEx(cublas_handle, transA ? CUBLAS_OP_T : CUBLAS_OP_N,
					       transB ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, a, CUDA_R_16BF,
					       transA ? k : m, strideA, b, CUDA_R_16BF, transB ? n : k, strideB, &beta,
					       d, CUDA_R_16BF, m, strideOut, batch_count, CUBLAS_COMPUTE_32F,
					       CUBLAS_GEMM_DEFAULT));
}

/* ---- layers ------------------------------------------------------------------ */

/* out (N, OC) = inp (N, IN) weight^T + bias, weight (OC, IN) row-major */
static void matmul_forward(floatX *out, const floatX *inp, const floatX *weight, const floatX *bias, int N, int IN,
			   int OC, cudaStream_t s, floatX *pre_gelu = NULL)
{
	matmul_cublaslt(out, weight, inp, bias, OC, N, IN, s, true, false, false, pre_gelu, false);
}

/* dinp = dout weight (set); dweight += dout^T inp; dbias += column sums;
 * pre_gelu: dinp is the gradient before a GELU whose input was pre_gelu */
static void matmul_backward(floatX *dinp, floatX *dweight, floatX *dbias, const floatX *dout, const floatX *inp,
			    const floatX *weight, int N, int IN, int OC, cudaStream_t s, floatX *pre_gelu = NULL)
{
	if (dbias) {
		matmul_backward_bias_kernel<<<CEIL_DIV(OC, BLOCK), BLOCK, 0, s>>>(dbias, dout, N, OC);
		launchCheck();
	}
	matmul_cublaslt(dinp, weight, dout, NULL, IN, N, OC, s, false, false, false,
			gelu_fusion >= 2 ? pre_gelu : NULL, true);
	if (gelu_fusion < 2 && pre_gelu) {
		gelu_backward_inplace_kernel<<<CEIL_DIV(N * IN, BLOCK), BLOCK, 0, s>>>(dinp, pre_gelu, N * IN);
		launchCheck();
	}
	matmul_cublaslt(dweight, inp, dout, NULL, IN, OC, N, s, false, true, true, NULL, true);
}

static void layernorm_forward(floatX *out, float *mean, float *rstd, const floatX *inp, const floatX *w,
			      const floatX *b, int N, cudaStream_t s)
{
	layernorm_forward_kernel<<<CEIL_DIV(N * WARP_SIZE, BLOCK), BLOCK, 0, s>>>(out, mean, rstd, inp, w, b, N, C);
	launchCheck();
}

/* dinp += ..., dweight += ..., dbias += ... */
static void layernorm_backward(floatX *dinp, floatX *dweight, floatX *dbias, const floatX *dout, const floatX *inp,
			       const floatX *weight, const float *mean, const float *rstd, int N, cudaStream_t s)
{
	layernorm_backward_input_kernel<<<CEIL_DIV(N * WARP_SIZE, BLOCK), BLOCK, 0, s>>>(dinp, dout, inp, weight,
											  mean, rstd, N, C);
	launchCheck();
	layernorm_backward_params_kernel<<<CEIL_DIV(C, BLOCK), BLOCK, 0, s>>>(dweight, dbias, dout, inp, mean, rstd,
									       N, C);
	launchCheck();
}

static void residual_forward(floatX *out, const floatX *a, const floatX *b, int n, cudaStream_t s)
{
	residual_forward_kernel<<<CEIL_DIV(n, BLOCK), BLOCK, 0, s>>>(out, a, b, n);
	launchCheck();
}

/* inp (B, T, 3C) -> qkvr; out (B, T, C); att (B, NH, T, T); inp is reused
 * as scratch */
static void attention_forward(floatX *out, floatX *qkvr, floatX *att, floatX *inp, int B, cudaStream_t s)
{
	int BT = B * T;
	floatX *q = qkvr, *k = qkvr + BT * C, *v = qkvr + 2 * BT * C;
	floatX *preatt = inp, *vaccum = inp;

	permute_kernel<<<CEIL_DIV(B * NH * T * HS, BLOCK), BLOCK, 0, s>>>(q, k, v, inp, B, T, NH, HS);
	launchCheck();
	matmul_cublas(preatt, k, q, T, T, HS, true, false, B * NH, T * HS, T * HS, T * T);
	softmax_forward_kernel<<<CEIL_DIV(B * NH * T * WARP_SIZE, BLOCK), BLOCK, 0, s>>>(att, 1.0f / sqrtf((float)HS),
											 preatt, B * NH * T, T);
	launchCheck();
	matmul_cublas(vaccum, v, att, HS, T, T, false, false, B * NH, T * HS, T * T, T * HS);
	unpermute_kernel<<<CEIL_DIV(BT * C, BLOCK), BLOCK, 0, s>>>(vaccum, out, B, T, NH, HS);
	launchCheck();
}

/* dout (B, T, C) -> dinp (B, T, 3C) */
static void attention_backward(floatX *dinp, floatX *dqkvr, floatX *datt, floatX *dvaccum, const floatX *dout,
			       const floatX *qkvr, const floatX *att, int B, cudaStream_t s)
{
	int BT = B * T;
	const floatX *q = qkvr, *k = qkvr + BT * C, *v = qkvr + 2 * BT * C;
	floatX *dq = dqkvr, *dk = dqkvr + BT * C, *dv = dqkvr + 2 * BT * C;

	unpermute_backward_kernel<<<CEIL_DIV(BT * C, BLOCK), BLOCK, 0, s>>>(dvaccum, dout, B, T, NH, HS);
	launchCheck();
	matmul_cublas(datt, v, dvaccum, T, T, HS, true, false, B * NH, T * HS, T * HS, T * T);
	matmul_cublas(dv, dvaccum, att, HS, T, T, false, true, B * NH, T * HS, T * T, T * HS);
	softmax_backward_inplace_kernel<<<CEIL_DIV(B * NH * T * WARP_SIZE, BLOCK), BLOCK, 0, s>>>(
		datt, att, B * NH * T, T, 1.0f / sqrtf((float)HS));
	launchCheck();
	matmul_cublas(dq, k, datt, HS, T, T, false, false, B * NH, T * HS, T * T, T * HS);
	matmul_cublas(dk, q, datt, HS, T, T, false, true, B * NH, T * HS, T * T, T * HS);
	permute_backward_kernel<<<CEIL_DIV(B * NH * T * HS, BLOCK), BLOCK, 0, s>>>(dinp, dq, dk, dv, B, T, NH, HS);
	launchCheck();
}

/* ---- the model ---------------------------------------------------------------- */

struct GPT {
	int B;
	floatX *params_memory;  /* ONE allocation, bf16                   */
	floatX *grads_memory;   /* ONE allocation, bf16                   */
	float *master_weights;  /* fp32 copy of the parameters            */
	float *m_memory, *v_memory;
	void *acts_memory;      /* ONE allocation, carved                 */
	size_t acts_bytes;
	struct ParameterTensors params, grads;
	struct ActivationTensors acts;
	int *inputs, *targets;  /* (B, T) on the device                   */
};

static void gpt_forward(struct GPT *g, cudaStream_t s)
{
	struct ParameterTensors *p = &g->params;
	struct ActivationTensors *a = &g->acts;
	int B = g->B, BT = B * T;

	encoder_forward_kernel<<<CEIL_DIV(BT * C, BLOCK), BLOCK, 0, s>>>(a->encoded, g->inputs, p->wte, p->wpe, B, T, C);
	launchCheck();
	for (int l = 0; l < L; l++) {
		floatX *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BT * C;
		floatX *ln1 = a->ln1 + l * BT * C, *ln2 = a->ln2 + l * BT * C;
		floatX *qkvr = a->qkvr + l * 3 * BT * C, *att = a->att + l * B * NH * T * T;
		floatX *atty = a->atty + l * BT * C, *residual2 = a->residual2 + l * BT * C;
		floatX *fch = a->fch + l * BT * 4 * C, *fch_gelu = a->fch_gelu + l * BT * 4 * C;
		floatX *residual3 = a->residual3 + l * BT * C;

		layernorm_forward(ln1, a->ln1_mean + l * BT, a->ln1_rstd + l * BT, residual, p->ln1w + l * C,
				  p->ln1b + l * C, BT, s);
		matmul_forward(a->scratch_qkv, ln1, p->qkvw + l * 3 * C * C, p->qkvb + l * 3 * C, BT, C, 3 * C, s);
		attention_forward(atty, qkvr, att, a->scratch_qkv, B, s);
		matmul_forward(a->scratch_btc, atty, p->attprojw + l * C * C, p->attprojb + l * C, BT, C, C, s);
		residual_forward(residual2, residual, a->scratch_btc, BT * C, s);
		layernorm_forward(ln2, a->ln2_mean + l * BT, a->ln2_rstd + l * BT, residual2, p->ln2w + l * C,
				  p->ln2b + l * C, BT, s);
		if (gelu_fusion >= 1) {
			matmul_forward(fch_gelu, ln2, p->fcw + l * 4 * C * C, p->fcb + l * 4 * C, BT, C, 4 * C, s, fch);
		} else {
			matmul_forward(fch, ln2, p->fcw + l * 4 * C * C, p->fcb + l * 4 * C, BT, C, 4 * C, s);
			gelu_forward_kernel<<<CEIL_DIV(BT * 4 * C, BLOCK), BLOCK, 0, s>>>(fch_gelu, fch, BT * 4 * C);
			launchCheck();
		}
		matmul_forward(a->scratch_btc, fch_gelu, p->fcprojw + l * 4 * C * C, p->fcprojb + l * C, BT, 4 * C, C, s);
		residual_forward(residual3, residual2, a->scratch_btc, BT * C, s);
	}
	layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, a->residual3 + (L - 1) * BT * C, p->lnfw, p->lnfb, BT, s);
	matmul_forward(a->output, a->lnf, p->wte, NULL, BT, C, Vp, s);
}

/* the fused classifier, then the backward pass ADDING into the gradients */
static void gpt_backward(struct GPT *g, float dloss, cudaStream_t s)
{
	struct ParameterTensors *p = &g->params, *d = &g->grads;
	struct ActivationTensors *a = &g->acts;
	int B = g->B, BT = B * T;

	fused_classifier_kernel<<<CEIL_DIV(BT * WARP_SIZE, BLOCK), BLOCK, 0, s>>>(a->output, a->losses, g->targets,
										  dloss, BT, V, Vp);
	launchCheck();
	cudaCheck(cudaMemsetAsync(a->dresidual, 0, (size_t)BT * C * sizeof(floatX), s));
	matmul_backward(a->dbtc, d->wte, NULL, a->output, a->lnf, p->wte, BT, C, Vp, s);
	layernorm_backward(a->dresidual, d->lnfw, d->lnfb, a->dbtc, a->residual3 + (L - 1) * BT * C, p->lnfw,
			   a->lnf_mean, a->lnf_rstd, BT, s);
	for (int l = L - 1; l >= 0; l--) {
		floatX *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BT * C;
		floatX *ln1 = a->ln1 + l * BT * C, *ln2 = a->ln2 + l * BT * C;
		floatX *qkvr = a->qkvr + l * 3 * BT * C, *att = a->att + l * B * NH * T * T;
		floatX *atty = a->atty + l * BT * C, *residual2 = a->residual2 + l * BT * C;
		floatX *fch = a->fch + l * BT * 4 * C, *fch_gelu = a->fch_gelu + l * BT * 4 * C;

		/* dresidual is the gradient of residual3 */
		matmul_backward(a->dfch, d->fcprojw + l * 4 * C * C, d->fcprojb + l * C, a->dresidual, fch_gelu,
				p->fcprojw + l * 4 * C * C, BT, 4 * C, C, s, fch);
		matmul_backward(a->dbtc, d->fcw + l * 4 * C * C, d->fcb + l * 4 * C, a->dfch, ln2, p->fcw + l * 4 * C * C,
				BT, C, 4 * C, s);
		layernorm_backward(a->dresidual, d->ln2w + l * C, d->ln2b + l * C, a->dbtc, residual2, p->ln2w + l * C,
				   a->ln2_mean + l * BT, a->ln2_rstd + l * BT, BT, s);
		/* now of residual2 */
		matmul_backward(a->dbtc, d->attprojw + l * C * C, d->attprojb + l * C, a->dresidual, atty,
				p->attprojw + l * C * C, BT, C, C, s);
		attention_backward(a->dqkv, a->dqkvr, a->datt, a->dvaccum, a->dbtc, qkvr, att, B, s);
		matmul_backward(a->dbtc, d->qkvw + l * 3 * C * C, d->qkvb + l * 3 * C, a->dqkv, ln1, p->qkvw + l * 3 * C * C,
				BT, C, 3 * C, s);
		layernorm_backward(a->dresidual, d->ln1w + l * C, d->ln1b + l * C, a->dbtc, residual, p->ln1w + l * C,
				   a->ln1_mean + l * BT, a->ln1_rstd + l * BT, BT, s);
	}
	encoder_backward_wte_kernel<<<CEIL_DIV(V * C, BLOCK), BLOCK, 0, s>>>(d->wte, a->dresidual, g->inputs, BT, V, C);
	launchCheck();
	encoder_backward_wpe_kernel<<<CEIL_DIV(T * C, BLOCK), BLOCK, 0, s>>>(d->wpe, a->dresidual, B, T, C);
	launchCheck();
}

/* ---- data: token shards --------------------------------------------------------- */

struct DataLoader {
	const char *path;
	FILE *f;
	long ntok;       /* tokens in the file                   */
	long pos;        /* next token to read                   */
	int B;
	uint16_t *buf;   /* B * (T + 1) tokens                    */
	int *inputs, *targets;
};

static void dataloader_init(struct DataLoader *dl, const char *path, int B)
{
	int header[SHARD_HEADER_INTS];
	long size;

	memset(dl, 0, sizeof(*dl));
	dl->path = path;
	dl->B = B;
	dl->f = fopen(path, "rb");
	if (dl->f == NULL)
		sample_die(1, "cannot open %s: %s", path, strerror(errno));
	if (fread(header, sizeof(int), SHARD_HEADER_INTS, dl->f) != SHARD_HEADER_INTS)
		sample_die(1, "%s: too short for a token shard header (%d bytes)", path,
			   (int)(SHARD_HEADER_INTS * sizeof(int)));
	if (header[0] != SHARD_MAGIC)
		sample_die(1, "%s: bad magic %d (a token shard has %d; build one with ddp-mkdata --kind gpt)", path,
			   header[0], SHARD_MAGIC);
	if (header[1] != SHARD_VERSION)
		sample_die(1, "%s: token shard version %d, expected %d (uint16 tokens)", path, header[1],
			   SHARD_VERSION);
	dl->ntok = header[2];
	if (fseek(dl->f, 0, SEEK_END) != 0 || (size = ftell(dl->f)) < 0)
		sample_die(1, "cannot seek in %s: %s", path, strerror(errno));
	if (dl->ntok < 0 || size != (long)sizeof(header) + 2 * dl->ntok)
		sample_die(1, "%s: %ld bytes, but the header says %ld tokens (%ld bytes)", path, size, dl->ntok,
			   (long)sizeof(header) + 2 * dl->ntok);
	if (dl->ntok < (long)B * (T + 1))
		sample_die(1, "%s: %ld tokens, fewer than one batch of %d rows of %d", path, dl->ntok, B, T + 1);
	dl->buf = (uint16_t *)malloc((size_t)B * (T + 1) * sizeof(uint16_t));
	dl->inputs = (int *)malloc((size_t)B * T * sizeof(int));
	dl->targets = (int *)malloc((size_t)B * T * sizeof(int));
	if (dl->buf == NULL || dl->inputs == NULL || dl->targets == NULL)
		sample_die(1, "out of host memory");
}

/* the next B rows of T+1 tokens, wrapping to the start of the file */
static void dataloader_next_batch(struct DataLoader *dl)
{
	size_t n = (size_t)dl->B * (T + 1);

	if (dl->pos + (long)n > dl->ntok)
		dl->pos = 0;
	if (fseek(dl->f, (long)(SHARD_HEADER_INTS * sizeof(int)) + 2 * dl->pos, SEEK_SET) != 0)
		sample_die(1, "cannot seek in %s: %s", dl->path, strerror(errno));
	if (fread(dl->buf, sizeof(uint16_t), n, dl->f) != n)
		sample_die(1, "%s: short read at token %ld", dl->path, dl->pos);
	for (int b = 0; b < dl->B; b++)
		for (int t = 0; t <= T; t++) {
			int tok = dl->buf[b * (T + 1) + t];

			if (tok >= V)
				sample_die(1, "%s: token %d at %ld is not below the vocabulary size %d", dl->path, tok,
					   dl->pos + b * (T + 1) + t, V);
			if (t < T)
				dl->inputs[b * T + t] = tok;
			if (t > 0)
				dl->targets[b * T + t - 1] = tok;
		}
	dl->pos += (long)n;
}

static void dataloader_free(struct DataLoader *dl)
{
	fclose(dl->f);
	free(dl->buf);
	free(dl->inputs);
	free(dl->targets);
}

/* ---- checkpoints ----------------------------------------------------------------- */

/* the fp32 master weights, tensors in order, float32 little-endian */
static void save_checkpoint(const char *path, const float *d_master, float *h_buf)
{
	FILE *f;

	cudaCheck(cudaMemcpy(h_buf, d_master, num_parameters * sizeof(float), cudaMemcpyDeviceToHost));
	f = fopen(path, "wb");
	if (f == NULL)
		sample_die(1, "cannot create %s: %s", path, strerror(errno));
	if (fwrite(h_buf, sizeof(float), num_parameters, f) != num_parameters) {
		int e = errno;

		fclose(f);
		sample_die(1, "cannot write %s: %s", path, strerror(e));
	}
	if (fclose(f) != 0)
		sample_die(1, "cannot write %s: %s", path, strerror(errno));
}

/* --log: llm.c's step-0 validation loss (forward and the classifier on the
 * first batch, the loader rewound), then the log opened for writing with
 * that loss as its first line */
static FILE *open_log(const char *path, struct GPT *g, struct DataLoader *dl, float *h_losses, cudaStream_t s)
{
	double loss = 0.0;
	FILE *f;

	dataloader_next_batch(dl);
	dl->pos = 0;
	cudaCheck(cudaMemcpy(g->inputs, dl->inputs, (size_t)g->B * T * sizeof(int), cudaMemcpyHostToDevice));
	cudaCheck(cudaMemcpy(g->targets, dl->targets, (size_t)g->B * T * sizeof(int), cudaMemcpyHostToDevice));
	gpt_forward(g, s);
	fused_classifier_kernel<<<CEIL_DIV(g->B * T * WARP_SIZE, BLOCK), BLOCK, 0, s>>>(
		g->acts.output, g->acts.losses, g->targets, 0.0f, g->B * T, V, Vp);
	launchCheck();
	cudaCheck(cudaMemcpy(h_losses, g->acts.losses, (size_t)g->B * T * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < g->B * T; i++)
		loss += h_losses[i];
	f = fopen(path, "w");
	if (f == NULL)
		sample_die(1, "cannot create %s: %s", path, strerror(errno));
	fprintf(f, "s:0 tel:%.4f\n", loss / (double)(g->B * T));
	fflush(f);
	return f;
}

/* ---- main ------------------------------------------------------------------------ */

#define USAGE "gpt --data PATH [--steps N] [--batch B] [--accum K] [--lr X] [--seed S] [--save PATH] " \
	      "[--save-every N] [--weight-decay W] [--clip MAXNORM] " \
	      "[--gelu-fusion 0|1|2] [--update tensor|layers] [--log PATH]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL, *log_path = NULL;
	FILE *logf = NULL;
	int steps = 300, batch = 4, accum = 1, save_every = 0, gelu_choice = -1, update_layers = 0;
	unsigned long long rng_state = 13371337; /* llm.c's seeds for stochastic rounding */
	float lr = 3e-3f, wd = 0.1f, clip = 1.0f;
	const float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 4096, NULL, 0},
		{"--accum", SAMPLE_OPT_INT, &accum, 1, 1024, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 1e3, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
		{"--save-every", SAMPLE_OPT_INT, &save_every, 0, 1e9, NULL, 0},
		{"--weight-decay", SAMPLE_OPT_FLOAT, &wd, 0, 1e3, NULL, 0},
		{"--clip", SAMPLE_OPT_FLOAT, &clip, 1e-30, 3.4e38, NULL, 0},
		{"--gelu-fusion", SAMPLE_OPT_CHOICE, &gelu_choice, 0, 0, "0|1|2", 0},
		{"--update", SAMPLE_OPT_CHOICE, &update_layers, 0, 0, "tensor|layers", 0},
		{"--log", SAMPLE_OPT_STR, &log_path, 0, 0, NULL, 0},
	};
	struct GPT g;
	struct DataLoader dl;
	struct sample_rng rng;
	struct cudaDeviceProp prop;
	cudaStream_t stream;
	float *h_master, *h_losses, *grad_norm_squared;
	char *ckpt_name = NULL;
	double t0;

	sample_prog = "gpt";
	setvbuf(stdout, NULL, _IOLBF, 0); /* one step line at a time, even into a pipe */
	sample_parse_args(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), USAGE);
	if (save_every > 0 && save_path == NULL)
		sample_die(2, "--save-every needs --save PATH; usage: " USAGE);
	dataloader_init(&dl, data_path, batch);
	fill_param_sizes();

	cudaCheck(cudaSetDevice(0));
	cudaCheck(cudaGetDeviceProperties(&prop, 0));
	/* as llm.c: GELU fused into both matmuls from sm_90 on */
	gelu_fusion = gelu_choice >= 0 ? gelu_choice : (prop.major >= 9 ? 2 : 0);
	cudaCheck(cudaStreamCreate(&stream));
	cublasCheck(cublasCreate(&cublas_handle));
	cublasCheck(cublasSetStream(cublas_handle, stream));
	cublasCheck(cublasSetMathMode(cublas_handle, CUBLAS_DEFAULT_MATH));
	cublasCheck(cublasLtCreate(&cublaslt_handle));
	cudaCheck(cudaMalloc(&cublaslt_workspace, cublaslt_workspace_size));

	/* parameters: drawn in tensor order on the host (std 0.02 as GPT-2,
	 * residual projections scaled by 1/sqrt(2L), wpe 0.01; the padded
	 * vocabulary rows zero; layernorm weights 1, biases 0) */
	memset(&g, 0, sizeof(g));
	g.B = batch;
	h_master = (float *)calloc(num_parameters, sizeof(float));
	h_losses = (float *)malloc((size_t)batch * T * sizeof(float));
	if (h_master == NULL || h_losses == NULL)
		sample_die(1, "out of host memory");
	sample_rng_init(&rng, seed, 0);
	for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
		float *p = h_master + param_offsets[i];
		const float sq3 = 1.7320508f; /* uniform [-a, a) has std a / sqrt(3) */

		switch (i) {
		case P_WTE:
			sample_rng_uniform(&rng, p, (size_t)V * C, 0.02f * sq3);
			break;
		case P_WPE:
			sample_rng_uniform(&rng, p, param_sizes[i], 0.01f * sq3);
			break;
		case P_QKVW:
		case P_FCW:
			sample_rng_uniform(&rng, p, param_sizes[i], 0.02f * sq3);
			break;
		case P_ATTPROJW:
		case P_FCPROJW:
			sample_rng_uniform(&rng, p, param_sizes[i], 0.02f * sq3 / sqrtf(2.0f * L));
			break;
		case P_LN1W:
		case P_LN2W:
		case P_LNFW:
			for (size_t j = 0; j < param_sizes[i]; j++)
				p[j] = 1.0f;
			break;
		default: /* biases */
			break;
		}
	}
	sample_rng_close(&rng);

	cudaCheck(cudaMalloc((void **)&g.params_memory, num_parameters * sizeof(floatX)));
	cudaCheck(cudaMalloc((void **)&g.grads_memory, num_parameters * sizeof(floatX)));
	cudaCheck(cudaMalloc((void **)&g.master_weights, num_parameters * sizeof(float)));
	cudaCheck(cudaMalloc((void **)&g.m_memory, num_parameters * sizeof(float)));
	cudaCheck(cudaMalloc((void **)&g.v_memory, num_parameters * sizeof(float)));
	cudaCheck(cudaMemset(g.m_memory, 0, num_parameters * sizeof(float)));
	cudaCheck(cudaMemset(g.v_memory, 0, num_parameters * sizeof(float)));
	cudaCheck(cudaMemcpy(g.master_weights, h_master, num_parameters * sizeof(float), cudaMemcpyHostToDevice));
	copy_and_cast_kernel<<<CEIL_DIV(num_parameters, BLOCK), BLOCK, 0, stream>>>(g.params_memory, g.master_weights,
										 num_parameters);
	launchCheck();
	point_parameters(&g.params, g.params_memory);
	point_parameters(&g.grads, g.grads_memory);
	g.acts_bytes = point_activations(&g.acts, NULL, batch);
	cudaCheck(cudaMalloc(&g.acts_memory, g.acts_bytes));
	point_activations(&g.acts, (char *)g.acts_memory, batch);
	cudaCheck(cudaMalloc((void **)&g.inputs, (size_t)batch * T * sizeof(int)));
	cudaCheck(cudaMalloc((void **)&g.targets, (size_t)batch * T * sizeof(int)));
	/* the global norm's partial sums: a slice of the activations (the
	 * logits are dead once the backward pass has run) */
	grad_norm_squared = (float *)g.acts.output;
	if (save_every > 0) {
		ckpt_name = (char *)malloc(strlen(save_path) + 32);
		if (ckpt_name == NULL)
			sample_die(1, "out of host memory");
	}
	cudaCheck(cudaDeviceSynchronize());
	if (log_path)
		logf = open_log(log_path, &g, &dl, h_losses, stream);

	t0 = sample_now();
	for (int step = 1; step <= steps; step++) {
		const float dloss = 1.0f / (float)(batch * T * accum);
		float norm_sq, grad_norm, grad_scale, beta1_correction, beta2_correction;
		double loss = 0.0;

		cudaCheck(cudaMemsetAsync(g.grads_memory, 0, num_parameters * sizeof(floatX), stream));
		cudaCheck(cudaMemsetAsync(g.acts.losses, 0, (size_t)batch * T * sizeof(float), stream));
		for (int micro = 0; micro < accum; micro++) {
			dataloader_next_batch(&dl);
			/* synchronous copies: the previous micro-step's kernels
			 * (same stream, blocking) are done with the inputs */
			cudaCheck(cudaMemcpy(g.inputs, dl.inputs, (size_t)batch * T * sizeof(int), cudaMemcpyHostToDevice));
			cudaCheck(cudaMemcpy(g.targets, dl.targets, (size_t)batch * T * sizeof(int), cudaMemcpyHostToDevice));
			gpt_forward(&g, stream);
			gpt_backward(&g, dloss, stream);
		}
		cudaCheck(cudaMemcpyAsync(h_losses, g.acts.losses, (size_t)batch * T * sizeof(float), cudaMemcpyDeviceToHost,
					  stream));

		/* global gradient norm: partial sums into the activation slice */
		if (update_layers) {
			/* per tensor kind, all layers in one launch (llm.c) */
			cudaCheck(cudaMemsetAsync(grad_norm_squared, 0, NORM_BLOCKS * sizeof(float), stream));
			for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
				int slices = kind_slices(i);
				size_t n = param_sizes[i] / slices;
				global_norm_squared_kernel<floatX><<<dim3(NORM_BLOCKS / slices, slices), 256, 0, stream>>>(
					grad_norm_squared, g.grads_memory + param_offsets[i], n, (ptrdiff_t)n);
				launchCheck();
			}
		} else {
			global_norm_squared_kernel<<<NORM_BLOCKS, 256, 0, stream>>>(grad_norm_squared, g.grads_memory,
										    num_parameters);
			launchCheck();
		}
		global_norm_squared_aggregate_kernel<<<1, 1, 0, stream>>>(grad_norm_squared, NORM_BLOCKS);
		launchCheck();
		cudaCheck(cudaMemcpyAsync(&norm_sq, grad_norm_squared, sizeof(float), cudaMemcpyDeviceToHost, stream));
		cudaCheck(cudaStreamSynchronize(stream));
		grad_norm = sqrtf(norm_sq);
		grad_scale = grad_norm > clip ? clip / grad_norm : 1.0f;
		for (int i = 0; i < batch * T; i++)
			loss += h_losses[i];
		loss /= (double)(batch * T * accum);

		/* AdamW once per tensor on its sub-range, then the bf16 copy */
		beta1_correction = 1.0f - powf(beta1, (float)step);
		beta2_correction = 1.0f - powf(beta2, (float)step);
		for (int i = 0; update_layers && i < NUM_PARAMETER_TENSORS; i++) {
			/* llm.c's gpt2_update: one launch per tensor kind */
			unsigned int seed = random_u32(&rng_state);
			int slices = kind_slices(i);
			size_t off = param_offsets[i], n = param_sizes[i] / slices;
			int decay = i == P_WTE || i == P_WPE || i == P_QKVW || i == P_ATTPROJW || i == P_FCW || i == P_FCPROJW;
			dim3 grid((unsigned)CEIL_DIV(n, BLOCK), (unsigned)slices);

			if (step == 1) { /* init_state: the master weights from the bf16 parameters */
				copy_and_cast_kernel<<<grid, BLOCK, 0, stream>>>(g.master_weights + off, g.params_memory + off,
										 n, (ptrdiff_t)n, (ptrdiff_t)n);
				launchCheck();
			}
			adamw_kernel3<<<grid, BLOCK, 0, stream>>>(g.params_memory + off, g.master_weights + off,
								  g.grads_memory + off, g.m_memory + off, g.v_memory + off, n,
								  (ptrdiff_t)n, (ptrdiff_t)n, (ptrdiff_t)n, lr, beta1, beta2,
								  beta1_correction, beta2_correction, eps, decay ? wd : 0.0f,
								  grad_scale, seed);
			launchCheck();
		}
		for (int i = 0; !update_layers && i < NUM_PARAMETER_TENSORS; i++) {
			size_t off = param_offsets[i], n = param_sizes[i];
			/* decay the matrices (wte, wpe, qkvw, attprojw, fcw, fcprojw) */
			int decay = i == P_WTE || i == P_WPE || i == P_QKVW || i == P_ATTPROJW || i == P_FCW || i == P_FCPROJW;

			adamw_kernel<<<CEIL_DIV(n, BLOCK), BLOCK, 0, stream>>>(
				g.master_weights + off, g.grads_memory + off, g.m_memory + off, g.v_memory + off, n, lr, beta1,
				beta2, beta1_correction, beta2_correction, eps, decay ? wd : 0.0f, grad_scale);
			launchCheck();
			copy_and_cast_kernel<<<CEIL_DIV(n, BLOCK), BLOCK, 0, stream>>>(g.params_memory + off,
										     g.master_weights + off, n);
			launchCheck();
		}
		printf("step %d loss %.6f\n", step, loss);
		if (logf) {
			fprintf(logf, "s:%d trl:%.4f norm:%.4f\n", step, loss, grad_norm);
			fflush(logf);
		}
		if (save_every > 0 && step % save_every == 0) {
			sprintf(ckpt_name, "%s.step%d", save_path, step);
			save_checkpoint(ckpt_name, g.master_weights, h_master);
		}
	}
	cudaCheck(cudaStreamSynchronize(stream));
	fflush(stdout);
	fprintf(stderr, "gpt: ran %d steps on %s in %.2f s (%zu parameters, gelu fusion %d)\n", steps, prop.name,
		sample_now() - t0, num_parameters, gelu_fusion);
	if (save_path)
		save_checkpoint(save_path, g.master_weights, h_master);

	cudaCheck(cudaFree(g.params_memory));
	cudaCheck(cudaFree(g.grads_memory));
	cudaCheck(cudaFree(g.master_weights));
	cudaCheck(cudaFree(g.m_memory));
	cudaCheck(cudaFree(g.v_memory));
	cudaCheck(cudaFree(g.acts_memory));
	cudaCheck(cudaFree(g.inputs));
	cudaCheck(cudaFree(g.targets));
	cudaCheck(cudaFree(cublaslt_workspace));
	cublasCheck(cublasLtDestroy(cublaslt_handle));
	cublasCheck(cublasDestroy(cublas_handle));
	cudaCheck(cudaStreamDestroy(stream));
	dataloader_free(&dl);
	if (logf && fclose(logf) != 0)
		sample_die(1, "cannot write %s: %s", log_path, strerror(errno));
	free(h_master);
	free(h_losses);
	free(ckpt_name);
	return 0;
}
