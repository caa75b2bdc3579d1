/* SPDX-License-Identifier: MIT
 *
 * ddp_coll_nccl.c - the NCCL collectives backend, loaded at run time.
 *
 * NCCL is dlopen'ed (DDP_NCCL_LIB, default "libnccl.so.2") and its entry
 * points are resolved once into a struct of typed pointers; the library
 * builds and runs without NCCL (nccl.h is used for types only, and when it is
 * missing at build time the backend reports itself unsupported).  Needs
 * NCCL >= 2.14 (non-blocking communicators, ncclAvg).
 *
 * Set-up: rank 0 makes the unique id and publishes it as coll/<n>/nccl_id (an
 * empty value means it failed, so the others stop at once); every rank calls
 * ncclCommInitRankConfig with blocking = 0 and polls ncclCommGetAsyncError
 * until the communicator is ready, fails, or cfg.timeout_s passes
 * (ncclCommAbort, DDP_ERR_TIMEOUT).
 *
 * Collectives: ncclAllReduce(ncclAvg) / ncclBroadcast in place on the
 * caller's stream, then a watchdog loop polls cuStreamQuery (cfg.driver) and
 * ncclCommGetAsyncError until the stream is done, NCCL reports an error, or
 * no completion within cfg.timeout_s: then ncclCommAbort and DDP_ERR_TIMEOUT.
 * On a timeout each rank posts coll/<n>/stuck/<seq>/<rank> and waits up to
 * 2 s for the others' posts, so the message names the ranks that never
 * reached the collective (dead or elsewhere) rather than those also stuck.
 *
 * Two ranks on one GPU: NCCL 2.5.6-2.29 refuse them ("Duplicate GPU
 * detected"), 2.30 accepts two with NCCL_MULTI_RANK_GPU_ENABLE=1; older
 * versions accept them when each rank has its own NCCL_HOSTID (they then
 * talk over sockets).  docs/collectives.md says more.
 *
 * Contract: one thread per comm (ddp_coll.h), plus the watchdog thread of the
 * stream-ordered calls (ddp_coll_async.c), which polls the communicator and
 * may abort it: n->mu guards the handle n->comm, every NCCL call that takes
 * it is made under n->mu (the calls are non-blocking; only ncclCommAbort
 * waits), and nccl_abort aborts it once and sets it NULL, so neither thread
 * can reach an aborted (freed) communicator or abort it twice.  The NCCL
 * library handle is
 * never closed once a communicator was made from it (NCCL keeps threads).
 * NCCL's own driver calls reach the interposer; the library marks them as
 * its own with its "inside ddp" flag around these calls.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ddp_coll_backend.h"
#include "ddp_port.h"
#include "ddp_log.h"
#include "ddp_store.h"

#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#define COLL_HAVE_NCCL_H 1
#endif
#endif

#define NCCL_MIN_VERSION COLL_NCCL_MIN_VERSION

#ifdef COLL_HAVE_NCCL_H

struct nccl_syms {
	ncclResult_t (*GetVersion)(int *version);
	ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
	ncclResult_t (*CommInitRankConfig)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
					   ncclConfig_t *config);
	ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *state);
	ncclResult_t (*AllReduce)(const void *sbuf, void *rbuf, size_t count, ncclDataType_t dt,
				  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*Broadcast)(const void *sbuf, void *rbuf, size_t count, ncclDataType_t dt, int root,
				  ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*CommAbort)(ncclComm_t comm);
	ncclResult_t (*CommDestroy)(ncclComm_t comm);
	const char *(*GetErrorString)(ncclResult_t r);
	const char *(*GetLastError)(ncclComm_t comm); /* optional (2.13+) */
	ncclResult_t (*GroupStart)(void);
	ncclResult_t (*GroupEnd)(void);
};

static const struct {
	const char *name;
	size_t off;
	int optional;
} nccl_sym_table[] = {
	{ "ncclGetVersion", offsetof(struct nccl_syms, GetVersion), 0 },
	{ "ncclGetUniqueId", offsetof(struct nccl_syms, GetUniqueId), 0 },
	{ "ncclCommInitRankConfig", offsetof(struct nccl_syms, CommInitRankConfig), 0 },
	{ "ncclCommGetAsyncError", offsetof(struct nccl_syms, CommGetAsyncError), 0 },
	{ "ncclAllReduce", offsetof(struct nccl_syms, AllReduce), 0 },
	{ "ncclBroadcast", offsetof(struct nccl_syms, Broadcast), 0 },
	{ "ncclCommAbort", offsetof(struct nccl_syms, CommAbort), 0 },
	{ "ncclCommDestroy", offsetof(struct nccl_syms, CommDestroy), 0 },
	{ "ncclGetErrorString", offsetof(struct nccl_syms, GetErrorString), 0 },
	{ "ncclGetLastError", offsetof(struct nccl_syms, GetLastError), 1 },
	{ "ncclGroupStart", offsetof(struct nccl_syms, GroupStart), 0 },
	{ "ncclGroupEnd", offsetof(struct nccl_syms, GroupEnd), 0 },
};

struct coll_nccl {
	void *handle; /* dlopen handle (never closed after init)  */
	struct nccl_syms s;
	int version;
	pthread_mutex_t mu; /* guards comm (the caller and the watchdog) */
	ncclComm_t comm;    /* NULL until ready; aborted on failure (mu) */
};

/* Opens path and fills syms.  On failure: DDP_ERR_UNSUPPORTED, msg set. */
static ddp_result nccl_load(const char *path, void **handle, struct nccl_syms *s, int *version, char *msg,
			    size_t len)
{
	if (!path || !*path)
		path = "libnccl.so.2";
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		snprintf(msg, len,
			 "cannot load NCCL from DDP_NCCL_LIB=%s: %s; set DDP_NCCL_LIB to libnccl.so.2's "
			 "path (PyTorch ships one in nvidia/nccl/lib) or use DDP_BACKEND=host",
			 path, why ? why : "unknown error");
		return DDP_ERR_UNSUPPORTED;
	}
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < sizeof nccl_sym_table / sizeof nccl_sym_table[0]; i++) {
		void *p = DDP_SYS(dlsym)(h, nccl_sym_table[i].name);
		if (!p && !nccl_sym_table[i].optional) {
			snprintf(msg, len, "NCCL library DDP_NCCL_LIB=%s lacks %s (NCCL >= 2.14 is needed)",
				 path, nccl_sym_table[i].name);
			dlclose(h);
			return DDP_ERR_UNSUPPORTED;
		}
		memcpy((char *)s + nccl_sym_table[i].off, &p, sizeof p);
	}
	int v = 0;
	if (s->GetVersion(&v) != ncclSuccess) {
		snprintf(msg, len, "ncclGetVersion failed in DDP_NCCL_LIB=%s", path);
		dlclose(h);
		return DDP_ERR_UNSUPPORTED;
	}
	*version = v;
	*handle = h;
	return DDP_OK;
}

ddp_result ddp_coll_nccl_probe(const char *path, int *version, char *msg, size_t msg_len)
{
	char buf[512];
	void *h = NULL;
	struct nccl_syms s;
	*version = 0;
	ddp_result rc = nccl_load(path, &h, &s, version, buf, sizeof buf);
	if (msg && msg_len)
		snprintf(msg, msg_len, "%s", rc == DDP_OK ? "" : buf);
	if (h)
		dlclose(h);
	return rc;
}

/* NCCL's text for r, with its last error (n->mu NOT held). */
static const char *nccl_err(struct coll_nccl *n, ncclResult_t r)
{
	static __thread char buf[320];
	pthread_mutex_lock(&n->mu);
	const char *last = n->s.GetLastError ? n->s.GetLastError(n->comm) : NULL;
	snprintf(buf, sizeof buf, "%s%s%s", n->s.GetErrorString(r), last && *last ? ": " : "",
		 last ? last : "");
	pthread_mutex_unlock(&n->mu);
	return buf;
}

/* ncclCommGetAsyncError under n->mu; an aborted communicator (n->comm NULL)
 * answers ncclInvalidUsage in *st and 1. */
static int nccl_state(struct coll_nccl *n, ncclResult_t *st)
{
	int gone = 0;
	pthread_mutex_lock(&n->mu);
	if (!n->comm) {
		*st = ncclInvalidUsage;
		gone = 1;
	} else if (n->s.CommGetAsyncError(n->comm, st) != ncclSuccess) {
		*st = ncclInProgress; /* the query itself failed: no news */
	}
	pthread_mutex_unlock(&n->mu);
	return gone;
}

static void nccl_sleep(unsigned iter)
{
	if (iter < 64) {
		sched_yield();
		return;
	}
	long ns = iter < 1000 ? 20000 : 1000000;
	struct timespec ts = { 0, ns };
	nanosleep(&ts, NULL);
}

/* Waits while the comm reports ncclInProgress (init or a non-blocking call). */
static ncclResult_t nccl_wait_ready(struct coll_nccl *n, double timeout_s, int *timed_out)
{
	double deadline = coll_now() + timeout_s;
	ncclResult_t st = ncclInProgress;
	*timed_out = 0;
	for (unsigned i = 0;; i++) {
		if (nccl_state(n, &st))
			return ncclInvalidUsage; /* aborted meanwhile (the watchdog) */
		if (st != ncclInProgress)
			return st;
		if (coll_now() > deadline) {
			*timed_out = 1;
			return ncclInProgress;
		}
		nccl_sleep(i);
	}
}

/* Aborts the communicator once, whichever thread comes first. */
static void nccl_abort(struct coll_nccl *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	if (n->comm) {
		n->s.CommAbort(n->comm);
		n->comm = NULL;
	}
	pthread_mutex_unlock(&n->mu);
}

void coll_nccl_abort(struct ddp_comm *c)
{
	nccl_abort(c->nccl);
}

int coll_nccl_async_failed(struct ddp_comm *c, char *msg, size_t len)
{
	struct coll_nccl *n = c->nccl;
	ncclResult_t st = ncclSuccess;
	if (!n || nccl_state(n, &st) || st == ncclSuccess || st == ncclInProgress)
		return 0; /* (aborted: whoever aborted reported it) */
	snprintf(msg, len, "%s", nccl_err(n, st));
	return 1;
}

ddp_result coll_nccl_init(struct ddp_comm *c)
{
	ddp_result rc = DDP_OK;
	char msg[512], key[64];
	struct coll_nccl *n = calloc(1, sizeof *n);
	if (!n)
		return DDP_ERR_NOMEM;
	pthread_mutex_init(&n->mu, NULL);
	c->nccl = n;
	if (nccl_load(c->cfg.nccl_lib, &n->handle, &n->s, &n->version, msg, sizeof msg) != DDP_OK) {
		rc = coll_fail(c, DDP_ERR_UNSUPPORTED, 1, "%s", msg);
		goto out_free;
	}
	if (n->version < NCCL_MIN_VERSION) {
		rc = coll_fail(c, DDP_ERR_UNSUPPORTED, 1,
			       "NCCL %d.%d.%d from DDP_NCCL_LIB=%s is too old: 2.14 or newer is needed (or "
			       "DDP_BACKEND=host)",
			       n->version / 10000, n->version / 100 % 100, n->version % 100, c->cfg.nccl_lib);
		goto out_close;
	}
	ncclUniqueId id;
	memset(&id, 0, sizeof id);
	snprintf(key, sizeof key, "coll/%d/nccl_id", c->gen);
	if (c->rank == 0) {
		ncclResult_t r = n->s.GetUniqueId(&id);
		int ok = r == ncclSuccess;
		ddp_result src = ddp_store_set(c->store, key, &id, ok ? sizeof id : 0);
		if (!ok) {
			rc = coll_fail(c, DDP_ERR_NCCL, 1, "ncclGetUniqueId failed on rank 0: %s",
				       nccl_err(n, r));
			goto out_close;
		}
		DDP_CHECK_GOTO(src, rc, out_close);
	} else {
		void *val = NULL;
		size_t len = 0;
		rc = ddp_store_get(c->store, key, &val, &len, c->cfg.timeout_s);
		if (rc != DDP_OK) {
			rc = coll_fail(c, rc, 1, "rank %d got no NCCL id from rank 0: %s", c->rank,
				       ddp_store_last_error(c->store));
			goto out_close;
		}
		if (len != sizeof id) {
			free(val);
			rc = coll_fail(c, DDP_ERR_REMOTE, 0, "rank 0 could not make an NCCL id; see its error");
			goto out_close;
		}
		memcpy(&id, val, sizeof id);
		free(val);
	}
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	config.blocking = 0;
	double t0 = coll_now();
	ncclResult_t r = n->s.CommInitRankConfig(&n->comm, c->world, id, c->rank, &config);
	if (r != ncclSuccess && r != ncclInProgress) {
		rc = coll_fail(c, DDP_ERR_NCCL, 1, "NCCL init failed on rank %d: %s", c->rank, nccl_err(n, r));
		nccl_abort(n);
		goto out_close;
	}
	int timed_out = 0;
	if (n->comm)
		r = nccl_wait_ready(n, c->cfg.timeout_s, &timed_out);
	if (timed_out || r != ncclSuccess || !n->comm) {
		rc = timed_out ? coll_fail(c, DDP_ERR_TIMEOUT, 1,
					   "NCCL init on rank %d did not finish within %.0f s (a peer is missing or the "
					   "network is blocked); aborted",
					   c->rank, c->cfg.timeout_s)
			       : coll_fail(c, DDP_ERR_NCCL, 1, "NCCL init failed on rank %d: %s", c->rank,
					   n->comm ? nccl_err(n, r) : "no communicator");
		nccl_abort(n);
		goto out_close;
	}
	DDP_INFO(COLL, "NCCL %d.%d.%d ready on rank %d of %d in %.2f s", n->version / 10000,
		 n->version / 100 % 100, n->version % 100, c->rank, c->world, coll_now() - t0);
	return DDP_OK;

out_close:
	/* NCCL may have started threads during a failed init: keep it loaded */
	if (!n->comm && n->handle && rc == DDP_ERR_UNSUPPORTED)
		dlclose(n->handle);
out_free:
	pthread_mutex_destroy(&n->mu);
	free(n);
	c->nccl = NULL;
	return rc;
}

void coll_nccl_destroy(struct ddp_comm *c)
{
	struct coll_nccl *n = c->nccl;
	if (!n)
		return;
	if (n->comm) {
		if (c->broken)
			n->s.CommAbort(n->comm);
		else
			n->s.CommDestroy(n->comm);
	}
	pthread_mutex_destroy(&n->mu);
	free(n);
	c->nccl = NULL;
}

int coll_nccl_version(const struct ddp_comm *c)
{
	return c->nccl ? c->nccl->version : 0;
}

/* After a timeout: which ranks never reached collective `seq`? */
static void nccl_stuck_ranks(struct ddp_comm *c, char *list, size_t len)
{
	char key[96];
	size_t n = 0;
	list[0] = 0;
	snprintf(key, sizeof key, "coll/%d/stuck/%" PRIu64 "/%d", c->gen, c->seq, c->rank);
	if (ddp_store_set(c->store, key, "1", 1) != DDP_OK)
		return;
	double deadline = coll_now() + 2.0;
	for (int q = 0; q < c->world; q++) {
		if (q == c->rank)
			continue;
		void *val = NULL;
		size_t vlen;
		double left = deadline - coll_now();
		snprintf(key, sizeof key, "coll/%d/stuck/%" PRIu64 "/%d", c->gen, c->seq, q);
		if (ddp_store_get(c->store, key, &val, &vlen, left > 0 ? left : 0) == DDP_OK) {
			free(val);
			continue;
		}
		if (n + 12 < len)
			n += (size_t)snprintf(list + n, len - n, "%s%d", n ? "," : "", q);
	}
}

/* Waits for the enqueued collective: stream done (or, with ev, the event),
 * NCCL error, or timeout. */
static ddp_result nccl_watch_q(struct ddp_comm *c, const char *what, ncclResult_t r, CUstream s, CUevent ev)
{
	struct coll_nccl *n = c->nccl;
	int timed_out = 0;
	if (r == ncclInProgress)
		r = nccl_wait_ready(n, c->cfg.timeout_s, &timed_out);
	if (!timed_out && r != ncclSuccess) {
		ddp_result rc = coll_fail(c, DDP_ERR_NCCL, 1, "%s failed on rank %d: %s", what, c->rank,
					  nccl_err(n, r));
		nccl_abort(n);
		return rc;
	}
	double deadline = coll_now() + c->cfg.timeout_s;
	for (unsigned i = 0; !timed_out; i++) {
		CUresult q = ev ? c->cfg.driver->eventQuery(ev) : c->cfg.driver->streamQuery(s);
		ncclResult_t st = ncclSuccess;
		if (nccl_state(n, &st)) {
			/* aborted by the watchdog thread: its line says why */
			ddp_result arc = ddp_coll_async_error(c);
			return arc != DDP_OK ? arc
					     : coll_fail(c, DDP_ERR_REMOTE, 1,
							 "%s on rank %d: the NCCL communicator was aborted",
							 what, c->rank);
		}
		if (st != ncclSuccess && st != ncclInProgress) {
			/* also when the stream went on: a failed collective's
			 * results are undefined (NCCL lets the stream pass it) */
			ddp_result rc = coll_fail(c, DDP_ERR_NCCL, 1, "%s failed on rank %d: %s", what,
						  c->rank, nccl_err(n, st));
			nccl_abort(n);
			return rc;
		}
		if (q == CUDA_SUCCESS)
			return DDP_OK;
		if (q != CUDA_ERROR_NOT_READY) {
			ddp_result rc = coll_fail(c, DDP_ERR_CUDA, 1, "%s on rank %d: stream error %s", what,
						  c->rank, coll_cu_name(c, q));
			nccl_abort(n);
			return rc;
		}
		if (coll_now() > deadline)
			timed_out = 1;
		else
			nccl_sleep(i);
	}
	char list[128];
	nccl_abort(n);
	nccl_stuck_ranks(c, list, sizeof list);
	return coll_fail(
		c, DDP_ERR_TIMEOUT, 1,
		"%s did not complete within %.0f s on rank %d; NCCL aborted; rank(s) that never reached it: "
		"%s",
		what, c->cfg.timeout_s, c->rank, list[0] ? list : "none (all stuck: network or GPU hang?)");
}

static ddp_result nccl_watch(struct ddp_comm *c, const char *what, ncclResult_t r, CUstream s)
{
	return nccl_watch_q(c, what, r, s, NULL);
}

static ncclDataType_t nccl_dtype(enum ddp_dtype t)
{
	return t == DDP_DT_F16 ? ncclFloat16 : t == DDP_DT_BF16 ? ncclBfloat16 : ncclFloat32;
}

static ddp_result nccl_check_ready(struct ddp_comm *c)
{
	int gone = !c->nccl;
	if (!gone) {
		pthread_mutex_lock(&c->nccl->mu);
		gone = !c->nccl->comm;
		pthread_mutex_unlock(&c->nccl->mu);
	}
	if (gone)
		return coll_fail(c, DDP_ERR_REMOTE, 0, "NCCL communicator was aborted");
	if (!c->cfg.driver || !c->cfg.driver->streamQuery)
		return coll_fail(c, DDP_ERR_INVALID, 1,
				 "NCCL backend needs the driver's cuStreamQuery (internal error)");
	return DDP_OK;
}

ddp_result coll_nccl_allreduce(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t, CUstream s)
{
	DDP_CHECK(nccl_check_ready(c));
	char what[96];
	snprintf(what, sizeof what, "allreduce #%" PRIu64 " (%s, count=%zu)", c->seq, ddp_dtype_name(t), count);
	struct coll_nccl *n = c->nccl;
	pthread_mutex_lock(&n->mu);
	ncclResult_t r =
		n->comm ? n->s.AllReduce(buf, buf, count, nccl_dtype(t), ncclAvg, n->comm, (cudaStream_t)s)
			: ncclInvalidUsage;
	pthread_mutex_unlock(&n->mu);
	return nccl_watch(c, what, r, s);
}

ddp_result coll_nccl_allreduce_enqueue(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t, CUstream s)
{
	struct coll_nccl *n;
	int timed_out = 0;
	DDP_CHECK(nccl_check_ready(c));
	n = c->nccl;
	pthread_mutex_lock(&n->mu);
	ncclResult_t r =
		n->comm ? n->s.AllReduce(buf, buf, count, nccl_dtype(t), ncclAvg, n->comm, (cudaStream_t)s)
			: ncclInvalidUsage;
	pthread_mutex_unlock(&n->mu);
	if (r == ncclInProgress) /* non-blocking communicator: enqueued once ready */
		r = nccl_wait_ready(n, c->cfg.timeout_s, &timed_out);
	if (r != ncclSuccess || timed_out) {
		ddp_result rc = coll_fail(c, timed_out ? DDP_ERR_TIMEOUT : DDP_ERR_NCCL, 1,
					  "async allreduce #%" PRIu64 " (%s, count=%zu) failed on rank %d: %s",
					  c->seq, ddp_dtype_name(t), count, c->rank,
					  timed_out ? "enqueue timed out" : nccl_err(n, r));
		nccl_abort(n);
		return rc;
	}
	return DDP_OK;
}

ddp_result coll_nccl_allreduce_group_enqueue(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
					     enum ddp_dtype t, CUstream s, double *tag)
{
	struct coll_nccl *n_;
	int timed_out = 0;
	DDP_CHECK(nccl_check_ready(c));
	n_ = c->nccl;
	const size_t es = ddp_dtype_size(t);
	pthread_mutex_lock(&n_->mu);
	ncclResult_t r = n_->comm ? n_->s.GroupStart() : ncclInvalidUsage;
	if (n_->comm) {
		/* the op's tag first: every rank's (step, phase) in its own
		 * element, zeros elsewhere; the max gives each rank all of them */
		if (tag && (r == ncclSuccess || r == ncclInProgress))
			r = n_->s.AllReduce(tag, tag, (size_t)c->world, ncclFloat64, ncclMax, n_->comm,
					    (cudaStream_t)s);
		for (size_t i = 0; i < n && (r == ncclSuccess || r == ncclInProgress); i++)
			r = n_->s.AllReduce((void *)(uintptr_t)seg[i].addr, (void *)(uintptr_t)seg[i].addr,
					    seg[i].bytes / es, nccl_dtype(t), ncclAvg, n_->comm,
					    (cudaStream_t)s);
		ncclResult_t re = n_->s.GroupEnd(); /* always: the group must close */
		if (r == ncclSuccess || r == ncclInProgress)
			r = re;
	}
	pthread_mutex_unlock(&n_->mu);
	if (r == ncclInProgress)
		r = nccl_wait_ready(n_, c->cfg.timeout_s, &timed_out);
	if (r != ncclSuccess || timed_out) {
		ddp_result rc = coll_fail(
			c, timed_out ? DDP_ERR_TIMEOUT : DDP_ERR_NCCL, 1,
			"grouped async allreduce #%" PRIu64 " (%s, %zu ranges) failed on rank %d: %s", c->seq,
			ddp_dtype_name(t), n, c->rank, timed_out ? "enqueue timed out" : nccl_err(n_, r));
		nccl_abort(n_);
		return rc;
	}
	return DDP_OK;
}

ddp_result coll_nccl_allreduce_group(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
				     enum ddp_dtype t, CUstream s)
{
	char what[96];
	snprintf(what, sizeof what, "grouped allreduce #%" PRIu64 " (%s, %zu ranges)", c->seq,
		 ddp_dtype_name(t), n);
	DDP_CHECK(coll_nccl_allreduce_group_enqueue(c, seg, n, t, s, NULL));
	return nccl_watch(c, what, ncclSuccess, s);
}

ddp_result coll_nccl_watch_event(struct ddp_comm *c, CUevent ev)
{
	char what[64];
	if (!c->nccl) /* (no nccl_check_ready: an abort by the watchdog is its to report) */
		return coll_fail(c, DDP_ERR_REMOTE, 0, "NCCL communicator was aborted");
	snprintf(what, sizeof what, "async allreduce before #%" PRIu64, c->seq);
	return nccl_watch_q(c, what, ncclSuccess, NULL, ev);
}

ddp_result coll_nccl_broadcast(struct ddp_comm *c, void *buf, size_t bytes, int root, CUstream s)
{
	DDP_CHECK(nccl_check_ready(c));
	char what[96];
	snprintf(what, sizeof what, "broadcast #%" PRIu64 " (bytes=%zu, root %d)", c->seq, bytes, root);
	struct coll_nccl *n = c->nccl;
	pthread_mutex_lock(&n->mu);
	ncclResult_t r = n->comm ? n->s.Broadcast(buf, buf, bytes, ncclUint8, root, n->comm, (cudaStream_t)s)
				 : ncclInvalidUsage;
	pthread_mutex_unlock(&n->mu);
	return nccl_watch(c, what, r, s);
}

#else /* !COLL_HAVE_NCCL_H */

ddp_result ddp_coll_nccl_probe(const char *path, int *version, char *msg, size_t msg_len)
{
	(void)path;
	*version = 0;
	if (msg && msg_len)
		snprintf(msg, msg_len, "libddp was built without nccl.h: the NCCL backend is not available");
	return DDP_ERR_UNSUPPORTED;
}

ddp_result coll_nccl_init(struct ddp_comm *c)
{
	return coll_fail(
		c, DDP_ERR_UNSUPPORTED, 1,
		"libddp was built without nccl.h: the NCCL backend is not available; use DDP_BACKEND=host");
}

ddp_result coll_nccl_allreduce(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t, CUstream s)
{
	(void)buf, (void)count, (void)t, (void)s;
	return coll_fail(c, DDP_ERR_UNSUPPORTED, 1, "NCCL backend not built");
}

ddp_result coll_nccl_broadcast(struct ddp_comm *c, void *buf, size_t bytes, int root, CUstream s)
{
	(void)buf, (void)bytes, (void)root, (void)s;
	return coll_fail(c, DDP_ERR_UNSUPPORTED, 1, "NCCL backend not built");
}

ddp_result coll_nccl_allreduce_enqueue(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t, CUstream s)
{
	(void)buf, (void)count, (void)t, (void)s;
	return coll_fail(c, DDP_ERR_UNSUPPORTED, 1, "NCCL backend not built");
}

ddp_result coll_nccl_allreduce_group_enqueue(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
					     enum ddp_dtype t, CUstream s, double *tag)
{
	(void)seg, (void)n, (void)t, (void)s, (void)tag;
	return coll_fail(c, DDP_ERR_UNSUPPORTED, 1, "NCCL backend not built");
}
ddp_result coll_nccl_allreduce_group(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
				     enum ddp_dtype t, CUstream s)
{
	(void)seg, (void)n, (void)t, (void)s;
	return coll_fail(c, DDP_ERR_UNSUPPORTED, 1, "NCCL backend not built");
}

ddp_result coll_nccl_watch_event(struct ddp_comm *c, CUevent ev)
{
	(void)ev;
	return coll_fail(c, DDP_ERR_UNSUPPORTED, 1, "NCCL backend not built");
}

void coll_nccl_abort(struct ddp_comm *c)
{
	(void)c;
}

int coll_nccl_async_failed(struct ddp_comm *c, char *msg, size_t len)
{
	(void)c, (void)msg, (void)len;
	return 0;
}

void coll_nccl_destroy(struct ddp_comm *c)
{
	(void)c;
}

int coll_nccl_version(const struct ddp_comm *c)
{
	(void)c;
	return 0;
}

#endif /* COLL_HAVE_NCCL_H */
