/* SPDX-License-Identifier: MIT
 *
 * sim_stream.c - streams: one worker thread and one FIFO of work items per
 * stream, so asynchronous work really runs behind the program's back and
 * ordering bugs show.  Also the default streams and their semantics.
 *
 * Sequence numbers: each item gets seq = ++stream->enq_seq when queued; the
 * worker sets stream->done_seq = seq when it finished.  "Wait for (s, n)" is
 * `while (s->done_seq < n) wait(sim_done_cv)`.  Events, stream queries,
 * synchronisation and the implicit dependencies are all built on that.
 *
 * Default streams:
 *  - the legacy stream (handle 0 in the plain entry points, CU_STREAM_LEGACY
 *    everywhere) is one per context.  Work queued on it first waits for all
 *    work queued so far on every blocking stream of the context (flags
 *    CU_STREAM_DEFAULT, the per-thread streams included), and work queued on
 *    a blocking stream first waits for the work queued so far on the legacy
 *    stream.  Non-blocking streams (CU_STREAM_NON_BLOCKING) do neither.  The
 *    dependency is a wait item queued in front of the work, decided under
 *    ctx->mu so concurrent host threads see one order.
 *  - the per-thread stream (handle 0 in the _ptsz/_ptds entry points,
 *    CU_STREAM_PER_THREAD everywhere) is one per host thread, created on
 *    first use, a blocking stream, drained and stopped when its thread exits.
 *
 * Contract: any thread may call.  Locks in order: ctx->mu, sim_streams_mu,
 * stream->mu, sim_done_mu; none is held while an item runs.  Destroyed
 * streams are marked dead and kept (never freed).
 */
#include "sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t sim_done_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_done_cv = PTHREAD_COND_INITIALIZER;

static pthread_mutex_t sim_streams_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *sim_streams;  /* every live stream (sim_streams_mu) */
static atomic_ullong sim_stream_ids = 1;

void sim_set_sticky(CUresult rc)
{
	int expected = 0;
	if (rc != CUDA_SUCCESS)
		atomic_compare_exchange_strong(&sim_sticky, &expected, (int)rc);
}

/* ---- the worker */

static void *sim_worker(void *arg)
{
	struct CUstream_st *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->quit)
			pthread_cond_wait(&s->cv, &s->mu);
		struct sim_work *w = s->head;
		if (!w)
			break;
		s->head = w->next;
		if (!s->head)
			s->tail = NULL;
		pthread_mutex_unlock(&s->mu);

		CUresult rc = w->run(w);
		if (rc != CUDA_SUCCESS)
			sim_set_sticky(rc);
		uint64_t seq = w->seq;
		if (w->release)
			w->release(w);
		else
			free(w);

		pthread_mutex_lock(&sim_done_mu);
		s->done_seq = seq;
		pthread_cond_broadcast(&sim_done_cv);
		pthread_mutex_unlock(&sim_done_mu);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- waiting */

static void sim_wait_done(struct CUstream_st *s, uint64_t seq)
{
	pthread_mutex_lock(&sim_done_mu);
	while (s->done_seq < seq)
		pthread_cond_wait(&sim_done_cv, &sim_done_mu);
	pthread_mutex_unlock(&sim_done_mu);
}

CUresult sim_stream_wait_seq(struct CUstream_st *s, uint64_t seq)
{
	sim_wait_done(s, seq);
	int sticky = atomic_load(&sim_sticky);
	return sticky ? (CUresult)sticky : CUDA_SUCCESS;
}

static uint64_t sim_enq_seq(struct CUstream_st *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->enq_seq;
	pthread_mutex_unlock(&s->mu);
	return n;
}

static int sim_pending(struct CUstream_st *s, uint64_t upto)
{
	pthread_mutex_lock(&sim_done_mu);
	int p = s->done_seq < upto;
	pthread_mutex_unlock(&sim_done_mu);
	return p;
}

/* A wait item: blocks its worker until each (stream, seq) is done. */
struct sim_dep {
	struct CUstream_st *s;
	uint64_t seq;
};
struct sim_wait_work {
	struct sim_work w;
	size_t n;
	struct sim_dep deps[];
};

static CUresult sim_wait_run(struct sim_work *w)
{
	struct sim_wait_work *ww = (struct sim_wait_work *)w;
	for (size_t i = 0; i < ww->n; i++)
		sim_wait_done(ww->deps[i].s, ww->deps[i].seq);
	return CUDA_SUCCESS;
}

/* ---- queueing */

static uint64_t sim_push(struct CUstream_st *s, struct sim_work *w)
{
	pthread_mutex_lock(&s->mu);
	uint64_t seq = w->seq = ++s->enq_seq;
	w->stream = s;
	w->next = NULL;
	if (s->tail)
		s->tail->next = w;
	else
		s->head = w;
	s->tail = w;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return seq;
}

static int sim_blocking(const struct CUstream_st *s)
{
	return !(s->flags & CU_STREAM_NON_BLOCKING);
}

CUresult sim_stream_enqueue(struct CUstream_st *s, struct sim_work *w, uint64_t *seq)
{
	struct CUctx_st *c = s->ctx;
	if (!sim_blocking(s) || !c->legacy) {
		uint64_t n = sim_push(s, w);
		if (seq)
			*seq = n;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&c->mu);
	struct sim_wait_work *ww = NULL;
	if (s == c->legacy) {
		/* Legacy: after every blocking stream's work so far. */
		pthread_mutex_lock(&sim_streams_mu);
		size_t cap = 0;
		for (struct CUstream_st *t = sim_streams; t; t = t->next_all)
			cap += t->ctx == c && t != s && sim_blocking(t);
		if (cap) {
			ww = calloc(1, sizeof(*ww) + cap * sizeof(ww->deps[0]));
			for (struct CUstream_st *t = sim_streams; ww && t; t = t->next_all) {
				if (t->ctx != c || t == s || !sim_blocking(t))
					continue;
				uint64_t n = sim_enq_seq(t);
				if (sim_pending(t, n))
					ww->deps[ww->n++] = (struct sim_dep){ t, n };
			}
		}
		pthread_mutex_unlock(&sim_streams_mu);
	} else {
		/* A blocking stream: after the legacy stream's work so far. */
		uint64_t n = sim_enq_seq(c->legacy);
		if (sim_pending(c->legacy, n)) {
			ww = calloc(1, sizeof(*ww) + sizeof(ww->deps[0]));
			if (ww)
				ww->deps[ww->n++] = (struct sim_dep){ c->legacy, n };
		}
	}
	if (ww && ww->n) {
		ww->w.run = sim_wait_run;
		sim_push(s, &ww->w);
	} else {
		free(ww);
	}
	uint64_t n = sim_push(s, w);
	pthread_mutex_unlock(&c->mu);
	if (seq)
		*seq = n;
	return CUDA_SUCCESS;
}

/* ---- creation and destruction */

CUresult sim_stream_create(struct CUctx_st *ctx, unsigned flags, int priority, int kind,
			   struct CUstream_st **out)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->magic = SIM_MAGIC_STREAM;
	s->flags = flags;
	s->priority = priority;
	s->kind = kind;
	s->id = atomic_fetch_add(&sim_stream_ids, 1);
	s->ctx = ctx;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	int err = pthread_create(&s->worker, NULL, sim_worker, s);
	if (err) {
		sim_msg("cannot start a stream worker thread: %s", strerror(err));
		free(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&sim_streams_mu);
	s->next_all = sim_streams;
	sim_streams = s;
	pthread_mutex_unlock(&sim_streams_mu);
	*out = s;
	return CUDA_SUCCESS;
}

void sim_stream_destroy(struct CUstream_st *s)
{
	pthread_mutex_lock(&sim_streams_mu);
	for (struct CUstream_st **p = &sim_streams; *p; p = &(*p)->next_all) {
		if (*p == s) {
			*p = s->next_all;
			break;
		}
	}
	pthread_mutex_unlock(&sim_streams_mu);
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (!pthread_equal(pthread_self(), s->worker))
		pthread_join(s->worker, NULL);
	else
		pthread_detach(s->worker);
	s->magic = SIM_MAGIC_DEAD;
}

void sim_ctx_destroy_streams(struct CUctx_st *ctx)
{
	for (;;) {
		struct CUstream_st *victim = NULL;
		pthread_mutex_lock(&sim_streams_mu);
		for (struct CUstream_st *t = sim_streams; t; t = t->next_all)
			if (t->ctx == ctx)
				victim = t;
		pthread_mutex_unlock(&sim_streams_mu);
		if (!victim)
			break;
		sim_stream_destroy(victim);
	}
}

/* Waits for what every stream matching ctx (NULL: all) has queued so far. */
static void sim_sync_matching(struct CUctx_st *ctx)
{
	size_t cap = 0, n = 0;
	pthread_mutex_lock(&sim_streams_mu);
	for (struct CUstream_st *t = sim_streams; t; t = t->next_all)
		cap++;
	struct sim_dep *deps = calloc(cap ? cap : 1, sizeof(*deps));
	for (struct CUstream_st *t = sim_streams; deps && t; t = t->next_all)
		if (!ctx || t->ctx == ctx)
			deps[n++] = (struct sim_dep){ t, sim_enq_seq(t) };
	pthread_mutex_unlock(&sim_streams_mu);
	/* Streams are never freed, so waiting outside the lock is safe; a
	 * stream destroyed meanwhile was drained first. */
	for (size_t i = 0; i < n; i++)
		sim_wait_done(deps[i].s, deps[i].seq);
	free(deps);
}

CUresult sim_ctx_sync_streams(struct CUctx_st *ctx)
{
	sim_sync_matching(ctx);
	int sticky = atomic_load(&sim_sticky);
	return sticky ? (CUresult)sticky : CUDA_SUCCESS;
}

void sim_sync_all(void)
{
	sim_sync_matching(NULL);
}

/* ---- the per-thread default stream */

static __thread struct CUstream_st *sim_ptds;
static pthread_key_t sim_ptds_key;
static pthread_once_t sim_ptds_once = PTHREAD_ONCE_INIT;

static void sim_ptds_exit(void *p)
{
	struct CUstream_st *s = p;
	if (s && s->magic == SIM_MAGIC_STREAM) {
		sim_wait_done(s, sim_enq_seq(s));
		sim_stream_destroy(s);
	}
}

static void sim_ptds_key_make(void)
{
	pthread_key_create(&sim_ptds_key, sim_ptds_exit);
}

static CUresult sim_ptds_get(struct CUctx_st *c, struct CUstream_st **out)
{
	if (sim_ptds && sim_ptds->magic == SIM_MAGIC_STREAM && sim_ptds->ctx == c) {
		*out = sim_ptds;
		return CUDA_SUCCESS;
	}
	if (sim_ptds && sim_ptds->magic == SIM_MAGIC_STREAM)
		sim_ptds_exit(sim_ptds);
	sim_ptds = NULL;
	CUresult rc = sim_stream_create(c, CU_STREAM_DEFAULT, 0, 2, &sim_ptds);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_once(&sim_ptds_once, sim_ptds_key_make);
	pthread_setspecific(sim_ptds_key, sim_ptds);
	*out = sim_ptds;
	return CUDA_SUCCESS;
}

CUresult sim_stream_resolve(CUstream h, enum sim_ds ds, struct CUstream_st **out)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (h && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD) {
		if (h->magic != SIM_MAGIC_STREAM || !sim_ctx_valid(h->ctx))
			return CUDA_ERROR_INVALID_HANDLE;
		*out = h;
		return CUDA_SUCCESS;
	}
	struct CUctx_st *c;
	rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (h == CU_STREAM_PER_THREAD || (!h && ds == SIM_DS_PER_THREAD))
		return sim_ptds_get(c, out);
	if (!c->legacy)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = c->legacy;
	return CUDA_SUCCESS;
}

/* ---- entry points */

static CUresult sim_stream_new(CUstream *phStream, unsigned int flags, int priority)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	SIM_FAULT_CHECK("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY);
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	return sim_stream_create(c, flags, priority, 0, phStream);
}

SIM_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return sim_stream_new(phStream, Flags, 0);
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	return sim_stream_new(phStream, flags, priority);
}

SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_INITIALIZED)
		rc = CUDA_SUCCESS; /* destroying is allowed after a sticky error */
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ||
	    hStream->magic != SIM_MAGIC_STREAM || hStream->kind != 0)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The driver lets queued work finish before releasing the stream. */
	sim_wait_done(hStream, sim_enq_seq(hStream));
	sim_stream_destroy(hStream);
	return CUDA_SUCCESS;
}

CUresult sim_stream_synchronize(enum sim_ds ds, CUstream h)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	return sim_stream_wait_seq(s, sim_enq_seq(s));
}

CUresult sim_stream_query(enum sim_ds ds, CUstream h)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	return sim_pending(s, sim_enq_seq(s)) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult sim_stream_get_flags(enum sim_ds ds, CUstream h, unsigned *flags)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = s->flags;
	return CUDA_SUCCESS;
}

CUresult sim_stream_get_priority(enum sim_ds ds, CUstream h, int *priority)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	*priority = s->priority;
	return CUDA_SUCCESS;
}

CUresult sim_stream_get_ctx(enum sim_ds ds, CUstream h, CUcontext *pctx)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = s->ctx;
	return CUDA_SUCCESS;
}

CUresult sim_stream_get_id(enum sim_ds ds, CUstream h, unsigned long long *id)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	*id = s->id;
	return CUDA_SUCCESS;
}

CUresult sim_stream_is_capturing(enum sim_ds ds, CUstream h, CUstreamCaptureStatus *status)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	*status = CU_STREAM_CAPTURE_STATUS_NONE; /* capture is not supported */
	return CUDA_SUCCESS;
}

/* Host functions and callbacks run on the stream's worker, in order. */
struct sim_host_work {
	struct sim_work w;
	CUhostFn fn;
	CUstreamCallback cb;
	CUstream handle;
	void *user;
};

static CUresult sim_host_run(struct sim_work *w)
{
	struct sim_host_work *hw = (struct sim_host_work *)w;
	if (hw->fn)
		hw->fn(hw->user);
	else
		hw->cb(hw->handle, (CUresult)atomic_load(&sim_sticky), hw->user);
	return CUDA_SUCCESS;
}

static CUresult sim_host_enqueue(enum sim_ds ds, CUstream h, CUhostFn fn, CUstreamCallback cb, void *user)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!fn && !cb)
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_host_work *hw = calloc(1, sizeof(*hw));
	if (!hw)
		return CUDA_ERROR_OUT_OF_MEMORY;
	hw->w.run = sim_host_run;
	hw->fn = fn;
	hw->cb = cb;
	hw->handle = h;
	hw->user = user;
	return sim_stream_enqueue(s, &hw->w, NULL);
}

CUresult sim_stream_host_func(enum sim_ds ds, CUstream s, CUhostFn fn, void *user)
{
	return sim_host_enqueue(ds, s, fn, NULL, user);
}

CUresult sim_stream_add_callback(enum sim_ds ds, CUstream s, CUstreamCallback cb, void *user, unsigned flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_host_enqueue(ds, s, NULL, cb, user);
}
