/* SPDX-License-Identifier: MIT
 *
 * ddp_overlap.c - early, stream-ordered gradient reductions (ddp_overlap.h;
 * docs/overlap.md).  This file: the state, init, ranges and their units,
 * one async op over parts of ranges, the launch path; the consumer and
 * the figures live in the files ddp_overlap_int.h lists.
 *
 * Units.  What is reduced early is a UNIT: a gradient range, or a slice of
 * one.  The tracker reports every write it sees to a gradient range with
 * the write's extent (ddp_overlap_written); this layer keeps, per range,
 * the partition of the bytes written this step by their last writer
 * (ddp_slices.h).  A trainer that keeps one buffer per parameter kind
 * across all layers (llm.c: fcprojw of every layer is ONE range, the
 * optimizer's) writes it one layer-slice per backward launch: each slice
 * is a unit with its own last writer, so layer L-1's slices can be reduced
 * while layer L-2's backward runs instead of all at layer 0's.  A range
 * is cut into slices only when this step's writes tile it (every byte has
 * a writer of this step); else, with DDP_OVERLAP_SLICES=0, and for named
 * gradients (PyTorch's, whose bytes the caching allocator may hand to
 * another tensor between steps: they are reduced early only right after a
 * launch that wrote them), the unit is the whole range.
 *
 * Learning.  At each consumer (the tracker's ops.reduce), every gradient
 * range it hands over was written this step.  A unit's position in the
 * step is its last writer's ordinal minus base, base being the launch at
 * which the update phase ended (the step's first gradient write).  The
 * units with a position are sorted by it (backward order) and cut into
 * buckets of DDP_BUCKET_MB (one dtype per bucket); a bucket's trigger is its
 * last member's (position, kernel).
 *
 * Early reductions.  In the next step, right after the launch at a
 * trigger's position is enqueued -- if its kernel is the predicted one --
 * the bucket is reduced on the communication stream behind that launch
 * (ddp_allreduce_avg_segs_async), while backward goes on.  Correctness never
 * rests on the prediction:
 *   - a later launch that touches a unit in flight (its argument's extent
 *     overlaps the unit's bytes) first waits for its reduction
 *     (cuStreamWaitEvent on its stream), so nothing reads or writes a unit
 *     while it is being averaged;
 *   - a unit written after its early reduction (a write whose extent
 *     overlaps it) is reduced again at the consumer: averaging is linear
 *     (avg(avg(a) + b) = avg(a) + avg(b)), and re-averaging identical bytes
 *     changes nothing.  Re-reductions are counted and logged; a unit
 *     mispredicted twice in a row is reduced at the consumer from then on
 *     (the next step's units overlapping it inherit that);
 *   - at the consumer, every byte of a handed-over range that is not in a
 *     unit reduced early and unwritten since is reduced there: a bucket
 *     whose trigger launch does not come, a slice cut differently this
 *     step, a byte written by nobody.
 * Gradient accumulation: positions count over the whole step, so the
 * trigger is the last micro-step's last write: one reduction per optimizer
 * step.  Step 1 learns nothing (its positions have no base); step 2 learns;
 * early reductions start in step 3.  Ranks agree on every collective's
 * composition when the program is deterministic (same writes, same
 * positions); the signature check (units named by range and byte offsets)
 * stops a rank that differs.
 *
 * At the consumer the units reduced early and not written since cost one
 * cuStreamWaitEvent; the rest is reduced there in buckets (in tracker
 * order) behind the consumer's stream; the consumer's stream then waits for
 * the last op.  The host thread never waits for a reduction.
 *
 * Figures per step: a host function on the consumer's stream stamps when
 * the producing stream reached the consumer (its kernels done, pdone); the
 * collectives' own times come from ddp_coll_async_times.  comm = sum of the
 * ops' durations; hidden = the part of each before pdone; grad wait =
 * (last op's end - pdone)+.  Where the backend tells when every rank had
 * reached an op (host backend: arrive_ns), peer wait = the part of each op
 * before that (a rank ahead of the others waits inside the collective: load
 * imbalance, which no overlap can hide), and its hidden part.  A step's figures are closed when all its ops'
 * times and its stamp are in (at a later consumer, or at exit), and its ops
 * go to the trace's communication track.  Per step also: the early ops,
 * their bytes and the positions of their trigger launches.
 *
 * Contract: called under ddp_sync.c's sync_st.lock only.  The host function
 * (overlap_stamp_pdone) runs on a driver thread and makes one atomic store.  Range
 * records are the tracker's (stable pointers; a record reset by the tracker
 * has role NONE, and one reused for another range is told apart by its
 * extent); this layer's state of a range is found by the record's address.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_array.h"
#include "ddp_coll.h"
#include "ddp_hash.h"
#include "ddp_job.h"
#include "ddp_log.h"
#include "ddp_overlap.h"
#include "ddp_params.h"
#include "ddp_rangelog.h"
#include "ddp_slices.h"
#include "ddp_stats.h"
#include "ddp_trace.h"
#include "ddp_overlap_int.h"

struct ov_state ov;

void overlap_die_oom(void)
{
	ov.env.coll_fail(DDP_ERR_NOMEM, "overlap bookkeeping (out of memory)");
}

void *overlap_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	void *q = ddp_array_grow(p, cap, need, elem, 64);
	if (!q)
		overlap_die_oom();
	return q;
}

void overlap_scratch(size_t n)
{
	if (n <= ov.scratch)
		return;
	size_t nc = ov.scratch ? ov.scratch : 64, c1, c2, c3;
	while (nc < n)
		nc *= 2;
	c1 = c2 = c3 = ov.scratch;
	ov.rg = overlap_grow(ov.rg, &c1, nc, sizeof *ov.rg);
	ov.tmp = overlap_grow(ov.tmp, &c2, nc, sizeof *ov.tmp);
	ov.seg = overlap_grow(ov.seg, &c3, nc, sizeof *ov.seg);
	ov.scratch = nc;
}

struct ddp_slice *overlap_slice_scratch(struct ov_slice_scratch *s, size_t n)
{
	s->v = overlap_grow(s->v, &s->cap, n ? n : 1, sizeof *s->v);
	return s->v;
}

struct ov_step *overlap_step_rec(uint64_t step)
{
	if (!step)
		step = 1;
	/* not ddp_array_grow: with it clang-tidy's analyzer reports a false
	 * NULL dereference of s->epos in ddp_overlap_after (make lint) */
	if (step > ov.nst) {
		size_t nc = ov.nst ? ov.nst : 64, old = ov.nst;
		while (nc < step)
			nc *= 2;
		struct ov_step *p = realloc(ov.st, nc * sizeof *p);
		if (!p)
			overlap_die_oom();
		memset(p + old, 0, (nc - old) * sizeof *p);
		ov.st = p;
		ov.nst = nc;
	}
	return &ov.st[step - 1];
}

struct ddp_comm *overlap_comm(void)
{
	struct ddp_comm *c = NULL;
	ddp_result rc = ddp_job_comm(&c);
	if (rc != DDP_OK)
		ov.env.coll_fail(rc, "creating the communicator");
	return c;
}

void ddp_overlap_init(const struct ddp_overlap_env *env, int on, uint64_t bucket_bytes, int slices)
{
	ov.env = *env;
	ov.on = on;
	ov.split = slices;
	ov.no_tags = ddp_param_debug_no_coll_tags();
	ov.auto_buckets = !bucket_bytes;
	ov.cap = bucket_bytes ? bucket_bytes : OV_AUTO_BUCKET;
}

void ddp_overlap_turn_off(void)
{
	ov.on = 0;
}

int ddp_overlap_on(void)
{
	return ov.on;
}

void ddp_overlap_step_base(uint64_t seq)
{
	ov.base = seq;
	ov.have_base = 1;
	ov.next = 0;
	ov.armed = 1;
}

/* ---- ranges */

static size_t slot_of(const struct ddp_grad_buf *b)
{
	uint64_t h = (uint64_t)(uintptr_t)b * 0x9e3779b97f4a7c15ULL;
	return (size_t)(h >> 20) & (ov.tabcap - 1);
}

static void rng_reset(struct ov_rng *r, struct ddp_grad_buf *b)
{
	r->b = b;
	r->base = b->base;
	r->size = b->size;
	r->alloc_base = b->alloc_base;
	r->alloc_id = b->alloc_id;
	ddp_slices_reset(&r->w);
	r->nu = 0;
	r->xseq = 0;
	r->wname = NULL;
}

/* b's state, made (or reset, when the record now holds another range). */
struct ov_rng *overlap_rng_get(struct ddp_grad_buf *b)
{
	if (2 * (ov.ntab + 1) > ov.tabcap) {
		size_t oc = ov.tabcap, nc = oc ? oc * 2 : 256;
		struct ov_rng **old = ov.tab, **nt = calloc(nc, sizeof *nt);
		if (!nt)
			overlap_die_oom();
		ov.tab = nt;
		ov.tabcap = nc;
		for (size_t i = 0; i < oc; i++)
			if (old[i]) {
				size_t k = slot_of(old[i]->b);
				while (nt[k])
					k = (k + 1) & (nc - 1);
				nt[k] = old[i];
			}
		free(old);
	}
	size_t k = slot_of(b);
	while (ov.tab[k] && ov.tab[k]->b != b)
		k = (k + 1) & (ov.tabcap - 1);
	struct ov_rng *r = ov.tab[k];
	if (!r) {
		if (!(r = calloc(1, sizeof *r)))
			overlap_die_oom();
		ov.tab[k] = r;
		ov.ntab++;
		rng_reset(r, b);
	} else if (r->base != b->base || r->size != b->size || r->alloc_id != b->alloc_id ||
		   r->alloc_base != b->alloc_base) {
		rng_reset(r, b);
	}
	return r;
}

/* Is the unit's range still the gradient it was learned for? */
static int rng_live(const struct ov_rng *r)
{
	const struct ddp_grad_buf *b = r->b;
	return b->role == DDP_GR_GRAD && r->base == b->base && r->size == b->size &&
	       r->alloc_id == b->alloc_id && r->alloc_base == b->alloc_base &&
	       (!ov.env.alive || ov.env.alive(b));
}

static size_t elem_size(const struct ddp_grad_buf *b)
{
	size_t es = ddp_dtype_size((enum ddp_dtype)b->dtype);
	return es ? es : 1;
}

void ddp_overlap_written(struct ddp_grad_buf *b, const struct ddp_grad_launch *L, uint64_t lo, uint64_t hi,
			 uint8_t bound)
{
	if (!ov.on || (b->role != DDP_GR_GRAD && b->role != DDP_GR_CAND))
		return;
	uint64_t end = b->base + b->size;
	int whole = (bound == DDP_GB_EXACT || bound == DDP_GB_MEASURED) && lo <= b->base && hi >= end;
	if (bound != DDP_GB_EXACT && hi < end)
		hi = end;
	lo = lo > b->base ? lo : b->base;
	hi = hi < end ? hi : end;
	if (lo >= hi)
		return;
	lo -= b->base;
	hi -= b->base;
	struct ov_rng *r = overlap_rng_get(b);
	if (whole)
		r->xseq = L->seq;
	r->wname = L->kname ? L->kname : "?";
	r->wbound = bound;
	DDP_TRACE(GRAD,
		  "launch %" PRIu64 " of the step (%s) may write [+%" PRIu64 ",+%" PRIu64 ") of gradient %s",
		  ov.have_base && L->seq >= ov.base ? L->seq - ov.base : 0, L->kname ? L->kname : "?", lo, hi,
		  b->label);
	if (!b->named && ov.split && ddp_slices_write(&r->w, b->size, elem_size(b), lo, hi, L->seq, L->kid))
		overlap_die_oom();
	for (size_t i = 0; i < r->nu; i++)
		if (r->u[i].ticket && r->u[i].lo < hi && lo < r->u[i].hi)
			r->u[i].rewritten = 1;
}

/* ---- one async op over parts of ranges (one bucket) */

/* "label" or "label[+lo,+hi)" */
static void unit_text(char *out, size_t cap, const struct ddp_grad_buf *b, uint64_t lo, uint64_t hi)
{
	if (lo == 0 && hi == b->size)
		snprintf(out, cap, "%s", b->label);
	else
		snprintf(out, cap, "%s[+%" PRIu64 ",+%" PRIu64 ")", b->label, lo, hi);
}

/* The text the ranks compare (as ddp_grad_signature's, a slice named by
 * its byte offsets in the range): "n=2 label bf16 count=N; label[+0,+64) bf16
 * count=32;", cut with " ...+K more fnv=<hash of the whole>" when long. */
static void parts_signature(const struct ov_part *p, size_t n, uint64_t *hash)
{
	const size_t cap = sizeof ov.sig, tail = 64;
	char item[200];
	size_t o, skipped = 0;
	uint64_t h = DDP_FNV1A_INIT;
	int k = snprintf(item, sizeof item, "n=%zu", n);
	h = ddp_fnv1a(h, item, (size_t)k);
	memcpy(ov.sig, item, (size_t)k + 1);
	o = (size_t)k;
	for (size_t i = 0; i < n; i++) {
		const struct ddp_grad_buf *b = p[i].b;
		const char *dt = ddp_dtype_name((enum ddp_dtype)b->dtype);
		unsigned long long cnt = (unsigned long long)((p[i].hi - p[i].lo) / elem_size(b));
		if (p[i].lo == 0 && p[i].hi == b->size)
			k = snprintf(item, sizeof item, " %s %s count=%llu;", b->label, dt, cnt);
		else
			k = snprintf(item, sizeof item, " %s[+%llu,+%llu) %s count=%llu;", b->label,
				     (unsigned long long)p[i].lo, (unsigned long long)p[i].hi, dt, cnt);
		size_t len = (size_t)k < sizeof item ? (size_t)k : sizeof item - 1;
		h = ddp_fnv1a(h, item, len);
		if (!skipped && o + len + tail < cap) {
			memcpy(ov.sig + o, item, len + 1);
			o += len;
		} else {
			skipped++;
		}
	}
	if (skipped)
		snprintf(ov.sig + o, cap - o, " ...+%zu more fnv=%016llx", skipped, (unsigned long long)h);
	*hash = h;
}

uint64_t overlap_reduce_parts(struct ddp_comm *c, const struct ov_part *p, size_t n, void *stream,
			     uint64_t step, int ph, uint64_t *bytes_out)
{
	uint64_t h, t = 0, bytes = 0;
	enum ddp_dtype dt = (enum ddp_dtype)p[0].b->dtype;
	overlap_scratch(n);
	for (size_t i = 0; i < n; i++) {
		ov.rg[i].addr = p[i].b->base + p[i].lo;
		ov.rg[i].bytes = p[i].hi - p[i].lo;
		ov.rg[i].alloc_id = p[i].b->alloc_id;
		ov.rg[i].dtype = dt;
		bytes += ov.rg[i].bytes;
	}
	parts_signature(p, n, &h);
	ov.env.check_sig(c, "allreduce", ov.sig, h);
	size_t ns = ddp_coll_bucket_segments(ov.rg, n, ov.tmp, ov.seg);
	/* the ranks compare step and phase at the op itself: the composition
	 * above is checked once, the first time it occurs, and a re-reduction
	 * of a whole range looks like its early reduction */
	if (!ov.no_tags) {
		char what[200], lab[160];
		unit_text(lab, sizeof lab, p[0].b, p[0].lo, p[0].hi);
		if (n > 1)
			snprintf(what, sizeof what, "%s and %zu more", lab, n - 1);
		else
			snprintf(what, sizeof what, "%s", lab);
		ddp_coll_set_tag(c, step, (enum ddp_coll_phase)ph, what);
	}
	ddp_result rc = ddp_allreduce_avg_segs_async(c, ov.seg, ns, dt, 1, (CUstream)stream, DDP_SEG_AUTO, &t);
	if (!ov.no_tags)
		ddp_coll_set_tag(c, 0, DDP_COLL_PH_NONE, NULL);
	if (rc != DDP_OK) {
		char what[160];
		snprintf(what, sizeof what, "allreduce of a bucket of %zu gradient range%s (%s%s)", n,
			 n == 1 ? "" : "s", p[0].b->label, n > 1 ? ", ..." : "");
		ov.env.coll_fail(rc, what);
	}
	for (size_t i = 0; i < n; i++)
		ddp_rangelog_add(step, 'A', ov.rg[i].addr, ov.rg[i].bytes);
	ov.tick_step[t % OV_RING] = step;
	ov.tick_bytes[t % OV_RING] = bytes;
	struct ov_step *s = overlap_step_rec(step);
	if (!s->first_t)
		s->first_t = t;
	s->last_t = t;
	s->colls++;
	s->bytes += bytes;
	*bytes_out += bytes;
	return t;
}

/* ---- the launch path */

static int overlaps(const struct ddp_grad_arg *a, const struct ov_fly *f)
{
	if (a->alloc_id != f->alloc_id || a->base != f->alloc_base)
		return 0;
	uint64_t lo = a->ptr ? a->ptr : a->base;
	uint64_t hi = a->ext ? lo + a->ext : a->base + a->size;
	return lo < f->hi && f->lo < hi;
}

int ddp_overlap_before(uint64_t seq, const struct ddp_grad_launch *L)
{
	if (!ov.on)
		return 0;
	if (ov.nfly) {
		uint64_t t = 0;
		for (uint32_t i = 0; i < L->nargs; i++)
			for (size_t j = 0; j < ov.nfly; j++)
				if (ov.fly[j].ticket > t && overlaps(&L->args[i], &ov.fly[j]))
					t = ov.fly[j].ticket;
		if (L->truncated)
			for (size_t j = 0; j < ov.nfly; j++)
				if (ov.fly[j].ticket > t)
					t = ov.fly[j].ticket;
		if (t) {
			struct ddp_comm *c = overlap_comm();
			ddp_result rc = ddp_coll_stream_wait(c, t, (CUstream)L->stream);
			if (rc != DDP_OK)
				ov.env.coll_fail(rc, "waiting for an early gradient reduction");
			ov.waits++;
		}
	}
	if (!ov.armed || ov.next >= ov.ntrig || seq < ov.base)
		return 0;
	uint64_t pos = seq - ov.base;
	while (ov.next < ov.ntrig && ov.trig[ov.next].pos < pos)
		ov.next++; /* passed without its kernel: reduced at the consumer */
	if (ov.next >= ov.ntrig || ov.trig[ov.next].pos != pos)
		return 0;
	if (ov.trig[ov.next].kid == L->kid)
		return 1;
	while (ov.next < ov.ntrig && ov.trig[ov.next].pos == pos)
		ov.next++; /* another kernel at that position: mispredicted */
	return 0;
}

/* Was named range r's last write of this step its predicted last writer
 * u->(pos, kid), writing all of it with a known extent? */
static int named_ready(const struct ov_rng *r, const struct ov_unit *u)
{
	const struct ddp_grad_buf *b = r->b;
	return r->xseq == b->wseq && b->wseq >= ov.base && b->wseq - ov.base == u->pos && b->wkid == u->kid;
}

void ddp_overlap_after(uint64_t seq, void *stream, uint64_t step, uint64_t *colls, uint64_t *bytes)
{
	struct ddp_comm *c = NULL;
	uint64_t pos = seq - ov.base;
	for (; ov.next < ov.ntrig && ov.trig[ov.next].pos == pos; ov.next++) {
		const struct ov_trig *tr = &ov.trig[ov.next];
		size_t n = 0;
		ov.parts = overlap_grow(ov.parts, &ov.partcap, tr->n, sizeof *ov.parts);
		ov.us = overlap_grow(ov.us, &ov.uscap, tr->n, sizeof *ov.us);
		struct ov_unit **us = ov.us;
		for (uint32_t i = 0; i < tr->n; i++) {
			const struct ov_ref *m = &ov.mem[tr->first + i];
			struct ov_rng *r = m->r;
			/* freed, reset, no longer a gradient */
			if (m->u >= r->nu || !rng_live(r))
				continue;
			struct ov_unit *u = &r->u[m->u];
			/* no longer predicted, or already in flight */
			if (u->fallback || u->ticket)
				continue;
			/* a named gradient (PyTorch) only when its last write of
			 * this step was its predicted last writer (the launch at the
			 * learned position, of the learned kernel: this one or an
			 * earlier one of the bucket) and that launch wrote all of
			 * its bytes with a known extent (a tensor's own, a declared
			 * output): the caching allocator may have given the bytes to
			 * another tensor since the prediction was learned.  A write
			 * taken to its allocation's end (an undecoded kernel's
			 * pointer) covers every range after it, and an exact write
			 * earlier in the step than the predicted writer may be
			 * another tensor's (a forward activation that held these
			 * bytes before this step's gradient): neither says what the
			 * bytes hold now */
			if (r->b->named && !named_ready(r, u))
				continue;
			ov.parts[n] = (struct ov_part){ r->b, u->lo, u->hi, 0 };
			us[n++] = u;
		}
		if (!n)
			continue;
		if (!c)
			c = overlap_comm();
		uint64_t before = *bytes;
		uint64_t t = overlap_reduce_parts(c, ov.parts, n, stream, step, DDP_COLL_PH_EARLY, bytes);
		ov.fly = overlap_grow(ov.fly, &ov.flycap, ov.nfly + n, sizeof *ov.fly);
		for (size_t i = 0; i < n; i++) {
			const struct ddp_grad_buf *b = ov.parts[i].b;
			us[i]->ticket = t;
			us[i]->rewritten = 0;
			ov.fly[ov.nfly++] = (struct ov_fly){ b->alloc_base, b->base + ov.parts[i].lo,
							     b->base + ov.parts[i].hi, b->alloc_id, t };
		}
		struct ov_step *s = overlap_step_rec(step);
		s->early_colls++;
		s->early_bytes += *bytes - before;
		if (s->nepos < OV_STEP_POS_MAX) {
			size_t cap = s->epcap;
			s->epos = overlap_grow(s->epos, &cap, s->nepos + 1, sizeof *s->epos);
			s->epcap = (uint32_t)cap;
			s->epos[s->nepos++] = (uint32_t)(pos < UINT32_MAX ? pos : UINT32_MAX);
		}
		ov.early_ops++;
		ov.early_units += n;
		(*colls)++;
		DDP_DEBUG(GRAD,
			  "step %" PRIu64 ": early reduction of %zu gradient unit%s (%" PRIu64
			  " bytes) after launch %" PRIu64 " of the step (ticket %" PRIu64 ")",
			  step, n, n == 1 ? "" : "s", *bytes - before, pos, t);
	}
}
