/* SPDX-License-Identifier: MIT
 *
 * main.cu - a runtime-API program written the ordinary way, host and device
 * code in one file: cudaMalloc, <<<>>>, cudaMemcpy, streams, events, device
 * variables through cudaMemcpyToSymbol/FromSymbol, managed memory,
 * cudaFuncSetAttribute, the occupancy API, cooperative groups (a warp per
 * row reduced with tiled_partition<32> and cg::reduce), bf16 arithmetic,
 * cuBLAS (cublasSgemm, cublasGemmEx on bf16) and cuBLASLt (cublasLtMatmul
 * with the BIAS epilogue) on a stream, cudaGetDeviceProperties; every result
 * compared with a host reference.  Built twice by cpudev/cudart.mk:
 * with nvcc's default static cudart and with -cudart shared, both linked
 * against the toolkit's cuBLAS; its CPU-device kernel library is built from
 * this same file by ddp-cpu-kernels.  Run on the CPU device (and its cuBLAS
 * stand-ins) plain and under libddp (run.sh).
 *
 * Device variables: g_counter and g_table (__device__), c_coef
 * (__constant__), cr::g_scale (__device__ in a namespace, mangled name).
 *
 * Output: TAP-like lines "ok - NAME" / "not ok - NAME: detail" for
 * tests/run_tests.sh; exit 1 when a case failed.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_profiler_api.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;

__device__ int g_counter;
__device__ float g_table[8] = { 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f };
__constant__ float c_coef[4];
namespace cr {
__device__ double g_scale = 0.5;
}

/* y = a * x + y */
__global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

/* out[i] = c_coef[i % 4] * g_table[i % 8] * cr::g_scale; counts its threads
 * in g_counter and doubles g_table[0] once. */
__global__ void use_globals(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	out[i] = c_coef[i % 4] * g_table[i % 8] * (float)cr::g_scale;
	atomicAdd(&g_counter, 1);
}

__global__ void bump_table(void)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		g_table[0] *= 2.0f;
}

/* bf16 arithmetic: y = x * w + y, in bf16, rounded at each step */
__global__ void bf16_fma(const __nv_bfloat16 *x, const __nv_bfloat16 *w, __nv_bfloat16 *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = __hadd(__hmul(x[i], w[i]), y[i]);
}

/* One block sums n floats through dynamic shared memory of n floats
 * (n * 4 bytes, more than the default 48 KiB when n > 12288). */
__global__ void block_sum(const float *x, float *out, int n)
{
	extern __shared__ float buf[];
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		buf[i] = x[i];
	__syncthreads();
	if (threadIdx.x == 0) {
		float s = 0.0f;
		for (int i = 0; i < n; i++)
			s += buf[i];
		*out = s;
	}
}

/* p[i] += i on managed memory */
__global__ void managed_add(int *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] += i;
}

/* Grid-stride loop, sized by the caller from the occupancy API. */
__global__ void grid_fill(int *p, int n, int v)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		p[i] = v + i;
}

/* One warp per row: out[r] = sum of x[r][0..cols) and mx[r] = its largest
 * element, reduced with a tile of 32 and cg::reduce. */
__global__ void row_sum_max(const float *__restrict__ x, float *__restrict__ out, float *__restrict__ mx, int rows,
			    int cols)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int r = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
	if (r >= rows)
		return;
	float s = 0.0f, m = -INFINITY;
	for (int c = warp.thread_rank(); c < cols; c += warp.size()) {
		float v = x[(size_t)r * cols + c];
		s += v;
		m = fmaxf(m, v);
	}
	s = cg::reduce(warp, s, cg::plus<float>());
	m = cg::reduce(warp, m, cg::greater<float>());
	if (warp.thread_rank() == 0) {
		out[r] = s;
		mx[r] = m;
	}
}

static int failures;

static void report(bool ok, const char *name, const char *detail)
{
	if (ok) {
		printf("ok - %s\n", name);
	} else {
		printf("not ok - %s: %s\n", name, detail);
		failures++;
	}
}

/* A CUDA call that must succeed: on error, report the case and return. */
#define CK(call, name) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) { \
		char d_[256]; \
		snprintf(d_, sizeof(d_), "%s failed: %s (%d)", #call, cudaGetErrorString(e_), (int)e_); \
		report(false, name, d_); \
		return; \
	} \
} while (0)

static bool close_rel(float a, float b, float rel)
{
	return std::fabs(a - b) <= rel * std::fmax(std::fabs(a), std::fabs(b)) + 1e-30f;
}

static void test_properties()
{
	const char *n = "device properties (cudaGetDeviceProperties, H100-like)";
	int count = 0;
	CK(cudaGetDeviceCount(&count), n);
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0), n);
	int sms = 0, tpm = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), n);
	CK(cudaDeviceGetAttribute(&tpm, cudaDevAttrMaxThreadsPerMultiProcessor, 0), n);
	char d[512];
	snprintf(d, sizeof(d), "count %d, %s sm_%d%d, %d SMs x %d threads (attr %d x %d), warp %d, managed %d",
		 count, p.name, p.major, p.minor, p.multiProcessorCount, p.maxThreadsPerMultiProcessor, sms, tpm,
		 p.warpSize, p.managedMemory);
	printf("# %s\n", d);
	report(count == 1 && p.major == 9 && p.minor == 0 && p.multiProcessorCount == 132 &&
		       p.maxThreadsPerMultiProcessor == 2048 && sms == 132 && tpm == 2048 && p.warpSize == 32 &&
		       p.maxThreadsPerBlock == 1024 && p.managedMemory == 1 && p.totalGlobalMem > 0,
	       n, d);
}

/* Two streams ordered by an event: saxpy on s1, then on s2 after the event. */
static void test_streams_events()
{
	const char *n = "streams and events: saxpy on two streams ordered by an event";
	const int N = 10000;
	std::vector<float> x(N), y(N), out(N), ref(N);
	for (int i = 0; i < N; i++) {
		x[i] = 0.25f * (float)(i % 97) - 3.0f;
		y[i] = 1.0f + 0.001f * (float)i;
		ref[i] = 3.0f * x[i] + (2.0f * x[i] + y[i]); /* second saxpy on the first's result */
	}
	float *dx, *dy;
	cudaStream_t s1, s2;
	cudaEvent_t e0, e1, e2;
	CK(cudaMalloc(&dx, N * sizeof(float)), n);
	CK(cudaMalloc(&dy, N * sizeof(float)), n);
	CK(cudaStreamCreate(&s1), n);
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), n);
	CK(cudaEventCreate(&e0), n);
	CK(cudaEventCreate(&e1), n);
	CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming), n);
	CK(cudaEventRecord(e0, s1), n);
	CK(cudaMemcpyAsync(dx, x.data(), N * sizeof(float), cudaMemcpyHostToDevice, s1), n);
	CK(cudaMemcpyAsync(dy, y.data(), N * sizeof(float), cudaMemcpyHostToDevice, s1), n);
	saxpy<<<(N + 255) / 256, 256, 0, s1>>>(2.0f, dx, dy, N);
	CK(cudaGetLastError(), n);
	CK(cudaEventRecord(e2, s1), n);
	CK(cudaStreamWaitEvent(s2, e2, 0), n);
	saxpy<<<(N + 127) / 128, 128, 0, s2>>>(3.0f, dx, dy, N);
	CK(cudaGetLastError(), n);
	CK(cudaMemcpyAsync(out.data(), dy, N * sizeof(float), cudaMemcpyDeviceToHost, s2), n);
	CK(cudaEventRecord(e1, s2), n);
	CK(cudaStreamSynchronize(s2), n);
	CK(cudaEventQuery(e1), n);
	float ms = -1.0f;
	CK(cudaEventElapsedTime(&ms, e0, e1), n);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += !close_rel(out[i], ref[i], 1e-6f);
	char d[128];
	snprintf(d, sizeof(d), "%d of %d elements differ from the host reference (elapsed %.3f ms)", bad, N, ms);
	report(bad == 0 && ms >= 0.0f, n, d);
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaEventDestroy(e2);
	cudaStreamDestroy(s1);
	cudaStreamDestroy(s2);
	cudaFree(dx);
	cudaFree(dy);
}

/* __device__ and __constant__ variables shared by kernels and the copies. */
static void test_device_globals()
{
	const char *n = "device globals: cudaMemcpyToSymbol/FromSymbol share storage with the kernels";
	const int N = 100;
	const float coef[4] = { 1.5f, -2.0f, 0.25f, 4.0f };
	const int zero = 0;
	float table[8];
	double scale = 0.0;
	CK(cudaMemcpyFromSymbol(table, g_table, sizeof(table)), n);
	CK(cudaMemcpyFromSymbol(&scale, cr::g_scale, sizeof(scale)), n);
	if (table[3] != 4.0f || scale != 0.5) {
		report(false, n, "initial values of g_table / cr::g_scale not seen through cudaMemcpyFromSymbol");
		return;
	}
	CK(cudaMemcpyToSymbol(c_coef, coef, sizeof(coef)), n);
	CK(cudaMemcpyToSymbol(g_counter, &zero, sizeof(zero)), n);
	float *dout;
	CK(cudaMalloc(&dout, N * sizeof(float)), n);
	use_globals<<<(N + 63) / 64, 64>>>(dout, N);
	CK(cudaGetLastError(), n);
	std::vector<float> out(N);
	CK(cudaMemcpy(out.data(), dout, N * sizeof(float), cudaMemcpyDeviceToHost), n);
	int counter = -1;
	CK(cudaMemcpyFromSymbol(&counter, g_counter, sizeof(counter)), n);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += out[i] != coef[i % 4] * table[i % 8] * 0.5f;
	/* A kernel writes a variable, the host reads it back; the host writes
	 * another (through an offset), a kernel reads it. */
	bump_table<<<1, 32>>>();
	CK(cudaGetLastError(), n);
	float t0 = 0.0f;
	CK(cudaMemcpyFromSymbol(&t0, g_table, sizeof(float), 0), n);
	const double quarter = 0.25;
	const float seven = 70.0f;
	CK(cudaMemcpyToSymbol(cr::g_scale, &quarter, sizeof(quarter)), n);
	CK(cudaMemcpyToSymbol(g_table, &seven, sizeof(float), 7 * sizeof(float)), n);
	use_globals<<<1, 8>>>(dout, 8);
	CK(cudaGetLastError(), n);
	CK(cudaMemcpy(out.data(), dout, 8 * sizeof(float), cudaMemcpyDeviceToHost), n);
	bool second = out[0] == coef[0] * 2.0f * 0.25f && out[7] == coef[3] * 70.0f * 0.25f &&
		      out[1] == coef[1] * 2.0f * 0.25f;
	/* The symbol's address is device memory: plain copies work too. */
	float *ptab = nullptr;
	size_t tsize = 0;
	CK(cudaGetSymbolAddress((void **)&ptab, g_table), n);
	CK(cudaGetSymbolSize(&tsize, g_table), n);
	float back[8] = { 0 };
	CK(cudaMemcpy(back, ptab, sizeof(back), cudaMemcpyDeviceToHost), n);
	CK(cudaMemcpy(dout, ptab, sizeof(back), cudaMemcpyDeviceToDevice), n);
	/* Past the end of the variable: refused. */
	cudaError_t past = cudaMemcpyToSymbol(c_coef, coef, sizeof(coef), 2 * sizeof(float));
	cudaGetLastError();
	char d[256];
	snprintf(d, sizeof(d), "%d of %d wrong, counter %d (want %d), g_table[0] %g (want 2), second launch %s, "
		 "symbol size %zu, copy back [0]=%g [7]=%g, copy past the end: %s", bad, N, counter, N, t0,
		 second ? "right" : "wrong", tsize, back[0], back[7], cudaGetErrorName(past));
	report(bad == 0 && counter == N && t0 == 2.0f && second && tsize == sizeof(table) && back[0] == 2.0f &&
		       back[7] == 70.0f && past != cudaSuccess, n, d);
	cudaFree(dout);
}

static void test_managed()
{
	const char *n = "managed memory: host and kernel use one allocation; advise and prefetch";
	const int N = 4096;
	int *m = nullptr;
	CK(cudaMallocManaged(&m, N * sizeof(int)), n);
	for (int i = 0; i < N; i++)
		m[i] = 3 * i;
	cudaMemLocation dev = {}, host = {};
	dev.type = cudaMemLocationTypeDevice;
	dev.id = 0;
	host.type = cudaMemLocationTypeHost;
	CK(cudaMemAdvise(m, N * sizeof(int), cudaMemAdviseSetPreferredLocation, dev), n);
	CK(cudaMemPrefetchAsync(m, N * sizeof(int), dev, 0, 0), n);
	managed_add<<<N / 256, 256>>>(m, N);
	CK(cudaGetLastError(), n);
	CK(cudaMemPrefetchAsync(m, N * sizeof(int), host, 0, 0), n);
	CK(cudaDeviceSynchronize(), n);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += m[i] != 4 * i;
	cudaPointerAttributes pa;
	CK(cudaPointerGetAttributes(&pa, m), n);
	/* Advice on memory that is not managed is refused. */
	int *plain = nullptr;
	CK(cudaMalloc(&plain, 64), n);
	cudaError_t refused = cudaMemAdvise(plain, 64, cudaMemAdviseSetReadMostly, dev);
	cudaGetLastError();
	char d[200];
	snprintf(d, sizeof(d), "%d of %d wrong, pointer type %d (want %d), advice on cudaMalloc memory: %s", bad, N,
		 (int)pa.type, (int)cudaMemoryTypeManaged, cudaGetErrorName(refused));
	report(bad == 0 && pa.type == cudaMemoryTypeManaged && refused == cudaErrorInvalidValue, n, d);
	cudaFree(plain);
	cudaFree(m);
}

/* 16384 floats of dynamic shared memory (64 KiB): refused until
 * cudaFuncSetAttribute raises the kernel's limit. */
static void test_func_attribute()
{
	const char *n = "cudaFuncSetAttribute: 64 KiB dynamic shared memory, refused before, right sum after";
	const int N = 16384;
	std::vector<float> x(N);
	float ref = 0.0f;
	for (int i = 0; i < N; i++) {
		x[i] = (float)(i % 13) - 6.0f;
		ref += x[i];
	}
	float *dx, *dsum;
	CK(cudaMalloc(&dx, N * sizeof(float)), n);
	CK(cudaMalloc(&dsum, sizeof(float)), n);
	CK(cudaMemcpy(dx, x.data(), N * sizeof(float), cudaMemcpyHostToDevice), n);
	block_sum<<<1, 256, N * sizeof(float)>>>(dx, dsum, N);
	cudaError_t before = cudaGetLastError();
	CK(cudaFuncSetAttribute(block_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, N * sizeof(float)), n);
	cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, block_sum), n);
	block_sum<<<1, 256, N * sizeof(float)>>>(dx, dsum, N);
	CK(cudaGetLastError(), n);
	float sum = 0.0f;
	CK(cudaMemcpy(&sum, dsum, sizeof(float), cudaMemcpyDeviceToHost), n);
	char d[200];
	snprintf(d, sizeof(d), "launch before the attribute: %s; sum %g (want %g); attributes: max dynamic %d, "
		 "max threads %d", cudaGetErrorName(before), sum, ref, fa.maxDynamicSharedSizeBytes,
		 fa.maxThreadsPerBlock);
	report(before == cudaErrorInvalidValue && sum == ref && fa.maxDynamicSharedSizeBytes == N * (int)sizeof(float) &&
		       fa.maxThreadsPerBlock == 1024, n, d);
	cudaFree(dx);
	cudaFree(dsum);
}

static void test_occupancy()
{
	const char *n = "occupancy API sizes a grid-stride launch";
	int per_sm = 0, min_grid = 0, block = 0;
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_fill, 256, 0), n);
	CK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, grid_fill, 0, 0), n);
	const int N = 300000;
	int *dp;
	CK(cudaMalloc(&dp, N * sizeof(int)), n);
	grid_fill<<<min_grid, block>>>(dp, N, 7);
	CK(cudaGetLastError(), n);
	std::vector<int> out(N);
	CK(cudaMemcpy(out.data(), dp, N * sizeof(int), cudaMemcpyDeviceToHost), n);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += out[i] != 7 + i;
	char d[200];
	snprintf(d, sizeof(d), "%d blocks of 256 per SM (want 8), potential block %d grid %d (want 1024, 264), "
		 "%d of %d wrong", per_sm, block, min_grid, bad, N);
	report(per_sm == 8 && block == 1024 && min_grid == 2 * 132 && bad == 0, n, d);
	cudaFree(dp);
}

static void test_bf16()
{
	const char *n = "bf16 arithmetic in a kernel (__hmul, __hadd) equals the host's bf16 rounding";
	const int N = 1000;
	std::vector<__nv_bfloat16> x(N), w(N), y(N), out(N);
	std::vector<unsigned short> ref(N);
	for (int i = 0; i < N; i++) {
		x[i] = __float2bfloat16(0.01f * (float)i - 3.0f);
		w[i] = __float2bfloat16(1.0f + 0.003f * (float)(i % 101));
		y[i] = __float2bfloat16(0.5f * (float)(i % 7));
		float prod = __bfloat162float(__float2bfloat16(__bfloat162float(x[i]) * __bfloat162float(w[i])));
		__nv_bfloat16 r = __float2bfloat16(prod + __bfloat162float(y[i]));
		memcpy(&ref[i], &r, 2);
	}
	__nv_bfloat16 *dx, *dw, *dy;
	CK(cudaMalloc(&dx, N * 2), n);
	CK(cudaMalloc(&dw, N * 2), n);
	CK(cudaMalloc(&dy, N * 2), n);
	CK(cudaMemcpy(dx, x.data(), N * 2, cudaMemcpyHostToDevice), n);
	CK(cudaMemcpy(dw, w.data(), N * 2, cudaMemcpyHostToDevice), n);
	CK(cudaMemcpy(dy, y.data(), N * 2, cudaMemcpyHostToDevice), n);
	bf16_fma<<<(N + 127) / 128, 128>>>(dx, dw, dy, N);
	CK(cudaGetLastError(), n);
	CK(cudaMemcpy(out.data(), dy, N * 2, cudaMemcpyDeviceToHost), n);
	int bad = 0;
	for (int i = 0; i < N; i++) {
		unsigned short b;
		memcpy(&b, &out[i], 2);
		bad += b != ref[i];
	}
	char d[100];
	snprintf(d, sizeof(d), "%d of %d bit patterns differ", bad, N);
	report(bad == 0, n, d);
	cudaFree(dx);
	cudaFree(dw);
	cudaFree(dy);
}

static void test_cooperative_groups()
{
	const char *n = "cooperative groups: a warp per row, tiled_partition<32> + cg::reduce (plus, greater)";
	const int R = 37, C = 301;
	std::vector<float> x((size_t)R * C), sum(R), mx(R);
	for (int r = 0; r < R; r++)
		for (int c = 0; c < C; c++)
			x[(size_t)r * C + c] = 0.25f * (float)((r * 7 + c * 13) % 41) - 5.0f; /* exact sums */
	float *dx, *dsum, *dmx;
	CK(cudaMalloc(&dx, x.size() * sizeof(float)), n);
	CK(cudaMalloc(&dsum, R * sizeof(float)), n);
	CK(cudaMalloc(&dmx, R * sizeof(float)), n);
	CK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), n);
	const int warps_per_block = 4;
	row_sum_max<<<(R + warps_per_block - 1) / warps_per_block, 32 * warps_per_block>>>(dx, dsum, dmx, R, C);
	CK(cudaGetLastError(), n);
	CK(cudaMemcpy(sum.data(), dsum, R * sizeof(float), cudaMemcpyDeviceToHost), n);
	CK(cudaMemcpy(mx.data(), dmx, R * sizeof(float), cudaMemcpyDeviceToHost), n);
	int bad = 0;
	for (int r = 0; r < R; r++) {
		double s = 0.0;
		float m = -INFINITY;
		for (int c = 0; c < C; c++) {
			s += x[(size_t)r * C + c];
			m = std::fmax(m, x[(size_t)r * C + c]);
		}
		bad += sum[r] != (float)s || mx[r] != m;
	}
	char d[160];
	snprintf(d, sizeof(d), "%d of %d rows differ from the host reference (row 0: sum %g, max %g)", bad, R, sum[0],
		 mx[0]);
	report(bad == 0, n, d);
	cudaFree(dx);
	cudaFree(dsum);
	cudaFree(dmx);
}

/* Host reference, column-major: C[i + j*ldc] = sum_k op(A)[i][k] op(B)[k][j]. */
static double ref_gemm(const std::vector<float> &A, int lda, bool ta, const std::vector<float> &B, int ldb, bool tb,
		       int i, int j, int k)
{
	double s = 0.0;
	for (int p = 0; p < k; p++) {
		double a = ta ? A[p + (size_t)i * lda] : A[i + (size_t)p * lda];
		double b = tb ? B[j + (size_t)p * ldb] : B[p + (size_t)j * ldb];
		s += a * b;
	}
	return s;
}

static bool close_abs(double got, double want, double tol)
{
	return std::fabs(got - want) <= tol * (1.0 + std::fabs(want));
}

/* cublasSgemm (A transposed) and cublasGemmEx (bf16 A and B, fp32 C) on the
 * handle's stream, column-major as cuBLAS is. */
static void test_cublas()
{
	const char *n = "cuBLAS: cublasSgemm (op T, N) and cublasGemmEx (bf16 in, fp32 out) on a stream";
	const int M = 29, N = 23, K = 17;
	std::vector<float> A((size_t)K * M), B((size_t)K * N), C((size_t)M * N, 0.0f), D((size_t)M * N, 0.0f);
	for (size_t i = 0; i < A.size(); i++)
		A[i] = 0.125f * (float)((int)(i * 5 % 23) - 11);
	for (size_t i = 0; i < B.size(); i++)
		B[i] = 0.0625f * (float)((int)(i * 3 % 19) - 9);
	std::vector<__nv_bfloat16> Ah(A.size()), Bh(B.size());
	std::vector<float> Ar(A.size()), Br(B.size()); /* the bf16 values, widened */
	for (size_t i = 0; i < A.size(); i++) {
		Ah[i] = __float2bfloat16(A[i] * 1.01f);
		Ar[i] = __bfloat162float(Ah[i]);
	}
	for (size_t i = 0; i < B.size(); i++) {
		Bh[i] = __float2bfloat16(B[i] * 0.99f);
		Br[i] = __bfloat162float(Bh[i]);
	}
	float *dA, *dB, *dC, *dD;
	__nv_bfloat16 *dAh, *dBh;
	cudaStream_t s;
	cublasHandle_t h;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), n);
	CK(cudaMalloc(&dA, A.size() * sizeof(float)), n);
	CK(cudaMalloc(&dB, B.size() * sizeof(float)), n);
	CK(cudaMalloc(&dC, C.size() * sizeof(float)), n);
	CK(cudaMalloc(&dD, D.size() * sizeof(float)), n);
	CK(cudaMalloc(&dAh, Ah.size() * sizeof(__nv_bfloat16)), n);
	CK(cudaMalloc(&dBh, Bh.size() * sizeof(__nv_bfloat16)), n);
	CK(cudaMemcpyAsync(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice, s), n);
	CK(cudaMemcpyAsync(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice, s), n);
	CK(cudaMemcpyAsync(dAh, Ah.data(), Ah.size() * 2, cudaMemcpyHostToDevice, s), n);
	CK(cudaMemcpyAsync(dBh, Bh.data(), Bh.size() * 2, cudaMemcpyHostToDevice, s), n);
	if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
		report(false, n, "cublasCreate failed");
		return;
	}
	const float one = 1.0f, zero = 0.0f, half = 0.5f;
	cublasStatus_t s1 = cublasSetStream(h, s);
	/* C (M x N) = A^T B, A stored K x M */
	cublasStatus_t s2 = cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, dA, K, dB, K, &zero, dC, M);
	/* D (M x N) = 0.5 * Ah^T Bh */
	cublasStatus_t s3 = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &half, dAh, CUDA_R_16BF, K, dBh,
					 CUDA_R_16BF, K, &zero, dD, CUDA_R_32F, M, CUBLAS_COMPUTE_32F,
					 CUBLAS_GEMM_DEFAULT);
	CK(cudaMemcpyAsync(C.data(), dC, C.size() * sizeof(float), cudaMemcpyDeviceToHost, s), n);
	CK(cudaMemcpyAsync(D.data(), dD, D.size() * sizeof(float), cudaMemcpyDeviceToHost, s), n);
	CK(cudaStreamSynchronize(s), n);
	int bad_c = 0, bad_d = 0;
	for (int j = 0; j < N; j++)
		for (int i = 0; i < M; i++) {
			bad_c += !close_abs(C[i + (size_t)j * M], ref_gemm(A, K, true, B, K, false, i, j, K), 1e-5);
			bad_d += !close_abs(D[i + (size_t)j * M], 0.5 * ref_gemm(Ar, K, true, Br, K, false, i, j, K),
					    1e-5);
		}
	char d[200];
	snprintf(d, sizeof(d), "status %d/%d/%d; Sgemm: %d of %d wrong, GemmEx bf16: %d of %d wrong", (int)s1, (int)s2,
		 (int)s3, bad_c, M * N, bad_d, M * N);
	report(s1 == CUBLAS_STATUS_SUCCESS && s2 == CUBLAS_STATUS_SUCCESS && s3 == CUBLAS_STATUS_SUCCESS && bad_c == 0 &&
		       bad_d == 0, n, d);
	cublasDestroy(h);
	cudaFree(dA);
	cudaFree(dB);
	cudaFree(dC);
	cudaFree(dD);
	cudaFree(dAh);
	cudaFree(dBh);
	cudaStreamDestroy(s);
}

/* A linear layer as trainers write it: out (M x N) = W^T x + bias, with
 * cublasLtMatmul and the BIAS epilogue (bias per row of D). */
static void test_cublaslt()
{
	const char *n = "cuBLASLt: cublasLtMatmul with the BIAS epilogue (a linear layer), heuristic, on a stream";
	const int M = 24, N = 13, K = 31; /* out features, batch, in features */
	std::vector<float> W((size_t)K * M), X((size_t)K * N), bias(M), out((size_t)M * N, 0.0f);
	for (size_t i = 0; i < W.size(); i++)
		W[i] = 0.03125f * (float)((int)(i * 7 % 29) - 14);
	for (size_t i = 0; i < X.size(); i++)
		X[i] = 0.25f * (float)((int)(i * 11 % 17) - 8);
	for (int i = 0; i < M; i++)
		bias[i] = 0.5f * (float)(i % 5) - 1.0f;
	float *dW, *dX, *dbias, *dout;
	cudaStream_t s;
	CK(cudaStreamCreate(&s), n);
	CK(cudaMalloc(&dW, W.size() * sizeof(float)), n);
	CK(cudaMalloc(&dX, X.size() * sizeof(float)), n);
	CK(cudaMalloc(&dbias, bias.size() * sizeof(float)), n);
	CK(cudaMalloc(&dout, out.size() * sizeof(float)), n);
	CK(cudaMemcpy(dW, W.data(), W.size() * sizeof(float), cudaMemcpyHostToDevice), n);
	CK(cudaMemcpy(dX, X.data(), X.size() * sizeof(float), cudaMemcpyHostToDevice), n);
	CK(cudaMemcpy(dbias, bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice), n);
	cublasLtHandle_t lt;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t heur;
	int found = 0;
	cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
	cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
	size_t ws = 1 << 20;
	void *dws;
	CK(cudaMalloc(&dws, ws), n);
	int st = 0;
	st |= cublasLtCreate(&lt);
	st |= cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	st |= cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT));
	st |= cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN));
	st |= cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
	st |= cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof(dbias));
	st |= cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, K, M, K);
	st |= cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K);
	st |= cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, M, N, M);
	st |= cublasLtMatmulPreferenceCreate(&pref);
	st |= cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
	st |= cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heur, &found);
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t mm = cublasLtMatmul(lt, desc, &one, dW, la, dX, lb, &zero, dout, lc, dout, lc, &heur.algo, dws,
					   ws, s);
	CK(cudaMemcpyAsync(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost, s), n);
	CK(cudaStreamSynchronize(s), n);
	int bad = 0;
	for (int j = 0; j < N; j++)
		for (int i = 0; i < M; i++)
			bad += !close_abs(out[i + (size_t)j * M], ref_gemm(W, K, true, X, K, false, i, j, K) + bias[i],
					  1e-5);
	char d[200];
	snprintf(d, sizeof(d), "setup status %d, %d algorithm(s), matmul status %d, %d of %d wrong", st, found, (int)mm,
		 bad, M * N);
	report(st == 0 && found == 1 && mm == CUBLAS_STATUS_SUCCESS && bad == 0, n, d);
	cublasLtMatmulPreferenceDestroy(pref);
	cublasLtMatrixLayoutDestroy(la);
	cublasLtMatrixLayoutDestroy(lb);
	cublasLtMatrixLayoutDestroy(lc);
	cublasLtMatmulDescDestroy(desc);
	cublasLtDestroy(lt);
	cudaFree(dW);
	cudaFree(dX);
	cudaFree(dbias);
	cudaFree(dout);
	cudaFree(dws);
	cudaStreamDestroy(s);
}

static void test_errors_and_profiler()
{
	const char *n = "error codes (bad free, bad copy) and profiler start/stop";
	int host_buf[16] = { 0 };
	cudaError_t bad_free = cudaFree(host_buf);
	cudaGetLastError();
	float *d1;
	CK(cudaMalloc(&d1, 16), n);
	cudaError_t bad_copy = cudaMemcpy(d1, host_buf, sizeof(host_buf), cudaMemcpyHostToDevice); /* 64 > 16 bytes */
	cudaGetLastError();
	cudaError_t pstart = cudaProfilerStart(), pstop = cudaProfilerStop();
	char d[200];
	snprintf(d, sizeof(d), "cudaFree(host pointer) %s, oversized copy %s, profiler %s/%s", cudaGetErrorName(bad_free),
		 cudaGetErrorName(bad_copy), cudaGetErrorName(pstart), cudaGetErrorName(pstop));
	report(bad_free == cudaErrorInvalidValue && bad_copy == cudaErrorInvalidValue && pstart == cudaSuccess &&
		       pstop == cudaSuccess, n, d);
	cudaFree(d1);
}

int main()
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	test_properties();
	test_streams_events();
	test_device_globals();
	test_managed();
	test_func_attribute();
	test_occupancy();
	test_bf16();
	test_cooperative_groups();
	test_cublas();
	test_cublaslt();
	test_errors_and_profiler();
	cudaError_t e = cudaDeviceSynchronize();
	report(e == cudaSuccess, "no sticky error at the end", cudaGetErrorName(e));
	return failures ? 1 : 0;
}
