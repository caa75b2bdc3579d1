/* SPDX-License-Identifier: MIT
 *
 * ddp_rangelog.c - the per-step record of the ranges averaged and broadcast
 * (ddp_rangelog.h), kept in memory while tracing and written into
 * rank<k>.sync.json at exit by ddp_sync_exit.
 *
 * Filled from the two places where a range meets a collective: the
 * synchronous collectives (ddp_sync_coll.c run_collective: every range of a
 * broadcast, every gradient averaged with DDP_OVERLAP=off or NCCL groups)
 * and the stream-ordered buckets (ddp_overlap.c overlap_reduce_parts: every slice
 * of a gradient range, at the consumer or early).  A range split into
 * slices appears as its slices; readers merge adjacent records of a step.
 *
 * Contract: any thread; one mutex guards the array.  Allocation only when
 * tracing (DDP_TRACE) is on.  At most DDP_RANGELOG_MAX records.
 */
#include "ddp_rangelog.h"
#include "ddp_trace.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

struct rl_rec {
	uint64_t step; /* the step the range belongs to      */
	uint64_t addr; /* device address                     */
	uint64_t bytes;
	char kind; /* 'A' allreduce-average, 'B' broadcast */
};

static pthread_mutex_t rl_mu = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static struct rl_rec *rl;
static size_t rl_n, rl_cap;
static uint64_t rl_dropped;

void ddp_rangelog_add(uint64_t step, char kind, uint64_t addr, uint64_t bytes)
{
	if (!ddp_trace_enabled())
		return;
	pthread_mutex_lock(&rl_mu);
	if (rl_n == rl_cap && rl_cap < DDP_RANGELOG_MAX) {
		size_t cap = rl_cap ? rl_cap * 2 : 1024;
		struct rl_rec *p = realloc(rl, cap * sizeof(*p));
		if (p) {
			rl = p;
			rl_cap = cap;
		}
	}
	if (rl_n < rl_cap)
		rl[rl_n++] = (struct rl_rec){ step, addr, bytes, kind };
	else
		rl_dropped++;
	pthread_mutex_unlock(&rl_mu);
}

void ddp_rangelog_json(FILE *f)
{
	pthread_mutex_lock(&rl_mu);
	fprintf(f, ",\"ranges\":[");
	for (size_t i = 0; i < rl_n; i++)
		fprintf(f, "%s[%" PRIu64 ",\"%c\",%" PRIu64 ",%" PRIu64 "]", i ? "," : "", rl[i].step,
			rl[i].kind, rl[i].addr, rl[i].bytes);
	fprintf(f, "],\"ranges_dropped\":%" PRIu64, rl_dropped);
	pthread_mutex_unlock(&rl_mu);
}
