/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_check.c - the checks at step ends: --check N parameter hashes, the
 * data-parallel invariant (every range the optimizer reads is identical on
 * all ranks), the tracker's step begin and end.
 * Split from ddp_sync.c (moves only); ddp_sync_int.h lists the glue's
 * files, ddp_sync.c's header tells the story.
 *
 * Contract: sync_lock (ddp_sync.c) serialises every function here.
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
#include "ddp_status.h"
#include "ddp_trace.h"
#include "ddp_torch_launch.h"
#include "ddp_sync_int.h"

/* One range the optimizer read at a checked step (the invariant check). */
struct inv_item {
	uint64_t hash, bytes, off;
	uint32_t alloc_id;
	uint16_t param, word; /* word 0xffff: the launch's scalar arguments */
	char kname[48];
	char label[112];
};

static struct inv_item *inv;
static size_t ninv, invcap;
static uint64_t inv_step; /* the step inv[] belongs to           */

/* --check N: hash every parameter/state buffer and compare across ranks.
 * Every stream of the context is drained first: the optimizer may have run
 * on another stream than the launch that ends the step, and a hash taken
 * while it still runs would differ between ranks by timing alone. */
static ddp_result check_hashes(uint64_t step, void *stream)
{
	static uint64_t prev_step[2]; /* the last two checked steps (key clean-up) */
	struct ddp_store *st = ddp_job_store();
	size_t nb = ddp_grad_nbufs(sync_tracker), np = 0;
	uint64_t *h = calloc(nb ? nb : 1, sizeof *h);
	const struct ddp_grad_buf **pb = calloc(nb ? nb : 1, sizeof *pb);
	void *host = NULL;
	size_t hostcap = 0;
	char key[96], msg[700];

	if (!h || !pb || !st)
		sync_die("libddp: --check: out of memory or no store connection");
	if (sync_real_ctx_sync && sync_real_ctx_sync() != CUDA_SUCCESS)
		sync_die("libddp: --check: cuCtxSynchronize failed before hashing the parameters");
	for (size_t i = 0; i < nb; i++) {
		struct ddp_grad_buf *b = ddp_grad_buf_at(sync_tracker, i);
		if (b->role != DDP_GR_PARAM)
			continue;
		if (!sync_op_alive(NULL, b)) {
			/* freed by the program (on every rank alike): not a parameter any more */
			ddp_grad_forget(sync_tracker, b->alloc_base);
			continue;
		}
		if (b->size > hostcap) {
			free(host);
			hostcap = b->size;
			if (!(host = malloc(hostcap)))
				sync_die("libddp: --check: out of memory");
		}
		if (sync_op_read(NULL, b->base, host, b->size, stream) != DDP_OK)
			sync_die("libddp: --check: cannot copy a parameter buffer to the host");
		pb[np] = b;
		h[np++] = sync_fnv1a(0xcbf29ce484222325ULL, host, b->size);
	}
	free(host);
	snprintf(key, sizeof key, "ddp/check/%" PRIu64 "/%d", step, sync_my_rank);
	if (ddp_store_set(st, key, h, np * sizeof *h) != DDP_OK)
		sync_die("libddp: --check: cannot post the hashes to the store");
	for (int r = 0; r < sync_my_world; r++) {
		void *val = NULL;
		size_t len = 0;
		if (r == sync_my_rank)
			continue;
		snprintf(key, sizeof key, "ddp/check/%" PRIu64 "/%d", step, r);
		ddp_result rc = ddp_store_get(st, key, &val, &len, (double)ddp_param_coll_timeout());
		if (rc != DDP_OK) {
			snprintf(msg, sizeof msg,
				 "libddp: --check at step %" PRIu64 ": rank %d never posted its "
				 "parameter hashes (%s)",
				 step, r, ddp_strerror(rc));
			sync_die(msg);
		}
		if (len != np * sizeof *h) {
			snprintf(msg, sizeof msg,
				 "libddp: --check at step %" PRIu64 ": rank %d has %zu parameter "
				 "buffers, rank %d has %zu: the ranks run different programs",
				 step, r, len / sizeof *h, sync_my_rank, np);
			sync_die(msg);
		}
		for (size_t i = 0; i < np; i++) {
			uint64_t other;
			memcpy(&other, (char *)val + i * sizeof other, sizeof other);
			if (other != h[i]) {
				snprintf(msg, sizeof msg,
					 "libddp: --check: parameters diverged at step %" PRIu64
					 ": buffer %s (%" PRIu64
					 " bytes) differs between rank %d (hash %016" PRIx64
					 ") and rank %d (hash %016" PRIx64 ")",
					 step, pb[i]->label, pb[i]->size, sync_my_rank, h[i], r, other);
				sync_die(msg);
			}
		}
		free(val);
	}
	/* every rank has read our hashes of two checks ago before posting the
	 * previous check's, which we read: drop them (the store keeps no history) */
	if (prev_step[1]) {
		snprintf(key, sizeof key, "ddp/check/%" PRIu64 "/%d", prev_step[1], sync_my_rank);
		ddp_store_delete(st, key);
	}
	prev_step[1] = prev_step[0];
	prev_step[0] = step;
	sync_stats.hash_checks++;
	DDP_INFO(GRAD, "--check at step %" PRIu64 ": %zu parameter buffers identical on all %d ranks", step,
		 np, sync_my_world);
	free(h);
	free(pb);
	return DDP_OK;
}

/* ---- the data-parallel invariant: every range the optimizer reads is
 * identical on all ranks.  At a checked step each optimizer launch's ranges
 * (and its scalar arguments) are hashed before it runs, after the
 * reductions and broadcasts it needed; at the step's end the ranks compare
 * the lists through the store. */

/* Steps 1-3 (the rules learn there), every DDP_CHECK steps, and steps 10,
 * 100, 1000, ...: a rule that goes wrong after warm-up (addresses reused
 * another way, an order that changes) is still caught in a long run, at the
 * cost of a handful of checks. */
static int step_checked(uint64_t step)
{
	uint64_t p = step;
	while (p >= 10 && p % 10 == 0)
		p /= 10;
	return sync_check_inv && ((step >= 1 && step <= 3) ||
			     (sync_check_every > 0 && step % (uint64_t)sync_check_every == 0) || (step >= 10 && p == 1));
}

/* 64-bit hash of bytes, eight at a time (FNV-style on words, then a final
 * mix): fast enough for gigabytes, the same on every rank. */
static uint64_t hash_bytes(uint64_t h, const unsigned char *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h ^ (h >> 32);
}

static struct inv_item *inv_add(void)
{
	if (ninv == invcap) {
		size_t nc = invcap ? invcap * 2 : 64;
		struct inv_item *p = realloc(inv, nc * sizeof *p);
		if (!p)
			sync_die("libddp: out of memory (invariant check)");
		inv = p;
		invcap = nc;
	}
	struct inv_item *it = &inv[ninv++];
	memset(it, 0, sizeof *it);
	return it;
}

#define INV_GAP (64u << 10) /* ranges this close are copied to the host in one go */

static const struct ddp_grad_read *sort_reads;
static int cmp_read(const void *a, const void *b)
{
	uint64_t x = sort_reads[*(const size_t *)a].ptr, y = sort_reads[*(const size_t *)b].ptr;
	return (x > y) - (x < y);
}

ddp_result sync_op_opt_reads(void *ctx, const struct ddp_grad_launch *L, uint64_t step,
			       const struct ddp_grad_read *r, size_t n)
{
	static unsigned char *host;
	static size_t hostcap, *ord, ordcap;
	uint64_t t0 = ddp_now_ns();
	(void)ctx;
	if (sync_dry || !step_checked(step))
		return DDP_OK;
	if (inv_step != step) {
		ninv = 0;
		inv_step = step;
	}
	/* one item per range, in the launch's order (the ranks compare them
	 * item by item) */
	size_t first = ninv;
	for (size_t i = 0; i < n; i++) {
		struct ddp_alloc_ent e;
		struct inv_item *it = inv_add();
		it->bytes = r[i].bytes;
		if (ddp_alloc_find(r[i].ptr, &e)) {
			it->off = r[i].ptr - e.base;
			it->alloc_id = e.id;
		}
		it->param = r[i].param;
		it->word = r[i].word;
		snprintf(it->kname, sizeof it->kname, "%s", L->kname ? L->kname : "?");
		snprintf(it->label, sizeof it->label, "%s%s%s", r[i].label ? r[i].label : "",
			 r[i].label ? ", " : "",
			 r[i].role == DDP_GR_NONE ? "read by the optimizer"
						  : ddp_grad_role_name((enum ddp_grad_role)r[i].role));
		sync_stats.inv_bytes += r[i].bytes;
	}
	/* copied to the host by address: ranges a short gap apart in tracked
	 * memory in one copy (a PyTorch optimizer launch reads hundreds of
	 * small tensors of one segment) */
	size_t *o = ddp_array_grow(ord, &ordcap, n ? n : 1, sizeof *ord, 64);
	if (!o)
		sync_die("libddp: out of memory (invariant check)");
	ord = o;
	for (size_t i = 0; i < n; i++)
		ord[i] = i;
	sort_reads = r;
	qsort(ord, n, sizeof *ord, cmp_read);
	for (size_t a = 0; a < n;) {
		uint64_t lo = r[ord[a]].ptr, hi = lo + r[ord[a]].bytes;
		size_t b = a + 1;
		for (; b < n; b++) {
			uint64_t p = r[ord[b]].ptr, e = p + r[ord[b]].bytes;
			uint64_t nhi = e > hi ? e : hi;
			if (p > hi + INV_GAP || !ddp_alloc_covers(lo, nhi - lo, NULL))
				break;
			hi = nhi;
		}
		if (hi - lo > hostcap) {
			free(host);
			hostcap = hi - lo;
			if (!(host = malloc(hostcap))) {
				hostcap = 0;
				sync_die("libddp: out of memory (invariant check)");
			}
		}
		if (sync_op_read(NULL, lo, host, hi - lo, L->stream) != DDP_OK)
			sync_die("libddp: invariant check: cannot copy a range the optimizer reads to the host");
		for (; a < b; a++)
			inv[first + ord[a]].hash = hash_bytes(0xcbf29ce484222325ULL,
							      host + (r[ord[a]].ptr - lo), r[ord[a]].bytes);
	}
	/* the scalar arguments (learning rate, clip scale, step): typed
	 * scalars only (an untyped 8-byte value may be an address, which
	 * differs between ranks) */
	if (sync_cur_k && sync_cur_k->types_known && sync_cur_call) {
		struct ddp_launch_params p = { sync_cur_call->params, sync_cur_call->extra };
		uint64_t h = 0xcbf29ce484222325ULL;
		int any = 0;
		for (uint32_t i = 0; i < sync_cur_k->nparams; i++) {
			if (sync_cur_k->params[i].ptype != DDP_PT_SCALAR)
				continue;
			const void *v = ddp_launch_param_ptr(sync_cur_k, &p, i);
			if (!v)
				continue;
			h = hash_bytes(h, v, sync_cur_k->params[i].size);
			any = 1;
		}
		if (any) {
			struct inv_item *it = inv_add();
			it->hash = h;
			it->word = 0xffff;
			snprintf(it->kname, sizeof it->kname, "%s", L->kname ? L->kname : "?");
			snprintf(it->label, sizeof it->label, "scalar arguments");
		}
	}
	sync_stats.inv_ns += ddp_now_ns() - t0;
	return DDP_OK;
}

/* At the end of a checked step: compare inv[] with every other rank's. */
static void inv_compare(uint64_t step)
{
	static uint64_t prev_step[2];
	struct ddp_store *st = ddp_job_store();
	uint64_t t0 = ddp_now_ns(), bytes = 0;
	char key[96], msg[900];

	if (sync_dry || inv_step != step || !step_checked(step))
		return;
	if (!st)
		sync_die("libddp: invariant check: no store connection");
	uint64_t *h = calloc(ninv ? ninv : 1, sizeof *h);
	if (!h)
		sync_die("libddp: out of memory (invariant check)");
	for (size_t i = 0; i < ninv; i++) {
		h[i] = inv[i].hash;
		bytes += inv[i].bytes;
	}
	ddp_status_coll_begin("invariant hash exchange");
	snprintf(key, sizeof key, "ddp/inv/%" PRIu64 "/%d", step, sync_my_rank);
	if (ddp_store_set(st, key, h, ninv * sizeof *h) != DDP_OK)
		sync_die("libddp: invariant check: cannot post the hashes to the store");
	for (int r = 0; r < sync_my_world; r++) {
		void *val = NULL;
		size_t len = 0;
		if (r == sync_my_rank)
			continue;
		snprintf(key, sizeof key, "ddp/inv/%" PRIu64 "/%d", step, r);
		ddp_result rc = ddp_store_get(st, key, &val, &len, (double)ddp_param_coll_timeout());
		if (rc != DDP_OK) {
			snprintf(msg, sizeof msg,
				 "libddp: invariant check at step %" PRIu64 ": rank %d never posted "
				 "its hashes (%s)",
				 step, r, ddp_strerror(rc));
			sync_die(msg);
		}
		if (len != ninv * sizeof *h) {
			snprintf(msg, sizeof msg,
				 "libddp: invariant check at step %" PRIu64 ": the optimizer read %zu "
				 "ranges on rank %d and %zu on rank %d: the ranks run different programs",
				 step, len / sizeof *h, r, ninv, sync_my_rank);
			sync_die(msg);
		}
		for (size_t i = 0; i < ninv; i++) {
			uint64_t other;
			memcpy(&other, (char *)val + i * sizeof other, sizeof other);
			if (other == h[i])
				continue;
			const struct inv_item *it = &inv[i];
			if (it->word == 0xffff)
				snprintf(msg, sizeof msg,
					 "libddp: an unaveraged gradient reached the optimizer at step %" PRIu64
					 ": the scalar arguments of kernel %s (a clip scale or norm computed from "
					 "unaveraged gradients?) differ between rank %d and rank %d",
					 step, it->kname, sync_my_rank, r);
			else
				snprintf(msg, sizeof msg,
					 "libddp: an unaveraged gradient reached the optimizer at step %" PRIu64
					 ": kernel %s argument %u%s%.0u (%s; %" PRIu64 " bytes at +%" PRIu64
					 " of allocation #%u) differs between rank %d and rank %d (every byte the "
					 "optimizer reads must be identical on all ranks; see docs/gradient-sync.md)",
					 step, it->kname, it->param, it->word ? "." : "", it->word, it->label,
					 it->bytes, it->off, it->alloc_id, sync_my_rank, r);
			sync_die(msg);
		}
		free(val);
	}
	ddp_status_coll_leave();
	if (prev_step[1]) {
		snprintf(key, sizeof key, "ddp/inv/%" PRIu64 "/%d", prev_step[1], sync_my_rank);
		ddp_store_delete(st, key);
	}
	prev_step[1] = prev_step[0];
	prev_step[0] = step;
	sync_stats.inv_checks++;
	sync_stats.inv_ns += ddp_now_ns() - t0;
	DDP_INFO(GRAD,
		 "invariant check at step %" PRIu64 ": the %zu ranges the optimizer read (%" PRIu64
		 " bytes hashed) are identical on all %d ranks",
		 step, ninv, bytes, sync_my_world);
	free(h);
	ninv = 0;
}

ddp_result sync_op_step_begin(void *ctx, uint64_t step)
{
	(void)ctx;
	sync_cur_step = step;
	sync_phase_open = 1;
	uint64_t now = ddp_now_ns();
	if (!sync_stats.step_first_ns)
		sync_stats.step_first_ns = now;
	ddp_status_step(step);
	ddp_job_progress();
	DDP_DEBUG(GRAD, "step %" PRIu64 ": update phase begins", step);
	return DDP_OK;
}

ddp_result sync_op_step_end(void *ctx, uint64_t step)
{
	(void)ctx;
	uint64_t now = ddp_now_ns();
	sync_phase_open = 0;
	ddp_status_step_end(); /* what is numbered next belongs to the next step */
	ddp_overlap_step_base(sync_launch_seq);
	inv_compare(step);
	if (ddp_trace_enabled()) {
		struct ddp_trace_ev ev = {
			.name = "optimizer step",
			.cat = "step",
			.ts_ns = sync_stats.step_last_ns ? sync_stats.step_last_ns : sync_stats.step_first_ns,
			.step = step,
		};
		ev.dur_ns = now - ev.ts_ns;
		ddp_trace_event(&ev);
	}
	sync_stats.step_last_ns = now;
	/* the allocation table's per-step counters: log them, start the next step */
	struct ddp_alloc_stats as;
	ddp_alloc_stats(&as);
	DDP_DEBUG(GRAD,
		  "step %" PRIu64 " ends: %" PRIu64 " allocations (%" PRIu64 " bytes), %" PRIu64
		  " frees (%" PRIu64 " bytes), %" PRIu64 " live (%" PRIu64 " bytes)",
		  step, as.step_allocs, as.step_bytes_alloc, as.step_frees, as.step_bytes_freed,
		  as.live_count, as.live_bytes);
	ddp_alloc_step_reset();
	/* (the parameter check compares steps that another step follows) */
	if (sync_check_every > 0 && step % (uint64_t)sync_check_every == 0 && !sync_dry && !sync_at_exit) {
		ddp_status_coll_begin("--check hash exchange");
		ddp_result rc = check_hashes(step, sync_check_stream);
		ddp_status_coll_leave();
		return rc;
	}
	return DDP_OK;
}
