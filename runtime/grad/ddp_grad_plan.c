/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_plan.c - the tracker's side of the plan (ddp_plan.h): the
 * actions a launch needs, appended in order while the rules decide, handed
 * to the caller when ddp_grad_launch returns.  ddp_grad_int.h lists the
 * tracker's files, ddp_grad.h the rules.
 *
 * Contract: the caller serialises every call (as ddp_grad.c's).  Growth is
 * by malloc; a failure is the tracker's error (out of memory).
 */
#include <stdlib.h>
#include <string.h>
#include "ddp_array.h"
#include "ddp_grad.h"
#include "ddp_plan.h"
#include "ddp_grad_int.h"

const char *ddp_plan_kind_name(enum ddp_plan_kind k)
{
	switch (k) {
	case DDP_PLAN_STEP_BEGIN: return "step-begin";
	case DDP_PLAN_BROADCAST: return "broadcast";
	case DDP_PLAN_REDUCE: return "reduce";
	case DDP_PLAN_COPY: return "copy";
	case DDP_PLAN_WRITTEN: return "written";
	case DDP_PLAN_READS: return "reads";
	case DDP_PLAN_STEP_END: return "step-end";
	default: return "?";
	}
}

void grad_plan_start(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	g->plan.L = L;
	g->plan.stream = L ? L->stream : NULL;
	g->plan.n = g->plan.nbufs = g->plan.nreads = 0;
}

static struct ddp_plan_item *item_add(struct ddp_grad *g, enum ddp_plan_kind kind)
{
	struct ddp_plan *p = &g->plan;
	struct ddp_plan_item *it = ddp_array_grow(p->items, &p->cap, p->n + 1, sizeof *it, 16);
	if (!it) {
		grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker's plan)");
		return NULL;
	}
	p->items = it;
	it = &p->items[p->n++];
	memset(it, 0, sizeof *it);
	it->kind = (uint8_t)kind;
	return it;
}

ddp_result grad_plan_step(struct ddp_grad *g, enum ddp_plan_kind kind, uint64_t step)
{
	struct ddp_plan_item *it = item_add(g, kind);
	if (!it)
		return DDP_ERR_NOMEM;
	it->step = step;
	return DDP_OK;
}

ddp_result grad_plan_bufs(struct ddp_grad *g, enum ddp_plan_kind kind, struct ddp_grad_buf *const *b, size_t n)
{
	struct ddp_plan *p = &g->plan;
	if (!n)
		return DDP_OK;
	struct ddp_grad_buf **q = ddp_array_grow(p->bufs, &p->bcap, p->nbufs + n, sizeof *q, 64);
	if (!q)
		return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker's plan)");
	p->bufs = q;
	struct ddp_plan_item *it = item_add(g, kind);
	if (!it)
		return DDP_ERR_NOMEM;
	it->first = p->nbufs;
	it->n = n;
	it->step = g->steps;
	memcpy(&p->bufs[p->nbufs], b, n * sizeof *b);
	p->nbufs += n;
	return DDP_OK;
}

ddp_result grad_plan_copy(struct ddp_grad *g, uint64_t dst, uint64_t src, uint64_t bytes)
{
	struct ddp_plan_item *it = item_add(g, DDP_PLAN_COPY);
	if (!it)
		return DDP_ERR_NOMEM;
	it->lo = dst;
	it->hi = src;
	it->bytes = bytes;
	return DDP_OK;
}

ddp_result grad_plan_written(struct ddp_grad *g, struct ddp_grad_buf *b, uint64_t lo, uint64_t hi, uint8_t bound)
{
	DDP_CHECK(grad_plan_bufs(g, DDP_PLAN_WRITTEN, &b, 1));
	struct ddp_plan_item *it = &g->plan.items[g->plan.n - 1];
	it->lo = lo;
	it->hi = hi;
	it->bound = bound;
	return DDP_OK;
}

ddp_result grad_plan_reads(struct ddp_grad *g, const struct ddp_grad_read *r, size_t n)
{
	struct ddp_plan *p = &g->plan;
	struct ddp_grad_read *q = ddp_array_grow(p->reads, &p->rcap, p->nreads + (n ? n : 1), sizeof *q, 64);
	if (!q)
		return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker's plan)");
	p->reads = q;
	struct ddp_plan_item *it = item_add(g, DDP_PLAN_READS);
	if (!it)
		return DDP_ERR_NOMEM;
	it->first = p->nreads;
	it->n = n;
	it->step = g->steps;
	if (n)
		memcpy(&p->reads[p->nreads], r, n * sizeof *r);
	p->nreads += n;
	return DDP_OK;
}

/* Has the plan an action that changes device memory (a collective or a
 * copy)?  A measurement (calibration) must come before any. */
int grad_plan_moves_bytes(const struct ddp_grad *g)
{
	for (size_t i = 0; i < g->plan.n; i++)
		switch (g->plan.items[i].kind) {
		case DDP_PLAN_BROADCAST:
		case DDP_PLAN_REDUCE:
		case DDP_PLAN_COPY: return 1;
		default: break;
		}
	return 0;
}

void grad_plan_free(struct ddp_grad *g)
{
	free(g->plan.items);
	free(g->plan.bufs);
	free(g->plan.reads);
	memset(&g->plan, 0, sizeof g->plan);
}
