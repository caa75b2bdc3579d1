// SPDX-License-Identifier: MIT
//
// test_mismatch_host.cu - host implementations that do NOT match
// test_mismatch_dev.cu: mismatch() takes a long long where the module image
// says int (the driver must refuse it), devonly() is missing.
__device__ int mm_sized[5];

extern "C" __global__ void mismatch(int *p, long long v)
{
	*p = (int)v + mm_sized[0];
}
