/* SPDX-License-Identifier: MIT
 *
 * coll_values.h - the test values of the collective tests: rank r's i-th
 * element (exact in f32, f16 and bf16) and the conversions to and from the
 * 2-byte types, written independently of the library's (ddp_dtype.h: the
 * compiler's _Float16, bit truncation for bf16) so that a wrong library
 * conversion cannot cancel out in a test.  Static functions for the test
 * files that include it.
 */
#ifndef COLL_VALUES_H
#define COLL_VALUES_H

#include <stdint.h>
#include <string.h>
#include "ddp_dtype.h"

/* multiples of 1/8 in [-3, 4.5): exact in every reducible type */
static inline double val(int r, size_t i)
{
	return (double)((i * 7 + (size_t)r * 13) % 61) / 8.0 - 3.0;
}

static inline uint16_t to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16); /* exact for the values above */
}

static inline float from_bf16(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t to_f16(float f)
{
	_Float16 h = (_Float16)f;
	uint16_t b;
	memcpy(&b, &h, 2);
	return b;
}

static inline float from_f16(uint16_t b)
{
	_Float16 h;
	memcpy(&h, &b, 2);
	return (float)h;
}

static inline size_t esize(enum ddp_dtype t)
{
	return t == DDP_DT_F32 ? 4 : 2;
}

/* h[0..n) = rank r's values in type t */
static inline void fill(void *h, enum ddp_dtype t, int r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float f = (float)val(r, i);
		if (t == DDP_DT_F32)
			((float *)h)[i] = f;
		else if (t == DDP_DT_F16)
			((uint16_t *)h)[i] = to_f16(f);
		else
			((uint16_t *)h)[i] = to_bf16(f);
	}
}

#endif /* COLL_VALUES_H */
