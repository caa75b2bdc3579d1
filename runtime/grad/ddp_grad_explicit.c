/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_explicit.c - explicit launches (ddp_grad.h: "Explicit launches"): PyTorch's
 * tensor-list kernels, whose arguments are named tensors.
 * Split from ddp_grad.c (moves only); ddp_grad_int.h lists the tracker's
 * files, ddp_grad.h the rules.
 *
 * Contract: the caller serialises every call (ddp_sync.c holds a mutex).
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
		return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	return DDP_OK;
}

#define LIVE_ROLES (M(DDP_GR_GRAD) | M(DDP_GR_PARAM) | M(DDP_GR_OTHER) | M(DDP_GR_CAND) | M(DDP_GR_DERIVED))

/* The record of exactly a's range with a role in mask, or NULL (never
 * creates one). */
static struct ddp_grad_buf *x_find(struct ddp_grad *g, const struct ddp_grad_arg *a, unsigned mask)
{
	uint64_t lo, hi;
	grad_arg_range(a, &lo, &hi);
	return grad_rec_exact(g, grad_ix_find(g, a->base, a->alloc_id), lo, hi, mask);
}

/* The record of exactly a's range (created with role NONE when new).
 * Records it overlaps describe what these bytes held before (the caching
 * allocator gives freed bytes to new tensors): they are forgotten, unless
 * this launch uses them too. */
static struct ddp_grad_buf *x_record(struct ddp_grad *g, const struct ddp_grad_arg *a, uint64_t stamp)
{
	uint64_t lo, hi;
	grad_arg_range(a, &lo, &hi);
	struct alloc_ix *x = grad_ix_get(g, a->base, a->alloc_id);
	if (!x)
		return NULL;
	struct ddp_grad_buf *b = grad_rec_exact(g, x, lo, hi, LIVE_ROLES), *o;
	if (!b) {
		for (uint32_t pos = 0; (o = grad_rec_overlap(g, x, lo, hi, LIVE_ROLES, &pos));) {
			if (o->xstamp == stamp)
				continue;
			if (o->role == DDP_GR_GRAD && g->ngrad)
				g->ngrad--;
			grad_buf_reset(g, o);
		}
		if (!(b = grad_rec_exact(g, x, lo, hi, M(DDP_GR_NONE))) && !(b = grad_rec_new(g, a, lo, hi)))
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
			grad_arg_range(a, &lo, &hi);
			if (grad_wlog_writer(g, a->alloc_id, lo, hi))
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
			grad_buf_reset(g, b);
		b->role = DDP_GR_PARAM;
		b->evidence = DDP_GE_LIST_WRITE;
		b->in_place = (a->access & DDP_GA_READ) != 0; /* its first list updates it */
		b->order = g->nparam_order++;
		grad_set_label(b, L, a);
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
	grad_arg_range(a, &lo, &hi);
	for (size_t i = g->nclog; i-- > 0;) {
		const struct copy_ent *c = &g->clog[i];
		if (c->dst_id != a->alloc_id || c->dst != lo || c->bytes != hi - lo)
			continue;
		if (!g->wlog || !grad_wlog_writer(g, c->src_id, c->src, c->src + c->bytes))
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

ddp_result grad_on_explicit(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	uint32_t n = L->nargs;
	size_t nl = 0, nbc = 0, nrd = 0, ncp = 0;
	uint64_t stamp = ++g->xstamp_seq;

	DDP_CHECK(x_scratch(g, n ? n : 1));
	if (g->nclog) {
		struct copy_ent *cp = ddp_array_grow(g->xcp, &g->xcap_cp, n ? n : 1, sizeof *cp, 256);
		if (!cp)
			return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		g->xcp = cp;
	}
	if (L->kclass == DDP_GK_READER)
		DDP_CHECK(grad_end_update(g));
	if (L->kclass == DDP_GK_OPT) {
		/* the launch that opened this update phase again: the next step */
		if (g->in_update && g->opener_set && g->opener_kid == L->kid && n &&
		    g->opener_ptr == L->args[0].ptr)
			DDP_CHECK(grad_end_update(g));
		DDP_CHECK(grad_begin_update(g, L));
	}
	uint32_t glists = x_grad_lists(g, L);
	if (L->kclass == DDP_GK_READER && x_reader_again(g, L, glists))
		grad_next_epoch(g);
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		int in_glist = a->tlist < 32 && (glists >> a->tlist & 1);
		struct ddp_grad_buf *b = NULL;
		g->xrec[i] = NULL;
		struct ddp_grad_arg src;
		const struct copy_ent *ce = NULL;
		if (in_glist && L->kclass == DDP_GK_OPT && g->nclog && x_copy_of(g, a, &src, &ce)) {
			/* the update reads a copy of a gradient made in this step
			 * (SGD momentum's torch.clone(grad)): the gradient is the
			 * copy's source, averaged there; the copy is made again
			 * from the average below, and is optimizer state, equal on
			 * every rank */
			struct ddp_grad_buf *cb = x_record(g, a, stamp);
			if (!cb)
				return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
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
				return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			if (b->role != DDP_GR_GRAD || !b->named) {
				if (b->role == DDP_GR_GRAD && g->ngrad)
					g->ngrad--;
				if (b->role != DDP_GR_NONE)
					grad_buf_reset(g, b);
				b->named = 1;
				DDP_CHECK(grad_make_grad(g, L, a, b, DDP_GR_GRAD, DDP_GE_LIST, NULL));
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
				return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
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
		if (b->role == DDP_GR_GRAD && b->xstamp != stamp && x_needs(g, b) && !grad_gone(g, b))
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
		DDP_CHECK(grad_plan_bufs(g, DDP_PLAN_BROADCAST, bc, nbc));
		for (size_t j = 0; j < nbc; j++)
			bc[j]->bcast_done = 1;
	}
	DDP_CHECK(grad_reduce_bufs(g, g->xlist, nl));
	for (size_t i = 0; i < ncp; i++)
		DDP_CHECK(grad_plan_copy(g, g->xcp[i].dst, g->xcp[i].src, g->xcp[i].bytes));
	if (L->kclass != DDP_GK_OPT)
		return DDP_OK;
	/* what this launch reads, for the data-parallel invariant */
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		struct ddp_grad_buf *b = g->xrec[i];
		uint64_t lo, hi;
		if (!(a->access & DDP_GA_READ))
			continue;
		grad_arg_range(a, &lo, &hi);
		struct ddp_grad_read *r = &g->xrd[nrd++];
		r->ptr = lo;
		r->bytes = hi - lo;
		r->param = a->param;
		r->word = a->word;
		r->role = b ? b->role : DDP_GR_NONE;
		r->label = b ? b->label : NULL;
	}
	return grad_plan_reads(g, g->xrd, nrd);
}
