/* SPDX-License-Identifier: MIT
 *
 * ddp_plan.h - what the tracker decided at one launch: the plan.
 *
 * The tracker (ddp_grad.h) decides; it does no collective, copy or check
 * itself.  Each ddp_grad_launch (and ddp_grad_finish) returns the actions
 * the launch needs, in the order they must happen, all before the launch
 * reaches the driver:
 *   STEP_BEGIN  an update phase opens: step `step` begins;
 *   BROADCAST   rank 0's bytes of parameter / state ranges to every rank
 *               (their first update);
 *   REDUCE      gradient ranges averaged across ranks, in the tracker's
 *               order (first appearance); the executor groups them (the
 *               bucket planner, early reductions already in flight);
 *   COPY        a device copy the program made of a gradient, made again
 *               from the average (SGD momentum's clone in step 1);
 *   WRITTEN     the launch may write [lo, hi) of a gradient (bound: enum
 *               ddp_grad_bound of hi): what the overlap layer learns its
 *               slices and re-reductions from;
 *   READS       the ranges an optimizer launch reads, after everything it
 *               needs (the data-parallel invariant check hashes them);
 *   STEP_END    step `step`'s update phase ended.
 * One executor carries a plan out: ddp_sync_exec.c on the driver and the
 * collectives, tests/unit/test_grad.c's on host memory.
 *
 * The tracker has already taken each action as done when it returns (a
 * reduced range is clean, a broadcast range broadcast): an executor that
 * cannot carry one out must stop the job (the ranks would disagree).
 *
 * Contract: the plan belongs to the tracker and holds until its next call;
 * its record pointers are the tracker's records (stable for its lifetime).
 */
#ifndef DDP_PLAN_H
#define DDP_PLAN_H

#include <stddef.h>
#include <stdint.h>

struct ddp_grad_buf;
struct ddp_grad_read;
struct ddp_grad_launch;

enum ddp_plan_kind {
	DDP_PLAN_STEP_BEGIN = 1,
	DDP_PLAN_BROADCAST,
	DDP_PLAN_REDUCE,
	DDP_PLAN_COPY,
	DDP_PLAN_WRITTEN,
	DDP_PLAN_READS,
	DDP_PLAN_STEP_END,
};

struct ddp_plan_item {
	uint8_t kind;  /* enum ddp_plan_kind                              */
	uint8_t bound; /* WRITTEN: enum ddp_grad_bound of hi               */
	uint64_t step; /* STEP_BEGIN, STEP_END, READS: the step            */
	size_t first;  /* BROADCAST, REDUCE, WRITTEN: bufs[first ..];
			* READS: reads[first ..]                          */
	size_t n;      /* how many                                         */
	uint64_t lo, hi, bytes; /* COPY: dst, src, bytes; WRITTEN: the range */
};

struct ddp_plan {
	const struct ddp_grad_launch *L; /* the launch (NULL: ddp_grad_finish) */
	void *stream;                    /* L's stream (NULL: none)            */
	struct ddp_plan_item *items;
	size_t n, cap;
	struct ddp_grad_buf **bufs;
	size_t nbufs, bcap;
	struct ddp_grad_read *reads;
	size_t nreads, rcap;
};

const char *ddp_plan_kind_name(enum ddp_plan_kind k);

#endif /* DDP_PLAN_H */
