// SPDX-License-Identifier: MIT
// A runtime function the CPU device's headers do not declare: one line naming it.
#include <cuda_runtime.h>
__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }
int main()
{
	cudaGraph_t g;
	cudaGraphNode_t node;
	cudaGraphAddEmptyNode(&node, g, nullptr, 0); // ERROR-LINE
	return 0;
}
