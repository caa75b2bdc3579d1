// SPDX-License-Identifier: MIT
//
// test_mismatch_dev.cu - the device side of the launch tests' negative
// cases: its fatbin is loaded as a module, but its host implementations come
// from test_mismatch_host.cu, whose mismatch() takes a wider parameter and
// which lacks devonly() (cpudev/test_launch.c).  Likewise for device
// variables: mm_sized has 4 ints here and 5 there, mm_devonly has no host
// storage.
__device__ int mm_sized[4];
__device__ int mm_devonly;

extern "C" __global__ void mismatch(int *p, int v)
{
	*p = v + mm_sized[0] + mm_devonly;
}

extern "C" __global__ void devonly(int *p)
{
	*p = 1;
}
