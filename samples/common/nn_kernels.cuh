/* SPDX-License-Identifier: MIT
 *
 * nn_kernels.cuh - the building blocks the sample models share: embedding
 * lookup, dense layers, softmax cross-entropy, the mean loss.  Included by
 * samples/<name>/kernels.cu; each sample's module carries its own copy.
 *
 * Layouts (all row-major, float32):
 *   records  u8 tokens, `rec_bytes` per record (the data file's records)
 *   E[V][D]  embedding table;  X[rows][C*D] the concatenated embeddings
 *   W[out][in], b[out]  a dense layer  Y = act(X W^T + b)  (PyTorch's layout)
 *
 * Contract: one thread per output element and a serial loop over the
 * reduction dimension, in a fixed order: no atomics, no float races, so the
 * results are bit-identical from run to run on a GPU as on the CPU device.
 * Weight gradients can overwrite (accumulate == 0) or add (accumulate != 0),
 * for gradient accumulation over micro-batches.
 */
#ifndef SAMPLES_NN_KERNELS_CUH
#define SAMPLES_NN_KERNELS_CUH

#define ACT_NONE 0
#define ACT_TANH 1

/* Token of context slot c of row r.  A record holds `per` rows (positions);
 * row r uses record r / per, positions (r % per) + shift + c; a position
 * before the record's start reads the padding token 0. */
__device__ __forceinline__ int nn_token(const unsigned char* rec, int rec_bytes, int per, int shift,
					int r, int c)
{
	int pos = r % per + shift + c;
	return pos < 0 ? 0 : (int)rec[(long)(r / per) * rec_bytes + pos];
}

/* X[r][c*D + d] = E[token(r, c)][d] */
__global__ void embed_forward(const unsigned char* rec, int rec_bytes, int per, int shift,
			      const float* E, float* X, int rows, int C, int D)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * C * D)
		return;
	int r = (int)(i / (C * D));
	int c = (int)(i / D % C);
	int d = (int)(i % D);
	X[i] = E[nn_token(rec, rec_bytes, per, shift, r, c) * D + d];
}

/* Y[r][o] = act(b[o] + sum_i X[r][i] * W[o][i]) */
__global__ void linear_forward(const float* X, const float* W, const float* b, float* Y, int rows,
			       int in, int out, int act)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * out)
		return;
	int r = (int)(i / out), o = (int)(i % out);
	const float* x = X + (long)r * in;
	const float* w = W + (long)o * in;
	float s = b[o];
	for (int k = 0; k < in; k++)
		s += x[k] * w[k];
	Y[i] = act == ACT_TANH ? tanhf(s) : s;
}

/* The fp16 range: a value beyond it becomes +-inf, as when a scaled gradient
 * is stored in half precision (mixed-precision training). */
__device__ __forceinline__ float nn_fp16_range(float x)
{
	if (fabsf(x) < 65520.0f || x != x)
		return x;
	return x > 0.0f ? INFINITY : -INFINITY;
}

/* One thread per row: softmax over V logits, loss[r] = -log p[target] and
 * dlogits[r][v] = (p[v] - [v == target]) * grad_scale (grad_scale = the loss
 * scale over the number of rows averaged).  The target of row r is byte
 * (r % per) + target_off of record r / per.  fp16_range != 0 passes dlogits
 * through the fp16 range (see nn_fp16_range). */
__global__ void softmax_xent(const float* logits, const unsigned char* rec, int rec_bytes, int per,
			     int target_off, float* loss, float* dlogits, int rows, int V,
			     float grad_scale, int fp16_range)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= rows)
		return;
	const float* z = logits + (long)r * V;
	float* dz = dlogits + (long)r * V;
	int t = rec[(long)(r / per) * rec_bytes + r % per + target_off];
	float m = z[0];
	for (int v = 1; v < V; v++)
		m = fmaxf(m, z[v]);
	float sum = 0.0f;
	for (int v = 0; v < V; v++)
		sum += expf(z[v] - m);
	loss[r] = logf(sum) + m - z[t];
	float inv = 1.0f / sum;
	for (int v = 0; v < V; v++) {
		float g = (expf(z[v] - m) * inv - (v == t ? 1.0f : 0.0f)) * grad_scale;
		dz[v] = fp16_range ? nn_fp16_range(g) : g;
	}
}

/* out[0] = mean of loss[0..n), summed serially in index order. */
__global__ void loss_mean(const float* loss, int n, float* out)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	float s = 0.0f;
	for (int i = 0; i < n; i++)
		s += loss[i];
	out[0] = s / (float)n;
}

/* dX[r][i] = (sum_o dY[r][o] * W[o][i]) * act'(X[r][i]) where X is the
 * layer's input as produced by the previous layer (tanh output: 1 - X^2). */
__global__ void linear_backward_input(const float* dY, const float* W, const float* X, float* dX,
				      int rows, int in, int out, int act)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (long)rows * in)
		return;
	int r = (int)(i / in), k = (int)(i % in);
	const float* dy = dY + (long)r * out;
	float s = 0.0f;
	for (int o = 0; o < out; o++)
		s += dy[o] * W[(long)o * in + k];
	if (act == ACT_TANH)
		s *= 1.0f - X[i] * X[i];
	dX[i] = s;
}

/* Weight and bias gradient of one dense layer as float sums:
 * element e < out*in is dW[o][k] = sum_r dY[r][o] * X[r][k];
 * element out*in + o is db[o] = sum_r dY[r][o]. */
__device__ __forceinline__ float nn_linear_weight_grad(const float* X, const float* dY, long e,
						       int rows, int in, int out)
{
	float s = 0.0f;
	if (e < (long)out * in) {
		int o = (int)(e / in), k = (int)(e % in);
		for (int r = 0; r < rows; r++)
			s += dY[(long)r * out + o] * X[(long)r * in + k];
	} else {
		int o = (int)(e - (long)out * in);
		for (int r = 0; r < rows; r++)
			s += dY[(long)r * out + o];
	}
	return s;
}

/* dE[v][d] = sum over (r, c) with token(r, c) == v of dX[r][c*D + d], summed
 * in the order of r, then c.  rows is a multiple of per. */
__device__ __forceinline__ float nn_embed_grad(const unsigned char* rec, int rec_bytes, int per,
					       int shift, const float* dX, int rows, int C, int D,
					       int v, int d)
{
	float s = 0.0f;
	int r = 0;
	for (int b = 0; b < rows / per; b++) {
		const unsigned char* tok = rec + (long)b * rec_bytes;
		for (int t = 0; t < per; t++, r++)
			for (int c = 0; c < C; c++) {
				int pos = t + shift + c;
				if ((pos < 0 ? 0 : (int)tok[pos]) == v)
					s += dX[((long)r * C + c) * D + d];
			}
	}
	return s;
}

#ifndef NN_NO_FLOAT_GRAD_KERNELS
/* dW = sum_r dY^T X and db = sum_r dY (see nn_linear_weight_grad); one
 * thread per element of dW then db.  accumulate != 0 adds to the buffers. */
__global__ void linear_backward_weight(const float* X, const float* dY, float* dW, float* db,
				       int rows, int in, int out, int accumulate)
{
	long e = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= (long)out * (in + 1))
		return;
	float s = nn_linear_weight_grad(X, dY, e, rows, in, out);
	float* g = e < (long)out * in ? dW + e : db + (e - (long)out * in);
	*g = accumulate ? *g + s : s;
}

/* dE[v][d] (see nn_embed_grad); one thread per element of dE. */
__global__ void embed_backward(const unsigned char* rec, int rec_bytes, int per, int shift,
			       const float* dX, float* dE, int rows, int C, int V, int D,
			       int accumulate)
{
	long e = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= (long)V * D)
		return;
	float s = nn_embed_grad(rec, rec_bytes, per, shift, dX, rows, C, D, (int)(e / D), (int)(e % D));
	dE[e] = accumulate ? dE[e] + s : s;
}
#endif

#endif /* SAMPLES_NN_KERNELS_CUH */
