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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_array.h"
#include "ddp_dtype.h"
#include "ddp_grad.h"
#include "ddp_inspect.h"
#include "ddp_log.h"
#include "ddp_overlap.h"
#include "ddp_plan.h"
#include "ddp_sync_int.h"

/* ---- ddprun inspect (dry run): the plans of the first two steps as text */

#define PLAN_TEXT_MAX (256u << 10)

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
	if (sync_st.nplan_text + len + 1 > PLAN_TEXT_MAX)
		return;
	char *p = ddp_array_grow(sync_st.plan_text, &sync_st.plan_cap, sync_st.nplan_text + len + 1, 1, 4096);
	if (!p)
		return;
	sync_st.plan_text = p;
	memcpy(p + sync_st.nplan_text, line, len + 1);
	sync_st.nplan_text += len;
}

static void show(const struct ddp_plan *p, const struct ddp_plan_item *it)
{
	const char *k = p->L && p->L->kname ? p->L->kname : "(end of the run)";
	uint64_t step = it->kind == DDP_PLAN_REDUCE ? sync_reduce_step() : it->step ? it->step : sync_st.cur_step;
	if (!sync_st.dry || step > 2 || it->kind == DDP_PLAN_WRITTEN)
		return;
	const char *what = ddp_plan_kind_name((enum ddp_plan_kind)it->kind);
	switch (it->kind) {
	case DDP_PLAN_STEP_BEGIN:
	case DDP_PLAN_STEP_END: say("step %" PRIu64 "  before %-28s %s\n", step, k, what); return;
	case DDP_PLAN_COPY: say("step %" PRIu64 "  before %-28s copy %" PRIu64 " bytes\n", step, k, it->bytes); return;
	case DDP_PLAN_READS: {
		size_t ng = 0;
		for (size_t i = 0; i < it->n; i++)
			ng += p->reads[it->first + i].role == DDP_GR_GRAD;
		say("step %" PRIu64 "  before %-28s reads %zu ranges, %zu of them gradients\n", step, k, it->n, ng);
		return;
	}
	default: break;
	}
	uint64_t bytes = 0;
	for (size_t i = 0; i < it->n; i++) {
		const struct ddp_grad_buf *b = p->bufs[it->first + i];
		bytes += it->kind == DDP_PLAN_REDUCE ? b->count * ddp_dtype_size((enum ddp_dtype)b->dtype) : b->size;
	}
	say("step %" PRIu64 "  before %-28s %s %zu range%s, %" PRIu64 " bytes:", step, k, what, it->n,
	    it->n == 1 ? "" : "s", bytes);
	for (size_t i = 0; i < it->n && i < 6; i++)
		say(" %s", p->bufs[it->first + i]->label);
	if (it->n > 6)
		say(" (+%zu more)", it->n - 6);
	say("\n");
}

void sync_exec_explain(FILE *f)
{
	fprintf(f, "\n## Plan (what libddp does before each launch, in order, steps 1 and 2)\n");
	if (sync_st.nplan_text)
		fwrite(sync_st.plan_text, 1, sync_st.nplan_text, f);
	else
		fprintf(f, "  nothing: no update was found\n");
}

static ddp_result run_item(const struct ddp_plan *p, const struct ddp_plan_item *it)
{
	struct ddp_grad_buf *const *b = p->bufs + it->first;
	switch ((enum ddp_plan_kind)it->kind) {
	case DDP_PLAN_STEP_BEGIN: return sync_op_step_begin(NULL, it->step);
	case DDP_PLAN_STEP_END:
		if (sync_st.dry) /* ddprun inspect counts the tracker's steps */
			ddp_inspect_tracker_steps((long)it->step);
		return sync_op_step_end(NULL, it->step);
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
		show(p, it);
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
