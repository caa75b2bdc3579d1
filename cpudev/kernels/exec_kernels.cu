// SPDX-License-Identifier: MIT
//
// exec_kernels.cu - kernels for the CPU device's execution tests
// (cpudev/test_exec.c).  Compiled twice: by nvcc into
// build/cpudev/kernels/exec_kernels.fatbin (whose kernel names the
// registry is generated from) and by g++ with sim_kernel.h into
// build/cpudev/test_exec.kern.so.  Plain CUDA: nothing here knows the
// CPU device.
#include <cuda_bf16.h>

#define MAXB 1024

// Tree reduction of 64-bit integers, any block size up to 1024.
__global__ void reduce_sum(const unsigned long long *in, unsigned long long *out, int n)
{
	__shared__ unsigned long long s[MAXB];
	unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
	s[t] = i < (unsigned)n ? in[i] : 0;
	__syncthreads();
	unsigned p = 1;
	while (p < blockDim.x)
		p <<= 1;
	for (unsigned st = p / 2; st > 0; st >>= 1) {
		if (t < st && t + st < blockDim.x)
			s[t] += s[t + st];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

// The same with the barriers removed (wrong: the negative control).
__global__ void reduce_sum_nobarrier(const unsigned long long *in, unsigned long long *out, int n)
{
	__shared__ unsigned long long s[MAXB];
	unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
	s[t] = i < (unsigned)n ? in[i] : 0;
	unsigned p = 1;
	while (p < blockDim.x)
		p <<= 1;
	for (unsigned st = p / 2; st > 0; st >>= 1) {
		if (t < st && t + st < blockDim.x)
			s[t] += s[t + st];
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

// Each thread writes the mirror element of its block: needs the barrier.
__global__ void mirror(const int *in, int *out, int use_barrier)
{
	__shared__ int s[MAXB];
	unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
	s[t] = in[base + t];
	if (use_barrier)
		__syncthreads();
	out[base + t] = s[blockDim.x - 1 - t];
}

// Dynamic shared memory, two spellings.
__global__ void dyn_mirror(const float *in, float *out)
{
	extern __shared__ float dsm[];
	unsigned t = threadIdx.x;
	dsm[t] = in[t];
	__syncthreads();
	out[t] = dsm[blockDim.x - 1 - t];
}

template <class T>
__global__ void dyn_scan(const T *in, T *out, int n)
{
	extern __shared__ __align__(16) unsigned char dsm_raw[];
	T *s = reinterpret_cast<T *>(dsm_raw);
	unsigned t = threadIdx.x;
	s[t] = (int)t < n ? in[t] : T(0);
	__syncthreads();
	for (unsigned off = 1; off < blockDim.x; off <<= 1) {
		T v = t >= off ? s[t - off] : T(0);
		__syncthreads();
		s[t] += v;
		__syncthreads();
	}
	if ((int)t < n)
		out[t] = s[t];
}
template __global__ void dyn_scan<int>(const int *, int *, int);
template __global__ void dyn_scan<double>(const double *, double *, int);

struct Counters {
	unsigned u;
	int i;
	float f;
	double d;
	int imax;
	unsigned umin;
	unsigned long long ull;
	int sub;
	unsigned cas;
	unsigned exch_seen;
};

__global__ void atomics(Counters *c)
{
	unsigned gid = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	gid = gid * blockDim.x * blockDim.y * blockDim.z + (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
	atomicAdd(&c->u, 1u);
	atomicAdd(&c->i, 2);
	atomicAdd(&c->f, 1.0f);
	atomicAdd(&c->d, 0.5);
	atomicMax(&c->imax, (int)gid);
	atomicMin(&c->umin, gid + 7);
	atomicAdd(&c->ull, 1ull << 33);
	atomicSub(&c->sub, 3);
	unsigned old = c->cas, assumed;
	do {
		assumed = old;
		old = atomicCAS(&c->cas, assumed, assumed + 1);
	} while (old != assumed);
	unsigned prev = atomicExch(&c->exch_seen, gid + 1);
	(void)prev;
}

// Coordinates: 12 unsigned per thread, at the global linear thread index.
__global__ void coords(unsigned *out)
{
	unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
	unsigned *o = out + 12 * (b * blockDim.x * blockDim.y * blockDim.z + t);
	o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
	o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
	o[6] = blockDim.x; o[7] = blockDim.y; o[8] = blockDim.z;
	o[9] = gridDim.x; o[10] = gridDim.y; o[11] = gridDim.z;
}

template <class T>
__global__ void scale(T *x, T a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}
template __global__ void scale<float>(float *, float, int);
template __global__ void scale<double>(double *, double, int);

extern "C" __global__ void c_fill(int *out, int v)
{
	out[threadIdx.x] = v + (int)threadIdx.x;
}

namespace simns {
__global__ void ns_kernel(int *out) { out[0] = 4242; }
}

struct Pack {
	char c;
	double d;
	int v[3];
	short s;
};

// Writes back what it received, one 8-byte slot per value.
__global__ void params(char c, short s, int i, long long ll, float f, double d, const int *p,
		       Pack pk, unsigned char uc, unsigned long long *out)
{
	out[0] = (unsigned long long)(long long)c;
	out[1] = (unsigned long long)(long long)s;
	out[2] = (unsigned long long)(long long)i;
	out[3] = (unsigned long long)ll;
	out[4] = (unsigned long long)(long long)(f * 4.0f);
	out[5] = (unsigned long long)(long long)(d * 8.0);
	out[6] = (unsigned long long)p[0];
	out[7] = (unsigned long long)(long long)pk.c;
	out[8] = (unsigned long long)(long long)(pk.d * 2.0);
	out[9] = (unsigned long long)(pk.v[0] + 10 * pk.v[1] + 100 * pk.v[2]);
	out[10] = (unsigned long long)(long long)pk.s;
	out[11] = uc;
}

// Warp functions: per-warp sums with shuffles, a ballot, a block count.
__global__ void warp_ops(const int *in, int *out)
{
	unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
	int v = in[t];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	int down = __shfl_down_sync(0xffffffffu, (int)t, 1);
	unsigned ballot = __ballot_sync(0xffffffffu, in[t] % 2);
	int cnt = __syncthreads_count(in[t] > 10);
	if (lane == 0) {
		out[4 * warp] = v;
		out[4 * warp + 1] = (int)ballot;
		out[4 * warp + 2] = cnt;
	}
	if (lane == 3)
		out[4 * warp + 3] = down;
}

__global__ void trap_at(int *out, int which)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t == which)
		__trap();
	out[t] = 1;
}

__global__ void bf16_round(const float *in, __nv_bfloat16 *out, float *back, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		out[i] = __float2bfloat16(in[i]);
		back[i] = __bfloat162float(out[i]);
	}
}

__global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

// Barrier-heavy: 8 barriers per thread.
__global__ void barrier_loop(float *y)
{
	__shared__ float s[MAXB];
	unsigned t = threadIdx.x;
	s[t] = (float)t;
	for (int k = 0; k < 8; k++) {
		__syncthreads();
		float v = s[(t + 1) % blockDim.x];
		__syncthreads();
		s[t] = v;
	}
	y[blockIdx.x * blockDim.x + t] = s[t];
}

// Kernels instantiated with lambdas (PyTorch's gpu_kernel(iter, GPU_LAMBDA)
// pattern): the registry cannot name them, the source records them
// (sim_kernel.h: SIM_KERNEL_INSTANCE).  nvcc adds 8 bytes to the closure of
// a capturing __host__ __device__ lambda; the CPU build captures a pointer
// more to keep the parameter size.  lambda_scaled is recorded,
// lambda_unrecorded is not (its launch must be refused).
template <typename F> __global__ void apply_lambda(F f, float *x)
{
	x[threadIdx.x] = f(x[threadIdx.x]);
}
#ifdef __SIMCUDA__
inline void lambda_scaled(float s)
{
	auto f = [s, tail = (void *)nullptr](float v) { return v * s; };
	SIM_KERNEL_INSTANCE(&apply_lambda<decltype(f)>);
}
inline void lambda_unrecorded()
{
	auto f = [](float v) { return -v; };
	(void)&apply_lambda<decltype(f)>;
}
[[maybe_unused]] static const int lambdas_recorded = (lambda_scaled(1.0f), lambda_unrecorded(), 0);
#else
template <typename T> static void keep(T) {}
inline void lambda_scaled(float s)
{
	auto f = [s] __host__ __device__(float v) { return v * s; };
	keep(&apply_lambda<decltype(f)>);
	keep(f);
}
inline void lambda_unrecorded()
{
	auto f = [] __host__ __device__(float v) { return -v; };
	keep(&apply_lambda<decltype(f)>);
	keep(f);
}
#endif
