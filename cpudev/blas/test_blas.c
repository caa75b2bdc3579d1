/* SPDX-License-Identifier: MIT
 *
 * test_blas.c - the CPU device's cuBLAS and cuBLASLt stand-ins against a
 * reference matmul on the host (double), with the Driver API only (no
 * cudart): linked with -lcublas -lcublasLt against the stand-ins' folder,
 * as a program built against the toolkit would be.
 *
 * Every case uses odd sizes (m 37, n 29, k 19: no multiple of a 16 tile),
 * leading dimensions and batch strides larger than minimal, alpha 0.75 and
 * beta -0.5, alternating host and device pointer modes; outputs are checked
 * element by element, and the padding around every output must keep its
 * sentinel (a wrong leading dimension or stride writes there).
 *
 *   classic_*   cublasSgemm_v2, cublasSgemmStridedBatched, cublasGemmEx,
 *               cublasGemmStridedBatchedEx: every transpose x type pair
 *   lt_matrix   cublasLtMatmul: every transpose x type pair x epilogue
 *               (DEFAULT BIAS GELU GELU_BIAS GELU_AUX GELU_AUX_BIAS DGELU
 *               BGRADB) x batched or not, C separate or in place
 *   lt_row_major  CUBLASLT_ORDER_ROW layouts
 *   stream_order  the GEMM runs on the caller's stream (a held stream holds it)
 *   attributes, heuristic, unsupported  descriptors read back, the
 *               heuristic's answer, NOT_SUPPORTED for other features and stubs
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#define CU_OK(x) REQUIRE((x) == CUDA_SUCCESS)
#define BL_OK(x) REQUIRE((x) == CUBLAS_STATUS_SUCCESS)

enum { M = 37, N = 29, K = 19, BATCH = 3 };
static const float ALPHA = 0.75f, BETA = -0.5f;
static const double SENTINEL = 1234.0;

static CUcontext ctx;
static CUstream stream;

static void setup(void)
{
	if (!ctx) {
		/* the stand-in must be what got loaded, not the toolkit's library */
		Dl_info info;
		REQUIRE(dladdr((void *)cublasLtCreate, &info) && info.dli_fname);
		if (!strstr(info.dli_fname, "cpudev/lib/libcublasLt.so"))
			printf("# cublasLtCreate comes from %s, not the CPU device's stand-in\n", info.dli_fname);
		REQUIRE(strstr(info.dli_fname, "cpudev/lib/libcublasLt.so"));
		REQUIRE(cuInit(0) == CUDA_SUCCESS);
		REQUIRE(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
		REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
		REQUIRE(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
	}
	REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

/* ---- element types on the host */

static size_t tsize(cudaDataType t)
{
	return t == CUDA_R_32F ? 4 : 2;
}

static float half_to_f(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;
	float f;
	if (e == 0) {
		f = ldexpf((float)m, -24);
		return s ? -f : f;
	}
	u = e == 31 ? s | 0x7f800000u | (m << 13) : s | ((e + 112) << 23) | (m << 13);
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t f_to_half(float f)
{
	/* round to nearest even through the exact double value */
	double a = fabs((double)f);
	uint16_t s = signbit(f) ? 0x8000 : 0;
	int e;
	if (a >= 65520.0)
		return s | 0x7c00;
	if (a < ldexp(1.0, -14)) /* subnormal: multiples of 2^-24 */
		return s | (uint16_t)nearbyint(a * ldexp(1.0, 24));
	frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
	double mant = nearbyint(ldexp(a, 11 - e)); /* 11 significant bits */
	if (mant >= 2048.0)
		mant /= 2, e++;
	return s | (uint16_t)(((e - 1 + 15) << 10) | ((uint16_t)mant & 1023));
}

static float bf16_to_f(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t f_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static double get_el(const void *p, cudaDataType t, size_t i)
{
	if (t == CUDA_R_32F)
		return ((const float *)p)[i];
	if (t == CUDA_R_16F)
		return half_to_f(((const uint16_t *)p)[i]);
	return bf16_to_f(((const uint16_t *)p)[i]);
}

static void set_el(void *p, cudaDataType t, size_t i, double v)
{
	if (t == CUDA_R_32F)
		((float *)p)[i] = (float)v;
	else if (t == CUDA_R_16F)
		((uint16_t *)p)[i] = f_to_half((float)v);
	else
		((uint16_t *)p)[i] = f_to_bf16((float)v);
}

static double eps_of(cudaDataType t)
{
	return t == CUDA_R_32F ? 1e-6 : t == CUDA_R_16F ? 1.0 / 1024 : 1.0 / 128;
}

static uint64_t rng_state = 42;
static double rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 40) / (double)(1ull << 24) * 2.0 - 1.0;
}

/* ---- a matrix: host image (elements as stored), device copy */

struct mat {
	cudaDataType t;
	int rows, cols, batch, row_major;
	long ld, bs; /* leading dimension, batch stride (elements) */
	size_t n;    /* elements in the buffer */
	void *h;
	CUdeviceptr d;
};

static size_t at(const struct mat *m, int z, int i, int j)
{
	return (size_t)(z * m->bs + (m->row_major ? i * m->ld + j : i + j * m->ld));
}

static void mat_make(struct mat *m, cudaDataType t, int rows, int cols, int batch, int row_major, int fill)
{
	m->t = t;
	m->rows = rows, m->cols = cols, m->batch = batch, m->row_major = row_major;
	m->ld = (row_major ? cols : rows) + 3;
	m->bs = batch > 1 ? m->ld * (row_major ? rows : cols) + 7 : 0;
	m->n = (size_t)(batch > 1 ? m->bs * batch : m->ld * (row_major ? rows : cols));
	m->h = malloc(m->n * tsize(t));
	REQUIRE(m->h);
	for (size_t i = 0; i < m->n; i++)
		set_el(m->h, t, i, SENTINEL);
	if (fill)
		for (int z = 0; z < batch; z++)
			for (int i = 0; i < rows; i++)
				for (int j = 0; j < cols; j++)
					set_el(m->h, t, at(m, z, i, j), rnd());
	CU_OK(cuMemAlloc(&m->d, m->n * tsize(t)));
	CU_OK(cuMemcpyHtoD(m->d, m->h, m->n * tsize(t)));
}

static void mat_free(struct mat *m)
{
	cuMemFree(m->d);
	free(m->h);
	memset(m, 0, sizeof(*m));
}

/* a vector of n per batch, batch stride n + 5 when batched */
static void vec_make(struct mat *v, cudaDataType t, int n, int batch, int fill)
{
	v->t = t, v->rows = n, v->cols = 1, v->batch = batch, v->row_major = 0;
	v->ld = n;
	v->bs = batch > 1 ? n + 5 : 0;
	v->n = (size_t)(batch > 1 ? v->bs * batch : n);
	v->h = malloc(v->n * tsize(t));
	REQUIRE(v->h);
	for (size_t i = 0; i < v->n; i++)
		set_el(v->h, t, i, SENTINEL);
	if (fill)
		for (int z = 0; z < batch; z++)
			for (int i = 0; i < n; i++)
				set_el(v->h, t, (size_t)(z * v->bs + i), rnd());
	CU_OK(cuMemAlloc(&v->d, v->n * tsize(t)));
	CU_OK(cuMemcpyHtoD(v->d, v->h, v->n * tsize(t)));
}

/* expected[] over the whole buffer (sentinels where nothing is written) */
static double *expect_init(const struct mat *m)
{
	double *e = malloc(m->n * sizeof(double));
	for (size_t i = 0; i < m->n; i++)
		e[i] = get_el(m->h, m->t, i);
	return e;
}

/* Compares the device buffer with expected[] (tol[] per element, 0 = exact). */
static int compare(const char *what, const struct mat *m, const double *expect, const double *tol)
{
	void *got = malloc(m->n * tsize(m->t));
	int bad = 0;

	CU_OK(cuMemcpyDtoH(got, m->d, m->n * tsize(m->t)));
	for (size_t i = 0; i < m->n; i++) {
		double g = get_el(got, m->t, i), e = expect[i];
		if (!(fabs(g - e) <= tol[i])) {
			if (bad < 3)
				printf("# %s: element %zu is %.9g, expected %.9g +- %.3g\n", what, i, g, e, tol[i]);
			bad++;
		}
	}
	free(got);
	if (bad)
		printf("# %s: %d of %zu elements wrong\n", what, bad, m->n);
	return bad == 0;
}

static double gelu(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double gelu_grad(double x)
{
	double c = 0.7978845608028654, t = tanh(c * (x + 0.044715 * x * x * x));
	return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

/* ---- one GEMM problem, checked against the host */

enum epi { E_DEFAULT, E_BIAS, E_GELU, E_GELU_BIAS, E_GELU_AUX, E_GELU_AUX_BIAS, E_DGELU, E_BGRADB, E_COUNT };
static const cublasLtEpilogue_t lt_epi[E_COUNT] = {
	CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_BIAS,
	CUBLASLT_EPILOGUE_GELU_AUX, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU,
	CUBLASLT_EPILOGUE_BGRADB};
static const char *const epi_name[E_COUNT] = {"DEFAULT", "BIAS", "GELU", "GELU_BIAS", "GELU_AUX",
					      "GELU_AUX_BIAS", "DGELU", "BGRADB"};

struct problem {
	cudaDataType ab, cd;
	int ta, tb, batch, row_major, in_place, device_ptrs;
	enum epi epi;
	struct mat A, B, C, D, bias, aux;
};

static void problem_make(struct problem *p)
{
	int ar = p->ta ? K : M, ac = p->ta ? M : K, br = p->tb ? N : K, bc = p->tb ? K : N;

	mat_make(&p->A, p->ab, ar, ac, p->batch, p->row_major, 1);
	mat_make(&p->B, p->ab, br, bc, p->batch, p->row_major, 1);
	mat_make(&p->C, p->cd, M, N, p->batch, p->row_major, 1);
	if (!p->in_place)
		mat_make(&p->D, p->cd, M, N, p->batch, p->row_major, 0);
	else
		p->D = p->C;
	if (p->epi == E_BIAS || p->epi == E_GELU_BIAS || p->epi == E_GELU_AUX_BIAS)
		vec_make(&p->bias, p->cd, M, p->batch, 1);
	if (p->epi == E_BGRADB)
		vec_make(&p->bias, p->cd, N, p->batch, 0);
	if (p->epi == E_GELU_AUX || p->epi == E_GELU_AUX_BIAS || p->epi == E_DGELU)
		mat_make(&p->aux, p->cd, M, N, p->batch, p->row_major, p->epi == E_DGELU);
}

static void problem_free(struct problem *p)
{
	mat_free(&p->A);
	mat_free(&p->B);
	if (!p->in_place)
		mat_free(&p->D);
	mat_free(&p->C);
	if (p->bias.h)
		mat_free(&p->bias);
	if (p->aux.h)
		mat_free(&p->aux);
}

static double opA(const struct problem *p, int z, int i, int q)
{
	return get_el(p->A.h, p->ab, p->ta ? at(&p->A, z, q, i) : at(&p->A, z, i, q));
}

static double opB(const struct problem *p, int z, int q, int j)
{
	return get_el(p->B.h, p->ab, p->tb ? at(&p->B, z, j, q) : at(&p->B, z, q, j));
}

/* Checks D (and aux, bias) after the GEMM ran. */
static int problem_check(const char *what, struct problem *p)
{
	double *eD = expect_init(&p->D), *tD = calloc(p->D.n, sizeof(double));
	double *eX = p->aux.h ? expect_init(&p->aux) : NULL, *tX = p->aux.h ? calloc(p->aux.n, sizeof(double)) : NULL;
	double *eV = p->bias.h ? expect_init(&p->bias) : NULL, *tV = p->bias.h ? calloc(p->bias.n, sizeof(double)) : NULL;
	double ed = eps_of(p->cd);
	int ok = 1;
	char name[160];

	for (int z = 0; z < p->batch; z++)
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++) {
				double s = 0, mag = 0, c = get_el(p->C.h, p->cd, at(&p->C, z, i, j)), v, scale;
				for (int q = 0; q < K; q++) {
					double t = opA(p, z, i, q) * opB(p, z, q, j);
					s += t;
					mag += fabs(t);
				}
				v = ALPHA * s + BETA * c;
				scale = fabs(ALPHA) * mag + fabs(BETA * c) + 1e-3;
				if (p->epi == E_BIAS || p->epi == E_GELU_BIAS || p->epi == E_GELU_AUX_BIAS) {
					double b = get_el(p->bias.h, p->cd, (size_t)(z * p->bias.bs + i));
					v += b;
					scale += fabs(b);
				}
				if (p->epi == E_GELU_AUX || p->epi == E_GELU_AUX_BIAS) {
					size_t x = at(&p->aux, z, i, j);
					eX[x] = v;
					tX[x] = 2e-5 * scale + ed * fabs(v);
				}
				if (p->epi == E_GELU || p->epi == E_GELU_BIAS || p->epi == E_GELU_AUX ||
				    p->epi == E_GELU_AUX_BIAS)
					v = gelu(v), scale *= 1.2;
				if (p->epi == E_DGELU) {
					double g = gelu_grad(get_el(p->aux.h, p->cd, at(&p->aux, z, i, j)));
					v *= g, scale *= fabs(g) + 1e-3;
				}
				size_t d = at(&p->D, z, i, j);
				eD[d] = v;
				tD[d] = 2e-5 * scale + ed * fabs(v);
			}
	if (p->epi == E_BGRADB)
		for (int z = 0; z < p->batch; z++)
			for (int j = 0; j < N; j++) {
				double s = 0, mag = 0;
				for (int q = 0; q < K; q++)
					s += opB(p, z, q, j), mag += fabs(opB(p, z, q, j));
				size_t x = (size_t)(z * p->bias.bs + j);
				eV[x] = s;
				tV[x] = 2e-5 * (mag + 1e-3) + ed * fabs(s);
			}
	snprintf(name, sizeof(name), "%s D", what);
	ok &= compare(name, &p->D, eD, tD);
	if (eX && p->epi != E_DGELU) {
		snprintf(name, sizeof(name), "%s aux", what);
		ok &= compare(name, &p->aux, eX, tX);
	}
	if (eV && p->epi == E_BGRADB) {
		snprintf(name, sizeof(name), "%s bias gradient", what);
		ok &= compare(name, &p->bias, eV, tV);
	}
	free(eD), free(tD), free(eX), free(tX), free(eV), free(tV);
	return ok;
}

/* alpha, beta as host pointers or in device memory */
static CUdeviceptr scalars_dev;
static void scalars(int device, const void **alpha, const void **beta)
{
	static const float host[2] = {0.75f, -0.5f};
	if (!device) {
		*alpha = &host[0], *beta = &host[1];
		return;
	}
	if (!scalars_dev) {
		CU_OK(cuMemAlloc(&scalars_dev, sizeof(host)));
		CU_OK(cuMemcpyHtoD(scalars_dev, host, sizeof(host)));
	}
	*alpha = (const void *)(uintptr_t)scalars_dev, *beta = (const void *)(uintptr_t)(scalars_dev + 4);
}

static const cudaDataType pair_ab[] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16BF, CUDA_R_16BF};
static const cudaDataType pair_cd[] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_32F};
static const char *const pair_name[] = {"f32/f32", "f16/f16", "f16/f32", "bf16/bf16", "bf16/f32"};
enum { NPAIRS = 5 };

/* ---- the classic API */

enum classic { SGEMM, SGEMM_BATCHED, GEMM_EX, GEMM_BATCHED_EX };

static void run_classic(enum classic api)
{
	cublasHandle_t h;
	int cases = 0, good = 0;

	setup();
	BL_OK(cublasCreate(&h));
	BL_OK(cublasSetStream(h, stream));
	for (int pair = 0; pair < (api == SGEMM || api == SGEMM_BATCHED ? 1 : NPAIRS); pair++)
		for (int tr = 0; tr < 4; tr++) {
			struct problem p = {pair_ab[pair], pair_cd[pair], tr & 1, tr >> 1,
					    api == SGEMM_BATCHED || api == GEMM_BATCHED_EX ? BATCH : 1, 0, 1,
					    (tr + pair) & 1, E_DEFAULT, {0}, {0}, {0}, {0}, {0}, {0}};
			const void *alpha, *beta;
			cublasOperation_t ta = p.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
			cublasStatus_t st;
			char what[96];

			problem_make(&p);
			scalars(p.device_ptrs, &alpha, &beta);
			BL_OK(cublasSetPointerMode(h, p.device_ptrs ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST));
			void *A = (void *)(uintptr_t)p.A.d, *B = (void *)(uintptr_t)p.B.d, *C = (void *)(uintptr_t)p.C.d;
			switch (api) {
			case SGEMM:
				st = cublasSgemm(h, ta, tb, M, N, K, alpha, A, (int)p.A.ld, B, (int)p.B.ld, beta, C,
						 (int)p.C.ld);
				break;
			case SGEMM_BATCHED:
				st = cublasSgemmStridedBatched(h, ta, tb, M, N, K, alpha, A, (int)p.A.ld, p.A.bs, B,
							       (int)p.B.ld, p.B.bs, beta, C, (int)p.C.ld, p.C.bs, BATCH);
				break;
			case GEMM_EX:
				st = cublasGemmEx(h, ta, tb, M, N, K, alpha, A, p.ab, (int)p.A.ld, B, p.ab, (int)p.B.ld,
						  beta, C, p.cd, (int)p.C.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
				break;
			default:
				st = cublasGemmStridedBatchedEx(h, ta, tb, M, N, K, alpha, A, p.ab, (int)p.A.ld, p.A.bs,
								B, p.ab, (int)p.B.ld, p.B.bs, beta, C, p.cd,
								(int)p.C.ld, p.C.bs, BATCH, CUBLAS_COMPUTE_32F,
								CUBLAS_GEMM_DEFAULT);
				break;
			}
			snprintf(what, sizeof(what), "%s %c%c %s pointers", pair_name[pair], p.ta ? 'T' : 'N',
				 p.tb ? 'T' : 'N', p.device_ptrs ? "device" : "host");
			CHECK_EQ_INT(st, CUBLAS_STATUS_SUCCESS);
			CU_OK(cuStreamSynchronize(stream));
			cases++;
			good += problem_check(what, &p);
			problem_free(&p);
		}
	BL_OK(cublasDestroy(h));
	printf("# %d of %d cases right\n", good, cases);
	CHECK_EQ_INT(good, cases);
}

TEST(classic_sgemm) { run_classic(SGEMM); }
TEST(classic_sgemm_strided_batched) { run_classic(SGEMM_BATCHED); }
TEST(classic_gemm_ex) { run_classic(GEMM_EX); }
TEST(classic_gemm_strided_batched_ex) { run_classic(GEMM_BATCHED_EX); }

/* ---- cuBLASLt */

static cublasStatus_t lt_layout(cublasLtMatrixLayout_t *l, const struct mat *m)
{
	cublasStatus_t st = cublasLtMatrixLayoutCreate(l, m->t, (uint64_t)m->rows, (uint64_t)m->cols, m->ld);
	int32_t order = m->row_major ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL, batch = m->batch;
	int64_t bs = m->bs;

	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order));
	if (st == CUBLAS_STATUS_SUCCESS && batch > 1)
		st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
	if (st == CUBLAS_STATUS_SUCCESS && batch > 1)
		st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &bs,
						      sizeof(bs));
	return st;
}

/* Runs p through cublasLtMatmul (with the heuristic's algorithm). */
static int run_lt(cublasLtHandle_t lt, struct problem *p, const char *what)
{
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc, ld;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t res;
	int32_t ta = p->ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	int32_t pm = p->device_ptrs ? CUBLASLT_POINTER_MODE_DEVICE : CUBLASLT_POINTER_MODE_HOST;
	uint32_t epi = lt_epi[p->epi];
	uint64_t ws = 1 << 20;
	const void *alpha, *beta;
	int nres = 0, ok;

	problem_make(p);
	scalars(p->device_ptrs, &alpha, &beta);
	BL_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
	BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
	BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof(pm)));
	BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
	if (p->bias.h) {
		void *b = (void *)(uintptr_t)p->bias.d;
		int64_t bs = p->bias.bs;
		BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b)));
		if (p->batch > 1)
			BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bs,
							     sizeof(bs)));
	}
	if (p->aux.h) {
		void *x = (void *)(uintptr_t)p->aux.d;
		int64_t xld = p->aux.ld, xbs = p->aux.bs;
		BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &x, sizeof(x)));
		BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &xld, sizeof(xld)));
		BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &xbs,
						     sizeof(xbs)));
	}
	BL_OK(lt_layout(&la, &p->A));
	BL_OK(lt_layout(&lb, &p->B));
	BL_OK(lt_layout(&lc, &p->C));
	BL_OK(lt_layout(&ld, &p->D));
	BL_OK(cublasLtMatmulPreferenceCreate(&pref));
	BL_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
	BL_OK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 1, &res, &nres));
	REQUIRE(nres == 1 && res.state == CUBLAS_STATUS_SUCCESS);
	CHECK_EQ_INT(cublasLtMatmul(lt, desc, alpha, (void *)(uintptr_t)p->A.d, la, (void *)(uintptr_t)p->B.d, lb,
				    beta, (void *)(uintptr_t)p->C.d, lc, (void *)(uintptr_t)p->D.d, ld, &res.algo,
				    NULL, 0, stream),
		     CUBLAS_STATUS_SUCCESS);
	CU_OK(cuStreamSynchronize(stream));
	ok = problem_check(what, p);
	cublasLtMatmulPreferenceDestroy(pref);
	cublasLtMatrixLayoutDestroy(la);
	cublasLtMatrixLayoutDestroy(lb);
	cublasLtMatrixLayoutDestroy(lc);
	cublasLtMatrixLayoutDestroy(ld);
	cublasLtMatmulDescDestroy(desc);
	problem_free(p);
	return ok;
}

TEST(lt_matrix)
{
	cublasLtHandle_t lt;
	int cases = 0, good = 0, n = 0;

	setup();
	BL_OK(cublasLtCreate(&lt));
	for (int pair = 0; pair < NPAIRS; pair++)
		for (int tr = 0; tr < 4; tr++)
			for (int e = 0; e < E_COUNT; e++)
				for (int batched = 0; batched < 2; batched++, n++) {
					struct problem p = {pair_ab[pair], pair_cd[pair], tr & 1, tr >> 1,
							    batched ? BATCH : 1, 0, (n / 2) & 1, n & 1, (enum epi)e,
							    {0}, {0}, {0}, {0}, {0}, {0}};
					char what[128];
					snprintf(what, sizeof(what), "%s %c%c %s %s%s%s", pair_name[pair],
						 p.ta ? 'T' : 'N', p.tb ? 'T' : 'N', epi_name[e],
						 batched ? "batched" : "single", p.in_place ? " in place" : "",
						 p.device_ptrs ? " device pointers" : "");
					cases++;
					good += run_lt(lt, &p, what);
				}
	BL_OK(cublasLtDestroy(lt));
	printf("# %d of %d cases right\n", good, cases);
	CHECK_EQ_INT(good, cases);
}

TEST(lt_row_major)
{
	cublasLtHandle_t lt;
	int cases = 0, good = 0;

	setup();
	BL_OK(cublasLtCreate(&lt));
	for (int pair = 0; pair < NPAIRS; pair += 2)
		for (int tr = 0; tr < 4; tr++)
			for (int e = 0; e < E_COUNT; e += 3) {
				struct problem p = {pair_ab[pair], pair_cd[pair], tr & 1, tr >> 1, BATCH, 1, 0, tr & 1,
						    (enum epi)e, {0}, {0}, {0}, {0}, {0}, {0}};
				char what[128];
				snprintf(what, sizeof(what), "row-major %s %c%c %s", pair_name[pair], p.ta ? 'T' : 'N',
					 p.tb ? 'T' : 'N', epi_name[e]);
				cases++;
				good += run_lt(lt, &p, what);
			}
	BL_OK(cublasLtDestroy(lt));
	printf("# %d of %d cases right\n", good, cases);
	CHECK_EQ_INT(good, cases);
}

/* PyTorch passes its cublasHandle_t as the cublasLtHandle_t of
 * cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul (at::cuda::blas): the
 * real libraries accept it, and so must the stand-ins.  A pointer that is
 * neither handle is still refused. */
TEST(lt_accepts_cublas_handle)
{
	cublasHandle_t h;
	int cases = 0, good = 0;

	setup();
	BL_OK(cublasCreate(&h));
	for (int pair = 0; pair < NPAIRS; pair++) {
		struct problem p = {pair_ab[pair], pair_cd[pair], 1, 0, 1, 0, 0, 0, E_BIAS,
				    {0}, {0}, {0}, {0}, {0}, {0}};
		char what[128];
		snprintf(what, sizeof(what), "cuBLAS handle as cuBLASLt handle, %s", pair_name[pair]);
		cases++;
		good += run_lt((cublasLtHandle_t)(void *)h, &p, what);
	}
	printf("# %d of %d cases right\n", good, cases);
	CHECK_EQ_INT(good, cases);
	BL_OK(cublasDestroy(h));
	uint32_t junk[8] = {0x42d1a5u, 0, 0, 0, 0, 0, 0, 0}; /* the head's magic, no cuBLASLt handle */
	cublasLtMatmulHeuristicResult_t res;
	int nres = 0;
	CHECK_EQ_INT(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)(void *)junk, NULL, NULL, NULL, NULL, NULL,
						    NULL, 1, &res, &nres),
		     CUBLAS_STATUS_NOT_INITIALIZED);
}

/* ---- the stream: a host function holds it; the GEMM must wait behind it */

static volatile int gate_open;
static void CUDA_CB hold(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE))
		;
}

TEST(stream_order)
{
	cublasHandle_t h;
	struct problem p = {CUDA_R_32F, CUDA_R_32F, 0, 0, 1, 0, 1, 0, E_DEFAULT, {0}, {0}, {0}, {0}, {0}, {0}};
	float before[4], after[4];

	setup();
	BL_OK(cublasCreate(&h));
	BL_OK(cublasSetStream(h, stream));
	cudaStream_t got = NULL;
	BL_OK(cublasGetStream(h, &got));
	CHECK(got == stream);
	problem_make(&p);
	gate_open = 0;
	CU_OK(cuLaunchHostFunc(stream, hold, NULL));
	BL_OK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &ALPHA, (float *)(uintptr_t)p.A.d, (int)p.A.ld,
			  (float *)(uintptr_t)p.B.d, (int)p.B.ld, &BETA, (float *)(uintptr_t)p.C.d, (int)p.C.ld));
	CHECK_EQ_INT(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
	/* the legacy stream does not wait for a non-blocking one */
	CU_OK(cuMemcpyDtoH(before, p.C.d, sizeof(before)));
	CHECK(memcmp(before, p.C.h, sizeof(before)) == 0);
	__atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
	CU_OK(cuStreamSynchronize(stream));
	CU_OK(cuMemcpyDtoH(after, p.C.d, sizeof(after)));
	CHECK(memcmp(after, p.C.h, sizeof(after)) != 0);
	CHECK(problem_check("stream", &p));
	problem_free(&p);
	BL_OK(cublasDestroy(h));
}

/* ---- descriptors, heuristic, what is refused */

TEST(attributes)
{
	cublasLtMatmulDesc_t desc;
	cublasLtMatmulDescOpaque_t stack_desc;
	cublasLtMatrixLayout_t l;
	cublasHandle_t h;
	int32_t v = 0, order = CUBLASLT_ORDER_ROW;
	int64_t ld = 0;
	uint32_t epi = CUBLASLT_EPILOGUE_GELU_AUX_BIAS, e2 = 0;
	size_t written = 0;
	cublasMath_t mm;
	cublasPointerMode_t pm;

	setup();
	BL_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	BL_OK(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, sizeof(v), &written));
	CHECK_EQ_INT(v, CUBLAS_COMPUTE_32F);
	CHECK_EQ_INT(written, 4);
	BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
	BL_OK(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e2, sizeof(e2), NULL));
	CHECK_EQ_INT(e2, epi);
	/* the header's sizes: a pointer attribute is 8 bytes, an int64 given as 4 is refused */
	CHECK_EQ_INT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &v, sizeof(v)),
		     CUBLAS_STATUS_INVALID_VALUE);
	BL_OK(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, NULL, 0, &written));
	CHECK_EQ_INT(written, 8);
	cublasLtMatmulDescDestroy(desc);
	BL_OK(cublasLtMatmulDescInit(&stack_desc, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
	BL_OK(cublasLtMatmulDescGetAttribute(&stack_desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, sizeof(v), NULL));
	CHECK_EQ_INT(v, CUBLAS_COMPUTE_32F_FAST_TF32);
	BL_OK(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 10, 20, 30));
	BL_OK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order)));
	BL_OK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof(ld), NULL));
	CHECK_EQ_INT(ld, 30);
	BL_OK(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &v, sizeof(v), NULL));
	CHECK_EQ_INT(v, CUBLASLT_ORDER_ROW);
	cublasLtMatrixLayoutDestroy(l);

	BL_OK(cublasCreate(&h));
	BL_OK(cublasGetMathMode(h, &mm));
	CHECK_EQ_INT(mm, CUBLAS_DEFAULT_MATH);
	BL_OK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
	BL_OK(cublasGetMathMode(h, &mm));
	CHECK_EQ_INT(mm, CUBLAS_TF32_TENSOR_OP_MATH);
	BL_OK(cublasGetPointerMode(h, &pm));
	CHECK_EQ_INT(pm, CUBLAS_POINTER_MODE_HOST);
	BL_OK(cublasSetWorkspace(h, (void *)(uintptr_t)0x1000, 4096));
	CHECK_EQ_STR(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
	BL_OK(cublasDestroy(h));
}

TEST(unsupported)
{
	cublasHandle_t h;
	cublasLtHandle_t lt;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t l32, l64;
	cublasLtMatmulHeuristicResult_t res;
	uint32_t relu = CUBLASLT_EPILOGUE_RELU;
	int nres = 5;
	float x = 1;

	setup();
	BL_OK(cublasCreate(&h));
	/* a generated stub */
	CHECK_EQ_INT(cublasSaxpy(h, 1, &x, NULL, 1, NULL, 1), CUBLAS_STATUS_NOT_SUPPORTED);
	/* fp64 and a compute type that is not fp32 */
	CHECK_EQ_INT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &x, (void *)8, CUDA_R_64F, 2, (void *)8,
				  CUDA_R_64F, 2, &x, (void *)8, CUDA_R_64F, 2, CUBLAS_COMPUTE_64F,
				  CUBLAS_GEMM_DEFAULT),
		     CUBLAS_STATUS_NOT_SUPPORTED);
	/* bad arguments */
	CHECK_EQ_INT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &x, (float *)8, 3, (float *)8, 4, &x,
				 (float *)8, 4),
		     CUBLAS_STATUS_INVALID_VALUE);
	BL_OK(cublasDestroy(h));

	BL_OK(cublasLtCreate(&lt));
	BL_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	BL_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &relu, sizeof(relu)));
	BL_OK(cublasLtMatrixLayoutCreate(&l32, CUDA_R_32F, 8, 8, 8));
	BL_OK(cublasLtMatrixLayoutCreate(&l64, CUDA_R_64F, 8, 8, 8));
	CHECK_EQ_INT(cublasLtMatmulAlgoGetHeuristic(lt, desc, l32, l32, l32, l32, NULL, 1, &res, &nres),
		     CUBLAS_STATUS_NOT_SUPPORTED);
	CHECK_EQ_INT(nres, 0);
	cublasLtMatmulDescDestroy(desc);
	BL_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	CHECK_EQ_INT(cublasLtMatmulAlgoGetHeuristic(lt, desc, l64, l64, l64, l64, NULL, 1, &res, &nres),
		     CUBLAS_STATUS_NOT_SUPPORTED);
	/* shapes that do not fit: A 8x8 times B 8x8 into D 8x8 is fine, C 16x8 is not */
	cublasLtMatrixLayout_t l16;
	BL_OK(cublasLtMatrixLayoutCreate(&l16, CUDA_R_32F, 16, 8, 16));
	CHECK_EQ_INT(cublasLtMatmulAlgoGetHeuristic(lt, desc, l32, l32, l16, l32, NULL, 1, &res, &nres),
		     CUBLAS_STATUS_INVALID_VALUE);
	BL_OK(cublasLtMatmulAlgoGetHeuristic(lt, desc, l32, l32, l32, l32, NULL, 1, &res, &nres));
	CHECK_EQ_INT(nres, 1);
	CHECK_EQ_INT(res.workspaceSize, 0);
	CHECK_EQ_INT(cublasLtMatrixTransformDescCreate(NULL, CUDA_R_32F), CUBLAS_STATUS_NOT_SUPPORTED);
	cublasLtMatrixLayoutDestroy(l16);
	cublasLtMatrixLayoutDestroy(l32);
	cublasLtMatrixLayoutDestroy(l64);
	cublasLtMatmulDescDestroy(desc);
	BL_OK(cublasLtDestroy(lt));
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
