/* SPDX-License-Identifier: MIT
 *
 * rt_basic.cu - a runtime-API program as most are written: cudaMalloc,
 * <<<>>> launches with dim3 variables named gridDim/blockDim in host code,
 * cudaDeviceProp, float4 loads through __ldg/__ldcs/__stcs, __shared__
 * float4 tiles, __launch_bounds__, __restrict__, fast-math intrinsics,
 * atomicInc and float/double atomicAdd, __threadfence, clock64, printf
 * and (last, since it leaves the context failed) a failing assert in a
 * kernel.  Every result is compared with a host reference.
 */
#include <cuda_runtime.h>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "check.cuh"

__global__ void __launch_bounds__(256) saxpy4(const float4 *__restrict__ x, float4 *__restrict__ y, float a, int n4)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n4) {
		float4 v = __ldg(&x[i]);
		float4 w = __ldcs(&y[i]);
		w.x += a * v.x;
		w.y += a * v.y;
		w.z += a * v.z;
		w.w += a * v.w;
		__stcs(&y[i], w);
	}
}

/* Reverses each block's float4s through shared memory; reports whether the
 * shared arrays are 16-byte aligned. */
__global__ void reverse_tiles(const float4 *in, float4 *out, int *misaligned)
{
	__shared__ char pad[3];
	__shared__ float4 tile[128];
	__shared__ float4 tile2[128];
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	pad[threadIdx.x % 3] = 1;
	if (pad[0] == 7)
		atomicAdd(misaligned, 1000);
	tile[threadIdx.x] = in[g];
	__syncthreads();
	tile2[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
	__syncthreads();
	out[g] = tile2[threadIdx.x];
	if (((uintptr_t)tile & 15) || ((uintptr_t)tile2 & 15))
		atomicAdd(misaligned, 1);
}

__global__ void fastmath(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
	y[i] = __expf(v) + __logf(v + 2.0f) + __fdividef(v, 3.0f) + rsqrtf(v + 1.0f) + __frcp_rn(v + 4.0f) +
	       __saturatef(v - 0.5f) + __sinf(v) + __cosf(v) + __powf(v + 1.0f, 1.5f) + fmaxf(v, 0.25f) +
	       __fmaf_rn(v, 2.0f, 1.0f);
}

__global__ void counters(unsigned *wrap, float *fsum, double *dsum, unsigned long long *ticks)
{
	unsigned long long t0 = clock64();
	atomicInc(wrap, 99u);
	atomicAdd(fsum, 0.5f);
	atomicAdd(dsum, 0.25);
	__threadfence();
	long long t1 = clock64();
	if (t1 >= (long long)t0)
		atomicAdd(ticks, 1ull);
}

__global__ void hello(int tag)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		printf("hello from the device: tag %d, %d threads\n", tag, blockDim.x);
}

__global__ void must_be_positive(const int *v)
{
	assert(*v > 0);
}

int main()
{
	const int n4 = 1000, n = 4 * n4;
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	int warpSize = prop.warpSize; /* an identifier, not a macro */
	expect("cudaDeviceProp.warpSize is 32", warpSize == 32);

	std::vector<float> x(n), y(n), ref(n);
	for (int i = 0; i < n; i++) {
		x[i] = 0.001f * i - 1.0f;
		y[i] = 0.5f * (i % 7);
		ref[i] = y[i] + 3.0f * x[i];
	}
	float *dx, *dy;
	CK(cudaMalloc(&dx, n * sizeof(float)));
	CK(cudaMalloc(&dy, n * sizeof(float)));
	CK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	dim3 blockDim(256);
	dim3 gridDim((n4 + blockDim.x - 1) / blockDim.x);
	saxpy4<<<gridDim, blockDim>>>((const float4 *)dx, (float4 *)dy, 3.0f, n4);
	CK(cudaGetLastError());
	CK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += y[i] != ref[i];
	expect("saxpy on float4 (__ldg, __ldcs, __stcs) equals the host", bad == 0);

	/* 16-byte aligned __shared__ float4 tiles */
	const int nt = 128 * 8;
	std::vector<float> in(4 * nt), out(4 * nt);
	for (int i = 0; i < 4 * nt; i++)
		in[i] = (float)i;
	float *din, *dout;
	int *dmis, mis = -1;
	CK(cudaMalloc(&din, in.size() * sizeof(float)));
	CK(cudaMalloc(&dout, in.size() * sizeof(float)));
	CK(cudaMalloc(&dmis, sizeof(int)));
	CK(cudaMemset(dmis, 0, sizeof(int)));
	CK(cudaMemcpy(din, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice));
	reverse_tiles<<<nt / 128, 128>>>((const float4 *)din, (float4 *)dout, dmis);
	CK(cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&mis, dmis, sizeof(int), cudaMemcpyDeviceToHost));
	bad = 0;
	for (int b = 0; b < nt / 128; b++)
		for (int t = 0; t < 128; t++)
			for (int c = 0; c < 4; c++)
				bad += out[4 * (b * 128 + t) + c] != in[4 * (b * 128 + 127 - t) + c];
	expect("float4 tiles reversed through __shared__ memory", bad == 0);
	expect("__shared__ float4 arrays are 16-byte aligned", mis == 0);

	/* fast-math intrinsics against the host's precise functions */
	std::vector<float> fx(512), fy(512);
	for (int i = 0; i < 512; i++)
		fx[i] = 0.003f * i;
	float *dfx, *dfy;
	CK(cudaMalloc(&dfx, 512 * sizeof(float)));
	CK(cudaMalloc(&dfy, 512 * sizeof(float)));
	CK(cudaMemcpy(dfx, fx.data(), 512 * sizeof(float), cudaMemcpyHostToDevice));
	fastmath<<<2, 256>>>(dfx, dfy, 512);
	CK(cudaMemcpy(fy.data(), dfy, 512 * sizeof(float), cudaMemcpyDeviceToHost));
	double worst = 0;
	for (int i = 0; i < 512; i++) {
		double v = fx[i];
		double r = exp(v) + log(v + 2) + v / 3 + 1 / sqrt(v + 1) + 1 / (v + 4) + fmin(fmax(v - 0.5, 0), 1) +
			   sin(v) + cos(v) + pow(v + 1, 1.5) + fmax(v, 0.25) + (2 * v + 1);
		double e = fabs(fy[i] - r) / fmax(1.0, fabs(r));
		worst = e > worst ? e : worst;
	}
	printf("# fast-math: worst relative error %.3g\n", worst);
	expect("fast-math intrinsics within 1e-5 of the host's functions", worst < 1e-5);

	/* atomics, fences, clock64 */
	unsigned *dwrap, wrap;
	float *dfs, fs;
	double *dds, ds;
	unsigned long long *dticks, ticks;
	CK(cudaMalloc(&dwrap, sizeof(unsigned)));
	CK(cudaMalloc(&dfs, sizeof(float)));
	CK(cudaMalloc(&dds, sizeof(double)));
	CK(cudaMalloc(&dticks, sizeof(unsigned long long)));
	CK(cudaMemset(dwrap, 0, sizeof(unsigned)));
	CK(cudaMemset(dfs, 0, sizeof(float)));
	CK(cudaMemset(dds, 0, sizeof(double)));
	CK(cudaMemset(dticks, 0, sizeof(unsigned long long)));
	counters<<<5, 64>>>(dwrap, dfs, dds, dticks); /* 320 threads */
	CK(cudaMemcpy(&wrap, dwrap, sizeof(wrap), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&fs, dfs, sizeof(fs), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&ds, dds, sizeof(ds), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&ticks, dticks, sizeof(ticks), cudaMemcpyDeviceToHost));
	expect("atomicInc wraps at its limit (320 increments mod 100)", wrap == 320 % 100);
	expect("atomicAdd on float and double", fs == 160.0f && ds == 80.0);
	expect("clock64 does not go backwards", ticks == 320);

	hello<<<2, 32>>>(42);
	CK(cudaDeviceSynchronize());
	fflush(stdout);

	/* last: a failing assert fails the launch (the context is then unusable, as on a GPU) */
	int *dv, zero = 0;
	CK(cudaMalloc(&dv, sizeof(int)));
	CK(cudaMemcpy(dv, &zero, sizeof(int), cudaMemcpyHostToDevice));
	must_be_positive<<<1, 1>>>(dv);
	cudaError_t e = cudaDeviceSynchronize();
	printf("# failed assert gave %s\n", cudaGetErrorName(e));
	expect("a failed assert in a kernel fails the launch", e != cudaSuccess);
	return cpuk_failures ? 1 : 0;
}
