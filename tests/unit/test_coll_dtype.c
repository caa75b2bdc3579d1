/* SPDX-License-Identifier: MIT
 *
 * test_coll_dtype.c - the element types of runtime/base/ddp_dtype.c: the table
 * of names and sizes against a hand-written one, the parser, and the
 * fp16/bf16 conversions and the averaging kernel against independent
 * references: the compiler's _Float16 (exhaustively for fp16 -> fp32, a
 * dense sweep of fp32 bit patterns for fp32 -> fp16), a frexp/nearbyint
 * bf16 rounding, and a scalar double-precision mean for the kernel.
 */
#define CHECK_MAIN
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "ddp_dtype.h"

static float bits_f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint32_t f_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

TEST(f16_to_f32_exhaustive)
{
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		_Float16 x;
		uint16_t hb = (uint16_t)h;
		memcpy(&x, &hb, 2);
		float ref = (float)x, got = ddp_f16_to_f32(hb);
		if (isnan(ref) ? !isnan(got) : f_bits(ref) != f_bits(got)) {
			if (bad++ < 5)
				CHECK_FAIL_("half 0x%04x: got %a, expected %a", h, got, ref);
		}
	}
	CHECK_EQ_INT(bad, 0);
}

static uint16_t ref_f16(float f)
{
	_Float16 x = (_Float16)f;
	uint16_t h;
	memcpy(&h, &x, 2);
	return h;
}

TEST(f32_to_f16_sweep)
{
	int bad = 0;
	/* every 997th bit pattern, plus the neighbourhood of every fp16 value
	 * (ties and their neighbours) */
	for (uint64_t u = 0; u <= 0xffffffffull; u += 997) {
		float f = bits_f((uint32_t)u);
		uint16_t got = ddp_f32_to_f16(f), ref = ref_f16(f);
		if (isnan(f) ? (got & 0x7c00) != 0x7c00 || !(got & 0x3ff) : got != ref)
			if (bad++ < 5)
				CHECK_FAIL_("float %a: got 0x%04x, expected 0x%04x", f, got, ref);
	}
	for (uint32_t h = 0; h < 0x7c00; h++) {
		float lo = ddp_f16_to_f32((uint16_t)h), hi = ddp_f16_to_f32((uint16_t)(h + 1));
		float mid = (lo + hi) / 2; /* exact in fp32: the tie */
		float probes[] = { mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), -mid };
		for (int i = 0; i < 4; i++)
			if (ddp_f32_to_f16(probes[i]) != ref_f16(probes[i]))
				if (bad++ < 5)
					CHECK_FAIL_("tie near half 0x%04x: %a -> 0x%04x, expected 0x%04x", h, probes[i],
						    ddp_f32_to_f16(probes[i]), ref_f16(probes[i]));
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(ddp_f32_to_f16(INFINITY), 0x7c00);
	CHECK_EQ_INT(ddp_f32_to_f16(-INFINITY), 0xfc00);
	CHECK_EQ_INT(ddp_f32_to_f16(65520.0f), 0x7c00); /* rounds to inf */
	CHECK_EQ_INT(ddp_f32_to_f16(65519.0f), 0x7bff);
	CHECK_EQ_INT(ddp_f32_to_f16(-0.0f), 0x8000);
}

/* bf16 reference: round the float's value to 8 significant bits. */
static uint16_t ref_bf16(float f)
{
	if (isnan(f))
		return 0x7fc0;
	double d = f;
	if (d != 0 && isfinite(d)) {
		int e;
		double m = frexp(d, &e);
		d = ldexp(nearbyint(ldexp(m, 8)), e - 8);
		if (fabs(d) > 0x1.fep127) /* beyond bf16's largest finite value */
			d = copysign(INFINITY, d);
		else if (fabs(d) < 0x1p-126 && d != 0) {
			/* subnormal range: quantum is 2^-133 */
			d = ldexp(nearbyint(ldexp((double)f, 133)), -133);
		}
	}
	return (uint16_t)(f_bits((float)d) >> 16);
}

TEST(bf16_conversions)
{
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = ddp_bf16_to_f32((uint16_t)h);
		if (f_bits(f) != h << 16)
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	for (uint64_t u = 0; u <= 0xffffffffull; u += 883) {
		float f = bits_f((uint32_t)u);
		uint16_t got = ddp_f32_to_bf16(f);
		if (isnan(f)) {
			if ((got & 0x7f80) != 0x7f80 || !(got & 0x7f))
				if (bad++ < 5)
					CHECK_FAIL_("NaN 0x%08x -> 0x%04x is not a NaN", (uint32_t)u, got);
			continue;
		}
		uint16_t ref = (uint16_t)(ref_bf16(fabsf(f)) | (f_bits(f) >> 16 & 0x8000));
		if (got != ref)
			if (bad++ < 5)
				CHECK_FAIL_("float %a: got 0x%04x, expected 0x%04x", f, got, ref);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(ddp_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);           /* tie to even */
	CHECK_EQ_INT(ddp_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above tie */
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

TEST(avg_kernel_matches_scalar_reference)
{
	enum { N = 1037, MAXR = 8 };
	static float f[MAXR][N], fo[N];
	static uint16_t h[MAXR][N], ho[N], b[MAXR][N], bo[N];
	uint32_t s = 1;
	for (int r = 0; r < MAXR; r++)
		for (int i = 0; i < N; i++) {
			float v = ((float)lcg(&s) / (float)(1 << 24) - 0.5f) * 8.0f;
			f[r][i] = v;
			h[r][i] = ref_f16(v);
			b[r][i] = ref_bf16(v) | (uint16_t)(v < 0 ? 0x8000 : 0);
		}
	for (int n = 1; n <= MAXR; n++) {
		const void *sf[MAXR], *sh[MAXR], *sb[MAXR];
		for (int r = 0; r < n; r++)
			sf[r] = f[r], sh[r] = h[r], sb[r] = b[r];
		ddp_dtype_avg(DDP_DT_F32, fo, sf, n, N, n);
		ddp_dtype_avg(DDP_DT_F16, ho, sh, n, N, n);
		ddp_dtype_avg(DDP_DT_BF16, bo, sb, n, N, n);
		int bad = 0;
		for (int i = 0; i < N; i++) {
			double sum = 0, sumh = 0, sumb = 0;
			for (int r = 0; r < n; r++) {
				sum += f[r][i];
				sumh += ddp_f16_to_f32(h[r][i]);
				sumb += ddp_bf16_to_f32(b[r][i]);
			}
			/* fp32: double sum, one rounding: exactly the rounded mean */
			if (fo[i] != (float)(sum / n))
				bad++;
			/* fp16/bf16: within one ulp of the exact mean */
			double mh = sumh / n, gh = ddp_f16_to_f32(ho[i]);
			if (fabs(gh - mh) > ldexp(1.0, ilogb(fabs(mh) > 0x1p-14 ? mh : 0x1p-14) - 10))
				bad++;
			double mb = sumb / n, gb = ddp_bf16_to_f32(bo[i]);
			if (fabs(gb - mb) > ldexp(1.0, ilogb(mb != 0 ? mb : 1e-30) - 7))
				bad++;
		}
		if (bad)
			CHECK_FAIL_("n=%d: %d elements off", n, bad);
	}
	/* in place (dst aliases src[0]) */
	static float a0[N];
	memcpy(a0, f[0], sizeof a0);
	const void *sa[2] = { a0, f[1] };
	ddp_dtype_avg(DDP_DT_F32, a0, sa, 2, N, 2);
	for (int i = 0; i < N; i++)
		if (a0[i] != (float)(((double)f[0][i] + f[1][i]) / 2)) {
			CHECK_FAIL_("in-place element %d", i);
			break;
		}
}

TEST(names_sizes_reducible_parse)
{
	/* written out by hand, one row per type */
	static const struct { enum ddp_dtype t; const char *name; size_t size; int red; } want[] = {
		{ DDP_DT_UNKNOWN, "?", 0, 0 }, { DDP_DT_F32, "f32", 4, 1 }, { DDP_DT_F64, "f64", 8, 0 },
		{ DDP_DT_F16, "f16", 2, 1 }, { DDP_DT_BF16, "bf16", 2, 1 }, { DDP_DT_I8, "i8", 1, 0 },
		{ DDP_DT_U8, "u8", 1, 0 }, { DDP_DT_I16, "i16", 2, 0 }, { DDP_DT_U16, "u16", 2, 0 },
		{ DDP_DT_I32, "i32", 4, 0 }, { DDP_DT_U32, "u32", 4, 0 }, { DDP_DT_I64, "i64", 8, 0 },
		{ DDP_DT_U64, "u64", 8, 0 }, { DDP_DT_BOOL, "bool", 1, 0 }, { DDP_DT_VOID, "void", 0, 0 },
	};
	CHECK_EQ_INT(sizeof want / sizeof want[0], DDP_DT_COUNT);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		CHECK_EQ_STR(ddp_dtype_name(want[i].t), want[i].name);
		CHECK_EQ_INT(ddp_dtype_size(want[i].t), want[i].size);
		CHECK_EQ_INT(ddp_dtype_reducible(want[i].t), want[i].red);
		if (want[i].t != DDP_DT_UNKNOWN)
			CHECK_EQ_INT(ddp_dtype_parse(want[i].name), want[i].t);
	}
	/* out of range */
	CHECK_EQ_STR(ddp_dtype_name(DDP_DT_COUNT), "?");
	CHECK_EQ_INT(ddp_dtype_size((enum ddp_dtype)255), 0);
	CHECK_EQ_INT(ddp_dtype_reducible(DDP_DT_COUNT), 0);
	/* the DDP_GRAD_DTYPE spellings, any case */
	static const struct { const char *s; enum ddp_dtype t; } sp[] = {
		{ "fp32", DDP_DT_F32 }, { "FLOAT", DDP_DT_F32 }, { "float32", DDP_DT_F32 },
		{ "fp16", DDP_DT_F16 }, { "Half", DDP_DT_F16 }, { "float16", DDP_DT_F16 },
		{ "BF16", DDP_DT_BF16 }, { "bfloat16", DDP_DT_BF16 },
		{ "?", DDP_DT_UNKNOWN }, { "", DDP_DT_UNKNOWN }, { "int8", DDP_DT_UNKNOWN },
		{ "f32 ", DDP_DT_UNKNOWN },
	};
	for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
		CHECK_EQ_INT(ddp_dtype_parse(sp[i].s), sp[i].t);
	CHECK_EQ_INT(ddp_dtype_parse(NULL), DDP_DT_UNKNOWN);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
