/* SPDX-License-Identifier: MIT
 * mf_more.cu - another .cu file of the multi-file program: a kernel of the
 * same name in another namespace, an atomic counter, and the header's
 * template instantiated again (float) and for int. */
#include "mf_kernels.cuh"

namespace more {
__global__ void mf_poly_kernel(float *y, const float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += a * x[i];
}
} // namespace more

__global__ void count_positive(const float *x, int *count, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n && x[i] > 0.0f)
		atomicAdd(count, 1);
}

void mf_scale_add(float *y, const float *x, float a, int n, cudaStream_t s)
{
	more::mf_poly_kernel<<<(n + 63) / 64, 64, 0, s>>>(y, x, a, n);
}

void mf_count_positive(const float *x, int *count, int n, cudaStream_t s)
{
	mf_fill<int><<<1, 1, 0, s>>>(count, 0, 1);
	count_positive<<<(n + 255) / 256, 256, 0, s>>>(x, count, n);
}
