/* SPDX-License-Identifier: MIT
 *
 * darknet_like.cu - kernels of a C + CUDA image-classifier framework as
 * darknet writes them: a header of C declarations that includes
 * cuda_runtime.h, curand.h and cublas_v2.h (cuRAND's host types named in a
 * struct, no cuRAND call), C-style kernels on float arrays with a 2-D grid
 * from cuda_gridsize(), launches with NULL arguments across lines, and a
 * dropout layer drawing its mask with cuRAND's device API (curand_init,
 * curand_uniform on a curandState per thread).  Results against host
 * references; the dropout mask against cuRAND's XORWOW as the toolkit
 * defines it (curand_xorwow_ref.h).
 */
#include "cuda_runtime.h"
#include "curand.h"
#include "cublas_v2.h"
#include <curand_kernel.h>
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.cuh"
#include "curand_xorwow_ref.h"

#define BLOCK 512

typedef enum { LOGISTIC, RELU, LEAKY, LINEAR } ACTIVATION;

typedef struct {
	curandGenerator_t gen; /* darknet keeps one per GPU for cuda_random() */
	cublasHandle_t blas;
	int gpu_index;
} gpu_context;

void check_error(cudaError_t status)
{
	if (status != cudaSuccess) {
		printf("not ok - CUDA Error: %s\n", cudaGetErrorString(status));
		exit(1);
	}
}

dim3 cuda_gridsize(size_t n)
{
	size_t k = (n - 1) / BLOCK + 1;
	size_t x = k;
	size_t y = 1;
	if (x > 65535) {
		x = ceil(sqrt(k));
		y = (n - 1) / (x * BLOCK) + 1;
	}
	dim3 d = {(unsigned int)x, (unsigned int)y, 1};
	return d;
}

float *cuda_make_array(float *x, size_t n)
{
	float *x_gpu;
	size_t size = sizeof(float) * n;
	cudaError_t status = cudaMalloc((void **)&x_gpu, size);
	check_error(status);
	if (x) {
		status = cudaMemcpy(x_gpu, x, size, cudaMemcpyHostToDevice);
		check_error(status);
	}
	return x_gpu;
}

void cuda_pull_array(float *x_gpu, float *x, size_t n)
{
	check_error(cudaMemcpy(x, x_gpu, sizeof(float) * n, cudaMemcpyDeviceToHost));
}

__device__ float lhtan_activate_kernel(float x)
{
	if (x < 0)
		return .001f * x;
	if (x > 1)
		return .001f * (x - 1.f) + 1.f;
	return x;
}
__device__ float logistic_activate_kernel(float x) { return 1.f / (1.f + expf(-x)); }
__device__ float relu_activate_kernel(float x) { return x * (x > 0); }
__device__ float leaky_activate_kernel(float x) { return (x > 0) ? x : .1f * x; }

__device__ float activate_kernel(float x, ACTIVATION a)
{
	switch (a) {
	case LOGISTIC: return logistic_activate_kernel(x);
	case RELU: return relu_activate_kernel(x);
	case LEAKY: return leaky_activate_kernel(x);
	case LINEAR: return x;
	}
	return 0;
}

__global__ void activate_array_kernel(float *x, int n, ACTIVATION a)
{
	int i = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = activate_kernel(x[i], a);
}

/* y = ALPHA * x + (y or 0), scale optional */
__global__ void axpy_kernel(int N, float ALPHA, float *X, int INCX, float *Y, int INCY, float *SCALE)
{
	int i = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;
	if (i < N)
		Y[i * INCY] += ALPHA * X[i * INCX] * (SCALE ? SCALE[i] : 1.f);
}

__global__ void setup_rand_kernel(curandState *state, unsigned long long seed, int n)
{
	int i = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;
	if (i < n)
		curand_init(seed, i, 0, &state[i]);
}

__global__ void dropout_kernel(float *input, int size, curandState *state, float prob, float scale, float *rand)
{
	int id = (blockIdx.x + blockIdx.y * gridDim.x) * blockDim.x + threadIdx.x;
	if (id < size) {
		curandState local = state[id];
		float r = curand_uniform(&local);
		state[id] = local;
		if (rand)
			rand[id] = r;
		input[id] = (r < prob) ? 0 : input[id] * scale;
	}
}

void activate_array_gpu(float *x, int n, ACTIVATION a)
{
	activate_array_kernel<<<cuda_gridsize(n), BLOCK>>>(x, n,
							   a);
	check_error(cudaPeekAtLastError());
}

void axpy_gpu(int N, float ALPHA, float *X, int INCX, float *Y, int INCY)
{
	axpy_kernel<<<cuda_gridsize(N), BLOCK>>>(N, ALPHA, X, INCX, Y, INCY,
						 NULL);
	check_error(cudaPeekAtLastError());
}

int main(void)
{
	const int n = 5000;
	float *x = (float *)calloc(n, sizeof(float)), *y = (float *)calloc(n, sizeof(float));
	float *out = (float *)calloc(n, sizeof(float)), *rnd = (float *)calloc(n, sizeof(float));
	gpu_context ctx;
	memset(&ctx, 0, sizeof(ctx));
	for (int i = 0; i < n; i++) {
		x[i] = (i % 200 - 100) / 25.0f;
		y[i] = i * 0.01f;
	}
	float *x_gpu = cuda_make_array(x, n), *y_gpu = cuda_make_array(y, n), *r_gpu = cuda_make_array(NULL, n);

	activate_array_gpu(x_gpu, n, LEAKY);
	axpy_gpu(n, 2.0f, x_gpu, 1, y_gpu, 1);
	cuda_pull_array(y_gpu, out, n);
	int bad = 0;
	for (int i = 0; i < n; i++) {
		float lx = x[i] > 0 ? x[i] : .1f * x[i];
		bad += fabsf(out[i] - (y[i] + 2.0f * lx)) > 1e-5f * (1.f + fabsf(out[i]));
	}
	expect("leaky activation then axpy (NULL scale, launch across lines) equal the host reference", bad == 0);

	curandState *states;
	check_error(cudaMalloc((void **)&states, n * sizeof(curandState)));
	const unsigned long long seed = 0x5eedULL;
	setup_rand_kernel<<<cuda_gridsize(n), BLOCK>>>(states, seed, n);
	check_error(cudaPeekAtLastError());
	const float prob = 0.3f, scale = 1.f / (1.f - prob);
	check_error(cudaMemcpy(y_gpu, y, n * sizeof(float), cudaMemcpyHostToDevice));
	for (int round = 0; round < 2; round++)
		dropout_kernel<<<cuda_gridsize(n), BLOCK>>>(y_gpu, n, states, prob, scale, r_gpu);
	cuda_pull_array(r_gpu, rnd, n);
	cuda_pull_array(y_gpu, out, n);
	int rbad = 0, dropped = 0, obad = 0;
	for (int i = 0; i < n; i++) {
		/* thread i: subsequence i, its second draw */
		struct xorwow_ref s;
		xorwow_ref_init(&s, seed, i, 0);
		xorwow_ref_next(&s);
		float r1 = xorwow_ref_uniform(xorwow_ref_next(&s));
		rbad += rnd[i] != r1;
		struct xorwow_ref s0;
		xorwow_ref_init(&s0, seed, i, 0);
		float r0 = xorwow_ref_uniform(xorwow_ref_next(&s0));
		float v = (r0 < prob) ? 0 : y[i] * scale;
		v = (r1 < prob) ? 0 : v * scale;
		obad += fabsf(out[i] - v) > 1e-5f * (1.f + fabsf(v));
		dropped += out[i] == 0 && y[i] != 0;
	}
	printf("# dropout: %d of %d dropped after two rounds at p=%.1f\n", dropped, n, prob);
	expect("curand_init(seed, i, 0) + curand_uniform: each thread's draws equal cuRAND's XORWOW, subsequence i",
	       rbad == 0);
	expect("dropout twice: the output equals the host reference from the same draws", obad == 0);
	expect("dropout: about 1 - 0.7^2 = 51% of the inputs dropped", dropped > n * 0.45 && dropped < n * 0.57);
	check_error(cudaFree(states));
	check_error(cudaFree(x_gpu));
	check_error(cudaFree(y_gpu));
	check_error(cudaFree(r_gpu));
	free(x);
	free(y);
	free(out);
	free(rnd);
	return cpuk_failures ? 1 : 0;
}
