/* SPDX-License-Identifier: MIT
 *
 * hook_blas.c - cuBLAS calls that tell the gradient tracker what they write.
 *
 * A GEMM's kernels take their sizes in forms the launch decoder cannot read
 * as an extent: on a GPU, by-value structs (the pointer's extent reaches the
 * allocation's end); on the CPU device, row and column strides (the largest
 * count that fits every pointer is the matrix's row count, a fraction of
 * what it writes).  The call itself says it exactly: cuBLAS writes C (D for
 * cuBLASLt), the matrix its arguments lay out, and nothing else through a
 * pointer into it.  libddp.so exports the entry points of hook_blas.def
 * (LD_PRELOAD puts them before libcublas's, versioned or not); each wrapper
 * computes its output's byte extent (runtime/grad/ddp_matrix.c), declares it
 * to runtime/grad/ddp_sync.c for the calling thread (ddp_sync_libcall_enter),
 * calls the real function and ends the declaration.  The kernels cuBLAS
 * launches meanwhile, on this thread, reach libddp's launch hooks; an
 * argument pointing into the declared output gets that output as its exact
 * extent (so llm.c's weight-gradient GEMMs, one layer-slice of a range
 * each, can be reduced layer by layer: docs/overlap.md "Slices").
 *
 * An output that cannot be bounded (an empty or invalid shape, a leading
 * dimension below the row count, an unknown type or cuBLASLt order, a size
 * that overflows) declares nothing: the generic rule stays.  The real
 * functions are the next definitions after libddp.so (RTLD_NEXT), found at
 * first use; one that is missing (it cannot be: the program called it
 * through its own libcublas) is logged and answered
 * CUBLAS_STATUS_NOT_INITIALIZED.
 *
 * Contract: any thread; no lock; the wrappers never fail a call the real
 * function would run.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "ddp_log.h"
#include "ddp_matrix.h"
#include "ddp_sync.h"
#include "hook_resolve.h"

#define DDP_EXPORT __attribute__((visibility("default")))

enum blas_row {
#define BLAS_GEMM(name, I, T) BLAS_##name,
#define BLAS_GEMM_EX(name, I) BLAS_##name,
#define BLAS_GEMM_SB(name, I, T) BLAS_##name,
#define BLAS_GEMM_SB_EX(name, I) BLAS_##name,
#define BLAS_LT_MATMUL(name) BLAS_##name,
#include "hook_blas.def"
#undef BLAS_GEMM
#undef BLAS_GEMM_EX
#undef BLAS_GEMM_SB
#undef BLAS_GEMM_SB_EX
#undef BLAS_LT_MATMUL
	BLAS_cublasLtMatrixLayoutGetAttribute, /* called, not exported */
	BLAS_ROWS
};

static const char *const blas_name[BLAS_ROWS] = {
#define BLAS_GEMM(name, I, T) #name,
#define BLAS_GEMM_EX(name, I) #name,
#define BLAS_GEMM_SB(name, I, T) #name,
#define BLAS_GEMM_SB_EX(name, I) #name,
#define BLAS_LT_MATMUL(name) #name,
#include "hook_blas.def"
#undef BLAS_GEMM
#undef BLAS_GEMM_EX
#undef BLAS_GEMM_SB
#undef BLAS_GEMM_SB_EX
#undef BLAS_LT_MATMUL
	"cublasLtMatrixLayoutGetAttribute",
};

static void *blas_real_[BLAS_ROWS];

/* The real entry point of row r, or NULL (logged once per row). */
static void *blas_real(enum blas_row r)
{
	static uint8_t missing_logged[BLAS_ROWS];
	void *p = __atomic_load_n(&blas_real_[r], __ATOMIC_ACQUIRE);

	if (p)
		return p;
	p = hook_real_dlsym(RTLD_NEXT, blas_name[r]);
	if (p) {
		__atomic_store_n(&blas_real_[r], p, __ATOMIC_RELEASE);
		return p;
	}
	if (!__atomic_exchange_n(&missing_logged[r], 1, __ATOMIC_RELAXED))
		DDP_ERROR("libddp: %s was called but no cuBLAS library after libddp.so defines it; the call fails "
			  "(CUBLAS_STATUS_NOT_INITIALIZED)",
			  blas_name[r]);
	return NULL;
}

/* One attribute of a cuBLASLt layout, of exactly `size` bytes; -1 when it
 * cannot be read. */
static int layout_attr(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, void *out, size_t size)
{
	__typeof__(cublasLtMatrixLayoutGetAttribute) *get =
		(__typeof__(cublasLtMatrixLayoutGetAttribute) *)blas_real(BLAS_cublasLtMatrixLayoutGetAttribute);
	size_t written = 0;

	if (!get || get(l, a, out, size, &written) != CUBLAS_STATUS_SUCCESS || written != size)
		return -1;
	return 0;
}

/* Bytes a cuBLASLt layout spans (column- or row-major, strided batches);
 * 0 when it cannot be told. */
static uint64_t layout_bytes(cublasLtMatrixLayout_t l)
{
	uint32_t type;
	int32_t order, batch;
	uint64_t rows, cols;
	int64_t ld, stride;

	if (!l || layout_attr(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type) ||
	    layout_attr(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order) ||
	    layout_attr(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows) ||
	    layout_attr(l, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols) ||
	    layout_attr(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld) ||
	    layout_attr(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) ||
	    layout_attr(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride) ||
	    rows > INT64_MAX || cols > INT64_MAX)
		return 0;
	size_t es = ddp_cuda_dtype_bytes((int)type);
	if (order == CUBLASLT_ORDER_COL)
		return ddp_matrix_bytes((int64_t)rows, (int64_t)cols, ld, es, batch, stride);
	if (order == CUBLASLT_ORDER_ROW)
		return ddp_matrix_bytes((int64_t)cols, (int64_t)rows, ld, es, batch, stride);
	return 0;
}

/* The body of every wrapper: declare [out, out + bytes), call the real
 * entry point with `args`, end the declaration.  With gradient
 * synchronisation off nobody reads the declaration: straight through,
 * `bytes` (a cuBLASLt layout's seven queries) not even computed. */
#define BLAS_FORWARD(name, out, bytes, args) \
	do { \
		__typeof__(name) *real_ = (__typeof__(name) *)blas_real(BLAS_##name); \
		struct ddp_sync_libcall saved_; \
		uint64_t lo_ = (uint64_t)(uintptr_t)(out); \
		if (!real_) \
			return CUBLAS_STATUS_NOT_INITIALIZED; \
		if (!__atomic_load_n(&ddp_sync_on_, __ATOMIC_RELAXED)) \
			return real_ args; \
		ddp_sync_libcall_enter(#name, lo_, lo_ + (bytes), &saved_); \
		cublasStatus_t st_ = real_ args; \
		ddp_sync_libcall_leave(&saved_); \
		return st_; \
	} while (0)

#define BLAS_GEMM(name, I, T) \
	DDP_EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, \
				       I n, I k, const T *alpha, const T *A, I lda, const T *B, I ldb, \
				       const T *beta, T *C, I ldc) \
	{ \
		BLAS_FORWARD(name, C, ddp_matrix_bytes(m, n, ldc, sizeof(T), 1, 0), \
			     (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)); \
	}
#define BLAS_GEMM_EX(name, I) \
	DDP_EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, \
				       I n, I k, const void *alpha, const void *A, cudaDataType at, I lda, \
				       const void *B, cudaDataType bt, I ldb, const void *beta, void *C, \
				       cudaDataType ct, I ldc, cublasComputeType_t comp, \
				       cublasGemmAlgo_t algo) \
	{ \
		BLAS_FORWARD( \
			name, C, ddp_matrix_bytes(m, n, ldc, ddp_cuda_dtype_bytes(ct), 1, 0), \
			(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, comp, algo)); \
	}
#define BLAS_GEMM_SB(name, I, T) \
	DDP_EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, \
				       I n, I k, const T *alpha, const T *A, I lda, long long sa, const T *B, \
				       I ldb, long long sb, const T *beta, T *C, I ldc, long long sc, I batch) \
	{ \
		BLAS_FORWARD(name, C, ddp_matrix_bytes(m, n, ldc, sizeof(T), batch, sc), \
			     (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch)); \
	}
#define BLAS_GEMM_SB_EX(name, I) \
	DDP_EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, I m, \
				       I n, I k, const void *alpha, const void *A, cudaDataType at, I lda, \
				       long long sa, const void *B, cudaDataType bt, I ldb, long long sb, \
				       const void *beta, void *C, cudaDataType ct, I ldc, long long sc, \
				       I batch, cublasComputeType_t comp, cublasGemmAlgo_t algo) \
	{ \
		BLAS_FORWARD(name, C, ddp_matrix_bytes(m, n, ldc, ddp_cuda_dtype_bytes(ct), batch, sc), \
			     (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, \
			      sc, batch, comp, algo)); \
	}
/* D = epilogue(alpha op(A) op(B) + beta C): D's layout is the output (an
 * epilogue's bias or aux output has pointers of its own, outside D: those
 * keep the generic rule). */
#define BLAS_LT_MATMUL(name) \
	DDP_EXPORT cublasStatus_t name( \
		cublasLtHandle_t lt, cublasLtMatmulDesc_t desc, const void *alpha, const void *A, \
		cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta, \
		const void *C, cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc, \
		const cublasLtMatmulAlgo_t *algo, void *workspace, size_t ws_size, cudaStream_t stream) \
	{ \
		BLAS_FORWARD(name, D, layout_bytes(Ddesc), \
			     (lt, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, \
			      workspace, ws_size, stream)); \
	}
#include "hook_blas.def"
#undef BLAS_GEMM
#undef BLAS_GEMM_EX
#undef BLAS_GEMM_SB
#undef BLAS_GEMM_SB_EX
#undef BLAS_LT_MATMUL
