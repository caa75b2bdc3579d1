/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_check.c - the checks at step ends: the parameter check (every
 * parameter and optimizer-state range in full at the checked steps and
 * every --check N steps), the data-parallel invariant (every range the
 * optimizer reads is identical on all ranks), the final compare, the
 * tracker's step begin and end.  All of them compare across ranks through
 * the one cross-rank compare (runtime/coll/ddp_xrank.h), which the
 * collective-signature check uses too.
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
#include "ddp_hash.h"
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
#include "ddp_xrank.h"
#include "ddp_sync_int.h"

/* ---- the cross-rank compare (runtime/coll/ddp_xrank.h, the one the
 * collective-signature check uses too): this rank's hashes h[0..n) as
 * round `round` of `check`, every rank reading every other rank's
 * (DDP_XR_ALL), waiting up to wait_s for each (0: only the ranks that
 * already posted theirs; of two ranks, at least one finds the other's).
 * The key of two rounds ago is dropped (every rank read it before posting
 * the last round's, which this rank read).  A store failure stops the
 * rank. */
static enum ddp_xr_result xcompare(enum ddp_xr_check check, uint64_t round, const uint64_t *h, size_t n,
				   double wait_s, struct ddp_xr_diff *d)
{
	const struct ddp_xrank x = { ddp_job_store(), sync_st.my_rank, sync_st.my_world };
	uint64_t *prev = sync_st.xr_prev[check];
	char msg[300];
	if (!x.store)
		sync_die("libddp: cross-rank check: no store connection");
	enum ddp_xr_result r = ddp_xrank_compare(&x, check, 0, round, h, n * sizeof *h, DDP_XR_ALL, wait_s,
						 prev[1] ? prev[1] : DDP_XR_NOROUND, d);
	if (r == DDP_XR_ERROR) {
		snprintf(msg, sizeof msg, "libddp: cross-rank check (%s, round %" PRIu64 "): the store failed: %s",
			 ddp_xr_check_name(check), round,
			 d->rc == DDP_ERR_NOMEM ? "out of memory" : ddp_store_last_error(x.store));
		sync_die(msg);
	}
	prev[1] = prev[0];
	prev[0] = round;
	return r;
}

/* The index of the first differing hash. */
static size_t xr_index(const struct ddp_xr_diff *d)
{
	return d->at / sizeof(uint64_t);
}

/* 64-bit hash of bytes, eight at a time (FNV-style on words, then a final
 * mix): fast enough for gigabytes, the same on every rank. */
uint64_t sync_hash_bytes(uint64_t h, const unsigned char *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * DDP_FNV1A_PRIME;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * DDP_FNV1A_PRIME;
	return h ^ (h >> 32);
}

/* Hashes of every parameter and optimizer-state range (ddp_grad_is_state), in
 * the tracker's order, after the context is idle: *out (malloc'd, with the
 * ranges in *bufs) and its length; *bytes: the bytes hashed.  A range the
 * program freed is forgotten. */
static size_t hash_params(uint64_t step, void *stream, uint64_t **out, const struct ddp_grad_buf ***bufs,
			  const char *who, uint64_t *bytes)
{
	size_t nb = ddp_grad_nbufs(sync_st.tracker), np = 0;
	uint64_t *h = calloc(nb ? nb : 1, sizeof *h);
	const struct ddp_grad_buf **pb = calloc(nb ? nb : 1, sizeof *pb);
	void *host = NULL;
	size_t hostcap = 0;
	char msg[200];

	*bytes = 0;
	if (!h || !pb) {
		snprintf(msg, sizeof msg, "libddp: %s: out of memory", who);
		sync_die(msg);
	}
	if (sync_st.real_ctx_sync && sync_st.real_ctx_sync() != CUDA_SUCCESS) {
		snprintf(msg, sizeof msg, "libddp: %s: cuCtxSynchronize failed before hashing the parameters", who);
		sync_die(msg);
	}
	for (size_t i = 0; i < nb; i++) {
		struct ddp_grad_buf *b = ddp_grad_buf_at(sync_st.tracker, i);
		if (b->role != DDP_GR_PARAM)
			continue;
		if (!sync_op_alive(NULL, b)) {
			/* freed by the program (on every rank alike): not a parameter any more */
			ddp_grad_forget(sync_st.tracker, b->alloc_base);
			continue;
		}
		if (!ddp_grad_is_state(sync_st.tracker, b, step))
			continue;
		if (b->size > hostcap) {
			free(host);
			hostcap = b->size;
			if (!(host = malloc(hostcap))) {
				snprintf(msg, sizeof msg, "libddp: %s: out of memory", who);
				sync_die(msg);
			}
		}
		if (sync_op_read(NULL, b->base, host, b->size, stream) != DDP_OK) {
			snprintf(msg, sizeof msg, "libddp: %s: cannot copy a parameter buffer to the host", who);
			sync_die(msg);
		}
		pb[np] = b;
		h[np++] = sync_hash_bytes(DDP_FNV1A_INIT, host, b->size);
		*bytes += b->size;
	}
	/* loop-carried state the update wrote that no rule named: in full too */
	const struct ddp_grad_buf *u;
	int named;
	for (size_t i = 0; (u = ddp_grad_update_written(sync_st.tracker, i, &named)); i++) {
		struct ddp_alloc_ent e;
		if (named || !ddp_alloc_find(u->base, &e) || e.id != u->alloc_id)
			continue; /* compared as its record, or freed */
		const struct ddp_grad_buf **npb = realloc(pb, (np + 1) * sizeof *npb);
		uint64_t *nh = npb ? realloc(h, (np + 1) * sizeof *nh) : NULL;
		if (npb)
			pb = npb;
		if (nh)
			h = nh;
		if (nh && u->size > hostcap) {
			free(host);
			hostcap = u->size;
			host = malloc(hostcap);
		}
		if (!nh || !host || sync_op_read(NULL, u->base, host, u->size, stream) != DDP_OK) {
			snprintf(msg, sizeof msg, "libddp: %s: cannot copy an update-written range to the host", who);
			sync_die(msg);
		}
		pb[np] = u;
		h[np++] = sync_hash_bytes(DDP_FNV1A_INIT, host, u->size);
		*bytes += u->size;
	}
	free(host);
	*out = h;
	*bufs = pb;
	return np;
}

/* DDP_DEBUG_PERTURB_RANK=R with DDP_DEBUG_PERTURB_STEP=S (the negative
 * control of the full compare): rank R changes one byte of its last
 * parameter or state range (a bit of its third byte) at the end of step S, after its update and
 * before that step's checks (S = 0: after the last step, just before the
 * final compare). */
static void perturb(uint64_t step)
{
	long rank = ddp_param_debug_perturb_rank();
	const struct ddp_grad_buf *b = NULL;
	unsigned char byte;
	if (rank != sync_st.my_rank || (uint64_t)ddp_param_debug_perturb_step() != step)
		return;
	if (sync_st.real_ctx_sync)
		sync_st.real_ctx_sync();
	for (size_t i = 0, n = ddp_grad_nbufs(sync_st.tracker); i < n; i++) {
		const struct ddp_grad_buf *c = ddp_grad_buf_at(sync_st.tracker, i);
		if (ddp_grad_is_state(sync_st.tracker, c, step ? step : ddp_grad_steps(sync_st.tracker)) &&
		    sync_op_alive(NULL, c))
			b = c;
	}
	if (!b)
		return;
	/* the top mantissa bit of its first fp32 element (x1.5 or so): a
	 * change of the lowest bit can round away within a few steps (momentum
	 * decays it below a parameter's last bit) and the ranks agree again */
	uint64_t at = b->base + (b->size >= 4 ? 2 : 0);
	if (sync_op_read(NULL, at, &byte, 1, NULL) == DDP_OK) {
		byte ^= 0x40;
		if (sync_op_write(NULL, at, &byte, 1, NULL) == DDP_OK && sync_st.real_ctx_sync)
			sync_st.real_ctx_sync();
	}
	if (step)
		DDP_WARN("DDP_DEBUG_PERTURB_RANK=%ld: rank %d changed one byte of %s at the end of step %" PRIu64
			 " (a debug setting: the next checked step must stop the job)",
			 rank, sync_st.my_rank, b->label, step);
	else
		DDP_WARN("DDP_DEBUG_PERTURB_RANK=%ld: rank %d changed one byte of %s after the last step (a debug "
			 "setting: the final check must fail)",
			 rank, sync_st.my_rank, b->label);
}

/* The parameter check: at the invariant's checked steps (step_checked)
 * and every --check N steps, once the update phase has ended, every
 * parameter and optimizer-state range is hashed in full and compared
 * across ranks.  Every stream of the context is drained first: the
 * optimizer may have run on another stream than the launch that ends the
 * step, and a hash taken while it still runs would differ between ranks by
 * timing alone. */
static void check_hashes(uint64_t step, void *stream)
{
	const char *who = sync_st.check_every > 0 && step % (uint64_t)sync_st.check_every == 0 ? "--check" : "parameter check";
	const struct ddp_grad_buf **pb;
	uint64_t *h, bytes, t0 = ddp_now_ns();
	char msg[800];
	size_t np = hash_params(step, stream, &h, &pb, who, &bytes);
	uint64_t t1 = ddp_now_ns();
	struct ddp_xr_diff d;

	switch (xcompare(DDP_XR_PARAMS, step, h, np, (double)ddp_param_coll_timeout(), &d)) {
	case DDP_XR_MISSING:
		snprintf(msg, sizeof msg,
			 "libddp: %s at step %" PRIu64 ": rank %d never posted its parameter hashes (%s)", who, step,
			 d.rank[1], ddp_strerror(d.rc));
		sync_die(msg);
	case DDP_XR_DIFF:
		if (d.len[0] != d.len[1]) {
			snprintf(msg, sizeof msg,
				 "libddp: %s at step %" PRIu64 ": rank %d has %zu parameter buffers, rank %d has %zu: "
				 "the ranks run different programs",
				 who, step, d.rank[1], d.len[1] / sizeof *h, sync_st.my_rank, np);
			sync_die(msg);
		}
		size_t i = xr_index(&d);
		uint64_t theirs;
		memcpy(&theirs, (const char *)d.val[1] + i * sizeof theirs, sizeof theirs);
		snprintf(msg, sizeof msg,
			 "libddp: %s: parameters diverged at step %" PRIu64 ": buffer %s (parameter or optimizer "
			 "state, %" PRIu64 " bytes at +%" PRIu64 " of allocation #%u) differs between rank %d (hash "
			 "%016" PRIx64 ") and rank %d (hash %016" PRIx64 ")",
			 who, step, pb[i]->label, pb[i]->size, pb[i]->base - pb[i]->alloc_base, pb[i]->alloc_id,
			 sync_st.my_rank, h[i], d.rank[1], theirs);
		sync_die(msg);
	case DDP_XR_SAME:
	case DDP_XR_ERROR: /* (xcompare stops the rank) */
		break;
	}
	ddp_xr_diff_free(&d);
	uint64_t ns = ddp_now_ns() - t0;
	sync_st.stats.hash_checks++;
	sync_st.stats.hash_ns += ns;
	DDP_INFO(GRAD,
		 "%s at step %" PRIu64 ": %zu parameter buffers identical on all %d ranks (every parameter and "
		 "optimizer-state range in full: %" PRIu64 " bytes hashed in %.1f ms, exchange %.1f ms)",
		 who, step, np, sync_st.my_world, bytes, (double)(t1 - t0) / 1e6, (double)(ns - (t1 - t0)) / 1e6);
	free(h);
	free(pb);
}

/* The final compare: every parameter and optimizer-state range compared
 * with the ranks that already posted theirs (the last rank to arrive sees
 * them all; none waits for a rank that is still running or gone), once:
 * before the program frees the first of them (ddp_sync_freeing), else at
 * exit while the context lives.  1 on a difference (one line, the exit is
 * non-zero), else 0. */

int sync_final_compare(uint64_t steps, char *msg, size_t cap)
{
	sync_st.final_done = 1;
	const struct ddp_grad_buf **pb;
	uint64_t *h, bytes, t0 = ddp_now_ns();
	perturb(0);
	size_t np = hash_params(steps, NULL, &h, &pb, "the final check", &bytes);
	struct ddp_xr_diff d;
	int failed = 0;

	uint64_t *hv = malloc((np + 1) * sizeof *hv);
	if (!hv)
		sync_die("libddp: the final check: out of memory");
	hv[0] = steps; /* the same steps first */
	memcpy(hv + 1, h, np * sizeof *h);
	switch (xcompare(DDP_XR_FINAL, 0, hv, np + 1, 0, &d)) {
	case DDP_XR_DIFF:
		if (d.len[0] != d.len[1]) {
			snprintf(msg, cap,
				 "libddp: at the end of training rank %d holds %zu parameter and state ranges and "
				 "rank %d holds %zu: the ranks did not train one model",
				 d.rank[1], d.len[1] / sizeof *hv ? d.len[1] / sizeof *hv - 1 : 0, sync_st.my_rank, np);
		} else if (xr_index(&d) == 0) {
			uint64_t theirs;
			memcpy(&theirs, d.val[1], sizeof theirs);
			snprintf(msg, cap,
				 "libddp: at the end of training rank %d counted %" PRIu64 " steps and rank %d "
				 "counted %" PRIu64 ": the ranks did not train one model",
				 d.rank[1], theirs, sync_st.my_rank, steps);
		} else {
			const struct ddp_grad_buf *b = pb[xr_index(&d) - 1];
			snprintf(msg, cap,
				 "libddp: the ranks diverged: at the end of training, after step %" PRIu64
				 ", %s (parameter or optimizer state, %" PRIu64 " bytes at +%" PRIu64
				 " of allocation #%u) differs between rank %d and rank %d",
				 steps, b->label, b->size, b->base - b->alloc_base, b->alloc_id, sync_st.my_rank,
				 d.rank[1]);
		}
		failed = 1;
		break;
	case DDP_XR_MISSING:
	case DDP_XR_SAME:
	case DDP_XR_ERROR:
		DDP_INFO(GRAD, "final check after step %" PRIu64 ": %zu parameter and state ranges identical on this "
			       "rank and the %zu ranks that got there before it",
			 steps, np, d.compared);
		break;
	}
	ddp_xr_diff_free(&d);
	sync_st.stats.hash_checks++;
	sync_st.stats.hash_ns += ddp_now_ns() - t0;
	sync_st.final_differs = failed;
	free(hv);
	free(h);
	free(pb);
	return failed;
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
	return sync_st.check_inv && ((step >= 1 && step <= 3) ||
			     (sync_st.check_every > 0 && step % (uint64_t)sync_st.check_every == 0) || (step >= 10 && p == 1));
}

static struct inv_item *inv_add(void)
{
	struct inv_item *p = ddp_array_grow(sync_st.inv, &sync_st.invcap, sync_st.ninv + 1, sizeof *p, 64);
	if (!p)
		sync_die("libddp: out of memory (invariant check)");
	sync_st.inv = p;
	struct inv_item *it = &sync_st.inv[sync_st.ninv++];
	memset(it, 0, sizeof *it);
	return it;
}

#define INV_GAP (64u << 10) /* ranges this close are copied to the host in one go */

static int cmp_read(const void *a, const void *b)
{
	uint64_t x = sync_st.sort_reads[*(const size_t *)a].ptr, y = sync_st.sort_reads[*(const size_t *)b].ptr;
	return (x > y) - (x < y);
}

/* A scalar argument as it is: its type and this rank's value. */
static void scalar_text(const struct ddp_kparam_desc *d, const void *v, char *out, size_t cap)
{
	union {
		float f;
		double g;
		int32_t i;
		uint32_t u;
		int64_t l;
		uint64_t q;
	} x = { 0 };
	memcpy(&x, v, d->size < sizeof x ? d->size : sizeof x);
	if (d->dtype == DDP_DT_F32 && d->size == 4)
		snprintf(out, cap, "float %.9g", (double)x.f);
	else if (d->dtype == DDP_DT_F64 && d->size == 8)
		snprintf(out, cap, "double %.17g", x.g);
	else if (d->dtype == DDP_DT_I32 && d->size == 4)
		snprintf(out, cap, "int %" PRId32, x.i);
	else if (d->dtype == DDP_DT_U32 && d->size == 4)
		snprintf(out, cap, "unsigned %" PRIu32, x.u);
	else if (d->dtype == DDP_DT_I64 && d->size == 8)
		snprintf(out, cap, "int64 %" PRId64, x.l);
	else if (d->dtype == DDP_DT_U64 && d->size == 8)
		snprintf(out, cap, "uint64 %" PRIu64, x.q);
	else
		snprintf(out, cap, "%u bytes", d->size);
}

static void inv_compare(uint64_t step);

/* Whether launch L's first range was hashed in this step by a launch of
 * the same kernel (the launch repeats: a step ended). */
static int inv_repeats(const struct ddp_grad_launch *L, const struct ddp_grad_read *r, size_t n)
{
	struct ddp_alloc_ent e;
	if (!n || !ddp_alloc_find(r[0].ptr, &e))
		return 0;
	for (size_t i = 0; i < sync_st.ninv; i++) {
		const struct inv_item *it = &sync_st.inv[i];
		if (it->kid == L->kid && it->word == r[0].word && it->param == r[0].param && it->alloc_id == e.id &&
		    it->off == r[0].ptr - e.base && it->bytes == r[0].bytes)
			return 1;
	}
	return 0;
}

void sync_inv_pending(void)
{
	if (__atomic_load_n(&sync_st.inv_pending, __ATOMIC_RELAXED) && sync_st.ninv && sync_st.inv_step &&
	    pthread_equal(pthread_self(), sync_st.inv_thread))
		inv_compare(sync_st.inv_step);
}

ddp_result sync_op_opt_reads(void *ctx, const struct ddp_grad_launch *L, uint64_t step,
			       const struct ddp_grad_read *r, size_t n)
{
	static unsigned char *host;
	static size_t hostcap, *ord, ordcap;
	uint64_t t0 = ddp_now_ns();
	(void)ctx;
	if (sync_st.dry || !step_checked(step) || sync_st.inv_done == step)
		return DDP_OK;
	if (sync_st.inv_step != step) {
		sync_st.ninv = 0;
		sync_st.inv_step = step;
	} else if (inv_repeats(L, r, n)) {
		/* a launch hashed in this step comes again: the step ended
		 * where the tracker saw no end (an update phase of optimizer
		 * launches only, which may last the whole run): compare now,
		 * before it runs */
		inv_compare(step);
		return DDP_OK;
	}
	/* one item per range, in the launch's order (the ranks compare them
	 * item by item) */
	size_t first = sync_st.ninv;
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
		it->role = r[i].role;
		it->kid = L->kid;
		snprintf(it->kname, sizeof it->kname, "%s", L->kname ? L->kname : "?");
		snprintf(it->label, sizeof it->label, "%s%s%s", r[i].label ? r[i].label : "",
			 r[i].label ? ", " : "",
			 r[i].role == DDP_GR_NONE ? "read by the optimizer"
						  : ddp_grad_role_name((enum ddp_grad_role)r[i].role));
		sync_st.stats.inv_bytes += r[i].bytes;
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
	sync_st.sort_reads = r;
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
			sync_st.inv[first + ord[a]].hash = sync_hash_bytes(DDP_FNV1A_INIT,
							      host + (r[ord[a]].ptr - lo), r[ord[a]].bytes);
	}
	/* the scalar arguments (learning rate, clip scale, step, a mean of
	 * the data), one item each, with this rank's value: typed scalars
	 * only (an untyped 8-byte value may be an address, which differs
	 * between ranks) */
	if (sync_st.cur_k && sync_st.cur_k->types_known && sync_st.cur_call) {
		struct ddp_launch_params p = { sync_st.cur_call->params, sync_st.cur_call->extra };
		for (uint32_t i = 0; i < sync_st.cur_k->nparams; i++) {
			const struct ddp_kparam_desc *d = &sync_st.cur_k->params[i];
			const void *v;
			if (d->ptype != DDP_PT_SCALAR || !(v = ddp_launch_param_ptr(sync_st.cur_k, &p, i)))
				continue;
			struct inv_item *it = inv_add();
			it->hash = sync_hash_bytes(DDP_FNV1A_INIT, v, d->size);
			it->word = 0xffff;
			it->param = (uint16_t)i;
			it->kid = L->kid;
			snprintf(it->kname, sizeof it->kname, "%s", L->kname ? L->kname : "?");
			scalar_text(d, v, it->label, sizeof it->label);
		}
	}
	sync_st.inv_thread = pthread_self();
	__atomic_store_n(&sync_st.inv_pending, sync_st.ninv > 0, __ATOMIC_RELAXED);
	sync_st.stats.inv_ns += ddp_now_ns() - t0;
	return DDP_OK;
}

/* At the end of a checked step: compare sync_st.inv[] with every other rank's. */
static void inv_compare(uint64_t step)
{
	uint64_t t0 = ddp_now_ns(), bytes = 0;
	char msg[900];

	if (sync_st.dry || sync_st.inv_step != step || !step_checked(step) || sync_st.inv_done == step)
		return;
	sync_st.inv_done = step; /* once per step: at its end, a repeated launch or a file open */
	__atomic_store_n(&sync_st.inv_pending, 0, __ATOMIC_RELAXED);
	uint64_t *h = calloc(sync_st.ninv ? sync_st.ninv : 1, sizeof *h);
	if (!h)
		sync_die("libddp: out of memory (invariant check)");
	for (size_t i = 0; i < sync_st.ninv; i++) {
		h[i] = sync_st.inv[i].hash;
		bytes += sync_st.inv[i].bytes;
	}
	ddp_status_coll_begin("invariant hash exchange");
	struct ddp_xr_diff d;
	enum ddp_xr_result xr = xcompare(DDP_XR_INV, step, h, sync_st.ninv, (double)ddp_param_coll_timeout(), &d);
	if (xr == DDP_XR_MISSING) {
		snprintf(msg, sizeof msg,
			 "libddp: invariant check at step %" PRIu64 ": rank %d never posted its hashes (%s)", step,
			 d.rank[1], ddp_strerror(d.rc));
		sync_die(msg);
	}
	if (xr == DDP_XR_DIFF && d.len[0] != d.len[1]) {
		snprintf(msg, sizeof msg,
			 "libddp: invariant check at step %" PRIu64 ": the optimizer read %zu ranges on rank %d and "
			 "%zu on rank %d: the ranks run different programs",
			 step, d.len[1] / sizeof *h, d.rank[1], sync_st.ninv, sync_st.my_rank);
		sync_die(msg);
	}
	if (xr == DDP_XR_DIFF) {
		const struct inv_item *it = &sync_st.inv[xr_index(&d)];
		int r = d.rank[1];
		if (it->word == 0xffff)
			snprintf(msg, sizeof msg,
				 "libddp: a value each rank computed on its own reached the update at step %" PRIu64
				 ": scalar argument %u of kernel %s (%s on rank %d) differs between rank %d and rank "
				 "%d (every value the update reads must be identical on all ranks: a per-rank "
				 "statistic of the data, such as a mean or a count, or a norm of unaveraged "
				 "gradients is not; see docs/gradient-sync.md)",
				 step, it->param, it->kname, it->label, sync_st.my_rank, sync_st.my_rank, r);
		else
			snprintf(msg, sizeof msg,
				 "libddp: %s at step %" PRIu64 ": kernel %s argument %u%s%.0u (%s; %" PRIu64
				 " bytes at +%" PRIu64 " of allocation #%u) differs between rank %d and rank %d "
				 "(every byte the optimizer reads must be identical on all ranks; see "
				 "docs/gradient-sync.md)",
				 it->role == DDP_GR_GRAD ? "an unaveraged gradient reached the optimizer"
				 : it->role == DDP_GR_PARAM
					 ? "a parameter or optimizer state differs between the ranks before the update"
					 : "the update reads a range that is no parameter, state or gradient libddp "
					   "found (a tensor it missed, or a temporary of each rank)",
				 step, it->kname, it->param, it->word ? "." : "", it->word, it->label, it->bytes,
				 it->off, it->alloc_id, sync_st.my_rank, r);
		sync_die(msg);
	}
	ddp_xr_diff_free(&d);
	ddp_status_coll_leave();
	sync_st.stats.inv_checks++;
	sync_st.stats.inv_ns += ddp_now_ns() - t0;
	DDP_INFO(GRAD,
		 "invariant check at step %" PRIu64 ": the %zu ranges the optimizer read (%" PRIu64
		 " bytes hashed) are identical on all %d ranks",
		 step, sync_st.ninv, bytes, sync_st.my_world);
	free(h);
	sync_st.ninv = 0;
}

ddp_result sync_op_step_begin(void *ctx, uint64_t step)
{
	(void)ctx;
	sync_st.cur_step = step;
	sync_st.phase_open = 1;
	uint64_t now = ddp_now_ns();
	if (!sync_st.stats.step_first_ns)
		sync_st.stats.step_first_ns = now;
	ddp_status_step(step);
	ddp_job_progress();
	DDP_DEBUG(GRAD, "step %" PRIu64 ": update phase begins", step);
	return DDP_OK;
}

ddp_result sync_op_step_end(void *ctx, uint64_t step)
{
	(void)ctx;
	sync_st.phase_open = 0;
	ddp_status_step_end(); /* what is numbered next belongs to the next step */
	ddp_overlap_step_base(sync_st.launch_seq);
	inv_compare(step);
	if (!sync_st.dry && !sync_st.at_exit)
		sync_input_step_end(step); /* do the ranks read different input? */
	if (!sync_st.dry && !sync_st.at_exit)
		perturb(step);
	/* the parameter check: every parameter and state range in full at the
	 * invariant's checked steps and every --check N steps, now that the
	 * update phase has ended (a step that ends at exit: the final compare
	 * covers it).  Inside the step's span: its waits are this step's. */
	if (((sync_st.check_every > 0 && step % (uint64_t)sync_st.check_every == 0) || step_checked(step)) &&
	    !sync_st.dry && !sync_st.at_exit) {
		ddp_status_coll_begin("parameter hash exchange");
		check_hashes(step, sync_st.check_stream);
		ddp_status_coll_leave();
	}
	uint64_t now = ddp_now_ns();
	if (ddp_trace_enabled()) {
		struct ddp_trace_ev ev = {
			.name = "optimizer step",
			.cat = "step",
			.ts_ns = sync_st.stats.step_last_ns ? sync_st.stats.step_last_ns : sync_st.stats.step_first_ns,
			.step = step,
		};
		ev.dur_ns = now - ev.ts_ns;
		ddp_trace_event(&ev);
	}
	sync_st.stats.step_last_ns = now;
	/* the allocation table's per-step counters: log them, start the next step */
	struct ddp_alloc_stats as;
	ddp_alloc_stats(&as);
	DDP_DEBUG(GRAD,
		  "step %" PRIu64 " ends: %" PRIu64 " allocations (%" PRIu64 " bytes), %" PRIu64
		  " frees (%" PRIu64 " bytes), %" PRIu64 " live (%" PRIu64 " bytes)",
		  step, as.step_allocs, as.step_bytes_alloc, as.step_frees, as.step_bytes_freed,
		  as.live_count, as.live_bytes);
	ddp_alloc_step_reset();
	return DDP_OK;
}
