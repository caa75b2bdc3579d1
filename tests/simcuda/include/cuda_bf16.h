/* SPDX-License-Identifier: MIT
 *
 * cuda_bf16.h (CPU device shim) - __nv_bfloat16 and __nv_bfloat162 with the
 * conversions and arithmetic kernels commonly use.  `struct __nv_bfloat16`
 * sits at global scope so it mangles as nvcc's (13__nv_bfloat16).  float ->
 * bf16 rounds to nearest even; NaN stays a (quiet) NaN.
 *
 * Contract: header only; trivially copyable types of nvcc's size/alignment.
 */
#ifndef SIM_CUDA_BF16_H
#define SIM_CUDA_BF16_H
#include <cstring>
#include "cuda_fp16.h"

static inline unsigned short sim_f2bf(float f)
{
	unsigned u;
	std::memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (unsigned short)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}
static inline float sim_bf2f(unsigned short b)
{
	unsigned u = (unsigned)b << 16;
	float f;
	std::memcpy(&f, &u, 4);
	return f;
}

struct __attribute__((aligned(2))) __nv_bfloat16 {
	unsigned short __x;
	__nv_bfloat16() = default;
	__nv_bfloat16(float f) : __x(sim_f2bf(f)) {}
	__nv_bfloat16(double f) : __x(sim_f2bf((float)f)) {}
	__nv_bfloat16(int i) : __x(sim_f2bf((float)i)) {}
	operator float() const { return sim_bf2f(__x); }
	__nv_bfloat16 &operator+=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this + (float)o); }
	__nv_bfloat16 &operator-=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this - (float)o); }
	__nv_bfloat16 &operator*=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this * (float)o); }
	__nv_bfloat16 &operator/=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this / (float)o); }
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
	__nv_bfloat16 x, y;
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

static inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a + (float)b); }
static inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a - (float)b); }
static inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a * (float)b); }
static inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat16((float)a / (float)b); }
static inline __nv_bfloat16 operator-(__nv_bfloat16 a) { __nv_bfloat16 r = a; r.__x ^= 0x8000u; return r; }

static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __double2bfloat16(double f) { return __nv_bfloat16((float)f); }
static inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
static inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
static inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
static inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
static inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return a / b; }
static inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return -a; }
static inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c)
{ return __nv_bfloat16((float)a * (float)b + (float)c); }
static inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }
static inline bool __hisinf(__nv_bfloat16 a) { return (a.__x & 0x7fffu) == 0x7f80u; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 h; h.__x = u; return h; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)}; }
static inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(a)}; }
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162{a, b}; }
static inline float __low2float(__nv_bfloat162 h) { return (float)h.x; }
static inline float __high2float(__nv_bfloat162 h) { return (float)h.y; }
static inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *a, __nv_bfloat16 v)
{
	unsigned short *u = &a->__x, o = __atomic_load_n(u, __ATOMIC_RELAXED), n;
	do {
		n = sim_f2bf(sim_bf2f(o) + (float)v);
	} while (!__atomic_compare_exchange_n(u, &o, n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return __ushort_as_bfloat16(o);
}
#endif /* SIM_CUDA_BF16_H */
