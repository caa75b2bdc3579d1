/* SPDX-License-Identifier: MIT
 *
 * ddp_dtype.c - element types: the table of names, sizes and what the
 * collectives can average, the parser of type spellings, and the averaging
 * kernel of the host backend.
 *
 * The kernel works in blocks of DTYPE_BLOCK elements: the block's wide
 * accumulator (double for fp32, float for fp16/bf16) lives on the stack,
 * each source is added in order, then the block is divided and rounded once.
 * Division is the slowest instruction of the loop (vdivpd: ~2 cycles per
 * element, more than the memory traffic), so fp32 multiplies the double sum
 * by the double reciprocal of the divisor (exact for powers of two; for
 * others within 2^-52 of the quotient, far below fp32's 2^-24, and the same
 * on every rank); fp16/bf16 multiply for powers of two (exact, so identical
 * to dividing) and divide otherwise.
 * Every inner loop is a straight, branch-free loop over the block, which gcc
 * and clang vectorise; with gcc the kernels are also cloned for AVX2 and
 * x86-64-v4 (AVX-512: twice the conversions per instruction)
 * (target_clones, resolved once by the dynamic loader).
 *
 * Contract: pure functions, no state, any thread.  Stack use: one block of
 * accumulators (2 KiB).
 */
#include <strings.h>
#include "ddp_dtype.h"

#define DTYPE_BLOCK 256

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define DTYPE_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define DTYPE_CLONES
#endif

static const struct {
	const char *name;
	unsigned char size;
	unsigned char reducible; /* the collectives can average it */
} dtype_info[DDP_DT_COUNT] = {
	[DDP_DT_UNKNOWN] = { "?", 0, 0 }, [DDP_DT_F32] = { "f32", 4, 1 },   [DDP_DT_F64] = { "f64", 8, 0 },
	[DDP_DT_F16] = { "f16", 2, 1 },   [DDP_DT_BF16] = { "bf16", 2, 1 }, [DDP_DT_I8] = { "i8", 1, 0 },
	[DDP_DT_U8] = { "u8", 1, 0 },     [DDP_DT_I16] = { "i16", 2, 0 },   [DDP_DT_U16] = { "u16", 2, 0 },
	[DDP_DT_I32] = { "i32", 4, 0 },   [DDP_DT_U32] = { "u32", 4, 0 },   [DDP_DT_I64] = { "i64", 8, 0 },
	[DDP_DT_U64] = { "u64", 8, 0 },   [DDP_DT_BOOL] = { "bool", 1, 0 }, [DDP_DT_VOID] = { "void", 0, 0 },
};

/* Spellings beyond the short names (DDP_GRAD_DTYPE=fp16, ...). */
static const struct {
	const char *name;
	enum ddp_dtype t;
} dtype_aliases[] = {
	{ "fp32", DDP_DT_F32 },      { "float", DDP_DT_F32 }, { "float32", DDP_DT_F32 },
	{ "fp16", DDP_DT_F16 },      { "half", DDP_DT_F16 },  { "float16", DDP_DT_F16 },
	{ "bfloat16", DDP_DT_BF16 },
};

size_t ddp_dtype_size(enum ddp_dtype t)
{
	return (unsigned)t < DDP_DT_COUNT ? dtype_info[t].size : 0;
}

const char *ddp_dtype_name(enum ddp_dtype t)
{
	return (unsigned)t < DDP_DT_COUNT ? dtype_info[t].name : "?";
}

int ddp_dtype_reducible(enum ddp_dtype t)
{
	return (unsigned)t < DDP_DT_COUNT && dtype_info[t].reducible;
}

enum ddp_dtype ddp_dtype_parse(const char *s)
{
	if (!s)
		return DDP_DT_UNKNOWN;
	for (unsigned t = DDP_DT_UNKNOWN + 1; t < DDP_DT_COUNT; t++)
		if (strcasecmp(s, dtype_info[t].name) == 0)
			return (enum ddp_dtype)t;
	for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++)
		if (strcasecmp(s, dtype_aliases[i].name) == 0)
			return dtype_aliases[i].t;
	return DDP_DT_UNKNOWN;
}

DTYPE_CLONES
static void avg_f32(float *dst, const void *const *src, int n, size_t count, int divisor)
{
	double acc[DTYPE_BLOCK];
	const double inv = 1.0 / (double)divisor;
	if (n == 1) {
		const float *s0 = src[0];
		for (size_t i = 0; i < count; i++)
			dst[i] = (float)((double)s0[i] * inv);
		return;
	}
	/* ((s0 + s1) + s2) + ... : the first pair and the last source are
	 * fused into the loops that start and finish the block */
	for (size_t base = 0; base < count; base += DTYPE_BLOCK) {
		size_t m = count - base < DTYPE_BLOCK ? count - base : DTYPE_BLOCK;
		const float *s0 = (const float *)src[0] + base, *s1 = (const float *)src[1] + base;
		float *d = dst + base;
		if (n == 2) {
			for (size_t i = 0; i < m; i++)
				d[i] = (float)(((double)s0[i] + (double)s1[i]) * inv);
			continue;
		}
		for (size_t i = 0; i < m; i++)
			acc[i] = (double)s0[i] + (double)s1[i];
		for (int k = 2; k < n - 1; k++) {
			const float *sk = (const float *)src[k] + base;
			for (size_t i = 0; i < m; i++)
				acc[i] += (double)sk[i];
		}
		const float *sl = (const float *)src[n - 1] + base;
		for (size_t i = 0; i < m; i++)
			d[i] = (float)((acc[i] + (double)sl[i]) * inv);
	}
}

/* fp16 and bf16 differ only in their conversions: one body for both. */
#define DEFINE_AVG_HALF(fn, to_f32, from_f32) \
	DTYPE_CLONES \
	static void fn(uint16_t *dst, const void *const *src, int n, size_t count, int divisor) \
	{ \
		float acc[DTYPE_BLOCK]; \
		const float div = (float)divisor, inv = 1.0f / div; \
		const int pow2 = (divisor & (divisor - 1)) == 0; /* inv exact */ \
		for (size_t base = 0; base < count; base += DTYPE_BLOCK) { \
			size_t m = count - base < DTYPE_BLOCK ? count - base : DTYPE_BLOCK; \
			const uint16_t *s0 = (const uint16_t *)src[0] + base; \
			for (size_t i = 0; i < m; i++) \
				acc[i] = to_f32(s0[i]); \
			for (int k = 1; k < n; k++) { \
				const uint16_t *sk = (const uint16_t *)src[k] + base; \
				for (size_t i = 0; i < m; i++) \
					acc[i] += to_f32(sk[i]); \
			} \
			uint16_t *d = dst + base; \
			if (pow2) \
				for (size_t i = 0; i < m; i++) \
					d[i] = from_f32(acc[i] * inv); \
			else \
				for (size_t i = 0; i < m; i++) \
					d[i] = from_f32(acc[i] / div); \
		} \
	}

DEFINE_AVG_HALF(avg_f16, ddp_f16_to_f32, ddp_f32_to_f16)
DEFINE_AVG_HALF(avg_bf16, ddp_bf16_to_f32, ddp_f32_to_bf16)

void ddp_dtype_avg(enum ddp_dtype t, void *dst, const void *const *src, int n, size_t count, int divisor)
{
	switch (t) {
	case DDP_DT_F32: avg_f32(dst, src, n, count, divisor); break;
	case DDP_DT_F16: avg_f16(dst, src, n, count, divisor); break;
	case DDP_DT_BF16: avg_bf16(dst, src, n, count, divisor); break;
	default: break;
	}
}
