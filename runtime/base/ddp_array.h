/* SPDX-License-Identifier: MIT
 *
 * ddp_array.h - growing an array by doubling (the one place it is done).
 *
 * Contract: returns p when need already fits in *cap; else realloc's p to
 * the first doubling of *cap (or of `first` when *cap is 0) that holds
 * need elements of elem bytes and updates *cap; NULL on failure, with p
 * and *cap unchanged (the caller still owns p).
 */
#ifndef DDP_ARRAY_H
#define DDP_ARRAY_H

#include <stdlib.h>

static inline void *ddp_array_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap && p)
		return p;
	size_t nc = *cap ? *cap : first;
	while (nc < need)
		nc *= 2;
	void *q = realloc(p, nc * elem);
	if (q)
		*cap = nc;
	return q;
}

#endif /* DDP_ARRAY_H */
