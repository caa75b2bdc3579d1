// SPDX-License-Identifier: MIT
// steptrainer.cu - device code of tests/e2e/progs/steptrainer.c: a gradient
// (g = w - x, the gradient of 0.5 |w - x|^2) and plain SGD on it.
__global__ void steptrainer_grad(const float *w, const float *x, float *g, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		g[i] = w[i] - x[i];
}

__global__ void steptrainer_sgd_update(float *w, const float *g, float lr, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] -= lr * g[i];
}
