/* SPDX-License-Identifier: MIT
 *
 * curand_dev.cu - cuRAND's device API on curandState (XORWOW) as kernels
 * use it: curand_init with large, many-bit subsequences and offsets, then
 * curand, curand_uniform, curand_normal (twice: the cached second value),
 * curand_uniform_double, curand_normal_double, curand_log_normal, and
 * skipahead.  Every value against curand_xorwow_ref.h (the toolkit's
 * definitions and its precomputed skip matrices): integers and uniforms bit
 * for bit, normals within what a GPU's fast sine/cosine allows.
 */
#include <cuda_runtime.h>
#include <curand_kernel.h>
#include <cmath>
#include <cstdio>
#include <vector>

#include "check.cuh"
#include "curand_xorwow_ref.h"

struct draws {
	unsigned int u32, after_skip;
	float uf, n1, n2, ln;
	double ud, nd;
};

__host__ __device__ unsigned long long subsequence_of(int i)
{
	return (unsigned long long)i * 2654435761ull + (i % 3 ? (1ull << 50) : 0) + (i % 5 ? (1ull << 63) : 0);
}
__host__ __device__ unsigned long long offset_of(int i) { return (unsigned long long)(i % 13) * 7; }

__global__ void draw_kernel(unsigned long long seed, draws *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	curandState st;
	curand_init(seed, subsequence_of(i), offset_of(i), &st);
	draws d;
	d.u32 = curand(&st);
	d.uf = curand_uniform(&st);
	d.n1 = curand_normal(&st);
	d.n2 = curand_normal(&st);
	d.ud = curand_uniform_double(&st);
	d.nd = curand_normal_double(&st);
	d.ln = curand_log_normal(&st, 0.1f, 0.5f);
	skipahead(1000ull, &st);
	d.after_skip = curand(&st);
	out[i] = d;
}

int main()
{
	const int n = 96;
	const unsigned long long seed = 0x0123456789abcdefULL;
	draws *d_out;
	CK(cudaMalloc(&d_out, n * sizeof(draws)));
	draw_kernel<<<3, 32>>>(seed, d_out, n);
	CK(cudaGetLastError());
	std::vector<draws> got(n);
	CK(cudaMemcpy(got.data(), d_out, n * sizeof(draws), cudaMemcpyDeviceToHost));
	int bad_int = 0, bad_uniform = 0, bad_normal = 0, bad_double = 0, bad_skip = 0;
	for (int i = 0; i < n; i++) {
		struct xorwow_ref s;
		xorwow_ref_init(&s, seed, subsequence_of(i), offset_of(i));
		bad_int += got[i].u32 != xorwow_ref_next(&s);
		bad_uniform += got[i].uf != xorwow_ref_uniform(xorwow_ref_next(&s));
		float a, b;
		unsigned int x = xorwow_ref_next(&s), y = xorwow_ref_next(&s);
		xorwow_ref_normal2(x, y, &a, &b);
		bad_normal += fabsf(got[i].n1 - a) > 1e-5f || fabsf(got[i].n2 - b) > 1e-5f;
		x = xorwow_ref_next(&s);
		y = xorwow_ref_next(&s);
		bad_double += got[i].ud != xorwow_ref_uniform_double(x, y);
		unsigned int x0 = xorwow_ref_next(&s), x1 = xorwow_ref_next(&s);
		unsigned int y0 = xorwow_ref_next(&s), y1 = xorwow_ref_next(&s);
		double u = xorwow_ref_uniform_double(x0, x1);
		double v = ((unsigned long long)y0 ^ ((unsigned long long)y1 << 21)) * (1.1102230246251565e-16 * 2.0) +
			   1.1102230246251565e-16;
		bad_double += fabs(got[i].nd - sin(v * 3.1415926535897932) * sqrt(-2.0 * log(u))) > 1e-9;
		x = xorwow_ref_next(&s);
		y = xorwow_ref_next(&s);
		xorwow_ref_normal2(x, y, &a, &b);
		bad_normal += fabsf(got[i].ln - expf(0.1f + 0.5f * a)) > 1e-5f * (1.f + got[i].ln);
		for (int k = 0; k < 1000; k++)
			xorwow_ref_next(&s);
		bad_skip += got[i].after_skip != xorwow_ref_next(&s);
	}
	int distinct = 0;
	for (int i = 1; i < n; i++)
		distinct += got[i].u32 != got[i - 1].u32;
	printf("# %d threads: %d %d %d %d %d mismatches (int, uniform, normal, double, skipahead)\n", n, bad_int,
	       bad_uniform, bad_normal, bad_double, bad_skip);
	expect("curand_init(seed, subsequence, offset) + curand: cuRAND's XORWOW numbers, bit for bit", bad_int == 0);
	expect("curand_uniform: bit for bit", bad_uniform == 0);
	expect("curand_normal twice (the cached second value) and curand_log_normal", bad_normal == 0);
	expect("curand_uniform_double and curand_normal_double", bad_double == 0);
	expect("skipahead(1000) equals 1000 steps", bad_skip == 0);
	expect("different subsequences give different numbers", distinct == n - 1);
	CK(cudaFree(d_out));
	return cpuk_failures ? 1 : 0;
}
