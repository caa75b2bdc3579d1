/* SPDX-License-Identifier: MIT
 *
 * cublas.c - the CPU device's stand-in for libcublas.so.13: handles and the
 * GEMMs trainers call, with the toolkit's cublas_v2.h declarations.  Every
 * GEMM is a cublasLtMatmul of libcublasLt.so.13 (which this library links,
 * as the real cuBLAS does), so the kernels, their module and their launches
 * live in one place (cublasLt.c).
 *
 *   cublasCreate_v2/Destroy_v2      a handle holds a cublasLt handle (module
 *                                   loaded in the current context), stream
 *                                   (default 0: the legacy default stream),
 *                                   pointer mode, math mode, workspace
 *   cublasSet/GetStream_v2, SetWorkspace_v2, Set/GetMathMode,
 *   Set/GetPointerMode_v2, Set/GetAtomicsMode, Set/GetSmCountTarget,
 *   GetVersion_v2, GetProperty, GetCudartVersion, GetStatusName/String
 *   cublasSgemm_v2, cublasSgemmStridedBatched, cublasGemmEx,
 *   cublasGemmStridedBatchedEx      fp32/fp16/bf16 inputs (A and B alike),
 *                                   C of that type or fp32, compute
 *                                   CUBLAS_COMPUTE_32F[_FAST_*|_PEDANTIC];
 *                                   alpha/beta fp32, host or device pointers
 *
 * Math modes are recorded: the kernels always accumulate in fp32, which every
 * mode allows.  Everything else the header declares is a generated stub
 * (blas_unsupported.c) returning CUBLAS_STATUS_NOT_SUPPORTED.
 *
 * Contract: a handle is used by one host thread at a time (cuBLAS's rule).
 */
#include "simblas.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#define BLAS_MAGIC SIMBLAS_CUBLAS_HANDLE_MAGIC

struct cublasContext {
	uint32_t magic;                  /* first two fields: simblas_cublas_head */
	cublasLtHandle_t lt;
	cudaStream_t stream;
	cublasPointerMode_t pointer_mode;
	cublasMath_t math_mode;
	cublasAtomicsMode_t atomics_mode;
	int sm_count_target;
	void *workspace;
	size_t workspace_size;
};

_Static_assert(offsetof(struct cublasContext, lt) == offsetof(struct simblas_cublas_head, lt),
	       "a cuBLAS handle must begin with simblas_cublas_head (cuBLASLt reads it)");

static int handle_ok(cublasHandle_t h)
{
	return h && h->magic == BLAS_MAGIC;
}

SIMBLAS_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
	struct cublasContext *h;
	cublasStatus_t st;

	if (!handle)
		return CUBLAS_STATUS_INVALID_VALUE;
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUBLAS_STATUS_ALLOC_FAILED;
	st = cublasLtCreate(&h->lt);
	if (st != CUBLAS_STATUS_SUCCESS) {
		free(h);
		return st;
	}
	h->magic = BLAS_MAGIC;
	h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
	h->math_mode = CUBLAS_DEFAULT_MATH;
	h->atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
	*handle = h;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	cublasLtDestroy(handle->lt);
	handle->magic = 0;
	free(handle);
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!version)
		return CUBLAS_STATUS_INVALID_VALUE;
	*version = CUBLAS_VERSION;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
	return cublasLtGetProperty(type, value);
}

SIMBLAS_EXPORT size_t cublasGetCudartVersion(void)
{
	return cublasLtGetCudartVersion();
}

SIMBLAS_EXPORT const char *cublasGetStatusName(cublasStatus_t status)
{
	return cublasLtGetStatusName(status);
}

SIMBLAS_EXPORT const char *cublasGetStatusString(cublasStatus_t status)
{
	return cublasLtGetStatusString(status);
}

SIMBLAS_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
						    size_t workspaceSizeInBytes)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (workspaceSizeInBytes && !workspace)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->workspace = workspace; /* recorded; the kernels need none */
	handle->workspace_size = workspaceSizeInBytes;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->stream = streamId;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!streamId)
		return CUBLAS_STATUS_INVALID_VALUE;
	*streamId = handle->stream;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->pointer_mode;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->pointer_mode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->atomics_mode;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->atomics_mode = mode; /* the kernels use no atomics either way */
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->math_mode;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->math_mode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int *smCountTarget)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!smCountTarget)
		return CUBLAS_STATUS_INVALID_VALUE;
	*smCountTarget = handle->sm_count_target;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget)
{
	if (!handle_ok(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (smCountTarget < 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->sm_count_target = smCountTarget;
	return CUBLAS_STATUS_SUCCESS;
}

/* ---- GEMMs: one column-major strided-batched problem as a cublasLtMatmul */

struct gemm {
	cublasOperation_t ta, tb;
	int m, n, k;
	const void *alpha, *A, *B, *beta;
	void *C;
	cudaDataType at, bt, ct;
	int lda, ldb, ldc;
	long long sa, sb, sc;
	int batch;
	cublasComputeType_t compute;
};

static cublasStatus_t layout(cublasLtMatrixLayoutOpaque_t *l, cudaDataType t, int rows, int cols, int ld,
			     int batch, long long stride)
{
	int64_t s = stride;
	cublasStatus_t st = cublasLtMatrixLayoutInit(l, t, (uint64_t)rows, (uint64_t)cols, ld);

	if (st == CUBLAS_STATUS_SUCCESS && batch > 1) {
		st = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
		if (st == CUBLAS_STATUS_SUCCESS)
			st = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s,
							      sizeof(s));
	}
	return st;
}

static cublasStatus_t gemm_run(cublasHandle_t h, const struct gemm *g)
{
	cublasLtMatmulDescOpaque_t desc;
	cublasLtMatrixLayoutOpaque_t la, lb, lc;
	int32_t ta = g->ta, tb = g->tb, pm = h->pointer_mode;
	cublasStatus_t st;

	if (!handle_ok(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if ((g->ta != CUBLAS_OP_N && g->ta != CUBLAS_OP_T && g->ta != CUBLAS_OP_C) ||
	    (g->tb != CUBLAS_OP_N && g->tb != CUBLAS_OP_T && g->tb != CUBLAS_OP_C) || g->m < 0 || g->n < 0 ||
	    g->k < 0 || g->batch < 0 || g->lda < (g->ta == CUBLAS_OP_N ? (g->m > 1 ? g->m : 1) : (g->k > 1 ? g->k : 1)) ||
	    g->ldb < (g->tb == CUBLAS_OP_N ? (g->k > 1 ? g->k : 1) : (g->n > 1 ? g->n : 1)) ||
	    g->ldc < (g->m > 1 ? g->m : 1))
		return CUBLAS_STATUS_INVALID_VALUE;
	/* real types: conjugate-transpose is transpose */
	if (ta == CUBLAS_OP_C)
		ta = CUBLAS_OP_T;
	if (tb == CUBLAS_OP_C)
		tb = CUBLAS_OP_T;
	if (g->m == 0 || g->n == 0 || g->batch == 0)
		return CUBLAS_STATUS_SUCCESS;
	if (!g->alpha || !g->beta)
		return CUBLAS_STATUS_INVALID_VALUE;
	if ((st = cublasLtMatmulDescInit(&desc, g->compute, CUDA_R_32F)) ||
	    (st = cublasLtMatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta))) ||
	    (st = cublasLtMatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb))) ||
	    (st = cublasLtMatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof(pm))) ||
	    (st = layout(&la, g->at, ta == CUBLAS_OP_N ? g->m : g->k, ta == CUBLAS_OP_N ? g->k : g->m, g->lda,
			 g->batch, g->sa)) ||
	    (st = layout(&lb, g->bt, tb == CUBLAS_OP_N ? g->k : g->n, tb == CUBLAS_OP_N ? g->n : g->k, g->ldb,
			 g->batch, g->sb)) ||
	    (st = layout(&lc, g->ct, g->m, g->n, g->ldc, g->batch, g->sc)))
		return st;
	return cublasLtMatmul(h->lt, &desc, g->alpha, g->A, &la, g->B, &lb, g->beta, g->C, &lc, g->C, &lc, NULL,
			      h->workspace, h->workspace_size, h->stream);
}

SIMBLAS_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
					     cublasOperation_t transb, int m, int n, int k, const float *alpha,
					     const float *A, int lda, const float *B, int ldb, const float *beta,
					     float *C, int ldc)
{
	struct gemm g = {transa, transb, m, n, k, alpha, A, B, beta, C, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
			 lda, ldb, ldc, 0, 0, 0, 1, CUBLAS_COMPUTE_32F};
	return gemm_run(handle, &g);
}

SIMBLAS_EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
							cublasOperation_t transb, int m, int n, int k,
							const float *alpha, const float *A, int lda,
							long long int strideA, const float *B, int ldb,
							long long int strideB, const float *beta, float *C, int ldc,
							long long int strideC, int batchCount)
{
	struct gemm g = {transa, transb, m, n, k, alpha, A, B, beta, C, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
			 lda, ldb, ldc, strideA, strideB, strideC, batchCount, CUBLAS_COMPUTE_32F};
	return gemm_run(handle, &g);
}

SIMBLAS_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
					   cublasOperation_t transb, int m, int n, int k, const void *alpha,
					   const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype,
					   int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
					   cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
	struct gemm g = {transa, transb, m, n, k, alpha, A, B, beta, C, Atype, Btype, Ctype,
			 lda, ldb, ldc, 0, 0, 0, 1, computeType};
	(void)algo; /* one algorithm */
	return gemm_run(handle, &g);
}

SIMBLAS_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
							 cublasOperation_t transb, int m, int n, int k,
							 const void *alpha, const void *A, cudaDataType Atype,
							 int lda, long long int strideA, const void *B,
							 cudaDataType Btype, int ldb, long long int strideB,
							 const void *beta, void *C, cudaDataType Ctype, int ldc,
							 long long int strideC, int batchCount,
							 cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
	struct gemm g = {transa, transb, m, n, k, alpha, A, B, beta, C, Atype, Btype, Ctype,
			 lda, ldb, ldc, strideA, strideB, strideC, batchCount, computeType};
	(void)algo;
	return gemm_run(handle, &g);
}
