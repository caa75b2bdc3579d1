// SPDX-License-Identifier: MIT
// A toolkit header with no CPU-device version: one line naming the #include.
#include <cuda_runtime.h>
#include <mma.h> // ERROR-LINE
__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }
