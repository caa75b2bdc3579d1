/* SPDX-License-Identifier: MIT
 *
 * cuda_bf16.h (CPU device shim) - __nv_bfloat16 and __nv_bfloat162 with the
 * conversions, scalar and packed arithmetic, comparisons and math functions
 * kernels use (the shared ones from cuda_fp16.h's SIM_HALF_FAMILY).  `struct __nv_bfloat16`
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

struct __nv_bfloat16_raw {
	unsigned short x;
};
struct __nv_bfloat162_raw {
	unsigned short x, y;
};
struct __attribute__((aligned(2))) __nv_bfloat16 {
	unsigned short __x;
	__nv_bfloat16() = default;
	__nv_bfloat16(float f) : __x(sim_f2bf(f)) {}
	__nv_bfloat16(double f) : __x(sim_f2bf((float)f)) {}
	__nv_bfloat16(int i) : __x(sim_f2bf((float)i)) {}
	__nv_bfloat16(unsigned i) : __x(sim_f2bf((float)i)) {}
	__nv_bfloat16(__nv_bfloat16_raw r) : __x(r.x) {}
	operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
	operator float() const { return sim_bf2f(__x); }
	__nv_bfloat16 &operator+=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this + (float)o); }
	__nv_bfloat16 &operator-=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this - (float)o); }
	__nv_bfloat16 &operator*=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this * (float)o); }
	__nv_bfloat16 &operator/=(__nv_bfloat16 o) { return *this = __nv_bfloat16((float)*this / (float)o); }
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
	__nv_bfloat16 x, y;
	__nv_bfloat162() = default;
	__nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) : x(a), y(b) {}
	__nv_bfloat162(__nv_bfloat162_raw r) { x.__x = r.x; y.__x = r.y; }
	operator __nv_bfloat162_raw() const { return __nv_bfloat162_raw{x.__x, y.__x}; }
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

static inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }
static inline int __hisinf(__nv_bfloat16 a) { return (a.__x & 0x7fffu) == 0x7f80u ? (a.__x & 0x8000u ? -1 : 1) : 0; }
SIM_HALF_FAMILY(__nv_bfloat16, __nv_bfloat162)

static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rz(float f)
{
	unsigned u;
	std::memcpy(&u, &f, 4);
	__nv_bfloat16 h;
	h.__x = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u) : (unsigned short)(u >> 16);
	return h;
}
static inline __nv_bfloat16 __double2bfloat16(double f) { return __nv_bfloat16((float)f); }
static inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
static inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __nv_bfloat16((float)i); }
static inline int __bfloat162int_rn(__nv_bfloat16 h) { return (int)nearbyintf((float)h); }
static inline int __bfloat162int_rz(__nv_bfloat16 h) { return (int)(float)h; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 h; h.__x = u; return h; }
static inline __nv_bfloat16 __short_as_bfloat16(short u) { __nv_bfloat16 h; h.__x = (unsigned short)u; return h; }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b)); }
static inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(a)); }
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __nv_bfloat162(__nv_bfloat16(f.x), __nv_bfloat16(f.y)); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return sim_h22float2(h); }
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
static inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 h) { return __nv_bfloat162(h.x, h.x); }
static inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 h) { return __nv_bfloat162(h.y, h.y); }
static inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
static inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
static inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *a, __nv_bfloat16 v)
{
	unsigned short *u = &a->__x, o = __atomic_load_n(u, __ATOMIC_RELAXED), n;
	do {
		n = sim_f2bf(sim_bf2f(o) + (float)v);
	} while (!__atomic_compare_exchange_n(u, &o, n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return __ushort_as_bfloat16(o);
}
static inline __nv_bfloat162 atomicAdd(__nv_bfloat162 *a, __nv_bfloat162 v)
{
	unsigned *u = reinterpret_cast<unsigned *>(a), o = __atomic_load_n(u, __ATOMIC_RELAXED), n;
	__nv_bfloat162 old;
	do {
		std::memcpy(&old, &o, 4);
		__nv_bfloat162 r = old + v;
		std::memcpy(&n, &r, 4);
	} while (!__atomic_compare_exchange_n(u, &o, n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	std::memcpy(&old, &o, 4);
	return old;
}
#endif /* SIM_CUDA_BF16_H */
