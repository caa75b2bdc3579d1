/* SPDX-License-Identifier: MIT
 *
 * sim_event.c - events: record, query, synchronise, elapsed time, and
 * cuStreamWaitEvent.
 *
 * An event counts records: rec_gen is incremented when cuEventRecord queues
 * a record item, done_gen set to that generation when the item runs on the
 * stream's worker (which also stamps the time).  The event is complete when
 * done_gen == rec_gen (never recorded: complete, as in the driver).
 * cuStreamWaitEvent captures rec_gen at call time and queues a wait item that
 * blocks the waiting stream's worker until done_gen reaches it; waiting on a
 * never-recorded event is a no-op.
 *
 * Contract: any thread may call.  rec_gen, done_gen, when and timed are
 * guarded by sim_done_mu; completions broadcast sim_done_cv.  Destroyed
 * events are marked dead and never freed (queued items may still name them).
 * Timings are host wall-clock times of the worker: they mean nothing about a
 * GPU.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <time.h>

static struct CUevent_st *sim_event_get(CUevent h)
{
	return h && h->magic == SIM_MAGIC_EVENT ? h : NULL;
}

SIM_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	if (Flags & CU_EVENT_INTERPROCESS)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct CUevent_st *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = SIM_MAGIC_EVENT;
	e->flags = Flags;
	e->ctx = c;
	*phEvent = e;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent)
{
	CUresult rc = sim_check_init();
	if (rc == CUDA_ERROR_NOT_INITIALIZED)
		return rc;
	struct CUevent_st *e = sim_event_get(hEvent);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	e->magic = SIM_MAGIC_DEAD; /* never freed: queued records may name it */
	return CUDA_SUCCESS;
}

struct sim_record_work {
	struct sim_work w;
	struct CUevent_st *e;
	uint64_t gen;
};

static CUresult sim_record_run(struct sim_work *w)
{
	struct sim_record_work *rw = (struct sim_record_work *)w;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&sim_done_mu);
	if (rw->gen > rw->e->done_gen) {
		rw->e->done_gen = rw->gen;
		rw->e->when = now;
		rw->e->timed = !(rw->e->flags & CU_EVENT_DISABLE_TIMING);
	}
	pthread_cond_broadcast(&sim_done_cv);
	pthread_mutex_unlock(&sim_done_mu);
	return CUDA_SUCCESS;
}

CUresult sim_event_record(enum sim_ds ds, CUevent h, CUstream hs, unsigned flags)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(hs, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUevent_st *e = sim_event_get(h);
	if (!e || e->ctx != s->ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_record_work *rw = calloc(1, sizeof(*rw));
	if (!rw)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rw->w.run = sim_record_run;
	rw->w.what = "event record";
	rw->e = e;
	pthread_mutex_lock(&sim_done_mu);
	rw->gen = ++e->rec_gen;
	pthread_mutex_unlock(&sim_done_mu);
	return sim_stream_enqueue(s, &rw->w, NULL);
}

SIM_EXPORT CUresult cuEventQuery(CUevent hEvent)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUevent_st *e = sim_event_get(hEvent);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_done_mu);
	int done = e->done_gen >= e->rec_gen;
	pthread_mutex_unlock(&sim_done_mu);
	return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUevent_st *e = sim_event_get(hEvent);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&sim_done_mu);
	uint64_t gen = e->rec_gen;
	while (e->done_gen < gen)
		pthread_cond_wait(&sim_done_cv, &sim_done_mu);
	pthread_mutex_unlock(&sim_done_mu);
	return sim_check_init();
}

SIM_EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUevent_st *a = sim_event_get(hStart), *b = sim_event_get(hEnd);
	if (!a || !b)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_done_mu);
	if (a->rec_gen == 0 || b->rec_gen == 0 || (a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (a->done_gen < a->rec_gen || b->done_gen < b->rec_gen)
		rc = CUDA_ERROR_NOT_READY;
	else
		*pMilliseconds = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
					 (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
	pthread_mutex_unlock(&sim_done_mu);
	return rc;
}

SIM_EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return cuEventElapsedTime(pMilliseconds, hStart, hEnd);
}

/* ---- cuStreamWaitEvent */

struct sim_evwait_work {
	struct sim_work w;
	struct CUevent_st *e;
	uint64_t gen;
};

static CUresult sim_evwait_run(struct sim_work *w)
{
	struct sim_evwait_work *ew = (struct sim_evwait_work *)w;
	pthread_mutex_lock(&sim_done_mu);
	while (ew->e->done_gen < ew->gen)
		pthread_cond_wait(&sim_done_cv, &sim_done_mu);
	pthread_mutex_unlock(&sim_done_mu);
	return CUDA_SUCCESS;
}

CUresult sim_stream_wait_event(enum sim_ds ds, CUstream hs, CUevent h, unsigned flags)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(hs, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUevent_st *e = sim_event_get(h);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_done_mu);
	uint64_t gen = e->rec_gen;
	pthread_mutex_unlock(&sim_done_mu);
	if (gen == 0)
		return CUDA_SUCCESS; /* never recorded: nothing to wait for */
	struct sim_evwait_work *ew = calloc(1, sizeof(*ew));
	if (!ew)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ew->w.run = sim_evwait_run;
	ew->w.what = "event wait";
	ew->e = e;
	ew->gen = gen;
	return sim_stream_enqueue(s, &ew->w, NULL);
}
