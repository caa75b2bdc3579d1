/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - device code of samples/generic, written the way a C + CUDA
 * image-classifier framework (darknet and its kind) writes its kernels: a
 * handful of generic BLAS-like kernels (fill, copy, axpy, scal, mul) that
 * the forward pass, the backward pass AND the optimizer update all use, a
 * few layer kernels, and one optimizer-specific kernel (adam_kernel) that
 * only sees the moments the generic kernels formed.
 *
 * Conventions (the framework's): a layer's delta is the NEGATIVE gradient
 * of the loss (truth - p), summed over the batch; the update adds.
 *
 * Contract: deterministic (one thread per output element, serial loops in a
 * fixed order, no atomics); compiled by nvcc into the embedded fatbin and,
 * for the CPU device, by g++ with sim_kernel.h.
 */

/* ---- generic BLAS-like kernels ------------------------------------------- */

__global__ void fill_kernel(int N, float ALPHA, float* X)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		X[i] = ALPHA;
}

__global__ void copy_kernel(int N, const float* X, float* Y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		Y[i] = X[i];
}

/* Y += ALPHA * X */
__global__ void axpy_kernel(int N, float ALPHA, const float* X, float* Y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		Y[i] += ALPHA * X[i];
}

/* X *= ALPHA */
__global__ void scal_kernel(int N, float ALPHA, float* X)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		X[i] *= ALPHA;
}

/* Y *= X */
__global__ void mul_kernel(int N, const float* X, float* Y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		Y[i] *= X[i];
}

/* ---- layers ------------------------------------------------------------------ */

/* X[r][c*D + d] = E[token c of record r][d]; the target is byte K. */
__global__ void embed_kernel(const unsigned char* rec, int rec_bytes, const float* E, float* X, int rows,
			     int K, int D)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * K * D)
		return;
	int r = (int)(i / (K * D)), c = (int)(i / D % K), d = (int)(i % D);
	X[i] = E[(int)rec[(long)r * rec_bytes + c] * D + d];
}

/* dE[v][d] += sum over (r, c) with token == v of dX[r][c*D + d], in order */
__global__ void embed_backward_kernel(const unsigned char* rec, int rec_bytes, const float* dX, float* dE,
				      int rows, int K, int D, int V)
{
	long e = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= (long)V * D)
		return;
	int v = (int)(e / D), d = (int)(e % D);
	float s = 0.0f;
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < K; c++)
			if ((int)rec[(long)r * rec_bytes + c] == v)
				s += dX[((long)r * K + c) * D + d];
	dE[e] += s;
}

/* C[r][o] += sum_k A[r][k] * B[o][k]   (output += input * weights^T) */
__global__ void gemm_nt_kernel(int rows, int out, int in, const float* A, const float* B, float* C)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * out)
		return;
	int r = (int)(i / out), o = (int)(i % out);
	float s = 0.0f;
	for (int k = 0; k < in; k++)
		s += A[(long)r * in + k] * B[(long)o * in + k];
	C[i] += s;
}

/* C[o][k] += sum_r A[r][o] * B[r][k]   (weight updates += delta^T * input) */
__global__ void gemm_tn_kernel(int rows, int out, int in, const float* A, const float* B, float* C)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)out * in)
		return;
	int o = (int)(i / in), k = (int)(i % in);
	float s = 0.0f;
	for (int r = 0; r < rows; r++)
		s += A[(long)r * out + o] * B[(long)r * in + k];
	C[i] += s;
}

/* C[r][k] += sum_o A[r][o] * B[o][k]   (previous delta += delta * weights) */
__global__ void gemm_nn_kernel(int rows, int out, int in, const float* A, const float* B, float* C)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * in)
		return;
	int r = (int)(i / in), k = (int)(i % in);
	float s = 0.0f;
	for (int o = 0; o < out; o++)
		s += A[(long)r * out + o] * B[(long)o * in + k];
	C[i] += s;
}

__global__ void add_bias_kernel(float* output, const float* biases, int rows, int n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < (long)rows * n)
		output[i] += biases[i % n];
}

/* bias_updates[o] += sum_r delta[r][o] */
__global__ void backward_bias_kernel(float* bias_updates, const float* delta, int rows, int n)
{
	int o = blockIdx.x * blockDim.x + threadIdx.x;
	if (o >= n)
		return;
	float s = 0.0f;
	for (int r = 0; r < rows; r++)
		s += delta[(long)r * n + o];
	bias_updates[o] += s;
}

__global__ void activate_tanh_kernel(int N, float* X)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		X[i] = tanhf(X[i]);
}

/* G[i] = tanh'(x) given the activation X = tanh(x) */
__global__ void gradient_tanh_kernel(int N, const float* X, float* G)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		G[i] = 1.0f - X[i] * X[i];
}

/* One thread per row: softmax; loss[r] = -log p[target]; delta = truth - p */
__global__ void softmax_cost_kernel(const float* logits, const unsigned char* rec, int rec_bytes, int K,
				    float* loss, float* delta, int rows, int V)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= rows)
		return;
	const float* z = logits + (long)r * V;
	int t = rec[(long)r * rec_bytes + K];
	float m = z[0];
	for (int v = 1; v < V; v++)
		m = fmaxf(m, z[v]);
	float sum = 0.0f;
	for (int v = 0; v < V; v++)
		sum += expf(z[v] - m);
	loss[r] = logf(sum) + m - z[t];
	for (int v = 0; v < V; v++)
		delta[(long)r * V + v] = (v == t ? 1.0f : 0.0f) - expf(z[v] - m) / sum;
}

/* ---- the optimizer's own kernel ---------------------------------------------- */

/* The moments m and v were formed by scal/axpy/mul before this launch;
 * x += rate * mhat / (sqrt(vhat) + eps) (the update adds: deltas are negative
 * gradients). */
__global__ void adam_kernel(int N, float* x, const float* m, const float* v, float B1, float B2, float rate,
			    float eps, int t)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= N)
		return;
	float mhat = m[i] / (1.0f - powf(B1, (float)t));
	float vhat = v[i] / (1.0f - powf(B2, (float)t));
	x[i] = x[i] + rate * mhat / (sqrtf(vhat) + eps);
}

/* ---- --optimizer fused: the framework's one-launch update ------------------- */

/* Every tensor's SGD step (the same arithmetic as the axpy/axpy/scal chain)
 * in ONE launch, the tensors' pointers in a by-value struct; blockIdx.y is
 * the tensor. */
#define UPDATE_MAX_TENSORS 8
struct update_list {
	float* w[UPDATE_MAX_TENSORS];
	float* dw[UPDATE_MAX_TENSORS];
	int n[UPDATE_MAX_TENSORS];
	int count;
	float lr_over_batch, decay_times_batch, momentum;
};

__global__ void apply_updates_kernel(struct update_list L)
{
	int t = blockIdx.y;
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= L.count || i >= L.n[t])
		return;
	float d = L.dw[t][i] + -L.decay_times_batch * L.w[t][i];
	L.w[t][i] += L.lr_over_batch * d;
	L.dw[t][i] = L.momentum * d;
}
