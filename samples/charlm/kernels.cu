/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - device code of samples/charlm: the shared layers
 * (../common/nn_kernels.cuh), loss-scale unscaling with an inf/nan check,
 * the global gradient norm and AdamW.
 *
 * Contract: deterministic: the gradient norm is one block's fixed-order tree
 * reduction (no atomics); the found-inf flag is only ever set to 1 (every
 * writer stores the same value).  Compiled by nvcc into the embedded fatbin
 * and, for the CPU device, by g++ with sim_kernel.h.
 */
#include "../common/nn_kernels.cuh"

#define NORM_THREADS 256

/* Mixed precision: g /= loss_scale (g *= inv_scale); *found_inf = 1 when any
 * gradient is inf or nan.  The host zeroes *found_inf before the launch. */
__global__ void amp_unscale_grads(float* grads, int n, float inv_scale, int* found_inf)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float g = grads[i];
	if (!(fabsf(g) <= 3.402823466e38f))
		*found_inf = 1;
	grads[i] = g * inv_scale;
}

/* out[0] = sqrt(sum of g[i]^2) over the whole gradient buffer.  One block of
 * NORM_THREADS threads: each sums a strided slice serially, then a tree
 * reduction in shared memory, in a fixed order. */
__global__ void global_grad_norm(const float* g, int n, float* out)
{
	__shared__ float part[NORM_THREADS];
	int tid = threadIdx.x;
	float s = 0.0f;
	for (int i = tid; i < n; i += NORM_THREADS)
		s += g[i] * g[i];
	part[tid] = s;
	__syncthreads();
	for (int w = NORM_THREADS / 2; w > 0; w /= 2) {
		if (tid < w)
			part[tid] += part[tid + w];
		__syncthreads();
	}
	if (tid == 0)
		out[0] = sqrtf(part[0]);
}

/* AdamW (Loshchilov & Hutter; PyTorch's torch.optim.AdamW) on one parameter
 * tensor, with the gradient clipped to a global norm: the clip factor
 * min(1, max_norm / (grad_norm + 1e-6)) comes from the device scalar that
 * global_grad_norm wrote.  step counts applied updates from 1. */
__global__ void adamw_update(float* p, const float* g, float* m, float* v, const float* grad_norm,
			     float max_norm, float lr, float beta1, float beta2, float eps,
			     float weight_decay, int step, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float clip = max_norm / (grad_norm[0] + 1e-6f);
	if (clip > 1.0f)
		clip = 1.0f;
	float gi = g[i] * clip;
	float mi = beta1 * m[i] + (1.0f - beta1) * gi;
	float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
	m[i] = mi;
	v[i] = vi;
	float mhat = mi / (1.0f - powf(beta1, (float)step));
	float vhat = vi / (1.0f - powf(beta2, (float)step));
	float pi = p[i] * (1.0f - lr * weight_decay);
	p[i] = pi - lr * mhat / (sqrtf(vhat) + eps);
}
