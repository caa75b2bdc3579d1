/* SPDX-License-Identifier: MIT
 *
 * ddp_overlap.c - early, stream-ordered gradient reductions (ddp_overlap.h;
 * docs/overlap.md).
 *
 * Learning.  At each consumer (the tracker's ops.reduce), every gradient
 * range it hands over was written this step; the tracker recorded its last
 * writer (launch ordinal wseq, kernel wkid).  Its position in the step is
 * wseq - base, base being the launch at which the update phase ended (the
 * step's first gradient write).  The ranges with a position are sorted by
 * it (backward order) and cut into buckets of DDP_BUCKET_MB (one dtype per
 * bucket); a bucket's trigger is its last member's (position, kernel).
 *
 * Early reductions.  In the next step, right after the launch at a
 * trigger's position is enqueued -- if its kernel is the predicted one --
 * the bucket is reduced on the communication stream behind that launch
 * (ddp_allreduce_avg_segs_async), while backward goes on.  Correctness never
 * rests on the prediction:
 *   - a later launch that touches a range in flight first waits for its
 *     reduction (cuStreamWaitEvent on its stream), so nothing reads or
 *     writes a range while it is being averaged;
 *   - a range written after its early reduction is reduced again at the
 *     consumer: averaging is linear (avg(avg(a) + b) = avg(a) + avg(b)), and
 *     re-averaging identical bytes changes nothing.  Re-reductions are
 *     counted and logged; a range mispredicted twice in a row is reduced at
 *     the consumer from then on;
 *   - a bucket whose trigger launch does not come (another kernel at that
 *     position, a shorter step) is reduced at the consumer.
 * Gradient accumulation: positions count over the whole step, so the
 * trigger is the last micro-step's last write: one reduction per optimizer
 * step.  Step 1 learns nothing (its positions have no base); step 2 learns;
 * early reductions start in step 3.
 *
 * At the consumer the ranges reduced early and not written since cost one
 * cuStreamWaitEvent; the others are reduced there in buckets (in tracker
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
 * go to the trace's communication track.
 *
 * Contract: called under ddp_sync.c's sync_lock only.  The host function
 * (stamp_pdone) runs on a driver thread and makes one atomic store.  Range
 * records are the tracker's (stable pointers; a record reset by the tracker
 * has role NONE and is skipped).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_coll.h"
#include "ddp_job.h"
#include "ddp_log.h"
#include "ddp_overlap.h"
#include "ddp_stats.h"
#include "ddp_trace.h"

#define OV_FIRST_STEP 3          /* the steps the figures speak for     */
#define OV_RING 1024             /* tickets remembered (step, bytes)    */
#define OV_PDONE_RING 64

struct ov_trig {
	uint64_t pos;            /* position in the step of the trigger launch */
	uint32_t kid;            /* its kernel                              */
	uint32_t first, n;       /* members: ov.mem[first .. first+n)       */
};

struct ov_step {
	uint64_t colls, first_t, last_t, recs;
	uint64_t comm_ns, hidden_ns, wait_ns, last_end;
	uint64_t peer_ns, peer_hidden_ns;   /* before every rank had arrived */
	uint64_t rered, bytes;
	uint8_t final, sync, stamped, peer_known;
};

static struct {
	struct ddp_overlap_env env;
	int on;
	uint64_t cap;
	uint64_t base;
	int have_base;
	int armed;               /* the plan applies from the next base on  */
	/* the plan of the current step */
	struct ddp_grad_buf **mem;
	size_t nmem, memcap;
	struct ov_trig *trig;
	size_t ntrig, trigcap, next;
	/* ranges reduced early this step (until the consumer) */
	struct ddp_grad_buf **fly;
	size_t nfly, flycap;
	/* figures */
	struct ov_step *st;
	size_t nst;
	uint64_t pdone[OV_PDONE_RING];   /* ns (atomic; 0 = not yet), by step */
	uint64_t tick_step[OV_RING], tick_bytes[OV_RING];
	struct ddp_coll_time *recs;      /* op times not yet given to a step */
	size_t nrecs, reccap;
	uint64_t early_ops, early_ranges, consumer_ops, rereductions, fallbacks, waits;
	/* scratch */
	struct ddp_coll_range *rg, *tmp;
	struct ddp_coll_seg *seg;
	struct ddp_grad_buf **list;
	size_t scratch;
} ov;

static void die_oom(void)
{
	ov.env.coll_fail(DDP_ERR_NOMEM, "overlap bookkeeping (out of memory)");
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t nc = *cap ? *cap : 64;
	while (nc < need)
		nc *= 2;
	void *q = realloc(p, nc * elem);
	if (!q)
		die_oom();
	*cap = nc;
	return q;
}

static void scratch(size_t n)
{
	if (n <= ov.scratch)
		return;
	size_t nc = ov.scratch ? ov.scratch : 64, c1, c2, c3, c4;
	while (nc < n)
		nc *= 2;
	c1 = c2 = c3 = c4 = ov.scratch;
	ov.rg = grow(ov.rg, &c1, nc, sizeof *ov.rg);
	ov.tmp = grow(ov.tmp, &c2, nc, sizeof *ov.tmp);
	ov.seg = grow(ov.seg, &c3, nc, sizeof *ov.seg);
	ov.list = grow(ov.list, &c4, nc, sizeof *ov.list);
	ov.scratch = nc;
}

static struct ov_step *step_rec(uint64_t step)
{
	if (!step)
		step = 1;
	if (step > ov.nst) {
		size_t nc = ov.nst ? ov.nst : 64, old = ov.nst;
		while (nc < step)
			nc *= 2;
		struct ov_step *p = realloc(ov.st, nc * sizeof *p);
		if (!p)
			die_oom();
		memset(p + old, 0, (nc - old) * sizeof *p);
		ov.st = p;
		ov.nst = nc;
	}
	return &ov.st[step - 1];
}

static struct ddp_comm *comm(void)
{
	struct ddp_comm *c = NULL;
	ddp_result rc = ddp_job_comm(&c);
	if (rc != DDP_OK)
		ov.env.coll_fail(rc, "creating the communicator");
	return c;
}

void ddp_overlap_init(const struct ddp_overlap_env *env, int on, uint64_t bucket_bytes)
{
	ov.env = *env;
	ov.on = on;
	ov.cap = bucket_bytes ? bucket_bytes : 25ull << 20;
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

/* ---- one async op over a list of ranges (one bucket) */

static uint64_t reduce_bucket(struct ddp_comm *c, struct ddp_grad_buf *const *m, size_t n, void *stream,
			      uint64_t step, uint64_t *bytes_out)
{
	static char sig[8192];
	uint64_t h, t = 0, bytes = 0;
	enum ddp_dtype dt = (enum ddp_dtype)m[0]->dtype;
	size_t es = ddp_dtype_size(dt);
	scratch(n);
	for (size_t i = 0; i < n; i++) {
		ov.rg[i].addr = m[i]->base;
		ov.rg[i].bytes = m[i]->count * es;
		ov.rg[i].alloc_id = m[i]->alloc_id;
		ov.rg[i].dtype = dt;
		bytes += ov.rg[i].bytes;
	}
	ddp_grad_signature(sig, sizeof sig, m, n, 1, &h);
	ov.env.check_sig(c, "allreduce", sig, h);
	size_t ns = ddp_coll_bucket_segments(ov.rg, n, ov.tmp, ov.seg);
	ddp_result rc = ddp_allreduce_avg_segs_async(c, ov.seg, ns, dt, 1, (CUstream)stream, DDP_SEG_AUTO, &t);
	if (rc != DDP_OK) {
		char what[160];
		snprintf(what, sizeof what, "allreduce of a bucket of %zu gradient range%s (%s%s)", n, n == 1 ? "" : "s",
			 m[0]->label, n > 1 ? ", ..." : "");
		ov.env.coll_fail(rc, what);
	}
	ov.tick_step[t % OV_RING] = step;
	ov.tick_bytes[t % OV_RING] = bytes;
	struct ov_step *s = step_rec(step);
	if (!s->first_t)
		s->first_t = t;
	s->last_t = t;
	s->colls++;
	s->bytes += bytes;
	*bytes_out += bytes;
	return t;
}

/* ---- the launch path */

static int overlaps(const struct ddp_grad_arg *a, const struct ddp_grad_buf *b)
{
	if (a->alloc_id != b->alloc_id || a->base != b->alloc_base)
		return 0;
	uint64_t lo = a->ptr ? a->ptr : a->base;
	uint64_t hi = a->ext ? lo + a->ext : a->base + a->size;
	return lo < b->base + b->size && b->base < hi;
}

int ddp_overlap_before(uint64_t seq, const struct ddp_grad_launch *L)
{
	if (!ov.on)
		return 0;
	if (ov.nfly) {
		uint64_t t = 0;
		for (uint32_t i = 0; i < L->nargs; i++)
			for (size_t j = 0; j < ov.nfly; j++)
				if (ov.fly[j]->ov_ticket > t && overlaps(&L->args[i], ov.fly[j]))
					t = ov.fly[j]->ov_ticket;
		if (L->truncated)
			for (size_t j = 0; j < ov.nfly; j++)
				if (ov.fly[j]->ov_ticket > t)
					t = ov.fly[j]->ov_ticket;
		if (t) {
			struct ddp_comm *c = comm();
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

void ddp_overlap_after(uint64_t seq, void *stream, uint64_t step, uint64_t *colls, uint64_t *bytes)
{
	struct ddp_comm *c = NULL;
	uint64_t pos = seq - ov.base;
	for (; ov.next < ov.ntrig && ov.trig[ov.next].pos == pos; ov.next++) {
		const struct ov_trig *tr = &ov.trig[ov.next];
		size_t n = 0;
		scratch(tr->n);
		for (uint32_t i = 0; i < tr->n; i++) {
			struct ddp_grad_buf *b = ov.mem[tr->first + i];
			/* freed, reset, no longer predicted, or already in flight */
			if (b->role != DDP_GR_GRAD || !b->ov_pred || b->ov_fallback || b->ov_ticket ||
			    (ov.env.alive && !ov.env.alive(b)))
				continue;
			/* a named gradient (PyTorch) only when this very launch wrote
			 * it: the caching allocator may have given its bytes to
			 * another tensor since the prediction was learned */
			if (b->named && b->wseq != seq)
				continue;
			ov.list[n++] = b;
		}
		if (!n)
			continue;
		if (!c)
			c = comm();
		struct ddp_grad_buf **m = malloc(n * sizeof *m);
		if (!m)
			die_oom();
		memcpy(m, ov.list, n * sizeof *m);
		uint64_t t = reduce_bucket(c, m, n, stream, step, bytes);
		ov.fly = grow(ov.fly, &ov.flycap, ov.nfly + n, sizeof *ov.fly);
		for (size_t i = 0; i < n; i++) {
			m[i]->ov_ticket = t;
			m[i]->ov_writes = m[i]->writes;
			ov.fly[ov.nfly++] = m[i];
		}
		free(m);
		ov.early_ops++;
		ov.early_ranges += n;
		(*colls)++;
		DDP_DEBUG(GRAD, "step %" PRIu64 ": early reduction of %zu gradient range%s after launch %" PRIu64
			  " of the step (ticket %" PRIu64 ")", step, n, n == 1 ? "" : "s", pos, t);
	}
}

/* ---- figures */

static void CUDA_CB stamp_pdone(void *arg)
{
	uint64_t step = (uint64_t)(uintptr_t)arg;
	uint64_t now = ddp_now_ns();
	__atomic_store_n(&ov.pdone[step % OV_PDONE_RING], now ? now : 1, __ATOMIC_RELEASE);
}

static void trace_op(const struct ddp_coll_time *r, uint64_t step)
{
	if (!ddp_trace_enabled())
		return;
	struct ddp_trace_ev ev = {
		.name = "allreduce", .cat = "comm", .ts_ns = r->start_ns, .dur_ns = r->end_ns - r->start_ns,
		.bytes = ov.tick_bytes[r->ticket % OV_RING], .step = step, .track = DDP_TRACE_TRACK_COMM,
	};
	ddp_trace_event(&ev);
}

/* Takes the finished ops' times and closes the steps that have them all. */
static void collect(struct ddp_comm *c)
{
	struct ddp_coll_time buf[64];
	size_t n;
	while (c && (n = ddp_coll_async_times(c, buf, 64)) > 0) {
		ov.recs = grow(ov.recs, &ov.reccap, ov.nrecs + n, sizeof *ov.recs);
		memcpy(ov.recs + ov.nrecs, buf, n * sizeof *buf);
		ov.nrecs += n;
		for (size_t i = 0; i < n; i++)
			step_rec(ov.tick_step[buf[i].ticket % OV_RING])->recs++;
	}
	for (size_t k = 0; k < ov.nst; k++) {
		struct ov_step *s = &ov.st[k];
		uint64_t step = k + 1;
		if (s->final || s->sync || !s->colls || s->recs < s->colls)
			continue;
		uint64_t pd = __atomic_load_n(&ov.pdone[step % OV_PDONE_RING], __ATOMIC_ACQUIRE);
		if (!s->stamped || !pd)
			continue;
		size_t w = 0;
		for (size_t i = 0; i < ov.nrecs; i++) {
			const struct ddp_coll_time *r = &ov.recs[i];
			if (ov.tick_step[r->ticket % OV_RING] != step) {
				ov.recs[w++] = *r;
				continue;
			}
			s->comm_ns += r->end_ns - r->start_ns;
			uint64_t e = r->end_ns < pd ? r->end_ns : pd;
			if (e > r->start_ns)
				s->hidden_ns += e - r->start_ns;
			if (r->end_ns > s->last_end)
				s->last_end = r->end_ns;
			if (r->arrive_ns) {
				uint64_t a = r->arrive_ns < r->start_ns ? r->start_ns
					     : r->arrive_ns > r->end_ns ? r->end_ns : r->arrive_ns;
				uint64_t ah = a < pd ? a : pd;
				s->peer_known = 1;
				s->peer_ns += a - r->start_ns;
				if (ah > r->start_ns)
					s->peer_hidden_ns += ah - r->start_ns;
			}
			trace_op(r, step);
		}
		ov.nrecs = w;
		s->wait_ns = s->last_end > pd ? s->last_end - pd : 0;
		s->final = 1;
		__atomic_store_n(&ov.pdone[step % OV_PDONE_RING], 0, __ATOMIC_RELAXED);
	}
}

/* ---- the consumer */

static int cmp_pos(const void *a, const void *b)
{
	const struct ddp_grad_buf *x = *(struct ddp_grad_buf *const *)a, *y = *(struct ddp_grad_buf *const *)b;
	if (x->ov_pos != y->ov_pos)
		return x->ov_pos < y->ov_pos ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* The next step's buckets and triggers, from the ranges just consumed. */
static void plan(struct ddp_grad_buf *const *bufs, size_t n)
{
	ov.nmem = ov.ntrig = ov.next = 0;
	ov.mem = grow(ov.mem, &ov.memcap, n, sizeof *ov.mem);
	for (size_t i = 0; i < n; i++)
		if (bufs[i]->role == DDP_GR_GRAD && bufs[i]->ov_pred && !bufs[i]->ov_fallback)
			ov.mem[ov.nmem++] = bufs[i];
	if (!ov.nmem)
		return;
	qsort(ov.mem, ov.nmem, sizeof *ov.mem, cmp_pos);
	uint64_t bytes = 0;
	for (size_t i = 0; i < ov.nmem; i++) {
		struct ddp_grad_buf *b = ov.mem[i];
		uint64_t bb = b->count * ddp_dtype_size((enum ddp_dtype)b->dtype);
		struct ov_trig *t = ov.ntrig ? &ov.trig[ov.ntrig - 1] : NULL;
		if (!t || ov.mem[t->first]->dtype != b->dtype || bytes + bb > ov.cap) {
			ov.trig = grow(ov.trig, &ov.trigcap, ov.ntrig + 1, sizeof *ov.trig);
			t = &ov.trig[ov.ntrig++];
			t->first = (uint32_t)i;
			t->n = 0;
			bytes = 0;
		}
		t->n++;
		t->pos = b->ov_pos;
		t->kid = b->ov_kid;
		bytes += bb;
	}
	DDP_DEBUG(GRAD, "overlap plan: %zu gradient ranges in %zu buckets", ov.nmem, ov.ntrig);
}

ddp_result ddp_overlap_reduce(struct ddp_grad_buf *const *bufs, size_t n, void *stream, uint64_t step,
			      uint64_t *colls, uint64_t *bytes)
{
	struct ddp_comm *c = comm();
	uint64_t wait_t = 0;
	size_t nn = 0;
	CUstream s = (CUstream)stream;

	collect(c);
	scratch(n);
	for (size_t i = 0; i < n; i++) {
		struct ddp_grad_buf *b = bufs[i];
		if (b->ov_ticket && b->writes == b->ov_writes) {
			if (b->ov_ticket > wait_t)
				wait_t = b->ov_ticket;
			b->ov_miss = 0;
			continue;
		}
		if (b->ov_ticket) {
			/* written after its early reduction: again, here */
			ov.rereductions++;
			step_rec(step)->rered++;
			b->ov_miss++;
			DDP_INFO(GRAD, "step %" PRIu64 ": gradient %s was written again after its early reduction "
				 "(last writer: launch %" PRIu64 " of the step, predicted %" PRIu64 "): reduced again",
				 step, b->label, b->wseq - ov.base, b->ov_pos);
			if (b->ov_miss >= 2 && !b->ov_fallback) {
				b->ov_fallback = 1;
				ov.fallbacks++;
				DDP_INFO(GRAD, "gradient %s: last writer mispredicted twice in a row; reduced at the "
					 "consumer from now on", b->label);
			}
		}
		ov.list[nn++] = b;
	}
	/* when the producing stream reached the consumer */
	__atomic_store_n(&ov.pdone[step % OV_PDONE_RING], 0, __ATOMIC_RELAXED);
	if (ddp_driver_.launchHostFunc &&
	    ddp_driver_.launchHostFunc(s, stamp_pdone, (void *)(uintptr_t)step) == CUDA_SUCCESS)
		step_rec(step)->stamped = 1;
	/* the rest, in buckets of the tracker's order */
	if (nn) {
		struct ddp_grad_buf **need = malloc(nn * sizeof *need);
		struct ddp_coll_bucket *bk = malloc(nn * sizeof *bk);
		if (!need || !bk)
			die_oom();
		memcpy(need, ov.list, nn * sizeof *need);
		for (size_t i = 0; i < nn; i++) {
			ov.rg[i].addr = need[i]->base;
			ov.rg[i].bytes = need[i]->count * ddp_dtype_size((enum ddp_dtype)need[i]->dtype);
			ov.rg[i].alloc_id = need[i]->alloc_id;
			ov.rg[i].dtype = (enum ddp_dtype)need[i]->dtype;
		}
		size_t nb = ddp_coll_bucket_plan(ov.rg, nn, ov.cap, bk, nn);
		for (size_t k = 0; k < nb; k++) {
			uint64_t t = reduce_bucket(c, need + bk[k].first, bk[k].n, stream, step, bytes);
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
	/* learn the last writers for the next step (not in step 1: no base) */
	for (size_t i = 0; i < n; i++) {
		struct ddp_grad_buf *b = bufs[i];
		b->ov_ticket = 0;
		b->ov_pred = ov.have_base && b->wseq >= ov.base;
		b->ov_pos = b->ov_pred ? b->wseq - ov.base : 0;
		b->ov_kid = b->wkid;
	}
	ov.nfly = 0;
	ov.armed = 0; /* until the next step's base: the rest of this step
		       * (the optimizer) is not the next step's backward */
	if (ov.on)
		plan(bufs, n);
	return DDP_OK;
}

void ddp_overlap_account_sync(uint64_t step, size_t colls, uint64_t ns)
{
	struct ov_step *s = step_rec(step);
	s->sync = 1;
	s->final = 1;
	s->colls += colls;
	s->comm_ns += ns;
	s->wait_ns += ns;
}

void ddp_overlap_finish(void)
{
	struct ddp_comm *c = NULL;
	if (!ov.on || ddp_job_comm(&c) != DDP_OK || !c)
		return;
	(void)ddp_coll_wait(c, 0);
	if (ddp_driver_.ctxSynchronize)
		(void)ddp_driver_.ctxSynchronize(); /* the stamps' host functions ran */
	collect(c);
}

/* Figures over steps OV_FIRST_STEP+ (or all steps when there are fewer). */
static void totals(double *steps, double *colls, double *comm_ms, double *hidden_ms, double *wait_ms,
		   double *peer_ms, double *peer_hidden_ms, int *peer_known)
{
	*steps = *colls = *comm_ms = *hidden_ms = *wait_ms = *peer_ms = *peer_hidden_ms = 0;
	*peer_known = 0;
	for (size_t k = 0; k < ov.nst; k++) {
		const struct ov_step *s = &ov.st[k];
		if (k + 1 < OV_FIRST_STEP || !s->final)
			continue;
		*steps += 1;
		*colls += (double)s->colls;
		*comm_ms += s->comm_ns / 1e6;
		*hidden_ms += s->hidden_ns / 1e6;
		*wait_ms += s->wait_ns / 1e6;
		*peer_ms += s->peer_ns / 1e6;
		*peer_hidden_ms += s->peer_hidden_ns / 1e6;
		*peer_known |= s->peer_known;
	}
}

void ddp_overlap_json(FILE *f)
{
	fprintf(f, ",\"overlap\":\"%s\",\"early_reductions\":%" PRIu64 ",\"early_ranges\":%" PRIu64
		   ",\"consumer_reductions\":%" PRIu64 ",\"rereductions\":%" PRIu64 ",\"fallbacks\":%" PRIu64
		   ",\"in_flight_waits\":%" PRIu64 ",\"per_step\":[",
		ov.on ? "on" : "off", ov.early_ops, ov.early_ranges, ov.consumer_ops, ov.rereductions, ov.fallbacks,
		ov.waits);
	int first = 1;
	for (size_t k = 0; k < ov.nst; k++) {
		const struct ov_step *s = &ov.st[k];
		if (!s->colls && !s->final)
			continue;
		fprintf(f, "%s{\"step\":%zu,\"collectives\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"rereductions\":%" PRIu64,
			first ? "" : ",", k + 1, s->colls, s->bytes, s->rered);
		if (s->final)
			fprintf(f, ",\"comm_ms\":%.3f,\"comm_hidden_ms\":%.3f,\"grad_wait_ms\":%.3f", s->comm_ns / 1e6,
				s->hidden_ns / 1e6, s->wait_ns / 1e6);
		if (s->final && s->peer_known)
			fprintf(f, ",\"peer_wait_ms\":%.3f,\"peer_wait_hidden_ms\":%.3f", s->peer_ns / 1e6,
				s->peer_hidden_ns / 1e6);
		fputc('}', f);
		first = 0;
	}
	fputc(']', f);
}

void ddp_overlap_summary(char *out, size_t cap)
{
	double steps, colls, comm_ms, hidden_ms, wait_ms, peer_ms, peer_hidden_ms;
	int peer_known;
	char peer[128] = "";
	totals(&steps, &colls, &comm_ms, &hidden_ms, &wait_ms, &peer_ms, &peer_hidden_ms, &peer_known);
	if (!steps) {
		snprintf(out, cap, "overlap %s", ov.on ? "on" : "off");
		return;
	}
	if (peer_known && comm_ms > peer_ms)
		snprintf(peer, sizeof peer, " (%.3f ms waiting for other ranks; after all arrived %.0f%% hidden)",
			 peer_ms / steps, 100.0 * (hidden_ms - peer_hidden_ms) / (comm_ms - peer_ms));
	snprintf(out, cap, "overlap %s: per step (steps %d+) %.1f collectives, comm %.3f ms of which %.0f%% hidden%s, "
		 "grad wait %.3f ms; %" PRIu64 " re-reductions", ov.on ? "on" : "off", OV_FIRST_STEP, colls / steps,
		 comm_ms / steps, comm_ms > 0 ? 100.0 * hidden_ms / comm_ms : 0.0, peer, wait_ms / steps,
		 ov.rereductions);
}
