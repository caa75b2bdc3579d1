/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - device code of samples/patterns: the mlp model's layers
 * (../common/nn_kernels.cuh, fp32) plus bf16-parameter variants, and the
 * optimizer and gradient-norm kernels of six ways hand-written CUDA C
 * trainers (llm.c and its relatives) are commonly written:
 *
 *   1  adamw_kernel2: AdamW over one flat fp32 buffer, EVERY pointer
 *      non-const (the gradient included)
 *   2  global_norm_squared: per-block partial sums of the squared gradient
 *      written into a slice of the one big activation allocation, then
 *      global_norm_squared_aggregate; AdamW with a host-side clip scale
 *   3  grad_norm (const gradient) then adamw_update once per tensor on
 *      sub-ranges, the gradient passed NON-const next to a const norm pointer
 *   4  bf16 parameters with fp32 master weights: adamw_master per tensor,
 *      each followed by copy_and_cast_kernel (bf16 <- fp32) of that tensor
 *   5  adamw_kernel3 per tensor on sub-ranges of flat buffers: bf16 params,
 *      fp32 master, bf16 gradients, fp32 m and v
 *   6  update_weights: plain SGD under a name no optimizer pattern matches
 *   7  sgd_block: SGD with weight decay on a 2-D block (rows x cols, ld
 *      apart), one thread per column: its integer arguments bound one row
 *      (or a few), the block is rows x ld
 *
 * Contract: deterministic (no atomics; reductions in a fixed order);
 * compiled by nvcc into the embedded fatbin and, for the CPU device, by g++
 * with sim_kernel.h.
 */
#include <cuda_bf16.h>

#include "../common/nn_kernels.cuh"

#define NORM_THREADS 256

/* ---- bf16 parameters (patterns 4 and 5): the forward reads bf16 weights,
 * activations stay fp32 */

__global__ void embed_forward_bf16(const unsigned char* rec, int rec_bytes, int per, int shift,
				   const __nv_bfloat16* E, float* X, int rows, int C, int D)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * C * D)
		return;
	int r = (int)(i / (C * D));
	int c = (int)(i / D % C);
	int d = (int)(i % D);
	X[i] = __bfloat162float(E[nn_token(rec, rec_bytes, per, shift, r, c) * D + d]);
}

__global__ void linear_forward_bf16(const float* X, const __nv_bfloat16* W, const __nv_bfloat16* b, float* Y,
				    int rows, int in, int out, int act)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * out)
		return;
	int r = (int)(i / out), o = (int)(i % out);
	const float* x = X + (long)r * in;
	const __nv_bfloat16* w = W + (long)o * in;
	float s = __bfloat162float(b[o]);
	for (int k = 0; k < in; k++)
		s += x[k] * __bfloat162float(w[k]);
	Y[i] = act == ACT_TANH ? tanhf(s) : s;
}

__global__ void linear_backward_input_bf16(const float* dY, const __nv_bfloat16* W, const float* X, float* dX,
					   int rows, int in, int out, int act)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * in)
		return;
	int r = (int)(i / in), k = (int)(i % in);
	const float* dy = dY + (long)r * out;
	float s = 0.0f;
	for (int o = 0; o < out; o++)
		s += dy[o] * __bfloat162float(W[(long)o * in + k]);
	if (act == ACT_TANH)
		s *= 1.0f - X[i] * X[i];
	dX[i] = s;
}

/* bf16 gradients (pattern 5): summed in fp32, rounded once on store */
__global__ void linear_backward_weight_bf16(const float* X, const float* dY, __nv_bfloat16* dW,
					    __nv_bfloat16* db, int rows, int in, int out)
{
	long e = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= (long)out * (in + 1))
		return;
	float s = nn_linear_weight_grad(X, dY, e, rows, in, out);
	if (e < (long)out * in)
		dW[e] = __float2bfloat16(s);
	else
		db[e - (long)out * in] = __float2bfloat16(s);
}

__global__ void embed_backward_bf16(const unsigned char* rec, int rec_bytes, int per, int shift,
				    const float* dX, __nv_bfloat16* dE, int rows, int C, int V, int D)
{
	long e = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= (long)V * D)
		return;
	dE[e] = __float2bfloat16(nn_embed_grad(rec, rec_bytes, per, shift, dX, rows, C, D,
					       (int)(e / D), (int)(e % D)));
}

/* llm.c's copy_and_cast_kernel: dst[i] = (bf16)src[i] */
__global__ void copy_and_cast_kernel(__nv_bfloat16* dst, const float* src, long n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = __float2bfloat16(src[i]);
}

/* ---- AdamW, written several ways.  m and v follow PyTorch's AdamW;
 * b1c/b2c are the bias corrections 1 - beta^t. */

__device__ __forceinline__ float adamw_one(float p, float g, float* m, float* v, float lr, float beta1,
					   float beta2, float b1c, float b2c, float eps, float wd)
{
	float mi = beta1 * *m + (1.0f - beta1) * g;
	float vi = beta2 * *v + (1.0f - beta2) * g * g;
	*m = mi;
	*v = vi;
	return p - lr * ((mi / b1c) / (sqrtf(vi / b2c) + eps) + wd * p);
}

/* 1: llm.c's train_gpt2_fp32.cu style: one launch over all parameters, no
 * pointer const-qualified */
__global__ void adamw_kernel2(float* params_memory, float* grads_memory, float* m_memory, float* v_memory,
			      long num_parameters, float learning_rate, float beta1, float beta2,
			      float beta1_correction, float beta2_correction, float eps, float weight_decay)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= num_parameters)
		return;
	params_memory[i] = adamw_one(params_memory[i], grads_memory[i], &m_memory[i], &v_memory[i], learning_rate,
				     beta1, beta2, beta1_correction, beta2_correction, eps, weight_decay);
}

/* 2: squared gradient norm in two kernels: NORM_THREADS x gridDim.x threads
 * each sum a strided slice, every block writes its partial sum to
 * out[blockIdx.x]; the aggregate adds the partials into out[0]. */
__global__ void global_norm_squared(float* out, const float* values, long count)
{
	__shared__ float part[NORM_THREADS];
	int tid = threadIdx.x;
	float s = 0.0f;
	for (long i = (long)blockIdx.x * NORM_THREADS + tid; i < count; i += (long)gridDim.x * NORM_THREADS)
		s += values[i] * values[i];
	part[tid] = s;
	__syncthreads();
	for (int w = NORM_THREADS / 2; w > 0; w /= 2) {
		if (tid < w)
			part[tid] += part[tid + w];
		__syncthreads();
	}
	if (tid == 0)
		out[blockIdx.x] = part[0];
}

__global__ void global_norm_squared_aggregate(float* out, int num_partials)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	float s = 0.0f;
	for (int i = 0; i < num_partials; i++)
		s += out[i];
	out[0] = s;
}

/* 2: AdamW on the whole flat buffer with the gradient scaled by grad_scale
 * (the clip factor the host computed from the norm) */
__global__ void adamw_clipped(float* params, const float* grads, float* m, float* v, long n, float lr,
			      float beta1, float beta2, float b1c, float b2c, float eps, float wd,
			      float grad_scale)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	params[i] = adamw_one(params[i], grads[i] * grad_scale, &m[i], &v[i], lr, beta1, beta2, b1c, b2c, eps, wd);
}

/* 3: the norm in one block (fixed-order tree), out[0] = sqrt(sum g^2) */
__global__ void grad_norm(const float* g, int n, float* out)
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

/* 3: AdamW on one tensor, clipped to max_norm by the device norm; the
 * gradient pointer is not const-qualified (the kernel only reads it) */
__global__ void adamw_update(float* p, float* g, float* m, float* v, const float* norm, float max_norm,
			     float lr, float beta1, float beta2, float b1c, float b2c, float eps, float wd, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float clip = max_norm / (norm[0] + 1e-6f);
	if (clip > 1.0f)
		clip = 1.0f;
	p[i] = adamw_one(p[i], g[i] * clip, &m[i], &v[i], lr, beta1, beta2, b1c, b2c, eps, wd);
}

/* 4: AdamW on one tensor's fp32 master weights (the bf16 copy is cast
 * separately) */
__global__ void adamw_master(float* master, const float* g, float* m, float* v, int n, float lr, float beta1,
			     float beta2, float b1c, float b2c, float eps, float wd)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	master[i] = adamw_one(master[i], g[i], &m[i], &v[i], lr, beta1, beta2, b1c, b2c, eps, wd);
}

/* 5: llm.c's adamw_kernel3 shape: bf16 params, fp32 master, bf16 grads,
 * fp32 moments; writes the master and its bf16 copy */
__global__ void adamw_kernel3(__nv_bfloat16* params_memory, float* master_params_memory,
			      const __nv_bfloat16* grads_memory, float* m_memory, float* v_memory,
			      size_t num_parameters, float learning_rate, float beta1, float beta2,
			      float beta1_correction, float beta2_correction, float eps, float weight_decay)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= num_parameters)
		return;
	float p = adamw_one(master_params_memory[i], __bfloat162float(grads_memory[i]), &m_memory[i],
			    &v_memory[i], learning_rate, beta1, beta2, beta1_correction, beta2_correction, eps,
			    weight_decay);
	master_params_memory[i] = p;
	params_memory[i] = __float2bfloat16(p);
}

/* 6: plain SGD, named like nothing an optimizer pattern knows */
__global__ void update_weights(float* w, const float* dw, long n, float lr)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] -= lr * dw[i];
}

/* 7: SGD with weight decay on a rows x cols block, lines ld apart, one
 * thread per column walking the rows: the block is 2-D while every integer
 * argument alone covers one row (or a few) */
__global__ void sgd_block(float* w, const float* dw, int cols, int rows, int ld, float lr, float wd)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	for (int r = 0; r < rows; r++) {
		long i = (long)r * ld + c;
		w[i] -= lr * (dw[i] + wd * w[i]);
	}
}
