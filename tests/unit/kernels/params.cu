// SPDX-License-Identifier: MIT
// params.cu - kernels with known parameter layouts for tests/unit/test_fatbin.c.
// The expected layouts are written by hand in test_fatbin.c (C++ ABI: each
// parameter at the next multiple of its alignment) and cross-checked there
// with offsetof on host structs; keep both in step when editing.
#include <cuda_fp16.h>

struct S { int a; double b; char c; };      // 24 bytes, align 8
struct Big { float v[1100]; };               // 4400 bytes: KPARAM_INFO_V2 path

// Scalars of each size with alignment gaps, a pointer, a struct by value and
// a trailing char (the parameter area ends right after it: 73 bytes).
extern "C" __global__ void scalars(char c, double d, short s, float *p, long long q,
				   int i, float f, S st, char tail)
{
	if (threadIdx.x == 0)
		*p = c + d + s + q + i + f + st.a + st.b + st.c + tail;
}

template <typename T>
__global__ void axpy(T a, const T *x, T *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}
template __global__ void axpy<float>(float, const float *, float *, int);
template __global__ void axpy<__half>(__half, const __half *, __half *, int);

// A parameter area over 4 KB, with a char and a pointer after the struct.
__global__ void big(Big b, unsigned char flag, float *out)
{
	out[threadIdx.x] = b.v[threadIdx.x] + flag;
}

extern "C" __global__ void noparams(void)
{
}

namespace ddp {
__global__ void ns_kernel(const float *in, double *out, unsigned short k)
{
	out[threadIdx.x] = in[threadIdx.x] * k;
}
}
