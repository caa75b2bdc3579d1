/* SPDX-License-Identifier: MIT
 *
 * cublasLt.c - the CPU device's stand-in for libcublasLt.so.13: the API
 * trainers use, with the toolkit's own cublasLt.h declarations (so the ABI is
 * the one programs compiled against the toolkit call).
 *
 *   cublasLtCreate/Destroy          a handle = the GEMM kernels' module, loaded
 *                                   in the context current at create time
 *   cublasLtMatmulDesc*, cublasLtMatrixLayout*, cublasLtMatmulPreference*
 *                                   descriptors: every attribute of the header
 *                                   is stored and read back with the header's
 *                                   size; Init_internal works in caller space
 *   cublasLtMatmulAlgoGetHeuristic  one algorithm (no workspace) for every
 *                                   problem cublasLtMatmul runs, else
 *                                   CUBLAS_STATUS_NOT_SUPPORTED
 *   cublasLtMatmul                  D = epilogue(alpha op(A) op(B) + beta C)
 *                                   as kernels launched on the caller's stream
 *
 * Supported: A, B of one type (fp32, fp16, bf16), C and D of that type or
 * fp32, compute CUBLAS_COMPUTE_32F (and its FAST_* and PEDANTIC forms: the
 * kernels always accumulate in fp32), scale type fp32, alpha/beta in host or
 * device pointer mode, column- or row-major layouts (each matrix its own),
 * strided batches, and the epilogues DEFAULT, BIAS, GELU, GELU_BIAS, GELU_AUX,
 * GELU_AUX_BIAS, DGELU (tanh-approximated GELU, as cuBLASLt) and BGRADB.
 * Semantics: t = alpha op(A) op(B) + beta C (+ bias[row]); GELU_AUX writes t
 * into the aux matrix, which has D's order, EPILOGUE_AUX_LD and
 * EPILOGUE_AUX_BATCH_STRIDE; DGELU: D = t * GELU'(aux); BGRADB: D = t and
 * bias[col] = sum over k of op(B)[k][col] (not scaled by alpha).  Bias and
 * aux have D's type.  Anything else (other types, scale pointers, amax,
 * vector pointer modes, ReLU epilogues, ...) is CUBLAS_STATUS_NOT_SUPPORTED
 * with one line on stderr naming what.
 *
 * Contract: a handle is used by one host thread at a time (as with cuBLAS);
 * descriptors are plain memory owned by the caller.
 */
#include "simblas.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#define LT_MAGIC_HANDLE 0x4c74486eu
#define LT_MAGIC_DESC 0x4c744465u
#define LT_MAGIC_LAYOUT 0x4c744c61u
#define LT_MAGIC_PREF 0x4c745072u

struct cublasLtContext {
	uint32_t magic;
	struct simblas_module mod;
};

struct lt_desc {
	uint32_t magic;
	int32_t compute_type, scale_type, pointer_mode, transa, transb, transc, fill_mode;
	uint32_t epilogue;
	int32_t sm_count, aux_type, bias_type, scale_mode[5], d_out_scale_mode;
	int8_t fast_accum;
	const void *bias;
	int64_t bias_bs;
	const void *aux;
	int64_t aux_ld, aux_bs, alpha_vec_bs;
	const void *a_scale, *b_scale, *c_scale, *d_scale, *amax_d, *aux_scale, *aux_amax, *d_out_scale;
	void *emulation;
};

struct lt_layout {
	uint32_t magic;
	uint32_t type;
	int32_t order, batch;
	uint64_t rows, cols;
	int64_t ld, batch_stride, plane_offset;
	uint32_t batch_mode;
};

struct lt_pref {
	uint32_t magic;
	uint32_t search_mode, reduction_mask, align[4];
	float max_waves;
	uint64_t max_workspace, impl_mask;
};

_Static_assert(sizeof(struct lt_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "matmul desc too large");
_Static_assert(sizeof(struct lt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout too large");
_Static_assert(sizeof(struct lt_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "preference too large");

struct attr {
	int id;
	unsigned short off, size;
};

#define DA(id, field) {CUBLASLT_MATMUL_DESC_##id, offsetof(struct lt_desc, field), sizeof(((struct lt_desc *)0)->field)}
static const struct attr desc_attrs[] = {
	DA(COMPUTE_TYPE, compute_type), DA(SCALE_TYPE, scale_type), DA(POINTER_MODE, pointer_mode),
	DA(TRANSA, transa), DA(TRANSB, transb), DA(TRANSC, transc), DA(FILL_MODE, fill_mode),
	DA(EPILOGUE, epilogue), DA(BIAS_POINTER, bias), DA(BIAS_BATCH_STRIDE, bias_bs),
	DA(EPILOGUE_AUX_POINTER, aux), DA(EPILOGUE_AUX_LD, aux_ld), DA(EPILOGUE_AUX_BATCH_STRIDE, aux_bs),
	DA(ALPHA_VECTOR_BATCH_STRIDE, alpha_vec_bs), DA(SM_COUNT_TARGET, sm_count),
	DA(A_SCALE_POINTER, a_scale), DA(B_SCALE_POINTER, b_scale), DA(C_SCALE_POINTER, c_scale),
	DA(D_SCALE_POINTER, d_scale), DA(AMAX_D_POINTER, amax_d), DA(EPILOGUE_AUX_DATA_TYPE, aux_type),
	DA(EPILOGUE_AUX_SCALE_POINTER, aux_scale), DA(EPILOGUE_AUX_AMAX_POINTER, aux_amax),
	DA(FAST_ACCUM, fast_accum), DA(BIAS_DATA_TYPE, bias_type), DA(A_SCALE_MODE, scale_mode[0]),
	DA(B_SCALE_MODE, scale_mode[1]), DA(C_SCALE_MODE, scale_mode[2]), DA(D_SCALE_MODE, scale_mode[3]),
	DA(EPILOGUE_AUX_SCALE_MODE, scale_mode[4]), DA(D_OUT_SCALE_POINTER, d_out_scale),
	DA(D_OUT_SCALE_MODE, d_out_scale_mode), DA(EMULATION_DESCRIPTOR, emulation),
};
#undef DA

#define LA(id, field) {CUBLASLT_MATRIX_LAYOUT_##id, offsetof(struct lt_layout, field), sizeof(((struct lt_layout *)0)->field)}
static const struct attr layout_attrs[] = {
	LA(TYPE, type), LA(ORDER, order), LA(ROWS, rows), LA(COLS, cols), LA(LD, ld), LA(BATCH_COUNT, batch),
	LA(STRIDED_BATCH_OFFSET, batch_stride), LA(PLANE_OFFSET, plane_offset), LA(BATCH_MODE, batch_mode),
};
#undef LA

#define PA(id, field) {CUBLASLT_MATMUL_PREF_##id, offsetof(struct lt_pref, field), sizeof(((struct lt_pref *)0)->field)}
static const struct attr pref_attrs[] = {
	PA(SEARCH_MODE, search_mode), PA(MAX_WORKSPACE_BYTES, max_workspace),
	PA(REDUCTION_SCHEME_MASK, reduction_mask), PA(MIN_ALIGNMENT_A_BYTES, align[0]),
	PA(MIN_ALIGNMENT_B_BYTES, align[1]), PA(MIN_ALIGNMENT_C_BYTES, align[2]),
	PA(MIN_ALIGNMENT_D_BYTES, align[3]), PA(MAX_WAVES_COUNT, max_waves), PA(IMPL_MASK, impl_mask),
};
#undef PA

static const struct attr *attr_find(const struct attr *t, size_t n, int id)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].id == id)
			return &t[i];
	return NULL;
}

static cublasStatus_t attr_set(void *obj, const struct attr *t, size_t n, int id, const void *buf, size_t size,
			       const char *what)
{
	const struct attr *a = attr_find(t, n, id);

	if (!a) {
		simblas_msg("%s: attribute %d is not known to the CPU device's cuBLASLt", what, id);
		return CUBLAS_STATUS_INVALID_VALUE;
	}
	if (!buf || size != a->size)
		return CUBLAS_STATUS_INVALID_VALUE;
	memcpy((char *)obj + a->off, buf, size);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t attr_get(const void *obj, const struct attr *t, size_t n, int id, void *buf, size_t size,
			       size_t *written, const char *what)
{
	const struct attr *a = attr_find(t, n, id);

	if (!a) {
		simblas_msg("%s: attribute %d is not known to the CPU device's cuBLASLt", what, id);
		return CUBLAS_STATUS_INVALID_VALUE;
	}
	if (size == 0) {
		if (!written)
			return CUBLAS_STATUS_INVALID_VALUE;
		*written = a->size;
		return CUBLAS_STATUS_SUCCESS;
	}
	if (!buf || size != a->size)
		return CUBLAS_STATUS_INVALID_VALUE;
	memcpy(buf, (const char *)obj + a->off, size);
	if (written)
		*written = a->size;
	return CUBLAS_STATUS_SUCCESS;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- handle, versions, status names */

/* The cuBLASLt context behind a handle: a cuBLASLt handle, or a cuBLAS
 * handle passed as one (simblas.h, simblas_cublas_head); NULL otherwise. */
static struct cublasLtContext *lt_context(cublasLtHandle_t h)
{
	if (!h)
		return NULL;
	if (h->magic == LT_MAGIC_HANDLE)
		return h;
	const struct simblas_cublas_head *b = (const struct simblas_cublas_head *)(const void *)h;
	if (b->magic == SIMBLAS_CUBLAS_HANDLE_MAGIC && b->lt && b->lt->magic == LT_MAGIC_HANDLE)
		return b->lt;
	return NULL;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle)
{
	struct cublasLtContext *h;
	int st;

	if (!lightHandle)
		return CUBLAS_STATUS_INVALID_VALUE;
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUBLAS_STATUS_ALLOC_FAILED;
	st = simblas_module_load(&h->mod);
	if (st != CUBLAS_STATUS_SUCCESS) {
		free(h);
		return (cublasStatus_t)st;
	}
	h->magic = LT_MAGIC_HANDLE;
	*lightHandle = h;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)
{
	if (!lightHandle || lightHandle->magic != LT_MAGIC_HANDLE)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	simblas_module_unload(&lightHandle->mod);
	lightHandle->magic = 0;
	free(lightHandle);
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT size_t cublasLtGetVersion(void)
{
	return CUBLAS_VERSION;
}

SIMBLAS_EXPORT size_t cublasLtGetCudartVersion(void)
{
	return CUDART_VERSION;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value)
{
	if (!value)
		return CUBLAS_STATUS_INVALID_VALUE;
	switch (type) {
	case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; break;
	case MINOR_VERSION: *value = CUBLAS_VER_MINOR; break;
	case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; break;
	default: return CUBLAS_STATUS_INVALID_VALUE;
	}
	return CUBLAS_STATUS_SUCCESS;
}

#define STATUSES(X)                                                                                            \
	X(CUBLAS_STATUS_SUCCESS, "the operation completed successfully")                                     \
	X(CUBLAS_STATUS_NOT_INITIALIZED, "the library was not initialized")                                  \
	X(CUBLAS_STATUS_ALLOC_FAILED, "the resource allocation failed")                                      \
	X(CUBLAS_STATUS_INVALID_VALUE, "an invalid numeric value was used as an argument")                   \
	X(CUBLAS_STATUS_ARCH_MISMATCH, "an absent device architectural feature is required")                 \
	X(CUBLAS_STATUS_MAPPING_ERROR, "an access to GPU memory space failed")                               \
	X(CUBLAS_STATUS_EXECUTION_FAILED, "the GPU program failed to execute")                               \
	X(CUBLAS_STATUS_INTERNAL_ERROR, "an internal operation failed")                                      \
	X(CUBLAS_STATUS_NOT_SUPPORTED, "the functionality requested is not supported")                       \
	X(CUBLAS_STATUS_LICENSE_ERROR, "the functionality requested requires some license")

SIMBLAS_EXPORT const char *cublasLtGetStatusName(cublasStatus_t status)
{
	switch (status) {
#define X(s, d) case s: return #s;
		STATUSES(X)
#undef X
	}
	return "CUBLAS_STATUS_UNKNOWN";
}

SIMBLAS_EXPORT const char *cublasLtGetStatusString(cublasStatus_t status)
{
	switch (status) {
#define X(s, d) case s: return d;
		STATUSES(X)
#undef X
	}
	return "unknown status";
}

/* ---- matmul descriptor */

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
							      cublasComputeType_t computeType,
							      cudaDataType_t scaleType)
{
	struct lt_desc *d = (struct lt_desc *)matmulDesc;

	if (!d)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (size < sizeof(*d))
		return CUBLAS_STATUS_ALLOC_FAILED;
	memset(d, 0, sizeof(*d));
	d->magic = LT_MAGIC_DESC;
	d->compute_type = computeType;
	d->scale_type = scaleType;
	d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
	d->transa = d->transb = d->transc = CUBLAS_OP_N;
	d->fill_mode = CUBLAS_FILL_MODE_FULL;
	d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
	d->aux_type = d->bias_type = -1;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
						       cublasComputeType_t computeType, cudaDataType_t scaleType)
{
	cublasLtMatmulDesc_t d;

	if (!matmulDesc)
		return CUBLAS_STATUS_INVALID_VALUE;
	d = malloc(sizeof(*d));
	if (!d)
		return CUBLAS_STATUS_ALLOC_FAILED;
	cublasLtMatmulDescInit_internal(d, sizeof(*d), computeType, scaleType);
	*matmulDesc = d;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
	free(matmulDesc);
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
							     cublasLtMatmulDescAttributes_t attr, const void *buf,
							     size_t sizeInBytes)
{
	if (!matmulDesc || ((struct lt_desc *)matmulDesc)->magic != LT_MAGIC_DESC)
		return CUBLAS_STATUS_INVALID_VALUE;
	return attr_set(matmulDesc, desc_attrs, NELEM(desc_attrs), attr, buf, sizeInBytes,
			"cublasLtMatmulDescSetAttribute");
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
							     cublasLtMatmulDescAttributes_t attr, void *buf,
							     size_t sizeInBytes, size_t *sizeWritten)
{
	if (!matmulDesc || ((struct lt_desc *)matmulDesc)->magic != LT_MAGIC_DESC)
		return CUBLAS_STATUS_INVALID_VALUE;
	return attr_get(matmulDesc, desc_attrs, NELEM(desc_attrs), attr, buf, sizeInBytes, sizeWritten,
			"cublasLtMatmulDescGetAttribute");
}

/* ---- matrix layout */

SIMBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
								cudaDataType type, uint64_t rows, uint64_t cols,
								int64_t ld)
{
	struct lt_layout *l = (struct lt_layout *)matLayout;

	if (!l)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (size < sizeof(*l))
		return CUBLAS_STATUS_ALLOC_FAILED;
	memset(l, 0, sizeof(*l));
	l->magic = LT_MAGIC_LAYOUT;
	l->type = type;
	l->order = CUBLASLT_ORDER_COL;
	l->batch = 1;
	l->rows = rows;
	l->cols = cols;
	l->ld = ld;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type,
							 uint64_t rows, uint64_t cols, int64_t ld)
{
	cublasLtMatrixLayout_t l;

	if (!matLayout)
		return CUBLAS_STATUS_INVALID_VALUE;
	l = malloc(sizeof(*l));
	if (!l)
		return CUBLAS_STATUS_ALLOC_FAILED;
	cublasLtMatrixLayoutInit_internal(l, sizeof(*l), type, rows, cols, ld);
	*matLayout = l;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(const cublasLtMatrixLayout_t matLayout)
{
	free(matLayout);
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
							       cublasLtMatrixLayoutAttribute_t attr,
							       const void *buf, size_t sizeInBytes)
{
	if (!matLayout || ((struct lt_layout *)matLayout)->magic != LT_MAGIC_LAYOUT)
		return CUBLAS_STATUS_INVALID_VALUE;
	return attr_set(matLayout, layout_attrs, NELEM(layout_attrs), attr, buf, sizeInBytes,
			"cublasLtMatrixLayoutSetAttribute");
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
							       cublasLtMatrixLayoutAttribute_t attr, void *buf,
							       size_t sizeInBytes, size_t *sizeWritten)
{
	if (!matLayout || ((struct lt_layout *)matLayout)->magic != LT_MAGIC_LAYOUT)
		return CUBLAS_STATUS_INVALID_VALUE;
	return attr_get(matLayout, layout_attrs, NELEM(layout_attrs), attr, buf, sizeInBytes, sizeWritten,
			"cublasLtMatrixLayoutGetAttribute");
}

/* ---- preference */

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size)
{
	struct lt_pref *p = (struct lt_pref *)pref;

	if (!p)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (size < sizeof(*p))
		return CUBLAS_STATUS_ALLOC_FAILED;
	memset(p, 0, sizeof(*p));
	p->magic = LT_MAGIC_PREF;
	p->reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
	p->align[0] = p->align[1] = p->align[2] = p->align[3] = 256;
	p->impl_mask = UINT64_MAX;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
	cublasLtMatmulPreference_t p;

	if (!pref)
		return CUBLAS_STATUS_INVALID_VALUE;
	p = malloc(sizeof(*p));
	if (!p)
		return CUBLAS_STATUS_ALLOC_FAILED;
	cublasLtMatmulPreferenceInit_internal(p, sizeof(*p));
	*pref = p;
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(const cublasLtMatmulPreference_t pref)
{
	free(pref);
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
								   cublasLtMatmulPreferenceAttributes_t attr,
								   const void *buf, size_t sizeInBytes)
{
	if (!pref || ((struct lt_pref *)pref)->magic != LT_MAGIC_PREF)
		return CUBLAS_STATUS_INVALID_VALUE;
	return attr_set(pref, pref_attrs, NELEM(pref_attrs), attr, buf, sizeInBytes,
			"cublasLtMatmulPreferenceSetAttribute");
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
								   cublasLtMatmulPreferenceAttributes_t attr,
								   void *buf, size_t sizeInBytes, size_t *sizeWritten)
{
	if (!pref || ((struct lt_pref *)pref)->magic != LT_MAGIC_PREF)
		return CUBLAS_STATUS_INVALID_VALUE;
	return attr_get(pref, pref_attrs, NELEM(pref_attrs), attr, buf, sizeInBytes, sizeWritten,
			"cublasLtMatmulPreferenceGetAttribute");
}

/* ---- the problem: checked once, shared by the heuristic and the matmul */

struct mat {
	long rs, cs, bs; /* element strides: row, column, batch */
};

struct problem {
	enum simblas_types types;
	int m, n, k, batch;
	struct mat a, b, c, d, aux;
	uint32_t epilogue;
};

static int type_pair(uint32_t ab, uint32_t cd, enum simblas_types *out)
{
	if (ab == CUDA_R_32F && cd == CUDA_R_32F)
		*out = ST_F32_F32;
	else if (ab == CUDA_R_16F && cd == CUDA_R_16F)
		*out = ST_F16_F16;
	else if (ab == CUDA_R_16F && cd == CUDA_R_32F)
		*out = ST_F16_F32;
	else if (ab == CUDA_R_16BF && cd == CUDA_R_16BF)
		*out = ST_BF16_BF16;
	else if (ab == CUDA_R_16BF && cd == CUDA_R_32F)
		*out = ST_BF16_F32;
	else
		return 0;
	return 1;
}

/* element (i, j) of a stored rows x cols matrix at i*rs + j*cs */
static void strides(const struct lt_layout *l, int64_t ld, struct mat *m)
{
	if (l->order == CUBLASLT_ORDER_ROW)
		m->rs = ld, m->cs = 1;
	else
		m->rs = 1, m->cs = ld;
	m->bs = l->batch_stride;
}

/* the strides of op(X) from X's stored strides */
static void apply_op(int op, struct mat *m)
{
	if (op != CUBLAS_OP_N) {
		long t = m->rs;
		m->rs = m->cs;
		m->cs = t;
	}
}

static int layout_ok(const struct lt_layout *l, const char *name)
{
	if (!l || l->magic != LT_MAGIC_LAYOUT) {
		simblas_msg("cublasLtMatmul: %s is not a matrix layout", name);
		return CUBLAS_STATUS_INVALID_VALUE;
	}
	if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW) {
		simblas_msg("cublasLtMatmul: %s has order %d; the CPU device supports CUBLASLT_ORDER_COL and _ROW",
			    name, l->order);
		return CUBLAS_STATUS_NOT_SUPPORTED;
	}
	if (l->plane_offset || l->batch_mode) {
		simblas_msg("cublasLtMatmul: %s is planar-complex or pointer-array batched; not supported by the "
			    "CPU device", name);
		return CUBLAS_STATUS_NOT_SUPPORTED;
	}
	if (l->batch < 1 || l->ld < 1 ||
	    (int64_t)(l->order == CUBLASLT_ORDER_ROW ? l->cols : l->rows) > l->ld || l->rows > INT32_MAX ||
	    l->cols > INT32_MAX)
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

static int unsupported(const char *what)
{
	simblas_msg("cublasLtMatmul: %s is not supported by the CPU device", what);
	return CUBLAS_STATUS_NOT_SUPPORTED;
}

static int problem_check(const struct lt_desc *d, const struct lt_layout *A, const struct lt_layout *B,
			 const struct lt_layout *C, const struct lt_layout *D, struct problem *p)
{
	int st;
	uint64_t am, ak, bk, bn;

	if (!d || d->magic != LT_MAGIC_DESC)
		return CUBLAS_STATUS_INVALID_VALUE;
	if ((st = layout_ok(A, "Adesc")) || (st = layout_ok(B, "Bdesc")) || (st = layout_ok(C, "Cdesc")) ||
	    (st = layout_ok(D, "Ddesc")))
		return st;
	switch (d->compute_type) {
	case CUBLAS_COMPUTE_32F: case CUBLAS_COMPUTE_32F_PEDANTIC: case CUBLAS_COMPUTE_32F_FAST_16F:
	case CUBLAS_COMPUTE_32F_FAST_16BF: case CUBLAS_COMPUTE_32F_FAST_TF32:
		break;
	default:
		return unsupported("a compute type other than CUBLAS_COMPUTE_32F[_FAST_*|_PEDANTIC]");
	}
	if (d->scale_type != CUDA_R_32F)
		return unsupported("a scale type other than CUDA_R_32F");
	if (d->pointer_mode != CUBLASLT_POINTER_MODE_HOST && d->pointer_mode != CUBLASLT_POINTER_MODE_DEVICE)
		return unsupported("a vector pointer mode");
	if (d->transc != CUBLAS_OP_N || d->fill_mode != CUBLAS_FILL_MODE_FULL)
		return unsupported("TRANSC or FILL_MODE other than the defaults");
	if ((d->transa != CUBLAS_OP_N && d->transa != CUBLAS_OP_T) ||
	    (d->transb != CUBLAS_OP_N && d->transb != CUBLAS_OP_T))
		return d->transa == CUBLAS_OP_C || d->transb == CUBLAS_OP_C ? unsupported("CUBLAS_OP_C")
									: CUBLAS_STATUS_INVALID_VALUE;
	if (d->a_scale || d->b_scale || d->c_scale || d->d_scale || d->amax_d || d->aux_scale || d->aux_amax ||
	    d->d_out_scale || d->emulation)
		return unsupported("a scale, amax or emulation attribute");
	if (A->type != B->type || C->type != D->type || !type_pair(A->type, D->type, &p->types))
		return unsupported("this combination of matrix types (A=B in fp32/fp16/bf16, C=D of that type "
				   "or fp32 are)");
	if ((d->bias_type != -1 && (uint32_t)d->bias_type != D->type) ||
	    (d->aux_type != -1 && (uint32_t)d->aux_type != D->type))
		return unsupported("a bias or aux data type other than D's");
	switch (d->epilogue) {
	case CUBLASLT_EPILOGUE_DEFAULT: case CUBLASLT_EPILOGUE_BIAS: case CUBLASLT_EPILOGUE_GELU:
	case CUBLASLT_EPILOGUE_GELU_BIAS: case CUBLASLT_EPILOGUE_GELU_AUX: case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
	case CUBLASLT_EPILOGUE_DGELU: case CUBLASLT_EPILOGUE_BGRADB:
		break;
	default: {
		char what[64];
		snprintf(what, sizeof(what), "epilogue %u", d->epilogue);
		return unsupported(what);
	}
	}
	p->epilogue = d->epilogue;
	am = d->transa == CUBLAS_OP_N ? A->rows : A->cols;
	ak = d->transa == CUBLAS_OP_N ? A->cols : A->rows;
	bk = d->transb == CUBLAS_OP_N ? B->rows : B->cols;
	bn = d->transb == CUBLAS_OP_N ? B->cols : B->rows;
	if (am != D->rows || bn != D->cols || ak != bk || C->rows != D->rows || C->cols != D->cols)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (A->batch != D->batch || B->batch != D->batch || C->batch != D->batch)
		return CUBLAS_STATUS_INVALID_VALUE;
	p->m = (int)D->rows;
	p->n = (int)D->cols;
	p->k = (int)ak;
	p->batch = D->batch;
	strides(A, A->ld, &p->a);
	apply_op(d->transa, &p->a);
	strides(B, B->ld, &p->b);
	apply_op(d->transb, &p->b);
	strides(C, C->ld, &p->c);
	strides(D, D->ld, &p->d);
	memset(&p->aux, 0, sizeof(p->aux));
	if (d->epilogue & 128) { /* GELU_AUX, GELU_AUX_BIAS, DGELU: the aux matrix */
		if (d->aux_ld < (D->order == CUBLASLT_ORDER_ROW ? p->n : p->m))
			return CUBLAS_STATUS_INVALID_VALUE;
		strides(D, d->aux_ld, &p->aux);
		p->aux.bs = d->aux_bs;
	}
	return CUBLAS_STATUS_SUCCESS;
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
							     cublasLtMatmulDesc_t operationDesc,
							     cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
							     cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
							     cublasLtMatmulPreference_t preference,
							     int requestedAlgoCount,
							     cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
							     int *returnAlgoCount)
{
	struct problem p;
	int st;

	if (!lt_context(lightHandle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (requestedAlgoCount < 1 || !heuristicResultsArray || !returnAlgoCount ||
	    (preference && ((struct lt_pref *)preference)->magic != LT_MAGIC_PREF))
		return CUBLAS_STATUS_INVALID_VALUE;
	st = problem_check((const struct lt_desc *)operationDesc, (const struct lt_layout *)Adesc,
			   (const struct lt_layout *)Bdesc, (const struct lt_layout *)Cdesc,
			   (const struct lt_layout *)Ddesc, &p);
	*returnAlgoCount = 0;
	if (st != CUBLAS_STATUS_SUCCESS)
		return (cublasStatus_t)st;
	memset(&heuristicResultsArray[0], 0, sizeof(heuristicResultsArray[0]));
	heuristicResultsArray[0].algo.data[0] = 1; /* "the CPU device's kernel" */
	heuristicResultsArray[0].workspaceSize = 0;
	heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
	heuristicResultsArray[0].wavesCount = 1.0f;
	*returnAlgoCount = 1;
	return CUBLAS_STATUS_SUCCESS;
}

static unsigned blocks(long n, unsigned per, unsigned cap)
{
	long b = (n + per - 1) / per;
	return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

SIMBLAS_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
					     const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
					     const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
					     const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
					     cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
					     void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream)
{
	const struct lt_desc *d = (const struct lt_desc *)computeDesc;
	struct problem p;
	float alpha_v = 0, beta_v = 0;
	const float *alpha_dev = NULL, *beta_dev = NULL;
	int st, gelu;
	long bias_bs, aux_rs, aux_cs, aux_bs;
	const void *bias;
	void *aux;

	(void)algo, (void)workspace, (void)workspaceSizeInBytes; /* one algorithm, no workspace */
	struct cublasLtContext *lt = lt_context(lightHandle);
	if (!lt)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	st = problem_check(d, (const struct lt_layout *)Adesc, (const struct lt_layout *)Bdesc,
			   (const struct lt_layout *)Cdesc, (const struct lt_layout *)Ddesc, &p);
	if (st != CUBLAS_STATUS_SUCCESS)
		return (cublasStatus_t)st;
	if (!alpha || !beta)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (d->pointer_mode == CUBLASLT_POINTER_MODE_DEVICE)
		alpha_dev = alpha, beta_dev = beta;
	else
		alpha_v = *(const float *)alpha, beta_v = *(const float *)beta;
	if (p.m == 0 || p.n == 0 || p.batch == 0)
		return CUBLAS_STATUS_SUCCESS;
	if (!D || (!C && (beta_dev || beta_v != 0.0f)))
		return CUBLAS_STATUS_INVALID_VALUE;
	if (!C)
		C = D; /* not read: beta is 0 */

	void *core[] = {&p.m, &p.n, &p.k, &p.batch, &alpha_v, &beta_v, &alpha_dev, &beta_dev, &A, &p.a.rs,
			&p.a.cs, &p.a.bs, &B, &p.b.rs, &p.b.cs, &p.b.bs, &C, &p.c.rs, &p.c.cs, &p.c.bs, &D,
			&p.d.rs, &p.d.cs, &p.d.bs};
	enum { NCORE = sizeof(core) / sizeof(core[0]) };
	void *args[NCORE + 8];
	unsigned gx = blocks(p.m, 16, 0x7fffffffu), gy = blocks(p.n, 16, 65535), gz = blocks(p.batch, 1, 65535);
	enum simblas_kernel k = SK_GEMM;

	memcpy(args, core, sizeof(core));
	bias = d->bias;
	bias_bs = d->bias_bs;
	aux = (void *)d->aux;
	aux_rs = p.aux.rs, aux_cs = p.aux.cs, aux_bs = p.aux.bs;
	gelu = (p.epilogue & CUBLASLT_EPILOGUE_GELU) != 0;
	switch (p.epilogue) {
	case CUBLASLT_EPILOGUE_BIAS: case CUBLASLT_EPILOGUE_GELU: case CUBLASLT_EPILOGUE_GELU_BIAS:
	case CUBLASLT_EPILOGUE_GELU_AUX: case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
		if (p.epilogue & CUBLASLT_EPILOGUE_BIAS) {
			if (!bias)
				return CUBLAS_STATUS_INVALID_VALUE;
		} else {
			bias = NULL;
		}
		if (p.epilogue & 128) {
			if (!aux)
				return CUBLAS_STATUS_INVALID_VALUE;
		} else {
			aux = NULL;
		}
		k = SK_GEMM_BIAS_GELU;
		args[NCORE + 0] = &bias;
		args[NCORE + 1] = &bias_bs;
		args[NCORE + 2] = &gelu;
		args[NCORE + 3] = &aux;
		args[NCORE + 4] = &aux_rs;
		args[NCORE + 5] = &aux_cs;
		args[NCORE + 6] = &aux_bs;
		break;
	case CUBLASLT_EPILOGUE_DGELU:
		if (!aux)
			return CUBLAS_STATUS_INVALID_VALUE;
		k = SK_GEMM_DGELU;
		args[NCORE + 0] = &aux;
		args[NCORE + 1] = &aux_rs;
		args[NCORE + 2] = &aux_cs;
		args[NCORE + 3] = &aux_bs;
		break;
	case CUBLASLT_EPILOGUE_BGRADB:
		if (!bias)
			return CUBLAS_STATUS_INVALID_VALUE;
		break;
	default:
		break;
	}
	st = simblas_launch(&lt->mod, k, p.types, gx, gy, gz, 16, 16, stream, args);
	if (st == CUBLAS_STATUS_SUCCESS && p.epilogue == CUBLASLT_EPILOGUE_BGRADB) {
		void *dbias = (void *)bias;
		void *bg[] = {&p.n, &p.k, &p.batch, &B, &p.b.rs, &p.b.cs, &p.b.bs, &dbias, &bias_bs};
		st = simblas_launch(&lt->mod, SK_BIAS_GRAD_B, p.types, blocks(p.n, 256, 0x7fffffffu),
				    blocks(p.batch, 1, 65535), 1, 256, 1, stream, bg);
	}
	return (cublasStatus_t)st;
}
