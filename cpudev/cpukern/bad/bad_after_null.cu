// SPDX-License-Identifier: MIT
// A launch across lines with NULL among its arguments (g++ -E puts line
// markers around NULL's __null), then an error further down: the error
// must be placed at its own line.
#include <cstddef>
__global__ void k(float *a, const float *b, int n) {}
void f(float *a, cudaStream_t s)
{
	k<<<1, 32, 0,
	    s>>>(a,
		 NULL,
		 4);
	cudaGraph_t g;
	cudaGraphNode_t node;
	cudaGraphAddEmptyNode(&node, g, NULL, 0); // ERROR-LINE
}
