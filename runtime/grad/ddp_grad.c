/* SPDX-License-Identifier: MIT
 *
 * ddp_grad.c - the step and gradient tracker (see ddp_grad.h for the rules):
 * the range table, creation and accessors, the launch dispatcher.  The
 * rules live in the files ddp_grad_int.h lists.
 *
 * Data: an array of range records (each malloc'd once, so pointers handed
 * to callbacks stay valid), one index per allocation listing its records,
 * and an open-addressing hash from allocation base to that index.  An
 * allocation whose id no longer matches the launch's (the address was freed
 * and reused) loses its records before use.
 *
 * Contract: the caller serialises every call (ddp_sync.c holds a mutex).
 * Allocation happens only when a new buffer or kernel is learned.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ddp_array.h"
#include "ddp_flow.h"
#include "ddp_grad.h"
#include "ddp_log.h"
#include "ddp_grad_int.h"

/* Every error is one "libddp: " line (the caller prints it and stops). */
ddp_result grad_fail(struct ddp_grad *g, ddp_result rc, const char *fmt, ...)
{
	static const char pfx[] = "libddp: ";
	size_t off = strncmp(fmt, pfx, sizeof pfx - 1) ? sizeof pfx - 1 : 0;
	va_list ap;
	memcpy(g->err, pfx, off);
	va_start(ap, fmt);
	vsnprintf(g->err + off, sizeof g->err - off, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- the range table */

static size_t hash_base(uint64_t b)
{
	b ^= b >> 33;
	b *= 0xff51afd7ed558ccdULL;
	b ^= b >> 33;
	return (size_t)b;
}

static int64_t *hash_slot(const struct ddp_grad *g, uint64_t base)
{
	for (size_t i = hash_base(base) & g->hmask;; i = (i + 1) & g->hmask) {
		int64_t v = g->hash[i];
		if (!v || g->allocs[v - 1].base == base)
			return &g->hash[i];
	}
}

void grad_buf_reset(struct ddp_grad *g, struct ddp_grad_buf *b)
{
	g->gen++;
	struct ddp_grad_buf keep = *b;
	memset(b, 0, sizeof *b);
	/* the range and where it lives stay: a record is reused for the
	 * same bytes with another role */
	b->base = keep.base;
	b->size = keep.size;
	b->alloc_base = keep.alloc_base;
	b->alloc_size = keep.alloc_size;
	b->alloc_id = keep.alloc_id;
	b->bounded = keep.bounded;
	b->xsrc = keep.xsrc;
}

/* The index of the allocation a lives in (NULL when none).  A different
 * allocation id at the same base: the old records are dropped. */
struct alloc_ix *grad_ix_find(struct ddp_grad *g, uint64_t base, uint32_t alloc_id)
{
	int64_t v = *hash_slot(g, base);
	if (!v)
		return NULL;
	struct alloc_ix *x = &g->allocs[v - 1];
	if (x->alloc_id != alloc_id) {
		for (uint32_t i = 0; i < x->n; i++) {
			if (g->bufs[x->rec[i]]->role == DDP_GR_GRAD && g->ngrad)
				g->ngrad--;
			grad_buf_reset(g, g->bufs[x->rec[i]]);
		}
		/* the dead records stay (grad_rec_new reuses them) */
		x->alloc_id = alloc_id;
	}
	return x;
}

static ddp_result hash_grow(struct ddp_grad *g)
{
	size_t n = (g->hmask + 1) * 2;
	int64_t *h = calloc(n, sizeof *h);
	if (!h)
		return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	free(g->hash);
	g->hash = h;
	g->hmask = n - 1;
	for (size_t i = 0; i < g->nallocs; i++)
		*hash_slot(g, g->allocs[i].base) = (int64_t)i + 1;
	return DDP_OK;
}

struct alloc_ix *grad_ix_get(struct ddp_grad *g, uint64_t base, uint32_t alloc_id)
{
	struct alloc_ix *x = grad_ix_find(g, base, alloc_id);
	if (x)
		return x;
	if ((g->nallocs + 1) * 2 > g->hmask + 1 && hash_grow(g) != DDP_OK)
		return NULL;
	struct alloc_ix *na = ddp_array_grow(g->allocs, &g->acap, g->nallocs + 1, sizeof *na, 64);
	if (!na)
		return NULL;
	g->allocs = na;
	x = &g->allocs[g->nallocs++];
	memset(x, 0, sizeof *x);
	x->base = base;
	x->alloc_id = alloc_id;
	*hash_slot(g, base) = (int64_t)g->nallocs;
	return x;
}

/* The range an argument covers, clipped to its allocation. */
void grad_arg_range(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi)
{
	uint64_t end = a->base + a->size;
	uint64_t p = a->ptr && a->ptr >= a->base && a->ptr < end ? a->ptr : a->base;
	uint64_t e = a->ext && a->ext <= end - p ? p + a->ext : end;
	*lo = p;
	*hi = e;
}

/* The first position of x whose record starts at or after key. */
static uint32_t ix_lower(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t key)
{
	uint32_t lo = 0, hi = x->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (g->bufs[x->rec[mid]]->base < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first position whose record may overlap [lo, ...). */
static uint32_t ix_first(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo)
{
	return ix_lower(g, x, lo > x->maxsize ? lo - x->maxsize + 1 : 0);
}

/* The record at position i got a new range: moves it to its place. */
void grad_ix_place(const struct ddp_grad *g, struct alloc_ix *x, uint32_t i)
{
	uint32_t r = x->rec[i];
	const struct ddp_grad_buf *b = g->bufs[r];
	if (b->size > x->maxsize)
		x->maxsize = b->size;
	for (; i > 0 && g->bufs[x->rec[i - 1]]->base > b->base; i--)
		x->rec[i] = x->rec[i - 1];
	for (; i + 1 < x->n && g->bufs[x->rec[i + 1]]->base < b->base; i++)
		x->rec[i] = x->rec[i + 1];
	x->rec[i] = r;
}

/* The record of exactly [lo, hi) in x with one of the roles in mask (bit
 * per role), or NULL. */
struct ddp_grad_buf *grad_rec_exact(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
				      uint64_t hi, unsigned mask)
{
	if (!x)
		return NULL;
	for (uint32_t i = ix_lower(g, x, lo); i < x->n; i++) {
		struct ddp_grad_buf *b = g->bufs[x->rec[i]];
		if (b->base != lo)
			break;
		if (b->base + b->size == hi && (mask >> b->role & 1))
			return b;
	}
	return NULL;
}

/* The first record of x overlapping [lo, hi) with a role in mask, from
 * position *pos on (iteration: start with *pos = 0; records may change
 * roles meanwhile, not ranges). */
struct ddp_grad_buf *grad_rec_overlap(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
					uint64_t hi, unsigned mask, uint32_t *pos)
{
	if (!x)
		return NULL;
	if (*pos == 0)
		*pos = ix_first(g, x, lo);
	for (; *pos < x->n; (*pos)++) {
		struct ddp_grad_buf *b = g->bufs[x->rec[*pos]];
		if (b->base >= hi) {
			*pos = x->n;
			break;
		}
		if ((mask >> b->role & 1) && lo < b->base + b->size) {
			(*pos)++;
			return b;
		}
	}
	return NULL;
}

/* Does a record with a role in mask contain [lo, hi) entirely? */
struct ddp_grad_buf *grad_rec_within(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
				       uint64_t hi, unsigned mask)
{
	if (!x)
		return NULL;
	for (uint32_t i = ix_first(g, x, lo); i < x->n; i++) {
		struct ddp_grad_buf *b = g->bufs[x->rec[i]];
		if (b->base > lo)
			break;
		if ((mask >> b->role & 1) && hi <= b->base + b->size)
			return b;
	}
	return NULL;
}

/* A new record for [lo, hi) of a's allocation. */
struct ddp_grad_buf *grad_rec_new(struct ddp_grad *g, const struct ddp_grad_arg *a, uint64_t lo, uint64_t hi)
{
	struct alloc_ix *x = grad_ix_get(g, a->base, a->alloc_id);
	struct ddp_grad_buf *b;
	if (!x)
		return NULL;
	uint32_t at;
	/* reuse a dead record of this allocation */
	for (at = 0; at < x->n; at++) {
		b = g->bufs[x->rec[at]];
		if (b->role == DDP_GR_NONE) {
			memset(b, 0, sizeof *b);
			goto fill;
		}
	}
	/* not ddp_array_grow: its size_t capacity through a temporary makes
	 * clang-tidy's analyzer lose x->n <= x->cap (a false "undefined
	 * subscript" in grad_ix_place, make lint) */
	if (x->n == x->cap) {
		uint32_t nc = x->cap ? x->cap * 2 : 4;
		uint32_t *nr = realloc(x->rec, nc * sizeof *nr);
		if (!nr)
			return NULL;
		x->rec = nr;
		x->cap = nc;
	}
	struct ddp_grad_buf **nb = ddp_array_grow(g->bufs, &g->cap, g->nbufs + 1, sizeof *nb, 64);
	if (!nb)
		return NULL;
	g->bufs = nb;
	if (!(b = calloc(1, sizeof *b)))
		return NULL;
	g->bufs[g->nbufs] = b;
	at = x->n;
	x->rec[x->n++] = (uint32_t)g->nbufs++;
fill:
	b->base = lo;
	b->size = hi - lo;
	b->alloc_base = a->base;
	b->alloc_size = a->size;
	b->alloc_id = a->alloc_id;
	b->bounded = a->bounded;
	grad_ix_place(g, x, at);
	return b;
}

ddp_result ddp_grad_new(const struct ddp_grad_ops *ops, enum ddp_dtype dtype_override, struct ddp_grad **out)
{
	if (dtype_override != DDP_DT_UNKNOWN && !ddp_dtype_reducible(dtype_override))
		return DDP_ERR_INVALID;
	struct ddp_grad *g = calloc(1, sizeof *g);
	if (!g)
		return DDP_ERR_NOMEM;
	g->ops = *ops;
	g->override = dtype_override;
	g->strict = 1;
	g->hmask = 255;
	if (!(g->hash = calloc(g->hmask + 1, sizeof *g->hash))) {
		free(g);
		return DDP_ERR_NOMEM;
	}
	if (ddp_flow_new(&g->flow) != DDP_OK) {
		free(g->hash);
		free(g);
		return DDP_ERR_NOMEM;
	}
	*out = g;
	return DDP_OK;
}

void ddp_grad_set_strict(struct ddp_grad *g, int strict)
{
	g->strict = strict;
}

void ddp_grad_set_debug_avg_state(struct ddp_grad *g, int on)
{
	g->debug_avg_state = on;
}

void ddp_grad_set_debug_unseen(struct ddp_grad *g, uint64_t bytes)
{
	g->debug_unseen = bytes;
}

void ddp_grad_free(struct ddp_grad *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nbufs; i++)
		free(g->bufs[i]);
	for (size_t i = 0; i < g->nallocs; i++)
		free(g->allocs[i].rec);
	free(g->bufs);
	free(g->allocs);
	free(g->hash);
	free(g->wlog);
	free(g->clog);
	free(g->xcp);
	free(g->xrec);
	free(g->xlist);
	free(g->xrd);
	ddp_flow_free(g->flow);
	free(g->updw);
	free(g->unnamed);
	grad_plan_free(g);
	free(g);
}

void ddp_grad_forget(struct ddp_grad *g, uint64_t base)
{
	int64_t v = *hash_slot(g, base);
	if (!v)
		return;
	struct alloc_ix *x = &g->allocs[v - 1];
	for (uint32_t i = 0; i < x->n; i++) {
		struct ddp_grad_buf *b = g->bufs[x->rec[i]];
		if (b->role == DDP_GR_GRAD && g->ngrad)
			g->ngrad--;
		grad_buf_reset(g, b);
	}
}

int ddp_grad_is_state(const struct ddp_grad *g, const struct ddp_grad_buf *b, uint64_t step)
{
	if (b->role != DDP_GR_PARAM)
		return 0;
	if (b->xsrc && b->opt_phase != step && b->opt_phase != g->steps)
		return 0;
	if (b->evidence == DDP_GE_LIST_WRITE && !b->in_place)
		return 0;
	/* a current gradient too (the allocation's index: a binary search) */
	int64_t v = *hash_slot(g, b->alloc_base);
	const struct alloc_ix *x = v ? &g->allocs[v - 1] : NULL;
	if (!x || x->alloc_id != b->alloc_id)
		return 1;
	struct ddp_grad_buf *o;
	for (uint32_t pos = 0; (o = grad_rec_overlap(g, x, b->base, b->base + b->size, M(DDP_GR_GRAD), &pos));)
		if (ddp_grad_buf_current(g, o))
			return 0;
	return 1;
}

int ddp_grad_alloc_holds_state(const struct ddp_grad *g, uint64_t base, uint64_t step)
{
	int64_t v = *hash_slot(g, base);
	if (!v)
		return 0;
	const struct alloc_ix *x = &g->allocs[v - 1];
	for (uint32_t i = 0; i < x->n; i++)
		if (ddp_grad_is_state(g, g->bufs[x->rec[i]], step))
			return 1;
	return 0;
}

size_t ddp_grad_nbufs(const struct ddp_grad *g)
{
	return g->nbufs;
}
struct ddp_grad_buf *ddp_grad_buf_at(struct ddp_grad *g, size_t i)
{
	return i < g->nbufs ? g->bufs[i] : NULL;
}
uint64_t ddp_grad_steps(const struct ddp_grad *g)
{
	return g->steps;
}
uint64_t ddp_grad_reductions(const struct ddp_grad *g)
{
	return g->reductions;
}
const char *ddp_grad_last_error(const struct ddp_grad *g)
{
	return g->err;
}

uint64_t ddp_grad_grad_bytes(const struct ddp_grad *g)
{
	uint64_t n = 0;
	/* named gradients: those of the last epoch that named any */
	for (size_t i = 0; i < g->nbufs; i++)
		if (g->bufs[i]->role == DDP_GR_GRAD &&
		    (!g->bufs[i]->named || g->bufs[i]->named_ep == g->last_named_ep))
			n += g->bufs[i]->count * ddp_dtype_size((enum ddp_dtype)g->bufs[i]->dtype);
	return n;
}

int ddp_grad_buf_current(const struct ddp_grad *g, const struct ddp_grad_buf *b)
{
	if (!b->xsrc)
		return 1;
	if (b->role == DDP_GR_PARAM)
		return b->opt_phase == g->steps;
	if (b->role != DDP_GR_GRAD || !b->named)
		return 1;
	return b->named_ep == g->last_named_ep;
}

const char *ddp_grad_role_name(enum ddp_grad_role r)
{
	switch (r) {
	case DDP_GR_GRAD: return "gradient";
	case DDP_GR_PARAM: return "parameter";
	case DDP_GR_OTHER: return "neither";
	case DDP_GR_CAND: return "candidate";
	case DDP_GR_DERIVED: return "reader output";
	default: return "none";
	}
}

const char *ddp_grad_evidence_name(enum ddp_grad_evidence e)
{
	switch (e) {
	case DDP_GE_SIG_CONST: return "const in the signature";
	case DDP_GE_SIG_WRITE: return "non-const in a const-correct signature";
	case DDP_GE_CAL_SAME: return "unchanged by the calibration run";
	case DDP_GE_CAL_CHANGED: return "changed by the calibration run";
	case DDP_GE_READER: return "a reader's argument";
	case DDP_GE_LIST: return "in a consumer's gradient list";
	case DDP_GE_LIST_WRITE: return "written by an optimizer's tensor list";
	case DDP_GE_FLOW_PARAM: return "data flow: read, written by no launch before the update";
	case DDP_GE_FLOW_GRAD: return "data flow: written this step, read by the update";
	case DDP_GE_FLOW_STATE: return "data flow: formed by the update before the optimizer";
	default: return "-";
	}
}

int ddp_grad_steady(const struct ddp_grad *g)
{
	return g->ngrad > 0 && g->steps_done > 0;
}

uint64_t ddp_grad_gen(const struct ddp_grad *g)
{
	return g->gen;
}

int ddp_grad_active(const struct ddp_grad *g)
{
	return g->ngrad > 0 || g->in_update || g->steps_done == 0;
}


/* Names may confirm, never decide: a kernel a name calls an optimizer
 * whose launch the data flow shows to be an update that only reads its
 * parameter (DDP_OPT_KERNELS=+axpy_kernel on darknet's axpy(-decay, w, dw))
 * is reported once and decided by the data flow from then on. */
static int name_overruled(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	for (size_t i = 0; i < g->nunnamed; i++)
		if (g->unnamed[i] == L->kid)
			return 1;
	int why = grad_flow_name_conflict(g, L);
	if (!why)
		return 0;
	uint32_t *nv = ddp_array_grow(g->unnamed, &g->cunnamed, g->nunnamed + 1, sizeof *nv, 8);
	if (!nv)
		return 0;
	g->unnamed = nv;
	g->unnamed[g->nunnamed++] = L->kid;
	DDP_WARN("kernel %s is named like an optimizer, but the data flow shows %s: the name is not obeyed, the "
		 "data flow decides its roles (docs/gradient-sync.md, \"Three kinds of kernel\")",
		 L->kname ? L->kname : "?",
		 why == 1 ? "a launch reading a parameter (bytes no launch of the step wrote before reading them) and "
			    "writing a gradient (written by this step's backward)"
			  : "a launch that rewrites no loop-carried state (it writes only bytes a launch of the step "
			    "produced and none has read)");
	return 1;
}

static ddp_result dispatch(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (L->boundary) {
		if (g->in_update)
			DDP_CHECK(grad_end_update(g)); /* the next epoch with it */
		else
			grad_next_epoch(g);
	}
	if (L->explicit_ranges && L->kclass != DDP_GK_OTHER)
		return grad_on_explicit(g, L);
	if (L->truncated && L->kclass != DDP_GK_OTHER)
		return grad_fail(g, DDP_ERR_UNSUPPORTED,
			    "libddp: %s kernel %s passes more buffers than libddp can decode (%u beyond the first "
			    "%u); its gradients and parameters cannot all be seen, so they cannot be averaged",
			    L->kclass == DDP_GK_OPT ? "optimizer" : "gradient-reader",
			    L->kname ? L->kname : "?", L->truncated, L->nargs);
	if (L->kclass == DDP_GK_OPT && name_overruled(g, L)) {
		struct ddp_grad_launch other = *L;
		other.kclass = DDP_GK_OTHER;
		return grad_on_other(g, &other);
	}
	switch (L->kclass) {
	case DDP_GK_OPT: return grad_on_optimizer(g, L);
	case DDP_GK_READER: return grad_on_reader(g, L);
	case DDP_GK_NEUTRAL: return grad_on_other(g, L); /* undecoded: as any launch that may write */
	default: return grad_on_other(g, L);
	}
}


ddp_result ddp_grad_launch(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_plan **plan)
{
	grad_plan_start(g, L);
	ddp_result rc = dispatch(g, L);
	if (rc != DDP_OK)
		g->plan.n = 0;
	*plan = &g->plan;
	return rc;
}

ddp_result ddp_grad_finish(struct ddp_grad *g, const struct ddp_plan **plan)
{
	grad_plan_start(g, NULL);
	ddp_result rc = grad_end_update(g);
	if (rc != DDP_OK)
		g->plan.n = 0;
	*plan = &g->plan;
	return rc;
}
