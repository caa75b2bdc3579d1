/* SPDX-License-Identifier: MIT
 *
 * cuda_fp16.h (CPU device shim) - __half and __half2 with the conversions
 * and arithmetic kernels commonly use.  `struct __half` sits at global scope
 * so it mangles as nvcc's (6__half).  Conversions round to nearest even
 * (through _Float16).
 *
 * Contract: header only; trivially copyable types of nvcc's size/alignment.
 */
#ifndef SIM_CUDA_FP16_H
#define SIM_CUDA_FP16_H
#include <cstring>

struct __attribute__((aligned(2))) __half {
	unsigned short __x;
	__half() = default;
	__half(float f) { _Float16 h = (_Float16)f; std::memcpy(&__x, &h, 2); }
	__half(double f) : __half((float)f) {}
	__half(int i) : __half((float)i) {}
	operator float() const { _Float16 h; std::memcpy(&h, &__x, 2); return (float)h; }
	__half &operator+=(__half o) { return *this = __half((float)*this + (float)o); }
	__half &operator-=(__half o) { return *this = __half((float)*this - (float)o); }
	__half &operator*=(__half o) { return *this = __half((float)*this * (float)o); }
	__half &operator/=(__half o) { return *this = __half((float)*this / (float)o); }
};
struct __attribute__((aligned(4))) __half2 {
	__half x, y;
};
typedef __half half;
typedef __half2 half2;

static inline __half operator+(__half a, __half b) { return __half((float)a + (float)b); }
static inline __half operator-(__half a, __half b) { return __half((float)a - (float)b); }
static inline __half operator*(__half a, __half b) { return __half((float)a * (float)b); }
static inline __half operator/(__half a, __half b) { return __half((float)a / (float)b); }
static inline __half operator-(__half a) { __half r = a; r.__x ^= 0x8000u; return r; }

static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline __half __double2half(double f) { return __half((float)f); }
static inline float __half2float(__half h) { return (float)h; }
static inline __half __hadd(__half a, __half b) { return a + b; }
static inline __half __hsub(__half a, __half b) { return a - b; }
static inline __half __hmul(__half a, __half b) { return a * b; }
static inline __half __hdiv(__half a, __half b) { return a / b; }
static inline __half __hneg(__half a) { return -a; }
static inline __half __habs(__half a) { __half r = a; r.__x &= 0x7fffu; return r; }
static inline __half __hfma(__half a, __half b, __half c) { return __half((float)a * (float)b + (float)c); }
static inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
static inline bool __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u; }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
static inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
static inline __half2 __float2half2_rn(float f) { return __half2{__half(f), __half(f)}; }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
static inline float __low2float(__half2 h) { return (float)h.x; }
static inline float __high2float(__half2 h) { return (float)h.y; }
static inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{a.x + b.x, a.y + b.y}; }
static inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{a.x * b.x, a.y * b.y}; }
static inline __half hexp(__half a) { return __half(expf((float)a)); }
static inline __half hsqrt(__half a) { return __half(sqrtf((float)a)); }
static inline __half __hmax(__half a, __half b) { return (float)a < (float)b ? b : a; }
static inline __half __hmin(__half a, __half b) { return (float)b < (float)a ? b : a; }
#endif /* SIM_CUDA_FP16_H */
