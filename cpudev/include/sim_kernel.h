/* SPDX-License-Identifier: MIT
 *
 * sim_kernel.h - turns a CUDA .cu file into host C++17 for the CPU device.
 *
 * Force-included (g++ -std=c++17 -x c++ -include sim_kernel.h
 * -I cpudev/include) when exec.mk's sim_kernel_lib compiles a .cu into
 * <program>.kern.so.  It defines the CUDA qualifiers away, maps threadIdx &
 * co. to this library's per-OS-thread state, which the scheduler
 * (sim_exec.c, in libcuda.so.1) sets before resuming each fiber, turns __shared__ into thread_local (one
 * copy per worker thread = per running block; the fibers of a block share
 * it), and provides __syncthreads, warp functions, atomics, fences and the
 * common intrinsics.  The second half is the kernel registry: the typed
 * trampolines that sim-kernreg's generated X.reg.cpp instantiates.
 *
 * Dynamic shared memory: `extern __shared__ T name[];` becomes
 * `extern thread_local T name[];`; exec.mk defines each such name (any
 * undefined TLS symbol of the object) as a SIM_DYN_SHARED_MAX-byte,
 * 64-aligned thread-local array.  Kernels that declare several extern
 * __shared__ arrays get separate ones (on a GPU they alias).
 *
 * Contract: header only, compiled into ONE translation unit per library
 * (sim-kernreg's X.reg.cpp #includes the .cu); the library imports nothing
 * from libcuda.so.1: the runtime arrives through sim_kernel_table.bind() and
 * threadIdx & co. live in this library's own thread-local state
 * (sim_kernel_abi.h, ABI 2).
 */
#ifndef SIM_KERNEL_H
#define SIM_KERNEL_H

#ifndef __cplusplus
#error "sim_kernel.h is for C++ (g++ -std=c++17 -x c++)"
#endif

/* Standard headers first, before any macro below can disturb them. */
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <math.h>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "../sim_kernel_abi.h"

#define __SIMCUDA__ 1

/* ---- qualifiers --------------------------------------------------------- */
/* used: every kernel (each instantiation of a template) is emitted, even
 * where the registry's trampoline inlined its body, so that the library
 * defines it under nvcc's mangled name. */
#define __global__ __attribute__((used))
#define __device__
#define __host__
#define __constant__
#define __managed__
/* 16-byte aligned, as a GPU's shared memory: kernels load float4 from it
 * and g++ compiles that to aligned vector moves. */
#define __shared__ thread_local __attribute__((aligned(16)))
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
#define __cudart_builtin__

/* ---- vector types ------------------------------------------------------- */
#define SIM_VEC1(T, N, A) struct __attribute__((aligned(A))) N##1 { T x; };
#define SIM_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; };
#define SIM_VEC3(T, N) struct N##3 { T x, y, z; };
#define SIM_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };
#define SIM_VEC(T, N, A1, A2, A4) SIM_VEC1(T, N, A1) SIM_VEC2(T, N, A2) SIM_VEC3(T, N) SIM_VEC4(T, N, A4) \
	static inline N##1 make_##N##1(T x) { return N##1{x}; } \
	static inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; } \
	static inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; } \
	static inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
SIM_VEC(signed char, char, 1, 2, 4)
SIM_VEC(unsigned char, uchar, 1, 2, 4)
SIM_VEC(short, short, 2, 4, 8)
SIM_VEC(unsigned short, ushort, 2, 4, 8)
SIM_VEC(int, int, 4, 8, 16)
SIM_VEC(unsigned int, uint, 4, 8, 16)
SIM_VEC(long, long, 8, 16, 16)
SIM_VEC(unsigned long, ulong, 8, 16, 16)
SIM_VEC(long long, longlong, 8, 16, 16)
SIM_VEC(unsigned long long, ulonglong, 8, 16, 16)
SIM_VEC(float, float, 4, 8, 16)
SIM_VEC(double, double, 8, 16, 16)
#undef SIM_VEC
#undef SIM_VEC1
#undef SIM_VEC2
#undef SIM_VEC3
#undef SIM_VEC4

struct dim3 {
	unsigned int x, y, z;
	constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
	constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
	constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* ---- built-in variables ------------------------------------------------- */
/* This library's threadIdx & co.: a hidden thread-local block laid out as
 * sim_kernel_abi.h's `struct sim_thread_state` (seen here with CUDA's member
 * types).  The scheduler gets its address through each table entry's
 * thread_state accessor and writes it; nothing is resolved by symbol name,
 * so the library works however libcuda.so.1 was loaded (RTLD_LOCAL too). */
struct sim_kernel_tls {
	::uint3 thread_idx, block_idx, block_dim, grid_dim;
	void *dyn_shared;
	void *block_ctx;
};
static_assert(sizeof(sim_kernel_tls) == sizeof(sim_thread_state), "sim_kernel_tls layout");
static_assert(sizeof(::uint3) == 12 && sizeof(sim_kernel_tls) == 64, "sim_kernel_tls offsets below");
/* threadIdx & co. are identifiers, as in CUDA (host code may declare
 * `dim3 gridDim(...)`; cudaDeviceProp has a member warpSize), and each is a
 * plain thread-local variable that is at the same time a member of the state
 * block: one .tbss block, defined below in assembly, carries the labels
 * sim_kernel_state (the whole block), threadIdx, blockIdx, blockDim and
 * gridDim at their offsets.  It sits in a COMDAT group, so a library made of
 * several .cu files keeps one copy; every label is hidden.  (A thread_local
 * reference would cost a guard and an indirection per access.) */
#define SIM_HIDDEN __attribute__((visibility("hidden")))
extern __thread sim_kernel_tls sim_kernel_state SIM_HIDDEN;
extern __thread const ::uint3 threadIdx SIM_HIDDEN;
extern __thread const ::uint3 blockIdx SIM_HIDDEN;
extern __thread const ::uint3 blockDim SIM_HIDDEN;
extern __thread const ::uint3 gridDim SIM_HIDDEN;
__asm__(".pushsection .tbss.sim_kernel_state,\"awTG\",@nobits,sim_kernel_state,comdat\n"
	".balign 16\n"
	".globl sim_kernel_state\n.hidden sim_kernel_state\n.type sim_kernel_state, @tls_object\n"
	".size sim_kernel_state, 64\n"
	".globl threadIdx\n.hidden threadIdx\n.type threadIdx, @tls_object\n.size threadIdx, 12\n"
	".globl blockIdx\n.hidden blockIdx\n.type blockIdx, @tls_object\n.size blockIdx, 12\n"
	".globl blockDim\n.hidden blockDim\n.type blockDim, @tls_object\n.size blockDim, 12\n"
	".globl gridDim\n.hidden gridDim\n.type gridDim, @tls_object\n.size gridDim, 12\n"
	"sim_kernel_state:\nthreadIdx:\n.zero 12\nblockIdx:\n.zero 12\nblockDim:\n.zero 12\ngridDim:\n.zero 12\n"
	".zero 16\n"
	".popsection\n");
constexpr int warpSize = 32;

/* The scheduler's entry points, handed over by the driver (table.bind). */
/* One per library, shared by its translation units: inline, hidden. */
SIM_HIDDEN inline const struct sim_runtime *sim_rt;

static inline void sim_syncthreads(void) { sim_rt->syncthreads(); }
static inline int sim_syncthreads_op(int pred, int op) { return sim_rt->syncthreads_op(pred, op); }
static inline void sim_syncwarp(void) { sim_rt->syncwarp(); }
static inline unsigned long long *sim_warp_slots(void) { return sim_rt->warp_slots(); }
static inline unsigned long long sim_warp_vote(int pred) { return sim_rt->warp_vote(pred); }
static inline unsigned sim_linear_tid(void) { return sim_rt->linear_tid(); }
[[noreturn]] static inline void sim_trap(const char *why)
{
	sim_rt->trap(why);
	std::abort(); /* not reached: the runtime's trap leaves the fiber */
}

/* assert() in a kernel (the shims of <assert.h> and <cassert> route it
 * here): the launch stops with the message, as a device assert fails the
 * kernel on a GPU. */
[[noreturn]] static inline void sim_assert_fail(const char *expr, const char *file, unsigned line, const char *fn)
{
	static thread_local char why[512];
	std::snprintf(why, sizeof(why), "%s:%u: %s: assertion `%s' failed", file, line, fn, expr);
	if (!sim_rt) {
		std::fprintf(stderr, "%s\n", why);
		std::abort();
	}
	sim_trap(why);
}

/* ddp-cpu-kernels turns each `k<<<cfg>>>(args)` of the source into
 * `(sim_launch_site(), (void)sizeof((cfg), 0), (void)sizeof(decltype(k(args)) *))`:
 * the launch is type-checked and compiles to this call.  Host code of a
 * kernel library never runs, so reaching it means a kernel launched a
 * kernel (dynamic parallelism), which the CPU device does not emulate. */
static inline void sim_launch_site()
{
	if (sim_rt)
		sim_trap("a kernel launch (<<<>>>) inside a kernel: dynamic parallelism is not emulated by the CPU device");
	std::fprintf(stderr, "simcuda: a <<<>>> launch ran in a kernel library outside any kernel\n");
	std::abort();
}

/* ---- barriers, fences, traps ------------------------------------------- */
static inline void __syncthreads() { sim_syncthreads(); }
static inline int __syncthreads_count(int p) { return sim_syncthreads_op(p, 0); }
static inline int __syncthreads_and(int p) { return sim_syncthreads_op(p, 1); }
static inline int __syncthreads_or(int p) { return sim_syncthreads_op(p, 2); }
static inline void __syncwarp(unsigned = 0xffffffffu) { sim_syncwarp(); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] static inline void __trap() { sim_trap("__trap()"); }
[[noreturn]] static inline void __brkpt() { sim_trap("__brkpt()"); }
static inline void __nanosleep(unsigned) {}
static inline long long clock64() { return (long long)__builtin_ia32_rdtsc(); }

/* ---- warp functions (through the scheduler's warp barrier) -------------- */
/* A shuffle is an exchange through the block's warp slots between two warp
 * barriers: every lane writes its value, all live lanes of the warp meet,
 * each reads its source lane's slot, all meet again (so no lane overwrites a
 * slot another has not read yet).  Types over 8 bytes go in 8-byte pieces
 * (cooperative groups shuffle any trivially copyable type). */
template <class T>
static inline T sim_shfl_from(T v, unsigned src_lane)
{
	static_assert(std::is_trivially_copyable<T>::value, "simcuda: shuffled types must be trivially copyable");
	unsigned long long *s = sim_warp_slots();
	unsigned t = sim_linear_tid(), src = (t & ~31u) + (src_lane & 31u);
	unsigned char in[sizeof(T)], out[sizeof(T)];
	std::memcpy(in, &v, sizeof(T));
	for (std::size_t off = 0; off < sizeof(T); off += 8) {
		std::size_t n = sizeof(T) - off < 8 ? sizeof(T) - off : 8;
		unsigned long long bits = 0;
		std::memcpy(&bits, in + off, n);
		s[t] = bits;
		sim_syncwarp();
		bits = s[src];
		sim_syncwarp();
		std::memcpy(out + off, &bits, n);
	}
	T r;
	std::memcpy(static_cast<void *>(&r), out, sizeof(T));
	return r;
}
static inline unsigned __lane_id() { return sim_linear_tid() & 31u; }
template <class T> static inline T __shfl_sync(unsigned, T v, int src, int width = 32)
{
	unsigned lane = __lane_id(), base = lane / (unsigned)width * (unsigned)width;
	return sim_shfl_from(v, base + ((unsigned)src % (unsigned)width));
}
template <class T> static inline T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32)
{
	unsigned lane = __lane_id(), base = lane / (unsigned)width * (unsigned)width;
	return sim_shfl_from(v, lane >= base + d ? lane - d : lane);
}
template <class T> static inline T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32)
{
	unsigned lane = __lane_id(), base = lane / (unsigned)width * (unsigned)width;
	return sim_shfl_from(v, lane + d < base + (unsigned)width ? lane + d : lane);
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int m, int width = 32)
{
	unsigned lane = __lane_id(), base = lane / (unsigned)width * (unsigned)width;
	unsigned src = lane ^ (unsigned)m;
	return sim_shfl_from(v, src < base + (unsigned)width ? src : lane);
}
static inline unsigned __ballot_sync(unsigned, int p) { return (unsigned)sim_warp_vote(p); }
static inline int __any_sync(unsigned, int p) { return (unsigned)sim_warp_vote(p) != 0; }
static inline int __all_sync(unsigned, int p)
{
	unsigned long long v = sim_warp_vote(p);
	return (unsigned)v == (unsigned)(v >> 32);
}
static inline unsigned __activemask() { return (unsigned)(sim_warp_vote(1) >> 32); }
static inline unsigned __reduce_add_sync(unsigned m, unsigned v)
{
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(m, v, o);
	return v;
}

/* ---- atomics (real ones: several blocks may run at once) ---------------- */
#define SIM_ATOMIC_INT(T) \
	static inline T atomicAdd(T *a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
	static inline T atomicSub(T *a, T v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
	static inline T atomicAnd(T *a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
	static inline T atomicOr(T *a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); } \
	static inline T atomicXor(T *a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
	static inline T atomicExch(T *a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); } \
	static inline T atomicCAS(T *a, T cmp, T v) \
	{ __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return cmp; } \
	static inline T atomicMax(T *a, T v) \
	{ T o = __atomic_load_n(a, __ATOMIC_RELAXED); \
	  while (o < v && !__atomic_compare_exchange_n(a, &o, v, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {} \
	  return o; } \
	static inline T atomicMin(T *a, T v) \
	{ T o = __atomic_load_n(a, __ATOMIC_RELAXED); \
	  while (o > v && !__atomic_compare_exchange_n(a, &o, v, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {} \
	  return o; }
SIM_ATOMIC_INT(int)
SIM_ATOMIC_INT(unsigned int)
SIM_ATOMIC_INT(long long)
SIM_ATOMIC_INT(unsigned long long)
#undef SIM_ATOMIC_INT
static inline unsigned short atomicCAS(unsigned short *a, unsigned short cmp, unsigned short v)
{
	__atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}

/* Floating point: a CAS loop on the bits.  U is the same-size integer. */
template <class F, class U, class Op>
static inline F sim_atomic_fp(F *a, Op op)
{
	U *u = reinterpret_cast<U *>(a), o = __atomic_load_n(u, __ATOMIC_RELAXED), n;
	F of, nf;
	do {
		std::memcpy(&of, &o, sizeof(F));
		nf = op(of);
		std::memcpy(&n, &nf, sizeof(F));
	} while (!__atomic_compare_exchange_n(u, &o, n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return of;
}
static inline float atomicAdd(float *a, float v) { return sim_atomic_fp<float, uint32_t>(a, [v](float x) { return x + v; }); }
static inline double atomicAdd(double *a, double v) { return sim_atomic_fp<double, uint64_t>(a, [v](double x) { return x + v; }); }
static inline float atomicSub(float *a, float v) { return sim_atomic_fp<float, uint32_t>(a, [v](float x) { return x - v; }); }
static inline float atomicMax(float *a, float v) { return sim_atomic_fp<float, uint32_t>(a, [v](float x) { return x < v ? v : x; }); }
static inline float atomicMin(float *a, float v) { return sim_atomic_fp<float, uint32_t>(a, [v](float x) { return x > v ? v : x; }); }
static inline double atomicMax(double *a, double v) { return sim_atomic_fp<double, uint64_t>(a, [v](double x) { return x < v ? v : x; }); }
static inline double atomicMin(double *a, double v) { return sim_atomic_fp<double, uint64_t>(a, [v](double x) { return x > v ? v : x; }); }
static inline float atomicExch(float *a, float v) { return sim_atomic_fp<float, uint32_t>(a, [v](float) { return v; }); }
static inline unsigned atomicInc(unsigned *a, unsigned m)
{
	unsigned o = __atomic_load_n(a, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(a, &o, o >= m ? 0 : o + 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {}
	return o;
}
static inline unsigned atomicDec(unsigned *a, unsigned m)
{
	unsigned o = __atomic_load_n(a, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(a, &o, (o == 0 || o > m) ? m : o - 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {}
	return o;
}
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin
#define atomicExch_block atomicExch
#define atomicCAS_block atomicCAS

/* ---- loads and stores with cache hints: plain accesses ----------------- */
template <class T> static inline T __ldg(const T *p) { return *p; }
template <class T> static inline T __ldcg(const T *p) { return *p; }
template <class T> static inline T __ldca(const T *p) { return *p; }
template <class T> static inline T __ldcs(const T *p) { return *p; }
template <class T> static inline T __ldlu(const T *p) { return *p; }
template <class T> static inline T __ldcv(const T *p) { return *p; }
template <class T> static inline void __stcg(T *p, T v) { *p = v; }
template <class T> static inline void __stcs(T *p, T v) { *p = v; }
template <class T> static inline void __stwb(T *p, T v) { *p = v; }
template <class T> static inline void __stwt(T *p, T v) { *p = v; }

/* ---- integer and float intrinsics -------------------------------------- */
#define SIM_MINMAX(T) \
	static inline T min(T a, T b) { return a < b ? a : b; } \
	static inline T max(T a, T b) { return a < b ? b : a; }
SIM_MINMAX(int)
SIM_MINMAX(unsigned int)
SIM_MINMAX(long)
SIM_MINMAX(unsigned long)
SIM_MINMAX(long long)
SIM_MINMAX(unsigned long long)
#undef SIM_MINMAX
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline double min(float a, double b) { return fmin(a, b); }
static inline double min(double a, float b) { return fmin(a, b); }
static inline double max(float a, double b) { return fmax(a, b); }
static inline double max(double a, float b) { return fmax(a, b); }

static inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
static inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
static inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
#define __expf expf
#define __exp10f exp10f
#define __logf logf
#define __log2f log2f
#define __log10f log10f
#define __sinf sinf
#define __cosf cosf
#define __tanf tanf
#define __sincosf sincosf
#define __powf powf
static inline float __fdividef(float x, float y) { return x / y; }
static inline float fdividef(float x, float y) { return x / y; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f)); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline float __frsqrt_rn(float a) { return 1.0f / sqrtf(a); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
static inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline long long __float2ll_rz(float x) { return (long long)x; }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline float __double2float_rn(double x) { return (float)x; }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x)
{
	x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
	x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
	x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
	return __builtin_bswap32(x);
}
static inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
static inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{ return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
static inline int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
static inline int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
static inline unsigned __sad(int a, int b, unsigned c) { return c + (unsigned)(a > b ? a - b : b - a); }

/* ---- the kernel registry (used by sim-kernreg's X.reg.cpp) -------------- */
namespace sim_reg {
static inline sim_thread_state *thread_state()
{
	return reinterpret_cast<sim_thread_state *>(&sim_kernel_state);
}
static inline void bind(const struct sim_runtime *rt)
{
	sim_rt = rt;
}

template <class... A, std::size_t... I>
static inline void invoke(void (*f)(A...), void *const *args, std::index_sequence<I...>)
{
	(void)args;
	f(*static_cast<std::remove_cv_t<A> *>(args[I])...);
}
template <class... A> constexpr std::size_t arity(void (*)(A...)) { return sizeof...(A); }

/* The trampoline of kernel F: unpacks the driver's argument copies. */
template <auto F> void trampoline(void *const *args)
{
	invoke(F, args, std::make_index_sequence<arity(F)>());
}

template <auto F, class... A>
constexpr sim_kernel_entry make(const char *mangled, const char *sig, void (*)(A...))
{
	static_assert(sizeof...(A) <= SIM_MAX_PARAMS, "simcuda: too many kernel parameters");
	sim_kernel_entry e{};
	e.mangled = mangled;
	e.signature = sig;
	e.trampoline = &trampoline<F>;
	e.thread_state = &thread_state;
	e.nparams = sizeof...(A);
	std::size_t i = 0;
	((e.param_size[i] = sizeof(A), e.param_align[i] = alignof(A), ++i), ...);
	(void)i;
	return e;
}
} /* namespace sim_reg */

/* ---- kernels whose names hold lambda closure types ----------------------
 * A kernel template instantiated with a lambda (PyTorch's gpu_kernel(iter,
 * [..] GPU_LAMBDA (..) {..}), multi_tensor_apply with a lambda op) has no
 * C++ name outside the function that holds the lambda, so sim-kernreg cannot
 * write its SIM_KERNEL expression.  The source names it where the lambda is
 * in scope instead:
 *
 *     SIM_KERNEL_INSTANCE(&kernel<..., decltype(f)>);
 *
 * records the instance (trampoline, parameter sizes, address) when that
 * code runs, and the source runs it once while the library loads (a static
 * initializer that calls the enclosing function).  sim-kernreg lists such a
 * kernel as SIM_KERNEL_LATE(mangled, signature): its entry is the recorded
 * instance whose exported symbol (dladdr) is that mangled name.  The
 * enclosing function must therefore be `inline` (g++ then exports the
 * instance under nvcc's name, as exec.mk's check_names.sh requires; the
 * mangled name does not change).  A kernel that was not recorded gets an
 * entry without a name: launching it reports "no host implementation". */
namespace sim_reg {
struct late_kernel {
	const void *fn;
	sim_kernel_entry e;
};
enum { late_max = 512 };
static inline late_kernel *late_table(unsigned **count)
{
	static late_kernel table[late_max];
	static unsigned n;
	*count = &n;
	return table;
}
template <auto F> static inline int record_instance()
{
	unsigned *n;
	late_kernel *t = late_table(&n);
	for (unsigned i = 0; i < *n; i++)
		if (t[i].fn == reinterpret_cast<const void *>(F))
			return 0;
	if (*n == late_max)
		return -1;
	t[*n].fn = reinterpret_cast<const void *>(F);
	t[*n].e = make<F>(nullptr, nullptr, F);
	++*n;
	return 0;
}
static inline sim_kernel_entry late_entry(const char *mangled, const char *sig)
{
	unsigned *n;
	late_kernel *t = late_table(&n);
	for (unsigned i = 0; i < *n; i++) {
		Dl_info di;
		if (dladdr(t[i].fn, &di) && di.dli_sname && di.dli_saddr == t[i].fn &&
		    std::strcmp(di.dli_sname, mangled) == 0) {
			sim_kernel_entry e = t[i].e;
			e.mangled = mangled;
			e.signature = sig;
			return e;
		}
	}
	sim_kernel_entry none{};
	none.mangled = "";      /* found by no lookup: "no host implementation" */
	none.signature = sig;
	return none;
}
} /* namespace sim_reg */
#define SIM_KERNEL_INSTANCE(...) ((void)::sim_reg::record_instance<(__VA_ARGS__)>())
#define SIM_KERNEL_LATE(mangled, sig) ::sim_reg::late_entry(mangled, sig)

/* ---- device variables (used by sim-kernreg's X.reg.cpp) ------------------
 * __device__ and __constant__ variables are ordinary globals of the kernel
 * library; the table lists them so that cuModuleGetGlobal /
 * cudaMemcpyToSymbol reach the very storage the kernels use.  sim-kernreg
 * lists every variable of the cubin as SIM_GLOBAL(name, ::qualified::name);
 * names the source does not define (the compiler's own tables) resolve,
 * through a using-directive, to a sim_reg::absent placeholder, whose entry
 * has no address and is ignored by the driver. */
namespace sim_reg {
struct absent {};
template <class T> inline void *global_addr(T *p) { return const_cast<void *>(static_cast<const volatile void *>(p)); }
inline void *global_addr(const absent *) { return nullptr; }
template <class T> constexpr std::size_t global_size(T *) { return sizeof(T); }
constexpr std::size_t global_size(const absent *) { return 0; }
} /* namespace sim_reg */
#define SIM_GLOBAL(mangled, var) { mangled, ::sim_reg::global_addr(&(var)), ::sim_reg::global_size(&(var)) }

/* One table entry: SIM_KERNEL("_Z4axpyfPKfPfi", "axpy(float, float const*, float*, int)",
 *                              static_cast<void (*)(float, float const *, float *, int)>(&axpy)) */
#define SIM_KERNEL(mangled, sig, fp) ::sim_reg::make<(fp)>(mangled, sig, (fp))

/* The entries (and device variables) of one translation unit of a library
 * made of several (ddp-cpu-kernels compiles each .cu with
 * -DSIM_KERNEL_PART=i, and one more unit joins the parts with
 * SIM_KERNEL_TABLE_PARTS). */
struct sim_kernel_part {
	uint32_t count;
	const struct sim_kernel_entry *entries;
	uint32_t nglobals;
	const struct sim_global_entry *globals;
};
namespace sim_reg {
template <class E>
static inline const E *join_one(const sim_kernel_part *const *parts, std::size_t n, uint32_t sim_kernel_part::*cnt,
				const E *sim_kernel_part::*arr, uint32_t *total_out)
{
	std::size_t total = 0, k = 0;
	for (std::size_t i = 0; i < n; i++)
		total += parts[i]->*cnt;
	*total_out = 0;
	if (!total)
		return nullptr;
	E *all = static_cast<E *>(std::calloc(total, sizeof(E)));
	if (!all)
		return nullptr; /* the driver then finds nothing here and says so */
	for (std::size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < parts[i]->*cnt; j++)
			all[k++] = (parts[i]->*arr)[j];
	*total_out = (uint32_t)total;
	return all;
}
static inline void join(struct sim_kernel_table *t, const sim_kernel_part *const *parts, std::size_t n)
{
	t->entries = join_one(parts, n, &sim_kernel_part::count, &sim_kernel_part::entries, &t->count);
	t->globals = join_one(parts, n, &sim_kernel_part::nglobals, &sim_kernel_part::globals, &t->nglobals);
}
} /* namespace sim_reg */
#define SIM_KERNEL_PART_NAME2(n) sim_kernel_part_##n
#define SIM_KERNEL_PART_NAME(n) SIM_KERNEL_PART_NAME2(n)

#ifdef SIM_KERNEL_PART
#define SIM_KERNEL_TABLE(arr) \
	extern "C" SIM_HIDDEN const struct sim_kernel_part SIM_KERNEL_PART_NAME(SIM_KERNEL_PART) = \
		{ sizeof(arr) / sizeof((arr)[0]), (arr), 0, nullptr }
#define SIM_KERNEL_TABLE_G(arr, garr) \
	extern "C" SIM_HIDDEN const struct sim_kernel_part SIM_KERNEL_PART_NAME(SIM_KERNEL_PART) = \
		{ sizeof(arr) / sizeof((arr)[0]), (arr), sizeof(garr) / sizeof((garr)[0]), (garr) }
#define SIM_KERNEL_TABLE_EMPTY_G(garr) \
	extern "C" SIM_HIDDEN const struct sim_kernel_part SIM_KERNEL_PART_NAME(SIM_KERNEL_PART) = \
		{ 0, nullptr, sizeof(garr) / sizeof((garr)[0]), (garr) }
#define SIM_KERNEL_TABLE_EMPTY() \
	extern "C" SIM_HIDDEN const struct sim_kernel_part SIM_KERNEL_PART_NAME(SIM_KERNEL_PART) = { 0, nullptr, 0, nullptr }
#else
/* The exported table over a non-empty array of SIM_KERNEL entries. */
#define SIM_KERNEL_TABLE(arr) \
	extern "C" __attribute__((visibility("default"))) const struct sim_kernel_table sim_kernel_table = \
		{ SIM_KERNEL_ABI_VERSION, sizeof(arr) / sizeof((arr)[0]), (arr), &::sim_reg::bind, 0, nullptr }
/* The same with the device variables of a non-empty SIM_GLOBAL array. */
#define SIM_KERNEL_TABLE_G(arr, garr) \
	extern "C" __attribute__((visibility("default"))) const struct sim_kernel_table sim_kernel_table = \
		{ SIM_KERNEL_ABI_VERSION, sizeof(arr) / sizeof((arr)[0]), (arr), &::sim_reg::bind, \
		  sizeof(garr) / sizeof((garr)[0]), (garr) }
#define SIM_KERNEL_TABLE_EMPTY_G(garr) \
	extern "C" __attribute__((visibility("default"))) const struct sim_kernel_table sim_kernel_table = \
		{ SIM_KERNEL_ABI_VERSION, 0, nullptr, &::sim_reg::bind, sizeof(garr) / sizeof((garr)[0]), (garr) }
#define SIM_KERNEL_TABLE_EMPTY() \
	extern "C" __attribute__((visibility("default"))) const struct sim_kernel_table sim_kernel_table = \
		{ SIM_KERNEL_ABI_VERSION, 0, nullptr, &::sim_reg::bind, 0, nullptr }
#endif
/* The exported table of a library of several parts, filled when the library
 * is loaded (constructors run inside dlopen, before the driver reads it):
 * SIM_KERNEL_TABLE_PARTS(&sim_kernel_part_0, &sim_kernel_part_1). */
#define SIM_KERNEL_TABLE_PARTS(...) \
	extern "C" __attribute__((visibility("default"))) struct sim_kernel_table sim_kernel_table = \
		{ SIM_KERNEL_ABI_VERSION, 0, nullptr, &::sim_reg::bind, 0, nullptr }; \
	__attribute__((constructor)) static void sim_kernel_table_join() \
	{ \
		const sim_kernel_part *const parts[] = { __VA_ARGS__ }; \
		::sim_reg::join(&sim_kernel_table, parts, sizeof(parts) / sizeof(parts[0])); \
	}

#endif /* SIM_KERNEL_H */
