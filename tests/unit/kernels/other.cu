// SPDX-License-Identifier: MIT
// other.cu - a second translation unit, for concatenated fatbin containers,
// with device variables (__device__, __constant__, one in a namespace).
__device__ int other_counter;
__constant__ float other_coef[6];
namespace ons {
__device__ double other_scale = 1.5;
}

extern "C" __global__ void other_kernel(int *p, int v)
{
	p[threadIdx.x] = v + other_counter + (int)other_coef[threadIdx.x % 6] + (int)ons::other_scale;
}
