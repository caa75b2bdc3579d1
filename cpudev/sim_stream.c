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
 * Handles and memory: a destroyed stream's worker is joined and its queue is
 * empty; the struct goes to a pool (sim_stream_pool) and the next stream
 * created reuses it under a new generation.  A program's CUstream is the
 * struct's address with the generation in bits 48..63 (SIM_GEN_SHIFT; user
 * addresses on x86-64 fit in 47 bits), so a stale handle - its struct dead,
 * pooled or reused - fails with CUDA_ERROR_INVALID_HANDLE instead of reaching
 * another stream.  Struct memory is never returned to malloc, so internal
 * references that outlive a stream stay safe: enq_seq/done_seq carry on
 * across incarnations (never reset), so a dependency (stream, seq) taken
 * before the destroy, which drained the stream, is already satisfied.  The
 * cost is one struct (~190 bytes) per stream alive at the PEAK, whatever the
 * number created.  (A generation repeats after 65535 reuses of one struct: a
 * handle that stale could alias a live stream.)  Using a handle on one thread
 * while another destroys it is a program error, as with the driver.
 *
 * Contract: any thread may call.  Locks in order: ctx->mu, sim_streams_mu,
 * stream->mu, sim_done_mu; none is held while an item runs.
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
static struct CUstream_st *sim_stream_pool; /* destroyed, reusable (sim_streams_mu) */
static atomic_ullong sim_stream_ids = 1;

/* ---- handles: struct address | generation << SIM_GEN_SHIFT */

#define SIM_GEN_SHIFT 48
#define SIM_ADDR_MASK ((UINT64_C(1) << SIM_GEN_SHIFT) - 1)

static CUstream sim_stream_handle(const struct CUstream_st *s)
{
	return (CUstream)((uintptr_t)s | (uintptr_t)s->gen << SIM_GEN_SHIFT);
}

/* The live stream of kind `kind` that handle h names, or NULL (a stale or
 * foreign handle).  Reading a dead struct is safe: they are never freed. */
static struct CUstream_st *sim_stream_of_handle(CUstream h, int kind)
{
	struct CUstream_st *s = (struct CUstream_st *)((uintptr_t)h & SIM_ADDR_MASK);

	if (!s || s->magic != SIM_MAGIC_STREAM || s->kind != kind ||
	    s->gen != (uint16_t)((uintptr_t)h >> SIM_GEN_SHIFT))
		return NULL;
	return s;
}

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
	int timeline = sim_timeline_on();
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

		struct sim_timeline_mark mark;
		const char *what = w->what;
		if (timeline)
			sim_timeline_now(&mark);
		CUresult rc = w->run(w);
		if (timeline)
			sim_timeline_item(s->id, what, &mark);
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
	ww->w.what = "stream wait";
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

/* A struct for a new stream: a pooled one (its generation moves on, its
 * sequence numbers carry on) or a fresh one. */
static struct CUstream_st *sim_stream_struct(void)
{
	pthread_mutex_lock(&sim_streams_mu);
	struct CUstream_st *s = sim_stream_pool;
	if (s)
		sim_stream_pool = s->next_all;
	pthread_mutex_unlock(&sim_streams_mu);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		if ((uintptr_t)s & ~SIM_ADDR_MASK) {
			/* Cannot happen with 4-level paging; refuse rather than
			 * hand out an ambiguous handle. */
			sim_msg("stream struct above 2^48; cannot tag its handle");
			free(s);
			return NULL;
		}
		pthread_mutex_init(&s->mu, NULL);
		pthread_cond_init(&s->cv, NULL);
	}
	if (++s->gen == 0)
		s->gen = 1;
	s->head = s->tail = NULL;
	s->quit = 0;
	s->next_all = NULL;
	return s;
}

static void sim_stream_pool_put(struct CUstream_st *s)
{
	pthread_mutex_lock(&sim_streams_mu);
	s->next_all = sim_stream_pool;
	sim_stream_pool = s;
	pthread_mutex_unlock(&sim_streams_mu);
}

CUresult sim_stream_create(struct CUctx_st *ctx, unsigned flags, int priority, int kind,
			   struct CUstream_st **out)
{
	struct CUstream_st *s = sim_stream_struct();
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->flags = flags;
	s->priority = priority;
	s->kind = kind;
	s->id = atomic_fetch_add(&sim_stream_ids, 1);
	s->ctx = ctx;
	int err = pthread_create(&s->worker, NULL, sim_worker, s);
	if (err) {
		sim_msg("cannot start a stream worker thread: %s", strerror(err));
		sim_stream_pool_put(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&sim_streams_mu);
	s->magic = SIM_MAGIC_STREAM;
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
	s->magic = SIM_MAGIC_DEAD;
	if (!pthread_equal(pthread_self(), s->worker)) {
		pthread_join(s->worker, NULL);
		sim_stream_pool_put(s);
	} else {
		/* Destroyed from its own worker (a host function): the worker
		 * still runs its loop, so this struct is never reused. */
		pthread_detach(s->worker);
	}
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
	/* Stream structs are never freed, so waiting outside the lock is safe;
	 * a stream destroyed meanwhile was drained first, and a reused struct's
	 * sequence numbers only grow. */
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

/* This thread's per-thread stream, as a tagged handle: the struct may have
 * been destroyed (cuCtxDestroy) and reused since. */
static __thread CUstream sim_ptds;
static pthread_key_t sim_ptds_key;
static pthread_once_t sim_ptds_once = PTHREAD_ONCE_INIT;

static void sim_ptds_exit(void *p)
{
	struct CUstream_st *s = sim_stream_of_handle(p, 2);
	if (s) {
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
	struct CUstream_st *s = sim_stream_of_handle(sim_ptds, 2);
	if (s && s->ctx == c) {
		*out = s;
		return CUDA_SUCCESS;
	}
	if (s)
		sim_ptds_exit(sim_ptds);
	sim_ptds = NULL;
	CUresult rc = sim_stream_create(c, CU_STREAM_DEFAULT, 0, 2, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	sim_ptds = sim_stream_handle(s);
	pthread_once(&sim_ptds_once, sim_ptds_key_make);
	pthread_setspecific(sim_ptds_key, sim_ptds);
	*out = s;
	return CUDA_SUCCESS;
}

CUresult sim_stream_resolve(CUstream h, enum sim_ds ds, struct CUstream_st **out)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (h && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD) {
		struct CUstream_st *s = sim_stream_of_handle(h, 0);
		if (!s || !sim_ctx_valid(s->ctx))
			return CUDA_ERROR_INVALID_HANDLE;
		*out = s;
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
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	struct CUstream_st *s;
	rc = sim_stream_create(c, flags, priority, 0, &s);
	if (rc == CUDA_SUCCESS)
		*phStream = sim_stream_handle(s);
	return rc;
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
	struct CUstream_st *s = hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ?
		NULL : sim_stream_of_handle(hStream, 0);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The driver lets queued work finish before releasing the stream. */
	sim_wait_done(s, sim_enq_seq(s));
	sim_stream_destroy(s);
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

/* cuStreamGetCaptureInfo (v1, v2, v3): capture is never active here, so
 * the status is NONE and the optional outputs, which the driver defines
 * only for an active capture, are zeroed.  PyTorch asks it before every
 * allocation (the caching allocator's capture check). */
CUresult sim_stream_capture_info(enum sim_ds ds, CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id,
				 CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges,
				 size_t *ndeps)
{
	CUresult rc = sim_stream_is_capturing(ds, h, status);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (id)
		*id = 0;
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
	return CUDA_SUCCESS;
}

/* cuThreadExchangeStreamCaptureMode: the calling thread's capture
 * interaction mode, exchanged (NCCL and cudart wrap their allocations in a
 * pair of calls to relax it).  No capture is ever active here, so the mode
 * changes nothing; it is kept per thread and answered back as the driver
 * does (default GLOBAL). */
SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	static __thread CUstreamCaptureMode current = CU_STREAM_CAPTURE_MODE_GLOBAL;
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
		      *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
		return CUDA_ERROR_INVALID_VALUE;
	CUstreamCaptureMode old = current;
	current = *mode;
	*mode = old;
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
	hw->w.what = "host function";
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
