/* SPDX-License-Identifier: MIT
 *
 * drv_module.cu - a driver-API program: it loads its own kernels from a
 * fatbin embedded in the executable (cpukern.mk: drv_module_fatbin) with
 * cuModuleLoadData, looks them up by name and launches them with
 * cuLaunchKernel.  Kernels: extern "C" names, dynamic shared memory, a
 * block reduction, warp votes (__ballot_sync, __any_sync, __all_sync,
 * __popc), int4/uint4 vector types with make_*, __syncwarp.
 */
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" const unsigned char drv_module_fatbin[];

static int failures;
static void expect(const char *name, bool cond)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", name);
	failures += !cond;
}
#define CU(call)                                                                                     \
	do {                                                                                         \
		CUresult r_ = (call);                                                                \
		if (r_ != CUDA_SUCCESS) {                                                            \
			const char *s_ = "?";                                                        \
			cuGetErrorName(r_, &s_);                                                     \
			printf("not ok - %s failed: %s (line %d)\n", #call, s_, __LINE__);          \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

extern "C" __global__ void dyn_sum(const int *in, long long *out, int n)
{
	extern __shared__ long long acc[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	acc[threadIdx.x] = i < n ? in[i] : 0;
	__syncthreads();
	for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			acc[threadIdx.x] += acc[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = acc[0];
}

extern "C" __global__ void votes(const int *in, unsigned *ballot, int *any, int *all, int *pop)
{
	int v = in[threadIdx.x];
	unsigned b = __ballot_sync(0xffffffffu, v > 0);
	int a = __any_sync(0xffffffffu, v > 100);
	int l = __all_sync(0xffffffffu, v > -1000);
	__syncwarp();
	if (threadIdx.x % 32 == 0) {
		ballot[threadIdx.x / 32] = b;
		any[threadIdx.x / 32] = a;
		all[threadIdx.x / 32] = l;
		pop[threadIdx.x / 32] = __popc(b);
	}
}

extern "C" __global__ void vec4(const int4 *a, uint4 *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		int4 v = a[i];
		out[i] = make_uint4(v.x + v.y, v.y * 2, (unsigned)(v.z ^ v.w), (unsigned)max(v.x, v.w));
	}
}

int main()
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fsum, fvotes, fvec;
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuModuleLoadData(&mod, drv_module_fatbin));
	CU(cuModuleGetFunction(&fsum, mod, "dyn_sum"));
	CU(cuModuleGetFunction(&fvotes, mod, "votes"));
	CU(cuModuleGetFunction(&fvec, mod, "vec4"));

	const int n = 3000, threads = 128, blocks = (n + threads - 1) / threads;
	std::vector<int> in(n);
	for (int i = 0; i < n; i++)
		in[i] = (i * 131) % 1000 - 400;
	CUdeviceptr din, dout;
	CU(cuMemAlloc(&din, n * sizeof(int)));
	CU(cuMemAlloc(&dout, blocks * sizeof(long long)));
	CU(cuMemcpyHtoD(din, in.data(), n * sizeof(int)));
	int nn = n;
	void *args[] = {&din, &dout, &nn};
	CU(cuLaunchKernel(fsum, blocks, 1, 1, threads, 1, 1, threads * sizeof(long long), 0, args, 0));
	std::vector<long long> part(blocks);
	CU(cuMemcpyDtoH(part.data(), dout, blocks * sizeof(long long)));
	int bad = 0;
	for (int b = 0; b < blocks; b++) {
		long long s = 0;
		for (int i = b * threads; i < (b + 1) * threads && i < n; i++)
			s += in[i];
		bad += part[b] != s;
	}
	expect("extern __shared__ block reduction through cuLaunchKernel", bad == 0);

	CUdeviceptr db, dany, dall, dpop;
	CU(cuMemAlloc(&db, 4 * sizeof(unsigned)));
	CU(cuMemAlloc(&dany, 4 * sizeof(int)));
	CU(cuMemAlloc(&dall, 4 * sizeof(int)));
	CU(cuMemAlloc(&dpop, 4 * sizeof(int)));
	void *vargs[] = {&din, &db, &dany, &dall, &dpop};
	CU(cuLaunchKernel(fvotes, 1, 1, 1, 128, 1, 1, 0, 0, vargs, 0));
	unsigned hb[4];
	int hany[4], hall[4], hpop[4];
	CU(cuMemcpyDtoH(hb, db, sizeof(hb)));
	CU(cuMemcpyDtoH(hany, dany, sizeof(hany)));
	CU(cuMemcpyDtoH(hall, dall, sizeof(hall)));
	CU(cuMemcpyDtoH(hpop, dpop, sizeof(hpop)));
	bad = 0;
	for (int w = 0; w < 4; w++) {
		unsigned want = 0;
		int wany = 0, wall = 1;
		for (int l = 0; l < 32; l++) {
			want |= (unsigned)(in[w * 32 + l] > 0) << l;
			wany |= in[w * 32 + l] > 100;
			wall &= in[w * 32 + l] > -1000;
		}
		bad += hb[w] != want || hany[w] != wany || hall[w] != wall || hpop[w] != __builtin_popcount(want);
	}
	expect("__ballot_sync, __any_sync, __all_sync, __popc per warp", bad == 0);

	const int m = 500;
	std::vector<int> a4(4 * m);
	for (int i = 0; i < 4 * m; i++)
		a4[i] = (i * 17) % 91 - 45;
	CUdeviceptr da4, do4;
	CU(cuMemAlloc(&da4, a4.size() * sizeof(int)));
	CU(cuMemAlloc(&do4, a4.size() * sizeof(unsigned)));
	CU(cuMemcpyHtoD(da4, a4.data(), a4.size() * sizeof(int)));
	int mm = m;
	void *a4args[] = {&da4, &do4, &mm};
	CU(cuLaunchKernel(fvec, (m + 63) / 64, 1, 1, 64, 1, 1, 0, 0, a4args, 0));
	std::vector<unsigned> o4(4 * m);
	CU(cuMemcpyDtoH(o4.data(), do4, o4.size() * sizeof(unsigned)));
	bad = 0;
	for (int i = 0; i < m; i++) {
		const int *v = &a4[4 * i];
		bad += o4[4 * i] != (unsigned)(v[0] + v[1]) || o4[4 * i + 1] != (unsigned)(v[1] * 2) ||
		       o4[4 * i + 2] != (unsigned)(v[2] ^ v[3]) || o4[4 * i + 3] != (unsigned)(v[0] > v[3] ? v[0] : v[3]);
	}
	expect("int4/uint4 loads and make_uint4", bad == 0);
	CU(cuModuleUnload(mod));
	CU(cuDevicePrimaryCtxRelease(dev));
	return failures ? 1 : 0;
}
