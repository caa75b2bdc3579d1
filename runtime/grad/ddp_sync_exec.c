/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_exec.c - the one executor: carries out the plan the tracker
 * returns for a launch (ddp_plan.h), item by item, in order, before the
 * launch reaches the driver.  ddp_sync_int.h lists the glue's files.
 *
 * Reductions: with early reductions on (DDP_OVERLAP, ddp_overlap.c) the
 * ranges go to the overlap layer, which groups them in buckets
 * (ddp_coll_bucket.c) and finds those already reduced early; otherwise the
 * synchronous collectives, through the same bucket planner
 * (ddp_sync_coll.c).
 *
 * Contract: called under sync_st.lock, from the launch path and at exit.
 * The tracker has taken every action as done: one that fails stops the
 * rank (sync_die), since the ranks would disagree from then on.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "ddp_grad.h"
#include "ddp_log.h"
#include "ddp_overlap.h"
#include "ddp_plan.h"
#include "ddp_sync_int.h"

static ddp_result run_item(const struct ddp_plan *p, const struct ddp_plan_item *it)
{
	struct ddp_grad_buf *const *b = p->bufs + it->first;
	switch ((enum ddp_plan_kind)it->kind) {
	case DDP_PLAN_STEP_BEGIN: return sync_op_step_begin(NULL, it->step);
	case DDP_PLAN_STEP_END: return sync_op_step_end(NULL, it->step);
	case DDP_PLAN_BROADCAST: return sync_do_broadcast(b, it->n, p->stream);
	case DDP_PLAN_REDUCE:
		if (ddp_overlap_on() && sync_reduce_overlapped())
			return sync_do_reduce(b, it->n, p->stream);
		return sync_do_allreduce(b, it->n, p->stream);
	case DDP_PLAN_COPY: return sync_do_copy(it->lo, it->hi, it->bytes, p->stream);
	case DDP_PLAN_WRITTEN:
		if (p->L)
			ddp_overlap_written(b[0], p->L, it->lo, it->hi, it->bound);
		return DDP_OK;
	case DDP_PLAN_READS:
		return p->L ? sync_op_opt_reads(NULL, p->L, it->step, p->reads + it->first, it->n) : DDP_OK;
	}
	return DDP_ERR_INTERNAL;
}

void sync_exec_plan(const struct ddp_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct ddp_plan_item *it = &p->items[i];
		ddp_result rc = run_item(p, it);
		if (rc == DDP_OK)
			continue;
		char msg[300];
		snprintf(msg, sizeof msg, "libddp: %s (%zu range%s) before %s failed at step %" PRIu64 ": %s",
			 ddp_plan_kind_name((enum ddp_plan_kind)it->kind), it->n, it->n == 1 ? "" : "s",
			 p->L && p->L->kname ? p->L->kname : "the end of the run", sync_st.cur_step,
			 ddp_strerror(rc));
		sync_die(msg);
	}
}
