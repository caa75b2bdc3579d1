/* SPDX-License-Identifier: MIT
 *
 * ddp_overlap_reduce.c - the consumer (the tracker's ops.reduce): every byte of
 * the handed-over ranges not reduced early and unwritten since is reduced
 * here; the units learned give the next step's plan.
 * Split from ddp_overlap.c (moves only); ddp_overlap_int.h lists the
 * layer's files, ddp_overlap.c's header tells the story.
 *
 * Contract: called under ddp_sync.c's sync_st.lock only.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_array.h"
#include "ddp_coll.h"
#include "ddp_job.h"
#include "ddp_log.h"
#include "ddp_overlap.h"
#include "ddp_rangelog.h"
#include "ddp_slices.h"
#include "ddp_stats.h"
#include "ddp_trace.h"
#include "ddp_overlap_int.h"

/* ---- the consumer */

static int cmp_ref(const void *a, const void *b)
{
	const struct ov_ref *x = a, *y = b;
	const struct ov_unit *ux = &x->r->u[x->u], *uy = &y->r->u[y->u];
	if (ux->pos != uy->pos)
		return ux->pos < uy->pos ? -1 : 1;
	if (x->r->b->order != y->r->b->order)
		return x->r->b->order < y->r->b->order ? -1 : 1;
	return (ux->lo > uy->lo) - (ux->lo < uy->lo);
}

/* The plan's bucket sizes: DDP_BUCKET_MB, or under auto DDP's (1 MiB
 * first, 25 MiB after), each at most 1/OV_AUTO_MIN_BUCKETS of the bytes of
 * ov.mem's units (docs/overlap.md says why). */
static void bucket_caps(uint64_t *first, uint64_t *rest)
{
	*first = *rest = ov.cap;
	if (!ov.auto_buckets)
		return;
	uint64_t total = 0;
	for (size_t i = 0; i < ov.nmem; i++)
		total += ov.mem[i].r->u[ov.mem[i].u].hi - ov.mem[i].r->u[ov.mem[i].u].lo;
	uint64_t share = total / OV_AUTO_MIN_BUCKETS ? total / OV_AUTO_MIN_BUCKETS : 1;
	*first = OV_AUTO_FIRST_BUCKET < share ? OV_AUTO_FIRST_BUCKET : share;
	*rest = OV_AUTO_BUCKET < share ? OV_AUTO_BUCKET : share;
}

/* The next step's buckets and triggers, from the units of the ranges just
 * consumed. */
static void plan(struct ddp_grad_buf *const *bufs, size_t n)
{
	ov.nmem = ov.ntrig = ov.next = 0;
	for (size_t i = 0; i < n; i++) {
		if (bufs[i]->role != DDP_GR_GRAD)
			continue;
		struct ov_rng *r = overlap_rng_get(bufs[i]);
		ov.mem = overlap_grow(ov.mem, &ov.memcap, ov.nmem + r->nu, sizeof *ov.mem);
		for (size_t k = 0; k < r->nu; k++)
			if (!r->u[k].fallback)
				ov.mem[ov.nmem++] = (struct ov_ref){ r, (uint32_t)k };
	}
	if (!ov.nmem)
		return;
	qsort(ov.mem, ov.nmem, sizeof *ov.mem, cmp_ref);
	uint64_t bytes = 0, first_cap, cap;
	bucket_caps(&first_cap, &cap);
	for (size_t i = 0; i < ov.nmem; i++) {
		const struct ov_unit *u = &ov.mem[i].r->u[ov.mem[i].u];
		const struct ddp_grad_buf *b = ov.mem[i].r->b;
		uint64_t bb = u->hi - u->lo;
		struct ov_trig *t = ov.ntrig ? &ov.trig[ov.ntrig - 1] : NULL;
		if (!t || ov.mem[t->first].r->b->dtype != b->dtype || bytes + bb > (ov.ntrig > 1 ? cap : first_cap)) {
			ov.trig = overlap_grow(ov.trig, &ov.trigcap, ov.ntrig + 1, sizeof *ov.trig);
			t = &ov.trig[ov.ntrig++];
			t->first = (uint32_t)i;
			t->n = 0;
			bytes = 0;
		}
		t->n++;
		t->pos = u->pos;
		t->kid = u->kid;
		bytes += bb;
	}
	DDP_DEBUG(GRAD,
		  "overlap plan: %zu units of %zu gradient ranges (%" PRIu64
		  " ranges in slices) in %zu buckets",
		  ov.nmem, n, ov.sliced_ranges, ov.ntrig);
}

/* The units of r for the next step, from this step's writes; what an old
 * unit learned of mispredictions goes to the new ones that overlap it. */
static void learn(struct ov_rng *r)
{
	struct ddp_grad_buf *b = r->b;
	struct ddp_slice *nu = overlap_slice_scratch(&ov.sl, r->w.n + 1);
	size_t n = ddp_slices_units(&r->w, b->size, ov.have_base ? ov.base : UINT64_MAX, b->wseq, b->wkid,
				    ov.split && !b->named, nu);
	struct ov_unit *old = r->u;
	size_t nold = r->nu;
	struct ov_unit *u = calloc(n ? n : 1, sizeof *u);
	if (!u)
		overlap_die_oom();
	for (size_t i = 0; i < n; i++) {
		u[i].lo = nu[i].lo;
		u[i].hi = nu[i].hi;
		u[i].pos = nu[i].seq - ov.base;
		u[i].kid = nu[i].kid;
		for (size_t k = 0; k < nold; k++)
			if (old[k].lo < u[i].hi && u[i].lo < old[k].hi) {
				if (old[k].miss > u[i].miss)
					u[i].miss = old[k].miss;
				u[i].fallback |= old[k].fallback;
			}
	}
	if (n > 1)
		ov.sliced_ranges++;
	free(old);
	r->u = u;
	r->nu = n;
	r->ucap = n ? n : 1;
	ddp_slices_reset(&r->w);
	r->wname = NULL;
}

static void unit_label(char *out, size_t cap, const struct ddp_grad_buf *b, const struct ov_unit *u)
{
	if (u->lo == 0 && u->hi == b->size)
		snprintf(out, cap, "%s", b->label);
	else
		snprintf(out, cap, "%s[+%" PRIu64 ",+%" PRIu64 ")", b->label, u->lo, u->hi);
}

ddp_result ddp_overlap_reduce(struct ddp_grad_buf *const *bufs, size_t n, void *stream, uint64_t step,
			      uint64_t *colls, uint64_t *bytes)
{
	struct ddp_comm *c = overlap_comm();
	uint64_t wait_t = 0;
	size_t np = 0;
	CUstream s = (CUstream)stream;

	overlap_collect(c);
	if (n && step >= OV_FIRST_STEP && ov.on)
		ov.wait_steps++;
	for (size_t i = 0; i < n; i++) {
		struct ddp_grad_buf *b = bufs[i];
		struct ov_rng *r = overlap_rng_get(b);
		struct ddp_slice *clean = overlap_slice_scratch(&ov.sl, r->nu + 1);
		size_t nc = 0;
		int again = 0;
		for (size_t k = 0; k < r->nu; k++) {
			struct ov_unit *u = &r->u[k];
			if (!u->ticket)
				continue;
			if (!u->rewritten) {
				if (u->ticket > wait_t)
					wait_t = u->ticket;
				u->miss = 0;
				clean[nc++] = (struct ddp_slice){ u->lo, u->hi, 0, 0 };
				continue;
			}
			/* written after its early reduction: again, here */
			char lab[128];
			again = 1;
			unit_label(lab, sizeof lab, b, u);
			ov.rereductions++;
			overlap_step_rec(step)->rered++;
			u->miss++;
			DDP_INFO(GRAD,
				 "step %" PRIu64 ": gradient %s was written again after its early reduction "
				 "(last writer: launch %" PRIu64 " of the step, predicted %" PRIu64
				 "): reduced again",
				 step, lab, b->wseq - ov.base, u->pos);
			if (u->miss >= 2 && !u->fallback) {
				u->fallback = 1;
				ov.fallbacks++;
				DDP_INFO(GRAD,
					 "gradient %s: last writer mispredicted twice in a row; reduced at the "
					 "consumer from now on",
					 lab);
			}
		}
		/* every byte not in a clean early unit: here */
		struct ddp_slice *rest = overlap_slice_scratch(&ov.sl2, nc + 1);
		size_t nr = ddp_slices_complement(b->size, clean, nc, rest);
		uint64_t wb = 0;
		for (size_t k = 0; k < nr; k++)
			wb += rest[k].hi - rest[k].lo;
		if (wb && ov.on)
			overlap_waited(r, step, wb);
		ov.parts = overlap_grow(ov.parts, &ov.partcap, np + nr, sizeof *ov.parts);
		for (size_t k = 0; k < nr; k++) {
			int ag = 0; /* overlaps a unit written again */
			for (size_t q = 0; again && q < r->nu && !ag; q++)
				ag = r->u[q].ticket && r->u[q].rewritten && r->u[q].lo < rest[k].hi &&
				     rest[k].lo < r->u[q].hi;
			ov.parts[np++] = (struct ov_part){ b, rest[k].lo, rest[k].hi, ag };
		}
	}
	/* when the producing stream reached the consumer */
	__atomic_store_n(&ov.pdone[step % OV_PDONE_RING], 0, __ATOMIC_RELAXED);
	if (ddp_driver_.launchHostFunc &&
	    ddp_driver_.launchHostFunc(s, overlap_stamp_pdone, (void *)(uintptr_t)step) == CUDA_SUCCESS)
		overlap_step_rec(step)->stamped = 1;
	/* the rest, in buckets of the tracker's order */
	if (np) {
		struct ov_part *need = malloc(np * sizeof *need);
		struct ddp_coll_bucket *bk = malloc(np * sizeof *bk);
		if (!need || !bk)
			return free(need), free(bk), overlap_die_oom(), DDP_ERR_NOMEM; /* overlap_die_oom stops the rank */
		memcpy(need, ov.parts, np * sizeof *need);
		overlap_scratch(np);
		for (size_t i = 0; i < np; i++) {
			ov.rg[i].addr = need[i].b->base + need[i].lo;
			ov.rg[i].bytes = need[i].hi - need[i].lo;
			ov.rg[i].alloc_id = need[i].b->alloc_id;
			ov.rg[i].dtype = (enum ddp_dtype)need[i].b->dtype;
		}
		size_t nb = ddp_coll_bucket_plan(ov.rg, np, ov.cap, bk, np);
		for (size_t k = 0; k < nb; k++) {
			int ph = DDP_COLL_PH_CONSUMER;
			for (size_t q = 0; q < bk[k].n; q++)
				if (need[bk[k].first + q].again)
					ph = DDP_COLL_PH_AGAIN;
			uint64_t t = overlap_reduce_parts(c, need + bk[k].first, bk[k].n, stream, step, ph, bytes);
			if (t > wait_t)
				wait_t = t;
			ov.consumer_ops++;
			(*colls)++;
		}
		free(need);
		free(bk);
	}
	if (wait_t) {
		ddp_result rc = ddp_coll_stream_wait(c, wait_t, s);
		if (rc != DDP_OK)
			ov.env.coll_fail(rc, "waiting for the gradient reductions");
	}
	/* learn the units and their last writers for the next step (not in
	 * step 1: no base) */
	if (n)
		ov.sliced_ranges = 0;
	for (size_t i = 0; i < n; i++)
		learn(overlap_rng_get(bufs[i]));
	ov.nfly = 0;
	ov.armed = 0; /* until the next step's base: the rest of this step
		       * (the optimizer) is not the next step's backward */
	if (ov.on)
		plan(bufs, n);
	return DDP_OK;
}
