/* SPDX-License-Identifier: MIT
 *
 * ddp_dtype.h - element types, the one list for the whole library: what the
 * signature reader recognises in a kernel's parameters (ddp_sig.h), what
 * the gradient tracker records (ddp_grad.h) and what the collectives average
 * (ddp_coll.h); plus the fp16/bf16 scalar conversions and the CPU kernels of
 * the host collectives.
 *
 * Only f32, f16 and bf16 are reducible (ddp_dtype_reducible): the
 * collectives refuse every other type, and the tracker treats them as
 * unknown.  The values are stored in uint8_t fields (ddp_sig.h, ddp_kreg.h,
 * ddp_grad.h) and must stay below 256.
 *
 * Rounding: every conversion to a narrower type rounds to nearest, ties to
 * even (IEEE default), NaN stays NaN (quiet), overflow gives infinity.
 * Averaging: ddp_dtype_avg sums in a wider type (fp32 in double, fp16/bf16
 * in fp32) strictly in source order 0..n-1, scales once by 1/divisor (fp32:
 * the double sum times the double reciprocal, exact for power-of-two
 * divisors, within 2^-52 otherwise; fp16/bf16: a multiply for power-of-two
 * divisors, a divide otherwise) and rounds once to the element type, so the
 * result depends only on the inputs and their order: whichever process
 * computes an element gets the same bits.
 *
 * Contract: pure functions, no state, no allocation, any thread.  The loops
 * are written branch-free so that the compiler vectorises them (-O2 plus
 * target clones for AVX2 where the compiler supports them).
 */
#ifndef DDP_DTYPE_H
#define DDP_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum ddp_dtype {
	DDP_DT_UNKNOWN = 0,
	DDP_DT_F32,
	DDP_DT_F64,
	DDP_DT_F16,
	DDP_DT_BF16,
	DDP_DT_I8,
	DDP_DT_U8,
	DDP_DT_I16,
	DDP_DT_U16,
	DDP_DT_I32,
	DDP_DT_U32,
	DDP_DT_I64,
	DDP_DT_U64,
	DDP_DT_BOOL,
	DDP_DT_VOID,
	DDP_DT_COUNT,
};

/* Bytes per element (0 for unknown, void and out-of-range values). */
size_t ddp_dtype_size(enum ddp_dtype t);

/* Short name: "f32", "bf16", "i64", ... ("?" for unknown or out of range). */
const char *ddp_dtype_name(enum ddp_dtype t);

/* 1 for the types the collectives can average (f32, f16, bf16), else 0. */
int ddp_dtype_reducible(enum ddp_dtype t);

/* A type from its short name ("f32", "i64", ...) or a common spelling of a
 * floating-point type ("fp32", "float", "float32", "fp16", "half",
 * "float16", "bfloat16"), case-insensitively (DDP_GRAD_DTYPE); NULL or
 * anything else gives DDP_DT_UNKNOWN. */
enum ddp_dtype ddp_dtype_parse(const char *s);

/* ---- scalar conversions (inline: also used by tests and other modules) */

/* Branch-free select (c ? a : b) that keeps the loops vectorisable. */
static inline uint32_t ddp_dtype_sel_(int c, uint32_t a, uint32_t b)
{
	uint32_t m = (uint32_t)0 - (uint32_t)(c != 0);
	return (a & m) | (b & ~m);
}

static inline float ddp_f16_to_f32(uint16_t h)
{
	/* Exponent re-bias, with denormals renormalised through a float
	 * subtraction and Inf/NaN given the full exponent (branch-free). */
	uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
	uint32_t exp = em & (0x7c00u << 13);
	uint32_t u = em + ((127u - 15u) << 23);
	uint32_t u_inf = u + ((128u - 16u) << 23);
	uint32_t u_den = u + (1u << 23);
	float f_den, magic;
	uint32_t magic_u = 113u << 23;
	memcpy(&f_den, &u_den, 4);
	memcpy(&magic, &magic_u, 4);
	f_den -= magic;
	uint32_t den;
	memcpy(&den, &f_den, 4);
	u = ddp_dtype_sel_(exp == (0x7c00u << 13), u_inf, ddp_dtype_sel_(exp == 0, den, u));
	u |= (uint32_t)(h & 0x8000u) << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t ddp_f32_to_f16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint32_t sign = u & 0x80000000u;
	u ^= sign;
	/* Inf/NaN or too large for fp16 */
	uint32_t big = ddp_dtype_sel_(u > (255u << 23), 0x7e00u, 0x7c00u);
	/* subnormal fp16 (or zero): let the FPU round by adding a magic */
	const uint32_t denorm_magic_u = ((127u - 15u) + (23u - 10u) + 1u) << 23;
	float fa, dm;
	memcpy(&fa, &u, 4);
	memcpy(&dm, &denorm_magic_u, 4);
	fa += dm;
	uint32_t fau;
	memcpy(&fau, &fa, 4);
	uint32_t sub = fau - denorm_magic_u;
	/* normal: re-bias and round to nearest even by hand */
	uint32_t mant_odd = (u >> 13) & 1u;
	uint32_t norm = (u + (((uint32_t)(15 - 127)) << 23) + 0xfffu + mant_odd) >> 13;
	uint32_t o =
		ddp_dtype_sel_(u >= ((127u + 16u) << 23), big, ddp_dtype_sel_(u < (113u << 23), sub, norm));
	return (uint16_t)(o | (sign >> 16));
}

static inline float ddp_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t ddp_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
	uint32_t nan = (u >> 16) | 0x40u;
	return (uint16_t)ddp_dtype_sel_((u & 0x7fffffffu) > 0x7f800000u, nan, rounded);
}

/* ---- kernels of the host backend */

/* dst[i] = round((src[0][i] + src[1][i] + ... + src[n-1][i]) / divisor) for
 * i in [0, count), summed in order 0..n-1 in the wide type (see above).
 * dst may alias any src (element i is read from every source before dst[i]
 * is written).  n >= 1, divisor >= 1.  Pointers need only element
 * alignment.  t must be reducible; any other type writes nothing. */
void ddp_dtype_avg(enum ddp_dtype t, void *dst, const void *const *src, int n, size_t count, int divisor);

#endif /* DDP_DTYPE_H */
