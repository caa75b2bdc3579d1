/* SPDX-License-Identifier: MIT
 *
 * templ_ns.cu - kernels in nested namespaces, kernel templates over types,
 * non-type parameters and functor structs passed by value, instantiated by
 * host launchers (the registry must instantiate them too), an extern "C"
 * kernel, and __host__ __device__ helpers shared by host references.
 */
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>

#include "check.cuh"

namespace ml {
namespace ops {
struct Affine {
	float a, b;
	__host__ __device__ float operator()(float x) const { return a * x + b; }
};
struct Square {
	__host__ __device__ float operator()(float x) const { return x * x; }
};

template <typename T, typename F, int UNROLL>
__global__ void map(const T *in, T *out, F f, int n)
{
	int base = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
#pragma unroll
	for (int u = 0; u < UNROLL; u++)
		if (base + u < n)
			out[base + u] = (T)f((float)in[base + u]);
}

template <typename T, int BLOCK>
__global__ void block_max(const T *in, T *out, int n)
{
	__shared__ T s[BLOCK];
	int i = blockIdx.x * BLOCK + threadIdx.x;
	s[threadIdx.x] = i < n ? in[i] : in[0];
	__syncthreads();
	for (int w = BLOCK / 2; w > 0; w /= 2) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] = s[threadIdx.x] < s[threadIdx.x + w] ? s[threadIdx.x + w] : s[threadIdx.x];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = s[0];
}
} // namespace ops

template <typename T, typename F, int UNROLL>
void launch_map(const T *in, T *out, F f, int n, cudaStream_t s)
{
	int threads = 128, per = threads * UNROLL;
	ops::map<T, F, UNROLL><<<(n + per - 1) / per, threads, 0, s>>>(in, out, f, n);
}
} // namespace ml

extern "C" __global__ void c_iota(int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = 3 * i + 1;
}

template <typename T> static std::vector<T> run_map_case(const std::vector<T> &h, bool square, int unroll_case)
{
	int n = (int)h.size();
	T *din, *dout;
	CK(cudaMalloc(&din, n * sizeof(T)));
	CK(cudaMalloc(&dout, n * sizeof(T)));
	CK(cudaMemcpy(din, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	if (square)
		ml::launch_map<T, ml::ops::Square, 4>(din, dout, ml::ops::Square{}, n, s);
	else if (unroll_case)
		ml::launch_map<T, ml::ops::Affine, 2>(din, dout, ml::ops::Affine{2.0f, -1.0f}, n, s);
	else
		ml::launch_map<T, ml::ops::Affine, 1>(din, dout, ml::ops::Affine{0.5f, 3.0f}, n, s);
	CK(cudaStreamSynchronize(s));
	std::vector<T> out(n);
	CK(cudaMemcpy(out.data(), dout, n * sizeof(T), cudaMemcpyDeviceToHost));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(din));
	CK(cudaFree(dout));
	return out;
}

int main()
{
	const int n = 1000;
	std::vector<float> hf(n);
	std::vector<double> hd(n);
	for (int i = 0; i < n; i++) {
		hf[i] = 0.01f * i - 3.0f;
		hd[i] = 0.02 * i - 7.0;
	}
	auto f1 = run_map_case(hf, false, 0), f2 = run_map_case(hf, false, 1), f3 = run_map_case(hf, true, 0);
	auto d1 = run_map_case(hd, true, 0);
	int b1 = 0, b2 = 0, b3 = 0, b4 = 0;
	for (int i = 0; i < n; i++) {
		b1 += f1[i] != ml::ops::Affine{0.5f, 3.0f}(hf[i]);
		b2 += f2[i] != ml::ops::Affine{2.0f, -1.0f}(hf[i]);
		b3 += f3[i] != ml::ops::Square{}(hf[i]);
		b4 += d1[i] != (double)ml::ops::Square{}((float)hd[i]);
	}
	expect("ml::ops::map<float, Affine, 1> (functor by value)", b1 == 0);
	expect("ml::ops::map<float, Affine, 2> (unrolled)", b2 == 0);
	expect("ml::ops::map<float, Square, 4>", b3 == 0);
	expect("ml::ops::map<double, Square, 4>", b4 == 0);

	int nb = (n + 255) / 256;
	std::vector<double> mx(nb);
	double *din, *dout;
	CK(cudaMalloc(&din, n * sizeof(double)));
	CK(cudaMalloc(&dout, nb * sizeof(double)));
	CK(cudaMemcpy(din, hd.data(), n * sizeof(double), cudaMemcpyHostToDevice));
	ml::ops::block_max<double, 256><<<nb, 256>>>(din, dout, n);
	CK(cudaMemcpy(mx.data(), dout, nb * sizeof(double), cudaMemcpyDeviceToHost));
	int bad = 0;
	for (int b = 0; b < nb; b++) {
		double m = hd[b * 256];
		for (int i = b * 256; i < (b + 1) * 256 && i < n; i++)
			m = hd[i] > m ? hd[i] : m;
		bad += mx[b] != m;
	}
	expect("ml::ops::block_max<double, 256> with __shared__ T[BLOCK]", bad == 0);

	int *di, hi[100];
	CK(cudaMalloc(&di, sizeof(hi)));
	c_iota<<<1, 128>>>(di, 100);
	CK(cudaMemcpy(hi, di, sizeof(hi), cudaMemcpyDeviceToHost));
	bad = 0;
	for (int i = 0; i < 100; i++)
		bad += hi[i] != 3 * i + 1;
	expect("extern \"C\" kernel", bad == 0);
	return cpuk_failures ? 1 : 0;
}
