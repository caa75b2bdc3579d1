/* SPDX-License-Identifier: MIT
 *
 * cuda_fp16.h (CPU device shim) - __half and __half2 with the conversions,
 * scalar and packed arithmetic, comparisons and math functions of CUDA's
 * cuda_fp16.h that kernels use (SIM_HALF_FAMILY, shared with cuda_bf16.h).  `struct __half` sits at global scope
 * so it mangles as nvcc's (6__half).  Conversions round to nearest even
 * (through _Float16).
 *
 * Contract: header only; trivially copyable types of nvcc's size/alignment.
 */
#ifndef SIM_CUDA_FP16_H
#define SIM_CUDA_FP16_H
#include <cmath>
#include <cstring>

struct __attribute__((aligned(2))) __half {
	unsigned short __x;
	__half() = default;
	__half(float f) { _Float16 h = (_Float16)f; std::memcpy(&__x, &h, 2); }
	__half(double f) : __half((float)f) {}
	__half(int i) : __half((float)i) {}
	__half(unsigned i) : __half((float)i) {}
	__half(const struct __half_raw &r);
	operator struct __half_raw() const;
	operator float() const { _Float16 h; std::memcpy(&h, &__x, 2); return (float)h; }
	__half &operator+=(__half o) { return *this = __half((float)*this + (float)o); }
	__half &operator-=(__half o) { return *this = __half((float)*this - (float)o); }
	__half &operator*=(__half o) { return *this = __half((float)*this * (float)o); }
	__half &operator/=(__half o) { return *this = __half((float)*this / (float)o); }
};
struct __half_raw {
	unsigned short x;
};
struct __half2_raw {
	unsigned short x, y;
};
struct __attribute__((aligned(4))) __half2 {
	__half x, y;
	__half2() = default;
	__half2(__half a, __half b) : x(a), y(b) {}
	__half2(__half2_raw r) { x.__x = r.x; y.__x = r.y; }
	operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
};
typedef __half half;
typedef __half2 half2;
typedef __half_raw half_raw;

static inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
static inline int __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u ? (a.__x & 0x8000u ? -1 : 1) : 0; }

/* The operations both 16-bit float types share (cuda_fp16.h and
 * cuda_bf16.h name them alike), through float: one rounding to H per
 * operation, as the GPU's instructions do. */
#define SIM_HALF_FAMILY(H, H2) \
	static inline H operator+(H a, H b) { return H((float)a + (float)b); } \
	static inline H operator-(H a, H b) { return H((float)a - (float)b); } \
	static inline H operator*(H a, H b) { return H((float)a * (float)b); } \
	static inline H operator/(H a, H b) { return H((float)a / (float)b); } \
	static inline H operator-(H a) { H r = a; r.__x ^= 0x8000u; return r; } \
	static inline H operator+(H a) { return a; } \
	static inline H __hadd(H a, H b) { return a + b; } \
	static inline H __hsub(H a, H b) { return a - b; } \
	static inline H __hmul(H a, H b) { return a * b; } \
	static inline H __hdiv(H a, H b) { return a / b; } \
	static inline H __hadd_rn(H a, H b) { return a + b; } \
	static inline H __hsub_rn(H a, H b) { return a - b; } \
	static inline H __hmul_rn(H a, H b) { return a * b; } \
	static inline H __hadd_sat(H a, H b) { return H(sim_sat((float)a + (float)b)); } \
	static inline H __hmul_sat(H a, H b) { return H(sim_sat((float)a * (float)b)); } \
	static inline H __hneg(H a) { return -a; } \
	static inline H __habs(H a) { H r = a; r.__x &= 0x7fffu; return r; } \
	static inline H __hfma(H a, H b, H c) { return H(fmaf((float)a, (float)b, (float)c)); } \
	static inline H __hfma_sat(H a, H b, H c) { return H(sim_sat(fmaf((float)a, (float)b, (float)c))); } \
	static inline H __hfma_relu(H a, H b, H c) { float r = fmaf((float)a, (float)b, (float)c); return H(r < 0.0f ? 0.0f : r); } \
	static inline H __hmax(H a, H b) { return __hisnan(a) ? b : __hisnan(b) ? a : ((float)a < (float)b ? b : a); } \
	static inline H __hmin(H a, H b) { return __hisnan(a) ? b : __hisnan(b) ? a : ((float)b < (float)a ? b : a); } \
	static inline bool __heq(H a, H b) { return (float)a == (float)b; } \
	static inline bool __hne(H a, H b) { return (float)a != (float)b && !__hisnan(a) && !__hisnan(b); } \
	static inline bool __hlt(H a, H b) { return (float)a < (float)b; } \
	static inline bool __hle(H a, H b) { return (float)a <= (float)b; } \
	static inline bool __hgt(H a, H b) { return (float)a > (float)b; } \
	static inline bool __hge(H a, H b) { return (float)a >= (float)b; } \
	static inline H hexp(H a) { return H(expf((float)a)); } \
	static inline H hexp2(H a) { return H(exp2f((float)a)); } \
	static inline H hlog(H a) { return H(logf((float)a)); } \
	static inline H hlog2(H a) { return H(log2f((float)a)); } \
	static inline H hsqrt(H a) { return H(sqrtf((float)a)); } \
	static inline H hrsqrt(H a) { return H(1.0f / sqrtf((float)a)); } \
	static inline H hrcp(H a) { return H(1.0f / (float)a); } \
	static inline H hsin(H a) { return H(sinf((float)a)); } \
	static inline H hcos(H a) { return H(cosf((float)a)); } \
	static inline H htanh(H a) { return H(tanhf((float)a)); } \
	static inline H hfloor(H a) { return H(floorf((float)a)); } \
	static inline H hceil(H a) { return H(ceilf((float)a)); } \
	static inline H htrunc(H a) { return H(truncf((float)a)); } \
	static inline H hrint(H a) { return H(rintf((float)a)); } \
	static inline H2 operator+(H2 a, H2 b) { return H2(a.x + b.x, a.y + b.y); } \
	static inline H2 operator-(H2 a, H2 b) { return H2(a.x - b.x, a.y - b.y); } \
	static inline H2 operator*(H2 a, H2 b) { return H2(a.x * b.x, a.y * b.y); } \
	static inline H2 operator/(H2 a, H2 b) { return H2(a.x / b.x, a.y / b.y); } \
	static inline H2 operator-(H2 a) { return H2(-a.x, -a.y); } \
	static inline H2 &operator+=(H2 &a, H2 b) { return a = a + b; } \
	static inline H2 &operator-=(H2 &a, H2 b) { return a = a - b; } \
	static inline H2 &operator*=(H2 &a, H2 b) { return a = a * b; } \
	static inline H2 &operator/=(H2 &a, H2 b) { return a = a / b; } \
	static inline bool operator==(H2 a, H2 b) { return __heq(a.x, b.x) && __heq(a.y, b.y); } \
	static inline bool operator!=(H2 a, H2 b) { return !(a == b); } \
	static inline H2 __hadd2(H2 a, H2 b) { return a + b; } \
	static inline H2 __hsub2(H2 a, H2 b) { return a - b; } \
	static inline H2 __hmul2(H2 a, H2 b) { return a * b; } \
	static inline H2 __h2div(H2 a, H2 b) { return a / b; } \
	static inline H2 __hadd2_sat(H2 a, H2 b) { return H2(__hadd_sat(a.x, b.x), __hadd_sat(a.y, b.y)); } \
	static inline H2 __hmul2_sat(H2 a, H2 b) { return H2(__hmul_sat(a.x, b.x), __hmul_sat(a.y, b.y)); } \
	static inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); } \
	static inline H2 __hfma2_sat(H2 a, H2 b, H2 c) { return H2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)); } \
	static inline H2 __hneg2(H2 a) { return -a; } \
	static inline H2 __habs2(H2 a) { return H2(__habs(a.x), __habs(a.y)); } \
	static inline H2 __hmax2(H2 a, H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); } \
	static inline H2 __hmin2(H2 a, H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); } \
	static inline H2 h2exp(H2 a) { return H2(hexp(a.x), hexp(a.y)); } \
	static inline H2 h2log(H2 a) { return H2(hlog(a.x), hlog(a.y)); } \
	static inline H2 h2sqrt(H2 a) { return H2(hsqrt(a.x), hsqrt(a.y)); } \
	static inline H2 h2rsqrt(H2 a) { return H2(hrsqrt(a.x), hrsqrt(a.y)); } \
	static inline H2 h2rcp(H2 a) { return H2(hrcp(a.x), hrcp(a.y)); } \
	static inline H2 h2tanh(H2 a) { return H2(htanh(a.x), htanh(a.y)); } \
	static inline float __low2float(H2 h) { return (float)h.x; } \
	static inline float __high2float(H2 h) { return (float)h.y; } \
	static inline float2 sim_h22float2(H2 h) { return float2{(float)h.x, (float)h.y}; } \
	static inline H2 __lowhigh2highlow(H2 a) { return H2(a.y, a.x); }

static inline float sim_sat(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }

SIM_HALF_FAMILY(__half, __half2)

static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline __half __double2half(double f) { return __half((float)f); }
static inline float __half2float(__half h) { return (float)h; }
static inline __half __int2half_rn(int i) { return __half((float)i); }
static inline __half __uint2half_rn(unsigned i) { return __half((float)i); }
static inline int __half2int_rn(__half h) { return (int)nearbyintf((float)h); }
static inline int __half2int_rz(__half h) { return (int)(float)h; }
static inline unsigned __half2uint_rn(__half h) { return (unsigned)nearbyintf((float)h); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
static inline __half __short_as_half(short u) { __half h; h.__x = (unsigned short)u; return h; }
inline __half::__half(const __half_raw &r) : __x(r.x) {}
inline __half::operator __half_raw() const { return __half_raw{__x}; }
static inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __half2half2(__half a) { return __half2(a, a); }
static inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
static inline __half2 __float22half2_rn(float2 f) { return __half2(__half(f.x), __half(f.y)); }
static inline float2 __half22float2(__half2 h) { return sim_h22float2(h); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline __half2 __low2half2(__half2 h) { return __half2(h.x, h.x); }
static inline __half2 __high2half2(__half2 h) { return __half2(h.y, h.y); }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
static inline __half atomicAdd(__half *a, __half v)
{
	unsigned short *u = &a->__x, o = __atomic_load_n(u, __ATOMIC_RELAXED), n;
	do {
		n = __half((float)__ushort_as_half(o) + (float)v).__x;
	} while (!__atomic_compare_exchange_n(u, &o, n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return __ushort_as_half(o);
}
static inline __half2 atomicAdd(__half2 *a, __half2 v)
{
	static_assert(sizeof(__half2) == 4, "__half2 layout");
	unsigned *u = reinterpret_cast<unsigned *>(a), o = __atomic_load_n(u, __ATOMIC_RELAXED), n;
	__half2 old;
	do {
		std::memcpy(&old, &o, 4);
		__half2 r = old + v;
		std::memcpy(&n, &r, 4);
	} while (!__atomic_compare_exchange_n(u, &o, n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	std::memcpy(&old, &o, 4);
	return old;
}
#endif /* SIM_CUDA_FP16_H */
