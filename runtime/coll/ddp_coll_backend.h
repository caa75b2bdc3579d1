/* SPDX-License-Identifier: MIT
 *
 * ddp_coll_backend.h - what ddp_coll.c (dispatch, checks, stats) shares with
 * the backends ddp_coll_host.c and ddp_coll_nccl.c.  Internal to the
 * collectives; nothing outside runtime/ddp_coll*.c includes it.
 *
 * Contract: the struct ddp_comm is owned by the thread that calls the API
 * (one at a time); backends keep their state behind comm->host / comm->nccl.
 */
#ifndef DDP_COLL_BACKEND_H
#define DDP_COLL_BACKEND_H

#include <stdarg.h>
#include "ddp_coll.h"

#define COLL_ERR_LEN 512

struct coll_host;
struct coll_nccl;
struct coll_async;

struct ddp_comm {
	struct ddp_store *store; /* rendezvous; used only by this comm's thread */
	int rank, world, local_rank, local_world;
	int gen;                       /* which communicator of the job (store keys) */
	enum ddp_coll_backend backend; /* resolved: HOST or NCCL                     */
	struct ddp_coll_config cfg;    /* copy; cfg.driver points to the caller's   */
	uint64_t seq;                  /* collectives issued so far                 */
	uint64_t checks;               /* signature checks so far                   */
	int broken;                    /* an error happened: everything fails       */
	struct coll_host *host;        /* host backend state (NULL for NCCL)         */
	struct coll_nccl *nccl;        /* NCCL state (NULL for host)                 */
	struct coll_async *async;      /* stream-ordered calls (ddp_coll_async.c), NULL until the first */
	uint64_t arrived_ns;           /* host backend: when every rank had reached the
					 last allreduce (its descriptor barrier) */
	int bg_wait;                   /* the caller is the async progress thread: a
					 barrier sleeps at once instead of spinning
					 (the kernels it overlaps need the cores)... */
	int bg_in_op;                  /* ...except inside an op every rank has
					 reached: the next barrier is microseconds
					 away, a futex sleep and wake costs more */
	struct ddp_coll_stats stats;
	char err[COLL_ERR_LEN]; /* last error line ("" none)                 */
	/* ddp_coll_set_tag: what the next async ops carry (calling thread) */
	struct coll_tag {
		uint64_t step;
		uint32_t phase; /* enum ddp_coll_phase (NONE: no tag)           */
		char what[48];
	} tag;
	struct coll_tag host_tag; /* host backend: the tag of the op the
				   * progress thread runs (zero otherwise) */
};

/* The end of the line that stops ranks whose tagged collectives differ
 * (ddp_coll_set_tag). */
#define COLL_TAG_WHY                                                                                      \
	"one rank reduced gradient bytes the others did not (a gradient written again after its early "  \
	"reduction on some ranks only: the ranks' programs differ); stopped before their gradients mix"

/* Records the error line (printf format, "libddp: " prepended), logs it at
 * ERROR when loud, else at INFO(COLL); marks the comm broken; returns rc. */
ddp_result coll_fail(struct ddp_comm *c, ddp_result rc, int loud, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Monotonic seconds. */
double coll_now(void);

/* Text for a CUresult ("CUDA_ERROR_x" when the table has getErrorName). */
const char *coll_cu_name(const struct ddp_comm *c, CUresult e);

/* Argument checks of an allreduce (dtype, count, buffer, driver). */
ddp_result coll_check_allreduce(struct ddp_comm *c, const void *buf, size_t count, enum ddp_dtype dtype,
				int dev);

/* Counts one finished collective of kind k (bytes, time since t0 in
 * coll_now() seconds) and advances c->seq. */
void coll_account(struct ddp_comm *c, enum ddp_coll_kind k, size_t bytes, double t0);

/* ---- stream-ordered calls (ddp_coll_async.c) */
/* Waits for every async op, stops the progress thread, frees the stream,
 * events and staging.  No-op without async state. */
void coll_async_destroy(struct ddp_comm *c);

/* ---- host backend (ddp_coll_host.c) */
ddp_result coll_host_init(struct ddp_comm *c);
ddp_result coll_host_allreduce(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t, int dev,
			       CUstream s);
ddp_result coll_host_broadcast(struct ddp_comm *c, void *buf, size_t bytes, int root, int dev, CUstream s);
/* Posts an abort (reason already in c->err) so that peers stop waiting. */
void coll_host_abort(struct ddp_comm *c);
void coll_host_destroy(struct ddp_comm *c);

/* ---- NCCL backend (ddp_coll_nccl.c) */
/* The oldest NCCL the backend accepts (2.14: non-blocking communicators);
 * DDP_BACKEND=auto picks NCCL only from this version on. */
#define COLL_NCCL_MIN_VERSION 21400

ddp_result coll_nccl_init(struct ddp_comm *c);
ddp_result coll_nccl_allreduce(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t, CUstream s);
ddp_result coll_nccl_broadcast(struct ddp_comm *c, void *buf, size_t bytes, int root, CUstream s);
/* Enqueues ncclAllReduce(ncclAvg) on s and returns (no wait). */
ddp_result coll_nccl_allreduce_enqueue(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t,
				       CUstream s);
/* Enqueues one ncclAllReduce(ncclAvg) per segment inside one NCCL group;
 * with tag (pinned host memory, world doubles) also its ncclMax in place,
 * in the same group (ddp_coll_set_tag). */
ddp_result coll_nccl_allreduce_group_enqueue(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
					     enum ddp_dtype t, CUstream s, double *tag);
/* The same group, then the host waits for it as coll_nccl_allreduce does
 * (watchdog, timeout, NCCL's async error). */
ddp_result coll_nccl_allreduce_group(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
				     enum ddp_dtype t, CUstream s);
/* Waits on the host for ev, watching NCCL's asynchronous errors and the
 * timeout (as the synchronous calls watch their stream). */
ddp_result coll_nccl_watch_event(struct ddp_comm *c, CUevent ev);
void coll_nccl_abort(struct ddp_comm *c);
/* Has NCCL reported an asynchronous error on c (a peer gone, a network
 * failure)?  1 with its text in msg; 0.  Callable from a watchdog thread. */
int coll_nccl_async_failed(struct ddp_comm *c, char *msg, size_t len);
void coll_nccl_destroy(struct ddp_comm *c);
int coll_nccl_version(const struct ddp_comm *c);

#endif /* DDP_COLL_BACKEND_H */
