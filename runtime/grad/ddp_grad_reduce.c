/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_reduce.c - the tracker's actions: averaging the dirty gradients (in
 * the order G were first seen), epochs, the end of an update phase.
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

/* ---- actions */

int grad_cmp_order(const void *a, const void *b)
{
	const struct ddp_grad_buf *x = *(struct ddp_grad_buf *const *)a;
	const struct ddp_grad_buf *y = *(struct ddp_grad_buf *const *)b;
	return (x->order > y->order) - (x->order < y->order);
}

/* Averages list[0..n) (G or candidates, in order of first appearance): a
 * REDUCE action; they are clean from here on. */
ddp_result grad_reduce_bufs(struct ddp_grad *g, struct ddp_grad_buf **list, size_t n)
{
	if (!n)
		return DDP_OK;
	DDP_CHECK(grad_plan_bufs(g, DDP_PLAN_REDUCE, list, n));
	for (size_t i = 0; i < n; i++) {
		list[i]->dirty = 0;
		list[i]->red_ep = g->epoch + 1;
	}
	g->reductions++;
	return DDP_OK;
}

/* Is b (G or candidate) freed since it was learned?  Then it is forgotten
 * (the address may belong to another allocation by now). */
int grad_gone(struct ddp_grad *g, struct ddp_grad_buf *b)
{
	if (!g->ops.alive || g->ops.alive(g->ops.ctx, b))
		return 0;
	DDP_DEBUG(GRAD, "gradient %s at 0x%llx was freed: forgotten", b->label, (unsigned long long)b->base);
	if (b->role == DDP_GR_GRAD && g->ngrad)
		g->ngrad--;
	grad_buf_reset(g, b);
	return 1;
}

/* Averages every dirty G (and, in step 1, every dirty candidate) the
 * address rules learned, in order of first appearance (named gradients of
 * explicit launches are averaged by their consumers, never here). */
ddp_result grad_reduce_dirty(struct ddp_grad *g)
{
	size_t cap = g->nbufs ? g->nbufs : 1, n = 0;
	struct ddp_grad_buf **list = malloc(cap * sizeof *list);
	ddp_result rc;

	if (!list)
		return grad_fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	for (size_t i = 0; i < g->nbufs; i++) {
		struct ddp_grad_buf *b = g->bufs[i];
		if ((b->role != DDP_GR_GRAD && b->role != DDP_GR_CAND) || !b->dirty || b->named || grad_gone(g, b))
			continue;
		list[n++] = b;
	}
	qsort(list, n, sizeof *list, grad_cmp_order);
	rc = grad_reduce_bufs(g, list, n);
	free(list);
	return rc;
}

/* The next epoch: named gradients must be averaged again before their next
 * use; those not named in the epoch that ended are forgotten. */
void grad_next_epoch(struct ddp_grad *g)
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
		grad_buf_reset(g, b);
	}
}

ddp_result grad_end_update(struct ddp_grad *g)
{
	if (!g->in_update)
		return DDP_OK;
	g->in_update = 0;
	g->opener_set = 0;
	g->flow_update = 0;
	grad_next_epoch(g);
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
			grad_buf_reset(g, b);
		}
		free(g->wlog);
		g->wlog = NULL;
		g->nwlog = 0;
		free(g->clog);
		g->clog = NULL;
		g->nclog = 0;
	}
	if (g->strict && g->steps_done == 1 && g->grads_found == 0)
		return grad_fail(
			g, DDP_ERR_UNSUPPORTED,
			"libddp: the first optimizer step ran but no gradient buffer was found among the optimizer's "
			"arguments (no read-only range whose element count pairs with a range it "
			"writes); gradients cannot be averaged, so the job stops: report the optimizer kernel "
			"(docs/gradient-sync.md, \"How ddprun stops\")");
	if (g->strict && g->steps_done >= 2 && g->reductions == 0)
		return grad_fail(
			g, DDP_ERR_UNSUPPORTED,
			"libddp: %llu optimizer steps ran and no gradient was ever averaged (the gradients are never "
			"written between optimizer launches as far as libddp can see); the ranks would train "
			"apart, so the job stops: report the optimizer kernel (docs/gradient-sync.md, \"How ddprun "
			"stops\")",
			(unsigned long long)g->steps_done);
	return grad_plan_step(g, DDP_PLAN_STEP_END, g->steps);
}
