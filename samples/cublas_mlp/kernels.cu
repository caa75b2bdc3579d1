/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - device code of samples/cublas_mlp: the embedding, softmax
 * cross-entropy and mean-loss kernels shared with the other samples
 * (../common/nn_kernels.cuh), bias/activation and bias-gradient kernels,
 * and SGD with momentum; each with a host launcher using <<<>>>.
 *
 * Contract: deterministic (one thread per output element, serial loops in
 * a fixed order, no atomics); launchers only enqueue on the given stream.
 */
#include "../common/nn_kernels.cuh"
#include "kernels.cuh"

enum { BLOCK = 128 };

static unsigned blocks(long n)
{
	return (unsigned)((n + BLOCK - 1) / BLOCK);
}

__global__ void bias_act_forward(float* Y, const float* b, int rows, int out, int act)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * out)
		return;
	float v = Y[i] + b[i % out];
	Y[i] = act == ACT_TANH ? tanhf(v) : v;
}

__global__ void bias_grad(const float* dY, float* db, int rows, int out)
{
	int o = blockIdx.x * blockDim.x + threadIdx.x;
	if (o >= out)
		return;
	float s = 0.0f;
	for (int r = 0; r < rows; r++)
		s += dY[(long)r * out + o];
	db[o] = s;
}

__global__ void tanh_backward(float* dH, const float* H, long n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	dH[i] *= 1.0f - H[i] * H[i];
}

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

void launch_embed_forward(const unsigned char* rec, int rec_bytes, const float* E, float* X, int rows,
			  int C, int D, cudaStream_t s)
{
	embed_forward<<<blocks((long)rows * C * D), BLOCK, 0, s>>>(rec, rec_bytes, 1, 0, E, X, rows, C, D);
}

void launch_bias_act(float* Y, const float* b, int rows, int out, int act, cudaStream_t s)
{
	bias_act_forward<<<blocks((long)rows * out), BLOCK, 0, s>>>(Y, b, rows, out, act);
}

void launch_softmax_xent(const float* logits, const unsigned char* rec, int rec_bytes, int target_off,
			 float* loss, float* dlogits, int rows, int V, float scale, cudaStream_t s)
{
	softmax_xent<<<blocks(rows), BLOCK, 0, s>>>(logits, rec, rec_bytes, 1, target_off, loss, dlogits,
						    rows, V, scale, 0);
}

void launch_loss_mean(const float* loss, int n, float* out, cudaStream_t s)
{
	loss_mean<<<1, 1, 0, s>>>(loss, n, out);
}

void launch_bias_grad(const float* dY, float* db, int rows, int out, cudaStream_t s)
{
	bias_grad<<<blocks(out), BLOCK, 0, s>>>(dY, db, rows, out);
}

void launch_tanh_backward(float* dH, const float* H, long n, cudaStream_t s)
{
	tanh_backward<<<blocks(n), BLOCK, 0, s>>>(dH, H, n);
}

void launch_embed_backward(const unsigned char* rec, int rec_bytes, const float* dX, float* dE, int rows,
			   int C, int V, int D, cudaStream_t s)
{
	embed_backward<<<blocks((long)V * D), BLOCK, 0, s>>>(rec, rec_bytes, 1, 0, dX, dE, rows, C, V, D, 0);
}

void launch_sgd_momentum(float* param, const float* grad, float* buf, float lr, float momentum, int n,
			 cudaStream_t s)
{
	sgd_momentum_update<<<blocks(n), BLOCK, 0, s>>>(param, grad, buf, lr, momentum, n);
}
