/* SPDX-License-Identifier: MIT
 *
 * kernels.cuh - the kernels of samples/gpt (a GPT-2-style trainer written
 * the way llm.c is): token + position encoder, layernorm, the attention's
 * permutes and causal softmax, GELU, residual adds, the fused classifier
 * (softmax + cross-entropy + its backward in one pass), bias gradients,
 * the global gradient norm, AdamW on fp32 master weights and the cast back
 * to the bf16 parameters.  Included by train_gpt.cu (one translation unit,
 * as llm.c's llmc/ headers are).
 *
 * floatX is __nv_bfloat16: parameters, gradients and activations are bf16;
 * every reduction sums in fp32.  Contract: deterministic - one thread per
 * output with a serial loop, or a warp/block reduction in a fixed tree; no
 * atomics.  Gradient kernels ADD into their output (+=), as llm.c's do, so
 * micro-steps accumulate; the trainer zeroes the gradients once per step.
 */
#ifndef GPT_KERNELS_CUH
#define GPT_KERNELS_CUH

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_bf16.h>

namespace cg = cooperative_groups;

typedef __nv_bfloat16 floatX;

#define WARP_SIZE 32
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* ---- encoder ----------------------------------------------------------- */

/* out[b,t,:] = wte[inp[b,t],:] + wpe[t,:] */
__global__ void encoder_forward_kernel(floatX* out, const int* inp, const floatX* wte, const floatX* wpe, int B,
				       int T, int C)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * T * C)
		return;
	int bt = idx / C, c = idx % C, t = bt % T;
	int ix = inp[bt];
	out[idx] = (floatX)((float)wte[ix * C + c] + (float)wpe[t * C + c]);
}

/* dwte[v,c] += sum over positions holding token v of dout[bt,c] (one thread
 * per (v, c), positions in order) */
__global__ void encoder_backward_wte_kernel(floatX* dwte, const floatX* dout, const int* inp, int BT, int V, int C)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= V * C)
		return;
	int v = idx / C, c = idx % C;
	float s = 0.0f;
	int hit = 0;
	for (int bt = 0; bt < BT; bt++)
		if (inp[bt] == v) {
			s += (float)dout[bt * C + c];
			hit = 1;
		}
	if (hit)
		dwte[idx] = (floatX)((float)dwte[idx] + s);
}

/* dwpe[t,c] += sum over b of dout[b,t,c] */
__global__ void encoder_backward_wpe_kernel(floatX* dwpe, const floatX* dout, int B, int T, int C)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= T * C)
		return;
	float s = 0.0f;
	for (int b = 0; b < B; b++)
		s += (float)dout[b * T * C + idx];
	dwpe[idx] = (floatX)((float)dwpe[idx] + s);
}

/* ---- layernorm ----------------------------------------------------------- */

/* one warp per row of C; mean and rstd kept (fp32) for the backward pass */
__global__ void layernorm_forward_kernel(floatX* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
					 const floatX* __restrict__ inp, const floatX* __restrict__ weight,
					 const floatX* __restrict__ bias, int N, int C)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
	if (idx >= N)
		return;
	const floatX* x = inp + (long)idx * C;
	float sum = 0.0f;
	for (int i = warp.thread_rank(); i < C; i += warp.size())
		sum += (float)x[i];
	sum = cg::reduce(warp, sum, cg::plus<float>{});
	float m = sum / C;
	sum = 0.0f;
	for (int i = warp.thread_rank(); i < C; i += warp.size()) {
		float d = (float)x[i] - m;
		sum += d * d;
	}
	sum = cg::reduce(warp, sum, cg::plus<float>{});
	float s = rsqrtf(sum / C + 1e-5f);
	if (warp.thread_rank() == 0) {
		mean[idx] = m;
		rstd[idx] = s;
	}
	floatX* o = out + (long)idx * C;
	for (int c = warp.thread_rank(); c < C; c += warp.size()) {
		float n = s * ((float)__ldcs(x + c) - m);
		__stcs(o + c, (floatX)(n * (float)weight[c] + (float)bias[c]));
	}
}

/* dinp += d layernorm / d inp (one warp per row) */
__global__ void layernorm_backward_input_kernel(floatX* dinp, const floatX* dout, const floatX* inp,
						const floatX* weight, const float* mean, const float* rstd, int N,
						int C)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
	if (idx >= N)
		return;
	const floatX* dy = dout + (long)idx * C;
	const floatX* x = inp + (long)idx * C;
	floatX* dx = dinp + (long)idx * C;
	float m = mean[idx], s = rstd[idx];
	float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
	for (int i = warp.thread_rank(); i < C; i += warp.size()) {
		float norm = ((float)x[i] - m) * s;
		float dnorm = (float)weight[i] * (float)dy[i];
		dnorm_mean += dnorm;
		dnorm_norm_mean += dnorm * norm;
	}
	dnorm_mean = cg::reduce(warp, dnorm_mean, cg::plus<float>{}) / C;
	dnorm_norm_mean = cg::reduce(warp, dnorm_norm_mean, cg::plus<float>{}) / C;
	for (int i = warp.thread_rank(); i < C; i += warp.size()) {
		float norm = ((float)x[i] - m) * s;
		float dnorm = (float)weight[i] * (float)dy[i];
		float d = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
		dx[i] = (floatX)((float)dx[i] + d);
	}
}

/* dweight[c] += sum over rows of dout * norm, dbias[c] += sum of dout (one
 * thread per channel, rows in order) */
__global__ void layernorm_backward_params_kernel(floatX* dweight, floatX* dbias, const floatX* dout,
						 const floatX* inp, const float* mean, const float* rstd, int N,
						 int C)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= C)
		return;
	float dw = 0.0f, db = 0.0f;
	for (int r = 0; r < N; r++) {
		float dy = (float)dout[(long)r * C + c];
		float norm = ((float)inp[(long)r * C + c] - mean[r]) * rstd[r];
		dw += dy * norm;
		db += dy;
	}
	dweight[c] = (floatX)((float)dweight[c] + dw);
	dbias[c] = (floatX)((float)dbias[c] + db);
}

/* ---- residual, GELU, bias -------------------------------------------------- */

__global__ void residual_forward_kernel(floatX* out, const floatX* inp1, const floatX* inp2, int N)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx < N)
		out[idx] = (floatX)((float)inp1[idx] + (float)inp2[idx]);
}

#define GELU_SCALING_FACTOR 0.7978845608f /* sqrt(2 / pi) */

__global__ void gelu_forward_kernel(floatX* out, const floatX* inp, int N)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= N)
		return;
	float x = (float)inp[idx];
	float cube = 0.044715f * x * x * x;
	out[idx] = (floatX)(0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube))));
}

/* d_in_out *= GELU'(inp), in place */
__global__ void gelu_backward_inplace_kernel(floatX* d_in_out, const floatX* inp, int N)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= N)
		return;
	float x = (float)inp[idx];
	float cube = 0.044715f * x * x * x;
	float tanh_arg = GELU_SCALING_FACTOR * (x + cube);
	float tanh_out = tanhf(tanh_arg);
	float cosh_out = coshf(tanh_arg);
	float sech_out = 1.0f / (cosh_out * cosh_out);
	float local_grad = 0.5f * (1.0f + tanh_out) +
			   x * 0.5f * sech_out * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
	d_in_out[idx] = (floatX)(local_grad * (float)d_in_out[idx]);
}

/* dbias[o] += sum over the N rows of dout[r, o] (one thread per column) */
__global__ void matmul_backward_bias_kernel(floatX* dbias, const floatX* dout, int N, int OC)
{
	int o = blockIdx.x * blockDim.x + threadIdx.x;
	if (o >= OC)
		return;
	float s = 0.0f;
	for (int r = 0; r < N; r++)
		s += (float)dout[(long)r * OC + o];
	dbias[o] = (floatX)((float)dbias[o] + s);
}

/* ---- attention ------------------------------------------------------------- */

/* inp (B, T, 3, NH, HS) -> q, k, v each (B, NH, T, HS) */
__global__ void permute_kernel(floatX* q, floatX* k, floatX* v, const floatX* inp, int B, int T, int NH, int HS)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * NH * T * HS)
		return;
	int b = idx / (NH * T * HS);
	int rest = idx % (NH * T * HS);
	int nh = rest / (T * HS);
	rest = rest % (T * HS);
	int t = rest / HS;
	int hs = rest % HS;
	int inp_idx = b * T * 3 * NH * HS + t * 3 * NH * HS + nh * HS + hs;
	q[idx] = inp[inp_idx];
	k[idx] = inp[inp_idx + NH * HS];
	v[idx] = inp[inp_idx + 2 * NH * HS];
}

/* dq, dk, dv (B, NH, T, HS) -> dinp (B, T, 3, NH, HS) */
__global__ void permute_backward_kernel(floatX* dinp, const floatX* dq, const floatX* dk, const floatX* dv, int B,
					int T, int NH, int HS)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * NH * T * HS)
		return;
	int b = idx / (NH * T * HS);
	int rest = idx % (NH * T * HS);
	int nh = rest / (T * HS);
	rest = rest % (T * HS);
	int t = rest / HS;
	int hs = rest % HS;
	int inp_idx = b * T * 3 * NH * HS + t * 3 * NH * HS + nh * HS + hs;
	dinp[inp_idx] = dq[idx];
	dinp[inp_idx + NH * HS] = dk[idx];
	dinp[inp_idx + 2 * NH * HS] = dv[idx];
}

/* inp (B, NH, T, HS) -> out (B, T, NH, HS): the heads side by side */
__global__ void unpermute_kernel(const floatX* inp, floatX* out, int B, int T, int NH, int HS)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * NH * T * HS)
		return;
	int b = idx / (NH * T * HS);
	int rest = idx % (NH * T * HS);
	int nh = rest / (T * HS);
	rest = rest % (T * HS);
	int t = rest / HS;
	int hs = rest % HS;
	out[b * NH * T * HS + t * NH * HS + nh * HS + hs] = inp[idx];
}

__global__ void unpermute_backward_kernel(floatX* dinp, const floatX* dout, int B, int T, int NH, int HS)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= B * NH * T * HS)
		return;
	int b = idx / (NH * T * HS);
	int rest = idx % (NH * T * HS);
	int nh = rest / (T * HS);
	rest = rest % (T * HS);
	int t = rest / HS;
	int hs = rest % HS;
	dinp[idx] = dout[b * NH * T * HS + t * NH * HS + nh * HS + hs];
}

/* att[r, :] = causal softmax(scale * preatt[r, :]) for the N = B*NH*T rows
 * of length T (row r is query position r % T); one warp per row, zeros
 * above the diagonal */
__global__ void softmax_forward_kernel(floatX* att, float scale, const floatX* preatt, int N, int T)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
	if (idx >= N)
		return;
	int own_pos = idx % T;
	const floatX* x = preatt + (long)idx * T;
	floatX* y = att + (long)idx * T;
	float maxval = -INFINITY;
	for (int i = warp.thread_rank(); i <= own_pos; i += warp.size())
		maxval = fmaxf(maxval, scale * (float)x[i]);
	maxval = cg::reduce(warp, maxval, cg::greater<float>{});
	float sum = 0.0f;
	for (int i = warp.thread_rank(); i <= own_pos; i += warp.size())
		sum += expf(scale * (float)x[i] - maxval);
	sum = cg::reduce(warp, sum, cg::plus<float>{});
	float norm = 1.0f / sum;
	for (int i = warp.thread_rank(); i < T; i += warp.size())
		y[i] = i <= own_pos ? (floatX)(expf(scale * (float)x[i] - maxval) * norm) : (floatX)0.0f;
}

/* datt -> dpreatt in place: scale * att * (datt - sum_j att_j datt_j) on
 * and below the diagonal, 0 above (one warp per row) */
__global__ void softmax_backward_inplace_kernel(floatX* datt, const floatX* att, int N, int T, float scale)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
	if (idx >= N)
		return;
	int own_pos = idx % T;
	floatX* d = datt + (long)idx * T;
	const floatX* a = att + (long)idx * T;
	float dot = 0.0f;
	for (int i = warp.thread_rank(); i <= own_pos; i += warp.size())
		dot += (float)a[i] * (float)d[i];
	dot = cg::reduce(warp, dot, cg::plus<float>{});
	warp.sync(); /* every lane has read its d[] before any lane overwrites */
	for (int i = warp.thread_rank(); i < T; i += warp.size())
		d[i] = i <= own_pos ? (floatX)(scale * (float)a[i] * ((float)d[i] - dot)) : (floatX)0.0f;
}

/* ---- classifier -------------------------------------------------------------- */

/* One warp per position: softmax over the V real entries of the padded
 * logits row (Vp), losses[i] += -log p[target], and the logits row is
 * overwritten by its gradient (p - onehot(target)) * dloss (0 in the
 * padding). */
__global__ void fused_classifier_kernel(floatX* logits, float* losses, const int* targets, float dloss, int N,
					int V, int Vp)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
	if (idx >= N)
		return;
	floatX* x = logits + (long)idx * Vp;
	int target = targets[idx];
	float maxval = -INFINITY;
	for (int i = warp.thread_rank(); i < V; i += warp.size())
		maxval = fmaxf(maxval, (float)x[i]);
	maxval = cg::reduce(warp, maxval, cg::greater<float>{});
	float sum = 0.0f;
	for (int i = warp.thread_rank(); i < V; i += warp.size())
		sum += expf((float)x[i] - maxval);
	sum = cg::reduce(warp, sum, cg::plus<float>{});
	float scale = 1.0f / sum;
	float prob_target = expf((float)x[target] - maxval) * scale;
	warp.sync(); /* x[target] read by every lane before it is overwritten */
	if (warp.thread_rank() == 0)
		losses[idx] += -logf(prob_target);
	for (int i = warp.thread_rank(); i < Vp; i += warp.size()) {
		float g = 0.0f;
		if (i < V) {
			float p = expf((float)x[i] - maxval) * scale;
			g = (p - (i == target ? 1.0f : 0.0f)) * dloss;
		}
		x[i] = (floatX)g;
	}
}

/* ---- optimizer ---------------------------------------------------------------- */

/* out[blockIdx.x] = sum of squares of this block's grid-strided share of
 * g[0, n) (fixed-order shared-memory tree); blockDim.x must be 256 */
__global__ void global_norm_squared_kernel(float* out, const floatX* g, size_t n)
{
	__shared__ float part[256];
	float s = 0.0f;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float x = (float)g[i];
		s += x * x;
	}
	part[threadIdx.x] = s;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o >>= 1) {
		if ((int)threadIdx.x < o)
			part[threadIdx.x] += part[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = part[0];
}

/* out[0] = sum of the n partial sums (one thread, in order) */
__global__ void global_norm_squared_aggregate_kernel(float* out, int n)
{
	if (threadIdx.x != 0 || blockIdx.x != 0)
		return;
	float s = 0.0f;
	for (int i = 0; i < n; i++)
		s += out[i];
	out[0] = s;
}

__device__ inline float lerp(float start, float end, float weight)
{
	return fmaf(weight, end, fmaf(-weight, start, start));
}

/* AdamW on the fp32 master weights of one tensor; the gradient (bf16) is
 * multiplied by grad_scale (the clipping factor) first */
__global__ void adamw_kernel(float* master, floatX* grads, float* m_memory, float* v_memory, size_t num_parameters,
			     float learning_rate, float beta1, float beta2, float beta1_correction,
			     float beta2_correction, float eps, float weight_decay, float grad_scale)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= num_parameters)
		return;
	float grad = grad_scale * (float)grads[idx];
	float m = lerp(grad, m_memory[idx], beta1);
	float v = lerp(grad * grad, v_memory[idx], beta2);
	m_memory[idx] = m;
	v_memory[idx] = v;
	m /= beta1_correction;
	v /= beta2_correction;
	float old = master[idx];
	master[idx] = old - learning_rate * (m / (sqrtf(v) + eps) + weight_decay * old);
}

template <class Tdst, class Tsrc> __global__ void copy_and_cast_kernel(Tdst* dst, const Tsrc* src, size_t n)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx < n)
		dst[idx] = (Tdst)src[idx];
}

/* ---- the update of llm.c's bf16 build (train_gpt2.cu, --update layers) ----
 * One launch per tensor KIND covers every layer: grid.y = the number of
 * layers, element i of layer l at ptr + l * stride + i (llm.c's
 * adamw_kernel3, global_norm_squared_kernel and copy_and_cast_kernel with
 * their stride arguments).  The bf16 parameters are written from the fp32
 * master weights by stochastic rounding, seeded per tensor kind. */

/* SquirrelNoise5 (llm.c's Get2dNoiseUint) */
__device__ __host__ inline unsigned int squirrel_noise5(int position, unsigned int seed)
{
	const unsigned int n1 = 0xd2a80a3f, n2 = 0xa884f197, n3 = 0x6C736F4B, n4 = 0xB79F3ABB, n5 = 0x1b56c4f5;
	unsigned int m = (unsigned int)position;
	m *= n1;
	m += seed;
	m ^= (m >> 9);
	m += n2;
	m ^= (m >> 11);
	m *= n3;
	m ^= (m >> 13);
	m += n4;
	m ^= (m >> 15);
	m *= n5;
	m ^= (m >> 17);
	return m;
}

__device__ __host__ inline unsigned int get_2d_noise_uint(int x, int y, unsigned int seed)
{
	return squirrel_noise5(x + 198491317 * y, seed);
}

/* round to bf16 up or down with a probability given by the dropped bits */
__device__ inline void stochastic_rounding(float in, __nv_bfloat16* out, unsigned int seed)
{
	unsigned int random = get_2d_noise_uint(threadIdx.x, blockIdx.x * blockDim.x + blockIdx.y, seed);
	unsigned int threshold = random & 0xFFFF;
	unsigned int float_bits = __float_as_uint(in);
	unsigned int rounded_bits = float_bits & 0x0000FFFF;
	float_bits = (rounded_bits > threshold) ? (float_bits | 0xFFFF) : (float_bits & ~0xFFFF);
	*out = __float2bfloat16_rn(__uint_as_float(float_bits));
}

template <typename Tp, typename Tg>
__device__ void adamw_update(Tp* params_memory, float* master_params_memory, Tg* grads_memory, float* m_memory,
			     float* v_memory, size_t num_parameters, float learning_rate, float beta1, float beta2,
			     float beta1_correction, float beta2_correction, float eps, float weight_decay,
			     float grad_scale, unsigned int seed)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= num_parameters)
		return;
	float grad = grad_scale * (float)grads_memory[idx];
	float m = m_memory[idx];
	float v = v_memory[idx];
	m = lerp(grad, m, beta1);
	m_memory[idx] = m;
	v = lerp(grad * grad, v, beta2);
	v_memory[idx] = v;
	m /= beta1_correction;
	v /= beta2_correction;
	float old_param = master_params_memory != NULL ? master_params_memory[idx] : (float)params_memory[idx];
	float param = old_param - (learning_rate * (m / (sqrtf(v) + eps) + weight_decay * old_param));
	stochastic_rounding(param, &params_memory[idx], seed);
	if (master_params_memory != NULL)
		master_params_memory[idx] = param;
}

/* every pointer non-const, as llm.c writes it */
template <typename Tp, typename Tg>
__global__ void adamw_kernel3(Tp* params_memory, float* master_params_memory, Tg* grads_memory, float* m_memory,
			      float* v_memory, size_t num_parameters, ptrdiff_t w_stride, ptrdiff_t g_stride,
			      ptrdiff_t s_stride, float learning_rate, float beta1, float beta2, float beta1_correction,
			      float beta2_correction, float eps, float weight_decay, float grad_scale, unsigned int seed)
{
	adamw_update(params_memory + blockIdx.y * w_stride,
		     master_params_memory != NULL ? master_params_memory + blockIdx.y * s_stride : NULL,
		     grads_memory + blockIdx.y * g_stride, m_memory + blockIdx.y * s_stride,
		     v_memory + blockIdx.y * s_stride, num_parameters, learning_rate, beta1, beta2, beta1_correction,
		     beta2_correction, eps, weight_decay, grad_scale, seed);
}

/* out[blockIdx.y * gridDim.x + blockIdx.x] += the sum of squares of this
 * block's grid-strided share of slice blockIdx.y (data + blockIdx.y *
 * stride, count elements); blockDim.x must be 256 */
template <class T> __global__ void global_norm_squared_kernel(float* out, const T* data, size_t count, ptrdiff_t stride)
{
	__shared__ float part[256];
	const T* slice = data + blockIdx.y * stride;
	float s = 0.0f;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
		float x = (float)slice[i];
		s += x * x;
	}
	part[threadIdx.x] = s;
	__syncthreads();
	for (int o = blockDim.x / 2; o > 0; o >>= 1) {
		if ((int)threadIdx.x < o)
			part[threadIdx.x] += part[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		size_t out_index = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
		out[out_index] = out[out_index] + part[0];
	}
}

/* dst[l * stride_dst + i] = src[l * stride_src + i], l = blockIdx.y */
template <class Tdst, class Tsrc>
__global__ void copy_and_cast_kernel(Tdst* dst, const Tsrc* src, size_t n, ptrdiff_t stride_dst, ptrdiff_t stride_src)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx < n)
		dst[idx + stride_dst * blockIdx.y] = (Tdst)src[idx + stride_src * blockIdx.y];
}

#endif /* GPT_KERNELS_CUH */
