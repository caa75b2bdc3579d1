/* SPDX-License-Identifier: MIT
 *
 * ddp_extent.c - a launch's pointer extents from its integer arguments and
 * its grid (the count rule, and the union over a grid-strided launch's
 * instances).  Contract and rules: ddp_extent.h.
 */
#include "ddp_extent.h"
#include "ddp_grad.h"

/* Does `elems` elements fit every voting pointer (typed, allocation over
 * 64 bytes)?  *any: some pointer voted. */
static int fits_all(const struct ddp_extent_ptr *p, uint32_t np, uint64_t elems, int *any)
{
	*any = 0;
	for (uint32_t j = 0; j < np; j++) {
		if (!p[j].esize || p[j].alloc <= 64)
			continue;
		*any = 1;
		if (elems > p[j].room / p[j].esize)
			return 0;
	}
	return 1;
}

/* (instances - 1) * s + n, or 0 on overflow */
static uint64_t union_elems(uint64_t instances, uint64_t s, uint64_t n)
{
	uint64_t span;
	if (__builtin_mul_overflow(instances - 1, s, &span) || __builtin_add_overflow(span, n, &span))
		return 0;
	return span;
}

struct ddp_extent_result ddp_extent_bound(const uint64_t *ints, uint32_t nints, const unsigned grid[3],
					  struct ddp_extent_ptr *p, uint32_t np)
{
	struct ddp_extent_result r = { DDP_EXTENT_NONE, 0, 0, 1 };
	uint64_t gy = grid ? grid[1] : 1, gz = grid ? grid[2] : 1;
	int any;

	for (uint32_t j = 0; j < np; j++) {
		p[j].ext = 0;
		p[j].bounded = DDP_GB_NONE;
	}
	/* the count: the largest that fits every voting pointer */
	for (uint32_t c = 0; c < nints; c++)
		if (ints[c] > r.count && fits_all(p, np, ints[c], &any) && any)
			r.count = ints[c];
	if (!r.count)
		return r;
	uint64_t elems = r.count;
	r.rule = DDP_EXTENT_COUNT;
	if (gy > 1 || gz > 1) {
		r.instances = gy * gz;
		r.rule = DDP_EXTENT_GRID_UNKNOWN;
		if (gy > 1 && gz > 1)
			return r;
		/* the stride: another argument of the count's value (the
		 * instances tile [ptr, ptr + I * n)); its union must fit */
		int seen = 0;
		for (uint32_t c = 0; c < nints; c++)
			seen += ints[c] == r.count;
		uint64_t u = union_elems(r.instances, r.count, r.count);
		if (seen < 2 || !u || !fits_all(p, np, u, &any))
			return r;
		r.stride = r.count;
		elems = union_elems(r.instances, r.stride, r.count);
		r.rule = DDP_EXTENT_GRID;
	}
	for (uint32_t j = 0; j < np; j++) {
		if (!p[j].esize || elems > p[j].room / p[j].esize)
			continue;
		p[j].ext = elems * p[j].esize;
		p[j].bounded = DDP_GB_COUNT;
	}
	return r;
}

const char *ddp_extent_rule_name(enum ddp_extent_rule r)
{
	switch (r) {
	case DDP_EXTENT_NONE: return "none";
	case DDP_EXTENT_COUNT: return "count";
	case DDP_EXTENT_GRID: return "grid-strided";
	case DDP_EXTENT_GRID_UNKNOWN: return "grid without a known stride";
	}
	return "?";
}

