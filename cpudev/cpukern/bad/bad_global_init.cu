// A global object whose initialiser calls the runtime: the kernel library
// runs global initialisers when it loads, so it would need cudaMalloc.
#include <cstddef>

__global__ void scale(float *x, float s, int n) { int i = threadIdx.x; if (i < n) x[i] *= s; }

static float *make_buffer(size_t n)
{
	float *p = nullptr;
	cudaMalloc(&p, n * sizeof(float)); // ERROR-LINE
	return p;
}

float *g_buffer = make_buffer(256);

int main() { scale<<<1, 256>>>(g_buffer, 2.0f, 256); return cudaDeviceSynchronize() != cudaSuccess; }
