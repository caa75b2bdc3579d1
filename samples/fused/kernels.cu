/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - device code of samples/fused: the shared forward layers
 * (../common/nn_kernels.cuh), backward kernels that store the weight
 * gradients in bf16, and a PyTorch-style fused Adam: ONE launch of
 * multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamFunctor<
 * __nv_bfloat16>, float...> updates every tensor, with the tensors' pointers
 * and sizes inside the by-value TensorListMetadata.
 *
 * Contract: deterministic (no atomics); gradients are summed in fp32 and
 * rounded to bf16 once on store; master weights and Adam state are fp32.
 */
#include <cuda_bf16.h>

#define NN_NO_FLOAT_GRAD_KERNELS
#include "../common/nn_kernels.cuh"
#include "tensor_list.h"

/* dW/db of one dense layer, stored as bf16 (see nn_linear_weight_grad). */
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

/* dE (see nn_embed_grad), stored as bf16. */
__global__ void embed_backward_bf16(const unsigned char* rec, int rec_bytes, int per, int shift,
				    const float* dX, __nv_bfloat16* dE, int rows, int C, int V, int D)
{
	long e = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= (long)V * D)
		return;
	dE[e] = __float2bfloat16(nn_embed_grad(rec, rec_bytes, per, shift, dX, rows, C, D,
					       (int)(e / D), (int)(e % D)));
}

/* PyTorch's TensorListMetadata, for depth n. */
template <int n>
struct TensorListMetadata {
	void* addresses[n][MTA_MAX_TENSORS];
	int sizes[MTA_MAX_TENSORS];
	unsigned char block_to_tensor[MTA_MAX_BLOCKS];
	int block_to_chunk[MTA_MAX_BLOCKS];
	int start_tensor_this_launch;
};
static_assert(sizeof(TensorListMetadata<MTA_DEPTH>) == MTA_STRUCT_BYTES, "layout shared with the host");

/* Adam (Kingma & Ba; PyTorch's FusedAdam with adam_w_mode): fp32 master
 * weights and moments, gradients of type GradT. */
template <typename GradT>
struct FusedAdamFunctor {
	__device__ __forceinline__ void operator()(int chunk_size, TensorListMetadata<4>& tl, float lr,
						   float beta1, float beta2, float eps,
						   float weight_decay, float bias_correction1,
						   float bias_correction2)
	{
		int tensor = tl.block_to_tensor[blockIdx.x];
		int chunk = tl.block_to_chunk[blockIdx.x];
		int n = tl.sizes[tensor] - chunk * chunk_size;
		if (n > chunk_size)
			n = chunk_size;
		float* p = (float*)tl.addresses[0][tensor] + (long)chunk * chunk_size;
		const GradT* g = (const GradT*)tl.addresses[1][tensor] + (long)chunk * chunk_size;
		float* m = (float*)tl.addresses[2][tensor] + (long)chunk * chunk_size;
		float* v = (float*)tl.addresses[3][tensor] + (long)chunk * chunk_size;
		for (int i = threadIdx.x; i < n; i += blockDim.x) {
			float gi = __bfloat162float(g[i]);
			float mi = beta1 * m[i] + (1.0f - beta1) * gi;
			float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
			m[i] = mi;
			v[i] = vi;
			float denom = sqrtf(vi / bias_correction2) + eps;
			p[i] = p[i] * (1.0f - lr * weight_decay) - lr * (mi / bias_correction1) / denom;
		}
	}
};

/* PyTorch's multi_tensor_apply_kernel: every block calls the functor. */
template <typename T, typename U, typename... ArgTypes>
__global__ void multi_tensor_apply_kernel(T tl, U callable, ArgTypes... args)
{
	callable(MTA_CHUNK_SIZE, tl, args...);
}

template __global__ void
multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamFunctor<__nv_bfloat16>, float, float, float,
			  float, float, float, float>(TensorListMetadata<4>, FusedAdamFunctor<__nv_bfloat16>,
						      float, float, float, float, float, float, float);
