/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - the device code of the runtime-API test program (main.cu
 * #includes it; exec.mk's sim_kernel_lib builds it alone into
 * test_cudart*.kern.so for the CPU device).  Kernels only: g++ never sees a
 * <<<>>> launch.
 *
 * Device variables: g_counter and g_table (__device__), c_coef
 * (__constant__), cr::g_scale (__device__ in a namespace, mangled name).
 * main.cu writes and reads them with cudaMemcpyToSymbol/FromSymbol and the
 * kernels use the same storage.
 *
 * Contract: deterministic results (atomics only on integers); every kernel
 * guards its index.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>

__device__ int g_counter;
__device__ float g_table[8] = { 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f };
__constant__ float c_coef[4];
namespace cr {
__device__ double g_scale = 0.5;
}

/* y = a * x + y */
__global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

/* out[i] = c_coef[i % 4] * g_table[i % 8] * cr::g_scale; counts its threads
 * in g_counter and doubles g_table[0] once. */
__global__ void use_globals(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	out[i] = c_coef[i % 4] * g_table[i % 8] * (float)cr::g_scale;
	atomicAdd(&g_counter, 1);
}

__global__ void bump_table(void)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		g_table[0] *= 2.0f;
}

/* bf16 arithmetic: y = x * w + y, in bf16, rounded at each step */
__global__ void bf16_fma(const __nv_bfloat16 *x, const __nv_bfloat16 *w, __nv_bfloat16 *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = __hadd(__hmul(x[i], w[i]), y[i]);
}

/* One block sums n floats through dynamic shared memory of n floats
 * (n * 4 bytes, more than the default 48 KiB when n > 12288). */
__global__ void block_sum(const float *x, float *out, int n)
{
	extern __shared__ float buf[];
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		buf[i] = x[i];
	__syncthreads();
	if (threadIdx.x == 0) {
		float s = 0.0f;
		for (int i = 0; i < n; i++)
			s += buf[i];
		*out = s;
	}
}

/* p[i] += i on managed memory */
__global__ void managed_add(int *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] += i;
}

/* Grid-stride loop, sized by the caller from the occupancy API. */
__global__ void grid_fill(int *p, int n, int v)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		p[i] = v + i;
}
