/* SPDX-License-Identifier: MIT
 *
 * ddp_slices.h - the written sub-extents (slices) of one gradient range in
 * one step, and what the overlap layer (ddp_overlap.c) reduces early from
 * them.  docs/overlap.md, "Slices".
 *
 * A trainer that keeps one buffer per parameter kind across all layers
 * (llm.c: fcprojw of every layer is one range, the optimizer's) writes such
 * a range one layer-slice per backward launch; the range is complete only
 * at layer 0's backward.  Each launch's write extent is known (the
 * argument's range: bounded by a count argument, else to the allocation's
 * end), so the range's bytes can be told apart by their last writer.
 *
 * Contract: pure bookkeeping, no I/O, no locks (the caller serialises);
 * offsets are bytes from the range's first byte.
 */
#ifndef DDP_SLICES_H
#define DDP_SLICES_H

#include <stddef.h>
#include <stdint.h>

/* [lo, hi) and the last launch that may have written it (its ordinal and
 * kernel id). */
struct ddp_slice {
	uint64_t lo, hi;
	uint64_t seq;
	uint32_t kid;
};

/* A range's writes: disjoint slices sorted by lo; bytes in no slice were
 * not written.  Zero-initialised = empty. */
struct ddp_slices {
	struct ddp_slice *v;
	size_t n, cap;
};

/* Slices kept per range: beyond, the two adjacent slices with the fewest
 * bytes together merge (the later writer is the merged slice's: it may
 * only make an early reduction later, never too early). */
#define DDP_SLICES_MAX 256

/* Launch (seq, kid) may have written [lo, hi) of a range of `size` bytes
 * whose elements are es bytes: clipped to the range, rounded outward to
 * whole elements; the slices under it take it as their last writer (a
 * slice straddling lo or hi is split there), the gaps under it become
 * slices; touching neighbours with the same writer merge.  An unbounded
 * write (to the allocation's end) so takes over every slice after lo.
 * Returns 0, or -1 out of memory (s then holds one slice [0, size) with
 * the latest writer: coarser, never wrong). */
int ddp_slices_write(struct ddp_slices *s, uint64_t size, uint64_t es, uint64_t lo, uint64_t hi, uint64_t seq,
		     uint32_t kid);

void ddp_slices_reset(struct ddp_slices *s);
void ddp_slices_free(struct ddp_slices *s);

/* The units of early reduction of the range for the next step: s's slices
 * when they tile [0, size) (every byte written) and every writer is at or
 * after `base` (this step's); else the whole range as one unit with its
 * last writer (wseq, wkid), or none when that is before base (no
 * prediction).  Whole-range units also when !split.  out: room for
 * max(s->n, 1).  Returns the number of units. */
size_t ddp_slices_units(const struct ddp_slices *s, uint64_t size, uint64_t base, uint64_t wseq,
			uint32_t wkid, int split, struct ddp_slice *out);

/* The parts of [0, size) outside x[0..n) (disjoint, sorted by lo) into out
 * (room for n + 1), in order.  Returns their number. */
size_t ddp_slices_complement(uint64_t size, const struct ddp_slice *x, size_t n, struct ddp_slice *out);

#endif /* DDP_SLICES_H */
