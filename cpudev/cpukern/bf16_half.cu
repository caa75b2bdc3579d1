/* SPDX-License-Identifier: MIT
 *
 * bf16_half.cu - cuda_bf16.h / cuda_fp16.h in kernels: conversions, scalar
 * and packed (__nv_bfloat162, __half2) arithmetic, fma, max/min,
 * comparisons, operators.  The host reference uses the toolkit's own
 * host-side implementations of the same functions (nvcc compiles this
 * program's host code with CUDA's real headers), so the CPU device's
 * versions are checked against NVIDIA's: bit for bit, except fma (one ulp:
 * the CPU device rounds through float).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.cuh"

enum { NOUT = 14 };

__global__ void bf16_ops(const float *a, const float *b, const float *c, unsigned short *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	__nv_bfloat16 x = __float2bfloat16(a[i]), y = __float2bfloat16(b[i]), z = __float2bfloat16_rn(c[i]);
	__nv_bfloat162 p = __floats2bfloat162_rn(a[i], b[i]), q = __halves2bfloat162(z, x);
	__nv_bfloat162 r = __hfma2(p, q, __hmul2(p, p));
	__nv_bfloat162 sum2 = p + q;
	__nv_bfloat16 r16[NOUT] = {
		x, __hadd(x, y), __hmul(x, y), __hsub(x, y), __hfma(x, y, z), x * y + z, __hmax(x, y), __hmin(x, z),
		r.x, r.y, sum2.x, __high2bfloat16(__hadd2(p, q)),
		__float2bfloat16(__bfloat162float(x) * 0.5f), __hlt(x, y) ? x : y};
	for (int k = 0; k < NOUT; k++)
		out[i * NOUT + k] = __bfloat16_as_ushort(r16[k]);
}

__global__ void half_ops(const float *a, const float *b, const float *c, unsigned short *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	__half x = __float2half(a[i]), y = __float2half(b[i]), z = __float2half_rn(c[i]);
	__half2 p = __floats2half2_rn(a[i], b[i]), q = __halves2half2(z, x);
	__half2 r = __hfma2(p, q, __hmul2(p, p));
	float2 f = __half22float2(__hadd2(p, q));
	__half r16[NOUT] = {
		x, __hadd(x, y), __hmul(x, y), __hsub(x, y), __hfma(x, y, z), x * y + z, __hmax(x, y), __hmin(x, z),
		r.x, r.y, __float2half(f.x), __high2half(__hadd2(p, q)),
		__float2half(__half2float(x) * 0.5f), __hlt(x, y) ? x : y};
	for (int k = 0; k < NOUT; k++)
		out[i * NOUT + k] = __half_as_ushort(r16[k]);
}

/* fma with one rounding (the product of two 16-bit floats and the sum are
 * exact in double for these magnitudes); the toolkit's __hfma is device-only. */
static __nv_bfloat16 fma_ref(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c)
{
	return __double2bfloat16((double)__bfloat162float(a) * __bfloat162float(b) + __bfloat162float(c));
}
static __half fma_ref(__half a, __half b, __half c)
{
	return __double2half((double)__half2float(a) * __half2float(b) + __half2float(c));
}
static unsigned short bits_bf(__nv_bfloat16 h) { unsigned short u; memcpy(&u, &h, 2); return u; }
static unsigned short bits_h(__half h) { unsigned short u; memcpy(&u, &h, 2); return u; }

int main()
{
	const int n = 2000;
	std::vector<float> a(n), b(n), c(n);
	srand(7);
	for (int i = 0; i < n; i++) {
		a[i] = ((float)rand() / RAND_MAX - 0.5f) * 40.0f;
		b[i] = ((float)rand() / RAND_MAX - 0.5f) * 3.0f;
		c[i] = ((float)rand() / RAND_MAX - 0.5f) * 100.0f;
	}
	a[0] = 1.00390625f; /* a bf16 tie: rounds to even */
	a[1] = 1.01171875f;
	float *da, *db, *dc;
	unsigned short *dout;
	CK(cudaMalloc(&da, n * sizeof(float)));
	CK(cudaMalloc(&db, n * sizeof(float)));
	CK(cudaMalloc(&dc, n * sizeof(float)));
	CK(cudaMalloc(&dout, n * NOUT * sizeof(unsigned short)));
	CK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dc, c.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	std::vector<unsigned short> out(n * NOUT);
	const char *what[NOUT] = {"__float2bfloat16", "__hadd", "__hmul", "__hsub", "__hfma", "operators * +",
				  "__hmax", "__hmin", "__hfma2 (low)", "__hfma2 (high)", "operator+ on pairs (low)",
				  "__hadd2 (high)", "round trip through float", "__hlt"};

	bf16_ops<<<(n + 255) / 256, 256>>>(da, db, dc, dout, n);
	CK(cudaMemcpy(out.data(), dout, out.size() * sizeof(unsigned short), cudaMemcpyDeviceToHost));
	int bad[NOUT] = {0};
	for (int i = 0; i < n; i++) {
		__nv_bfloat16 x = __float2bfloat16(a[i]), y = __float2bfloat16(b[i]), z = __float2bfloat16(c[i]);
		__nv_bfloat162 p = __floats2bfloat162_rn(a[i], b[i]), q = __halves2bfloat162(z, x);
		__nv_bfloat162 pp = __hmul2(p, p);
		__nv_bfloat162 r = __halves2bfloat162(fma_ref(__low2bfloat16(p), __low2bfloat16(q), __low2bfloat16(pp)),
						      fma_ref(__high2bfloat16(p), __high2bfloat16(q), __high2bfloat16(pp)));
		__nv_bfloat162 s2 = __hadd2(p, q);
		__nv_bfloat16 want[NOUT] = {
			x, __hadd(x, y), __hmul(x, y), __hsub(x, y), fma_ref(x, y, z), __hadd(__hmul(x, y), z),
			__hmax(x, y), __hmin(x, z), __low2bfloat16(r), __high2bfloat16(r), __low2bfloat16(s2),
			__high2bfloat16(s2), __float2bfloat16(__bfloat162float(x) * 0.5f), __hlt(x, y) ? x : y};
		for (int k = 0; k < NOUT; k++) {
			int d = (int)out[i * NOUT + k] - (int)bits_bf(want[k]);
			bad[k] += (k == 4 || k == 8 || k == 9) ? (d > 1 || d < -1) : d != 0;
		}
	}
	for (int k = 0; k < NOUT; k++) {
		char name[128];
		snprintf(name, sizeof(name), "bf16 %s equals the toolkit's host implementation", what[k]);
		expect(name, bad[k] == 0);
	}

	half_ops<<<(n + 255) / 256, 256>>>(da, db, dc, dout, n);
	CK(cudaMemcpy(out.data(), dout, out.size() * sizeof(unsigned short), cudaMemcpyDeviceToHost));
	memset(bad, 0, sizeof(bad));
	for (int i = 0; i < n; i++) {
		__half x = __float2half(a[i]), y = __float2half(b[i]), z = __float2half(c[i]);
		__half2 p = __floats2half2_rn(a[i], b[i]), q = __halves2half2(z, x);
		__half2 pp = __hmul2(p, p);
		__half2 r = __halves2half2(fma_ref(__low2half(p), __low2half(q), __low2half(pp)),
					   fma_ref(__high2half(p), __high2half(q), __high2half(pp)));
		__half2 s2 = __hadd2(p, q);
		__half want[NOUT] = {
			x, __hadd(x, y), __hmul(x, y), __hsub(x, y), fma_ref(x, y, z), __hadd(__hmul(x, y), z),
			__hmax(x, y), __hmin(x, z), __low2half(r), __high2half(r), __float2half(__low2float(s2)),
			__high2half(s2), __float2half(__half2float(x) * 0.5f), __hlt(x, y) ? x : y};
		for (int k = 0; k < NOUT; k++) {
			int d = (int)out[i * NOUT + k] - (int)bits_h(want[k]);
			bad[k] += (k == 4 || k == 8 || k == 9) ? (d > 1 || d < -1) : d != 0;
		}
	}
	for (int k = 0; k < NOUT; k++) {
		char name[128];
		snprintf(name, sizeof(name), "half %s equals the toolkit's host implementation", what[k]);
		expect(name, bad[k] == 0);
	}
	return cpuk_failures ? 1 : 0;
}
