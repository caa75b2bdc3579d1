// A program file with a host constructor (before main: it allocates and
// registers an at-exit report through the runtime) next to its kernel:
// ddp-cpu-kernels leaves the constructor, and the host code it reaches,
// out of the kernel library (cpudev/cpukern/errors.sh).
#include <cstdio>
#include <cstdlib>

__global__ void twice(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.0f; }

static void *g_scratch;
static void report() { size_t f, t; cudaMemGetInfo(&f, &t); std::printf("free %zu of %zu\n", f, t); }

__attribute__((used, constructor(200))) static void host_setup()
{
	cudaMalloc(&g_scratch, 1024);
	std::atexit(report);
}
[[gnu::constructor]] static void host_setup2() { cudaFree(0); }

int main() { twice<<<1, 32>>>((float *)g_scratch, 32); return cudaDeviceSynchronize() != cudaSuccess; }
