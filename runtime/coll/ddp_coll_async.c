/* SPDX-License-Identifier: MIT
 *
 * ddp_coll_async.c - stream-ordered collectives (ddp_coll.h, the _async
 * calls): the reduction is enqueued on the communicator's own communication
 * stream, which first waits for an event recorded on the producing stream;
 * a consumer's stream waits for the event recorded on the communication
 * stream after it.  The calling thread never waits for the data.
 *
 *   producer:  ... kernels ... [record P_t]
 *   comm:          [wait P_t] [D2H chunk][host fn: reduce][H2D chunk] ... [record D_t]
 *   consumer:                                           [wait D_t] kernel ...
 *
 * NCCL: ncclAllReduce on the communication stream, between two host
 * functions that stamp the start and end times (they make no CUDA call).
 * A watchdog thread (the comm's progress thread, in NCCL mode) follows the
 * ops in flight: it polls their done events and ncclCommGetAsyncError and
 * aborts the communicator on an error or after cfg.timeout_s without
 * progress, so that a dead peer never leaves a stream waiting forever; it
 * marks the comm busy (cfg.busy) while ops are in flight.
 * Host backend: the communication stream copies each chunk of a device
 * buffer into the pinned async staging buffer, then runs a host function
 * that hands the chunk to this communicator's progress thread and blocks
 * the stream until the progress thread has reduced it (through the host
 * backend, like a synchronous host-buffer allreduce), then copies it back.
 * A host buffer needs no copies: the host function reduces it in place.
 * So on the CPU device the reduction runs beside the kernels of the
 * producing stream exactly as NCCL's kernels run beside them on a GPU.
 *
 * Tickets: op t (1, 2, ...) uses event slot t % ASYNC_SLOTS for its
 * producer and done events.  Waiting on a slot that a later op re-recorded
 * waits for that later op: later, never earlier, so always correct.
 *
 * Errors: a failure on the progress thread (a dead peer, a timeout in the
 * host backend's barriers) is kept in the async state (failed, err) and the
 * jobs behind it are completed without running, so no stream waits forever;
 * the caller learns it at its next call (ddp_coll_async_error, the waits,
 * any collective), as with every other collective error: the comm is
 * broken.
 *
 * Contract: the _async calls, the waits and ddp_comm_destroy run on the
 * comm's one calling thread (ddp_coll.h).  Threads of this file: the
 * progress thread (host backend; started at the first async allreduce) and
 * whatever thread the driver runs host functions on.  a->mu guards the job
 * queue, the done flags, the finished-op ring and the failure; everything
 * else in struct coll_async belongs to the calling thread.  A host function
 * makes no CUDA call.  The synchronous collectives first wait for every
 * async op (ddp_coll_async_drain), so the backends' state never has two
 * users at once.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_coll_backend.h"
#include "ddp_log.h"
#include "ddp_stats.h"

#define ASYNC_SLOTS 64                  /* event ring (power of two)         */
#define ASYNC_DONE_RING 256             /* finished ops kept for the caller   */
#define ASYNC_DEFAULT_STAGE (16u << 20) /* pinned staging of device buffers  */

/* One reduction the progress thread runs: a chunk of an op. */
struct async_job {
	struct coll_async *a;
	void *buf; /* host memory: staging chunk or the caller's */
	size_t count;
	enum ddp_dtype t;
	uint64_t ticket;
	int first, last; /* first / last chunk of its op (times)       */
	int done;        /* set by the progress thread (a->mu)         */
	struct coll_tag tag; /* compared in the host descriptor barrier */
	struct async_job *next;
};

/* Start and end of an NCCL op, stamped by host functions on the stream. */
struct async_stamp {
	struct coll_async *a;
	uint64_t ticket;
	uint64_t bytes;
	int end;
	double *tagv;        /* end, tagged: the op's reduced tags (pinned) */
	struct coll_tag tag; /*   and this rank's                          */
};

struct coll_async {
	struct ddp_comm *c;
	CUstream cs;               /* the communication stream            */
	CUevent prod[ASYNC_SLOTS]; /* recorded on producers               */
	CUevent done[ASYNC_SLOTS]; /* recorded on cs after each op         */
	void *stage;               /* pinned, stage_bytes (host backend)   */
	double *tags;              /* pinned, ASYNC_SLOTS x world (NCCL tags) */
	size_t stage_bytes;
	uint64_t issued; /* last ticket handed out              */
	/* progress thread */
	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;             /* jobs queued / quit                   */
	pthread_cond_t cv_done;        /* a job finished                       */
	struct async_job *head, *tail; /* (mu)                                 */
	int quit;                      /* (mu)                                 */
	/* finished ops, for ddp_coll_async_times (mu) */
	struct ddp_coll_time ring[ASYNC_DONE_RING];
	uint64_t ring_w, ring_r;
	uint64_t cur_start_ns;  /* start of the op in progress (mu)    */
	uint64_t cur_arrive_ns; /* every rank reached it (mu; host)    */
	uint64_t watched;       /* NCCL: last ticket seen done (watchdog) */
	CUcontext ctx;          /* the context of cs (watchdog thread)   */
	/* NCCL: a tagged op whose ranks' tags differ (mu): a failure once no
	 * NCCL error explains it (a dead peer's op ends with undefined
	 * data): ddp_coll_async_error and the watchdog decide */
	int tag_bad;
	char tag_err[COLL_ERR_LEN];
	/* failure on the progress thread (mu; failed also read atomically) */
	int failed;
	ddp_result fail_rc;
	char err[COLL_ERR_LEN];
};

static uint64_t now_ns(void)
{
	return ddp_now_ns();
}

static ddp_result async_cu(struct ddp_comm *c, CUresult e, const char *op)
{
	if (e == CUDA_SUCCESS)
		return DDP_OK;
	return coll_fail(c, DDP_ERR_CUDA, 1, "async allreduce #%" PRIu64 ": %s failed on rank %d: %s", c->seq,
			 op, c->rank, coll_cu_name(c, e));
}

/* Records a finished op (a->mu held). */
static void ring_put(struct coll_async *a, uint64_t ticket, uint64_t t0, uint64_t t1, uint64_t arrive,
		     uint64_t bytes)
{
	struct ddp_coll_time *r = &a->ring[a->ring_w % ASYNC_DONE_RING];
	r->ticket = ticket;
	r->start_ns = t0;
	r->end_ns = t1;
	r->arrive_ns = arrive;
	r->bytes = bytes;
	a->ring_w++;
	if (a->ring_w - a->ring_r > ASYNC_DONE_RING)
		a->ring_r = a->ring_w - ASYNC_DONE_RING; /* the caller did not read: drop the oldest */
}

/* ---- progress thread (host backend) */

static void *async_progress(void *arg)
{
	struct coll_async *a = arg;
	struct ddp_comm *c = a->c;
	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!a->head && !a->quit)
			pthread_cond_wait(&a->cv, &a->mu);
		struct async_job *j = a->head;
		if (!j)
			break;
		a->head = j->next;
		if (!a->head)
			a->tail = NULL;
		int skip = a->failed;
		pthread_mutex_unlock(&a->mu);

		uint64_t t0 = now_ns(), arrive = 0;
		ddp_result rc = DDP_OK;
		if (!skip) {
			if (c->cfg.busy)
				c->cfg.busy(1, j->ticket);
			c->bg_wait = 1;
			c->arrived_ns = 0;
			c->host_tag = j->tag;
			rc = coll_host_allreduce(c, j->buf, j->count, j->t, 0, NULL);
			memset(&c->host_tag, 0, sizeof c->host_tag);
			arrive = c->arrived_ns;
			c->bg_wait = 0;
			if (c->cfg.busy)
				c->cfg.busy(rc == DDP_OK ? 0 : -1, j->ticket);
			if (rc == DDP_OK)
				coll_account(c, DDP_COLL_ALLREDUCE, j->count * ddp_dtype_size(j->t),
					     (double)t0 * 1e-9);
		}
		uint64_t t1 = now_ns();

		pthread_mutex_lock(&a->mu);
		if (rc != DDP_OK && !a->failed) {
			a->failed = 1;
			a->fail_rc = rc;
			snprintf(a->err, sizeof a->err, "%s",
				 c->err[0] ? c->err : "libddp: async allreduce failed");
		}
		if (j->first) {
			a->cur_start_ns = t0;
			a->cur_arrive_ns = arrive;
		}
		if (j->last)
			ring_put(a, j->ticket, a->cur_start_ns, t1, a->cur_arrive_ns, 0);
		j->done = 1;
		pthread_cond_broadcast(&a->cv_done);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* ---- watchdog thread (NCCL) */

static void watchdog_fail(struct coll_async *a, ddp_result rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void watchdog_fail(struct coll_async *a, ddp_result rc, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&a->mu);
	if (!a->failed) {
		int n = snprintf(a->err, sizeof a->err, "libddp: ");
		va_start(ap, fmt);
		vsnprintf(a->err + n, sizeof a->err - (size_t)n, fmt, ap);
		va_end(ap);
		__atomic_store_n(&a->failed, 1, __ATOMIC_RELEASE);
		a->fail_rc = rc;
	}
	pthread_mutex_unlock(&a->mu);
	DDP_ERROR("%s", a->err + 8);
	coll_nccl_abort(a->c); /* NCCL's kernels return; the streams go on */
}

static int tag_fail(struct coll_async *a);

static void *async_watchdog(void *arg)
{
	struct coll_async *a = arg;
	struct ddp_comm *c = a->c;
	const struct ddp_driver *d = c->cfg.driver;
	char msg[256];
	if (a->ctx && d->ctxSetCurrent)
		(void)d->ctxSetCurrent(a->ctx);
	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!a->quit && (a->failed || a->watched >= __atomic_load_n(&a->issued, __ATOMIC_ACQUIRE)))
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->quit)
			break;
		pthread_mutex_unlock(&a->mu);
		uint64_t last = now_ns(), t = a->watched + 1;
		if (c->cfg.busy)
			c->cfg.busy(1, t);
		for (unsigned i = 0;; i++) {
			uint64_t issued = __atomic_load_n(&a->issued, __ATOMIC_ACQUIRE);
			CUresult q = d->eventQuery(a->done[t % ASYNC_SLOTS]);
			/* NCCL's error first: a failed collective may still let its
			 * stream pass (its results are undefined), so "done" alone
			 * is no success */
			if (coll_nccl_async_failed(c, msg, sizeof msg)) {
				watchdog_fail(a, DDP_ERR_NCCL,
					      "async allreduce #%" PRIu64 " failed on rank %d: %s", t,
					      c->rank, msg);
				break;
			}
			if (tag_fail(a))
				break;
			if (q == CUDA_SUCCESS) {
				if (tag_fail(a)) /* its end stamp ran before its done event */
					break;
				a->watched = t; /* (a later op may have reused the slot: then it is done too) */
				last = now_ns();
				if (t >= issued)
					break;
				if (c->cfg.busy) { /* the board follows the op watched */
					c->cfg.busy(0, t);
					c->cfg.busy(1, t + 1);
				}
				t++;
				continue;
			}
			if (q != CUDA_ERROR_NOT_READY) {
				watchdog_fail(a, DDP_ERR_CUDA,
					      "async allreduce #%" PRIu64 " on rank %d: stream error %s", t,
					      c->rank, coll_cu_name(c, q));
				break;
			}
			if ((double)(now_ns() - last) * 1e-9 > c->cfg.timeout_s) {
				/* name the ranks that do not answer (those whose
				 * own watch gives up on the op too do) */
				char who[128] = "";
				if (c->cfg.silent)
					c->cfg.silent(t, who, sizeof who);
				if (who[0])
					watchdog_fail(a, DDP_ERR_TIMEOUT,
						      "async allreduce #%" PRIu64 " made no progress for %.0f s on "
						      "rank %d: rank%s %s stopped answering (stopped, dead, or "
						      "never issued it); NCCL aborted",
						      t, c->cfg.timeout_s, c->rank, strchr(who, ',') ? "s" : "",
						      who);
				else
					watchdog_fail(a, DDP_ERR_TIMEOUT,
						      "async allreduce #%" PRIu64 " made no progress for %.0f s on "
						      "rank %d (every rank answered: all stuck in it, a network or "
						      "GPU hang?); NCCL aborted",
						      t, c->cfg.timeout_s, c->rank);
				break;
			}
			if (__atomic_load_n(&a->quit, __ATOMIC_ACQUIRE))
				break;
			struct timespec ts = { 0, i < 100 ? 50000 : 1000000 };
			nanosleep(&ts, NULL);
		}
		if (c->cfg.busy)
			c->cfg.busy(__atomic_load_n(&a->failed, __ATOMIC_ACQUIRE) ? -1 : 0, t);
		pthread_mutex_lock(&a->mu);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* Host function on cs: hand the job over, hold the stream until it ran. */
static void CUDA_CB async_host_job(void *p)
{
	struct async_job *j = p;
	struct coll_async *a = j->a;
	pthread_mutex_lock(&a->mu);
	j->next = NULL;
	if (a->tail)
		a->tail->next = j;
	else
		a->head = j;
	a->tail = j;
	pthread_cond_signal(&a->cv);
	while (!j->done)
		pthread_cond_wait(&a->cv_done, &a->mu);
	pthread_mutex_unlock(&a->mu);
	free(j);
}

/* A tag as one double (exact below 2^53): step * 4 + phase. */
static double tag_enc(const struct coll_tag *g)
{
	return (double)(g->step * 4 + g->phase);
}

/* NCCL, at the end of a tagged op: every rank's tag against this rank's
 * (under a->mu); a difference is kept in tag_err (ddp_coll_async_error and
 * the watchdog make it the comm's failure unless NCCL reports an error).
 * A zero is a contribution that did not arrive (a dead peer; the stand-in's
 * drop fault): every rank that runs the tag op posts a non-zero tag. */
static void tag_check(struct coll_async *a, const struct async_stamp *s)
{
	struct ddp_comm *c = a->c;
	double mine = tag_enc(&s->tag);
	char me[96], them[160] = "";
	size_t o = 0;
	int nd = 0;
	for (int q = 0; q < c->world; q++) {
		double v = s->tagv[q];
		if (v == mine || v == 0)
			continue;
		if (++nd <= 3 && o < sizeof them) {
			char tt[96];
			uint64_t u = v >= 0 && v < 9.0e15 ? (uint64_t)v : 0;
			ddp_coll_tag_text(u / 4, (unsigned)(u % 4), tt, sizeof tt);
			int k = snprintf(them + o, sizeof them - o, "%srank %d in %.60s", nd > 1 ? ", " : "", q, tt);
			o += k > 0 ? (size_t)k : 0;
		}
	}
	if (!nd || a->failed || a->tag_bad)
		return;
	if (nd > 3 && o < sizeof them)
		snprintf(them + o, sizeof them - o, " and %d more", nd - 3);
	ddp_coll_tag_text(s->tag.step, s->tag.phase, me, sizeof me);
	snprintf(a->tag_err, sizeof a->tag_err,
		 "libddp: the ranks' gradient collectives no longer pair up: at async allreduce #%" PRIu64
		 " rank %d is in %.60s (%.47s) but %.110s; " COLL_TAG_WHY,
		 s->ticket, c->rank, me, s->tag.what, them);
	__atomic_store_n(&a->tag_bad, 1, __ATOMIC_RELEASE);
}

/* A tag difference becomes the failure when NCCL reports no error (its
 * error, when it has one, explains the op's data): 1 when it did. */
static int tag_fail(struct coll_async *a)
{
	char msg[256];
	if (!__atomic_load_n(&a->tag_bad, __ATOMIC_ACQUIRE) || __atomic_load_n(&a->failed, __ATOMIC_ACQUIRE) ||
	    coll_nccl_async_failed(a->c, msg, sizeof msg))
		return 0;
	pthread_mutex_lock(&a->mu);
	int now = !a->failed;
	if (now) {
		snprintf(a->err, sizeof a->err, "%s", a->tag_err);
		a->fail_rc = DDP_ERR_REMOTE;
		__atomic_store_n(&a->failed, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&a->mu);
	if (now) /* (the caller's next call says it, one line) */
		coll_nccl_abort(a->c); /* the peers' ops in flight end too */
	return 1;
}

/* Host function on cs (NCCL): a time stamp; the end of a tagged op checks
 * the tags (no CUDA call: the tags are pinned host memory). */
static void CUDA_CB async_host_stamp(void *p)
{
	struct async_stamp *s = p;
	struct coll_async *a = s->a;
	uint64_t t = now_ns();
	pthread_mutex_lock(&a->mu);
	if (!s->end)
		a->cur_start_ns = t;
	else
		ring_put(a, s->ticket, a->cur_start_ns, t, 0, s->bytes);
	if (s->end && s->tagv)
		tag_check(a, s);
	pthread_mutex_unlock(&a->mu);
	free(s);
}

/* ---- set-up */

static ddp_result async_setup(struct ddp_comm *c)
{
	const struct ddp_driver *d = c->cfg.driver;
	struct coll_async *a;
	int lo = 0, hi = 0;

	if (c->async)
		return DDP_OK;
	if (!d || !d->streamCreateWithPriority || !d->eventCreate || !d->eventRecord || !d->streamWaitEvent ||
	    !d->launchHostFunc || !d->eventSynchronize || !d->eventQuery)
		return coll_fail(
			c, DDP_ERR_INVALID, 1,
			"async allreduce: the driver table lacks streams, events or host functions (internal error)");
	if (!(a = calloc(1, sizeof *a)))
		return coll_fail(c, DDP_ERR_NOMEM, 1, "async allreduce: out of memory");
	a->c = c;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	pthread_cond_init(&a->cv_done, NULL);
	c->async = a;
	if (d->ctxGetStreamPriorityRange)
		(void)d->ctxGetStreamPriorityRange(&lo, &hi);
	/* the highest priority: a collective waiting for its turn delays every rank */
	DDP_CHECK(async_cu(c, d->streamCreateWithPriority(&a->cs, CU_STREAM_NON_BLOCKING, hi),
			   "cuStreamCreateWithPriority"));
	for (int i = 0; i < ASYNC_SLOTS; i++) {
		DDP_CHECK(async_cu(c, d->eventCreate(&a->prod[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
		DDP_CHECK(async_cu(c, d->eventCreate(&a->done[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
	}
	if (c->world > 1) {
		int nccl = c->backend == DDP_COLL_NCCL;
		if (nccl && d->ctxGetCurrent)
			(void)d->ctxGetCurrent(&a->ctx);
		if (pthread_create(&a->thread, NULL, nccl ? async_watchdog : async_progress, a) != 0)
			return coll_fail(c, DDP_ERR_SYS, 1, "async allreduce: cannot start the %s thread",
					 nccl ? "watchdog" : "progress");
		a->thread_started = 1;
	}
	DDP_DEBUG(COLL, "async collectives: communication stream %p (priority %d)", (void *)a->cs, hi);
	return DDP_OK;
}

/* ---- the API */

ddp_result ddp_coll_async_error(struct ddp_comm *c)
{
	struct coll_async *a = c->async;
	if (a && c->backend == DDP_COLL_NCCL)
		(void)tag_fail(a);
	if (!a || !__atomic_load_n(&a->failed, __ATOMIC_ACQUIRE))
		return c->broken ? DDP_ERR_REMOTE : DDP_OK;
	pthread_mutex_lock(&a->mu);
	ddp_result rc = a->fail_rc;
	if (!c->broken || !c->err[0])
		snprintf(c->err, sizeof c->err, "%s", a->err);
	c->broken = 1;
	pthread_mutex_unlock(&a->mu);
	return rc;
}

static ddp_result enqueue_host_job(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t,
				   uint64_t ticket, int first, int last)
{
	struct coll_async *a = c->async;
	struct async_job *j = calloc(1, sizeof *j);
	if (!j)
		return coll_fail(c, DDP_ERR_NOMEM, 1, "async allreduce: out of memory");
	j->a = a;
	j->buf = buf;
	j->count = count;
	j->t = t;
	j->ticket = ticket;
	j->first = first;
	j->last = last;
	j->tag = c->tag;
	CUresult e = c->cfg.driver->launchHostFunc(a->cs, async_host_job, j);
	if (e != CUDA_SUCCESS) {
		free(j);
		return async_cu(c, e, "cuLaunchHostFunc");
	}
	return DDP_OK;
}

static ddp_result enqueue_stamp(struct ddp_comm *c, uint64_t ticket, uint64_t bytes, int end, double *tagv)
{
	struct async_stamp *s = calloc(1, sizeof *s);
	if (!s)
		return coll_fail(c, DDP_ERR_NOMEM, 1, "async allreduce: out of memory");
	s->a = c->async;
	s->ticket = ticket;
	s->bytes = bytes;
	s->end = end;
	s->tagv = tagv;
	s->tag = c->tag;
	CUresult e = c->cfg.driver->launchHostFunc(c->async->cs, async_host_stamp, s);
	if (e != CUDA_SUCCESS) {
		free(s);
		return async_cu(c, e, "cuLaunchHostFunc");
	}
	return DDP_OK;
}

/* Makes the pinned async staging at least `bytes` (first use, or a larger
 * bucket than before: waits for every op in flight, which may use it). */
static ddp_result async_stage(struct ddp_comm *c, size_t bytes)
{
	struct coll_async *a = c->async;
	const struct ddp_driver *d = c->cfg.driver;
	size_t want = c->cfg.stage_bytes ? 2 * c->cfg.stage_bytes : ASYNC_DEFAULT_STAGE;
	if (bytes > want)
		want = bytes;
	want = (want + 4095) & ~(size_t)4095;
	if (a->stage && a->stage_bytes >= bytes)
		return DDP_OK;
	if (a->stage) {
		if (a->issued)
			DDP_CHECK(async_cu(c, d->eventSynchronize(a->done[a->issued % ASYNC_SLOTS]),
					   "cuEventSynchronize"));
		(void)d->memFreeHost(a->stage);
		a->stage = NULL;
	}
	CUresult e = d->memAllocHost(&a->stage, want);
	if (e != CUDA_SUCCESS) {
		a->stage = NULL;
		return coll_fail(c, DDP_ERR_CUDA, 1, "cannot allocate %zu MiB of pinned staging memory: %s",
				 want >> 20, coll_cu_name(c, e));
	}
	a->stage_bytes = want;
	return DDP_OK;
}

/* Host backend, a device segment reduced in place: chunks through the
 * staging buffer (copy in, reduce, copy back, all on cs). */
static ddp_result enqueue_dev_inplace(struct ddp_comm *c, CUdeviceptr db, size_t count, enum ddp_dtype t,
				      uint64_t ticket, int first, int last)
{
	struct coll_async *a = c->async;
	const struct ddp_driver *d = c->cfg.driver;
	const size_t es = ddp_dtype_size(t);
	DDP_CHECK(async_stage(c, 0));
	const size_t per = a->stage_bytes / es;
	if (count == 0)
		return enqueue_host_job(c, NULL, 0, t, ticket, first, last);
	for (size_t off = 0; off < count; off += per) {
		size_t m = count - off < per ? count - off : per;
		DDP_CHECK(async_cu(c, d->memcpyDtoHAsync(a->stage, db + off * es, m * es, a->cs),
				   "copy to host"));
		DDP_CHECK(enqueue_host_job(c, a->stage, m, t, ticket, first && off == 0,
					   last && off + m >= count));
		DDP_CHECK(async_cu(c, d->memcpyHtoDAsync(db + off * es, a->stage, m * es, a->cs),
				   "copy to device"));
	}
	return DDP_OK;
}

/* Host backend, several device segments gathered into the staging buffer,
 * reduced as one collective, scattered back. */
static ddp_result enqueue_dev_staged(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
				     uint64_t total, enum ddp_dtype t, uint64_t ticket)
{
	struct coll_async *a = c->async;
	const struct ddp_driver *d = c->cfg.driver;
	DDP_CHECK(async_stage(c, (size_t)total));
	unsigned char *st = a->stage;
	size_t off = 0;
	for (size_t i = 0; i < n; off += seg[i].bytes, i++)
		DDP_CHECK(async_cu(c,
				   d->memcpyDtoHAsync(st + off, (CUdeviceptr)seg[i].addr, seg[i].bytes, a->cs),
				   "copy to host"));
	DDP_CHECK(enqueue_host_job(c, st, (size_t)total / ddp_dtype_size(t), t, ticket, 1, 1));
	off = 0;
	for (size_t i = 0; i < n; off += seg[i].bytes, i++)
		DDP_CHECK(async_cu(c,
				   d->memcpyHtoDAsync((CUdeviceptr)seg[i].addr, st + off, seg[i].bytes, a->cs),
				   "copy to device"));
	return DDP_OK;
}

/* NCCL: op t's tag slot (pinned; ASYNC_SLOTS x world doubles, made at the
 * first tagged op), filled with this rank's tag and zeros.  The slot's
 * previous op (t - ASYNC_SLOTS) is waited for first: its end stamp may not
 * have read it yet (ops complete in order; normally long done). */
static ddp_result tag_slot(struct ddp_comm *c, uint64_t t, double **out)
{
	struct coll_async *a = c->async;
	const struct ddp_driver *d = c->cfg.driver;
	const size_t W = (size_t)c->world;
	if (!a->tags) {
		void *p = NULL;
		CUresult e = d->memAllocHost(&p, ASYNC_SLOTS * W * sizeof(double));
		if (e != CUDA_SUCCESS)
			return coll_fail(c, DDP_ERR_CUDA, 1, "cannot allocate pinned memory for the collectives' tags: %s",
					 coll_cu_name(c, e));
		a->tags = p;
	} else if (t > ASYNC_SLOTS) {
		DDP_CHECK(async_cu(c, d->eventSynchronize(a->done[t % ASYNC_SLOTS]), "cuEventSynchronize"));
	}
	double *v = a->tags + (t % ASYNC_SLOTS) * W;
	for (size_t q = 0; q < W; q++)
		v[q] = 0;
	v[c->rank] = tag_enc(&c->tag);
	*out = v;
	return DDP_OK;
}

void ddp_coll_set_tag(struct ddp_comm *c, uint64_t step, enum ddp_coll_phase phase, const char *what)
{
	c->tag.step = step;
	c->tag.phase = (uint32_t)phase;
	snprintf(c->tag.what, sizeof c->tag.what, "%s", what ? what : "");
}

void ddp_coll_tag_text(uint64_t step, unsigned phase, char *out, size_t cap)
{
	static const char *const ph[] = { "a collective outside the gradient reductions", "early reduction",
					  "reduction at the consumer",
					  "re-reduction at the consumer" };
	if (!phase)
		snprintf(out, cap, "%s", ph[0]);
	else
		snprintf(out, cap, "step %" PRIu64 "'s %s", step, ph[phase & 3]);
}

ddp_result ddp_allreduce_avg_segs_async(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
					enum ddp_dtype dtype, int buf_is_device, CUstream producer,
					enum ddp_coll_seg_mode mode, uint64_t *ticket)
{
	const struct ddp_driver *d = c->cfg.driver;
	uint64_t total = 0;
	*ticket = 0;
	DDP_CHECK(ddp_coll_async_error(c));
	if (n == 0)
		return coll_fail(c, DDP_ERR_INVALID, 1, "async allreduce #%" PRIu64 ": no segments", c->seq);
	for (size_t i = 0; i < n; i++) {
		size_t es = ddp_dtype_reducible(dtype) ? ddp_dtype_size(dtype) : 1;
		if (seg[i].bytes % es)
			return coll_fail(c, DDP_ERR_INVALID, 1,
					 "async allreduce #%" PRIu64 ": segment %zu of %" PRIu64
					 " bytes is not whole %s elements",
					 c->seq, i, seg[i].bytes, ddp_dtype_name(dtype));
		DDP_CHECK(coll_check_allreduce(c, (const void *)(uintptr_t)seg[i].addr,
					       (size_t)(seg[i].bytes / es), dtype, buf_is_device));
		total += seg[i].bytes;
	}
	DDP_CHECK(async_setup(c));
	struct coll_async *a = c->async;
	const size_t es = ddp_dtype_size(dtype);
	uint64_t t = a->issued + 1;
	unsigned slot = (unsigned)(t % ASYNC_SLOTS);
	if (c->cfg.enqueued)
		c->cfg.enqueued(t);

	DDP_CHECK(async_cu(c, d->eventRecord(a->prod[slot], producer), "cuEventRecord (producer)"));
	DDP_CHECK(async_cu(c, d->streamWaitEvent(a->cs, a->prod[slot], 0),
			   "cuStreamWaitEvent (communication stream)"));
	if (c->world == 1) {
		/* the mean of one buffer is itself; the events still order */
	} else if (c->backend == DDP_COLL_NCCL) {
		double *tagv = NULL;
		if (c->tag.phase)
			DDP_CHECK(tag_slot(c, t, &tagv));
		DDP_CHECK(enqueue_stamp(c, t, total, 0, NULL));
		if (n == 1 && !tagv)
			DDP_CHECK(coll_nccl_allreduce_enqueue(c, (void *)(uintptr_t)seg[0].addr,
							      (size_t)(seg[0].bytes / es), dtype, a->cs));
		else
			DDP_CHECK(coll_nccl_allreduce_group_enqueue(c, seg, n, dtype, a->cs, tagv));
		DDP_CHECK(enqueue_stamp(c, t, total, 1, tagv));
		c->stats.calls[DDP_COLL_ALLREDUCE] += n;
		c->stats.bytes[DDP_COLL_ALLREDUCE] += total;
		c->seq += n;
	} else if (buf_is_device && n > 1 && mode != DDP_SEG_EACH) {
		DDP_CHECK(enqueue_dev_staged(c, seg, n, total, dtype, t));
	} else {
		for (size_t i = 0; i < n; i++) {
			if (buf_is_device)
				DDP_CHECK(enqueue_dev_inplace(c, (CUdeviceptr)seg[i].addr,
							      (size_t)(seg[i].bytes / es), dtype, t, i == 0,
							      i == n - 1));
			else
				DDP_CHECK(enqueue_host_job(c, (void *)(uintptr_t)seg[i].addr,
							   (size_t)(seg[i].bytes / es), dtype, t, i == 0,
							   i == n - 1));
		}
	}
	DDP_CHECK(async_cu(c, d->eventRecord(a->done[slot], a->cs), "cuEventRecord (communication stream)"));
	pthread_mutex_lock(&a->mu);
	__atomic_store_n(&a->issued, t, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&a->cv); /* the NCCL watchdog follows it */
	pthread_mutex_unlock(&a->mu);
	*ticket = t;
	DDP_DEBUG(COLL, "async allreduce ticket %" PRIu64 ": %s, %zu segment%s, %" PRIu64 " bytes %s, enqueued",
		  t, ddp_dtype_name(dtype), n, n == 1 ? "" : "s", total, buf_is_device ? "device" : "host");
	return DDP_OK;
}

ddp_result ddp_allreduce_avg_async(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype dtype,
				   int buf_is_device, CUstream producer, uint64_t *ticket)
{
	*ticket = 0;
	DDP_CHECK(coll_check_allreduce(c, buf, count, dtype, buf_is_device));
	struct ddp_coll_seg s = { (uint64_t)(uintptr_t)buf, (uint64_t)count * ddp_dtype_size(dtype) };
	return ddp_allreduce_avg_segs_async(c, &s, 1, dtype, buf_is_device, producer, DDP_SEG_AUTO, ticket);
}

ddp_result ddp_coll_stream_wait(struct ddp_comm *c, uint64_t ticket, CUstream consumer)
{
	struct coll_async *a = c->async;
	DDP_CHECK(ddp_coll_async_error(c));
	if (!a || !a->issued)
		return DDP_OK;
	if (!ticket || ticket > a->issued)
		ticket = a->issued;
	return async_cu(c, c->cfg.driver->streamWaitEvent(consumer, a->done[ticket % ASYNC_SLOTS], 0),
			"cuStreamWaitEvent (consumer)");
}

int ddp_coll_async_query(struct ddp_comm *c, uint64_t ticket)
{
	struct coll_async *a = c->async;
	if (!a || !a->issued)
		return 1;
	if (!ticket || ticket > a->issued)
		ticket = a->issued;
	CUresult e = c->cfg.driver->eventQuery(a->done[ticket % ASYNC_SLOTS]);
	return e == CUDA_SUCCESS ? 1 : e == CUDA_ERROR_NOT_READY ? 0 : -1;
}

ddp_result ddp_coll_wait(struct ddp_comm *c, uint64_t ticket)
{
	struct coll_async *a = c->async;
	if (!a || !a->issued)
		return ddp_coll_async_error(c);
	if (!ticket || ticket > a->issued)
		ticket = a->issued;
	CUevent ev = a->done[ticket % ASYNC_SLOTS];
	if (c->backend == DDP_COLL_NCCL && c->world > 1) {
		ddp_result rc = coll_nccl_watch_event(c, ev);
		if (rc != DDP_OK) {
			/* the watchdog may have seen it first (and aborted): its line */
			ddp_result arc = ddp_coll_async_error(c);
			return arc != DDP_OK ? arc : rc;
		}
	} else
		DDP_CHECK(async_cu(c, c->cfg.driver->eventSynchronize(ev), "cuEventSynchronize"));
	return ddp_coll_async_error(c);
}

ddp_result ddp_coll_async_drain(struct ddp_comm *c)
{
	if (!c->async || !c->async->issued)
		return DDP_OK;
	return ddp_coll_wait(c, 0);
}

size_t ddp_coll_async_times(struct ddp_comm *c, struct ddp_coll_time *out, size_t max)
{
	struct coll_async *a = c->async;
	size_t n = 0;
	if (!a)
		return 0;
	pthread_mutex_lock(&a->mu);
	while (n < max && a->ring_r < a->ring_w)
		out[n++] = a->ring[a->ring_r++ % ASYNC_DONE_RING];
	pthread_mutex_unlock(&a->mu);
	return n;
}

int ddp_coll_async_usable(struct ddp_comm *c, char *why, size_t len)
{
	const struct ddp_driver *d = c->cfg.driver;
	CUstream s = NULL;
	int lo = 0, hi = 0;

	if (c->async)
		return 1;
	if (!d || !d->streamCreateWithPriority || !d->streamDestroy || !d->eventCreate || !d->eventRecord ||
	    !d->streamWaitEvent || !d->launchHostFunc || !d->eventSynchronize || !d->eventQuery) {
		snprintf(why, len,
			 "the CUDA driver lacks stream priorities, events or host functions "
			 "(cuLaunchHostFunc needs a CUDA 10 driver)");
		return 0;
	}
	if (d->ctxGetStreamPriorityRange)
		(void)d->ctxGetStreamPriorityRange(&lo, &hi);
	CUresult e = d->streamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, hi);
	if (e != CUDA_SUCCESS) {
		snprintf(why, len,
			 "a communication stream cannot be made (cuStreamCreateWithPriority: CUDA error %d)",
			 (int)e);
		return 0;
	}
	(void)d->streamDestroy(s);
	return 1;
}

uint64_t ddp_coll_async_issued(const struct ddp_comm *c)
{
	return c->async ? c->async->issued : 0;
}

void coll_async_destroy(struct ddp_comm *c)
{
	struct coll_async *a = c->async;
	const struct ddp_driver *d = c->cfg.driver;
	if (!a)
		return;
	if (a->issued && a->cs && d->eventSynchronize)
		(void)d->eventSynchronize(a->done[a->issued % ASYNC_SLOTS]);
	if (a->thread_started) {
		pthread_mutex_lock(&a->mu);
		__atomic_store_n(&a->quit, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		pthread_join(a->thread, NULL);
	}
	for (int i = 0; i < ASYNC_SLOTS; i++) {
		if (a->prod[i] && d->eventDestroy)
			(void)d->eventDestroy(a->prod[i]);
		if (a->done[i] && d->eventDestroy)
			(void)d->eventDestroy(a->done[i]);
	}
	if (a->cs && d->streamDestroy)
		(void)d->streamDestroy(a->cs);
	if (a->stage && d->memFreeHost)
		(void)d->memFreeHost(a->stage);
	if (a->tags && d->memFreeHost)
		(void)d->memFreeHost(a->tags);
	pthread_cond_destroy(&a->cv);
	pthread_cond_destroy(&a->cv_done);
	pthread_mutex_destroy(&a->mu);
	free(a);
	c->async = NULL;
}
