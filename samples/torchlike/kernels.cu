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
 * (foreach_ns.inc).  The bodies are this sample's (same arithmetic as
 * PyTorch's for what the sample uses; reductions are done by one thread
 * per block, deterministic).
 *
 * Lambda kernels.  Most of PyTorch's elementwise kernels are instantiated
 * with a GPU_LAMBDA (`[..] __host__ __device__ (..)`) declared inside the
 * dispatch lambdas of an ATen function: the kernel's name holds
 * `f(args)::{lambda()#i}::operator()() const::{lambda()#j}::...`.  Such a
 * function is reproduced with the same dispatch lambdas in the same order
 * (the discriminators count lambdas of one signature in one scope), the
 * element lambda in the position of the dtype the sample uses.  nvcc adds
 * a pointer to the device closure of a capturing __host__ __device__
 * lambda; the CPU-device build (g++) adds it as a last capture (TL_HD), so
 * both closures have the table's size.  The CPU device cannot name these
 * instances from outside: each is recorded where the lambda is in scope
 * (TL_INSTANCE = sim_kernel.h's SIM_KERNEL_INSTANCE) by calling the
 * (inline) enclosing functions once while the kernel library loads.
 *
 * Layouts: the CUDA 13 ones by default (static assertions against the
 * table's sizes); kernels_cuda12.cu includes this file with
 * TL_LAYOUT_CUDA12 for the 4 KB structs of CUDA <= 12 builds (same names,
 * other parameter sizes: a second module).
 *
 * Not PyTorch's own: the GEMMs (PyTorch calls cuBLAS/cuBLASLt, whose kernels
 * have unmangled names and opaque by-value parameter structs: these are
 * written that way, with cuBLASLt's bias/ReLU/dReLU/bias-gradient
 * epilogues, in fp32 and bf16), and three stand-ins for PyTorch kernels
 * the sample does not reproduce (the cross-entropy loss, its backward's
 * multiplication by the incoming gradient under GradScaler, and clamp(max)
 * in clip_grad_norm_): unmangled and named *_standin.
 *
 * Contract: deterministic (no atomics, fixed summation order).
 */
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>

#ifdef TL_LAYOUT_CUDA12
/* DepthToMaxConfig<false> (4 KB kernel arguments) */
#define TL_MAX_BLOCKS 320
#define TL_MAX_TENSORS(n) ((n) == 1 ? 110 : (n) == 2 ? 64 : (n) == 3 ? 48 : (n) == 4 ? 36 : 30)
#define TL_MAX_TENSORS_SL(n) ((n) == 1 ? 96 : (n) == 2 ? 64 : (n) == 3 ? 48 : (n) == 4 ? 36 : 30)
#define TL_MAX_ADDRESSES 400
typedef unsigned char tl_tensor_idx_t;
#else
/* DepthToMaxConfig<true> (CUDA 13: large kernel arguments) */
#define TL_MAX_BLOCKS 2240
#define TL_MAX_TENSORS(n) ((n) == 1 ? 770 : (n) == 2 ? 448 : (n) == 3 ? 336 : (n) == 4 ? 252 : 210)
#define TL_MAX_TENSORS_SL(n) ((n) == 1 ? 672 : (n) == 2 ? 448 : (n) == 3 ? 336 : (n) == 4 ? 252 : 210)
#define TL_MAX_ADDRESSES 3200
typedef uint16_t tl_tensor_idx_t;
#endif
static constexpr int64_t kChunkSize = 65536;

/* TL_SIZE(cuda13, cuda12): a struct size of the layout being built. */
#ifdef TL_LAYOUT_CUDA12
#define TL_SIZE(c13, c12) (c12)
#else
#define TL_SIZE(c13, c12) (c13)
#endif

/* marks a lambda used (nvcc warns of one only named in decltype) */
template <typename T> static inline void tl_use(const T &) {}
#ifdef __SIMCUDA__
#define TL_INSTANCE(...) SIM_KERNEL_INSTANCE(__VA_ARGS__)
#define TL_HD(...) [__VA_ARGS__, tl_hd_tail_ = (void *)nullptr]
#define TL_HD0 []
#else
template <typename T> static inline void tl_keep(T) {}
#define TL_INSTANCE(...) tl_keep(__VA_ARGS__)
#define TL_HD(...) [__VA_ARGS__] __host__ __device__
#define TL_HD0 [] __host__ __device__
#endif

/* ---- the c10 / ATen types that appear in the names */
namespace c10 {
enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, BFloat16 = 15 };
struct BFloat16 {
	uint16_t x;
	BFloat16() = default;
	__host__ __device__ BFloat16(float f)
	{
		uint32_t u;
		memcpy(&u, &f, 4);
		if ((u & 0x7fffffffu) > 0x7f800000u)
			x = 0x7fc0; /* NaN */
		else
			x = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* round to nearest even */
	}
	__host__ __device__ operator float() const
	{
		uint32_t u = (uint32_t)x << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
};
template <typename T> struct ArrayRef {
	const T *data_;
	size_t length_;
};
struct Scalar {
};
} // namespace c10
namespace at {
struct Tensor {
};
struct TensorIteratorBase {
};
} // namespace at

/* PyTorch's opmath_type: float for the reduced-precision types */
template <typename T> struct tl_opmath { typedef T type; };
template <> struct tl_opmath<c10::BFloat16> { typedef float type; };

/* function_traits of a functor or lambda (its one const operator()) */
template <typename F> struct tl_traits : tl_traits<decltype(&F::operator())> {
};
template <typename C, typename R, typename... A> struct tl_traits<R (C::*)(A...) const> {
	typedef R ret;
	typedef std::tuple<A...> args;
	static constexpr int arity = (int)sizeof...(A);
};
template <typename F, int i> using tl_arg_t = typename std::tuple_element<i, typename tl_traits<F>::args>::type;

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

/* at::native::lerp (Lerp.h): the branch on |weight| for accuracy */
template <typename T, typename W> __host__ __device__ inline T tl_lerp(T self, T end, W weight)
{
	return (weight < W(0.5) && weight > W(-0.5)) ? self + weight * (end - self) : end - (end - self) * (W(1) - weight);
}
template <typename T> struct LerpFunctor {
	__device__ __forceinline__ T operator()(T self, T end, T weight) const { return tl_lerp(self, end, weight); }
};
template <typename T> struct Sqrt {
	__device__ __forceinline__ T operator()(T t) const { return sqrtf(t); }
};

/* ---- elementwise (Loops.cuh / CUDALoops.cuh) */
template <typename T> struct CUDAFunctor_add {      /* a + alpha * b, in opmath */
	typename tl_opmath<T>::type alpha_;
	__device__ __forceinline__ T operator()(T a, T b) const
	{
		typedef typename tl_opmath<T>::type op_t;
		return T((op_t)a + alpha_ * (op_t)b);
	}
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
struct BUnaryFunctor {                               /* f(x, b), b a scalar */
	func_t f;
	arg2_t b;
	__device__ __forceinline__ return_t operator()(arg1_t a) const { return f(a, b); }
};
template <typename arg1_t, typename arg2_t, typename return_t, typename func_t>
struct BinaryFunctor {
	func_t f;
	__device__ __forceinline__ return_t operator()(arg1_t a, arg2_t b) const { return f(a, b); }
};

/* out[i] = f(in1[i], ...): element types from f's signature, as
 * gpu_kernel's function_traits gives them. */
template <int vec_size, typename func_t, typename array_t, bool B>
__global__ void vectorized_elementwise_kernel(int N, func_t f, array_t data)
{
	typedef tl_traits<func_t> tr;
	char *const *p = reinterpret_cast<char *const *>(&data);
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i >= N)
		return;
	typedef typename tr::ret out_t;
	out_t *out = (out_t *)p[0];
	if constexpr (tr::arity == 0)
		out[i] = f();
	else if constexpr (tr::arity == 1)
		out[i] = f(((const tl_arg_t<func_t, 0> *)p[1])[i]);
	else if constexpr (tr::arity == 2)
		out[i] = f(((const tl_arg_t<func_t, 0> *)p[1])[i], ((const tl_arg_t<func_t, 1> *)p[2])[i]);
	else
		out[i] = f(((const tl_arg_t<func_t, 0> *)p[1])[i], ((const tl_arg_t<func_t, 1> *)p[2])[i],
			   ((const tl_arg_t<func_t, 2> *)p[3])[i]);
}

template __global__ void vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, std::array<char *, 3>, false>(
	int, CUDAFunctor_add<float>, std::array<char *, 3>);
template __global__ void vectorized_elementwise_kernel<4, CUDAFunctor_add<c10::BFloat16>, std::array<char *, 3>, false>(
	int, CUDAFunctor_add<c10::BFloat16>, std::array<char *, 3>);
template __global__ void vectorized_elementwise_kernel<4, FillFunctor<float>, std::array<char *, 1>, false>(
	int, FillFunctor<float>, std::array<char *, 1>);
template __global__ void vectorized_elementwise_kernel<4, FillFunctor<int>, std::array<char *, 1>, false>(
	int, FillFunctor<int>, std::array<char *, 1>);
template __global__ void vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<float>, std::array<char *, 2>, false>(
	int, CUDAFunctorOnSelf_add<float>, std::array<char *, 2>);
template __global__ void vectorized_elementwise_kernel<
	4, AUnaryFunctor<float, float, float, binary_internal::DivFunctor<float>>, std::array<char *, 2>, false>(
	int, AUnaryFunctor<float, float, float, binary_internal::DivFunctor<float>>, std::array<char *, 2>);
template __global__ void vectorized_elementwise_kernel<
	4, AUnaryFunctor<float, float, float, binary_internal::MulFunctor<float>>, std::array<char *, 2>, false>(
	int, AUnaryFunctor<float, float, float, binary_internal::MulFunctor<float>>, std::array<char *, 2>);
template __global__ void vectorized_elementwise_kernel<
	4, BUnaryFunctor<float, float, float, binary_internal::MulFunctor<float>>, std::array<char *, 2>, false>(
	int, BUnaryFunctor<float, float, float, binary_internal::MulFunctor<float>>, std::array<char *, 2>);
template __global__ void vectorized_elementwise_kernel<
	4, BinaryFunctor<float, float, float, binary_internal::MulFunctor<float>>, std::array<char *, 3>, false>(
	int, BinaryFunctor<float, float, float, binary_internal::MulFunctor<float>>, std::array<char *, 3>);

/* ---- casting copies (Copy.cu): the loader and storer convert between the
 * tensors' dtypes (LoadWithCast / StoreWithCast), f is the identity of the
 * destination dtype. */
namespace memory {
template <int N> struct LoadWithCast {
	std::array<c10::ScalarType, N> dtypes;
	std::array<uint32_t, N> element_sizes;
};
template <int N> struct StoreWithCast {
	std::array<c10::ScalarType, N> dtypes;
	std::array<uint32_t, N> element_sizes;
};
} // namespace memory
__device__ inline double tl_load_as(const char *p, c10::ScalarType t, int i)
{
	if (t == c10::ScalarType::Double)
		return ((const double *)p)[i];
	if (t == c10::ScalarType::BFloat16)
		return (float)((const c10::BFloat16 *)p)[i];
	return ((const float *)p)[i];
}
__device__ inline void tl_store_as(char *p, c10::ScalarType t, int i, double v)
{
	if (t == c10::ScalarType::Double)
		((double *)p)[i] = v;
	else if (t == c10::ScalarType::BFloat16)
		((c10::BFloat16 *)p)[i] = c10::BFloat16((float)v);
	else
		((float *)p)[i] = (float)v;
}
} // namespace native
} // namespace at

template <int NARGS, typename index_t = uint32_t> struct TrivialOffsetCalculator {
};

namespace at {
namespace native {
template <typename func_t, typename array_t, int elems_per_thread, typename inp_calc_t, typename out_calc_t,
	  typename loader_t, typename storer_t>
__global__ void unrolled_elementwise_kernel(int N, func_t f, array_t data, inp_calc_t ic, out_calc_t oc, loader_t l,
					    storer_t s)
{
	char *const *p = reinterpret_cast<char *const *>(&data);
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i >= N)
		return;
	typedef tl_arg_t<func_t, 0> arg_t;
	tl_store_as(p[0], s.dtypes[0], i, (double)f((arg_t)tl_load_as(p[1], l.dtypes[0], i)));
}

/* x.double() and x.float() of a 0-dim tensor: the direct copy with casts
 * (dispatch on the destination dtype: lambda()#3, its 6th and 7th cases) */
inline void direct_copy_kernel_cuda(at::TensorIteratorBase &)
{
	[&]() {}();
	[&]() {}();
	[&]() {
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {
			auto f = TL_HD0(double x) -> double { return x; };
			TL_INSTANCE(&unrolled_elementwise_kernel<decltype(f), std::array<char *, 2>, 4, TrivialOffsetCalculator<1>,
								 TrivialOffsetCalculator<1>, memory::LoadWithCast<1>,
								 memory::StoreWithCast<1>>);
			tl_use(f);
		}();
		[&]() {
			auto f = TL_HD0(float x) -> float { return x; };
			TL_INSTANCE(&unrolled_elementwise_kernel<decltype(f), std::array<char *, 2>, 4, TrivialOffsetCalculator<1>,
								 TrivialOffsetCalculator<1>, memory::LoadWithCast<1>,
								 memory::StoreWithCast<1>>);
			tl_use(f);
		}();
	}();
}

/* autocast's casts between float and bfloat16 */
template <typename src_t, typename dst_t> inline void converting_copy_kernel_cuda(at::TensorIteratorBase &)
{
	auto f = TL_HD0(src_t x) -> dst_t { return dst_t((float)x); };
	TL_INSTANCE(&vectorized_elementwise_kernel<4, decltype(f), std::array<char *, 2>, false>);
	tl_use(f);
}
template void converting_copy_kernel_cuda<float, c10::BFloat16>(at::TensorIteratorBase &);
template void converting_copy_kernel_cuda<c10::BFloat16, float>(at::TensorIteratorBase &);

/* GradScaler: inv_scale = scale.double().reciprocal().float() */
inline void reciprocal_kernel_cuda(at::TensorIteratorBase &)
{
	[&]() {
		[&]() {
			auto f = TL_HD0(double a) -> double { return 1.0 / a; };
			TL_INSTANCE(&vectorized_elementwise_kernel<4, decltype(f), std::array<char *, 2>, false>);
			tl_use(f);
		}();
	}();
}

/* The single-tensor optimizers (foreach=False): sqrt, addcmul_, addcdiv_ */
inline void sqrt_kernel_cuda(at::TensorIteratorBase &)
{
	[&]() {}();
	[&]() {
		[&]() {}();
		[&]() {
			auto f = TL_HD0(float a) -> float { return sqrtf(a); };
			TL_INSTANCE(&vectorized_elementwise_kernel<4, decltype(f), std::array<char *, 2>, false>);
			tl_use(f);
		}();
	}();
}

/* self + alpha * (t1 * t2), the float case (7th of AT_DISPATCH_ALL_TYPES_AND2) */
inline void addcmul_cuda_kernel(at::TensorIteratorBase &, const c10::Scalar &)
{
	[&]() {}();
	[&]() {
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {
			float alpha = 0;
			auto f = TL_HD(alpha)(float a, float b, float c) -> float { return a + alpha * (b * c); };
			TL_INSTANCE(&vectorized_elementwise_kernel<4, decltype(f), std::array<char *, 4>, false>);
			tl_use(f);
		}();
	}();
}

/* self + alpha * (t1 / t2) */
inline void addcdiv_cuda_kernel(at::TensorIteratorBase &, const c10::Scalar &)
{
	[&]() {}();
	[&]() {
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {}();
		[&]() {
			float alpha = 0;
			auto f = TL_HD(alpha)(float a, float b, float c) -> float { return a + alpha * (b / c); };
			TL_INSTANCE(&vectorized_elementwise_kernel<4, decltype(f), std::array<char *, 4>, false>);
			tl_use(f);
		}();
	}();
}

/* lerp_(end, weight) with a scalar weight (Lerp.cu's anonymous namespace) */
namespace _GLOBAL__N__e59e3811_7_Lerp_cu_e5d96c45_54049 {
inline void lerp_scalar_kernel(at::TensorIteratorBase &, const c10::Scalar &)
{
	[&]() {}();
	[&]() {
		[&]() {}();
		[&]() {
			float weight_val = 0;
			auto f = TL_HD(weight_val)(float self, float end) -> float { return tl_lerp(self, end, weight_val); };
			TL_INSTANCE(&vectorized_elementwise_kernel<4, decltype(f), std::array<char *, 3>, false>);
			tl_use(f);
		}();
	}();
}
} // namespace _GLOBAL__N__e59e3811_7_Lerp_cu_e5d96c45_54049

/* GradScaler.update(): one thread */
__global__ void amp_update_scale_cuda_kernel(float *current_scale, int *growth_tracker, const float *found_inf,
					     double growth_factor, double backoff_factor, int growth_interval)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	if (*found_inf) {
		*current_scale = (float)(*current_scale * backoff_factor);
		*growth_tracker = 0;
	} else {
		int successful = *growth_tracker + 1;
		if (successful == growth_interval) {
			float new_scale = (float)(*current_scale * growth_factor);
			if (new_scale - new_scale == 0.0f) /* finite */
				*current_scale = new_scale;
			*growth_tracker = 0;
		} else {
			*growth_tracker = successful;
		}
	}
}

/* ---- _foreach_norm (ForeachReduceOp.cu) */
struct TensorListAddresses {
	const void *addresses[TL_MAX_ADDRESSES];
};
/* MAX_TENSORS_PER_KERNEL (ForeachReduceOp.cu): 3200 addresses with CUDA >= 13, 400 before */
static_assert(sizeof(TensorListAddresses) == TL_SIZE(25600, 3200), "TensorListAddresses: layout");

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
template <typename scalar_t, typename acc_t, typename factor_t, typename out_t>
struct MeanOps {
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
	if constexpr (std::is_same<decltype(reduction.ops), MeanOps<float, float, float, float>>::value) {
		for (unsigned i = 0; i < reduction.numel; i++)
			s += (float)reduction.src[i];
		*reduction.dst = s * (1.0f / (float)reduction.numel);
	} else {
		for (unsigned i = 0; i < reduction.numel; i++)
			s += (float)reduction.src[i] * (float)reduction.src[i];
		*reduction.dst = sqrtf(s);
	}
}
typedef ReduceOp<float, NormTwoOps<float, float, float, false>, unsigned int, float, 4, 4> NormTwoReduce;
static_assert(sizeof(NormTwoReduce) == 1048, "ReduceOp: PyTorch's size");
template __global__ void reduce_kernel<512, 1, NormTwoReduce>(NormTwoReduce);
/* loss.mean() under GradScaler (the 0-dim loss that scaler.scale multiplies) */
typedef ReduceOp<float, MeanOps<float, float, float, float>, unsigned int, float, 4, 4> MeanReduce;
static_assert(sizeof(MeanReduce) == 1048, "ReduceOp: PyTorch's size");
template __global__ void reduce_kernel<512, 1, MeanReduce>(MeanReduce);

/* ---- the foreach translation units */
namespace _GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>,
						   std::multiplies<float>, float>(
	TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float);
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>,
						   std::plus<float>, float>(
	TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float);
static_assert(sizeof(TensorListMetadata<1>) == TL_SIZE(25768, 3368), "TensorListMetadata<1>: layout");
} // namespace _GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c

namespace _GLOBAL__N__913c22e1_19_ForeachTernaryOp_cu_5285c636 {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<2>, TernaryOpScalarFunctor<float, 2, 2, 0>,
						   LerpFunctor<float>, float>(
	TensorListMetadata<2>, TernaryOpScalarFunctor<float, 2, 2, 0>, LerpFunctor<float>, float);
static_assert(sizeof(TensorListMetadata<2>) == TL_SIZE(24200, 3144), "TensorListMetadata<2>: layout");
} // namespace _GLOBAL__N__913c22e1_19_ForeachTernaryOp_cu_5285c636

namespace _GLOBAL__N__ae7e1889_21_ForeachPointwiseOp_cu_ef478fac {
#include "foreach_ns.inc"
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<3>, PointwiseOpScalarFunctor<float, 3, 3, 0>,
						   std::multiplies<float>, float>(
	TensorListMetadata<3>, PointwiseOpScalarFunctor<float, 3, 3, 0>, std::multiplies<float>, float);
template __global__ void multi_tensor_apply_kernel<TensorListScalarListMetadata<float, 3>,
						   PointwiseOpScalarListFunctor<float, 3, 3, 0>, std::divides<float>>(
	TensorListScalarListMetadata<float, 3>, PointwiseOpScalarListFunctor<float, 3, 3, 0>, std::divides<float>);
static_assert(sizeof(TensorListMetadata<3>) == TL_SIZE(24200, 3144), "TensorListMetadata<3>: layout");
static_assert(sizeof(TensorListScalarListMetadata<float, 3>) == TL_SIZE(25536, 3328), "ScalarList<float,3>: layout");
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
static_assert(sizeof(TensorListScalarListMetadata<float, 1>) == TL_SIZE(26880, 3520), "ScalarList<float,1>: layout");
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
/* the fused optimizers' _foreach_sub_(state_steps, [found_inf] * n) */
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor<float, 2, 2, 0>,
						   std::minus<float>, float>(
	TensorListMetadata<2>, BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::minus<float>, float);
} // namespace _GLOBAL__N__f86471ef_22_ForeachBinaryOpList_cu_a911ec43

/* ---- GradScaler.unscale_ (AmpKernels.cu): the unscale op is a lambda of
 * _amp_foreach_non_finite_check_and_unscale_cuda_, float case (the 2nd of
 * AT_DISPATCH_FLOATING_TYPES_AND_HALF); it reads and rewrites list 0 in
 * place and sets *found_inf on a non-finite value. */
namespace _GLOBAL__N__3be26839_13_AmpKernels_cu_3810c273 {
#include "foreach_ns.inc"
} // namespace _GLOBAL__N__3be26839_13_AmpKernels_cu_3810c273

inline void _amp_foreach_non_finite_check_and_unscale_cuda_(c10::ArrayRef<at::Tensor>, at::Tensor &, const at::Tensor &)
{
	[&]() {
		[&]() {}();
		[&]() {
			float *found_inf_ptr = nullptr;
			const float *inv_scale_ptr = nullptr;
			auto op = TL_HD(found_inf_ptr, inv_scale_ptr)(float val) -> float {
				if (!(val <= 3.402823466e38f && val >= -3.402823466e38f)) /* inf or NaN */
					*found_inf_ptr = 1.f;
				const float inv_scale_val = *inv_scale_ptr;
				return inv_scale_val == 1.f ? val : val * inv_scale_val;
			};
			namespace amp = _GLOBAL__N__3be26839_13_AmpKernels_cu_3810c273;
			TL_INSTANCE(&amp::multi_tensor_apply_kernel<amp::TensorListMetadata<1>, amp::UnaryOpFunctor<float, 1, 1, 0>,
								    decltype(op)>);
			tl_use(op);
		}();
	}();
}

/* ---- fused Adam / AdamW (fused_adam_impl.cu, fused_adamw_impl.cu,
 * fused_adam_utils.cuh): list 0 params, 1 grads, 2 exp_avg, 3 exp_avg_sq;
 * the step counts from state_steps; math in double where PyTorch's is. */
enum class ADAM_MODE : uint8_t { ORIGINAL = 0, ADAMW = 1 };

namespace _GLOBAL__N__b7f847be_18_fused_adam_impl_cu_454205f3 {
#include "foreach_ns.inc"
#include "fused_adam.inc"
template __global__ void multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata<4>,
						   FusedAdamMathFunctor<float, 4, ADAM_MODE::ORIGINAL, false>, const float *,
						   double, double, double, double, double, bool, const float *, const float *>(
	FusedOptimizerTensorListMetadata<4>, FusedAdamMathFunctor<float, 4, ADAM_MODE::ORIGINAL, false>, const float *,
	double, double, double, double, double, bool, const float *, const float *);
static_assert(sizeof(FusedOptimizerTensorListMetadata<4>) == TL_SIZE(25544, 3336), "FusedOptimizer<4>: layout");
} // namespace _GLOBAL__N__b7f847be_18_fused_adam_impl_cu_454205f3

namespace _GLOBAL__N__1f580294_19_fused_adamw_impl_cu_8b44fa23 {
#include "foreach_ns.inc"
#include "fused_adam.inc"
template __global__ void multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata<4>,
						   FusedAdamMathFunctor<float, 4, ADAM_MODE::ADAMW, false>, const float *,
						   double, double, double, double, double, bool, const float *, const float *>(
	FusedOptimizerTensorListMetadata<4>, FusedAdamMathFunctor<float, 4, ADAM_MODE::ADAMW, false>, const float *,
	double, double, double, double, double, bool, const float *, const float *);
} // namespace _GLOBAL__N__1f580294_19_fused_adamw_impl_cu_8b44fa23

/* ---- fused SGD (FusedSgdKernel.cu): list 0 params, 1 grads, 2 momentum
 * buffers (depth 3; depth 2 without momentum) */
namespace _GLOBAL__N__169a4528_17_FusedSgdKernel_cu_a550329a {
#include "foreach_ns.inc"
template <typename scalar_t, int depth>
struct FusedSgdMathFunctor {
	__device__ __forceinline__ void operator()(int64_t chunk_size, TensorListMetadata<depth> &tl, double weight_decay,
						   double momentum, float *lr_ptr, double lr, double dampening,
						   bool nesterov, bool maximize, bool is_first_step, float *grad_scale_ptr,
						   float *found_inf_ptr)
	{
		if (found_inf_ptr && *found_inf_ptr == 1)
			return;
		const double double_lr = lr_ptr != nullptr ? *lr_ptr : lr;
		int64_t n;
		scalar_t *p = mta_list<scalar_t>(tl, 0, chunk_size, &n);
		scalar_t *gr = mta_list<scalar_t>(tl, 1, chunk_size, &n);
		scalar_t *buf = depth > 2 ? mta_list<scalar_t>(tl, depth - 1, chunk_size, &n) : nullptr;
		for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
			float pv = p[i], g = gr[i];
			if (grad_scale_ptr) {
				g = (float)(g / (double)*grad_scale_ptr);
				gr[i] = g;
			}
			if (maximize)
				g *= -1.0f;
			if (weight_decay != 0)
				g = (float)(g + weight_decay * pv);
			if (depth > 2) {
				const float mb = is_first_step ? g : (float)(momentum * buf[i] + (1 - dampening) * g);
				buf[i] = mb;
				g = nesterov ? (float)(g + momentum * mb) : mb;
			}
			pv = (float)(pv - double_lr * g);
			p[i] = pv;
		}
	}
};
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<3>, FusedSgdMathFunctor<float, 3>, double, double,
						   float *, double, double, bool, bool, bool, float *, float *>(
	TensorListMetadata<3>, FusedSgdMathFunctor<float, 3>, double, double, float *, double, double, bool, bool, bool,
	float *, float *);
template __global__ void multi_tensor_apply_kernel<TensorListMetadata<2>, FusedSgdMathFunctor<float, 2>, double, double,
						   float *, double, double, bool, bool, bool, float *, float *>(
	TensorListMetadata<2>, FusedSgdMathFunctor<float, 2>, double, double, float *, double, double, bool, bool, bool,
	float *, float *);
} // namespace _GLOBAL__N__169a4528_17_FusedSgdKernel_cu_a550329a

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
 * output element (and per bias-gradient element).  T is the element type
 * of every operand (float, or bf16 with fp32 accumulation); the pointers
 * are opaque, as in cuBLASLt's by-value parameter blocks. */
struct cublaslt_gemm_params {
	const void *a, *b;      /* operands                                   */
	void *c;                /* output                                     */
	const void *bias;       /* EPI_BIAS                                   */
	void *bias_grad;        /* EPI_BGRAD: sum over rows of the (dReLU'd) A */
	const void *aux;        /* EPI_RELU_AUX / EPI_DRELU: the ReLU output  */
	int m, n, k;
	int epilogue;
	unsigned char reserved[192];
};
#define EPI_BIAS 1
#define EPI_RELU 2
#define EPI_DRELU 4
#define EPI_BGRAD 8

/* Forward: C[m][n] = act(sum_k A[m][k] * B[n][k] + bias[n])  (X W^T + b) */
template <typename T> __device__ inline void tl_gemm_fwd(const cublaslt_gemm_params &p)
{
	int e = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (e >= p.m * p.n)
		return;
	const T *a = (const T *)p.a, *b = (const T *)p.b;
	int r = e / p.n, c = e % p.n;
	float s = 0;
	for (int k = 0; k < p.k; k++)
		s += (float)a[r * p.k + k] * (float)b[c * p.k + k];
	if (p.epilogue & EPI_BIAS)
		s += (float)((const T *)p.bias)[c];
	if ((p.epilogue & EPI_RELU) && s < 0)
		s = 0;
	((T *)p.c)[e] = T(s);
}

/* dgrad: C[m][n] = sum_k G[m][k] * B[k][n], G = A (dReLU'd by aux)  (dY W) */
template <typename T> __device__ inline void tl_gemm_dgrad(const cublaslt_gemm_params &p)
{
	int e = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (e >= p.m * p.n)
		return;
	const T *a = (const T *)p.a, *b = (const T *)p.b, *aux = (const T *)p.aux;
	int r = e / p.n, c = e % p.n;
	float s = 0;
	for (int k = 0; k < p.k; k++) {
		float g = (float)a[r * p.k + k];
		if ((p.epilogue & EPI_DRELU) && (float)aux[r * p.k + k] <= 0)
			g = 0;
		s += g * (float)b[k * p.n + c];
	}
	((T *)p.c)[e] = T(s);
}

/* wgrad: C[m][n] = sum_k G[k][m] * B[k][n]  (dY^T X), and bias_grad[m] =
 * sum_k G[k][m]; G = A dReLU'd by aux. */
template <typename T> __device__ inline void tl_gemm_wgrad(const cublaslt_gemm_params &p)
{
	int e = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (e >= p.m * (p.n + 1))
		return;
	const T *a = (const T *)p.a, *b = (const T *)p.b, *aux = (const T *)p.aux;
	if (e >= p.m * p.n) {
		if (!(p.epilogue & EPI_BGRAD))
			return;
		int r = e - p.m * p.n;
		float s = 0;
		for (int k = 0; k < p.k; k++) {
			float g = (float)a[k * p.m + r];
			if ((p.epilogue & EPI_DRELU) && (float)aux[k * p.m + r] <= 0)
				g = 0;
			s += g;
		}
		((T *)p.bias_grad)[r] = T(s);
		return;
	}
	int r = e / p.n, c = e % p.n;
	float s = 0;
	for (int k = 0; k < p.k; k++) {
		float g = (float)a[k * p.m + r];
		if ((p.epilogue & EPI_DRELU) && (float)aux[k * p.m + r] <= 0)
			g = 0;
		s += g * (float)b[k * p.n + c];
	}
	((T *)p.c)[e] = T(s);
}

extern "C" __global__ void sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize16x16x8_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	tl_gemm_fwd<float>(p);
}
extern "C" __global__ void sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize16x16x8_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	tl_gemm_dgrad<float>(p);
}
extern "C" __global__ void sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize16x16x8_bgrad_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	tl_gemm_wgrad<float>(p);
}
/* autocast bf16: bf16 operands and output, fp32 accumulation (cuBLASLt's
 * bf16bf16_bf16f32_f32 family) */
extern "C" __global__ void sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize16x16x8_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	tl_gemm_fwd<c10::BFloat16>(p);
}
extern "C" __global__ void sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize16x16x8_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	tl_gemm_dgrad<c10::BFloat16>(p);
}
extern "C" __global__ void sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize16x16x8_bgrad_execute_kernel__5x_cublas(
	struct cublaslt_gemm_params p)
{
	tl_gemm_wgrad<c10::BFloat16>(p);
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

/* Stand-in for the part of the loss's backward that reads the incoming
 * 0-dim gradient (MulBackward of scaler.scale(loss): the scale): dlogits,
 * computed with the 1/(rows x accumulation) of the mean, times *grad_out. */
extern "C" __global__ void torchlike_loss_grad_scale_standin(float *dlogits, const float *grad_out, int n)
{
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i < n)
		dlogits[i] *= *grad_out;
}

/* The CPU device records the lambda instances (TL_INSTANCE) by running the
 * enclosing functions once while the kernel library loads. */
#ifdef __SIMCUDA__
static int tl_record_lambda_kernels()
{
	static at::TensorIteratorBase iter;
	static at::Tensor t;
	static c10::Scalar sc;
	at::native::direct_copy_kernel_cuda(iter);
	at::native::converting_copy_kernel_cuda<float, c10::BFloat16>(iter);
	at::native::converting_copy_kernel_cuda<c10::BFloat16, float>(iter);
	at::native::reciprocal_kernel_cuda(iter);
	at::native::sqrt_kernel_cuda(iter);
	at::native::addcmul_cuda_kernel(iter, sc);
	at::native::addcdiv_cuda_kernel(iter, sc);
	at::native::_GLOBAL__N__e59e3811_7_Lerp_cu_e5d96c45_54049::lerp_scalar_kernel(iter, sc);
	at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(c10::ArrayRef<at::Tensor>{}, t, t);
	return 0;
}
[[maybe_unused]] static const int tl_lambda_kernels_recorded = tl_record_lambda_kernels();
#endif
