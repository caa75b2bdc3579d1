/* SPDX-License-Identifier: MIT
 *
 * ddp_cycle.c - the program's steps from its launch stream (ddp_cycle.h).
 *
 * Contract: see ddp_cycle.h.  The stream is two flat arrays (launches and
 * their accesses); identities map to their first and latest launch in an
 * open-addressing table; the current cycle's reads and writes are lists
 * chained per allocation (a small hash by allocation id), reset at each
 * cycle boundary.
 */
#include <stdlib.h>
#include <string.h>

#include "ddp_array.h"
#include "ddp_cycle.h"
#include "ddp_dtype.h"

struct cyc_acc {
	uint64_t lo, hi, base; /* certain: what it surely touches           */
	uint64_t whi;          /* a write: where it may reach (to the end)  */
	uint32_t alloc_id;
	uint8_t wrote, floaty;
	uint8_t rd; /* read, or maybe read (a pointer whose constness is not
		     * known): ddp_cycle_rewrote_any                         */
	uint8_t outside; /* ddp_grad_arg.outside                             */
	uint8_t self; /* a write of state the launch reads and rewrites in
		       * place (ddp_grad_arg.host_set, then the same range):
		       * a rewrite though no other launch read it first  */
};

struct cyc_launch {
	uint64_t id;
	const char *kname;
	uint32_t acc0, nacc;
	uint8_t opaque; /* its writes cannot all be seen (ddp_cycle_rewrote_any) */
};

/* a period candidate: p launches apart, run launches in a row equal */
struct cyc_track {
	size_t p, run;
};

/* a range the current cycle read first (who: the launch) or wrote (a
 * launch; or, in ddp_cycle_rewrote_any's history, a write without a
 * kernel: SEEN_HOST) */
struct cyc_seen {
	uint64_t lo, hi;
	uint32_t alloc_id, who, next; /* next: same bucket, UINT32_MAX ends */
	uint8_t wrote;                /* SEEN_READ, SEEN_LAUNCH, SEEN_HOST  */
};

enum { SEEN_READ = 0, SEEN_LAUNCH = 1, SEEN_HOST = 2 };

#define SEEN_BUCKETS 256u

struct ddp_cycle {
	struct cyc_launch *ln;
	size_t n, cap;
	struct cyc_acc *acc;
	size_t nacc, cacc;
	uint64_t *mkey; /* identities (0: empty)                        */
	uint32_t *mfirst, *mlast;
	size_t mmask, mn;
	struct cyc_track tr[2]; /* 0: the latest launch alike, 1: the first */
	size_t period;          /* confirmed now (0: none)                     */
	size_t start;           /* the current cycle's first launch            */
	size_t x0;              /* the first cycle's first launch              */
	uint64_t cycles;        /* complete cycles since x0                    */
	uint64_t rewrote;       /* of those, the ones that rewrote             */
	int cur_rewrote;
	struct ddp_cycle_report ex; /* the current cycle's first rewrite      */
	struct cyc_seen *seen;
	size_t nseen, cseen;
	uint32_t bucket[SEEN_BUCKETS];
	int gave_up;
	/* ranges a launch rewrote in place from the host's bytes (self) */
	struct cyc_seen *inplace;
	size_t ninplace, cinplace;
	/* ddp_cycle_rewrote_any: the whole stream's first reads and writes,
	 * kept in a second instance's seen set (all), launches [0, all_next)
	 * replayed so far, the verdict and its example */
	struct ddp_cycle *all;
	size_t all_next;
	int all_rewrote;
	struct ddp_cycle_report all_ex;
	int unknown_writes; /* (in all) a write without a kernel, place unknown */
};

ddp_result ddp_cycle_new(struct ddp_cycle **out)
{
	struct ddp_cycle *c = calloc(1, sizeof *c);
	if (!c)
		return DDP_ERR_NOMEM;
	memset(c->bucket, 0xff, sizeof c->bucket);
	*out = c;
	return DDP_OK;
}

static void release(struct ddp_cycle *c)
{
	free(c->ln);
	free(c->acc);
	free(c->mkey);
	free(c->mfirst);
	free(c->mlast);
	free(c->seen);
	free(c->inplace);
	c->inplace = NULL;
	c->ninplace = c->cinplace = 0;
	ddp_cycle_free(c->all);
	c->all = NULL;
	c->ln = NULL;
	c->acc = NULL;
	c->mkey = NULL;
	c->mfirst = c->mlast = NULL;
	c->seen = NULL;
	c->n = c->cap = c->nacc = c->cacc = c->mmask = c->mn = c->nseen = c->cseen = 0;
}

void ddp_cycle_free(struct ddp_cycle *c)
{
	if (!c)
		return;
	release(c);
	free(c);
}

uint64_t ddp_cycle_period(const struct ddp_cycle *c)
{
	return c ? c->period : 0;
}

int ddp_cycle_gave_up(const struct ddp_cycle *c)
{
	return c && c->gave_up;
}

static void give_up(struct ddp_cycle *c)
{
	release(c);
	c->gave_up = 1;
	c->period = 0;
}

/* The range an argument covers, clipped to its allocation: all of it when
 * its extent is known, else its first byte only (an unbounded pointer runs
 * to its allocation's end: only its start is certain). */
static void certain_range(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi, uint64_t *may_hi)
{
	uint64_t end = a->base + a->size;
	uint64_t p = a->ptr && a->ptr >= a->base && a->ptr < end ? a->ptr : a->base;
	uint64_t e = a->ext && a->ext <= end - p ? p + a->ext : end;
	*may_hi = e;
	if (a->bounded == DDP_GB_NONE || a->in_struct)
		e = p < end ? p + 1 : end;
	*lo = p;
	*hi = e;
}

static int floaty(uint8_t dt)
{
	return dt == DDP_DT_UNKNOWN || dt == DDP_DT_VOID || dt == DDP_DT_F32 || dt == DDP_DT_F64 ||
	       dt == DDP_DT_F16 || dt == DDP_DT_BF16;
}

static uint64_t identity(const struct ddp_grad_launch *L)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ L->kid;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t end = a->base + a->size;
		uint64_t p = a->ptr && a->ptr >= a->base && a->ptr < end ? a->ptr : a->base;
		uint64_t v[3] = { a->alloc_id, p, a->ext };
		for (int k = 0; k < 3; k++) {
			h ^= v[k];
			h *= 0x100000001b3ULL;
			h ^= h >> 29;
		}
	}
	return h ? h : 1;
}

/* ---- identities: their first and latest launch */

static size_t map_slot(const struct ddp_cycle *c, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 20) & c->mmask;
	while (c->mkey[i] && c->mkey[i] != key)
		i = (i + 1) & c->mmask;
	return i;
}

static int map_grow(struct ddp_cycle *c)
{
	size_t nsz = c->mkey ? (c->mmask + 1) * 2 : 1024;
	struct ddp_cycle t = { 0 };
	t.mkey = calloc(nsz, sizeof *t.mkey);
	t.mfirst = malloc(nsz * sizeof *t.mfirst);
	t.mlast = malloc(nsz * sizeof *t.mlast);
	t.mmask = nsz - 1;
	if (!t.mkey || !t.mfirst || !t.mlast) {
		free(t.mkey);
		free(t.mfirst);
		free(t.mlast);
		return -1;
	}
	for (size_t i = 0; c->mkey && i <= c->mmask; i++)
		if (c->mkey[i]) {
			size_t j = map_slot(&t, c->mkey[i]);
			t.mkey[j] = c->mkey[i];
			t.mfirst[j] = c->mfirst[i];
			t.mlast[j] = c->mlast[i];
		}
	free(c->mkey);
	free(c->mfirst);
	free(c->mlast);
	c->mkey = t.mkey;
	c->mfirst = t.mfirst;
	c->mlast = t.mlast;
	c->mmask = t.mmask;
	return 0;
}

/* ---- the current cycle's reads and writes */

static void seen_reset(struct ddp_cycle *c)
{
	c->nseen = 0;
	memset(c->bucket, 0xff, sizeof c->bucket);
	c->cur_rewrote = 0;
}

/* The first entry of allocation a overlapping [lo, hi) with wrote == w
 * (w < 0: either). */
static struct cyc_seen *seen_find(struct ddp_cycle *c, uint32_t a, uint64_t lo, uint64_t hi, int w)
{
	if (!c->seen) /* nothing added yet (the analyzer cannot tell that from the buckets) */
		return NULL;
	for (uint32_t i = c->bucket[a % SEEN_BUCKETS]; i != UINT32_MAX; i = c->seen[i].next) {
		struct cyc_seen *s = &c->seen[i];
		if (s->alloc_id == a && s->lo < hi && lo < s->hi && (w < 0 || s->wrote == w))
			return s;
	}
	return NULL;
}

/* A read enters with the bytes it surely read; a write with every byte it
 * may have written (a later read of them is no first read). */
static int seen_add(struct ddp_cycle *c, const struct cyc_acc *x, uint32_t who)
{
	uint64_t hi = x->wrote ? x->whi : x->hi;
	for (uint32_t i = c->bucket[x->alloc_id % SEEN_BUCKETS]; x->wrote != SEEN_HOST && i != UINT32_MAX;
	     i = c->seen[i].next) {
		struct cyc_seen *s = &c->seen[i];
		if (s->alloc_id == x->alloc_id && s->lo == x->lo && s->hi == hi && s->wrote == x->wrote)
			return 0;
	}
	struct cyc_seen *nv = ddp_array_grow(c->seen, &c->cseen, c->nseen + 1, sizeof *nv, 256);
	if (!nv)
		return -1;
	c->seen = nv;
	struct cyc_seen *s = &c->seen[c->nseen];
	s->lo = x->lo;
	s->hi = hi;
	s->alloc_id = x->alloc_id;
	s->who = who;
	s->wrote = x->wrote;
	s->next = c->bucket[x->alloc_id % SEEN_BUCKETS];
	c->bucket[x->alloc_id % SEEN_BUCKETS] = (uint32_t)c->nseen++;
	return 0;
}

/* Launch x into the current cycle: its reads of bytes the cycle has not
 * written are first reads; its writes of bytes another launch of the cycle
 * read first rewrite persistent memory. */
static int feed(struct ddp_cycle *c, size_t x)
{
	const struct cyc_launch *l = &c->ln[x];
	for (uint32_t k = 0; k < l->nacc; k++) {
		struct cyc_acc a = c->acc[l->acc0 + k];
		if (a.wrote && !a.self)
			continue;
		a.wrote = 0; /* its read (an in-place rewrite reads first) */
		if (!seen_find(c, a.alloc_id, a.lo, a.hi, -1) && seen_add(c, &a, (uint32_t)x))
			return -1;
	}
	for (uint32_t k = 0; k < l->nacc; k++) {
		const struct cyc_acc *a = &c->acc[l->acc0 + k];
		if (!a->wrote)
			continue;
		struct cyc_seen *r;
		if (!c->cur_rewrote && a->floaty && (r = seen_find(c, a->alloc_id, a->lo, a->hi, 0)) &&
		    (r->who != x || a->self)) {
			c->cur_rewrote = 1;
			c->ex.writer = l->kname;
			c->ex.reader = c->ln[r->who].kname;
			c->ex.alloc_id = a->alloc_id;
			c->ex.alloc_base = a->base;
			c->ex.lo = r->lo;
			c->ex.hi = r->hi;
		}
		if (seen_add(c, a, (uint32_t)x))
			return -1;
	}
	return 0;
}

/* The whole stream, without cycles: does launch x write bytes (of any
 * type, to wherever it may reach) that an earlier launch read first?
 * Stricter than feed (a cycle's rewrite of floating-point bytes it surely
 * writes): this is the evidence that no update ran.  A pointer whose
 * constness is unknown (untyped, in a struct, or a signature with no const
 * pointer) is taken as read and written; a launch whose writes cannot all
 * be seen (opaque) makes the answer unknown (-1). */
static int feed_all(struct ddp_cycle *c, size_t x)
{
	struct ddp_cycle *g = c->all;
	const struct cyc_launch *l = &c->ln[x];
	if (l->opaque)
		return -1;
	for (uint32_t k = 0; k < l->nacc; k++) {
		struct cyc_acc a = c->acc[l->acc0 + k];
		a.wrote = SEEN_READ; /* its read */
		if (!a.rd)
			continue;
		/* the latest write of the bytes (the newest entry first): by a
		 * launch, no first read; from outside the stream, a read of
		 * state; none, of device memory: no state (ddp_cycle.h), unless
		 * the tracker knows the bytes came from the host (self) */
		const struct cyc_seen *w = seen_find(g, a.alloc_id, a.lo, a.hi, -1);
		if ((w ? w->wrote == SEEN_HOST : a.outside || a.self || g->unknown_writes) &&
		    seen_add(g, &a, (uint32_t)x))
			return -1;
	}
	for (uint32_t k = 0; k < l->nacc; k++) {
		const struct cyc_acc *a = &c->acc[l->acc0 + k];
		if (!a->wrote)
			continue;
		struct cyc_seen *r = seen_find(g, a->alloc_id, a->lo, a->whi, 0);
		if (!c->all_rewrote && r && (r->who != x || a->self)) {
			c->all_rewrote = 1;
			c->all_ex.writer = l->kname;
			c->all_ex.reader = c->ln[r->who].kname;
			c->all_ex.alloc_id = a->alloc_id;
			c->all_ex.alloc_base = a->base;
			c->all_ex.lo = r->lo > a->lo ? r->lo : a->lo;
			c->all_ex.hi = r->hi < a->whi ? r->hi : a->whi;
		}
		if (seen_add(g, a, (uint32_t)x))
			return -1;
	}
	return 0;
}

int ddp_cycle_rewrote_any(struct ddp_cycle *c, struct ddp_cycle_report *rep, uint64_t *launches)
{
	if (!c || c->gave_up)
		return -1;
	if (!c->all && ddp_cycle_new(&c->all) != DDP_OK)
		return -1;
	for (; !c->all_rewrote && c->all_next < c->n; c->all_next++)
		if (feed_all(c, c->all_next))
			return -1;
	if (launches)
		*launches = c->n;
	if (!c->all_rewrote)
		return 0;
	*rep = c->all_ex;
	rep->period = c->period;
	rep->cycles = c->cycles;
	rep->first = c->n ? c->ln[0].kname : "?";
	return 1;
}

int ddp_cycle_host_write(struct ddp_cycle *c, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	struct ddp_cycle_report rep;
	int r = ddp_cycle_rewrote_any(c, &rep, NULL);
	if (r)
		return r;
	struct ddp_cycle *g = c->all;
	if (g->nseen >= DDP_CYCLE_MAX_LAUNCHES)
		return -1; /* (a program copying this much before its first update) */
	if (!alloc_id) {
		g->unknown_writes = 1;
		return 1;
	}
	r = seen_find(g, alloc_id, lo, hi, SEEN_READ) != NULL;
	struct cyc_acc a = { .lo = lo, .hi = hi, .whi = hi, .alloc_id = alloc_id, .wrote = SEEN_HOST };
	if (seen_add(g, &a, UINT32_MAX))
		return -1;
	return r;
}

static void cycle_end(struct ddp_cycle *c, size_t next_start)
{
	c->cycles++;
	c->rewrote += (uint64_t)c->cur_rewrote;
	c->start = next_start;
	seen_reset(c);
}

/* Launch x joins the cycles (a boundary before it when one is due). */
static int step_in(struct ddp_cycle *c, size_t x)
{
	if (x == c->start + c->period)
		cycle_end(c, x);
	return feed(c, x);
}

/* A period p confirmed at launch t: the cycles from the first launch of
 * the periodic stream, replayed up to t. */
static int confirm(struct ddp_cycle *c, size_t p, size_t t, size_t run)
{
	size_t x0 = t + 1 - run - p;
	while (x0 > 0 && c->ln[x0 - 1].id == c->ln[x0 - 1 + p].id)
		x0--;
	c->period = p;
	c->x0 = c->start = x0;
	c->cycles = c->rewrote = 0;
	seen_reset(c);
	for (size_t x = x0; x <= t; x++)
		if (step_in(c, x))
			return -1;
	return 0;
}

/* The ranges a launch rewrote in place from the host's bytes: their later
 * writes are in-place rewrites too (the same state, loop-carried). */
static int inplace_has(const struct ddp_cycle *c, const struct cyc_acc *a)
{
	for (size_t i = 0; i < c->ninplace; i++)
		if (c->inplace[i].alloc_id == a->alloc_id && c->inplace[i].lo < a->hi && a->lo < c->inplace[i].hi)
			return 1;
	return 0;
}

static int inplace_add(struct ddp_cycle *c, const struct cyc_acc *a)
{
	if (inplace_has(c, a))
		return 0;
	struct cyc_seen *nv = ddp_array_grow(c->inplace, &c->cinplace, c->ninplace + 1, sizeof *nv, 16);
	if (!nv)
		return -1;
	c->inplace = nv;
	c->inplace[c->ninplace++] = (struct cyc_seen){ .lo = a->lo, .hi = a->hi, .alloc_id = a->alloc_id };
	return 0;
}

static int record(struct ddp_cycle *c, const struct ddp_grad_launch *L)
{
	struct cyc_launch *ln = ddp_array_grow(c->ln, &c->cap, c->n + 1, sizeof *ln, 1024);
	if (!ln)
		return -1;
	c->ln = ln;
	struct cyc_acc *acc = ddp_array_grow(c->acc, &c->cacc, c->nacc + L->nargs, sizeof *acc, 4096);
	if (!acc)
		return -1;
	c->acc = acc;
	struct cyc_launch *l = &c->ln[c->n++];
	l->id = identity(L);
	l->kname = L->kname ? L->kname : "?";
	l->acc0 = (uint32_t)c->nacc;
	l->nacc = L->nargs;
	/* a launch whose pointers the decoder dropped, or that writes no
	 * argument it shows, writes where nothing here sees */
	int writes = 0;
	for (uint32_t i = 0; i < L->nargs; i++) {
		struct cyc_acc *a = &c->acc[c->nacc++];
		const struct ddp_grad_arg *g = &L->args[i];
		certain_range(g, &a->lo, &a->hi, &a->whi);
		a->alloc_id = g->alloc_id;
		a->base = g->base;
		a->wrote = g->access != DDP_GA_READ;
		a->outside = g->outside;
		a->floaty = (uint8_t)floaty(g->dtype);
		/* only a const-correct signature's non-const pointer is taken
		 * for a pure output */
		a->rd = g->access == DDP_GA_READ || g->access == DDP_GA_UNKNOWN || g->in_struct || !L->const_correct;
		a->self = a->wrote && (g->host_set || inplace_has(c, a));
		if (a->wrote && g->host_set && inplace_add(c, a))
			return -1;
		a->rd |= a->self;
		writes |= a->wrote;
	}
	l->opaque = L->truncated || !writes;
	return 0;
}

/* The period candidates after launch t joined the stream. */
static int track(struct ddp_cycle *c, size_t t)
{
	uint64_t id = c->ln[t].id;
	if (((c->mn + 1) * 2 > (c->mkey ? c->mmask + 1 : 0) && map_grow(c)) || !c->mkey)
		return -1; /* (map_grow made the table, or failed) */
	size_t slot = map_slot(c, id);
	int known = c->mkey[slot] != 0;
	for (int k = 0; k < 2; k++) {
		struct cyc_track *tr = &c->tr[k];
		if (tr->p && c->ln[t - tr->p].id == id) {
			tr->run++;
			continue;
		}
		tr->p = tr->run = 0;
		if (known) {
			tr->p = t - (k == 0 ? c->mlast[slot] : c->mfirst[slot]);
			tr->run = 1;
		}
	}
	if (!known) {
		c->mkey[slot] = id;
		c->mfirst[slot] = (uint32_t)t;
		c->mn++;
	}
	c->mlast[slot] = (uint32_t)t;
	return 0;
}

int ddp_cycle_launch(struct ddp_cycle *c, const struct ddp_grad_launch *L, struct ddp_cycle_report *rep)
{
	if (!c || c->gave_up)
		return 0;
	if (c->n >= DDP_CYCLE_MAX_LAUNCHES || record(c, L) || track(c, c->n - 1)) {
		give_up(c);
		return 0;
	}
	size_t t = c->n - 1;
	if (c->period && c->ln[t].id != c->ln[t - c->period].id) {
		c->period = 0; /* the period broke: search again */
		c->cycles = c->rewrote = 0;
		seen_reset(c);
	}
	if (c->period) {
		if (step_in(c, t)) {
			give_up(c);
			return 0;
		}
	} else {
		size_t p = 0, run = 0;
		for (int k = 0; k < 2; k++)
			if (c->tr[k].p && c->tr[k].run >= c->tr[k].p && (!p || c->tr[k].p < p)) {
				p = c->tr[k].p;
				run = c->tr[k].run;
			}
		if (p && confirm(c, p, t, run)) {
			give_up(c);
			return 0;
		}
	}
	if (!c->period || !c->cur_rewrote || c->rewrote < 2)
		return 0;
	*rep = c->ex;
	rep->period = c->period;
	rep->cycles = c->cycles + 1;
	rep->first = c->ln[c->x0].kname;
	return 1;
}
