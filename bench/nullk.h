/* SPDX-License-Identifier: MIT
 *
 * nullk.h - the kernels the null driver (bench/nulldrv.c) pretends to have,
 * shared with the benchmark (bench/launch_rate.c).  A kernel's handle is
 * NULLK_HANDLE(i); the null driver answers cuFuncGetName and
 * cuFuncGetParamInfo for it from this table, so libddp discovers each kernel
 * at its first launch exactly as on a real driver (mangled name, parameter
 * layout), classifies it by name and decodes its pointer arguments.
 *
 * Contract: data only; both files index the same table.
 */
#ifndef BENCH_NULLK_H
#define BENCH_NULLK_H

#include <stdint.h>

#define NULLK_BASE 0x5a000u
#define NULLK_HANDLE(i) ((CUfunction)(uintptr_t)(NULLK_BASE + 16u * (unsigned)(i)))

struct nullk {
	const char *name;          /* mangled, as cuFuncGetName answers        */
	unsigned nparams;
	unsigned size[4];          /* parameter sizes, packed at their alignment */
};

enum { NULLK_FORWARD, NULLK_BACKWARD, NULLK_SGD, NULLK_COUNT };

/* forward(const float *x, const float *p, float *y, int n): reads the
 *   parameter, writes an activation (the typical non-optimizer launch)
 * backward(float *g, const float *x, int n): writes the gradient
 * sgd_update(float *p, const float *g, float lr, int n): the optimizer */
static const struct nullk nullk_table[NULLK_COUNT] = {
	{ "_Z7forwardPKfS0_Pfi", 4, { 8, 8, 8, 4 } },
	{ "_Z8backwardPfPKfi", 3, { 8, 8, 4 } },
	{ "_Z10sgd_updatePfPKffi", 4, { 8, 8, 4, 4 } },
};

#endif /* BENCH_NULLK_H */
