/* SPDX-License-Identifier: MIT
 *
 * ddp_coll.c - the backend-neutral half of the collectives: configuration,
 * communicator set-up (agreeing on the backend through the store), argument
 * checks, the cross-rank signature check, dispatch, statistics and the
 * error-line bookkeeping.  ddp_coll.h documents the API.
 *
 * Store keys (n = the communicator's number in the job, from the counter
 * "coll/comms"):
 *   coll/<n>/nccl_ok           counter: ranks that could load NCCL (auto)
 *   xr/sig/<n>/<k>/<rank>      "kind: sig" of signature check k, and
 *   xr/sig/<n>/<k>/v           rank 0's verdict: the one cross-rank
 *                              compare's keys (ddp_xrank.h)
 *   (backends add their own: coll/<n>/shm, coll/<n>/nccl_id, ...)
 *
 * Contract: one thread at a time per comm (ddp_coll.h).  No global state
 * except nothing: everything lives in struct ddp_comm.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ddp_coll_backend.h"
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_store.h"
#include "ddp_xrank.h"

#define SIG_MAX (16u * 1024)

static const char *const backend_names[] = { "auto", "host", "nccl" };

double coll_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ddp_result coll_fail(struct ddp_comm *c, ddp_result rc, int loud, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(c->err, sizeof c->err, "libddp: ");
	va_start(ap, fmt);
	vsnprintf(c->err + n, sizeof c->err - (size_t)n, fmt, ap);
	va_end(ap);
	c->broken = 1;
	/* the log line names the program already: log without "libddp: " */
	if (loud)
		DDP_ERROR("%s", c->err + n);
	else
		DDP_INFO(COLL, "%s", c->err + n);
	return rc;
}

const char *coll_cu_name(const struct ddp_comm *c, CUresult e)
{
	static __thread char buf[32];
	const char *name = NULL;
	if (c->cfg.driver && c->cfg.driver->getErrorName &&
	    c->cfg.driver->getErrorName(e, &name) == CUDA_SUCCESS && name)
		return name;
	snprintf(buf, sizeof buf, "CUresult %d", (int)e);
	return buf;
}

void ddp_coll_config_default(struct ddp_coll_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->backend = (enum ddp_coll_backend)ddp_param_backend();
	cfg->timeout_s = (double)ddp_param_coll_timeout();
	cfg->shm_dir = ddp_param_shm_dir();
	cfg->nccl_lib = ddp_param_nccl_lib();
	cfg->no_host_cma = !ddp_param_coll_host_cma();
}

/* Auto: NCCL only when the buffers are on a real GPU and every rank can load
 * it; the ranks agree through a counter so that nobody picks alone. */
static ddp_result coll_pick_backend(struct ddp_comm *c, enum ddp_coll_backend *out)
{
	enum ddp_coll_backend want = c->cfg.backend;
	if (want == DDP_COLL_NCCL && c->cfg.own_context)
		return coll_fail(
			c, DDP_ERR_UNSUPPORTED, 1,
			"the program made its own CUDA context (cuCtxCreate): NCCL works in the device's "
			"primary context and cannot reach its buffers; use --backend host (DDP_BACKEND=host)");
	if (want == DDP_COLL_HOST || want == DDP_COLL_NCCL) {
		*out = want;
		return DDP_OK;
	}
	if (!c->cfg.real_gpu || c->world == 1) {
		*out = DDP_COLL_HOST;
		return DDP_OK;
	}
	int version = 0;
	char msg[256];
	/* the same minimum as the backend's init: an NCCL that loads but is too
	 * old must make auto choose host, not a communicator that then fails */
	int ok = ddp_coll_nccl_probe(c->cfg.nccl_lib, &version, msg, sizeof msg) == DDP_OK &&
		 version >= COLL_NCCL_MIN_VERSION;
	if (ok && c->cfg.own_context) {
		ok = 0;
		DDP_INFO(COLL,
			 "DDP_BACKEND=auto: rank %d's program made its own CUDA context (cuCtxCreate), which "
			 "NCCL cannot reach: host backend",
			 c->rank);
	} else if (!ok)
		DDP_INFO(COLL, "DDP_BACKEND=auto: NCCL not usable on rank %d (%s)", c->rank,
			 version ? "older than 2.14" : msg);
	char key[64], bar[64];
	snprintf(key, sizeof key, "coll/%d/nccl_ok", c->gen);
	snprintf(bar, sizeof bar, "coll/%d/pick", c->gen);
	int64_t total = 0;
	DDP_CHECK(ddp_store_add(c->store, key, ok ? 1 : 0, NULL));
	DDP_CHECK(ddp_store_barrier(c->store, bar, c->world, c->cfg.timeout_s));
	DDP_CHECK(ddp_store_add(c->store, key, 0, &total));
	*out = total == c->world ? DDP_COLL_NCCL : DDP_COLL_HOST;
	DDP_INFO(COLL, "DDP_BACKEND=auto: %s (%lld of %d ranks can load NCCL)", backend_names[*out],
		 (long long)total, c->world);
	return DDP_OK;
}

ddp_result ddp_comm_init(struct ddp_store *store, int rank, int world, int local_rank, int local_world,
			 const struct ddp_coll_config *cfg, struct ddp_comm **out)
{
	ddp_result rc = DDP_OK;
	*out = NULL;
	if (world < 1 || rank < 0 || rank >= world || local_world < 1 || local_rank < 0 ||
	    local_rank >= local_world || local_world > world || (!store && world > 1)) {
		DDP_ERROR("bad communicator: rank %d of %d, local rank %d of %d%s", rank, world, local_rank,
			  local_world, store ? "" : ", no store");
		return DDP_ERR_INVALID;
	}
	struct ddp_comm *c = calloc(1, sizeof *c);
	if (!c)
		return DDP_ERR_NOMEM;
	c->store = store;
	c->rank = rank;
	c->world = world;
	c->local_rank = local_rank;
	c->local_world = local_world;
	if (cfg)
		c->cfg = *cfg;
	else
		ddp_coll_config_default(&c->cfg);
	if (c->cfg.timeout_s <= 0)
		c->cfg.timeout_s = 300;
	if (!c->cfg.shm_dir || !*c->cfg.shm_dir)
		c->cfg.shm_dir = "/dev/shm";
	if (!c->cfg.nccl_lib || !*c->cfg.nccl_lib)
		c->cfg.nccl_lib = "libnccl.so.2";
	if ((unsigned)c->cfg.backend > DDP_COLL_NCCL) {
		rc = coll_fail(c, DDP_ERR_INVALID, 1, "unknown collectives backend %d", (int)c->cfg.backend);
		goto out_free;
	}
	if (store) {
		int64_t total;
		DDP_CHECK_GOTO(ddp_store_add(store, "coll/comms", 1, &total), rc, out_free);
		c->gen = (int)((total - 1) / world);
	}
	DDP_CHECK_GOTO(coll_pick_backend(c, &c->backend), rc, out_free);
	if (c->backend == DDP_COLL_NCCL)
		DDP_CHECK_GOTO(coll_nccl_init(c), rc, out_free);
	else
		DDP_CHECK_GOTO(coll_host_init(c), rc, out_free);
	c->err[0] = 0;
	c->broken = 0;
	DDP_INFO(COLL, "communicator %d: rank %d of %d (local %d of %d), backend %s, timeout %.0f s", c->gen,
		 rank, world, local_rank, local_world, backend_names[c->backend], c->cfg.timeout_s);
	*out = c;
	return DDP_OK;

out_free:
	if (!c->err[0])
		DDP_WARN("collectives init failed on rank %d: %s", rank, ddp_strerror(rc));
	coll_host_destroy(c);
	coll_nccl_destroy(c);
	free(c);
	return rc;
}

static ddp_result coll_check_args(struct ddp_comm *c, const char *what, const void *buf, size_t bytes, int dev)
{
	if (c->broken)
		return DDP_ERR_REMOTE;
	if (!buf && bytes)
		return coll_fail(c, DDP_ERR_INVALID, 1, "%s #%" PRIu64 ": NULL buffer", what, c->seq);
	if (dev && (!c->cfg.driver || !c->cfg.driver->memcpyDtoHAsync || !c->cfg.driver->memcpyHtoDAsync ||
		    !c->cfg.driver->streamSynchronize || !c->cfg.driver->memAllocHost))
		if (c->backend == DDP_COLL_HOST)
			return coll_fail(c, DDP_ERR_INVALID, 1,
					 "%s #%" PRIu64 ": device buffer but no driver table (internal error)",
					 what, c->seq);
	if (!dev && c->backend == DDP_COLL_NCCL)
		return coll_fail(c, DDP_ERR_INVALID, 1,
				 "%s #%" PRIu64 ": NCCL backend needs device buffers; use DDP_BACKEND=host",
				 what, c->seq);
	return DDP_OK;
}

void coll_account(struct ddp_comm *c, enum ddp_coll_kind k, size_t bytes, double t0)
{
	double dt = coll_now() - t0;
	c->stats.calls[k]++;
	c->stats.bytes[k] += bytes;
	c->stats.ns[k] += (uint64_t)(dt * 1e9);
	c->seq++;
}

ddp_result coll_check_allreduce(struct ddp_comm *c, const void *buf, size_t count, enum ddp_dtype dtype, int dev)
{
	if (!ddp_dtype_reducible(dtype))
		return coll_fail(c, DDP_ERR_INVALID, 1,
				 "allreduce #%" PRIu64 ": cannot average dtype %s (%d): f32, f16 or bf16 only",
				 c->seq, ddp_dtype_name(dtype), (int)dtype);
	size_t es = ddp_dtype_size(dtype);
	if (count > SIZE_MAX / es)
		return coll_fail(c, DDP_ERR_INVALID, 1, "allreduce #%" PRIu64 ": count %zu too large", c->seq,
				 count);
	return coll_check_args(c, "allreduce", buf, count * es, dev);
}

ddp_result ddp_allreduce_avg(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype dtype,
			     int buf_is_device, CUstream stream)
{
	DDP_CHECK(ddp_coll_async_drain(c)); /* the backend has one user at a time */
	DDP_CHECK(coll_check_allreduce(c, buf, count, dtype, buf_is_device));
	size_t es = ddp_dtype_size(dtype);
	double t0 = coll_now();
	ddp_result rc;
	if (c->world == 1)
		rc = DDP_OK; /* the mean of one buffer is itself */
	else if (c->backend == DDP_COLL_NCCL)
		rc = coll_nccl_allreduce(c, buf, count, dtype, stream);
	else
		rc = coll_host_allreduce(c, buf, count, dtype, buf_is_device, stream);
	if (rc != DDP_OK)
		return rc;
	coll_account(c, DDP_COLL_ALLREDUCE, count * es, t0);
	DDP_DEBUG(COLL, "allreduce #%" PRIu64 " %s count=%zu %s: %.3f ms", c->seq - 1, ddp_dtype_name(dtype),
		  count, buf_is_device ? "device" : "host", (coll_now() - t0) * 1e3);
	return DDP_OK;
}

ddp_result ddp_allreduce_avg_segs(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
				  enum ddp_dtype dtype, int buf_is_device, CUstream stream)
{
	if (n <= 1 || c->world == 1 || c->backend != DDP_COLL_NCCL) {
		for (size_t i = 0; i < n; i++)
			DDP_CHECK(ddp_allreduce_avg(c, (void *)(uintptr_t)seg[i].addr,
						    seg[i].bytes / ddp_dtype_size(dtype), dtype,
						    buf_is_device, stream));
		return DDP_OK;
	}
	DDP_CHECK(ddp_coll_async_drain(c)); /* the backend has one user at a time */
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		DDP_CHECK(coll_check_allreduce(c, (void *)(uintptr_t)seg[i].addr,
					       seg[i].bytes / ddp_dtype_size(dtype), dtype, buf_is_device));
		bytes += seg[i].bytes;
	}
	double t0 = coll_now();
	DDP_CHECK(coll_nccl_allreduce_group(c, seg, n, dtype, stream));
	coll_account(c, DDP_COLL_ALLREDUCE, bytes, t0);
	DDP_DEBUG(COLL, "grouped allreduce #%" PRIu64 " %s, %zu ranges, %" PRIu64 " bytes: %.3f ms",
		  c->seq - 1, ddp_dtype_name(dtype), n, bytes, (coll_now() - t0) * 1e3);
	return DDP_OK;
}

ddp_result ddp_broadcast(struct ddp_comm *c, void *buf, size_t bytes, int root, int buf_is_device,
			 CUstream stream)
{
	DDP_CHECK(ddp_coll_async_drain(c)); /* the backend has one user at a time */
	if (root < 0 || root >= c->world)
		return coll_fail(c, DDP_ERR_INVALID, 1,
				 "broadcast #%" PRIu64 ": root %d is not a rank (world %d)", c->seq, root,
				 c->world);
	DDP_CHECK(coll_check_args(c, "broadcast", buf, bytes, buf_is_device));
	double t0 = coll_now();
	ddp_result rc;
	if (c->world == 1)
		rc = DDP_OK;
	else if (c->backend == DDP_COLL_NCCL)
		rc = coll_nccl_broadcast(c, buf, bytes, root, stream);
	else
		rc = coll_host_broadcast(c, buf, bytes, root, buf_is_device, stream);
	if (rc != DDP_OK)
		return rc;
	coll_account(c, DDP_COLL_BROADCAST, bytes, t0);
	DDP_DEBUG(COLL, "broadcast #%" PRIu64 " bytes=%zu root=%d: %.3f ms", c->seq - 1, bytes, root,
		  (coll_now() - t0) * 1e3);
	return DDP_OK;
}

/* ---- signature check */

/* Copies word `idx`-th whitespace-separated word that differs between a and b
 * into wa/wb (truncated). */
static void sig_first_difference(const char *a, const char *b, char *wa, char *wb, size_t len)
{
	for (;;) {
		a += strspn(a, " \t");
		b += strspn(b, " \t");
		size_t na = strcspn(a, " \t"), nb = strcspn(b, " \t");
		if (na != nb || memcmp(a, b, na) != 0 || (!na && !nb)) {
			snprintf(wa, len, "%.*s%s", (int)(na < len - 4 ? na : len - 4), a,
				 na < len - 4 ? "" : "...");
			snprintf(wb, len, "%.*s%s", (int)(nb < len - 4 ? nb : len - 4), b,
				 nb < len - 4 ? "" : "...");
			if (!na)
				snprintf(wa, len, "(nothing)");
			if (!nb)
				snprintf(wb, len, "(nothing)");
			return;
		}
		a += na;
		b += nb;
	}
}

/* The signature check is a round of the one cross-rank compare
 * (ddp_xrank.h, DDP_XR_JUDGE: rank 0 reads every rank's text and posts the
 * verdict, with both texts when they differ). */
ddp_result ddp_check_signature(struct ddp_comm *c, const char *kind, const char *sig)
{
	ddp_result rc = DDP_OK;
	if (c->broken)
		return DDP_ERR_REMOTE;
	if (c->world == 1 || !c->store)
		return DDP_OK;
	size_t n = strlen(kind) + strlen(sig) + 3;
	if (n > SIG_MAX)
		return coll_fail(c, DDP_ERR_INVALID, 1, "collective signature longer than %u bytes", SIG_MAX);
	uint64_t k = c->checks++;
	char *mine = malloc(n);
	if (!mine)
		return DDP_ERR_NOMEM;
	snprintf(mine, n, "%s: %s", kind, sig);
	const struct ddp_xrank x = { c->store, c->rank, c->world };
	struct ddp_xr_diff d;
	char wa[80], wb[80];
	switch (ddp_xrank_compare(&x, DDP_XR_SIG, (uint64_t)c->gen, k, mine, strlen(mine), DDP_XR_JUDGE,
				  c->cfg.timeout_s, k >= 2 ? k - 2 : DDP_XR_NOROUND, &d)) {
	case DDP_XR_SAME:
		break;
	case DDP_XR_DIFF: {
		/* NUL-terminated copies of both texts (rank 0's, rank q's) */
		char *t[2];
		for (int i = 0; i < 2; i++) {
			t[i] = malloc(d.len[i] + 1);
			if (t[i]) {
				memcpy(t[i], d.val[i], d.len[i]);
				t[i][d.len[i]] = 0;
			}
		}
		if (!t[0] || !t[1]) {
			free(t[0]);
			free(t[1]);
			rc = coll_fail(c, DDP_ERR_NOMEM, 1, "collective check #%" PRIu64 ": out of memory", k);
			break;
		}
		sig_first_difference(t[1], t[0], wa, wb, sizeof wa);
		DDP_INFO(COLL, "signature of rank %d: %s", d.rank[1], t[1]);
		DDP_INFO(COLL, "signature of rank 0: %s", t[0]);
		free(t[0]);
		free(t[1]);
		rc = coll_fail(c, DDP_ERR_REMOTE, c->rank == 0,
			       "collectives differ between ranks at check #%" PRIu64
			       ": rank %d has '%s' where rank 0 has '%s' (ranks differing from rank 0: %s); the "
			       "programs must issue identical collectives",
			       k, d.rank[1], wa, wb, d.ranks);
		break;
	}
	case DDP_XR_MISSING:
		if (d.rank[1] == 0) /* this rank waited for rank 0's verdict */
			rc = coll_fail(c, DDP_ERR_TIMEOUT, 1,
				       "collective check #%" PRIu64
				       " on rank %d: rank 0 gave no verdict within %.0f s "
				       "(rank 0 dead, hung, or not issuing this collective)",
				       k, c->rank, c->cfg.timeout_s + 5);
		else
			rc = coll_fail(c, DDP_ERR_TIMEOUT, c->rank == 0,
				       "collective check #%" PRIu64
				       " timed out after %.0f s: rank(s) %s never posted a signature "
				       "(dead, hung, or not issuing this collective)",
				       k, c->cfg.timeout_s, d.ranks);
		break;
	case DDP_XR_ERROR:
		rc = coll_fail(c, d.rc, 1, "collective check #%" PRIu64 " on rank %d: store failed: %s", k,
			       c->rank,
			       d.rc == DDP_ERR_INTERNAL ? "bad verdict" : ddp_store_last_error(c->store));
		break;
	}
	ddp_xr_diff_free(&d);
	free(mine);
	return rc;
}

/* ---- accessors */

enum ddp_coll_backend ddp_comm_backend(const struct ddp_comm *c)
{
	return c->backend;
}

const char *ddp_comm_backend_name(const struct ddp_comm *c)
{
	return backend_names[c->backend];
}

const char *ddp_coll_last_error(const struct ddp_comm *c)
{
	return c ? c->err : "";
}

void ddp_coll_get_stats(const struct ddp_comm *c, struct ddp_coll_stats *out)
{
	*out = c->stats;
}

int ddp_comm_nccl_version(const struct ddp_comm *c)
{
	return coll_nccl_version(c);
}

void ddp_comm_destroy(struct ddp_comm *c)
{
	if (!c)
		return;
	coll_async_destroy(c);
	coll_host_destroy(c);
	coll_nccl_destroy(c);
	free(c);
}
