/* SPDX-License-Identifier: MIT
 *
 * blas_kernels.cu - the GEMM kernels of the CPU device's cuBLAS/cuBLASLt
 * stand-ins (cpudev/blas).  nvcc compiles this file into the fatbin
 * that libcublasLt.so.13 embeds and loads with cuModuleLoadData; exec.mk's
 * sim_kernel_lib compiles the same file into libcublasLt.so.13.kern.so, which
 * the CPU device finds next to the library (sim_kernels_image_loaded).
 *
 * Every matrix is addressed through element strides, so one kernel serves
 * both transposes and both orders (column- and row-major):
 *   op(A)[i][p] = A[i * a_rs + p * a_cs + batch * a_bs]   (m x k)
 *   op(B)[p][j] = B[p * b_rs + j * b_cs + batch * b_bs]   (k x n)
 *   C[i][j], D[i][j] likewise (m x n).
 * alpha and beta are fp32 (the compute type); alpha_dev/beta_dev, when not
 * NULL, point at them in device memory (device pointer mode) and are read by
 * the kernel, in stream order.  Accumulation is fp32 in p order, so results
 * are deterministic.  C may alias D (in place): each thread reads C[i][j]
 * before it writes D[i][j] and touches no other element.
 *
 * Grid: x covers rows (blocks of 16), y covers columns (blocks of 16, grid-
 * stride), z the batch (grid-stride).  No shared memory, no barriers: on the
 * CPU device each block runs as a plain loop.
 *
 * Names and typed signatures say what each kernel does (const inputs,
 * non-const outputs): libddp classifies launches by them, as it would any
 * library's kernels.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace simblas {

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
	return __float2bfloat16_rn(x);
}

/* GELU, tanh approximation (what cuBLASLt's GELU epilogues compute) */
__device__ __forceinline__ float gelu(float x)
{
	const float c = 0.7978845608028654f; /* sqrt(2/pi) */
	return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float gelu_grad(float x)
{
	const float c = 0.7978845608028654f;
	float u = c * (x + 0.044715f * x * x * x);
	float t = tanhf(u);
	return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}

/* alpha * sum_p op(A)[i][p] op(B)[p][j] + beta * C[i][j] (C skipped when beta is 0) */
template <typename T, typename TC>
__device__ __forceinline__ float product(int i, int j, int k, float alpha, const T* A, long a_rs, long a_cs,
					 const T* B, long b_rs, long b_cs, float beta, const TC* C, long c_rs,
					 long c_cs)
{
	float acc = 0.0f;
	for (int p = 0; p < k; p++)
		acc += to_f32(A[i * a_rs + p * a_cs]) * to_f32(B[p * b_rs + j * b_cs]);
	float v = alpha * acc;
	if (beta != 0.0f)
		v += beta * to_f32(C[i * c_rs + j * c_cs]);
	return v;
}

/* D = alpha op(A) op(B) + beta C (epilogue DEFAULT) */
template <typename T, typename TC>
__global__ void gemm(int m, int n, int k, int batch, float alpha, float beta, const float* alpha_dev,
		     const float* beta_dev, const T* A, long a_rs, long a_cs, long a_bs, const T* B, long b_rs,
		     long b_cs, long b_bs, const TC* C, long c_rs, long c_cs, long c_bs, TC* D, long d_rs,
		     long d_cs, long d_bs)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= m)
		return;
	float a = alpha_dev ? *alpha_dev : alpha, b = beta_dev ? *beta_dev : beta;
	for (int z = blockIdx.z; z < batch; z += gridDim.z)
		for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < n; j += gridDim.y * blockDim.y) {
			float v = product(i, j, k, a, A + z * a_bs, a_rs, a_cs, B + z * b_bs, b_rs, b_cs, b,
					  C + z * c_bs, c_rs, c_cs);
			D[z * d_bs + i * d_rs + j * d_cs] = from_f32<TC>(v);
		}
}

/* t = alpha op(A) op(B) + beta C + bias[i] (bias may be NULL);
 * gelu_input[i][j] = t when not NULL (GELU_AUX); D = gelu ? GELU(t) : t.
 * Epilogues BIAS, GELU, GELU_BIAS, GELU_AUX, GELU_AUX_BIAS. */
template <typename T, typename TC>
__global__ void gemm_bias_gelu(int m, int n, int k, int batch, float alpha, float beta, const float* alpha_dev,
			       const float* beta_dev, const T* A, long a_rs, long a_cs, long a_bs, const T* B,
			       long b_rs, long b_cs, long b_bs, const TC* C, long c_rs, long c_cs, long c_bs, TC* D,
			       long d_rs, long d_cs, long d_bs, const TC* bias, long bias_bs, int apply_gelu,
			       TC* gelu_input, long aux_rs, long aux_cs, long aux_bs)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= m)
		return;
	float a = alpha_dev ? *alpha_dev : alpha, b = beta_dev ? *beta_dev : beta;
	for (int z = blockIdx.z; z < batch; z += gridDim.z)
		for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < n; j += gridDim.y * blockDim.y) {
			float v = product(i, j, k, a, A + z * a_bs, a_rs, a_cs, B + z * b_bs, b_rs, b_cs, b,
					  C + z * c_bs, c_rs, c_cs);
			if (bias)
				v += to_f32(bias[z * bias_bs + i]);
			if (gelu_input)
				gelu_input[z * aux_bs + i * aux_rs + j * aux_cs] = from_f32<TC>(v);
			D[z * d_bs + i * d_rs + j * d_cs] = from_f32<TC>(apply_gelu ? gelu(v) : v);
		}
}

/* D = (alpha op(A) op(B) + beta C) * GELU'(gelu_input[i][j]) (epilogue DGELU) */
template <typename T, typename TC>
__global__ void gemm_dgelu(int m, int n, int k, int batch, float alpha, float beta, const float* alpha_dev,
			   const float* beta_dev, const T* A, long a_rs, long a_cs, long a_bs, const T* B, long b_rs,
			   long b_cs, long b_bs, const TC* C, long c_rs, long c_cs, long c_bs, TC* D, long d_rs,
			   long d_cs, long d_bs, const TC* gelu_input, long aux_rs, long aux_cs, long aux_bs)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= m)
		return;
	float a = alpha_dev ? *alpha_dev : alpha, b = beta_dev ? *beta_dev : beta;
	for (int z = blockIdx.z; z < batch; z += gridDim.z)
		for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < n; j += gridDim.y * blockDim.y) {
			float v = product(i, j, k, a, A + z * a_bs, a_rs, a_cs, B + z * b_bs, b_rs, b_cs, b,
					  C + z * c_bs, c_rs, c_cs);
			float x = to_f32(gelu_input[z * aux_bs + i * aux_rs + j * aux_cs]);
			D[z * d_bs + i * d_rs + j * d_cs] = from_f32<TC>(v * gelu_grad(x));
		}
}

/* dbias[j] = sum_p op(B)[p][j], p < k (epilogue BGRADB: the bias gradient of
 * the columns of D, not scaled by alpha); one thread per (j, batch). */
template <typename T, typename TC>
__global__ void bias_grad_from_b(int n, int k, int batch, const T* B, long b_rs, long b_cs, long b_bs, TC* dbias,
				 long dbias_bs)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= n)
		return;
	for (int z = blockIdx.y; z < batch; z += gridDim.y) {
		float s = 0.0f;
		for (int p = 0; p < k; p++)
			s += to_f32(B[z * b_bs + p * b_rs + j * b_cs]);
		dbias[z * dbias_bs + j] = from_f32<TC>(s);
	}
}

/* The (input, output) type pairs cuBLAS supports with fp32 compute here. */
#define SIMBLAS_INSTANTIATE(T, TC)                                                                             \
	template __global__ void gemm<T, TC>(int, int, int, int, float, float, const float*, const float*,     \
					     const T*, long, long, long, const T*, long, long, long, const TC*, \
					     long, long, long, TC*, long, long, long);                          \
	template __global__ void gemm_bias_gelu<T, TC>(int, int, int, int, float, float, const float*,           \
						       const float*, const T*, long, long, long, const T*, long, \
						       long, long, const TC*, long, long, long, TC*, long, long, \
						       long, const TC*, long, int, TC*, long, long, long);       \
	template __global__ void gemm_dgelu<T, TC>(int, int, int, int, float, float, const float*, const float*, \
						   const T*, long, long, long, const T*, long, long, long,       \
						   const TC*, long, long, long, TC*, long, long, long, const TC*, \
						   long, long, long);                                            \
	template __global__ void bias_grad_from_b<T, TC>(int, int, int, const T*, long, long, long, TC*, long);

SIMBLAS_INSTANTIATE(float, float)
SIMBLAS_INSTANTIATE(__half, __half)
SIMBLAS_INSTANTIATE(__half, float)
SIMBLAS_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
SIMBLAS_INSTANTIATE(__nv_bfloat16, float)

} /* namespace simblas */
