/* SPDX-License-Identifier: MIT
 * mf_kernels.cuh - the multi-file program's shared declarations: host
 * launchers defined in mf_kernels.cu and mf_more.cu, and a kernel template
 * defined here and instantiated in two of its .cu files. */
#pragma once
#include <cuda_runtime.h>

void mf_set_coefficients(const float *c, int n);
void mf_poly(const float *x, float *y, int n, cudaStream_t s);
void mf_scale_add(float *y, const float *x, float a, int n, cudaStream_t s);
void mf_count_positive(const float *x, int *count, int n, cudaStream_t s);

template <typename T> __global__ void mf_fill(T *p, T v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v;
}
