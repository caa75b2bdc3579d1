/* SPDX-License-Identifier: MIT
 *
 * main.cu - a runtime-API program written the ordinary way (cudaMalloc,
 * <<<>>>, cudaMemcpy, streams, events, device variables through
 * cudaMemcpyToSymbol/FromSymbol, managed memory, cudaFuncSetAttribute, the
 * occupancy API, bf16 arithmetic, cudaGetDeviceProperties), every result
 * compared with a host reference.  Built twice by tests/simcuda/cudart.mk:
 * with nvcc's default static cudart and with -cudart shared; run on the CPU
 * device plain and under libddp (run.sh).  The kernels are in kernels.cu,
 * included here (nvcc compiles both into this program's fatbin) and built
 * alone into the program's .kern.so.
 *
 * Output: TAP-like lines "ok - NAME" / "not ok - NAME: detail" for
 * tests/run_tests.sh; exit 1 when a case failed.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_profiler_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels.cu"

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
	test_errors_and_profiler();
	cudaError_t e = cudaDeviceSynchronize();
	report(e == cudaSuccess, "no sticky error at the end", cudaGetErrorName(e));
	return failures ? 1 : 0;
}
