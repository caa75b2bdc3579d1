// SPDX-License-Identifier: MIT
// Kernels of the interposer's end-to-end tests and launch benchmark: an
// extern "C" kernel (no types), a typed template, a by-value struct holding
// device pointers, and an empty kernel.
struct ptr_list {
	float *p[4];
	int n[4];
	int count;
};

extern "C" __global__ void empty_kernel(void) {}

extern "C" __global__ void c_scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

template <typename T>
__global__ void axpy(T const *x, T *y, T a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += a * x[i];
}
template __global__ void axpy<float>(float const *, float *, float, int);

__global__ void list_fill(ptr_list l, float v)
{
	for (int t = 0; t < l.count; t++)
		for (int i = threadIdx.x; i < l.n[t]; i += blockDim.x)
			l.p[t][i] = v;
}
