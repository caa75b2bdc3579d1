#include <cstdio>
__global__ void add_one(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
int main() {
	float h[256], *d;
	for (int i = 0; i < 256; i++) h[i] = i;
	cudaMalloc(&d, sizeof(h));
	cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
	add_one<<<2, 128>>>(d, 256);
	printf("launch: %s\n", cudaGetErrorString(cudaGetLastError()));
	cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
	printf("%s: h[0]=%g h[255]=%g\n", cudaGetErrorString(cudaGetLastError()), h[0], h[255]);
}
