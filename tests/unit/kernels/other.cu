// SPDX-License-Identifier: MIT
// other.cu - a second translation unit, for concatenated fatbin containers.
extern "C" __global__ void other_kernel(int *p, int v)
{
	p[threadIdx.x] = v;
}
