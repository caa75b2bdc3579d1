/* SPDX-License-Identifier: MIT
 *
 * test_slices.c - a gradient range's written slices (ddp_slices.c): writes
 * split, take over and merge slices; an unbounded write takes over (and
 * merges) everything after its start; extents are clipped and rounded to
 * whole elements; the cap merges the narrowest neighbours with the later
 * writer; the units of early reduction are the slices only when this
 * step's writes tile the range (else the whole range, or nothing before
 * the base); the complement of the clean units is exactly the rest.
 */
#define CHECK_MAIN
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "ddp_slices.h"

/* "lo-hi@seq lo-hi@seq ..." */
static const char *show(const struct ddp_slice *v, size_t n)
{
	static char buf[4096];
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && o < sizeof buf - 64; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%llu-%llu@%llu", i ? " " : "",
				      (unsigned long long)v[i].lo, (unsigned long long)v[i].hi,
				      (unsigned long long)v[i].seq);
	return buf;
}

#define W(s, lo, hi, seq) CHECK_EQ_INT(ddp_slices_write(&(s), 1024, 2, (lo), (hi), (seq), (uint32_t)(seq) % 7), 0)

/* llm.c's layout: one range per kind, one slice per layer, backward from
 * the last layer; each slice's last writer is its layer's launch */
TEST(layer_slices)
{
	struct ddp_slices s = { 0 };
	W(s, 768, 1024, 10);   /* layer 3 */
	W(s, 512, 768, 20);    /* layer 2 */
	W(s, 256, 512, 30);
	W(s, 0, 256, 40);      /* layer 0, last */
	CHECK_EQ_STR(show(s.v, s.n), "0-256@40 256-512@30 512-768@20 768-1024@10");
	struct ddp_slice u[8];
	size_t n = ddp_slices_units(&s, 1024, 5, 40, 40 % 7, 1, u);
	CHECK_EQ_INT((int)n, 4);
	CHECK_EQ_STR(show(u, n), "0-256@40 256-512@30 512-768@20 768-1024@10");
	/* slicing off: one unit, the whole range, its last writer */
	n = ddp_slices_units(&s, 1024, 5, 40, 40 % 7, 0, u);
	CHECK_EQ_STR(show(u, n), "0-1024@40");
	ddp_slices_free(&s);
}

TEST(write_splits_and_takes_over)
{
	struct ddp_slices s = { 0 };
	W(s, 0, 1024, 1);
	W(s, 100, 200, 2);      /* inside: split in three */
	CHECK_EQ_STR(show(s.v, s.n), "0-100@1 100-200@2 200-1024@1");
	W(s, 50, 150, 3);       /* straddles two */
	CHECK_EQ_STR(show(s.v, s.n), "0-50@1 50-150@3 150-200@2 200-1024@1");
	W(s, 150, 200, 3);      /* the same launch, touching: merged */
	CHECK_EQ_STR(show(s.v, s.n), "0-50@1 50-200@3 200-1024@1");
	W(s, 0, 50, 3);
	CHECK_EQ_STR(show(s.v, s.n), "0-200@3 200-1024@1");
	W(s, 0, 1024, 4);       /* the whole range: one slice */
	CHECK_EQ_STR(show(s.v, s.n), "0-1024@4");
	ddp_slices_reset(&s);
	CHECK_EQ_INT((int)s.n, 0);
	/* gaps: a write into a gap is a slice of its own; neighbours of other
	 * writers stay apart */
	W(s, 0, 100, 1);
	W(s, 300, 400, 2);
	W(s, 100, 300, 3);
	CHECK_EQ_STR(show(s.v, s.n), "0-100@1 100-300@3 300-400@2");
	W(s, 100, 300, 2);      /* the same writer as its right neighbour */
	CHECK_EQ_STR(show(s.v, s.n), "0-100@1 100-400@2");
	ddp_slices_free(&s);
}

/* an unbounded write (to the allocation's end: hi beyond the range) takes
 * over every slice after its start and merges them */
TEST(unbounded_write_merges_the_rest)
{
	struct ddp_slices s = { 0 };
	W(s, 768, 1024, 10);
	W(s, 512, 768, 20);
	W(s, 256, 512, 30);
	CHECK_EQ_INT(ddp_slices_write(&s, 1024, 2, 300, UINT64_MAX / 2, 35, 1), 0);
	CHECK_EQ_STR(show(s.v, s.n), "256-300@30 300-1024@35");
	W(s, 0, 256, 40);
	struct ddp_slice u[8];
	size_t n = ddp_slices_units(&s, 1024, 5, 40, 0, 1, u);
	CHECK_EQ_STR(show(u, n), "0-256@40 256-300@30 300-1024@35");
	/* a truncated launch (the whole allocation) ends the slicing */
	CHECK_EQ_INT(ddp_slices_write(&s, 1024, 2, 0, UINT64_MAX / 2, 50, 1), 0);
	CHECK_EQ_STR(show(s.v, s.n), "0-1024@50");
	ddp_slices_free(&s);
}

TEST(clip_and_round_to_elements)
{
	struct ddp_slices s = { 0 };
	CHECK_EQ_INT(ddp_slices_write(&s, 1000, 4, 1001, 2000, 1, 0), 0); /* outside */
	CHECK_EQ_INT((int)s.n, 0);
	CHECK_EQ_INT(ddp_slices_write(&s, 1000, 4, 5, 5, 1, 0), 0);       /* empty */
	CHECK_EQ_INT((int)s.n, 0);
	CHECK_EQ_INT(ddp_slices_write(&s, 1000, 4, 5, 11, 1, 0), 0);      /* -> 4..12 */
	CHECK_EQ_STR(show(s.v, s.n), "4-12@1");
	CHECK_EQ_INT(ddp_slices_write(&s, 1000, 4, 990, 5000, 2, 0), 0);  /* -> 988..1000 */
	CHECK_EQ_STR(show(s.v, s.n), "4-12@1 988-1000@2");
	ddp_slices_free(&s);
}

/* beyond DDP_SLICES_MAX the narrowest neighbours merge, with the later writer */
TEST(cap_merges_with_the_later_writer)
{
	struct ddp_slices s = { 0 };
	const uint64_t size = (DDP_SLICES_MAX + 10) * 8;
	for (uint64_t i = 0; i < DDP_SLICES_MAX + 10; i++)
		CHECK_EQ_INT(ddp_slices_write(&s, size, 1, i * 8, i * 8 + 8, 100 + i, 0), 0);
	CHECK_EQ_INT((int)s.n, DDP_SLICES_MAX);
	uint64_t at = 0, maxseq = 0;
	int ok = 1;
	for (size_t i = 0; i < s.n; i++) {
		ok &= s.v[i].lo == at && s.v[i].hi > s.v[i].lo;
		/* a merged slice's writer is the latest of the bytes it holds */
		ok &= s.v[i].seq == 100 + s.v[i].hi / 8 - 1;
		at = s.v[i].hi;
		if (s.v[i].seq > maxseq)
			maxseq = s.v[i].seq;
	}
	CHECK(ok);
	CHECK_EQ_INT((int)at, (int)size);
	CHECK_EQ_INT((int)maxseq, 100 + DDP_SLICES_MAX + 9);
	ddp_slices_free(&s);
}

/* the units: slices only when the writes tile the range within this step */
TEST(units_need_a_tiling_of_this_step)
{
	struct ddp_slices s = { 0 };
	struct ddp_slice u[8];
	/* a gap (bytes 256..512 written by nobody this step, or by a write
	 * bounded too small): the whole range, with its last writer */
	W(s, 0, 256, 40);
	W(s, 512, 1024, 20);
	size_t n = ddp_slices_units(&s, 1024, 5, 40, 3, 1, u);
	CHECK_EQ_STR(show(u, n), "0-1024@40");
	CHECK_EQ_INT((int)u[0].kid, 3);
	/* a slice last written before the base (the previous step): whole */
	ddp_slices_reset(&s);
	W(s, 0, 512, 4);
	W(s, 512, 1024, 20);
	n = ddp_slices_units(&s, 1024, 5, 20, 6, 1, u);
	CHECK_EQ_STR(show(u, n), "0-1024@20");
	/* the last writer before the base: no prediction */
	CHECK_EQ_INT((int)ddp_slices_units(&s, 1024, 30, 20, 6, 1, u), 0);
	/* nothing recorded (slicing off while it was written): whole range */
	ddp_slices_reset(&s);
	n = ddp_slices_units(&s, 1024, 5, 9, 2, 1, u);
	CHECK_EQ_STR(show(u, n), "0-1024@9");
	ddp_slices_free(&s);
}

TEST(complement_is_the_rest)
{
	struct ddp_slice out[8];
	const struct ddp_slice clean[] = { { 0, 256, 0, 0 }, { 512, 768, 0, 0 } };
	size_t n = ddp_slices_complement(1024, clean, 2, out);
	CHECK_EQ_STR(show(out, n), "256-512@0 768-1024@0");
	n = ddp_slices_complement(1024, clean + 1, 1, out);
	CHECK_EQ_STR(show(out, n), "0-512@0 768-1024@0");
	n = ddp_slices_complement(1024, clean, 0, out);
	CHECK_EQ_STR(show(out, n), "0-1024@0");
	const struct ddp_slice all[] = { { 0, 512, 0, 0 }, { 512, 1024, 0, 0 } };
	CHECK_EQ_INT((int)ddp_slices_complement(1024, all, 2, out), 0);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
