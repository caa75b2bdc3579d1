/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_coll.c - what the executor (ddp_sync_exec.c) issues: the injected
 * collectives (allreduce-average, broadcast, the overlap layer's reduction
 * at the consumer), copies; and the tracker's measurement callbacks
 * (struct ddp_grad_ops: device reads and writes, the calibration relaunch,
 * liveness) and what the overlap layer needs.
 * Split from ddp_sync.c (moves only); ddp_sync_int.h lists the glue's
 * files, ddp_sync.c's header tells the story.
 *
 * Contract: sync_st.lock (ddp_sync.c) serialises every function here.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ddp_array.h"
#include "ddp_coll.h"
#include "ddp_extent.h"
#include "ddp_port.h"
#include "ddp_grad.h"
#include "ddp_job.h"
#include "ddp_kreg.h"
#include "ddp_launch.h"
#include "ddp_log.h"
#include "ddp_stats.h"
#include "ddp_params.h"
#include "ddp_store.h"
#include "ddp_sync.h"
#include "ddp_alloc.h"
#include "ddp_inspect.h"
#include "ddp_overlap.h"
#include "ddp_rangelog.h"
#include "ddp_sig.h"
#include "ddp_trace.h"
#include "ddp_torch_launch.h"
#include "ddp_status.h"
#include "ddp_sync_int.h"

/* ---- collectives */

/* One injected collective over bufs: the gradients' allreduce-average or the
 * parameters' broadcast from rank 0.  Checks the signature the first time,
 * counts bytes and time, traces and logs it; a failure ends the process. */
struct coll_kind {
	const char *name; /* "allreduce" / "broadcast" (trace, signature) */
	const char *what; /* what one buffer is, for messages            */
	int is_allreduce;
	uint64_t *calls, *bytes, *ns;
};

/* Bytes averaged at step st (a reduction before a step's first optimizer
 * launch, at a reader or early, belongs to that step). */
void sync_account_step_bytes(uint64_t st, uint64_t bytes)
{
	if (st > sync_st.stats.nstep_bytes) {
		size_t old = sync_st.stats.nstep_bytes;
		uint64_t *p = ddp_array_grow(sync_st.stats.step_bytes, &sync_st.stats.nstep_bytes, st, sizeof *p, 64);
		if (p) {
			memset(p + old, 0, (sync_st.stats.nstep_bytes - old) * sizeof *p);
			sync_st.stats.step_bytes = p;
		}
	}
	if (st && st <= sync_st.stats.nstep_bytes)
		sync_st.stats.step_bytes[st - 1] += bytes;
	ddp_status_averaged(bytes); /* ddprun's end line says how much */
}

/* The step the gradients being reduced now belong to. */
uint64_t sync_reduce_step(void)
{
	return sync_st.phase_open ? sync_st.cur_step : sync_st.cur_step + 1;
}

#define GROUP_MAX 256 /* ncclAllReduce calls in one NCCL group */

/* The synchronous allreduce of bufs[0..n) (gradient ranges, in tracker
 * order) through the bucket planner, as the overlap layer's reductions:
 * buckets of one dtype up to DDP_BUCKET_MB (ddp_coll_bucket_plan), each
 * bucket's ranges of one allocation that touch merged into one segment
 * (ddp_coll_bucket_segments); one call per bucket (an NCCL group of at
 * most GROUP_MAX; the host backend reduces the segments one by one).
 * DDP_DEBUG_SKIP_AVG=i leaves the call's i-th segment out (the invariant
 * check's negative control).  Sets *bytes and *colls (calls issued). */
static ddp_result allreduce_buckets(struct ddp_comm *c, struct ddp_grad_buf *const *bufs, size_t n, void *stream,
				    uint64_t *bytes, size_t *colls)
{
	struct ddp_coll_range *r = malloc(2 * n * sizeof *r);
	struct ddp_coll_bucket *bk = malloc(n * sizeof *bk);
	struct ddp_coll_seg *seg = malloc(n * sizeof *seg);
	ddp_result rc = DDP_OK;
	size_t segno = 0;
	*bytes = 0;
	*colls = 0;
	if (!r || !bk || !seg) {
		rc = DDP_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		enum ddp_dtype dt = (enum ddp_dtype)bufs[i]->dtype;
		r[i] = (struct ddp_coll_range){ bufs[i]->base, bufs[i]->count * ddp_dtype_size(dt), bufs[i]->alloc_id,
						dt };
	}
	size_t nb = ddp_coll_bucket_plan(r, n, sync_st.bucket_bytes, bk, n);
	for (size_t b = 0; b < nb && rc == DDP_OK; b++) {
		size_t ns = ddp_coll_bucket_segments(r + bk[b].first, bk[b].n, r + n, seg), m = 0;
		for (size_t i = 0; i < ns; i++, segno++) {
			if (sync_st.skip_avg >= 0 && (size_t)sync_st.skip_avg == segno) {
				DDP_WARN("DDP_DEBUG_SKIP_AVG=%ld: %" PRIu64 " gradient bytes at 0x%" PRIx64
					 " are NOT averaged (debug setting)",
					 sync_st.skip_avg, seg[i].bytes, seg[i].addr);
				continue;
			}
			seg[m++] = seg[i];
		}
		for (size_t i = 0; i < m && rc == DDP_OK; i += GROUP_MAX) {
			size_t k = m - i < GROUP_MAX ? m - i : GROUP_MAX;
			rc = ddp_allreduce_avg_segs(c, seg + i, k, bk[b].dtype, 1, sync_the_stream(stream));
			*colls += ddp_comm_backend(c) == DDP_COLL_NCCL ? 1 : k;
		}
		for (size_t i = 0; i < m; i++) {
			ddp_rangelog_add(sync_reduce_step(), 'A', seg[i].addr, seg[i].bytes);
			*bytes += seg[i].bytes;
		}
	}
out:
	free(r);
	free(bk);
	free(seg);
	return rc;
}

static ddp_result run_collective(const struct coll_kind *k, struct ddp_grad_buf *const *bufs, size_t n,
				 void *stream)
{
	struct ddp_comm *c = NULL;
	static char sig[8192]; /* well below ddp_check_signature's 16 KiB */
	uint64_t bytes = 0, t0 = ddp_now_ns(), h;
	ddp_result rc;

	if (!sync_st.dry) {
		ddp_status_coll_begin(k->name); /* ddprun sees who waits where */
		if ((rc = ddp_job_comm(&c)) != DDP_OK)
			sync_coll_fail(rc, "creating the communicator");
		ddp_grad_signature(sig, sizeof sig, bufs, n, k->is_allreduce, &h);
		sync_check_sig(c, k->name, sig, h);
	}
	size_t colls = n;
	if (k->is_allreduce && !sync_st.dry) {
		rc = allreduce_buckets(c, bufs, n, stream, &bytes, &colls);
		if (rc != DDP_OK) {
			char what[160];
			snprintf(what, sizeof what, "allreduce of %zu gradient range%s (%s%s)", n, n == 1 ? "" : "s",
				 bufs[0]->label, n > 1 ? ", ..." : "");
			sync_coll_fail(rc, what);
		}
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		void *base = (void *)(uintptr_t)bufs[i]->base;
		enum ddp_dtype dt = (enum ddp_dtype)bufs[i]->dtype;
		uint64_t b = k->is_allreduce ? bufs[i]->count * ddp_dtype_size(dt) : bufs[i]->size;
		if (sync_st.dry) {
			bytes += b;
			continue;
		}
		rc = ddp_broadcast(c, base, (size_t)bufs[i]->size, 0, 1, sync_the_stream(stream));
		if (rc != DDP_OK) {
			char what[128];
			snprintf(what, sizeof what, "%s of %s %s", k->name, k->what, bufs[i]->label);
			sync_coll_fail(rc, what);
		}
		ddp_rangelog_add(sync_st.cur_step ? sync_st.cur_step : 1, 'B', bufs[i]->base, b);
		bytes += b;
	}
done:
	if (!sync_st.dry)
		ddp_status_coll_leave();
	uint64_t dt = ddp_now_ns() - t0;
	*k->calls += n;
	*k->bytes += bytes;
	if (k->is_allreduce) {
		sync_account_step_bytes(sync_reduce_step(), bytes);
		if (!sync_st.dry)
			ddp_overlap_account_sync(sync_reduce_step(), colls, dt);
	}
	*k->ns += dt;
	sync_trace_coll(k->name, t0, bytes, n == 1 ? bufs[0]->label : NULL);
	DDP_INFO(COLL, "step %" PRIu64 ": %s of %zu %s buffer%s%s, %" PRIu64 " bytes, %.3f ms",
		 sync_st.cur_step ? sync_st.cur_step : 1, k->is_allreduce ? "allreduce-avg" : "broadcast", n, k->what,
		 n == 1 ? "" : "s", k->is_allreduce ? "" : " from rank 0", bytes, dt / 1e6);
	return DDP_OK;
}

ddp_result sync_do_allreduce(struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	static const struct coll_kind k = {
		"allreduce",        "gradient", 1, &sync_st.stats.allreduce_calls, &sync_st.stats.allreduce_bytes,
		&sync_st.stats.allreduce_ns
	};
	return run_collective(&k, bufs, n, stream);
}

/* DDP_OVERLAP=auto is the stream-ordered path with either backend, where
 * it can run (decided once, when the communicator exists): otherwise the
 * synchronous reductions, with one line saying why.  DDP_OVERLAP=on asks for
 * it regardless (it then fails at its first collective, naming the cause). */
int sync_reduce_overlapped(void)
{
	static int decided;
	struct ddp_comm *c = NULL;
	char why[160];
	if (!decided && sync_st.overlap_mode == 0 && ddp_job_comm(&c) == DDP_OK && c) {
		decided = 1;
		if (!ddp_coll_async_usable(c, why, sizeof why)) {
			ddp_overlap_turn_off();
			DDP_WARN("DDP_OVERLAP=auto: synchronous %s reductions at the consumer, not overlapped with "
				 "backward: %s",
				 ddp_comm_backend_name(c), why);
		}
	}
	return ddp_overlap_on();
}

/* DDP_OVERLAP=on: the tracker's consumer hands over the ranges themselves. */
ddp_result sync_do_reduce(struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	uint64_t colls = 0, bytes = 0, t0 = ddp_now_ns(), st = sync_reduce_step();
	ddp_status_coll_begin("allreduce"); /* ddprun sees who waits where */
	ddp_result rc = ddp_overlap_reduce(bufs, n, stream, st, &colls, &bytes);
	if (rc != DDP_OK)
		ddp_status_coll_failed(); /* the tracker stops the rank on it */
	ddp_status_coll_leave();
	sync_st.stats.allreduce_calls += colls;
	sync_st.stats.allreduce_bytes += bytes;
	sync_st.stats.allreduce_ns += ddp_now_ns() - t0;
	sync_account_step_bytes(st, bytes);
	DDP_INFO(COLL,
		 "step %" PRIu64 ": %zu gradient range%s at the consumer: %" PRIu64
		 " collective%s enqueued (%" PRIu64 " bytes), the others reduced early",
		 st, n, n == 1 ? "" : "s", colls, colls == 1 ? "" : "s", bytes);
	return rc;
}

ddp_result sync_do_broadcast(struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	static const struct coll_kind k = { "broadcast",        "parameter/state",  0,
					    &sync_st.stats.bcast_calls, &sync_st.stats.bcast_bytes, &sync_st.stats.bcast_ns };
	return run_collective(&k, bufs, n, stream);
}

ddp_result sync_do_copy(uint64_t dst, uint64_t src, uint64_t bytes, void *stream)
{
	if (!ddp_driver_.memcpyDtoDAsync)
		return DDP_ERR_UNSUPPORTED;
	return ddp_cu_result(
		ddp_driver_.memcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, (size_t)bytes, sync_the_stream(stream)),
		"cuMemcpyDtoDAsync (libddp)");
}

/* ---- the tracker's measurement callbacks (struct ddp_grad_ops) */


ddp_result sync_op_read(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream)
{
	(void)ctx;
	DDP_CUCHECK(ddp_driver_.memcpyDtoHAsync(host, (CUdeviceptr)dev, bytes, sync_the_stream(stream)),
		    "cuMemcpyDtoHAsync (libddp)");
	return ddp_cu_result(sync_st.real_sync(sync_the_stream(stream)), "cuStreamSynchronize (libddp)");
}

ddp_result sync_op_write(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream)
{
	(void)ctx;
	DDP_CUCHECK(ddp_driver_.memcpyHtoDAsync((CUdeviceptr)dev, host, bytes, sync_the_stream(stream)),
		    "cuMemcpyHtoDAsync (libddp)");
	return ddp_cu_result(sync_st.real_sync(sync_the_stream(stream)), "cuStreamSynchronize (libddp)");
}

ddp_result sync_op_relaunch(void *ctx, void *launch_ctx)
{
	const struct ddp_launch_call *c = launch_ctx;
	CUresult r;
	(void)ctx;
	sync_st.stats.calibrations++;
	r = ddp_port_relaunch(c);
	DDP_CUCHECK(r, "calibration launch");
	return ddp_cu_result(sync_st.real_sync(sync_the_stream(sync_st.check_stream)), "cuStreamSynchronize (libddp)");
}

/* Everything in flight, stream-ordered reductions included (a measurement
 * must see only its own launch's writes). */
ddp_result sync_op_drain(void *ctx)
{
	(void)ctx;
	if (sync_st.real_ctx_sync && sync_st.real_ctx_sync() != CUDA_SUCCESS)
		return DDP_ERR_CUDA;
	return DDP_OK;
}

/* Is b's allocation still the one the tracker learned?  (A freed buffer's
 * address may be free, or belong to another allocation by now.) */
int sync_op_alive(void *ctx, const struct ddp_grad_buf *b)
{
	struct ddp_alloc_ent e;
	(void)ctx;
	return ddp_alloc_find(b->alloc_base, &e) && e.base == b->alloc_base && e.id == b->alloc_id;
}

/* ---- what the overlap layer needs */

void sync_ov_coll_fail(ddp_result rc, const char *what)
{
	sync_coll_fail(rc, what);
}

int sync_ov_alive(const struct ddp_grad_buf *b)
{
	return sync_op_alive(NULL, b);
}

