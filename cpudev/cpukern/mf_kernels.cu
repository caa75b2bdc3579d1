/* SPDX-License-Identifier: MIT
 * mf_kernels.cu - one of the multi-file program's .cu files: a polynomial
 * whose coefficients sit in a __constant__ array set with
 * cudaMemcpyToSymbol, and a float fill. */
#include "mf_kernels.cuh"

__constant__ float mf_coef[8];

__global__ void mf_poly_kernel(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float acc = 0.0f;
	for (int k = 7; k >= 0; k--)
		acc = acc * x[i] + mf_coef[k];
	y[i] = acc;
}

void mf_set_coefficients(const float *c, int n)
{
	cudaMemcpyToSymbol(mf_coef, c, n * sizeof(float));
}

void mf_poly(const float *x, float *y, int n, cudaStream_t s)
{
	mf_fill<float><<<(n + 127) / 128, 128, 0, s>>>(y, -1.0f, n);
	mf_poly_kernel<<<(n + 127) / 128, 128, 0, s>>>(x, y, n);
}
