/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - device code of samples/torchlike: PyTorch's own kernels under
 * their real names and argument layouts, and the cuBLASLt-style GEMMs.
 *
 * Names.  Every kernel PyTorch itself would launch for this model's step is
 * declared here so that nvcc (and g++, for the CPU device) give it exactly
 * the mangled name it has in libtorch_cuda.so of torch 2.15.0+cu132
 * (tests/data/torch-2.15.0+cu132-sm90-kernels.tsv.zst; checked by
 * tests/unit/test_torchlike_names.c, name AND parameter sizes).  PyTorch's
 * foreach kernels live in the anonymous namespace of their .cu file, which
 * nvcc mangles as _GLOBAL__N__<hash>_<len><file>_cu_<hash>: each such
 * namespace is written out here under that exact name (a named namespace
 * mangles the same way), with its own copy of the metadata structs
 * (foreach_ns.inc).  Layouts are the CUDA 13 ones (static assertions below
 * against the table's sizes).  The bodies are this sample's (same
 * arithmetic as PyTorch's for what the sample uses; reductions are done by
 * one thread per block, deterministic).
 *
 * Not PyTorch's own: the GEMMs (PyTorch calls cuBLAS/cuBLASLt, whose kernels
 * have unmangled names and opaque by-value parameter structs: these are
 * written that way, with cuBLASLt's bias/ReLU/dReLU/bias-gradient
 * epilogues), and two stand-ins for PyTorch kernels whose names hold
 * lambda closure types, which a CPU-device build cannot name (the
 * cross-entropy loss, and clamp(max) in clip_grad_norm_): both unmangled
 * and named *_standin.
 *
 * Contract: deterministic (no atomics, fixed summation order).
 */
#include <array>
#include <cstdint>
#include <functional>
#include <type_traits>

#define TL_MAX_BLOCKS 2240
#define TL_MAX_TENSORS(n) ((n) == 1 ? 770 : (n) == 2 ? 448 : (n) == 3 ? 336 : (n) == 4 ? 252 : 210)
#define TL_MAX_TENSORS_SL(n) ((n) == 1 ? 672 : (n) == 2 ? 448 : (n) == 3 ? 336 : (n) == 4 ? 252 : 210)
#define TL_MAX_ADDRESSES 3200
static constexpr int64_t kChunkSize = 65536;

namespace at {
namespace native {

enum class NormType { L0, L1, L2, LInf };

namespace binary_internal {
template <typename T> struct DivFunctor {
	__device__ __forceinline__ T operator()(T a, T b) const { return a / b; }
};
template <typename T> struct MulFunctor {
	__device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
};
} // namespace binary_internal

template <typename T> struct LerpFunctor {
	__device__ __forceinline__ T operator()(T self, T end, T weight) const { return self + weight * (end - self); }
};
template <typename T> struct Sqrt {
	__device__ __forceinline__ T operator()(T t) const { return sqrtf(t); }
};

/* ---- elementwise (Loops.cuh / CUDALoops.cuh) */
template <typename T> struct CUDAFunctor_add {      /* a + alpha * b */
	T alpha_;
	__device__ __forceinline__ T operator()(T a, T b) const { return a + alpha_ * b; }
};
template <typename T> struct CUDAFunctorOnSelf_add { /* self + alpha * other (scalar) */
	T other_;
	T alpha_;
	__device__ __forceinline__ T operator()(T self) const { return self + alpha_ * other_; }
};
template <typename T> struct FillFunctor {
	T value_;
	__device__ __forceinline__ T operator()() const { return value_; }
};
template <typename arg1_t, typename arg2_t, typename return_t, typename func_t>
struct AUnaryFunctor {                               /* f(a, x), a a scalar */
	func_t f;
	arg1_t a;
	__device__ __forceinline__ return_t operator()(arg2_t b) const { return f(a, b); }
};
template <typename arg1_t, typename arg2_t, typename return_t, typename func_t>
struct BinaryFunctor {
	func_t f;
	__device__ __forceinline__ return_t operator()(arg1_t a, arg2_t b) const { return f(a, b); }
};

template <int vec_size, typename func_t, typename array_t, bool B>
__global__ void vectorized_elementwise_kernel(int N, func_t f, array_t data)
{
	constexpr int arity = (int)std::tuple_size<array_t>::value - 1;
	char *const *p = reinterpret_cast<char *const *>(&data);
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i >= N)
		return;
	float *out = (float *)p[0];
	if constexpr (arity == 0)
		out[i] = f();
	else if constexpr (arity == 1)
		out[i] = f(((const float *)p[1])[i]);
	else
		out[i] = f(((const float *)p[1])[i], ((const float *)p[2])[i]);
}

template __global__ void vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, std::array<char *, 3>, false>(
	int, CUDAFunctor_add<float>, std::array<char *, 3>);
template __global__ void vectorized_elementwise_kernel<4, FillFunctor<float>, std::array<char *, 1>, false>(
	int, FillFunctor<float>, std::array<char *, 1>);
template __global__ void vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<float>, std::array<char *, 2>, false>(
	int, CUDAFunctorOnSelf_add<float>, std::array<char *, 2>);
template __global__ void vectorized_elementwise_kernel<
	4, AUnaryFunctor<float, float, float, binary_internal::DivFunctor<float>>, std::array<char *, 2>, false>(
	int, AUnaryFunctor<float, float, float, binary_internal::DivFunctor<float>>, std::array<char *, 2>);

/* ---- _foreach_norm (ForeachReduceOp.cu) */
struct TensorListAddresses {
	const void *addresses[TL_MAX_ADDRESSES];
};
static_assert(sizeof(TensorListAddresses) == 25600, "TensorListAddresses: CUDA 13 layout");

/* Partial sums of squares per chunk: output_per_tensor[chunk_offsets[t] + c]
 * for tensor t = start_tensor_this_launch + the block's tensor (the offsets
 * are a device tensor of prefix sums of chunk counts). */
template <typename T, NormType norm_type, typename out_t, int depth, int r_args_depth, int res_arg_index>
struct LpNormFunctor {
	template <typename TL>
	__device__ __forceinline__ void operator()(int64_t chunk_size, TL &tl, float *output_per_tensor,
						   const int64_t *chunk_offsets)
	{
		if (threadIdx.x != 0)
			return;
		int t = tl.block_to_tensor[blockIdx.x];
		int c = tl.block_to_chunk[blockIdx.x];
		int64_t n = tl.numel_for_tensor[t] - (int64_t)c * chunk_size;
		if (n > chunk_size)
			n = chunk_size;
		const T *x = (const T *)tl.addresses[0][t] + (int64_t)c * chunk_size;
		float s = 0;
		for (int64_t i = 0; i < n; i++)
			s += (float)x[i] * (float)x[i];
		output_per_tensor[chunk_offsets[tl.start_tensor_this_launch + t] + c] = s;
	}
};

/* One block per tensor: the norm of tensor tensor_offset + blockIdx.x into
 * its 0-dim output (addr_struct.addresses[blockIdx.x]). */
template <typename T, NormType norm_type, typename out_t, bool apply_root, typename out_opmath_t>
__global__ void lpnorm_cleanup(const out_opmath_t *output_per_tensor, TensorListAddresses addr_struct,
			       const int64_t *chunk_offsets, int tensor_offset)
{
	if (threadIdx.x != 0)
		return;
	int t = tensor_offset + (int)blockIdx.x;
	out_opmath_t s = 0;
	for (int64_t i = chunk_offsets[t]; i < chunk_offsets[t + 1]; i++)
		s += output_per_tensor[i];
	*(out_t *)addr_struct.addresses[blockIdx.x] = (out_t)(apply_root ? sqrtf(s) : s);
}
template __global__ void lpnorm_cleanup<float, NormType::L2, float, true, float>(const float *, TensorListAddresses,
										 const int64_t *, int);

/* ---- torch.linalg.vector_norm (ReduceOps: reduce_kernel + NormTwoOps).
 * The struct has PyTorch's size (1048 bytes); its contents are this
 * sample's: source, destination, element count. */
template <typename scalar_t, typename acc_t, typename out_t, bool B>
struct NormTwoOps {
};
template <typename scalar_t, typename ops_t, typename index_t, typename out_scalar_t, int vt0, int input_vec_size>
struct ReduceOp {
	ops_t ops;
	const scalar_t *src;
	out_scalar_t *dst;
	index_t numel;
	unsigned char reserved[1048 - 32];
};
template <int nt, int output_vec_size, typename R>
__global__ void reduce_kernel(R reduction)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	float s = 0;
	for (unsigned i = 0; i < reduction.numel; i++)
		s += (float)reduction.src[i] * (float)reduction.src[i];
	*reduction.dst = sqrtf(s);
}
typedef ReduceOp<float, NormTwoOps<float, float, float, false>, unsigned int, float, 4, 4> NormTwoReduce;
static_assert(sizeof(NormTwoReduce) == 1048, "ReduceOp: PyTorch's size");
template __global__ void reduce_kernel<512, 1, NormTwoReduce>(NormTwoReduce);

/* ---- the foreach translation units */
namespace _GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>,
						   std::multiplies<float>, float>(
	TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float);
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>,
						   std::plus<float>, float>(
	TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float);
static_assert(sizeof(TensorListMetadata<1>) == 25768, "TensorListMetadata<1>: CUDA 13 layout");
} // namespace _GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c

namespace _GLOBAL__N__913c22e1_19_ForeachTernaryOp_cu_5285c636 {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<2>, TernaryOpScalarFunctor<float, 2, 2, 0>,
						   LerpFunctor<float>, float>(
	TensorListMetadata<2>, TernaryOpScalarFunctor<float, 2, 2, 0>, LerpFunctor<float>, float);
static_assert(sizeof(TensorListMetadata<2>) == 24200, "TensorListMetadata<2>: CUDA 13 layout");
} // namespace _GLOBAL__N__913c22e1_19_ForeachTernaryOp_cu_5285c636

namespace _GLOBAL__N__ae7e1889_21_ForeachPointwiseOp_cu_ef478fac {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<3>, PointwiseOpScalarFunctor<float, 3, 3, 0>,
						   std::multiplies<float>, float>(
	TensorListMetadata<3>, PointwiseOpScalarFunctor<float, 3, 3, 0>, std::multiplies<float>, float);
template __global__ void multi_tensor_apply_kernel<TensorListScalarListMetadata<float, 3>,
						   PointwiseOpScalarListFunctor<float, 3, 3, 0>, std::divides<float>>(
	TensorListScalarListMetadata<float, 3>, PointwiseOpScalarListFunctor<float, 3, 3, 0>, std::divides<float>);
static_assert(sizeof(TensorListMetadata<3>) == 24200, "TensorListMetadata<3>: CUDA 13 layout");
static_assert(sizeof(TensorListScalarListMetadata<float, 3>) == 25536, "ScalarList<float,3>: CUDA 13 layout");
} // namespace _GLOBAL__N__ae7e1889_21_ForeachPointwiseOp_cu_ef478fac

namespace _GLOBAL__N__637ba612_17_ForeachUnaryOp_cu_77fe623d {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<2>, UnaryOpFunctor<float, 2, 1, 1>, Sqrt<float>>(
	TensorListMetadata<2>, UnaryOpFunctor<float, 2, 1, 1>, Sqrt<float>);
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<1>, ZeroFunctor<float, 1, 1, 0>>(
	TensorListMetadata<1>, ZeroFunctor<float, 1, 1, 0>);
} // namespace _GLOBAL__N__637ba612_17_ForeachUnaryOp_cu_77fe623d

namespace _GLOBAL__N__832b9cb6_28_ForeachBinaryOpScalarList_cu_dda10a69 {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListScalarListMetadata<float, 1>,
						   BinaryOpScalarListFunctor<float, 1, 1, 0>, std::divides<float>>(
	TensorListScalarListMetadata<float, 1>, BinaryOpScalarListFunctor<float, 1, 1, 0>, std::divides<float>);
static_assert(sizeof(TensorListScalarListMetadata<float, 1>) == 26880, "ScalarList<float,1>: CUDA 13 layout");
} // namespace _GLOBAL__N__832b9cb6_28_ForeachBinaryOpScalarList_cu_dda10a69

namespace _GLOBAL__N__99dedba0_18_ForeachReduceOp_cu_b83ec48c {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<1>, LpNormFunctor<float, NormType::L2, float, 1, 1, 0>,
						   float *, const int64_t *>(
	TensorListMetadata<1>, LpNormFunctor<float, NormType::L2, float, 1, 1, 0>, float *, const int64_t *);
} // namespace _GLOBAL__N__99dedba0_18_ForeachReduceOp_cu_b83ec48c

namespace _GLOBAL__N__d2244290_30_ForeachBinaryOpScalarTensor_cu_64fe0ca5 {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarTensorFunctor<float, 1, 1, 0>,
						   std::multiplies<float>, float *, float>(
	TensorListMetadata<1>, BinaryOpScalarTensorFunctor<float, 1, 1, 0>, std::multiplies<float>, float *, float);
} // namespace _GLOBAL__N__d2244290_30_ForeachBinaryOpScalarTensor_cu_64fe0ca5

namespace _GLOBAL__N__f86471ef_22_ForeachBinaryOpList_cu_a911ec43 {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor<float, 2, 2, 0>,
						   std::plus<float>, float>(
	TensorListMetadata<2>, BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float);
} // namespace _GLOBAL__N__f86471ef_22_ForeachBinaryOpList_cu_a911ec43

/* ---- torch.stack / cat of contiguous tensors (Shape.cu) */
namespace _GLOBAL__N__f1f992fe_8_Shape_cu_49f7391c {
template <unsigned N> struct OpaqueType {
	char data[N];
};
template <typename IndexType, unsigned Dims> struct TensorSizeStride {
	IndexType tensorSize[Dims];
	IndexType tensorStride[Dims];
};
template <typename T, typename IndexType, int n, int stride_size> struct CatArrInputTensorMetadata {
	const T *input[n];
	IndexType offset[n];
	IndexType dimSize[n];
	IndexType nElements[n];
	bool isContiguous[n];
	TensorSizeStride<IndexType, 4> tensorStride[stride_size];
};
/* Input blockIdx.y of the batch goes to output + offset[y]. */
template <typename T, typename IndexType, int Dims, int batch_size, int stride_size>
__global__ void CatArrayBatchedCopy_contig(T *output, CatArrInputTensorMetadata<T, IndexType, batch_size, stride_size> inputs,
					   TensorSizeStride<IndexType, 4> os, const int concatDim, IndexType dimStride)
{
	IndexType in = blockIdx.y;
	IndexType i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < inputs.nElements[in])
		output[inputs.offset[in] + i] = inputs.input[in][i];
}
static_assert(sizeof(CatArrInputTensorMetadata<OpaqueType<4>, unsigned int, 128, 1>) == 2720, "cat metadata size");
template __global__ void CatArrayBatchedCopy_contig<OpaqueType<4>, unsigned int, 1, 128, 1>(
	OpaqueType<4> *, CatArrInputTensorMetadata<OpaqueType<4>, unsigned int, 128, 1>, TensorSizeStride<unsigned int, 4>,
	const int, unsigned int);
} // namespace _GLOBAL__N__f1f992fe_8_Shape_cu_49f7391c

} // namespace native
} // namespace at

/* ---- cuBLASLt-style GEMMs: C[m][n] = sum_k A[m][k] * B'[.] with the
 * epilogues of cublasLtMatmul.  All matrices row-major.  One thread per
 * output element (and per bias-gradient element). */
struct cublaslt_gemm_params {
	const float *a, *b;     /* operands                                   */
	float *c;               /* output                                     */
	const float *bias;      /* EPI_BIAS                                   */
	float *bias_grad;       /* EPI_BGRAD: sum over rows of the (dReLU'd) A */
	const float *aux;       /* EPI_RELU_AUX / EPI_DRELU: the ReLU output  */
	int m, n, k;
	int epilogue;
	unsigned char reserved[192];
};
#define EPI_BIAS 1
#define EPI_RELU 2
#define EPI_DRELU 4
#define EPI_BGRAD 8

/* Forward: C[m][n] = act(sum_k A[m][k] * B[n][k] + bias[n])  (X W^T + b) */
extern "C" __global__ void sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize16x16x8_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	int e = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (e >= p.m * p.n)
		return;
	int r = e / p.n, c = e % p.n;
	float s = 0;
	for (int k = 0; k < p.k; k++)
		s += p.a[r * p.k + k] * p.b[c * p.k + k];
	if (p.epilogue & EPI_BIAS)
		s += p.bias[c];
	if ((p.epilogue & EPI_RELU) && s < 0)
		s = 0;
	p.c[e] = s;
}

/* dgrad: C[m][n] = sum_k G[m][k] * B[k][n], G = A (dReLU'd by aux)  (dY W) */
extern "C" __global__ void sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize16x16x8_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	int e = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (e >= p.m * p.n)
		return;
	int r = e / p.n, c = e % p.n;
	float s = 0;
	for (int k = 0; k < p.k; k++) {
		float g = p.a[r * p.k + k];
		if ((p.epilogue & EPI_DRELU) && p.aux[r * p.k + k] <= 0)
			g = 0;
		s += g * p.b[k * p.n + c];
	}
	p.c[e] = s;
}

/* wgrad: C[m][n] = sum_k G[k][m] * B[k][n]  (dY^T X), and bias_grad[m] =
 * sum_k G[k][m]; G = A dReLU'd by aux. */
extern "C" __global__ void sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize16x16x8_bgrad_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	int e = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (e >= p.m * (p.n + 1))
		return;
	if (e >= p.m * p.n) {
		if (!(p.epilogue & EPI_BGRAD))
			return;
		int r = e - p.m * p.n;
		float s = 0;
		for (int k = 0; k < p.k; k++) {
			float g = p.a[k * p.m + r];
			if ((p.epilogue & EPI_DRELU) && p.aux[k * p.m + r] <= 0)
				g = 0;
			s += g;
		}
		p.bias_grad[r] = s;
		return;
	}
	int r = e / p.n, c = e % p.n;
	float s = 0;
	for (int k = 0; k < p.k; k++) {
		float g = p.a[k * p.m + r];
		if ((p.epilogue & EPI_DRELU) && p.aux[k * p.m + r] <= 0)
			g = 0;
		s += g * p.b[k * p.n + c];
	}
	p.c[e] = s;
}

/* Stand-in for F.cross_entropy (log_softmax + nll_loss, whose PyTorch
 * kernels a CPU-device build cannot name): per row the loss, and
 * dlogits = scale * (softmax - onehot(target)). */
extern "C" __global__ void torchlike_cross_entropy_standin(const float *logits, const int64_t *target,
							   float *loss_rows, float *dlogits, int rows, int classes,
							   float scale)
{
	int r = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (r >= rows)
		return;
	const float *l = logits + (int64_t)r * classes;
	float mx = l[0];
	for (int c = 1; c < classes; c++)
		mx = l[c] > mx ? l[c] : mx;
	float z = 0;
	for (int c = 0; c < classes; c++)
		z += expf(l[c] - mx);
	int t = (int)target[r];
	loss_rows[r] = logf(z) + mx - l[t];
	for (int c = 0; c < classes; c++)
		dlogits[(int64_t)r * classes + c] = scale * (expf(l[c] - mx) / z - (c == t ? 1.0f : 0.0f));
}

/* Stand-in for torch.clamp(x, max=m) on clip_grad_norm_'s 0-dim
 * coefficient (PyTorch's clamp kernel is a lambda instantiation). */
extern "C" __global__ void torchlike_clamp_max_standin(float *out, const float *in, float max, int n)
{
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i < n)
		out[i] = in[i] < max ? in[i] : max;
}
