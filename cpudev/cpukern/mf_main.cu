/* SPDX-License-Identifier: MIT
 *
 * mf_main.cu - a program made of several .cu files (mf_main.cu,
 * mf_kernels.cu, mf_more.cu), each compiled separately by nvcc and linked:
 * kernels in every file, host launchers across files, a __constant__ array
 * in another file set through cudaMemcpyToSymbol, a kernel template
 * instantiated in two files, two kernels of the same name in different
 * namespaces.  Its CPU-device kernel library is built from all three files
 * by one ddp-cpu-kernels command.
 */
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>

#include "check.cuh"
#include "mf_kernels.cuh"

__global__ void mf_square(float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = y[i] * y[i];
}

int main()
{
	const int n = 777;
	const float c[8] = {1.0f, -0.5f, 0.25f, 0.125f, -0.0625f, 0.03125f, 0.0f, 0.01f};
	std::vector<float> x(n), y(n);
	for (int i = 0; i < n; i++)
		x[i] = 0.004f * i - 1.5f;
	float *dx, *dy;
	int *dcount, count = -1;
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&dx, n * sizeof(float)));
	CK(cudaMalloc(&dy, n * sizeof(float)));
	CK(cudaMalloc(&dcount, sizeof(int)));
	CK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	mf_set_coefficients(c, 8);
	CK(cudaGetLastError());
	mf_poly(dx, dy, n, s);
	mf_scale_add(dy, dx, 2.0f, n, s);
	mf_square<<<(n + 255) / 256, 256, 0, s>>>(dy, n);
	mf_count_positive(dx, dcount, n, s);
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&count, dcount, sizeof(int), cudaMemcpyDeviceToHost));
	int bad = 0, pos = 0;
	for (int i = 0; i < n; i++) {
		float acc = 0.0f;
		for (int k = 7; k >= 0; k--)
			acc = acc * x[i] + c[k];
		acc += 2.0f * x[i];
		float want = acc * acc;
		bad += fabsf(y[i] - want) > 1e-5f * fmaxf(1.0f, fabsf(want));
		pos += x[i] > 0.0f;
	}
	expect("kernels of three .cu files, __constant__ coefficients from another file", bad == 0);
	expect("template kernel instantiated in two files; atomic count", count == pos);
	return cpuk_failures ? 1 : 0;
}
