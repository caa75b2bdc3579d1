/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_dflow.c - the update found from the data flow (ddp_flow.h keeps the
 * evidence, this file decides): flow cuts for launches that name no
 * optimizer.
 * Split from ddp_grad.c (moves only); ddp_grad_int.h lists the tracker's
 * files, ddp_grad.h the rules.
 *
 * Contract: the caller serialises every call (ddp_sync.c holds a mutex).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ddp_array.h"
#include "ddp_flow.h"
#include "ddp_grad.h"
#include "ddp_hash.h"
#include "ddp_log.h"
#include "ddp_grad_int.h"

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
int grad_flow_applies(const struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	return !L->explicit_ranges && !L->truncated && L->kclass == DDP_GK_OTHER && L->nargs > 0 &&
	       (g->steps == 0 || ddp_flow_ncuts(g->flow) > 0);
}

static uint64_t flow_key(const struct ddp_grad_launch *L)
{
	uint64_t h = DDP_FNV1A_INIT ^ L->kid;
	for (uint32_t i = 0; i < L->nargs; i++) {
		uint64_t lo, hi;
		grad_arg_range(&L->args[i], &lo, &hi);
		uint64_t v[3] = { L->args[i].alloc_id, lo, hi };
		for (int k = 0; k < 3; k++) {
			h ^= v[k];
			h *= DDP_FNV1A_PRIME;
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
		grad_arg_range(a, &lo, &hi);
		if (e && hi - lo != e)
			return 0;
		e = hi - lo;
	}
	return e != 0;
}

static int flow_whole(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi)
{
	grad_arg_range(a, lo, hi);
	return *lo == a->base && *hi == a->base + a->size;
}

/* Is L a cut?  *pi: the parameter's argument, *qi: the gradient's. */
/* Did a launch up to number seq read a byte of [lo, hi)? */
static int flow_read_by(const struct ddp_grad *g, uint32_t alloc_id, uint64_t lo, uint64_t hi, uint64_t seq)
{
	uint64_t r = ddp_flow_first_read(g->flow, alloc_id, lo, hi);
	return r && r <= seq;
}

static int flow_find_cut(struct ddp_grad *g, const struct ddp_grad_launch *L, uint64_t key, uint32_t *pi,
			 uint32_t *qi)
{
	if (!flow_elementwise(L))
		return 0;
	for (uint32_t p = 0; p < L->nargs; p++) {
		const struct ddp_grad_arg *a = &L->args[p];
		uint64_t plo, phi;
		if (!flow_whole(a, &plo, &phi))
			continue;
		struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
		int is_p = grad_rec_exact(g, x, plo, phi, M(DDP_GR_PARAM)) != NULL;
		uint64_t pread = ddp_flow_first_read(g->flow, a->alloc_id, plo, phi);
		if (!is_p && g->steps_done == 0)
			is_p = !grad_rec_overlap(g, x, plo, phi, M(DDP_GR_GRAD) | M(DDP_GR_CAND) | M(DDP_GR_DERIVED),
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
			struct alloc_ix *y = grad_ix_find(g, b->base, b->alloc_id);
			int is_g = grad_rec_exact(g, y, qlo, qhi, M(DDP_GR_GRAD)) != NULL;
			if (!is_g && g->steps_done == 0 && qhi - qlo != g->debug_unseen)
				is_g = !grad_rec_overlap(g, y, qlo, qhi,
						    M(DDP_GR_PARAM) | M(DDP_GR_DERIVED) | M(DDP_GR_OTHER),
						    &(uint32_t){ 0 }) &&
				       !grad_integer_arg(b) && ddp_dtype_size(grad_dtype(g, L, b)) &&
				       /* written by a launch AFTER the parameter was first
					* read (backward after forward), never by the
					* launch that read it (a forward's output) */
				       ddp_flow_last_write(g->flow, b->alloc_id, qlo, qhi) > pread && pread &&
				       /* and read by no launch up to the parameter's first
					* read: a forward output read with the parameter (a
					* loss reading its targets and the prediction) is no
					* gradient */
				       !flow_read_by(g, b->alloc_id, qlo, qhi, pread) &&
				       /* never by this launch in an earlier step: a
					* launch that produced it is no consumer of it */
				       ddp_flow_last_writer(g->flow, b->alloc_id, qlo, qhi) != key &&
				       /* never by the open update phase: what the update
					* formed from the averaged gradients (Adam's m and
					* v) is state, not what backward produced */
				       !(g->in_update && ddp_flow_upd_written(g->flow, b->alloc_id, qlo, qhi));
			if (is_g) {
				*pi = p;
				*qi = q;
				return 1;
			}
		}
	}
	return 0;
}

int grad_flow_name_conflict(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	uint32_t pi, qi;
	if (L->explicit_ranges || L->truncated || g->steps != 0 || !L->nargs)
		return 0;
	if (flow_find_cut(g, L, flow_key(L), &pi, &qi))
		return L->args[pi].access == DDP_GA_READ && L->args[qi].access != DDP_GA_READ ? 1 : 0;
	/* an update rewrites loop-carried state, bytes a launch read before:
	 * a launch that writes only bytes a launch produced and none has read
	 * updates nothing (the cost layer's axpy(cdelta, delta) inside
	 * backward, delta filled this step).  The history holds start-up and
	 * step 1 alike, so a range some launch read counts as maybe
	 * loop-carried, and one no launch wrote as maybe state from the host:
	 * the name then stands. */
	int writes = 0;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		if (a->access == DDP_GA_READ || grad_integer_arg(a))
			continue;
		if (a->in_struct || a->access == DDP_GA_UNKNOWN || !ddp_dtype_size(grad_dtype(g, L, a)))
			return 0; /* what it writes is not known well enough */
		grad_arg_range(a, &lo, &hi);
		if (ddp_flow_first_read(g->flow, a->alloc_id, lo, hi) ||
		    !ddp_flow_last_write(g->flow, a->alloc_id, lo, hi))
			return 0; /* maybe loop-carried bytes it rewrites: maybe an update */
		writes = 1;
	}
	return writes ? 2 : 0;
}

/* Does L touch a parameter the open update phase wrote (the next forward)? */
static int flow_reads_updated(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		grad_arg_range(a, &lo, &hi);
		struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
		struct ddp_grad_buf *b;
		for (uint32_t pos = 0; (b = grad_rec_overlap(g, x, lo, hi, M(DDP_GR_PARAM), &pos));)
			if (b->evidence != DDP_GE_FLOW_STATE &&
			    ddp_flow_upd_written(g->flow, b->alloc_id, b->base, b->base + b->size))
				return 1;
	}
	return 0;
}

#define DDP_FLOW_CUT_READS 16

/* L is a cut: learn its parameter and gradient, begin the step, broadcast
 * the parameter before its first update, average every dirty gradient. */
static ddp_result flow_cut(struct ddp_grad *g, const struct ddp_grad_launch *L, uint32_t pi, uint32_t qi,
			   uint64_t key)
{
	const struct ddp_grad_arg *pa = &L->args[pi], *qa = &L->args[qi];
	uint64_t plo, phi, qlo, qhi;
	grad_arg_range(pa, &plo, &phi);
	grad_arg_range(qa, &qlo, &qhi);
	struct ddp_grad_buf *p = grad_rec_exact(g, grad_ix_find(g, pa->base, pa->alloc_id), plo, phi, M(DDP_GR_PARAM));
	if (!p) {
		if (!(p = grad_rec_new(g, pa, plo, phi)))
			return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		grad_absorb(g, p, DDP_GR_PARAM);
		grad_make_param(g, L, pa, p, DDP_GE_FLOW_PARAM);
	}
	struct ddp_grad_buf *q = grad_rec_exact(g, grad_ix_find(g, qa->base, qa->alloc_id), qlo, qhi, M(DDP_GR_GRAD));
	if (!q) {
		if (!(q = grad_rec_new(g, qa, qlo, qhi)))
			return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		grad_absorb(g, q, DDP_GR_GRAD);
		DDP_CHECK(grad_make_grad(g, L, qa, q, DDP_GR_GRAD, DDP_GE_FLOW_GRAD, p->label));
	}
	DDP_CHECK(grad_begin_update(g, L));
	g->flow_update = 1;
	if (!p->bcast_done) {
		struct ddp_grad_buf *one[1] = { p };
		DDP_CHECK(grad_plan_bufs(g, DDP_PLAN_BROADCAST, one, 1));
		p->bcast_done = 1;
	}
	for (size_t i = 0; i < g->nbufs; i++) {
		struct ddp_grad_buf *b = g->bufs[i];
		if (b->role == DDP_GR_GRAD && b->dirty && !b->named)
			b->flow_red = g->steps;
	}
	q->flow_red = g->steps;
	DDP_CHECK(grad_reduce_dirty(g));
	if (g->steps_done == 0)
		DDP_CHECK(ddp_flow_learn(g->flow, key, DDP_FLOW_CUT));
	/* the data-parallel invariant: what the cut reads, its parameter, its
	 * gradient and every other read-only argument (a second tensor the
	 * same launch updates, whose gradient the rules did not find, differs
	 * between the ranks: the check stops the job) */
	struct ddp_grad_read rd[DDP_FLOW_CUT_READS];
	size_t nrd = 0;
	rd[nrd++] = (struct ddp_grad_read){ plo, phi - plo, pa->param, pa->word, DDP_GR_PARAM, p->label };
	rd[nrd++] = (struct ddp_grad_read){ qlo, qhi - qlo, qa->param, qa->word, DDP_GR_GRAD, q->label };
	for (uint32_t i = 0; i < L->nargs && nrd < DDP_FLOW_CUT_READS; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		if (i == pi || i == qi || a->access != DDP_GA_READ)
			continue;
		grad_arg_range(a, &lo, &hi);
		struct ddp_grad_buf *r = grad_rec_exact(g, grad_ix_find(g, a->base, a->alloc_id), lo, hi,
							M(DDP_GR_PARAM) | M(DDP_GR_GRAD));
		rd[nrd++] = (struct ddp_grad_read){ lo,       hi - lo,
						    a->param, a->word,
						    r ? r->role : (uint8_t)DDP_GR_NONE, r ? r->label : NULL };
	}
	return grad_plan_reads(g, rd, nrd);
}

/* The data-flow part of a launch that names no optimizer: *upd = 1 when it
 * is one of the update's launches (a cut or one that follows it). */
ddp_result grad_flow_other(struct ddp_grad *g, const struct ddp_grad_launch *L, int *upd)
{
	uint32_t pi, qi;
	uint64_t key = flow_key(L);
	*upd = 0;
	if (flow_find_cut(g, L, key, &pi, &qi)) {
		DDP_CHECK(flow_cut(g, L, pi, qi, key));
		*upd = 1;
	} else if (g->in_update && g->flow_update) {
		if (g->steps_done == 0)
			*upd = !flow_reads_updated(g, L);
		else
			*upd = ddp_flow_lookup(g->flow, key) != DDP_FLOW_NONE;
		if (!*upd)
			DDP_CHECK(grad_end_update(g));
		else if (g->steps_done == 0)
			DDP_CHECK(ddp_flow_learn(g->flow, key, DDP_FLOW_UPDATE));
	}
	return DDP_OK;
}

/* An update launch wrote [lo, hi) of a's allocation: kept when no P or G
 * record holds those bytes (loop-carried state no rule named). */
static ddp_result note_update_written(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
				      uint64_t lo, uint64_t hi)
{
	struct alloc_ix *x = grad_ix_find(g, a->base, a->alloc_id);
	if (grad_rec_overlap(g, x, lo, hi, M(DDP_GR_PARAM) | M(DDP_GR_GRAD), &(uint32_t){ 0 }))
		return DDP_OK;
	for (size_t i = 0; i < g->nupdw; i++)
		if (g->updw[i].alloc_id == a->alloc_id && g->updw[i].base == lo && g->updw[i].size == hi - lo)
			return DDP_OK;
	struct ddp_grad_buf *nv = ddp_array_grow(g->updw, &g->cupdw, g->nupdw + 1, sizeof *nv, 16);
	if (!nv)
		return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	g->updw = nv;
	struct ddp_grad_buf *b = &g->updw[g->nupdw++];
	memset(b, 0, sizeof *b);
	b->base = lo;
	b->size = hi - lo;
	b->alloc_base = a->base;
	b->alloc_size = a->size;
	b->alloc_id = a->alloc_id;
	snprintf(b->label, sizeof b->label, "%.30s:%u+%" PRIu64 " (update-written)",
		 L->kname ? L->kname : "?", a->param, lo - a->base);
	return DDP_OK;
}

const struct ddp_grad_buf *ddp_grad_update_written(struct ddp_grad *g, size_t i, int *named)
{
	if (i >= g->nupdw)
		return NULL;
	const struct ddp_grad_buf *b = &g->updw[i];
	/* a rule that named it since: compared as that record */
	*named = grad_rec_overlap(g, grad_ix_find(g, b->alloc_base, b->alloc_id), b->base, b->base + b->size,
				  M(DDP_GR_PARAM) | M(DDP_GR_GRAD), &(uint32_t){ 0 }) != NULL;
	return b;
}

/* After L: its writes, when it is an update launch; its accesses, in step 1. */
ddp_result grad_flow_note(struct ddp_grad *g, const struct ddp_grad_launch *L, int upd)
{
	uint64_t key = g->steps_done == 0 ? flow_key(L) : 0;
	g->flow_seq++;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		grad_arg_range(a, &lo, &hi);
		int wrote = a->access != DDP_GA_READ;
		if (upd && wrote) {
			DDP_CHECK(ddp_flow_upd_write(g->flow, a->alloc_id, lo, hi));
			DDP_CHECK(note_update_written(g, L, a, lo, hi));
		}
		if (g->steps_done == 0)
			DDP_CHECK(ddp_flow_note(g->flow, a->alloc_id, lo, hi, wrote, g->flow_seq, key));
	}
	return DDP_OK;
}
