/* SPDX-License-Identifier: MIT
 *
 * ddp_overlap.c - early, stream-ordered gradient reductions (ddp_overlap.h;
 * docs/overlap.md).
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
 * Contract: called under ddp_sync.c's sync_lock only.  The host function
 * (stamp_pdone) runs on a driver thread and makes one atomic store.  Range
 * records are the tracker's (stable pointers; a record reset by the tracker
 * has role NONE, and one reused for another range is told apart by its
 * extent); this layer's state of a range is found by the record's address.
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

#define OV_FIRST_STEP 3 /* the steps the figures speak for     */
#define OV_RING 1024    /* tickets remembered (step, bytes)    */
#define OV_PDONE_RING 64
#define OV_STEP_POS_MAX 256 /* early-op positions kept per step    */

/* A unit of early reduction: bytes [lo, hi) of a range. */
struct ov_unit {
	uint64_t lo, hi;
	uint64_t pos;      /* predicted last writer: position in the step */
	uint32_t kid;      /*   and kernel                            */
	uint64_t ticket;   /* the early op that reduced it (0: none)   */
	uint8_t rewritten; /* written after that op was enqueued       */
	uint8_t miss;      /* mispredictions in a row                  */
	uint8_t fallback;  /* reduced at the consumer from now on      */
};

/* This layer's state of one tracker range. */
struct ov_rng {
	struct ddp_grad_buf *b;
	uint64_t base, size, alloc_base; /* the range it was made for        */
	uint32_t alloc_id;
	struct ddp_slices w; /* this step's writes, until its consumer   */
	uint64_t xseq;       /* the last launch that wrote all of it with a
			      * known extent (0: none yet)               */
	struct ov_unit *u;   /* this step's units (learned at the last consumer) */
	size_t nu, ucap;
};

struct ov_ref { /* a unit of the plan                    */
	struct ov_rng *r;
	uint32_t u;
};

struct ov_part { /* bytes [lo, hi) of b, in one collective */
	struct ddp_grad_buf *b;
	uint64_t lo, hi;
};

struct ov_fly {                      /* a unit reduced early, until the consumer */
	uint64_t alloc_base, lo, hi; /* absolute addresses                   */
	uint32_t alloc_id;
	uint64_t ticket;
};

struct ov_trig {
	uint64_t pos;      /* position in the step of the trigger launch */
	uint32_t kid;      /* its kernel                              */
	uint32_t first, n; /* members: ov.mem[first .. first+n)       */
};

struct ov_step {
	uint64_t colls, first_t, last_t, recs;
	uint64_t comm_ns, hidden_ns, wait_ns, last_end;
	uint64_t peer_ns, peer_hidden_ns; /* before every rank had arrived */
	uint64_t rered, bytes;
	uint64_t early_colls, early_bytes;
	uint32_t *epos; /* early ops' trigger positions  */
	uint32_t nepos, epcap;
	uint8_t final, sync, stamped, peer_known;
};

static struct {
	struct ddp_overlap_env env;
	int on, split;
	uint64_t cap;
	uint64_t base;
	int have_base;
	int armed; /* the plan applies from the next base on  */
	/* ranges, found by record address (open addressing, never shrinks) */
	struct ov_rng **tab;
	size_t tabcap, ntab;
	/* the plan of the current step */
	struct ov_ref *mem;
	size_t nmem, memcap;
	struct ov_trig *trig;
	size_t ntrig, trigcap, next;
	/* units reduced early this step (until the consumer) */
	struct ov_fly *fly;
	size_t nfly, flycap;
	/* figures */
	struct ov_step *st;
	size_t nst;
	uint64_t pdone[OV_PDONE_RING]; /* ns (atomic; 0 = not yet), by step */
	uint64_t tick_step[OV_RING], tick_bytes[OV_RING];
	struct ddp_coll_time *recs; /* op times not yet given to a step */
	size_t nrecs, reccap;
	uint64_t early_ops, early_units, consumer_ops, rereductions, fallbacks, waits;
	uint64_t sliced_ranges; /* ranges whose last plan has several units */
	/* scratch */
	struct ddp_coll_range *rg, *tmp;
	struct ddp_coll_seg *seg;
	struct ov_part *parts;
	struct ov_unit **us;
	size_t uscap;
	struct ov_slice_scratch {
		struct ddp_slice *v;
		size_t cap;
	} sl, sl2;
	size_t scratch, partcap;
	char sig[8192];
} ov;

static void die_oom(void)
{
	ov.env.coll_fail(DDP_ERR_NOMEM, "overlap bookkeeping (out of memory)");
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	void *q = ddp_array_grow(p, cap, need, elem, 64);
	if (!q)
		die_oom();
	return q;
}

static void scratch(size_t n)
{
	if (n <= ov.scratch)
		return;
	size_t nc = ov.scratch ? ov.scratch : 64, c1, c2, c3;
	while (nc < n)
		nc *= 2;
	c1 = c2 = c3 = ov.scratch;
	ov.rg = grow(ov.rg, &c1, nc, sizeof *ov.rg);
	ov.tmp = grow(ov.tmp, &c2, nc, sizeof *ov.tmp);
	ov.seg = grow(ov.seg, &c3, nc, sizeof *ov.seg);
	ov.scratch = nc;
}

static struct ddp_slice *slice_scratch(struct ov_slice_scratch *s, size_t n)
{
	s->v = grow(s->v, &s->cap, n ? n : 1, sizeof *s->v);
	return s->v;
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

void ddp_overlap_init(const struct ddp_overlap_env *env, int on, uint64_t bucket_bytes, int slices)
{
	ov.env = *env;
	ov.on = on;
	ov.split = slices;
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
}

/* b's state, made (or reset, when the record now holds another range). */
static struct ov_rng *rng_get(struct ddp_grad_buf *b)
{
	if (2 * (ov.ntab + 1) > ov.tabcap) {
		size_t oc = ov.tabcap, nc = oc ? oc * 2 : 256;
		struct ov_rng **old = ov.tab, **nt = calloc(nc, sizeof *nt);
		if (!nt)
			die_oom();
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
			die_oom();
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
	struct ov_rng *r = rng_get(b);
	if (whole)
		r->xseq = L->seq;
	DDP_TRACE(GRAD,
		  "launch %" PRIu64 " of the step (%s) may write [+%" PRIu64 ",+%" PRIu64 ") of gradient %s",
		  ov.have_base && L->seq >= ov.base ? L->seq - ov.base : 0, L->kname ? L->kname : "?", lo, hi,
		  b->label);
	if (!b->named && ov.split && ddp_slices_write(&r->w, b->size, elem_size(b), lo, hi, L->seq, L->kid))
		die_oom();
	for (size_t i = 0; i < r->nu; i++)
		if (r->u[i].ticket && r->u[i].lo < hi && lo < r->u[i].hi)
			r->u[i].rewritten = 1;
}

/* ---- one async op over parts of ranges (one bucket) */

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The text the ranks compare (as ddp_grad_signature's, a slice named by
 * its byte offsets in the range): "n=2 label bf16 count=N; label[+0,+64) bf16
 * count=32;", cut with " ...+K more fnv=<hash of the whole>" when long. */
static void parts_signature(const struct ov_part *p, size_t n, uint64_t *hash)
{
	const size_t cap = sizeof ov.sig, tail = 64;
	char item[200];
	size_t o, skipped = 0;
	uint64_t h = 0xcbf29ce484222325ULL;
	int k = snprintf(item, sizeof item, "n=%zu", n);
	h = fnv(h, item, (size_t)k);
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
		h = fnv(h, item, len);
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

static uint64_t reduce_parts(struct ddp_comm *c, const struct ov_part *p, size_t n, void *stream,
			     uint64_t step, uint64_t *bytes_out)
{
	uint64_t h, t = 0, bytes = 0;
	enum ddp_dtype dt = (enum ddp_dtype)p[0].b->dtype;
	scratch(n);
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
	ddp_result rc = ddp_allreduce_avg_segs_async(c, ov.seg, ns, dt, 1, (CUstream)stream, DDP_SEG_AUTO, &t);
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
		ov.parts = grow(ov.parts, &ov.partcap, tr->n, sizeof *ov.parts);
		ov.us = grow(ov.us, &ov.uscap, tr->n, sizeof *ov.us);
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
			/* a named gradient (PyTorch) only when this very launch, the
			 * predicted last writer, wrote all of its bytes with a known
			 * extent (a tensor's own, a declared output): the caching
			 * allocator may have given the bytes to another tensor since
			 * the prediction was learned.  A write taken to its
			 * allocation's end (an undecoded kernel's pointer) covers
			 * every range after it, and an exact write earlier in the
			 * step may be another tensor's (a forward activation that
			 * held these bytes before this step's gradient): neither
			 * says what the bytes hold now */
			if (r->b->named && (r->b->wseq != seq || r->xseq != seq))
				continue;
			ov.parts[n] = (struct ov_part){ r->b, u->lo, u->hi };
			us[n++] = u;
		}
		if (!n)
			continue;
		if (!c)
			c = comm();
		uint64_t before = *bytes;
		uint64_t t = reduce_parts(c, ov.parts, n, stream, step, bytes);
		ov.fly = grow(ov.fly, &ov.flycap, ov.nfly + n, sizeof *ov.fly);
		for (size_t i = 0; i < n; i++) {
			const struct ddp_grad_buf *b = ov.parts[i].b;
			us[i]->ticket = t;
			us[i]->rewritten = 0;
			ov.fly[ov.nfly++] = (struct ov_fly){ b->alloc_base, b->base + ov.parts[i].lo,
							     b->base + ov.parts[i].hi, b->alloc_id, t };
		}
		struct ov_step *s = step_rec(step);
		s->early_colls++;
		s->early_bytes += *bytes - before;
		if (s->nepos < OV_STEP_POS_MAX) {
			size_t cap = s->epcap;
			s->epos = grow(s->epos, &cap, s->nepos + 1, sizeof *s->epos);
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
		.name = "allreduce",
		.cat = "comm",
		.ts_ns = r->start_ns,
		.dur_ns = r->end_ns - r->start_ns,
		.bytes = ov.tick_bytes[r->ticket % OV_RING],
		.step = step,
		.track = DDP_TRACE_TRACK_COMM,
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
					     : r->arrive_ns > r->end_ns ? r->end_ns
									: r->arrive_ns;
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

/* The next step's buckets and triggers, from the units of the ranges just
 * consumed. */
static void plan(struct ddp_grad_buf *const *bufs, size_t n)
{
	ov.nmem = ov.ntrig = ov.next = 0;
	for (size_t i = 0; i < n; i++) {
		if (bufs[i]->role != DDP_GR_GRAD)
			continue;
		struct ov_rng *r = rng_get(bufs[i]);
		ov.mem = grow(ov.mem, &ov.memcap, ov.nmem + r->nu, sizeof *ov.mem);
		for (size_t k = 0; k < r->nu; k++)
			if (!r->u[k].fallback)
				ov.mem[ov.nmem++] = (struct ov_ref){ r, (uint32_t)k };
	}
	if (!ov.nmem)
		return;
	qsort(ov.mem, ov.nmem, sizeof *ov.mem, cmp_ref);
	uint64_t bytes = 0;
	for (size_t i = 0; i < ov.nmem; i++) {
		const struct ov_unit *u = &ov.mem[i].r->u[ov.mem[i].u];
		const struct ddp_grad_buf *b = ov.mem[i].r->b;
		uint64_t bb = u->hi - u->lo;
		struct ov_trig *t = ov.ntrig ? &ov.trig[ov.ntrig - 1] : NULL;
		if (!t || ov.mem[t->first].r->b->dtype != b->dtype || bytes + bb > ov.cap) {
			ov.trig = grow(ov.trig, &ov.trigcap, ov.ntrig + 1, sizeof *ov.trig);
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
	struct ddp_slice *nu = slice_scratch(&ov.sl, r->w.n + 1);
	size_t n = ddp_slices_units(&r->w, b->size, ov.have_base ? ov.base : UINT64_MAX, b->wseq, b->wkid,
				    ov.split && !b->named, nu);
	struct ov_unit *old = r->u;
	size_t nold = r->nu;
	struct ov_unit *u = calloc(n ? n : 1, sizeof *u);
	if (!u)
		die_oom();
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
	struct ddp_comm *c = comm();
	uint64_t wait_t = 0;
	size_t np = 0;
	CUstream s = (CUstream)stream;

	collect(c);
	for (size_t i = 0; i < n; i++) {
		struct ddp_grad_buf *b = bufs[i];
		struct ov_rng *r = rng_get(b);
		struct ddp_slice *clean = slice_scratch(&ov.sl, r->nu + 1);
		size_t nc = 0;
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
			unit_label(lab, sizeof lab, b, u);
			ov.rereductions++;
			step_rec(step)->rered++;
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
		struct ddp_slice *rest = slice_scratch(&ov.sl2, nc + 1);
		size_t nr = ddp_slices_complement(b->size, clean, nc, rest);
		ov.parts = grow(ov.parts, &ov.partcap, np + nr, sizeof *ov.parts);
		for (size_t k = 0; k < nr; k++)
			ov.parts[np++] = (struct ov_part){ b, rest[k].lo, rest[k].hi };
	}
	/* when the producing stream reached the consumer */
	__atomic_store_n(&ov.pdone[step % OV_PDONE_RING], 0, __ATOMIC_RELAXED);
	if (ddp_driver_.launchHostFunc &&
	    ddp_driver_.launchHostFunc(s, stamp_pdone, (void *)(uintptr_t)step) == CUDA_SUCCESS)
		step_rec(step)->stamped = 1;
	/* the rest, in buckets of the tracker's order */
	if (np) {
		struct ov_part *need = malloc(np * sizeof *need);
		struct ddp_coll_bucket *bk = malloc(np * sizeof *bk);
		if (!need || !bk)
			return free(need), free(bk), die_oom(), DDP_ERR_NOMEM; /* die_oom stops the rank */
		memcpy(need, ov.parts, np * sizeof *need);
		scratch(np);
		for (size_t i = 0; i < np; i++) {
			ov.rg[i].addr = need[i].b->base + need[i].lo;
			ov.rg[i].bytes = need[i].hi - need[i].lo;
			ov.rg[i].alloc_id = need[i].b->alloc_id;
			ov.rg[i].dtype = (enum ddp_dtype)need[i].b->dtype;
		}
		size_t nb = ddp_coll_bucket_plan(ov.rg, np, ov.cap, bk, np);
		for (size_t k = 0; k < nb; k++) {
			uint64_t t = reduce_parts(c, need + bk[k].first, bk[k].n, stream, step, bytes);
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
		learn(rng_get(bufs[i]));
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
	fprintf(f,
		",\"overlap\":\"%s\",\"slices\":\"%s\",\"early_reductions\":%" PRIu64 ",\"early_ranges\":%" PRIu64
		",\"sliced_ranges\":%" PRIu64 ",\"consumer_reductions\":%" PRIu64 ",\"rereductions\":%" PRIu64
		",\"fallbacks\":%" PRIu64 ",\"in_flight_waits\":%" PRIu64 ",\"per_step\":[",
		ov.on ? "on" : "off", ov.split ? "on" : "off", ov.early_ops, ov.early_units, ov.sliced_ranges,
		ov.consumer_ops, ov.rereductions, ov.fallbacks, ov.waits);
	int first = 1;
	for (size_t k = 0; k < ov.nst; k++) {
		const struct ov_step *s = &ov.st[k];
		if (!s->colls && !s->final)
			continue;
		fprintf(f,
			"%s{\"step\":%zu,\"collectives\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"rereductions\":%" PRIu64,
			first ? "" : ",", k + 1, s->colls, s->bytes, s->rered);
		if (s->early_colls) {
			fprintf(f,
				",\"early_collectives\":%" PRIu64 ",\"early_bytes\":%" PRIu64 ",\"early_at\":[",
				s->early_colls, s->early_bytes);
			for (uint32_t i = 0; i < s->nepos; i++)
				fprintf(f, "%s%" PRIu32, i ? "," : "", s->epos[i]);
			fputc(']', f);
		}
		if (s->final)
			fprintf(f, ",\"comm_ms\":%.3f,\"comm_hidden_ms\":%.3f,\"grad_wait_ms\":%.3f",
				s->comm_ns / 1e6, s->hidden_ns / 1e6, s->wait_ns / 1e6);
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
		snprintf(peer, sizeof peer,
			 " (%.3f ms waiting for other ranks; after all arrived %.0f%% hidden)",
			 peer_ms / steps, 100.0 * (hidden_ms - peer_hidden_ms) / (comm_ms - peer_ms));
	snprintf(out, cap,
		 "overlap %s: per step (steps %d+) %.1f collectives, comm %.3f ms of which %.0f%% hidden%s, "
		 "grad wait %.3f ms; %" PRIu64 " re-reductions",
		 ov.on ? "on" : "off", OV_FIRST_STEP, colls / steps, comm_ms / steps,
		 comm_ms > 0 ? 100.0 * hidden_ms / comm_ms : 0.0, peer, wait_ms / steps, ov.rereductions);
}
