// SPDX-License-Identifier: MIT
//
// test_kernels.cu - kernels for the driver half's launch tests
// (cpudev/test_launch.c): argument marshalling of every scalar size,
// pointers, structs by value, extern "C" names, and a trapping kernel.
// Compiled by nvcc into build/cpudev/kernels/test_kernels.fatbin and
// by g++ into build/cpudev/test_launch.kern.so.  Plain CUDA.

struct Mixed {
	int a;
	double b;
	char c[3];
	float f[4];
};

// Every scalar size, in an order that forces padding between them.
__global__ void scalars(char c, short s, int i, long long l, float f, double d, unsigned char uc,
			long long *out_i, double *out_d)
{
	if (threadIdx.x != 0 || blockIdx.x != 0)
		return;
	out_i[0] = c;
	out_i[1] = s;
	out_i[2] = i;
	out_i[3] = l;
	out_i[4] = uc;
	out_d[0] = f;
	out_d[1] = d;
}

__global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

__global__ void by_value(Mixed m, int scale, Mixed *out)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		out->a = m.a * scale;
		out->b = m.b * scale;
		for (int k = 0; k < 3; k++)
			out->c[k] = (char)(m.c[k] + 1);
		for (int k = 0; k < 4; k++)
			out->f[k] = m.f[k] * scale;
	}
}

// 3-D grid and block: each thread writes its global linear index.
__global__ void grid3d(unsigned *out)
{
	unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
	out[bx * nthreads + tx] = bx * nthreads + tx + 1;
}

extern "C" __global__ void plain_fill(int *p, int v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v;
}

extern "C" __global__ void trap_if(int x)
{
	if (x)
		__trap();
}

// Reverses each block's slice of `in` through shared memory (wrong without
// the barrier) and adds the sum of the reversed values over the warp (a
// shuffle reduction): needs the scheduler's runtime (barriers, warp
// exchange) and threadIdx, whatever way libcuda.so.1 was loaded.
__global__ void block_reverse_warp_sum(const int *in, int *out)
{
	__shared__ int s[1024];
	unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
	s[t] = in[base + t];
	__syncthreads();
	int v = s[blockDim.x - 1 - t];
	int w = v;
	for (int o = 16; o; o >>= 1)
		w += __shfl_xor_sync(0xffffffffu, w, o);
	out[base + t] = v + 1000 * w;
}
