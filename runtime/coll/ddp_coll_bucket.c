/* SPDX-License-Identifier: MIT
 *
 * ddp_coll_bucket.c - gradient buckets: which ranges go into one collective
 * (ddp_coll.h, "buckets").
 *
 * A bucket is a run of consecutive ranges in the caller's order (backward
 * order: the order their last writers run), of one dtype, at most cap bytes
 * (a single larger range is a bucket alone; ranges are never split, so a
 * bucket's reduction never starts before all of its writers ran).  Inside
 * a bucket, ranges of one allocation that touch or overlap are merged into
 * one segment (their union), whatever their order; ranges of different
 * allocations are never merged, and a gap is never reduced (it may hold
 * something that is not a gradient).  A bucket with one segment is reduced
 * in place; one with several through the staging buffer (host backend) or
 * an NCCL group (ddp_allreduce_avg_segs_async).
 *
 * Contract: pure functions, no state, no allocation but the caller's
 * arrays; any thread.
 */
#include <stdlib.h>
#include <string.h>
#include "ddp_coll.h"

size_t ddp_coll_bucket_plan(const struct ddp_coll_range *r, size_t n, uint64_t cap_bytes,
			    struct ddp_coll_bucket *out, size_t max)
{
	size_t nb = 0;
	struct ddp_coll_bucket cur = { 0, 0, 0, DDP_DT_UNKNOWN };

	for (size_t i = 0; i < n; i++) {
		if (cur.n && (r[i].dtype != cur.dtype || cur.bytes + r[i].bytes > cap_bytes)) {
			if (nb < max)
				out[nb] = cur;
			nb++;
			cur.n = 0;
		}
		if (!cur.n) {
			cur.first = i;
			cur.bytes = 0;
			cur.dtype = r[i].dtype;
		}
		cur.n++;
		cur.bytes += r[i].bytes;
	}
	if (cur.n) {
		if (nb < max)
			out[nb] = cur;
		nb++;
	}
	return nb;
}

static int seg_cmp(const void *pa, const void *pb)
{
	const struct ddp_coll_range *a = pa, *b = pb;
	if (a->alloc_id != b->alloc_id)
		return a->alloc_id < b->alloc_id ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

size_t ddp_coll_bucket_segments(const struct ddp_coll_range *r, size_t n, struct ddp_coll_range *tmp,
				struct ddp_coll_seg *out)
{
	size_t ns = 0;
	if (!n)
		return 0;
	memcpy(tmp, r, n * sizeof *tmp);
	qsort(tmp, n, sizeof *tmp, seg_cmp);
	uint64_t lo = tmp[0].addr, hi = tmp[0].addr + tmp[0].bytes;
	uint32_t id = tmp[0].alloc_id;
	for (size_t i = 1; i < n; i++) {
		uint64_t a = tmp[i].addr, e = tmp[i].addr + tmp[i].bytes;
		if (tmp[i].alloc_id == id && a <= hi) {
			if (e > hi)
				hi = e;
			continue;
		}
		out[ns].addr = lo;
		out[ns++].bytes = hi - lo;
		lo = a;
		hi = e;
		id = tmp[i].alloc_id;
	}
	out[ns].addr = lo;
	out[ns++].bytes = hi - lo;
	return ns;
}
