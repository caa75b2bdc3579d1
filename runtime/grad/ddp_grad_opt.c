/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_opt.c - the launch rules of named kernels: learning gradients (G)
 * and parameters / optimizer state (P), calibration, the writes of
 * non-optimizer launches, gradient readers and optimizer launches.
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

void grad_set_label(struct ddp_grad_buf *b, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a)
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
enum ddp_dtype grad_dtype(const struct ddp_grad *g, const struct ddp_grad_launch *L,
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
const char *grad_wlog_writer(const struct ddp_grad *g, uint32_t alloc_id, uint64_t lo, uint64_t hi)
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
int grad_integer_arg(const struct ddp_grad_arg *a)
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

ddp_result grad_make_grad(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
			    struct ddp_grad_buf *b, int role, int evidence, const char *paired)
{
	enum ddp_dtype t = grad_dtype(g, L, a);
	if (!b->named && !b->bounded && holds_tensors(g, grad_ix_find(g, b->alloc_base, b->alloc_id)))
		return grad_fail(
			g, DDP_ERR_UNSUPPORTED,
			"libddp: kernel %s passes a gradient (parameter %u) whose extent no argument bounds, inside "
			"allocation #%u that holds PyTorch's tensors: averaged whole it would average the other "
			"tensors too, so the job stops; use PyTorch's optimizers (foreach or fused)",
			L->kname ? L->kname : "?", a->param, b->alloc_id);
	size_t es = ddp_dtype_size(t);
	if (!es)
		return grad_fail(g, DDP_ERR_UNSUPPORTED,
			    "libddp: cannot tell the element type of the gradient passed as parameter %u of kernel %s "
			    "(%llu bytes); set DDP_GRAD_DTYPE=f32|f16|bf16 (never reduced as guessed bytes)",
			    a->param, L->kname ? L->kname : "?", (unsigned long long)b->size);
	const char *w = grad_wlog_writer(g, b->alloc_id, b->base, b->base + b->size);
	b->role = (uint8_t)role;
	g->gen++;
	b->dtype = (uint8_t)t;
	b->count = b->size / es;
	b->size = b->count * es;
	b->dirty = 1;
	b->evidence = (uint8_t)evidence;
	b->order = g->ngrad_order++;
	grad_set_label(b, L, a);
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

void grad_make_param(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
		       struct ddp_grad_buf *b, int evidence)
{
	b->role = DDP_GR_PARAM;
	b->dirty = 0;
	b->evidence = (uint8_t)evidence;
	b->order = g->nparam_order++;
	grad_set_label(b, L, a);
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

	if (grad_plan_moves_bytes(g)) { /* the plan runs after: it must not be needed before */
		free(before);
		return grad_fail(g, DDP_ERR_INTERNAL,
				 "libddp: internal error: %s would be calibrated before a collective it needs ran",
				 L->kname ? L->kname : "?");
	}
	if (!before)
		return grad_fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
	for (uint32_t i = 0; i < n; i++) {
		int dup = 0;
		for (uint32_t j = 0; j < i; j++)
			dup |= L->args[j].base == L->args[i].base;
		if (dup)
			continue;
		if (L->args[i].size > maxsz)
			maxsz = L->args[i].size;
		if (!(before[i] = malloc(L->args[i].size))) {
			rc = grad_fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
			goto out_free;
		}
		DDP_CHECK_GOTO(g->ops.read(g->ops.ctx, L->args[i].base, before[i], L->args[i].size, L->stream),
			       rc, out_free);
	}
	if (!(after = malloc(maxsz ? maxsz : 1))) {
		rc = grad_fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
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
		grad_fail(g, rc, "libddp: calibration of %s failed (%s)", L->kname ? L->kname : "?",
		     ddp_strerror(rc));
	return rc;
}

/* A non-optimizer launch may write [lo, hi) (which may reach beyond b) of
 * b: dirty, and it is the last writer; the overlap layer learns the
 * written extent and how it is known (ops.written; bound: enum
 * ddp_grad_bound). */
static ddp_result mark_written(struct ddp_grad *g, struct ddp_grad_buf *b, const struct ddp_grad_launch *L,
			       uint64_t lo, uint64_t hi, uint8_t bound)
{
	b->dirty = 1;
	b->wseq = L->seq;
	b->wkid = L->kid;
	b->writes++;
	return grad_plan_written(g, b, lo, hi, bound);
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
		struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
		if (!x)
			continue;
		grad_arg_range(a, &lo, &hi);
		if (a->bounded != DDP_GB_EXACT && a->bounded != DDP_GB_MEASURED)
			hi = lo + 1;
		struct ddp_grad_buf *b;
		for (uint32_t pos = 0; (b = grad_rec_overlap(g, x, lo, hi, M(DDP_GR_PARAM), &pos));)
			if (b->xsrc && b->opt_phase == g->steps)
				return 1;
	}
	return 0;
}

ddp_result grad_on_other(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (x_next_forward(g, L))
		DDP_CHECK(grad_end_update(g));
	int wrote_g = 0, upd = 0, flow = grad_flow_applies(g, L) && !g->debug_avg_state;
	if (flow)
		DDP_CHECK(grad_flow_other(g, L, &upd));
	if (L->truncated) {
		/* arguments beyond the decoder's capacity may write gradients: take
		 * every gradient as written (re-averaging an average is a no-op) */
		for (size_t i = 0; i < g->nbufs; i++)
			if (g->bufs[i]->role == DDP_GR_GRAD || g->bufs[i]->role == DDP_GR_CAND)
				DDP_CHECK(mark_written(g, g->bufs[i], L, g->bufs[i]->alloc_base,
						       g->bufs[i]->alloc_base + g->bufs[i]->alloc_size, DDP_GB_EXACT));
		wrote_g = 1;
	}
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		if (a->access == DDP_GA_READ)
			continue;
		grad_arg_range(a, &lo, &hi);
		if (g->steps_done == 0 && g->nwlog < WLOG_MAX) {
			if (!g->wlog && !(g->wlog = malloc(WLOG_MAX * sizeof *g->wlog)))
				return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			struct wlog_ent *w = &g->wlog[g->nwlog++];
			w->alloc_id = a->alloc_id;
			w->lo = lo;
			w->hi = hi;
			snprintf(w->kname, sizeof w->kname, "%s", L->kname ? L->kname : "?");
		}
		struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
		if (!x)
			continue;
		struct ddp_grad_buf *b;
		for (uint32_t pos = 0; (b = grad_rec_overlap(g, x, lo, hi, M(DDP_GR_GRAD) | M(DDP_GR_CAND), &pos));) {
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
			/* the last writer, and early reductions before it are stale */
			DDP_CHECK(mark_written(g, b, L, lo, hi, a->bounded));
			if (b->named && !a->bounded && !L->explicit_ranges)
				b->dirty = was_dirty;
			wrote_g |= b->role == DDP_GR_GRAD;
		}
	}
	if (flow)
		DDP_CHECK(grad_flow_note(g, L, upd));
	/* the update phase ends when the next step's forward/backward work
	 * writes a gradient (or at once while no gradient is known); a flow
	 * update phase ends in grad_flow_other */
	if (g->in_update && !g->flow_update && (wrote_g || g->ngrad == 0))
		return grad_end_update(g);
	return DDP_OK;
}

ddp_result grad_on_reader(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	int need = 0;
	DDP_CHECK(grad_end_update(g));
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		grad_arg_range(a, &lo, &hi);
		struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
		struct ddp_grad_buf *b;
		int known = 0;
		for (uint32_t pos = 0;
		     (b = grad_rec_overlap(g, x, lo, hi,
				      M(DDP_GR_GRAD) | M(DDP_GR_CAND) | M(DDP_GR_PARAM) | M(DDP_GR_DERIVED),
				      &pos));) {
			if (b->role == DDP_GR_GRAD || b->role == DDP_GR_CAND)
				need |= b->dirty;
			known = 1;
		}
		/* the first step: the reader reveals candidates (its inputs) and
		 * outputs (written by a const-correct reader: never gradients) */
		if (known || g->steps_done > 0 || grad_integer_arg(a))
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
		if (!(b = grad_rec_new(g, a, lo, hi)))
			return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		if (output) {
			b->role = DDP_GR_DERIVED;
			b->evidence = DDP_GE_READER;
			grad_set_label(b, L, a);
			snprintf(b->reader, sizeof b->reader, "%.39s", L->kname ? L->kname : "?");
			DDP_INFO(GRAD,
				 "reader output %s: %llu bytes at +%llu of allocation #%u, written by reader %s "
				 "(non-const in its signature): never a gradient",
				 b->label, (unsigned long long)b->size,
				 (unsigned long long)(b->base - b->alloc_base), b->alloc_id, b->reader);
			continue;
		}
		DDP_CHECK(grad_make_grad(g, L, a, b, DDP_GR_CAND,
				    a->access == DDP_GA_READ ? DDP_GE_SIG_CONST : DDP_GE_READER, NULL));
		need = 1;
	}
	return need ? grad_reduce_dirty(g) : DDP_OK;
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
		 * weights); grad_make_grad then refuses with the setting to use */
		if (es ? (ps == count * 4 || ps == count * 2 || ps == bytes) : (ps == bytes || ps == 2 * bytes))
			return i + 1;
	}
	return 0;
}

/* b (new, not yet given a role) is about to become `role`: records of that
 * role it overlaps (ranges an unbounded launch took to the allocation's end,
 * then a wider one) are merged into it, so no byte is averaged or
 * broadcast twice per step.  A parameter that grows is broadcast again. */
void grad_absorb(struct ddp_grad *g, struct ddp_grad_buf *b, int role)
{
	g->gen++;
	struct alloc_ix *x = grad_ix_find(g, b->alloc_base, b->alloc_id);
	struct ddp_grad_buf *o;
	for (uint32_t pos = 0; (o = grad_rec_overlap(g, x, b->base, b->base + b->size, M(role), &pos));) {
		if (o == b)
			continue;
		uint64_t lo = o->base < b->base ? o->base : b->base;
		uint64_t hi = o->base + o->size > b->base + b->size ? o->base + o->size : b->base + b->size;
		b->base = lo;
		b->size = hi - lo;
		for (uint32_t i = 0; i < x->n; i++)
			if (g->bufs[x->rec[i]] == b) {
				grad_ix_place(g, x, i);
				break;
			}
		b->dirty |= o->dirty;
		DDP_INFO(GRAD, "%s %s merges into a wider range (%llu bytes at +%llu)",
			 ddp_grad_role_name(role), o->label, (unsigned long long)b->size,
			 (unsigned long long)(b->base - b->alloc_base));
		if (role == DDP_GR_GRAD && g->ngrad)
			g->ngrad--;
		grad_buf_reset(g, o);
		pos = 0; /* b moved in the index: search again (o is dead now) */
	}
}

/* An optimizer launch outside an update phase begins one (a step). */
ddp_result grad_begin_update(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (g->in_update)
		return DDP_OK;
	g->in_update = 1;
	g->steps++;
	ddp_flow_upd_clear(g->flow);
	g->opener_set = L->explicit_ranges && L->nargs;
	g->opener_kid = L->kid;
	g->opener_ptr = L->nargs ? L->args[0].ptr : 0;
	return grad_plan_step(g, DDP_PLAN_STEP_BEGIN, g->steps);
}

ddp_result grad_on_optimizer(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	static uint8_t is_param[GRAD_MAX_ARGS], is_grad[GRAD_MAX_ARGS], changed[GRAD_MAX_ARGS],
		need_cal[GRAD_MAX_ARGS], ro[GRAD_MAX_ARGS], ev[GRAD_MAX_ARGS];
	static uint64_t lo[GRAD_MAX_ARGS], hi[GRAD_MAX_ARGS];
	static struct ddp_grad_buf *rec[GRAD_MAX_ARGS], *bc[GRAD_MAX_ARGS];
	static struct ddp_grad_read rd[GRAD_MAX_ARGS];
	uint32_t n = L->nargs < GRAD_MAX_ARGS ? L->nargs : GRAD_MAX_ARGS;
	int any_cal = 0, need = 0;
	size_t nbc = 0, nrd = 0;

	DDP_CHECK(grad_begin_update(g, L));
	memset(is_param, 0, n);
	memset(is_grad, 0, n);
	memset(changed, 0, n);
	memset(need_cal, 0, n);
	memset(ro, 0, n);
	memset(ev, 0, n);
	/* what is known already, what the signature says, what needs calibration */
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		grad_arg_range(a, &lo[i], &hi[i]);
		if (a->input) { /* input data (ddp_fused.h): no role, never broadcast or paired */
			rec[i] = NULL;
			continue;
		}
		struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
		rec[i] = grad_rec_exact(g, x, lo[i], hi[i], M(DDP_GR_GRAD) | M(DDP_GR_PARAM) | M(DDP_GR_OTHER));
		if (!rec[i]) /* a tensor of a range known whole (an earlier unbounded launch) */
			rec[i] = grad_rec_within(g, x, lo[i], hi[i], M(DDP_GR_GRAD) | M(DDP_GR_PARAM));
		if (rec[i]) {
			is_param[i] = rec[i]->role == DDP_GR_PARAM;
			is_grad[i] = rec[i]->role == DDP_GR_GRAD;
			continue;
		}
		if (grad_rec_within(g, x, lo[i], hi[i], M(DDP_GR_DERIVED)))
			continue; /* a reader's output: never a gradient */
		int cand = grad_rec_within(g, x, lo[i], hi[i], M(DDP_GR_CAND)) != NULL;
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
			return grad_fail(g, DDP_ERR_UNSUPPORTED,
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
		if (ro[i] && !grad_integer_arg(&L->args[i]) &&
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
			if (!b && !(b = grad_rec_new(g, a, lo[i], hi[i])))
				return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			rec[i] = b;
			if (b->role == DDP_GR_NONE && (is_param[i] || is_grad[i]))
				grad_absorb(g, b, is_param[i] ? DDP_GR_PARAM : DDP_GR_GRAD);
			if (b->role == DDP_GR_NONE) {
				if (is_param[i]) {
					grad_make_param(g, L, a, b, ev[i]);
				} else if (is_grad[i]) {
					struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
					struct ddp_grad_buf *c = grad_rec_within(g, x, lo[i], hi[i], M(DDP_GR_CAND));
					if (c)
						snprintf(b->reader, sizeof b->reader, "%s", c->reader);
					DDP_CHECK(grad_make_grad(g, L, a, b, DDP_GR_GRAD, ev[i],
							    rec[pair[i] - 1] ? rec[pair[i] - 1]->label : NULL));
					/* averaged with the candidate it lies in, and not
					 * written since: clean */
					if (c && !c->dirty)
						b->dirty = 0;
				} else {
					/* untyped and neither: remembered, not calibrated again */
					b->role = DDP_GR_OTHER;
					b->evidence = ev[i];
					grad_set_label(b, L, a);
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
		qsort(bc, nbc, sizeof *bc, grad_cmp_order);
		DDP_CHECK(grad_plan_bufs(g, DDP_PLAN_BROADCAST, bc, nbc));
		for (size_t j = 0; j < nbc; j++)
			bc[j]->bcast_done = 1;
	}
	if (need)
		DDP_CHECK(grad_reduce_dirty(g));
	for (uint32_t i = 0; i < n && g->flow_update; i++)
		if (is_param[i] && ev[i] != DDP_GE_FLOW_STATE)
			DDP_CHECK(ddp_flow_upd_write(g->flow, L->args[i].alloc_id, lo[i], hi[i]));
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
	return grad_plan_reads(g, rd, nrd);
}
