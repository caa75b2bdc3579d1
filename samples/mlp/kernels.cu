/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - device code of samples/mlp: the shared layers
 * (../common/nn_kernels.cuh) and SGD with momentum, launched once per
 * parameter tensor.
 *
 * Contract: deterministic (no atomics); compiled by nvcc into the embedded
 * fatbin and, for the CPU device, by g++ with sim_kernel.h.
 */
#include "../common/nn_kernels.cuh"

/* PyTorch's SGD with momentum (dampening 0, no Nesterov):
 *   buf = momentum * buf + grad;  param -= lr * buf */
__global__ void sgd_momentum_update(float* param, const float* grad, float* momentum_buf, float lr,
				    float momentum, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float b = momentum * momentum_buf[i] + grad[i];
	momentum_buf[i] = b;
	param[i] -= lr * b;
}
