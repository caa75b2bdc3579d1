// SPDX-License-Identifier: MIT
// ddp-cpu-kernels must refuse inline PTX with one line naming this file:line.
__global__ void lane_ids(unsigned *out)
{
	unsigned lane;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane)); // ERROR-LINE
	out[threadIdx.x] = lane;
}
