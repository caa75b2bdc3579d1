/* SPDX-License-Identifier: MIT
 *
 * ddp_grad.c - the step and gradient tracker (see ddp_grad.h for the rules).
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

#define GRAD_MAX_ARGS 512

/* The records of one allocation, sorted by their first byte (ranges may
 * overlap: a step-1 candidate covers the gradient ranges carved from it).
 * A caching-allocator segment holds thousands (every tensor of a PyTorch
 * model): lookups are binary searches, never scans of the allocation. */
struct alloc_ix {
	uint64_t base;
	uint32_t alloc_id;
	uint32_t n, cap;
	uint32_t *rec;    /* indices into bufs, by record base    */
	uint64_t maxsize; /* no record is larger (lookup bound)   */
};

/* Step 1: which non-optimizer kernel last wrote which range (the evidence
 * `DDP_LOG=info` names for a gradient). */
struct wlog_ent {
	uint32_t alloc_id;
	uint64_t lo, hi;
	char kname[40];
};
#define WLOG_MAX 4096

/* a device-to-device copy of the first step (ddp_grad_copied) */
struct copy_ent {
	uint64_t dst, dst_base, dst_size, src, src_base, src_size, bytes;
	uint32_t dst_id, src_id;
};

#define CLOG_MAX 4096

struct ddp_grad {
	struct ddp_grad_ops ops;
	enum ddp_dtype override; /* DDP_GRAD_DTYPE, or UNKNOWN           */
	int strict;
	struct ddp_grad_buf **bufs; /* records, in creation order           */
	size_t nbufs, cap;
	struct alloc_ix *allocs;
	size_t nallocs, acap;
	int64_t *hash; /* alloc index+1 per slot, 0 = empty    */
	size_t hmask;
	uint32_t ngrad_order, nparam_order;
	uint32_t ngrad;       /* G records now                        */
	uint32_t grads_found; /* G records ever learned               */
	int in_update;        /* inside a step's update phase         */
	uint64_t steps;       /* steps begun                          */
	uint64_t steps_done;  /* steps ended                          */
	uint64_t reductions;
	uint64_t gen; /* G/candidate set changes              */
	struct wlog_ent *wlog;
	size_t nwlog;
	struct copy_ent *clog; /* the first step's device copies       */
	size_t nclog;
	struct copy_ent *xcp; /* copies to make again (scratch)        */
	size_t xcap_cp;
	/* explicit launches */
	uint64_t epoch;      /* see ddp_grad.h "Explicit launches"   */
	uint32_t opener_kid; /* the launch that opened the update    */
	uint64_t opener_ptr; /*   phase: kernel, first tensor        */
	uint8_t opener_set;
	uint64_t last_named_ep; /* the last epoch that named a gradient */
	uint64_t xstamp_seq;
	uint32_t last_reader_kid;             /* the last reader launch's last named  */
	struct ddp_grad_buf *last_reader_rec; /* gradient (x_reader_again)       */
	struct ddp_grad_buf **xrec;           /* per argument: its record (scratch)   */
	struct ddp_grad_buf **xlist;          /* gradients to average (scratch)       */
	struct ddp_grad_read *xrd;            /* ranges an optimizer reads (scratch)  */
	/* lists of generic foreach optimizer ops found to hold parameters in
	 * step 1 (x_param_lists): kernel id << 8 | list */
	uint64_t xpar[32];
	uint32_t nxpar;
	/* the update found from the data flow (ddp_flow.h) */
	struct ddp_flow *flow;
	int flow_update;     /* the open update phase is a flow one  */
	uint64_t flow_seq;   /* launches noted in the flow history   */
	int debug_avg_state; /* DDP_DEBUG_AVG_STATE                  */
	size_t xcap_rec, xcap_list, xcap_rd;
	char err[512];
};

const char *const ddp_grad_opt_builtin[] = {
	"adam",    "sgd",      "momentum",           "lamb",       "lion",      "adagrad",
	"rmsprop", "adadelta", "multi_tensor_apply", "fused_adam", "fusedadam", "optimizer",
	NULL,
};
const char *const ddp_grad_reader_builtin[] = {
	"unscale",   "non_finite",  "nonfinite", "found_inf", "inf_check", "check_inf",
	"grad_norm", "global_norm", "clip_grad", "lpnorm",    "l2norm",    NULL,
};
/* PyTorch's multi-tensor functors that rewrite gradients the same way on
 * every rank: clip_grad_norm_'s _foreach_mul_(grads, clip_coef) by a device
 * scalar, zero_grad(set_to_none=False)'s _foreach_zero_. */
const char *const ddp_grad_neutral_builtin[] = {
	"BinaryOpScalarTensorFunctor<",
	"ZeroFunctor<",
	NULL,
};
/* scaler.update(): every iteration of a GradScaler loop ends with it,
 * whether the optimizer ran or the step was skipped. */
static const char *const boundary_builtin[] = { "amp_update_scale", NULL };

static ddp_result fail(struct ddp_grad *g, ddp_result rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static ddp_result fail(struct ddp_grad *g, ddp_result rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->err, sizeof g->err, fmt, ap);
	va_end(ap);
	return rc;
}

static int ci_contains(const char *hay, const char *needle, size_t nlen)
{
	if (!nlen)
		return 0;
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < nlen && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == nlen)
			return 1;
	}
	return 0;
}

/* Does name contain one of the comma-separated words of list? */
static int list_matches(const char *name, const char *list)
{
	while (list && *list) {
		const char *end = strchr(list, ',');
		size_t n = end ? (size_t)(end - list) : strlen(list);
		while (n && isspace((unsigned char)*list)) {
			list++;
			n--;
		}
		while (n && isspace((unsigned char)list[n - 1]))
			n--;
		if (ci_contains(name, list, n))
			return 1;
		list = end ? end + 1 : NULL;
	}
	return 0;
}

/* name with every C++ closure marker ("lambda", as the demangler spells
 * `{lambda(float)#1}`) blanked: a closure type says nothing about what a
 * kernel does, and "lamb" (the optimizer) is a prefix of it.  PyTorch's
 * elementwise kernels carry the closures of their operators in their
 * template arguments (tanh_kernel_cuda::{lambda()#2}...): matched raw,
 * every one of them was taken for a LAMB optimizer.  Returns name itself
 * when it has no marker, else a malloc'd copy (NULL when out of memory). */
static char *without_closures(const char *name)
{
	static const char marker[] = "lambda";
	const size_t mlen = sizeof marker - 1;
	if (!ci_contains(name, marker, mlen))
		return (char *)name;
	char *copy = strdup(name);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if (strncasecmp(p, marker, mlen) == 0)
			memset(p, '~', mlen);
	return copy;
}

int ddp_grad_name_matches(const char *name, const char *const *builtin, const char *setting)
{
	if (!name)
		return 0;
	char *clean = without_closures(name);
	if (!clean)
		return 0;
	int replace = setting && *setting && *setting != '+', hit = 0;
	if (!replace)
		for (size_t i = 0; builtin[i] && !hit; i++)
			hit = ci_contains(clean, builtin[i], strlen(builtin[i]));
	if (!hit && setting && *setting)
		hit = list_matches(clean, *setting == '+' ? setting + 1 : setting);
	if (clean != name)
		free(clean);
	return hit;
}

int ddp_grad_is_boundary(const char *name)
{
	return ddp_grad_name_matches(name, boundary_builtin, NULL);
}

enum ddp_grad_kclass ddp_grad_classify(const char *name, const char *opt_setting, const char *reader_setting)
{
	/* only inside a multi-tensor kernel: a plain elementwise ZeroFunctor
	 * (a fill) is forward/backward work */
	if (name && strstr(name, "multi_tensor_apply_kernel<") &&
	    ddp_grad_name_matches(name, ddp_grad_neutral_builtin, NULL))
		return DDP_GK_NEUTRAL;
	if (ddp_grad_name_matches(name, ddp_grad_reader_builtin, reader_setting))
		return DDP_GK_READER;
	if (ddp_grad_name_matches(name, ddp_grad_opt_builtin, opt_setting))
		return DDP_GK_OPT;
	return DDP_GK_OTHER;
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

static void buf_reset(struct ddp_grad *g, struct ddp_grad_buf *b)
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
static struct alloc_ix *ix_find(struct ddp_grad *g, uint64_t base, uint32_t alloc_id)
{
	int64_t v = *hash_slot(g, base);
	if (!v)
		return NULL;
	struct alloc_ix *x = &g->allocs[v - 1];
	if (x->alloc_id != alloc_id) {
		for (uint32_t i = 0; i < x->n; i++) {
			if (g->bufs[x->rec[i]]->role == DDP_GR_GRAD && g->ngrad)
				g->ngrad--;
			buf_reset(g, g->bufs[x->rec[i]]);
		}
		/* the dead records stay (rec_new reuses them) */
		x->alloc_id = alloc_id;
	}
	return x;
}

static ddp_result hash_grow(struct ddp_grad *g)
{
	size_t n = (g->hmask + 1) * 2;
	int64_t *h = calloc(n, sizeof *h);
	if (!h)
		return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	free(g->hash);
	g->hash = h;
	g->hmask = n - 1;
	for (size_t i = 0; i < g->nallocs; i++)
		*hash_slot(g, g->allocs[i].base) = (int64_t)i + 1;
	return DDP_OK;
}

static struct alloc_ix *ix_get(struct ddp_grad *g, uint64_t base, uint32_t alloc_id)
{
	struct alloc_ix *x = ix_find(g, base, alloc_id);
	if (x)
		return x;
	if ((g->nallocs + 1) * 2 > g->hmask + 1 && hash_grow(g) != DDP_OK)
		return NULL;
	if (g->nallocs == g->acap) {
		size_t nc = g->acap ? g->acap * 2 : 64;
		struct alloc_ix *na = realloc(g->allocs, nc * sizeof *na);
		if (!na)
			return NULL;
		g->allocs = na;
		g->acap = nc;
	}
	x = &g->allocs[g->nallocs++];
	memset(x, 0, sizeof *x);
	x->base = base;
	x->alloc_id = alloc_id;
	*hash_slot(g, base) = (int64_t)g->nallocs;
	return x;
}

/* The range an argument covers, clipped to its allocation. */
static void arg_range(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi)
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
static void ix_place(const struct ddp_grad *g, struct alloc_ix *x, uint32_t i)
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
static struct ddp_grad_buf *rec_exact(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
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
static struct ddp_grad_buf *rec_overlap(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
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
static struct ddp_grad_buf *rec_within(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
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

#define M(r) (1u << (r))

/* A new record for [lo, hi) of a's allocation. */
static struct ddp_grad_buf *rec_new(struct ddp_grad *g, const struct ddp_grad_arg *a, uint64_t lo, uint64_t hi)
{
	struct alloc_ix *x = ix_get(g, a->base, a->alloc_id);
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
	if (x->n == x->cap) {
		uint32_t nc = x->cap ? x->cap * 2 : 4;
		uint32_t *nr = realloc(x->rec, nc * sizeof *nr);
		if (!nr)
			return NULL;
		x->rec = nr;
		x->cap = nc;
	}
	if (g->nbufs == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 64;
		struct ddp_grad_buf **nb = realloc(g->bufs, nc * sizeof *nb);
		if (!nb)
			return NULL;
		g->bufs = nb;
		g->cap = nc;
	}
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
	ix_place(g, x, at);
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
		buf_reset(g, b);
	}
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

/* ---- actions */

static int cmp_order(const void *a, const void *b)
{
	const struct ddp_grad_buf *x = *(struct ddp_grad_buf *const *)a;
	const struct ddp_grad_buf *y = *(struct ddp_grad_buf *const *)b;
	return (x->order > y->order) - (x->order < y->order);
}

/* Averages list[0..n) (G or candidates, in order of first appearance);
 * ranges that follow each other in one allocation (and in that order) go
 * in one collective. */
static ddp_result reduce_bufs(struct ddp_grad *g, struct ddp_grad_buf **list, size_t n, void *stream)
{
	struct ddp_grad_buf *spans = NULL, **sp = NULL;
	size_t ns = 0;
	ddp_result rc = DDP_OK;

	if (!n)
		return DDP_OK;
	if (g->ops.reduce && (!g->ops.reduce_on || g->ops.reduce_on(g->ops.ctx))) {
		rc = g->ops.reduce(g->ops.ctx, list, n, stream);
		goto reduced;
	}
	spans = malloc(n * sizeof *spans);
	sp = malloc(n * sizeof *sp);
	if (!spans || !sp) {
		rc = fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct ddp_grad_buf *b = list[i], *s = ns ? &spans[ns - 1] : NULL;
		if (s && s->alloc_id == b->alloc_id && s->alloc_base == b->alloc_base &&
		    s->dtype == b->dtype && s->base + s->size == b->base) {
			s->size += b->size;
			s->count += b->count;
			s->bcast_done++; /* ranges merged into this span, minus one */
			continue;
		}
		spans[ns] = *b;
		spans[ns].bcast_done = 0;
		sp[ns] = &spans[ns];
		ns++;
	}
	for (size_t i = 0; i < ns; i++)
		if (spans[i].bcast_done) {
			char l[64];
			snprintf(l, sizeof l, "%.48s (+%u)", spans[i].label, spans[i].bcast_done);
			memcpy(spans[i].label, l, sizeof l);
		}
	rc = g->ops.allreduce(g->ops.ctx, sp, ns, stream);
reduced:
	if (rc == DDP_OK) {
		for (size_t i = 0; i < n; i++) {
			list[i]->dirty = 0;
			list[i]->red_ep = g->epoch + 1;
		}
		g->reductions++;
	} else if (!g->err[0]) {
		fail(g, rc, "gradient allreduce failed");
	}
out:
	free(spans);
	free(sp);
	return rc;
}

/* Is b (G or candidate) freed since it was learned?  Then it is forgotten
 * (the address may belong to another allocation by now). */
static int gone(struct ddp_grad *g, struct ddp_grad_buf *b)
{
	if (!g->ops.alive || g->ops.alive(g->ops.ctx, b))
		return 0;
	DDP_DEBUG(GRAD, "gradient %s at 0x%llx was freed: forgotten", b->label, (unsigned long long)b->base);
	if (b->role == DDP_GR_GRAD && g->ngrad)
		g->ngrad--;
	buf_reset(g, b);
	return 1;
}

/* Averages every dirty G (and, in step 1, every dirty candidate) the
 * address rules learned, in order of first appearance (named gradients of
 * explicit launches are averaged by their consumers, never here). */
static ddp_result reduce_dirty(struct ddp_grad *g, void *stream)
{
	size_t cap = g->nbufs ? g->nbufs : 1, n = 0;
	struct ddp_grad_buf **list = malloc(cap * sizeof *list);
	ddp_result rc;

	if (!list)
		return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	for (size_t i = 0; i < g->nbufs; i++) {
		struct ddp_grad_buf *b = g->bufs[i];
		if ((b->role != DDP_GR_GRAD && b->role != DDP_GR_CAND) || !b->dirty || b->named || gone(g, b))
			continue;
		list[n++] = b;
	}
	qsort(list, n, sizeof *list, cmp_order);
	rc = reduce_bufs(g, list, n, stream);
	free(list);
	return rc;
}

/* The next epoch: named gradients must be averaged again before their next
 * use; those not named in the epoch that ended are forgotten. */
static void next_epoch(struct ddp_grad *g)
{
	g->epoch++;
	for (size_t i = 0; i < g->nbufs; i++) {
		struct ddp_grad_buf *b = g->bufs[i];
		if (!b->named || b->role != DDP_GR_GRAD || b->named_ep + 1 >= g->epoch)
			continue;
		DDP_DEBUG(GRAD, "gradient %s at 0x%llx was not named in the last iteration: forgotten",
			  b->label, (unsigned long long)b->base);
		if (g->ngrad)
			g->ngrad--;
		buf_reset(g, b);
	}
}

static ddp_result end_update(struct ddp_grad *g)
{
	if (!g->in_update)
		return DDP_OK;
	g->in_update = 0;
	g->opener_set = 0;
	g->flow_update = 0;
	next_epoch(g);
	g->steps_done++;
	if (g->steps_done == 1) {
		ddp_flow_history_done(g->flow);
		/* candidates no optimizer launch read are no gradients */
		for (size_t i = 0; i < g->nbufs; i++) {
			struct ddp_grad_buf *b = g->bufs[i];
			if (b->role != DDP_GR_CAND)
				continue;
			DDP_INFO(GRAD,
				 "candidate %s (%llu bytes, revealed by %s) was read by no optimizer launch in "
				 "step 1: not a gradient",
				 b->label, (unsigned long long)b->size, b->reader);
			buf_reset(g, b);
		}
		free(g->wlog);
		g->wlog = NULL;
		g->nwlog = 0;
		free(g->clog);
		g->clog = NULL;
		g->nclog = 0;
	}
	if (g->strict && g->steps_done == 1 && g->grads_found == 0)
		return fail(
			g, DDP_ERR_UNSUPPORTED,
			"libddp: the first optimizer step ran but no gradient buffer was found among the optimizer's "
			"arguments (no read-only range of more than 64 bytes whose element count pairs with a range it "
			"writes); gradients cannot be averaged: name the optimizer kernels with DDP_OPT_KERNELS, the "
			"kernels that read gradients first with DDP_GRAD_READER_KERNELS, their type with "
			"DDP_GRAD_DTYPE (docs/gradient-sync.md), or train unsynchronised with DDP_SYNC=off");
	if (g->strict && g->steps_done >= 2 && g->reductions == 0)
		return fail(
			g, DDP_ERR_UNSUPPORTED,
			"libddp: %llu optimizer steps ran and no gradient was ever averaged (the gradients are never "
			"written between optimizer launches as far as libddp can see); the ranks would train "
			"apart: check DDP_OPT_KERNELS and DDP_GRAD_READER_KERNELS (docs/gradient-sync.md), or train "
			"unsynchronised with DDP_SYNC=off",
			(unsigned long long)g->steps_done);
	if (g->ops.step_end)
		return g->ops.step_end(g->ops.ctx, g->steps);
	return DDP_OK;
}

static void set_label(struct ddp_grad_buf *b, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a)
{
	char off[24] = "";
	if (b->base != b->alloc_base || b->size != b->alloc_size)
		snprintf(off, sizeof off, "+%llu", (unsigned long long)(b->base - b->alloc_base));
	if (a->in_struct)
		snprintf(b->label, sizeof b->label, "%.40s:%u.%u%s", L->kname ? L->kname : "?", a->param,
			 a->word, off);
	else
		snprintf(b->label, sizeof b->label, "%.40s:%u%s", L->kname ? L->kname : "?", a->param, off);
}

/* The element type of a gradient passed as a: the override, else the
 * pointee's type, else the kernel's template type; a type the collectives
 * cannot average counts as unknown (DDP_DT_UNKNOWN). */
static enum ddp_dtype grad_dtype(const struct ddp_grad *g, const struct ddp_grad_launch *L,
				 const struct ddp_grad_arg *a)
{
	if (g->override != DDP_DT_UNKNOWN)
		return g->override;
	if ((!a->in_struct || L->explicit_ranges) && ddp_dtype_reducible((enum ddp_dtype)a->dtype))
		return (enum ddp_dtype)a->dtype;
	if (ddp_dtype_reducible((enum ddp_dtype)L->template_dtype))
		return (enum ddp_dtype)L->template_dtype;
	return DDP_DT_UNKNOWN;
}

/* The last non-optimizer kernel that wrote into [lo, hi) in step 1. */
static const char *wlog_writer(const struct ddp_grad *g, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	for (size_t i = g->nwlog; i-- > 0;) {
		const struct wlog_ent *w = &g->wlog[i];
		if (w->alloc_id == alloc_id && w->lo < hi && lo < w->hi)
			return w->kname;
	}
	return NULL;
}

/* A pointer the signature types as integers or bools (a found-inf flag, a
 * count, token ids): never a gradient, whatever its size.  Size is no
 * evidence: a 1-element bias has a 4-byte gradient. */
static int integer_arg(const struct ddp_grad_arg *a)
{
	return a->dtype >= DDP_DT_I8 && a->dtype <= DDP_DT_BOOL;
}

/* Makes b (a new record of [lo, hi)) a gradient or a candidate. */
/* Does allocation x hold tensors an explicit launch decoded (PyTorch's
 * caching-allocator segment)? */
static int holds_tensors(const struct ddp_grad *g, const struct alloc_ix *x)
{
	for (uint32_t i = 0; x && i < x->n; i++)
		if (g->bufs[x->rec[i]]->xsrc)
			return 1;
	return 0;
}

static ddp_result make_grad(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
			    struct ddp_grad_buf *b, int role, int evidence, const char *paired)
{
	enum ddp_dtype t = grad_dtype(g, L, a);
	if (!b->named && !b->bounded && holds_tensors(g, ix_find(g, b->alloc_base, b->alloc_id)))
		return fail(
			g, DDP_ERR_UNSUPPORTED,
			"libddp: kernel %s passes a gradient (parameter %u) whose extent no argument bounds, inside "
			"allocation #%u that holds PyTorch's tensors: averaged whole it would average the other "
			"tensors too, so the job stops; use PyTorch's optimizers (foreach or fused), or train "
			"unsynchronised with DDP_SYNC=off",
			L->kname ? L->kname : "?", a->param, b->alloc_id);
	size_t es = ddp_dtype_size(t);
	if (!es)
		return fail(g, DDP_ERR_UNSUPPORTED,
			    "libddp: cannot tell the element type of the gradient passed as parameter %u of kernel %s "
			    "(%llu bytes); set DDP_GRAD_DTYPE=f32|f16|bf16 (never reduced as guessed bytes)",
			    a->param, L->kname ? L->kname : "?", (unsigned long long)b->size);
	const char *w = wlog_writer(g, b->alloc_id, b->base, b->base + b->size);
	b->role = (uint8_t)role;
	g->gen++;
	b->dtype = (uint8_t)t;
	b->count = b->size / es;
	b->size = b->count * es;
	b->dirty = 1;
	b->evidence = (uint8_t)evidence;
	b->order = g->ngrad_order++;
	set_label(b, L, a);
	snprintf(b->writer, sizeof b->writer, "%s", w ? w : "?");
	if (role == DDP_GR_CAND) {
		snprintf(b->reader, sizeof b->reader, "%.39s", L->kname ? L->kname : "?");
		DDP_INFO(GRAD,
			 "candidate %s: %llu bytes at +%llu of allocation #%u (%llu bytes), %s x %llu; read by "
			 "reader %s (%s), written by %s; averaged here, a gradient only if an optimizer launch of "
			 "this step reads it",
			 b->label, (unsigned long long)b->size, (unsigned long long)(b->base - b->alloc_base),
			 b->alloc_id, (unsigned long long)b->alloc_size, ddp_dtype_name(t),
			 (unsigned long long)b->count, b->reader,
			 ddp_grad_evidence_name((enum ddp_grad_evidence)evidence), b->writer);
		return DDP_OK;
	}
	g->ngrad++;
	g->grads_found++;
	b->confirmed = 1;
	snprintf(b->paired, sizeof b->paired, "%s", paired ? paired : "");
	if (b->named && g->steps_done > 0) { /* new addresses every step: not news */
		DDP_DEBUG(GRAD, "gradient #%u: %s, %llu bytes at 0x%llx", b->order, b->label,
			  (unsigned long long)b->size, (unsigned long long)b->base);
		return DDP_OK;
	}
	DDP_INFO(GRAD,
		 "gradient #%u: %s, %llu bytes at 0x%llx (+%llu of allocation #%u, %llu bytes), %s x %llu; "
		 "read by %s (%s%s%s), paired with %s, written by %s",
		 b->order, b->label, (unsigned long long)b->size, (unsigned long long)b->base,
		 (unsigned long long)(b->base - b->alloc_base), b->alloc_id,
		 (unsigned long long)b->alloc_size, ddp_dtype_name(t), (unsigned long long)b->count,
		 L->kname ? L->kname : "?", ddp_grad_evidence_name((enum ddp_grad_evidence)evidence),
		 b->reader[0] ? "; revealed by reader " : "", b->reader, b->paired[0] ? b->paired : "?",
		 b->writer);
	return DDP_OK;
}

static void make_param(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
		       struct ddp_grad_buf *b, int evidence)
{
	b->role = DDP_GR_PARAM;
	b->dirty = 0;
	b->evidence = (uint8_t)evidence;
	b->order = g->nparam_order++;
	set_label(b, L, a);
	DDP_INFO(GRAD, "parameter/state #%u: %s, %llu bytes at +%llu of allocation #%u; written by %s (%s)",
		 b->order, b->label, (unsigned long long)b->size,
		 (unsigned long long)(b->base - b->alloc_base), b->alloc_id, L->kname ? L->kname : "?",
		 ddp_grad_evidence_name((enum ddp_grad_evidence)evidence));
}

/* Runs the launch once on snapshots of its allocations to see which ranges
 * it writes, then puts every allocation back.  changed[i] = 1 for args
 * whose range changed; a change in an allocation outside every range of
 * the launch widens those ranges (lo[i]/hi[i]) to cover it. */
static ddp_result calibrate(struct ddp_grad *g, const struct ddp_grad_launch *L, uint32_t n, uint8_t *changed,
			    uint64_t *lo, uint64_t *hi)
{
	void **before = calloc(n, sizeof *before);
	unsigned char *after = NULL;
	uint64_t maxsz = 0;
	ddp_result rc = DDP_OK;

	if (!before)
		return fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
	for (uint32_t i = 0; i < n; i++) {
		int dup = 0;
		for (uint32_t j = 0; j < i; j++)
			dup |= L->args[j].base == L->args[i].base;
		if (dup)
			continue;
		if (L->args[i].size > maxsz)
			maxsz = L->args[i].size;
		if (!(before[i] = malloc(L->args[i].size))) {
			rc = fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
			goto out_free;
		}
		DDP_CHECK_GOTO(g->ops.read(g->ops.ctx, L->args[i].base, before[i], L->args[i].size, L->stream),
			       rc, out_free);
	}
	if (!(after = malloc(maxsz ? maxsz : 1))) {
		rc = fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
		goto out_free;
	}
	DDP_CHECK_GOTO(g->ops.relaunch(g->ops.ctx, L->launch_ctx), rc, out_free);
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (!before[i])
			continue;
		DDP_CHECK_GOTO(g->ops.read(g->ops.ctx, a->base, after, a->size, L->stream), rc, out_free);
		const unsigned char *b0 = before[i];
		uint64_t first = a->size, last = 0;
		for (uint64_t k = 0; k < a->size; k++)
			if (b0[k] != after[k]) {
				if (first == a->size)
					first = k;
				last = k + 1;
			}
		if (first == a->size)
			continue;
		int covered = 0;
		for (uint32_t j = i; j < n; j++) {
			if (L->args[j].base != a->base)
				continue;
			uint64_t l = lo[j] - a->base, h = hi[j] - a->base;
			/* the range changed where it overlaps the changed bytes */
			for (uint64_t k = l > first ? l : first; k < h && k < last; k++)
				if (b0[k] != after[k]) {
					changed[j] = 1;
					break;
				}
			covered |= l <= first && last <= h;
		}
		if (!covered) /* written beyond the ranges the launch's counts bound */
			for (uint32_t j = i; j < n; j++)
				if (L->args[j].base == a->base && changed[j]) {
					if (a->base + first < lo[j])
						lo[j] = a->base + first;
					hi[j] = a->base + a->size;
				}
		DDP_CHECK_GOTO(g->ops.write(g->ops.ctx, a->base, before[i], a->size, L->stream), rc, out_free);
	}
	DDP_INFO(GRAD, "calibrated %s: ran the launch once on copies to see which ranges it writes",
		 L->kname ? L->kname : "?");
out_free:
	free(after);
	for (uint32_t i = 0; i < n; i++)
		free(before[i]);
	free(before);
	if (rc != DDP_OK && !g->err[0])
		fail(g, rc, "libddp: calibration of %s failed (%s)", L->kname ? L->kname : "?",
		     ddp_strerror(rc));
	return rc;
}

/* A non-optimizer launch may write [lo, hi) (which may reach beyond b) of
 * b: dirty, and it is the last writer; the overlap layer learns the
 * written extent and how it is known (ops.written; bound: enum
 * ddp_grad_bound). */
static void mark_written(struct ddp_grad *g, struct ddp_grad_buf *b, const struct ddp_grad_launch *L,
			 uint64_t lo, uint64_t hi, uint8_t bound)
{
	b->dirty = 1;
	b->wseq = L->seq;
	b->wkid = L->kid;
	b->writes++;
	if (g->ops.written)
		g->ops.written(g->ops.ctx, b, L, lo, hi, bound);
}

static ddp_result begin_update(struct ddp_grad *g, const struct ddp_grad_launch *L);
static void absorb(struct ddp_grad *g, struct ddp_grad_buf *b, int role);

/* ---- the update found from the data flow (ddp_flow.h)
 *
 * For launches that name no optimizer (generic kernels shared by forward,
 * backward and the update).  Per step:
 * - a PARAMETER is a whole allocation the launches read and none wrote
 *   before the update (its bytes came from the host), which the update
 *   then rewrites;
 * - the update's first launch for a tensor (the CUT) is an elementwise
 *   launch (every argument one bounded range of one byte extent) that
 *   touches a parameter and a same-sized whole allocation a launch of this
 *   step wrote: that one is the GRADIENT (darknet's
 *   axpy(-decay*batch, w, dw) before axpy(lr/batch, dw, w));
 * - at the cut, every dirty gradient is averaged and a step begins; the
 *   launches that follow until a launch reads a parameter the update wrote
 *   (the next forward) are the update: their writes of the gradients it
 *   averaged (scal(momentum, dw), fill(0, dw)) leave them clean, and the
 *   ranges they write are optimizer state when the optimizer kernel reads
 *   them (m, v formed by scal/axpy/mul before adam_kernel);
 * - from step 2 on, a launch of a flow update phase that is not one of the
 *   update's launches learned in step 1 ends the phase. */

/* Flow cuts are looked for while no update is known, and in programs whose
 * update the flow found: an update already found by the other rules (a
 * named optimizer, PyTorch's kernels) keeps them. */
static int flow_applies(const struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	return !L->explicit_ranges && !L->truncated && L->kclass == DDP_GK_OTHER && L->nargs > 0 &&
	       (g->steps == 0 || ddp_flow_ncuts(g->flow) > 0);
}

static uint64_t flow_key(const struct ddp_grad_launch *L)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ L->kid;
	for (uint32_t i = 0; i < L->nargs; i++) {
		uint64_t lo, hi;
		arg_range(&L->args[i], &lo, &hi);
		uint64_t v[3] = { L->args[i].alloc_id, lo, hi };
		for (int k = 0; k < 3; k++) {
			h ^= v[k];
			h *= 0x100000001b3ULL;
			h ^= h >> 29;
		}
	}
	return h;
}

/* Every argument a bounded range of one byte extent, none inside a struct. */
static int flow_elementwise(const struct ddp_grad_launch *L)
{
	uint64_t e = 0;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		if (a->in_struct || a->bounded == DDP_GB_NONE)
			return 0;
		arg_range(a, &lo, &hi);
		if (e && hi - lo != e)
			return 0;
		e = hi - lo;
	}
	return e != 0;
}

static int flow_whole(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi)
{
	arg_range(a, lo, hi);
	return *lo == a->base && *hi == a->base + a->size;
}

/* Is L a cut?  *pi: the parameter's argument, *qi: the gradient's. */
static int flow_find_cut(struct ddp_grad *g, const struct ddp_grad_launch *L, uint32_t *pi, uint32_t *qi)
{
	if (!flow_elementwise(L))
		return 0;
	for (uint32_t p = 0; p < L->nargs; p++) {
		const struct ddp_grad_arg *a = &L->args[p];
		uint64_t plo, phi;
		if (!flow_whole(a, &plo, &phi))
			continue;
		struct alloc_ix *x = ix_find(g, a->base, a->alloc_id);
		int is_p = rec_exact(g, x, plo, phi, M(DDP_GR_PARAM)) != NULL;
		uint64_t pread = ddp_flow_first_read(g->flow, a->alloc_id, plo, phi);
		if (!is_p && g->steps_done == 0)
			is_p = !rec_overlap(g, x, plo, phi, M(DDP_GR_GRAD) | M(DDP_GR_CAND) | M(DDP_GR_DERIVED),
					    &(uint32_t){ 0 }) &&
			       pread && !ddp_flow_last_write(g->flow, a->alloc_id, plo, phi);
		if (!is_p)
			continue;
		for (uint32_t q = 0; q < L->nargs; q++) {
			const struct ddp_grad_arg *b = &L->args[q];
			uint64_t qlo, qhi;
			if (q == p || b->alloc_id == a->alloc_id || !flow_whole(b, &qlo, &qhi) ||
			    qhi - qlo != phi - plo)
				continue;
			struct alloc_ix *y = ix_find(g, b->base, b->alloc_id);
			int is_g = rec_exact(g, y, qlo, qhi, M(DDP_GR_GRAD)) != NULL;
			if (!is_g && g->steps_done == 0)
				is_g = !rec_overlap(g, y, qlo, qhi,
						    M(DDP_GR_PARAM) | M(DDP_GR_DERIVED) | M(DDP_GR_OTHER),
						    &(uint32_t){ 0 }) &&
				       !integer_arg(b) && ddp_dtype_size(grad_dtype(g, L, b)) &&
				       /* written by a launch AFTER the parameter was first
					* read (backward after forward), never by the
					* launch that read it (a forward's output) */
				       ddp_flow_last_write(g->flow, b->alloc_id, qlo, qhi) > pread && pread;
			if (is_g) {
				*pi = p;
				*qi = q;
				return 1;
			}
		}
	}
	return 0;
}

/* Does L touch a parameter the open update phase wrote (the next forward)? */
static int flow_reads_updated(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		arg_range(a, &lo, &hi);
		struct alloc_ix *x = ix_find(g, a->base, a->alloc_id);
		struct ddp_grad_buf *b;
		for (uint32_t pos = 0; (b = rec_overlap(g, x, lo, hi, M(DDP_GR_PARAM), &pos));)
			if (b->evidence != DDP_GE_FLOW_STATE &&
			    ddp_flow_upd_written(g->flow, b->alloc_id, b->base, b->base + b->size))
				return 1;
	}
	return 0;
}

/* L is a cut: learn its parameter and gradient, begin the step, broadcast
 * the parameter before its first update, average every dirty gradient. */
static ddp_result flow_cut(struct ddp_grad *g, const struct ddp_grad_launch *L, uint32_t pi, uint32_t qi,
			   uint64_t key)
{
	const struct ddp_grad_arg *pa = &L->args[pi], *qa = &L->args[qi];
	uint64_t plo, phi, qlo, qhi;
	arg_range(pa, &plo, &phi);
	arg_range(qa, &qlo, &qhi);
	struct ddp_grad_buf *p = rec_exact(g, ix_find(g, pa->base, pa->alloc_id), plo, phi, M(DDP_GR_PARAM));
	if (!p) {
		if (!(p = rec_new(g, pa, plo, phi)))
			return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		absorb(g, p, DDP_GR_PARAM);
		make_param(g, L, pa, p, DDP_GE_FLOW_PARAM);
	}
	struct ddp_grad_buf *q = rec_exact(g, ix_find(g, qa->base, qa->alloc_id), qlo, qhi, M(DDP_GR_GRAD));
	if (!q) {
		if (!(q = rec_new(g, qa, qlo, qhi)))
			return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		absorb(g, q, DDP_GR_GRAD);
		DDP_CHECK(make_grad(g, L, qa, q, DDP_GR_GRAD, DDP_GE_FLOW_GRAD, p->label));
	}
	DDP_CHECK(begin_update(g, L));
	g->flow_update = 1;
	if (!p->bcast_done) {
		struct ddp_grad_buf *one[1] = { p };
		ddp_result rc = g->ops.broadcast(g->ops.ctx, one, 1, L->stream);
		if (rc != DDP_OK)
			return g->err[0] ? rc : fail(g, rc, "parameter broadcast failed");
		p->bcast_done = 1;
	}
	for (size_t i = 0; i < g->nbufs; i++) {
		struct ddp_grad_buf *b = g->bufs[i];
		if (b->role == DDP_GR_GRAD && b->dirty && !b->named)
			b->flow_red = g->steps;
	}
	q->flow_red = g->steps;
	DDP_CHECK(reduce_dirty(g, L->stream));
	if (g->steps_done == 0)
		DDP_CHECK(ddp_flow_learn(g->flow, key, DDP_FLOW_CUT));
	if (!g->ops.opt_reads)
		return DDP_OK;
	/* the data-parallel invariant: what the cut reads */
	struct ddp_grad_read rd[2] = {
		{ plo, phi - plo, pa->param, pa->word, DDP_GR_PARAM, p->label },
		{ qlo, qhi - qlo, qa->param, qa->word, DDP_GR_GRAD, q->label },
	};
	return g->ops.opt_reads(g->ops.ctx, L, g->steps, rd, 2);
}

/* The data-flow part of a launch that names no optimizer: *upd = 1 when it
 * is one of the update's launches (a cut or one that follows it). */
static ddp_result flow_other(struct ddp_grad *g, const struct ddp_grad_launch *L, int *upd)
{
	uint32_t pi, qi;
	uint64_t key = flow_key(L);
	*upd = 0;
	if (flow_find_cut(g, L, &pi, &qi)) {
		DDP_CHECK(flow_cut(g, L, pi, qi, key));
		*upd = 1;
	} else if (g->in_update && g->flow_update) {
		if (g->steps_done == 0)
			*upd = !flow_reads_updated(g, L);
		else
			*upd = ddp_flow_lookup(g->flow, key) != DDP_FLOW_NONE;
		if (!*upd)
			DDP_CHECK(end_update(g));
		else if (g->steps_done == 0)
			DDP_CHECK(ddp_flow_learn(g->flow, key, DDP_FLOW_UPDATE));
	}
	return DDP_OK;
}

/* After L: its writes, when it is an update launch; its accesses, in step 1. */
static ddp_result flow_note(struct ddp_grad *g, const struct ddp_grad_launch *L, int upd)
{
	g->flow_seq++;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		arg_range(a, &lo, &hi);
		int wrote = a->access != DDP_GA_READ;
		if (upd && wrote)
			DDP_CHECK(ddp_flow_upd_write(g->flow, a->alloc_id, lo, hi));
		if (g->steps_done == 0)
			DDP_CHECK(ddp_flow_note(g->flow, a->alloc_id, lo, hi, wrote, g->flow_seq));
	}
	return DDP_OK;
}

/* Does L point at a parameter or state range that the open update phase of
 * PyTorch's explicit launches rewrote?  Then it is the next forward (or
 * what follows the update), and the update phase is over.  A gradient
 * written by the backward marks the end too, but under cudaMallocAsync (or
 * set_to_none with the caching allocator's addresses moving) the next
 * step's gradients are new ranges no rule knows yet, and an update whose
 * first launch differs between step 1 and the next (SGD's momentum: clone
 * in step 1, mul_ after) never meets its opener again.  Only a bounded
 * extent or the pointer itself counts: an undecoded pointer taken to its
 * allocation's end would cover every tensor after it. */
static int x_next_forward(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (!g->in_update || g->flow_update)
		return 0;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		struct alloc_ix *x = ix_find(g, a->base, a->alloc_id);
		if (!x)
			continue;
		arg_range(a, &lo, &hi);
		if (a->bounded != DDP_GB_EXACT && a->bounded != DDP_GB_MEASURED)
			hi = lo + 1;
		struct ddp_grad_buf *b;
		for (uint32_t pos = 0; (b = rec_overlap(g, x, lo, hi, M(DDP_GR_PARAM), &pos));)
			if (b->xsrc && b->opt_phase == g->steps)
				return 1;
	}
	return 0;
}

static ddp_result on_other(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (x_next_forward(g, L))
		DDP_CHECK(end_update(g));
	int wrote_g = 0, upd = 0, flow = flow_applies(g, L) && !g->debug_avg_state;
	if (flow)
		DDP_CHECK(flow_other(g, L, &upd));
	if (L->truncated) {
		/* arguments beyond the decoder's capacity may write gradients: take
		 * every gradient as written (re-averaging an average is a no-op) */
		for (size_t i = 0; i < g->nbufs; i++)
			if (g->bufs[i]->role == DDP_GR_GRAD || g->bufs[i]->role == DDP_GR_CAND)
				mark_written(g, g->bufs[i], L, g->bufs[i]->alloc_base,
					     g->bufs[i]->alloc_base + g->bufs[i]->alloc_size, DDP_GB_EXACT);
		wrote_g = 1;
	}
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		if (a->access == DDP_GA_READ)
			continue;
		arg_range(a, &lo, &hi);
		if (g->steps_done == 0 && g->nwlog < WLOG_MAX) {
			if (!g->wlog && !(g->wlog = malloc(WLOG_MAX * sizeof *g->wlog)))
				return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			struct wlog_ent *w = &g->wlog[g->nwlog++];
			w->alloc_id = a->alloc_id;
			w->lo = lo;
			w->hi = hi;
			snprintf(w->kname, sizeof w->kname, "%s", L->kname ? L->kname : "?");
		}
		struct alloc_ix *x = ix_find(g, a->base, a->alloc_id);
		if (!x)
			continue;
		struct ddp_grad_buf *b;
		for (uint32_t pos = 0; (b = rec_overlap(g, x, lo, hi, M(DDP_GR_GRAD) | M(DDP_GR_CAND), &pos));) {
			/* a named gradient is averaged again each epoch anyway; a
			 * write not bounded to a tensor (a struct's pointer taken
			 * to its allocation's end) does not make it dirty (it
			 * covers every tensor after it), but it still counts as
			 * a write for the early reductions (ddp_overlap.c) */
			/* the update rewrites what it averaged the same way on every
			 * rank (scal(momentum, dw), fill(0, dw)): still clean */
			if (upd && g->in_update && g->flow_update && b->flow_red == g->steps)
				continue;
			uint8_t was_dirty = b->dirty;
			mark_written(g, b, L, lo, hi,
				     a->bounded); /* the last writer, and early reductions before it are stale */
			if (b->named && !a->bounded && !L->explicit_ranges)
				b->dirty = was_dirty;
			wrote_g |= b->role == DDP_GR_GRAD;
		}
	}
	if (flow)
		DDP_CHECK(flow_note(g, L, upd));
	/* the update phase ends when the next step's forward/backward work
	 * writes a gradient (or at once while no gradient is known); a flow
	 * update phase ends in flow_other */
	if (g->in_update && !g->flow_update && (wrote_g || g->ngrad == 0))
		return end_update(g);
	return DDP_OK;
}

static ddp_result on_reader(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	int need = 0;
	DDP_CHECK(end_update(g));
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		arg_range(a, &lo, &hi);
		struct alloc_ix *x = ix_find(g, a->base, a->alloc_id);
		struct ddp_grad_buf *b;
		int known = 0;
		for (uint32_t pos = 0;
		     (b = rec_overlap(g, x, lo, hi,
				      M(DDP_GR_GRAD) | M(DDP_GR_CAND) | M(DDP_GR_PARAM) | M(DDP_GR_DERIVED),
				      &pos));) {
			if (b->role == DDP_GR_GRAD || b->role == DDP_GR_CAND)
				need |= b->dirty;
			known = 1;
		}
		/* the first step: the reader reveals candidates (its inputs) and
		 * outputs (written by a const-correct reader: never gradients) */
		if (known || g->steps_done > 0 || integer_arg(a))
			continue;
		int output = L->const_correct && !a->in_struct && a->access == DDP_GA_WRITE;
		/* an input of unknown element type (an untyped kernel's flag or
		 * scalar) cannot be averaged: no candidate.  Were it a gradient,
		 * the optimizer finds it and asks for DDP_GRAD_DTYPE, and the
		 * invariant check stops a step that used it unaveraged. */
		if (!output && !ddp_dtype_size(grad_dtype(g, L, a))) {
			DDP_DEBUG(GRAD, "reader %s argument %u: element type unknown, not a gradient candidate",
				  L->kname ? L->kname : "?", a->param);
			continue;
		}
		if (!(b = rec_new(g, a, lo, hi)))
			return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		if (output) {
			b->role = DDP_GR_DERIVED;
			b->evidence = DDP_GE_READER;
			set_label(b, L, a);
			snprintf(b->reader, sizeof b->reader, "%.39s", L->kname ? L->kname : "?");
			DDP_INFO(GRAD,
				 "reader output %s: %llu bytes at +%llu of allocation #%u, written by reader %s "
				 "(non-const in its signature): never a gradient",
				 b->label, (unsigned long long)b->size,
				 (unsigned long long)(b->base - b->alloc_base), b->alloc_id, b->reader);
			continue;
		}
		DDP_CHECK(make_grad(g, L, a, b, DDP_GR_CAND,
				    a->access == DDP_GA_READ ? DDP_GE_SIG_CONST : DDP_GE_READER, NULL));
		need = 1;
	}
	return need ? reduce_dirty(g, L->stream) : DDP_OK;
}

/* Does a read-only range of `bytes` with gradient type t pair with a
 * written range of the same launch (same element count in fp32 master
 * weights, in 2-byte params, or the same bytes)?  Returns its index+1. */
static uint32_t pair_index(const struct ddp_grad *g, const struct ddp_grad_launch *L,
			   const struct ddp_grad_arg *a, uint64_t bytes, uint32_t n, const uint8_t *is_param,
			   const uint64_t *lo, const uint64_t *hi)
{
	enum ddp_dtype t = grad_dtype(g, L, a);
	size_t es = ddp_dtype_size(t);
	uint64_t count = es ? bytes / es : 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!is_param[i])
			continue;
		uint64_t ps = hi[i] - lo[i];
		/* unknown dtype: same bytes, or half (f16/bf16 against fp32 master
		 * weights); make_grad then refuses with the setting to use */
		if (es ? (ps == count * 4 || ps == count * 2 || ps == bytes) : (ps == bytes || ps == 2 * bytes))
			return i + 1;
	}
	return 0;
}

/* b (new, not yet given a role) is about to become `role`: records of that
 * role it overlaps (ranges an unbounded launch took to the allocation's end,
 * then a wider one) are merged into it, so no byte is averaged or
 * broadcast twice per step.  A parameter that grows is broadcast again. */
static void absorb(struct ddp_grad *g, struct ddp_grad_buf *b, int role)
{
	g->gen++;
	struct alloc_ix *x = ix_find(g, b->alloc_base, b->alloc_id);
	struct ddp_grad_buf *o;
	for (uint32_t pos = 0; (o = rec_overlap(g, x, b->base, b->base + b->size, M(role), &pos));) {
		if (o == b)
			continue;
		uint64_t lo = o->base < b->base ? o->base : b->base;
		uint64_t hi = o->base + o->size > b->base + b->size ? o->base + o->size : b->base + b->size;
		b->base = lo;
		b->size = hi - lo;
		for (uint32_t i = 0; i < x->n; i++)
			if (g->bufs[x->rec[i]] == b) {
				ix_place(g, x, i);
				break;
			}
		b->dirty |= o->dirty;
		DDP_INFO(GRAD, "%s %s merges into a wider range (%llu bytes at +%llu)",
			 ddp_grad_role_name(role), o->label, (unsigned long long)b->size,
			 (unsigned long long)(b->base - b->alloc_base));
		if (role == DDP_GR_GRAD && g->ngrad)
			g->ngrad--;
		buf_reset(g, o);
		pos = 0; /* b moved in the index: search again (o is dead now) */
	}
}

/* An optimizer launch outside an update phase begins one (a step). */
static ddp_result begin_update(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (g->in_update)
		return DDP_OK;
	g->in_update = 1;
	g->steps++;
	ddp_flow_upd_clear(g->flow);
	g->opener_set = L->explicit_ranges && L->nargs;
	g->opener_kid = L->kid;
	g->opener_ptr = L->nargs ? L->args[0].ptr : 0;
	if (g->ops.step_begin)
		return g->ops.step_begin(g->ops.ctx, g->steps);
	return DDP_OK;
}

static ddp_result on_optimizer(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	static uint8_t is_param[GRAD_MAX_ARGS], is_grad[GRAD_MAX_ARGS], changed[GRAD_MAX_ARGS],
		need_cal[GRAD_MAX_ARGS], ro[GRAD_MAX_ARGS], ev[GRAD_MAX_ARGS];
	static uint64_t lo[GRAD_MAX_ARGS], hi[GRAD_MAX_ARGS];
	static struct ddp_grad_buf *rec[GRAD_MAX_ARGS], *bc[GRAD_MAX_ARGS];
	static struct ddp_grad_read rd[GRAD_MAX_ARGS];
	uint32_t n = L->nargs < GRAD_MAX_ARGS ? L->nargs : GRAD_MAX_ARGS;
	int any_cal = 0, need = 0;
	size_t nbc = 0, nrd = 0;
	ddp_result rc;

	DDP_CHECK(begin_update(g, L));
	memset(is_param, 0, n);
	memset(is_grad, 0, n);
	memset(changed, 0, n);
	memset(need_cal, 0, n);
	memset(ro, 0, n);
	memset(ev, 0, n);
	/* what is known already, what the signature says, what needs calibration */
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		arg_range(a, &lo[i], &hi[i]);
		struct alloc_ix *x = ix_find(g, a->base, a->alloc_id);
		rec[i] = rec_exact(g, x, lo[i], hi[i], M(DDP_GR_GRAD) | M(DDP_GR_PARAM) | M(DDP_GR_OTHER));
		if (!rec[i]) /* a tensor of a range known whole (an earlier unbounded launch) */
			rec[i] = rec_within(g, x, lo[i], hi[i], M(DDP_GR_GRAD) | M(DDP_GR_PARAM));
		if (rec[i]) {
			is_param[i] = rec[i]->role == DDP_GR_PARAM;
			is_grad[i] = rec[i]->role == DDP_GR_GRAD;
			continue;
		}
		if (rec_within(g, x, lo[i], hi[i], M(DDP_GR_DERIVED)))
			continue; /* a reader's output: never a gradient */
		int cand = rec_within(g, x, lo[i], hi[i], M(DDP_GR_CAND)) != NULL;
		if (!a->in_struct && a->access == DDP_GA_READ && g->flow_update && !g->debug_avg_state &&
		    ddp_flow_upd_written(g->flow, a->alloc_id, lo[i], hi[i])) {
			/* formed by the update's own launches before this one
			 * (m = b1*m + (1-b1)*g by scal and axpy): optimizer state,
			 * never a gradient */
			is_param[i] = 1;
			ev[i] = DDP_GE_FLOW_STATE;
		} else if (!a->in_struct && a->access == DDP_GA_READ) {
			ro[i] = 1;
			ev[i] = DDP_GE_SIG_CONST;
		} else if (!a->in_struct && a->access == DDP_GA_WRITE && L->const_correct && !cand) {
			is_param[i] = 1;
			ev[i] = DDP_GE_SIG_WRITE;
		} else {
			/* untyped, inside a struct, a kernel without one const
			 * pointer, or "writes" against a reader's evidence */
			need_cal[i] = 1;
			any_cal = 1;
		}
	}
	if (any_cal) {
		if (!g->ops.relaunch)
			return fail(g, DDP_ERR_UNSUPPORTED,
				    "libddp: %s passes untyped buffers and cannot be calibrated",
				    L->kname ? L->kname : "?");
		DDP_CHECK(calibrate(g, L, n, changed, lo, hi));
		for (uint32_t i = 0; i < n; i++) {
			if (!need_cal[i])
				continue;
			if (changed[i]) {
				is_param[i] = 1;
				ev[i] = DDP_GE_CAL_CHANGED;
			} else {
				ro[i] = 1;
				ev[i] = DDP_GE_CAL_SAME;
			}
		}
	}
	/* gradients: read-only, large, paired with a written range */
	uint32_t pair[GRAD_MAX_ARGS] = { 0 };
	for (uint32_t i = 0; i < n; i++)
		if (ro[i] && !integer_arg(&L->args[i]) &&
		    (pair[i] = pair_index(g, L, &L->args[i], hi[i] - lo[i], n, is_param, lo, hi)))
			is_grad[i] = 1;
	/* learn (written ranges first: a gradient names the range it pairs
	 * with), and collect first-time parameters for the broadcast */
	for (uint32_t k = 0; k < 2 * n; k++) {
		uint32_t i = k % n;
		if ((k < n) == (is_grad[i] && !rec[i]))
			continue;
		const struct ddp_grad_arg *a = &L->args[i];
		struct ddp_grad_buf *b = rec[i];
		if (!b && (is_param[i] || is_grad[i] || need_cal[i])) {
			/* a range seen twice in this launch is one record */
			for (uint32_t j = 0; j < i && !b; j++)
				if (rec[j] && L->args[j].alloc_id == a->alloc_id && lo[j] == lo[i] &&
				    hi[j] == hi[i])
					b = rec[j];
			if (!b && !(b = rec_new(g, a, lo[i], hi[i])))
				return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			rec[i] = b;
			if (b->role == DDP_GR_NONE && (is_param[i] || is_grad[i]))
				absorb(g, b, is_param[i] ? DDP_GR_PARAM : DDP_GR_GRAD);
			if (b->role == DDP_GR_NONE) {
				if (is_param[i]) {
					make_param(g, L, a, b, ev[i]);
				} else if (is_grad[i]) {
					struct alloc_ix *x = ix_find(g, a->base, a->alloc_id);
					struct ddp_grad_buf *c = rec_within(g, x, lo[i], hi[i], M(DDP_GR_CAND));
					if (c)
						snprintf(b->reader, sizeof b->reader, "%s", c->reader);
					DDP_CHECK(make_grad(g, L, a, b, DDP_GR_GRAD, ev[i],
							    rec[pair[i] - 1] ? rec[pair[i] - 1]->label : NULL));
					/* averaged with the candidate it lies in, and not
					 * written since: clean */
					if (c && !c->dirty)
						b->dirty = 0;
				} else {
					/* untyped and neither: remembered, not calibrated again */
					b->role = DDP_GR_OTHER;
					b->evidence = ev[i];
					set_label(b, L, a);
				}
			}
		}
		if (!b)
			continue;
		if (b->role == DDP_GR_PARAM && !b->bcast_done) {
			int dup = 0;
			for (size_t j = 0; j < nbc; j++)
				dup |= bc[j] == b;
			if (!dup)
				bc[nbc++] = b;
		} else if (b->role == DDP_GR_GRAD) {
			need |= b->dirty;
		}
	}
	if (nbc) {
		qsort(bc, nbc, sizeof *bc, cmp_order);
		rc = g->ops.broadcast(g->ops.ctx, bc, nbc, L->stream);
		if (rc != DDP_OK)
			return g->err[0] ? rc : fail(g, rc, "parameter broadcast failed");
		for (size_t j = 0; j < nbc; j++)
			bc[j]->bcast_done = 1;
	}
	if (need)
		DDP_CHECK(reduce_dirty(g, L->stream));
	for (uint32_t i = 0; i < n && g->flow_update; i++)
		if (is_param[i] && ev[i] != DDP_GE_FLOW_STATE)
			DDP_CHECK(ddp_flow_upd_write(g->flow, L->args[i].alloc_id, lo[i], hi[i]));
	if (!g->ops.opt_reads)
		return DDP_OK;
	/* what this launch reads, for the data-parallel invariant */
	for (uint32_t i = 0; i < n; i++) {
		int dup = 0;
		for (size_t j = 0; j < nrd; j++)
			dup |= rd[j].ptr == lo[i] && rd[j].bytes == hi[i] - lo[i];
		if (dup)
			continue;
		rd[nrd].ptr = lo[i];
		rd[nrd].bytes = hi[i] - lo[i];
		rd[nrd].param = L->args[i].param;
		rd[nrd].word = L->args[i].word;
		rd[nrd].role = rec[i] ? rec[i]->role : DDP_GR_NONE;
		rd[nrd].label = rec[i] ? rec[i]->label : NULL;
		nrd++;
	}
	return g->ops.opt_reads(g->ops.ctx, L, g->steps, rd, nrd);
}

/* ---- explicit launches (ddp_grad.h: "Explicit launches") */

static ddp_result x_scratch(struct ddp_grad *g, size_t n)
{
	struct ddp_grad_buf **r = ddp_array_grow(g->xrec, &g->xcap_rec, n, sizeof *r, 256);
	if (r)
		g->xrec = r;
	struct ddp_grad_buf **l = ddp_array_grow(g->xlist, &g->xcap_list, n, sizeof *l, 256);
	if (l)
		g->xlist = l;
	struct ddp_grad_read *d = ddp_array_grow(g->xrd, &g->xcap_rd, n, sizeof *d, 256);
	if (d)
		g->xrd = d;
	if (!r || !l || !d)
		return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	return DDP_OK;
}

#define LIVE_ROLES (M(DDP_GR_GRAD) | M(DDP_GR_PARAM) | M(DDP_GR_OTHER) | M(DDP_GR_CAND) | M(DDP_GR_DERIVED))

/* The record of exactly a's range with a role in mask, or NULL (never
 * creates one). */
static struct ddp_grad_buf *x_find(struct ddp_grad *g, const struct ddp_grad_arg *a, unsigned mask)
{
	uint64_t lo, hi;
	arg_range(a, &lo, &hi);
	return rec_exact(g, ix_find(g, a->base, a->alloc_id), lo, hi, mask);
}

/* The record of exactly a's range (created with role NONE when new).
 * Records it overlaps describe what these bytes held before (the caching
 * allocator gives freed bytes to new tensors): they are forgotten, unless
 * this launch uses them too. */
static struct ddp_grad_buf *x_record(struct ddp_grad *g, const struct ddp_grad_arg *a, uint64_t stamp)
{
	uint64_t lo, hi;
	arg_range(a, &lo, &hi);
	struct alloc_ix *x = ix_get(g, a->base, a->alloc_id);
	if (!x)
		return NULL;
	struct ddp_grad_buf *b = rec_exact(g, x, lo, hi, LIVE_ROLES), *o;
	if (!b) {
		for (uint32_t pos = 0; (o = rec_overlap(g, x, lo, hi, LIVE_ROLES, &pos));) {
			if (o->xstamp == stamp)
				continue;
			if (o->role == DDP_GR_GRAD && g->ngrad)
				g->ngrad--;
			buf_reset(g, o);
		}
		if (!(b = rec_exact(g, x, lo, hi, M(DDP_GR_NONE))) && !(b = rec_new(g, a, lo, hi)))
			return NULL;
		/* a forgotten record keeps only its range */
		b->xsrc = 1;
		b->alloc_base = a->base;
		b->alloc_size = a->size;
		b->alloc_id = a->alloc_id;
		b->bounded = DDP_GB_EXACT; /* a tensor's own extent */
	}
	return b;
}

/* Does the named gradient b need averaging before its consumer? */
static int x_needs(const struct ddp_grad *g, const struct ddp_grad_buf *b)
{
	return b->dirty || b->red_ep != g->epoch + 1;
}

static int x_par_learned(const struct ddp_grad *g, uint32_t kid, uint32_t list)
{
	for (uint32_t i = 0; i < g->nxpar; i++)
		if (g->xpar[i] == ((uint64_t)kid << 8 | list))
			return 1;
	return 0;
}

/* Of the candidate gradient lists cand (two or more) of generic foreach
 * optimizer op L, those that hold parameters, not gradients (bit mask).
 * A gradient is what this step's backward wrote; Adam's weight decay,
 * _foreach_add(grads, params, alpha=wd), reads the parameters read-only
 * beside them before any launch of the update wrote either.
 * - Step 1: a list none of whose tensors any launch of this step wrote
 *   (the step's write log), while another candidate list's tensors were
 *   written, holds bytes from before the step: parameters.  Learned as
 *   (kernel, list).  No evidence (no list written: the writers may be
 *   invisible, e.g. GEMM outputs inside TMA descriptors; or the log is
 *   full) excludes nothing.
 * - Later steps: a learned (kernel, list) whose tensors are all the
 *   parameter records the update rewrote. */
static uint32_t x_param_lists(struct ddp_grad *g, const struct ddp_grad_launch *L, uint32_t cand)
{
	uint32_t seen = 0, par = 0, miss = 0;
	if (g->steps_done == 0) {
		if (!g->wlog || g->nwlog >= WLOG_MAX)
			return 0;
		for (uint32_t i = 0; i < L->nargs; i++) {
			const struct ddp_grad_arg *a = &L->args[i];
			uint64_t lo, hi;
			if (a->tlist >= 32 || !(cand >> a->tlist & 1))
				continue;
			arg_range(a, &lo, &hi);
			if (wlog_writer(g, a->alloc_id, lo, hi))
				seen |= 1u << a->tlist;
		}
		if (!seen || seen == cand)
			return 0;
		par = cand & ~seen;
		for (uint32_t l = 0; l < 32; l++) {
			if (!(par >> l & 1) || x_par_learned(g, L->kid, l))
				continue;
			if (g->nxpar < sizeof g->xpar / sizeof g->xpar[0])
				g->xpar[g->nxpar++] = (uint64_t)L->kid << 8 | l;
			DDP_INFO(GRAD,
				 "%s: read-only list %u was written by no launch of step 1, while the launch's "
				 "other read-only lists were: parameters, not gradients",
				 L->kname ? L->kname : "?", l);
		}
		return par;
	}
	for (uint32_t l = 0; l < 32; l++)
		if ((cand >> l & 1) && x_par_learned(g, L->kid, l))
			par |= 1u << l;
	if (!par)
		return 0;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (a->tlist < 32 && (par >> a->tlist & 1) && !x_find(g, a, M(DDP_GR_PARAM)))
			miss |= 1u << a->tlist;
	}
	return par & ~miss;
}

/* The lists of L that hold gradients, as a bit mask (lists 0..31). */
static uint32_t x_grad_lists(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	uint32_t present = 0, written = 0, opt_wrote = 0, untyped = 0;
	if (L->grad_list != DDP_GRAD_NO_LIST)
		return L->grad_list < 32 ? 1u << L->grad_list : 0;
	if (L->kclass != DDP_GK_OPT)
		return 0;
	/* a generic foreach optimizer op: its read-only lists that no
	 * optimizer launch of this update phase wrote */
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (a->tlist >= 32)
			continue;
		uint32_t bit = 1u << a->tlist;
		present |= bit;
		if (a->access & DDP_GA_WRITE)
			written |= bit;
		if (!ddp_dtype_reducible(grad_dtype(g, L, a)))
			untyped |= bit;
		const struct ddp_grad_buf *b = x_find(g, a, LIVE_ROLES);
		if (b && b->opt_phase == g->steps)
			opt_wrote |= bit;
	}
	uint32_t cand = present & ~written & ~opt_wrote & ~untyped;
	/* DDP_DEBUG_AVG_STATE: the rules before the data flow (make
	 * test-torch's negative control: the parameters are averaged too) */
	if ((cand & (cand - 1)) && !g->debug_avg_state)
		cand &= ~x_param_lists(g, L, cand);
	return cand;
}

/* b (G named or not, or another role) becomes this update phase's
 * parameter or state (rw) or output (write-only). */
static void x_make_param(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
			 struct ddp_grad_buf *b)
{
	if (b->role != DDP_GR_PARAM) {
		if (b->role == DDP_GR_GRAD && g->ngrad)
			g->ngrad--;
		if (b->role != DDP_GR_NONE)
			buf_reset(g, b);
		b->role = DDP_GR_PARAM;
		b->evidence = DDP_GE_LIST_WRITE;
		b->order = g->nparam_order++;
		set_label(b, L, a);
		/* an output needs no broadcast: this launch writes all of it */
		b->bcast_done = !(a->access & DDP_GA_READ);
		if (g->steps_done == 0)
			DDP_INFO(GRAD,
				 "parameter/state #%u: %s, %llu bytes at +%llu of allocation #%u; %s by %s's "
				 "list %u",
				 b->order, b->label, (unsigned long long)b->size,
				 (unsigned long long)(b->base - b->alloc_base), b->alloc_id,
				 a->access & DDP_GA_READ ? "updated" : "written", L->kname ? L->kname : "?",
				 a->param);
	}
	b->opt_phase = g->steps;
}

/* Does reader L name a gradient it already named in this epoch?  Then an
 * iteration ended without an optimizer step the rules recognised (a
 * GradScaler's skipped step ends at amp_update_scale, but foreach=False
 * optimizers, or none at all, leave only the readers).  The tensor a
 * multi-tensor launch split across two launches (its last tensor, carried
 * into the next launch of the same kernel) is no sign of it. */
static int x_reader_again(struct ddp_grad *g, const struct ddp_grad_launch *L, uint32_t glists)
{
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (a->tlist >= 32 || !(glists >> a->tlist & 1))
			continue;
		const struct ddp_grad_buf *b = x_find(g, a, M(DDP_GR_GRAD));
		if (b && b->named && b->rkid == L->kid && b->rk_ep == g->epoch + 1 &&
		    !(i == 0 && g->last_reader_kid == L->kid && g->last_reader_rec == b))
			return 1;
	}
	return 0;
}

void ddp_grad_copied(struct ddp_grad *g, uint64_t dst, uint64_t dst_base, uint64_t dst_size, uint32_t dst_id,
		     uint64_t src, uint64_t src_base, uint64_t src_size, uint32_t src_id, uint64_t bytes)
{
	if (g->steps_done || !bytes || g->nclog >= CLOG_MAX)
		return;
	if (!g->clog && !(g->clog = malloc(CLOG_MAX * sizeof *g->clog)))
		return; /* no record: the copy is averaged as the gradient, as before */
	g->clog[g->nclog++] = (struct copy_ent){ dst, dst_base, dst_size, src, src_base, src_size, bytes, dst_id,
						 src_id };
}

/* Is a (a tensor of a gradient list, first step) exactly a copy the program
 * made in this step of a range a launch of this step wrote (torch.clone of
 * a gradient)?  Then *src is that range as an argument.  The last such
 * copy wins (a later one overwrote the bytes). */
static int x_copy_of(const struct ddp_grad *g, const struct ddp_grad_arg *a, struct ddp_grad_arg *src,
		     const struct copy_ent **ce)
{
	uint64_t lo, hi;
	arg_range(a, &lo, &hi);
	for (size_t i = g->nclog; i-- > 0;) {
		const struct copy_ent *c = &g->clog[i];
		if (c->dst_id != a->alloc_id || c->dst != lo || c->bytes != hi - lo)
			continue;
		if (!g->wlog || !wlog_writer(g, c->src_id, c->src, c->src + c->bytes))
			return 0;
		*src = *a;
		src->base = c->src_base;
		src->size = c->src_size;
		src->alloc_id = c->src_id;
		src->ptr = c->src;
		src->ext = c->bytes;
		*ce = c;
		return 1;
	}
	return 0;
}

static ddp_result on_explicit(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	uint32_t n = L->nargs;
	size_t nl = 0, nbc = 0, nrd = 0, ncp = 0;
	uint64_t stamp = ++g->xstamp_seq;
	ddp_result rc;

	DDP_CHECK(x_scratch(g, n ? n : 1));
	if (g->nclog) {
		struct copy_ent *cp = ddp_array_grow(g->xcp, &g->xcap_cp, n ? n : 1, sizeof *cp, 256);
		if (!cp)
			return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		g->xcp = cp;
	}
	if (L->kclass == DDP_GK_READER)
		DDP_CHECK(end_update(g));
	if (L->kclass == DDP_GK_OPT) {
		/* the launch that opened this update phase again: the next step */
		if (g->in_update && g->opener_set && g->opener_kid == L->kid && n &&
		    g->opener_ptr == L->args[0].ptr)
			DDP_CHECK(end_update(g));
		DDP_CHECK(begin_update(g, L));
	}
	uint32_t glists = x_grad_lists(g, L);
	if (L->kclass == DDP_GK_READER && x_reader_again(g, L, glists))
		next_epoch(g);
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		int in_glist = a->tlist < 32 && (glists >> a->tlist & 1);
		struct ddp_grad_buf *b = NULL;
		g->xrec[i] = NULL;
		struct ddp_grad_arg src;
		const struct copy_ent *ce = NULL;
		if (in_glist && L->kclass == DDP_GK_OPT && g->ops.copy && g->nclog && x_copy_of(g, a, &src, &ce)) {
			/* the update reads a copy of a gradient made in this step
			 * (SGD momentum's torch.clone(grad)): the gradient is the
			 * copy's source, averaged there; the copy is made again
			 * from the average below, and is optimizer state, equal on
			 * every rank */
			struct ddp_grad_buf *cb = x_record(g, a, stamp);
			if (!cb)
				return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			x_make_param(g, L, a, cb);
			cb->bcast_done = 1;
			cb->xstamp = stamp;
			g->xcp[ncp++] = *ce;
			DDP_INFO(GRAD,
				 "%s reads a copy (%llu bytes at 0x%llx) the program made in step 1 of 0x%llx: the "
				 "gradient is the source, averaged there; the copy is made again from the average",
				 L->kname ? L->kname : "?", (unsigned long long)ce->bytes, (unsigned long long)ce->dst,
				 (unsigned long long)ce->src);
			a = &src;
		}
		if (in_glist) {
			if (!(b = x_record(g, a, stamp)))
				return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			if (b->role != DDP_GR_GRAD || !b->named) {
				if (b->role == DDP_GR_GRAD && g->ngrad)
					g->ngrad--;
				if (b->role != DDP_GR_NONE)
					buf_reset(g, b);
				b->named = 1;
				DDP_CHECK(make_grad(g, L, a, b, DDP_GR_GRAD, DDP_GE_LIST, NULL));
				b->red_ep = 0;
			}
			b->named_ep = g->last_named_ep = g->epoch;
			if (L->kclass == DDP_GK_READER) {
				b->rkid = L->kid;
				b->rk_ep = g->epoch + 1;
				g->last_reader_kid = L->kid;
				g->last_reader_rec = b;
			}
		} else if (L->kclass == DDP_GK_OPT && (a->access & DDP_GA_WRITE)) {
			if (!(b = x_record(g, a, stamp)))
				return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			x_make_param(g, L, a, b);
			if (!b->bcast_done && b->xstamp != stamp)
				g->xlist[n - 1 - nbc++] = b; /* broadcasts fill xlist from its end */
		} else if (a->access & DDP_GA_READ) {
			/* a named gradient read outside a gradient list (a neutral
			 * consumer's input, an optimizer's extra read) */
			b = x_find(g, a, M(DDP_GR_GRAD));
			if (b && !b->named)
				b = NULL;
		}
		if (!b)
			continue;
		g->xrec[i] = b;
		if (b->role == DDP_GR_GRAD && b->xstamp != stamp && x_needs(g, b) && !gone(g, b))
			g->xlist[nl++] = b;
		b->xstamp = stamp;
	}
	if (nbc) {
		struct ddp_grad_buf **bc = &g->xlist[n - nbc];
		/* in launch order (they were stored from the end) */
		for (size_t i = 0; i < nbc / 2; i++) {
			struct ddp_grad_buf *t = bc[i];
			bc[i] = bc[nbc - 1 - i];
			bc[nbc - 1 - i] = t;
		}
		rc = g->ops.broadcast(g->ops.ctx, bc, nbc, L->stream);
		if (rc != DDP_OK)
			return g->err[0] ? rc : fail(g, rc, "parameter broadcast failed");
		for (size_t j = 0; j < nbc; j++)
			bc[j]->bcast_done = 1;
	}
	DDP_CHECK(reduce_bufs(g, g->xlist, nl, L->stream));
	for (size_t i = 0; i < ncp; i++) {
		rc = g->ops.copy(g->ops.ctx, g->xcp[i].dst, g->xcp[i].src, g->xcp[i].bytes, L->stream);
		if (rc != DDP_OK)
			return g->err[0] ? rc : fail(g, rc, "copying an averaged gradient again failed");
	}
	if (L->kclass != DDP_GK_OPT || !g->ops.opt_reads)
		return DDP_OK;
	/* what this launch reads, for the data-parallel invariant */
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		struct ddp_grad_buf *b = g->xrec[i];
		uint64_t lo, hi;
		if (!(a->access & DDP_GA_READ))
			continue;
		arg_range(a, &lo, &hi);
		struct ddp_grad_read *r = &g->xrd[nrd++];
		r->ptr = lo;
		r->bytes = hi - lo;
		r->param = a->param;
		r->word = a->word;
		r->role = b ? b->role : DDP_GR_NONE;
		r->label = b ? b->label : NULL;
	}
	return g->ops.opt_reads(g->ops.ctx, L, g->steps, g->xrd, nrd);
}

ddp_result ddp_grad_launch(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (L->boundary) {
		if (g->in_update)
			DDP_CHECK(end_update(g)); /* the next epoch with it */
		else
			next_epoch(g);
	}
	if (L->explicit_ranges && L->kclass != DDP_GK_OTHER)
		return on_explicit(g, L);
	if (L->truncated && L->kclass != DDP_GK_OTHER)
		return fail(g, DDP_ERR_UNSUPPORTED,
			    "libddp: %s kernel %s passes more buffers than libddp can decode (%u beyond the first "
			    "%u); its gradients and parameters cannot all be seen, so they cannot be averaged",
			    L->kclass == DDP_GK_OPT ? "optimizer" : "gradient-reader",
			    L->kname ? L->kname : "?", L->truncated, L->nargs);
	switch (L->kclass) {
	case DDP_GK_OPT: return on_optimizer(g, L);
	case DDP_GK_READER: return on_reader(g, L);
	case DDP_GK_NEUTRAL: return on_other(g, L); /* undecoded: as any launch that may write */
	default: return on_other(g, L);
	}
}

/* ---- signatures */

#define SIG_FNV_INIT 0xcbf29ce484222325ULL

static uint64_t sig_fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

size_t ddp_grad_signature(char *out, size_t cap, struct ddp_grad_buf *const *bufs, size_t n, int grads,
			  uint64_t *hash)
{
	/* room kept for the tail " ...+K more fnv=<16 hex>" */
	const size_t tail = 64;
	char item[160];
	size_t o = 0, skipped = 0;
	uint64_t h = SIG_FNV_INIT;

	if (!out || cap < 2 * tail) {
		if (out && cap)
			out[0] = '\0';
		return 0;
	}
	int k = snprintf(item, sizeof item, "n=%zu", n);
	h = sig_fnv(h, item, (size_t)k);
	memcpy(out, item, (size_t)k + 1);
	o = (size_t)k;
	for (size_t i = 0; i < n; i++) {
		if (grads)
			k = snprintf(item, sizeof item, " %s %s count=%llu;", bufs[i]->label,
				     ddp_dtype_name((enum ddp_dtype)bufs[i]->dtype),
				     (unsigned long long)bufs[i]->count);
		else
			k = snprintf(item, sizeof item, " %s bytes=%llu;", bufs[i]->label,
				     (unsigned long long)bufs[i]->size);
		size_t len = (size_t)k < sizeof item ? (size_t)k : sizeof item - 1;
		h = sig_fnv(h, item, len);
		if (!skipped && o + len + tail < cap) {
			memcpy(out + o, item, len + 1);
			o += len;
		} else {
			skipped++;
		}
	}
	if (skipped)
		o += (size_t)snprintf(out + o, cap - o, " ...+%zu more fnv=%016llx", skipped,
				      (unsigned long long)h);
	if (hash)
		*hash = h;
	return o;
}

ddp_result ddp_grad_finish(struct ddp_grad *g)
{
	return end_update(g);
}
