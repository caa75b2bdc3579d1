/* SPDX-License-Identifier: MIT
 *
 * ddp_slices.c - a gradient range's written slices (ddp_slices.h).
 *
 * A write replaces the writer of every byte it covers: the slices form the
 * partition of the written bytes by their last writer.  Boundaries come
 * only from write extents, so a trainer that writes a per-kind buffer one
 * layer at a time gets one slice per layer; an unbounded write (the rest
 * of the allocation) takes over, and merges, every slice after its start.
 *
 * Contract: ddp_slices.h.  No state but the caller's.
 */
#include <stdlib.h>
#include <string.h>
#include "ddp_array.h"
#include "ddp_slices.h"

/* Merges v[k] and v[k+1] into v[k] (the later writer's). */
static void merge_at(struct ddp_slices *s, size_t k)
{
	struct ddp_slice *a = &s->v[k], *b = &s->v[k + 1];
	if (b->seq > a->seq) {
		a->seq = b->seq;
		a->kid = b->kid;
	}
	a->hi = b->hi;
	memmove(b, b + 1, (s->n - k - 2) * sizeof *b);
	s->n--;
}

static int same_writer_touching(const struct ddp_slice *a, const struct ddp_slice *b)
{
	return a->hi == b->lo && a->seq == b->seq && a->kid == b->kid;
}

int ddp_slices_write(struct ddp_slices *s, uint64_t size, uint64_t es, uint64_t lo, uint64_t hi, uint64_t seq,
		     uint32_t kid)
{
	if (!es)
		es = 1;
	if (hi > size)
		hi = size;
	if (lo >= hi)
		return 0;
	lo -= lo % es;
	if (hi % es)
		hi += es - hi % es;
	if (hi > size)
		hi = size;
	struct ddp_slice *nv = ddp_array_grow(s->v, &s->cap, s->n + 3, sizeof *s->v, 8);
	if (!nv)
		return -1;
	s->v = nv;
	/* i: the first slice ending after lo; j: the first starting at or after hi */
	size_t i = 0, j;
	while (i < s->n && s->v[i].hi <= lo)
		i++;
	j = i;
	while (j < s->n && s->v[j].lo < hi)
		j++;
	struct ddp_slice mid[3];
	size_t nm = 0, at = i;
	if (i < j && s->v[i].lo < lo) { /* the part of slice i before lo keeps its writer */
		mid[nm] = s->v[i];
		mid[nm++].hi = lo;
		at = i + 1;
	}
	mid[nm++] = (struct ddp_slice){ lo, hi, seq, kid };
	if (i < j && s->v[j - 1].hi > hi) { /* the part of slice j-1 after hi */
		mid[nm] = s->v[j - 1];
		mid[nm++].lo = hi;
	}
	/* v[0..i) mid v[j..n) */
	memmove(s->v + i + nm, s->v + j, (s->n - j) * sizeof *s->v);
	memcpy(s->v + i, mid, nm * sizeof *mid);
	s->n = s->n - (j - i) + nm;
	/* merge the new slice (at) with touching neighbours of the same writer
	 * (the same launch writing adjacent extents) */
	if (at + 1 < s->n && same_writer_touching(&s->v[at], &s->v[at + 1]))
		merge_at(s, at);
	if (at > 0 && same_writer_touching(&s->v[at - 1], &s->v[at]))
		merge_at(s, at - 1);
	while (s->n > DDP_SLICES_MAX) {
		size_t best = 0;
		uint64_t span = UINT64_MAX;
		for (size_t k = 0; k + 1 < s->n; k++)
			if (s->v[k + 1].hi - s->v[k].lo < span) {
				span = s->v[k + 1].hi - s->v[k].lo;
				best = k;
			}
		merge_at(s, best);
	}
	return 0;
}

void ddp_slices_reset(struct ddp_slices *s)
{
	s->n = 0;
}

void ddp_slices_free(struct ddp_slices *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

size_t ddp_slices_units(const struct ddp_slices *s, uint64_t size, uint64_t base, uint64_t wseq,
			uint32_t wkid, int split, struct ddp_slice *out)
{
	if (split && s->n > 1) {
		uint64_t at = 0;
		size_t i;
		for (i = 0; i < s->n; i++) {
			if (s->v[i].lo != at || s->v[i].seq < base)
				break;
			at = s->v[i].hi;
		}
		if (i == s->n && at == size) {
			memcpy(out, s->v, s->n * sizeof *out);
			return s->n;
		}
	}
	if (wseq < base)
		return 0;
	out[0] = (struct ddp_slice){ 0, size, wseq, wkid };
	return 1;
}

size_t ddp_slices_complement(uint64_t size, const struct ddp_slice *x, size_t n, struct ddp_slice *out)
{
	size_t k = 0;
	uint64_t at = 0;
	for (size_t i = 0; i < n; i++) {
		if (x[i].lo > at)
			out[k++] = (struct ddp_slice){ at, x[i].lo < size ? x[i].lo : size, 0, 0 };
		if (x[i].hi > at)
			at = x[i].hi;
		if (at >= size)
			break;
	}
	if (at < size)
		out[k++] = (struct ddp_slice){ at, size, 0, 0 };
	return k;
}
