/* SPDX-License-Identifier: MIT
 *
 * ddp_sync.c - gradient synchronisation glue (see ddp_sync.h).
 *
 * Per launch (sync on): classify the kernel once by name (optimizer /
 * gradient reader / other; DDP_OPT_KERNELS, DDP_GRAD_READER_KERNELS; cached
 * on the kernel record), decode its arguments against the allocation table
 * (ddp_launch.h), hand them to the tracker (ddp_grad.h), and carry out what
 * it asks: allreduce-average of gradients, broadcast of parameters from rank
 * 0, synchronous copies and a relaunch for calibration, and at step ends the
 * `--check N` hash comparison.  "Other" kernels are not even decoded until a
 * gradient is known.
 *
 * Before a collective whose composition (kind, buffers, counts, dtypes) was
 * never issued, the ranks compare its signature through the store
 * (ddp_check_signature): a program that diverges between ranks stops with a
 * message instead of hanging or corrupting.  Every error on this path is
 * fatal: one `libddp:` line, then _exit(1), and ddprun stops the job.
 *
 * Reductions (DDP_OVERLAP=on, the default): the tracker hands the ranges to
 * reduce to op_reduce, and the overlap layer (ddp_overlap.c) reduces them
 * stream-ordered, in buckets, early where the previous step showed their
 * last writer; DDP_OVERLAP=off keeps the synchronous collectives of
 * run_collective for gradients too.
 *
 * The cheap path (steady state, ddp_grad_steady): a non-optimizer,
 * non-reader launch is checked without the lock and without decoding: the
 * kernel's cached list of the 8-byte words that may hold a pointer
 * (built once, like the decoder's scan) is read from the launch's
 * arguments and each value looked up in an immutable, published snapshot
 * of the gradients' allocations (hot.snap, rebuilt under the lock when the
 * set of gradients changes).
 * No value inside a gradient allocation: the launch can neither
 * write a gradient nor touch an early reduction in flight (those ranges lie
 * inside gradient allocations), so the tracker would do nothing; it goes
 * to the driver.  Else, and outside the steady state, the slow path.
 * Launch positions (ddp_overlap.c) count slow-path launches only, the same
 * ones every step.
 *
 * Contract: sync_lock serialises everything below the launch hooks but the
 * cheap path (atomic loads of hot.ok, hot.snap and the kernel's scan list;
 * snapshots are never freed before exit); the
 * library's own driver calls go straight to the real driver (the port's
 * ddp_driver_, ddp_port.h) and ddp_port_own_begin/end bracket them (NCCL's
 * own driver calls then stay untracked).
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

int ddp_sync_on_;

/* Kernel classes cached in ddp_kfunc.sync_class: 0 = not yet, else 1 + class. */

struct sync_stats {
	uint64_t allreduce_calls, allreduce_bytes, allreduce_ns;
	uint64_t bcast_calls, bcast_bytes, bcast_ns;
	uint64_t sig_checks, hash_checks, calibrations;
	uint64_t inv_checks, inv_bytes, inv_ns; /* the invariant check    */
	uint64_t step_first_ns, step_last_ns;
	uint64_t launches;    /* seen with sync on      */
	uint64_t *step_bytes; /* bytes averaged, by step */
	size_t nstep_bytes;
};

/* One range the optimizer read at a checked step (the invariant check). */
struct inv_item {
	uint64_t hash, bytes, off;
	uint32_t alloc_id;
	uint16_t param, word; /* word 0xffff: the launch's scalar arguments */
	char kname[48];
	char label[112];
};

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ddp_grad *tracker;
static struct sync_stats stats;
static const char *opt_setting, *reader_setting;
static long check_every;
static int my_rank, my_world;
static uint64_t cur_step;
static int phase_open;     /* between step_begin and step_end     */
static int dry;            /* ddprun inspect: no collectives      */
static int at_exit;        /* ddp_sync_exit is ending the run     */
static int check_inv;      /* DDP_CHECK_INVARIANT                 */
static long skip_avg = -1; /* DDP_DEBUG_SKIP_AVG                  */
static int no_measure;     /* DDP_DEBUG_NO_MEASURE                */
static long opt_wait_s;    /* DDP_OPT_WAIT                        */
static int opt_seen;       /* an optimizer kernel was launched    */
static int torch_seen;     /* a PyTorch kernel was decoded        */
static uint64_t first_launch_ns;
static struct ddp_kfunc *cur_k; /* the launch being processed          */
static const struct ddp_launch_call *cur_call;
static struct inv_item *inv;
static size_t ninv, invcap;
static uint64_t inv_step; /* the step inv[] belongs to           */
static uint64_t *sigs_seen;
static size_t nsigs, sigcap;
static uint64_t launch_seq; /* launches handed to the tracker      */
/* the cheap path */
struct gsnap {
	size_t n;
	struct gsnap *older; /* snapshots replaced (freed at exit)  */
	struct {
		uint64_t lo, hi;
	} iv[]; /* gradient allocations, sorted, merged */
};
/* read by every launch, written rarely: a cache line of their own */
static struct {
	struct gsnap *snap; /* published (atomic), immutable       */
	int ok;             /* steady state (atomic)               */
	char pad[64 - sizeof(void *) - sizeof(int)];
} hot __attribute__((aligned(64)));
static struct {
	uint64_t n; /* cheap-path launches (approximate)   */
	char pad[56];
} fastcount __attribute__((aligned(64)));

#define FAST_TICK 64 /* cheap launches per progress mark    */
/* initial-exec: a plain %fs-relative access, no __tls_get_addr call per launch */
static __thread uint32_t fast_tick __attribute__((tls_model("initial-exec")));

/* Every FAST_TICK cheap launches of a thread: training progress (ddprun's
 * --timeout and status board) and the count of cheap launches (summary). */
static void fast_progress(void) __attribute__((noinline, cold));
static void fast_progress(void)
{
	ddp_job_progress();
	__atomic_fetch_add(&fastcount.n, FAST_TICK, __ATOMIC_RELAXED);
}
static struct ddp_launch launch_buf;
static struct ddp_grad_arg args_buf[DDP_LAUNCH_MAX_ARGS];
static struct ddp_xargs xargs; /* explicit launches' tensors (grows)  */
static CUresult (*real_sync)(CUstream);
static CUresult (*real_ctx_sync)(void);

/* ---- fatal path */

static void die(const char *msg) __attribute__((noreturn));
static void die(const char *msg)
{
	DDP_ERROR("%s", msg);
	DDP_ERROR("libddp: rank %d stops (gradient synchronisation cannot continue safely)", my_rank);
	fflush(stdout);
	_exit(1);
}

static ddp_result coll_fail(ddp_result rc, const char *what)
{
	struct ddp_comm *c = NULL;
	char msg[600];
	const char *detail = "";
	if (ddp_job_comm(&c) == DDP_OK && c)
		detail = ddp_coll_last_error(c);
	else
		detail = ddp_job_comm_error();
	snprintf(msg, sizeof msg, "libddp: %s failed at step %" PRIu64 ": %s%s", what, cur_step,
		 detail && *detail ? detail : ddp_strerror(rc),
		 rc == DDP_ERR_TIMEOUT ? " (DDP_COLL_TIMEOUT)" : "");
	die(msg);
}

/* ---- helpers */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static CUstream the_stream(void *s)
{
	return (CUstream)s;
}

static void trace_coll(const char *name, uint64_t t0, uint64_t bytes, const char *what)
{
	if (!ddp_trace_enabled())
		return;
	struct ddp_trace_ev ev = {
		.name = name,
		.cat = "coll",
		.kernel = ddp_trace_intern(what),
		.ts_ns = t0,
		.dur_ns = ddp_now_ns() - t0,
		.bytes = bytes,
		.step = cur_step,
	};
	ddp_trace_event(&ev);
}

/* Checks the signature of a collective composition the first time.  h is
 * the hash of the whole composition (ddp_grad_signature): every rank keeps
 * the same cache, so every rank checks the same compositions. */
static void check_sig(struct ddp_comm *c, const char *kind, const char *sig, uint64_t h)
{
	h = fnv1a(h, kind, strlen(kind));
	for (size_t i = 0; i < nsigs; i++)
		if (sigs_seen[i] == h)
			return;
	ddp_result rc = ddp_check_signature(c, kind, sig);
	if (rc != DDP_OK)
		coll_fail(rc, "collective signature check");
	stats.sig_checks++;
	if (nsigs == sigcap) {
		size_t nc = sigcap ? sigcap * 2 : 64;
		uint64_t *p = realloc(sigs_seen, nc * sizeof *p);
		if (!p) /* forgetting it here alone would make this rank check again, alone */
			die("libddp: out of memory (collective signature cache)");
		sigs_seen = p;
		sigcap = nc;
	}
	sigs_seen[nsigs++] = h;
}

/* ---- tracker callbacks */

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
static void account_step_bytes(uint64_t st, uint64_t bytes)
{
	if (st > stats.nstep_bytes) {
		size_t nn = stats.nstep_bytes ? stats.nstep_bytes : 64;
		while (nn < st)
			nn *= 2;
		uint64_t *p = realloc(stats.step_bytes, nn * sizeof *p);
		if (p) {
			memset(p + stats.nstep_bytes, 0, (nn - stats.nstep_bytes) * sizeof *p);
			stats.step_bytes = p;
			stats.nstep_bytes = nn;
		}
	}
	if (st && st <= stats.nstep_bytes)
		stats.step_bytes[st - 1] += bytes;
}

/* The step the gradients being reduced now belong to. */
static uint64_t reduce_step(void)
{
	return phase_open ? cur_step : cur_step + 1;
}

#define GROUP_MAX 256 /* ncclAllReduce calls in one NCCL group */

/* bufs[0..n) averaged as NCCL groups: runs of one dtype, at most GROUP_MAX
 * each; *bytes and *colls (groups) are set. */
static ddp_result grouped_allreduce(struct ddp_comm *c, struct ddp_grad_buf *const *bufs, size_t n,
				    void *stream, uint64_t *bytes, size_t *colls)
{
	struct ddp_coll_seg seg[GROUP_MAX];
	*bytes = 0;
	*colls = 0;
	for (size_t i = 0; i < n;) {
		enum ddp_dtype dt = (enum ddp_dtype)bufs[i]->dtype;
		size_t m = 0;
		for (; i < n && m < GROUP_MAX && bufs[i]->dtype == dt; i++, m++) {
			seg[m].addr = bufs[i]->base;
			seg[m].bytes = bufs[i]->count * ddp_dtype_size(dt);
			*bytes += seg[m].bytes;
		}
		DDP_CHECK(ddp_allreduce_avg_segs(c, seg, m, dt, 1, the_stream(stream)));
		(*colls)++;
	}
	return DDP_OK;
}

static ddp_result run_collective(const struct coll_kind *k, struct ddp_grad_buf *const *bufs, size_t n,
				 void *stream)
{
	struct ddp_comm *c = NULL;
	static char sig[8192]; /* well below ddp_check_signature's 16 KiB */
	uint64_t bytes = 0, t0 = ddp_now_ns(), h;
	ddp_result rc;

	if (!dry) {
		ddp_status_coll_begin(k->name); /* ddprun sees who waits where */
		if ((rc = ddp_job_comm(&c)) != DDP_OK)
			coll_fail(rc, "creating the communicator");
		ddp_grad_signature(sig, sizeof sig, bufs, n, k->is_allreduce, &h);
		check_sig(c, k->name, sig, h);
	}
	size_t colls = n;
	if (k->is_allreduce && !dry && skip_avg < 0 && n > 1 && ddp_comm_backend(c) == DDP_COLL_NCCL) {
		/* NCCL: runs of one dtype as groups (one launch each, not one per
		 * tensor: PyTorch's caching allocator leaves gaps between its
		 * tensors, so they do not merge into spans) */
		rc = grouped_allreduce(c, bufs, n, stream, &bytes, &colls);
		if (rc != DDP_OK)
			coll_fail(rc, "grouped allreduce of gradients");
		for (size_t i = 0; i < n; i++)
			ddp_rangelog_add(reduce_step(), 'A', bufs[i]->base,
					 bufs[i]->count * ddp_dtype_size((enum ddp_dtype)bufs[i]->dtype));
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		void *base = (void *)(uintptr_t)bufs[i]->base;
		enum ddp_dtype dt = (enum ddp_dtype)bufs[i]->dtype;
		uint64_t b = k->is_allreduce ? bufs[i]->count * ddp_dtype_size(dt) : bufs[i]->size;
		if (k->is_allreduce && skip_avg >= 0 && (size_t)skip_avg == i) {
			/* DDP_DEBUG_SKIP_AVG: the negative control of the invariant check */
			DDP_WARN("DDP_DEBUG_SKIP_AVG=%ld: gradient %s is NOT averaged (debug setting)",
				 skip_avg, bufs[i]->label);
			continue;
		}
		if (dry) {
			bytes += b;
			continue;
		}
		rc = k->is_allreduce
			     ? ddp_allreduce_avg(c, base, (size_t)bufs[i]->count, dt, 1, the_stream(stream))
			     : ddp_broadcast(c, base, (size_t)bufs[i]->size, 0, 1, the_stream(stream));
		if (rc != DDP_OK) {
			char what[128];
			snprintf(what, sizeof what, "%s of %s %s", k->name, k->what, bufs[i]->label);
			coll_fail(rc, what);
		}
		ddp_rangelog_add(k->is_allreduce ? reduce_step() : (cur_step ? cur_step : 1),
				 k->is_allreduce ? 'A' : 'B', bufs[i]->base, b);
		bytes += b;
	}
done:
	if (!dry)
		ddp_status_coll_leave();
	uint64_t dt = ddp_now_ns() - t0;
	*k->calls += n;
	*k->bytes += bytes;
	if (k->is_allreduce) {
		account_step_bytes(reduce_step(), bytes);
		if (!dry)
			ddp_overlap_account_sync(reduce_step(), colls, dt);
	}
	*k->ns += dt;
	trace_coll(k->name, t0, bytes, n == 1 ? bufs[0]->label : NULL);
	DDP_INFO(COLL, "step %" PRIu64 ": %s of %zu %s buffer%s%s, %" PRIu64 " bytes, %.3f ms",
		 cur_step ? cur_step : 1, k->is_allreduce ? "allreduce-avg" : "broadcast", n, k->what,
		 n == 1 ? "" : "s", k->is_allreduce ? "" : " from rank 0", bytes, dt / 1e6);
	return DDP_OK;
}

static int overlap_mode; /* DDP_OVERLAP: 0 auto, 1 on, 2 off */

static ddp_result op_allreduce(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	static const struct coll_kind k = {
		"allreduce",        "gradient", 1, &stats.allreduce_calls, &stats.allreduce_bytes,
		&stats.allreduce_ns
	};
	(void)ctx;
	return run_collective(&k, bufs, n, stream);
}

/* DDP_OVERLAP=auto is the stream-ordered path with either backend, where
 * it can run (decided once, when the communicator exists): otherwise the
 * synchronous reductions, with one line saying why.  DDP_OVERLAP=on asks for
 * it regardless (it then fails at its first collective, naming the cause). */
static int op_reduce_on(void *ctx)
{
	static int decided;
	struct ddp_comm *c = NULL;
	char why[160];
	(void)ctx;
	if (!decided && overlap_mode == 0 && ddp_job_comm(&c) == DDP_OK && c) {
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
static ddp_result op_reduce(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	uint64_t colls = 0, bytes = 0, t0 = ddp_now_ns(), st = reduce_step();
	(void)ctx;
	ddp_status_coll_begin("allreduce"); /* ddprun sees who waits where */
	ddp_result rc = ddp_overlap_reduce(bufs, n, stream, st, &colls, &bytes);
	if (rc != DDP_OK)
		ddp_status_coll_failed(); /* the tracker stops the rank on it */
	ddp_status_coll_leave();
	stats.allreduce_calls += colls;
	stats.allreduce_bytes += bytes;
	stats.allreduce_ns += ddp_now_ns() - t0;
	account_step_bytes(st, bytes);
	DDP_INFO(COLL,
		 "step %" PRIu64 ": %zu gradient range%s at the consumer: %" PRIu64
		 " collective%s enqueued (%" PRIu64 " bytes), the others reduced early",
		 st, n, n == 1 ? "" : "s", colls, colls == 1 ? "" : "s", bytes);
	return rc;
}

static ddp_result op_broadcast(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	static const struct coll_kind k = { "broadcast",        "parameter/state",  0,
					    &stats.bcast_calls, &stats.bcast_bytes, &stats.bcast_ns };
	(void)ctx;
	return run_collective(&k, bufs, n, stream);
}

static ddp_result op_read(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream)
{
	(void)ctx;
	DDP_CUCHECK(ddp_driver_.memcpyDtoHAsync(host, (CUdeviceptr)dev, bytes, the_stream(stream)),
		    "cuMemcpyDtoHAsync (libddp)");
	return ddp_cu_result(real_sync(the_stream(stream)), "cuStreamSynchronize (libddp)");
}

static ddp_result op_write(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream)
{
	(void)ctx;
	DDP_CUCHECK(ddp_driver_.memcpyHtoDAsync((CUdeviceptr)dev, host, bytes, the_stream(stream)),
		    "cuMemcpyHtoDAsync (libddp)");
	return ddp_cu_result(real_sync(the_stream(stream)), "cuStreamSynchronize (libddp)");
}

static ddp_result op_copy(void *ctx, uint64_t dst, uint64_t src, uint64_t bytes, void *stream)
{
	(void)ctx;
	if (!ddp_driver_.memcpyDtoDAsync)
		return DDP_ERR_UNSUPPORTED;
	return ddp_cu_result(
		ddp_driver_.memcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, (size_t)bytes, the_stream(stream)),
		"cuMemcpyDtoDAsync (libddp)");
}

static void *check_stream; /* the current launch's stream (per-thread default resolved) */

static ddp_result op_relaunch(void *ctx, void *launch_ctx)
{
	const struct ddp_launch_call *c = launch_ctx;
	CUresult r;
	(void)ctx;
	stats.calibrations++;
	r = ddp_port_relaunch(c);
	DDP_CUCHECK(r, "calibration launch");
	return ddp_cu_result(real_sync(the_stream(check_stream)), "cuStreamSynchronize (libddp)");
}

/* Everything in flight, stream-ordered reductions included (a measurement
 * must see only its own launch's writes). */
static ddp_result op_drain(void *ctx)
{
	(void)ctx;
	if (real_ctx_sync && real_ctx_sync() != CUDA_SUCCESS)
		return DDP_ERR_CUDA;
	return DDP_OK;
}

/* Is b's allocation still the one the tracker learned?  (A freed buffer's
 * address may be free, or belong to another allocation by now.) */
static int op_alive(void *ctx, const struct ddp_grad_buf *b)
{
	struct ddp_alloc_ent e;
	(void)ctx;
	return ddp_alloc_find(b->alloc_base, &e) && e.base == b->alloc_base && e.id == b->alloc_id;
}

/* --check N: hash every parameter/state buffer and compare across ranks.
 * Every stream of the context is drained first: the optimizer may have run
 * on another stream than the launch that ends the step, and a hash taken
 * while it still runs would differ between ranks by timing alone. */
static ddp_result check_hashes(uint64_t step, void *stream)
{
	static uint64_t prev_step[2]; /* the last two checked steps (key clean-up) */
	struct ddp_store *st = ddp_job_store();
	size_t nb = ddp_grad_nbufs(tracker), np = 0;
	uint64_t *h = calloc(nb ? nb : 1, sizeof *h);
	const struct ddp_grad_buf **pb = calloc(nb ? nb : 1, sizeof *pb);
	void *host = NULL;
	size_t hostcap = 0;
	char key[96], msg[700];

	if (!h || !pb || !st)
		die("libddp: --check: out of memory or no store connection");
	if (real_ctx_sync && real_ctx_sync() != CUDA_SUCCESS)
		die("libddp: --check: cuCtxSynchronize failed before hashing the parameters");
	for (size_t i = 0; i < nb; i++) {
		struct ddp_grad_buf *b = ddp_grad_buf_at(tracker, i);
		if (b->role != DDP_GR_PARAM)
			continue;
		if (!op_alive(NULL, b)) {
			/* freed by the program (on every rank alike): not a parameter any more */
			ddp_grad_forget(tracker, b->alloc_base);
			continue;
		}
		if (b->size > hostcap) {
			free(host);
			hostcap = b->size;
			if (!(host = malloc(hostcap)))
				die("libddp: --check: out of memory");
		}
		if (op_read(NULL, b->base, host, b->size, stream) != DDP_OK)
			die("libddp: --check: cannot copy a parameter buffer to the host");
		pb[np] = b;
		h[np++] = fnv1a(0xcbf29ce484222325ULL, host, b->size);
	}
	free(host);
	snprintf(key, sizeof key, "ddp/check/%" PRIu64 "/%d", step, my_rank);
	if (ddp_store_set(st, key, h, np * sizeof *h) != DDP_OK)
		die("libddp: --check: cannot post the hashes to the store");
	for (int r = 0; r < my_world; r++) {
		void *val = NULL;
		size_t len = 0;
		if (r == my_rank)
			continue;
		snprintf(key, sizeof key, "ddp/check/%" PRIu64 "/%d", step, r);
		ddp_result rc = ddp_store_get(st, key, &val, &len, (double)ddp_param_coll_timeout());
		if (rc != DDP_OK) {
			snprintf(msg, sizeof msg,
				 "libddp: --check at step %" PRIu64 ": rank %d never posted its "
				 "parameter hashes (%s)",
				 step, r, ddp_strerror(rc));
			die(msg);
		}
		if (len != np * sizeof *h) {
			snprintf(msg, sizeof msg,
				 "libddp: --check at step %" PRIu64 ": rank %d has %zu parameter "
				 "buffers, rank %d has %zu: the ranks run different programs",
				 step, r, len / sizeof *h, my_rank, np);
			die(msg);
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
					 step, pb[i]->label, pb[i]->size, my_rank, h[i], r, other);
				die(msg);
			}
		}
		free(val);
	}
	/* every rank has read our hashes of two checks ago before posting the
	 * previous check's, which we read: drop them (the store keeps no history) */
	if (prev_step[1]) {
		snprintf(key, sizeof key, "ddp/check/%" PRIu64 "/%d", prev_step[1], my_rank);
		ddp_store_delete(st, key);
	}
	prev_step[1] = prev_step[0];
	prev_step[0] = step;
	stats.hash_checks++;
	DDP_INFO(GRAD, "--check at step %" PRIu64 ": %zu parameter buffers identical on all %d ranks", step,
		 np, my_world);
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
	return check_inv && ((step >= 1 && step <= 3) ||
			     (check_every > 0 && step % (uint64_t)check_every == 0) || (step >= 10 && p == 1));
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
			die("libddp: out of memory (invariant check)");
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

static ddp_result op_opt_reads(void *ctx, const struct ddp_grad_launch *L, uint64_t step,
			       const struct ddp_grad_read *r, size_t n)
{
	static unsigned char *host;
	static size_t hostcap, *ord, ordcap;
	uint64_t t0 = ddp_now_ns();
	(void)ctx;
	if (dry || !step_checked(step))
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
		stats.inv_bytes += r[i].bytes;
	}
	/* copied to the host by address: ranges a short gap apart in tracked
	 * memory in one copy (a PyTorch optimizer launch reads hundreds of
	 * small tensors of one segment) */
	size_t *o = ddp_array_grow(ord, &ordcap, n ? n : 1, sizeof *ord, 64);
	if (!o)
		die("libddp: out of memory (invariant check)");
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
				die("libddp: out of memory (invariant check)");
			}
		}
		if (op_read(NULL, lo, host, hi - lo, L->stream) != DDP_OK)
			die("libddp: invariant check: cannot copy a range the optimizer reads to the host");
		for (; a < b; a++)
			inv[first + ord[a]].hash = hash_bytes(0xcbf29ce484222325ULL,
							      host + (r[ord[a]].ptr - lo), r[ord[a]].bytes);
	}
	/* the scalar arguments (learning rate, clip scale, step): typed
	 * scalars only (an untyped 8-byte value may be an address, which
	 * differs between ranks) */
	if (cur_k && cur_k->types_known && cur_call) {
		struct ddp_launch_params p = { cur_call->params, cur_call->extra };
		uint64_t h = 0xcbf29ce484222325ULL;
		int any = 0;
		for (uint32_t i = 0; i < cur_k->nparams; i++) {
			if (cur_k->params[i].ptype != DDP_PT_SCALAR)
				continue;
			const void *v = ddp_launch_param_ptr(cur_k, &p, i);
			if (!v)
				continue;
			h = hash_bytes(h, v, cur_k->params[i].size);
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
	stats.inv_ns += ddp_now_ns() - t0;
	return DDP_OK;
}

/* At the end of a checked step: compare inv[] with every other rank's. */
static void inv_compare(uint64_t step)
{
	static uint64_t prev_step[2];
	struct ddp_store *st = ddp_job_store();
	uint64_t t0 = ddp_now_ns(), bytes = 0;
	char key[96], msg[900];

	if (dry || inv_step != step || !step_checked(step))
		return;
	if (!st)
		die("libddp: invariant check: no store connection");
	uint64_t *h = calloc(ninv ? ninv : 1, sizeof *h);
	if (!h)
		die("libddp: out of memory (invariant check)");
	for (size_t i = 0; i < ninv; i++) {
		h[i] = inv[i].hash;
		bytes += inv[i].bytes;
	}
	ddp_status_coll_begin("invariant hash exchange");
	snprintf(key, sizeof key, "ddp/inv/%" PRIu64 "/%d", step, my_rank);
	if (ddp_store_set(st, key, h, ninv * sizeof *h) != DDP_OK)
		die("libddp: invariant check: cannot post the hashes to the store");
	for (int r = 0; r < my_world; r++) {
		void *val = NULL;
		size_t len = 0;
		if (r == my_rank)
			continue;
		snprintf(key, sizeof key, "ddp/inv/%" PRIu64 "/%d", step, r);
		ddp_result rc = ddp_store_get(st, key, &val, &len, (double)ddp_param_coll_timeout());
		if (rc != DDP_OK) {
			snprintf(msg, sizeof msg,
				 "libddp: invariant check at step %" PRIu64 ": rank %d never posted "
				 "its hashes (%s)",
				 step, r, ddp_strerror(rc));
			die(msg);
		}
		if (len != ninv * sizeof *h) {
			snprintf(msg, sizeof msg,
				 "libddp: invariant check at step %" PRIu64 ": the optimizer read %zu "
				 "ranges on rank %d and %zu on rank %d: the ranks run different programs",
				 step, len / sizeof *h, r, ninv, my_rank);
			die(msg);
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
					 step, it->kname, my_rank, r);
			else
				snprintf(msg, sizeof msg,
					 "libddp: an unaveraged gradient reached the optimizer at step %" PRIu64
					 ": kernel %s argument %u%s%.0u (%s; %" PRIu64 " bytes at +%" PRIu64
					 " of allocation #%u) differs between rank %d and rank %d (every byte the "
					 "optimizer reads must be identical on all ranks; see docs/gradient-sync.md)",
					 step, it->kname, it->param, it->word ? "." : "", it->word, it->label,
					 it->bytes, it->off, it->alloc_id, my_rank, r);
			die(msg);
		}
		free(val);
	}
	ddp_status_coll_leave();
	if (prev_step[1]) {
		snprintf(key, sizeof key, "ddp/inv/%" PRIu64 "/%d", prev_step[1], my_rank);
		ddp_store_delete(st, key);
	}
	prev_step[1] = prev_step[0];
	prev_step[0] = step;
	stats.inv_checks++;
	stats.inv_ns += ddp_now_ns() - t0;
	DDP_INFO(GRAD,
		 "invariant check at step %" PRIu64 ": the %zu ranges the optimizer read (%" PRIu64
		 " bytes hashed) are identical on all %d ranks",
		 step, ninv, bytes, my_world);
	free(h);
	ninv = 0;
}

static ddp_result op_step_begin(void *ctx, uint64_t step)
{
	(void)ctx;
	cur_step = step;
	phase_open = 1;
	uint64_t now = ddp_now_ns();
	if (!stats.step_first_ns)
		stats.step_first_ns = now;
	ddp_status_step(step);
	ddp_job_progress();
	DDP_DEBUG(GRAD, "step %" PRIu64 ": update phase begins", step);
	return DDP_OK;
}

static ddp_result op_step_end(void *ctx, uint64_t step)
{
	(void)ctx;
	uint64_t now = ddp_now_ns();
	phase_open = 0;
	ddp_overlap_step_base(launch_seq);
	inv_compare(step);
	if (ddp_trace_enabled()) {
		struct ddp_trace_ev ev = {
			.name = "optimizer step",
			.cat = "step",
			.ts_ns = stats.step_last_ns ? stats.step_last_ns : stats.step_first_ns,
			.step = step,
		};
		ev.dur_ns = now - ev.ts_ns;
		ddp_trace_event(&ev);
	}
	stats.step_last_ns = now;
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
	if (check_every > 0 && step % (uint64_t)check_every == 0 && !dry && !at_exit) {
		ddp_status_coll_begin("--check hash exchange");
		ddp_result rc = check_hashes(step, check_stream);
		ddp_status_coll_leave();
		return rc;
	}
	return DDP_OK;
}

/* ---- the cheap path */

static int cmp_iv(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Publishes the gradients' allocations (sync_lock held). */
static void gsnap_rebuild(void)
{
	size_t nb = ddp_grad_nbufs(tracker), n = 0;
	struct gsnap *g = malloc(sizeof *g + (nb ? nb : 1) * sizeof g->iv[0]);
	if (!g) {
		__atomic_store_n(&hot.ok, 0, __ATOMIC_RELEASE); /* no snapshot: the slow path */
		return;
	}
	for (size_t i = 0; i < nb; i++) {
		const struct ddp_grad_buf *b = ddp_grad_buf_at(tracker, i);
		if (b->role != DDP_GR_GRAD && b->role != DDP_GR_CAND)
			continue;
		g->iv[n].lo = b->alloc_base;
		g->iv[n].hi = b->alloc_base + b->alloc_size;
		n++;
	}
	qsort(g->iv, n, sizeof g->iv[0], cmp_iv);
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (w && g->iv[i].lo <= g->iv[w - 1].hi) {
			if (g->iv[i].hi > g->iv[w - 1].hi)
				g->iv[w - 1].hi = g->iv[i].hi;
			continue;
		}
		g->iv[w++] = g->iv[i];
	}
	g->n = w;
	g->older = hot.snap;
	__atomic_store_n(&hot.snap, g, __ATOMIC_RELEASE);
}

/* The steady state may have begun or ended, the gradients changed
 * (sync_lock held). */
static void fast_update(void)
{
	static uint64_t built_gen = UINT64_MAX;
	int ok = !dry && opt_seen && ddp_grad_steady(tracker);
	if (ok && (!__atomic_load_n(&hot.ok, __ATOMIC_RELAXED) || ddp_grad_gen(tracker) != built_gen)) {
		built_gen = ddp_grad_gen(tracker);
		gsnap_rebuild();
	}
	__atomic_store_n(&hot.ok, ok && hot.snap, __ATOMIC_RELEASE);
}

/* The kernel's words that may hold a pointer, as ddp_launch_decode scans
 * them (sync_lock held, once per kernel). */
static void scan_build(struct ddp_kfunc *k)
{
	uint32_t n = 0, *v;
	if (k->sync_scan_state || !k->layout_known) {
		if (!k->sync_scan_state)
			__atomic_store_n(&k->sync_scan_state, 2, __ATOMIC_RELEASE);
		return;
	}
	if (!(v = malloc((k->nparams ? k->nparams : 1) * 64 * sizeof *v)))
		return;
	for (uint32_t i = 0; i < k->nparams && n <= 64; i++) {
		const struct ddp_kparam_desc *d = &k->params[i];
		if (d->size == 8 && (d->ptype == DDP_PT_POINTER || d->ptype == DDP_PT_UNKNOWN)) {
			v[n++] = i << 16;
		} else if (d->size >= 8 && (d->ptype == DDP_PT_STRUCT || d->ptype == DDP_PT_UNKNOWN)) {
			uint32_t first = (d->offset + 7) & ~7u;
			for (uint32_t o = first; o + 8 <= d->offset + d->size && n <= 64; o += 8)
				v[n++] = i << 16 | (o - d->offset);
		}
	}
	if (n > 64 || k->nparams > 65535) { /* many words: decoding is cheaper than guessing */
		free(v);
		__atomic_store_n(&k->sync_scan_state, 2, __ATOMIC_RELEASE);
		return;
	}
	k->sync_scan = v;
	k->sync_nscan = (uint16_t)n;
	__atomic_store_n(&k->sync_scan_state, 1, __ATOMIC_RELEASE);
}

/* Does a word of the launch's arguments point into a gradient allocation
 * (or can the arguments not be read)? */
static int scan_hits(const struct ddp_kfunc *k, const struct ddp_launch_call *c, const struct gsnap *g)
{
	struct ddp_launch_params p = { c->params, c->extra };
	for (uint16_t j = 0; j < k->sync_nscan; j++) {
		uint32_t e = k->sync_scan[j];
		const unsigned char *v = c->params
						 ? (const unsigned char *)c->params[e >> 16]
						 : (const unsigned char *)ddp_launch_param_ptr(k, &p, e >> 16);
		uint64_t x;
		if (!v)
			return 1;
		memcpy(&x, v + (e & 0xffff), 8);
		size_t lo = 0, hi = g->n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (x < g->iv[mid].lo)
				hi = mid;
			else if (x >= g->iv[mid].hi)
				lo = mid + 1;
			else
				return 1;
		}
	}
	return 0;
}

/* ---- what the overlap layer needs */

static void ov_coll_fail(ddp_result rc, const char *what)
{
	coll_fail(rc, what);
}

static int ov_alive(const struct ddp_grad_buf *b)
{
	return op_alive(NULL, b);
}

static void op_written(void *ctx, struct ddp_grad_buf *b, const struct ddp_grad_launch *L, uint64_t lo,
		       uint64_t hi, uint8_t bound)
{
	(void)ctx;
	ddp_overlap_written(b, L, lo, hi, bound);
}

/* ---- init and the launch path */

void ddp_sync_init(int rank, int world)
{
	static struct ddp_grad_ops ops = {
		.ctx = NULL,
		.allreduce = op_allreduce,
		.broadcast = op_broadcast,
		.read = op_read,
		.write = op_write,
		.relaunch = op_relaunch,
		.step_begin = op_step_begin,
		.step_end = op_step_end,
		.alive = op_alive,
		.opt_reads = op_opt_reads,
		.copy = op_copy,
	};
	static const struct ddp_overlap_env env = {
		.coll_fail = ov_coll_fail,
		.check_sig = check_sig,
		.alive = ov_alive,
	};
	int mode = ddp_param_sync(); /* auto|on|off */
	enum ddp_dtype ov = DDP_DT_UNKNOWN;
	const char *dt = ddp_param_grad_dtype();

	my_rank = rank;
	my_world = world;
	if (world <= 1 && mode != 2 && ddp_inspect_enabled()) {
		/* ddprun inspect: the tracker runs dry (no job, no collectives)
		 * so that the report can show every range's role and evidence */
		dry = 1;
	} else if (mode == 2 || world <= 1) {
		if (mode == 1 && world <= 1)
			DDP_INFO(GRAD, "DDP_SYNC=on with one rank: nothing to synchronise");
		return;
	}
	if (!dry && mode == 0 && !ddp_job_launched()) {
		/* auto, but no launcher whose job we can join (RANK/WORLD_SIZE by hand) */
		DDP_WARN("libddp: WORLD_SIZE=%d but no launcher (ddprun, torchrun, Slurm, MPI) started this rank: "
			 "gradient synchronisation is off and this rank trains alone (DDP_SYNC=on makes this an error)",
			 world);
		return;
	}
	if (dt && *dt) {
		ov = ddp_dtype_parse(dt);
		if (!ddp_dtype_reducible(ov))
			die("libddp: DDP_GRAD_DTYPE must be f32, f16 or bf16");
	}
	opt_setting = ddp_param_opt_kernels();
	reader_setting = ddp_param_grad_reader_kernels();
	check_every = ddp_param_check();
	check_inv = ddp_param_check_invariant();
	skip_avg = ddp_param_debug_skip_avg();
	no_measure = ddp_param_debug_no_measure();
	opt_wait_s = ddp_param_opt_wait();
	real_sync = ddp_driver_.streamSynchronize;
	real_ctx_sync = ddp_driver_.ctxSynchronize;
	if (!real_sync)
		die("libddp: the driver has no cuStreamSynchronize");
	overlap_mode = ddp_param_overlap();
	int overlap = overlap_mode != 2 && !dry && skip_avg < 0;
	if (overlap_mode != 2 && skip_avg >= 0)
		DDP_WARN("DDP_DEBUG_SKIP_AVG is set: gradient reductions are synchronous (DDP_OVERLAP=off)");
	const char *bmb = ddp_param_bucket_mb();
	char *bend = NULL;
	double mb = bmb && *bmb ? strtod(bmb, &bend) : 25.0;
	if ((bmb && *bmb && (!bend || *bend)) || !(mb > 0) || mb > 65536) {
		char msg[200];
		snprintf(msg, sizeof msg,
			 "libddp: DDP_BUCKET_MB=%.60s: must be a number of MiB above 0 and at most 65536 "
			 "(e.g. 25, or 0.05 for a small model)",
			 bmb ? bmb : "");
		die(msg);
	}
	uint64_t bucket_bytes = (uint64_t)(mb * 1048576.0);
	ddp_overlap_init(&env, overlap, bucket_bytes ? bucket_bytes : 1, ddp_param_overlap_slices());
	if (overlap) {
		ops.reduce = op_reduce;
		ops.reduce_on = op_reduce_on;
		ops.written = op_written;
	}
	if (ddp_grad_new(&ops, ov, &tracker) != DDP_OK)
		die("libddp: out of memory (gradient tracker)");
	if (ddp_param_debug_avg_state()) {
		ddp_grad_set_debug_avg_state(tracker, 1);
		DDP_WARN("DDP_DEBUG_AVG_STATE=1: optimizer state formed before the optimizer kernel, and parameters "
			 "a foreach optimizer op reads beside the gradients, are averaged as gradients (a debug "
			 "setting: training is wrong)");
	}
	if (dry) {
		ddp_grad_set_strict(tracker, 0);
		ddp_sync_on_ = 1;
		return;
	}
	if (skip_avg >= 0)
		DDP_WARN("DDP_DEBUG_SKIP_AVG=%ld: one gradient range of every reduction is left unaveraged (a debug "
			 "setting: the invariant check must stop this job)",
			 skip_avg);
	if (ddp_job_init() != DDP_OK)
		die("libddp: cannot join the job; see the line above");
	DDP_INFO(GRAD, "gradient synchronisation on: %d ranks%s%s", world,
		 check_every ? ", --check every " : "", check_every ? "N steps" : "");
	ddp_sync_on_ = 1;
}

/* The function's own name: "multi_tensor_apply_kernel" of "void
 * at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>(...)"
 * (templates and arguments are in the demangled name; the return type
 * and namespaces go, "(anonymous namespace)" included). */
static void short_name(const struct ddp_kfunc *k, char *out, size_t cap)
{
	static const char anon[] = "(anonymous namespace)";
	const char *s = k->demangled ? k->demangled : k->name;
	const char *start = s, *p = s;
	for (; *p && *p != '<'; p++) {
		if (*p == '(') {
			if (strncmp(p, anon, sizeof anon - 1) != 0)
				break;
			p += sizeof anon - 2;
			continue;
		}
		if (*p == ' ' || (*p == ':' && p[1] == ':'))
			start = p + (*p == ' ' ? 1 : 2);
	}
	size_t n = (size_t)(p - start);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

/* ---- outputs declared by library calls (ddp_sync_libcall_enter) */

static __thread struct ddp_sync_libcall libcall __attribute__((tls_model("initial-exec")));

void ddp_sync_libcall_enter(const char *fn, uint64_t lo, uint64_t hi, struct ddp_sync_libcall *saved)
{
	*saved = libcall;
	libcall.lo = lo;
	libcall.hi = hi > lo ? hi : lo;
	libcall.fn = fn;
}

void ddp_sync_libcall_leave(const struct ddp_sync_libcall *saved)
{
	libcall = *saved;
}

/* ---- device-to-device copies (the first step's: ddp_grad_copied) */

void ddp_sync_copied(uint64_t dst, uint64_t src, uint64_t bytes)
{
	struct ddp_alloc_ent d, s;
	if (!ddp_sync_on_ || !tracker || !bytes)
		return;
	if (!ddp_alloc_covers(dst, bytes, &d) || !ddp_alloc_covers(src, bytes, &s))
		return;
	/* a range straddling mapped pages (expandable segments) spans them */
	uint64_t dsz = dst + bytes - d.base > d.size ? dst + bytes - d.base : d.size;
	uint64_t ssz = src + bytes - s.base > s.size ? src + bytes - s.base : s.size;
	pthread_mutex_lock(&sync_lock);
	ddp_grad_copied(tracker, dst, d.base, dsz, d.id, src, s.base, ssz, s.id, bytes);
	pthread_mutex_unlock(&sync_lock);
}

/* Inside a library call that declared its output: an argument pointing
 * into it (one allocation holds it all) covers exactly that output. */
static void libcall_bound(const struct ddp_kfunc *k, uint32_t n)
{
	uint64_t lo = libcall.lo, hi = libcall.hi;

	if (lo >= hi)
		return;
	for (uint32_t j = 0; j < n; j++) {
		struct ddp_grad_arg *g = &args_buf[j];
		if (g->ptr < lo || g->ptr >= hi || lo < g->base || hi - g->base > g->size)
			continue;
		DDP_TRACE(GRAD,
			  "%s inside %s: argument %u writes at most [+%" PRIu64 ",+%" PRIu64
			  ") of allocation #%u (the call's output)",
			  k->sync_kname, libcall.fn, j, lo - g->base, hi - g->base, g->alloc_id);
		g->ptr = lo;
		g->ext = hi - lo;
		g->bounded = DDP_GB_EXACT;
	}
}

/* The launch's stream, the per-thread default stream for the _ptsz entry
 * points' stream 0. */
static CUstream call_stream(const struct ddp_launch_call *c)
{
	if (!c->stream &&
	    (c->kind == DDP_LAUNCH_PTSZ || c->kind == DDP_LAUNCH_COOP_PTSZ || c->kind == DDP_LAUNCH_EX_PTSZ))
		return CU_STREAM_PER_THREAD;
	return c->stream;
}

static int is_count_type(uint8_t dt)
{
	return dt == DDP_DT_I32 || dt == DDP_DT_U32 || dt == DDP_DT_I64 || dt == DDP_DT_U64;
}

static uint64_t ints_buf[16]; /* the launch's integer arguments (0: <= 0) */
static uint32_t nints;

/* The range each pointer argument covers, from the launch's integer
 * arguments and its grid (ddp_extent.h: one instance's count, or the union
 * over a grid-strided launch's instances); else the rest of the allocation
 * (ext 0).  Leaves the integer arguments in ints_buf (measured extents). */

static void bound_ranges(const struct ddp_kfunc *k, const struct ddp_launch_params *p, const unsigned grid[3],
			 uint32_t n)
{
	static struct ddp_extent_ptr ep[DDP_LAUNCH_MAX_ARGS];
	uint64_t *counts = ints_buf;
	uint32_t nc = 0;

	nints = 0;
	if (!k->types_known)
		return;
	for (uint32_t i = 0; i < k->nparams && nc < 16; i++) {
		const struct ddp_kparam_desc *d = &k->params[i];
		const void *v;
		if (d->ptype != DDP_PT_SCALAR || !is_count_type(d->dtype) ||
		    !(v = ddp_launch_param_ptr(k, p, i)))
			continue;
		int64_t x = 0;
		if (d->size == 4) {
			int32_t y;
			uint32_t u;
			memcpy(&y, v, 4);
			memcpy(&u, v, 4);
			x = d->dtype == DDP_DT_I32 ? y : (int64_t)u;
		} else if (d->size == 8) {
			memcpy(&x, v, 8);
		}
		counts[nc++] = x > 0 ? (uint64_t)x : 0;
	}
	nints = nc;
	if (n > DDP_LAUNCH_MAX_ARGS)
		n = DDP_LAUNCH_MAX_ARGS;
	for (uint32_t j = 0; j < n; j++) {
		const struct ddp_launch_arg *a = &launch_buf.args[j];
		size_t es = ddp_dtype_size((enum ddp_dtype)args_buf[j].dtype);
		ep[j].esize = a->in_struct || a->access == DDP_ACC_UNKNOWN ? 0 : (uint32_t)es;
		ep[j].alloc = a->alloc.size;
		ep[j].room = a->alloc.size - (a->value - a->alloc.base);
	}
	struct ddp_extent_result r = ddp_extent_bound(counts, nc, grid, ep, n);
	if (r.rule == DDP_EXTENT_GRID_UNKNOWN)
		DDP_DEBUG(GRAD,
			  "%s: %" PRIu64 " grid instances and no stride argument that places them: its pointers "
			  "reach to their allocations' ends",
			  k->sync_kname, r.instances);
	for (uint32_t j = 0; j < n; j++)
		if (ep[j].bounded) {
			args_buf[j].ext = ep[j].ext;
			args_buf[j].bounded = ep[j].bounded;
		}
}

/* A gradient whose extent only a count argument gives, unconfirmed (the
 * optimizer launch's measurement bounded nothing it pairs with: it passes
 * several pointers into one allocation): averaged on a guess it may be too
 * small, so the job stops (ddp_extent.h).  Checked after each optimizer
 * launch that changed the set of ranges. */
static void refuse_guessed_gradients(void)
{
	static uint64_t seen_gen = ~0ULL;
	uint64_t gen = ddp_grad_gen(tracker);
	if (gen == seen_gen || no_measure)
		return;
	seen_gen = gen;
	for (size_t i = 0, n = ddp_grad_nbufs(tracker); i < n; i++) {
		const struct ddp_grad_buf *b = ddp_grad_buf_at(tracker, i);
		if (b->role != DDP_GR_GRAD || b->named || b->bounded != DDP_GB_COUNT)
			continue;
		/* a range that is its whole allocation (the data flow's gradients)
		 * cannot be too small: nothing lies past it */
		if (b->base == b->alloc_base && b->size == b->alloc_size)
			continue;
		char msg[600];
		snprintf(msg, sizeof msg,
			 "libddp: gradient %s (%" PRIu64 " bytes at +%" PRIu64 " of allocation #%u) is "
			 "bounded only by a count argument of its optimizer launch, and no measurement confirmed it (the "
			 "launch passes several pointers into one allocation): averaged on a guess it may be too small, "
			 "so the job stops; report the optimizer kernel",
			 b->label, b->size, b->base - b->alloc_base, b->alloc_id);
		die(msg);
	}
}

/* Typed, with at least one const pointer: its non-const pointers are
 * taken as written (else calibration decides). */
static int const_correct(const struct ddp_kfunc *k)
{
	if (!k->types_known)
		return 0;
	for (uint32_t i = 0; i < k->nparams; i++)
		if (k->params[i].ptype == DDP_PT_POINTER && k->params[i].is_const)
			return 1;
	return 0;
}

/* No optimizer recognised after DDP_OPT_WAIT seconds of launches. */
static void no_optimizer_check(struct ddp_kfunc *k, int cls)
{
	char msg[900];
	if (cls == DDP_GK_OPT) {
		__atomic_store_n(&opt_seen, 1, __ATOMIC_RELAXED);
		return;
	}
	uint64_t now = ddp_now_ns();
	if (!first_launch_ns) {
		first_launch_ns = now;
		return;
	}
	if (dry || opt_wait_s <= 0 || now - first_launch_ns < (uint64_t)opt_wait_s * 1000000000ULL)
		return;
	snprintf(msg, sizeof msg,
		 "libddp: %" PRIu64 " kernel launches in %ld s and none was recognised as an "
		 "optimizer, so no gradient is averaged and the ranks train apart (the last kernel launched: %.100s); "
		 "%sname the optimizer with DDP_OPT_KERNELS=+NAME, or set DDP_SYNC=off to train unsynchronised (if the "
		 "first optimizer step is still to come, after a long gradient accumulation, raise DDP_OPT_WAIT)",
		 stats.launches, opt_wait_s, k->demangled ? k->demangled : "?",
		 torch_seen ? "PyTorch optimizers built with foreach=False (one elementwise kernel per parameter) are "
			      "not recognised: use foreach=True or fused=True (the defaults on CUDA); else "
			    : "");
	die(msg);
}

int ddp_sync_gate_open(void)
{
	return ddp_sync_on_ && !dry && !__atomic_load_n(&opt_seen, __ATOMIC_RELAXED);
}

void ddp_sync_output_open(const char *path)
{
	char msg[1000];
	pthread_mutex_lock(&sync_lock);
	if (!ddp_sync_gate_open() || !stats.launches) {
		pthread_mutex_unlock(&sync_lock);
		return;
	}
	snprintf(msg, sizeof msg,
		 "libddp: the program opens %.300s for writing after %" PRIu64 " kernel launches, and "
		 "no update of its parameters was found among them (no optimizer kernel, and no launch that reads a "
		 "parameter and a gradient the way an update does; the last kernel launched: %.200s): the ranks "
		 "would train apart, so the job stops before the file is written (docs/gradient-sync.md, \"Which "
		 "updates libddp finds\")",
		 path, stats.launches, cur_k && cur_k->demangled ? cur_k->demangled : "?");
	die(msg);
}

static uint64_t sync_launch_slow(struct ddp_kfunc *k, const struct ddp_launch_call *c, int cls)
	__attribute__((noinline));

uint64_t ddp_sync_launch(struct ddp_kfunc *k, const struct ddp_launch_call *c)
{
	int cls = __atomic_load_n(&k->sync_class, __ATOMIC_RELAXED);
	if (cls == 1 + DDP_GK_OTHER && __atomic_load_n(&hot.ok, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&k->sync_scan_state, __ATOMIC_ACQUIRE) == 1 &&
	    !scan_hits(k, c, __atomic_load_n(&hot.snap, __ATOMIC_ACQUIRE))) {
		/* the cheap path: this launch touches no gradient allocation */
		if (__builtin_expect(!(++fast_tick & (FAST_TICK - 1)), 0))
			fast_progress();
		return 0;
	}
	return sync_launch_slow(k, c, cls);
}

/* The locked path (its own function: the cheap path above pays neither its
 * stack frame nor its register saves). */
static uint64_t sync_launch_slow(struct ddp_kfunc *k, const struct ddp_launch_call *c, int cls)
{
	uint64_t token = 0;
	ddp_job_progress();
	if (__builtin_expect(!cls, 0)) {
		cls = 1 + (int)ddp_grad_classify(k->demangled, opt_setting, reader_setting);
		__atomic_store_n(&k->sync_class, (uint8_t)cls, __ATOMIC_RELAXED);
		if (cls - 1 != DDP_GK_OTHER)
			DDP_INFO(GRAD, "%s kernel: %s",
				 cls - 1 == DDP_GK_OPT      ? "optimizer"
				 : cls - 1 == DDP_GK_READER ? "gradient-reader"
							    : "neutral-consumer",
				 k->demangled);
	}
	cls -= 1;

	ddp_port_own_begin();
	pthread_mutex_lock(&sync_lock);
	stats.launches++;
	if (!opt_seen)
		no_optimizer_check(k, cls);
	if (!k->sync_torch_state) {
		short_name(k, k->sync_kname, sizeof k->sync_kname);
		ddp_torch_launch_learn(k);
		torch_seen |= k->sync_torch_state == DDP_XT_OK;
		k->sync_boundary = (uint8_t)ddp_grad_is_boundary(k->demangled);
		if (k->sync_boundary) /* never skipped by the cheap path */
			__atomic_store_n(&k->sync_scan_state, 2, __ATOMIC_RELEASE);
	}
	if (cls == DDP_GK_OTHER && !k->sync_scan_state)
		scan_build(k);
	if (cls == DDP_GK_OTHER && !ddp_grad_active(tracker)) {
		cur_k = k; /* the last kernel launched, for the exit message */
		goto out_unlock;
	}

	uint32_t n = 0;
	struct ddp_grad_arg *args = args_buf;
	uint32_t truncated = 0;
	int explicit_ranges = k->sync_torch_state == DDP_XT_OK;
	if (k->sync_torch_state == DDP_XT_REFUSE && cls != DDP_GK_OTHER) {
		char msg[700];
		snprintf(msg, sizeof msg,
			 "libddp: PyTorch kernel %.300s is a gradient consumer whose tensors libddp "
			 "cannot bound (an argument layout it does not know); its gradients would be averaged as "
			 "guesses, so the job stops: report the kernel name, or train unsynchronised with DDP_SYNC=off",
			 k->demangled);
		die(msg);
	}
	if (explicit_ranges) {
		char why[300];
		ddp_result rc = ddp_torch_launch_args(k, c, cls != DDP_GK_OTHER, &xargs, why, sizeof why);
		if (rc != DDP_OK) {
			if (cls != DDP_GK_OTHER) {
				char msg[900];
				snprintf(msg, sizeof msg,
					 "libddp: cannot read the tensors of %s kernel %.300s: %s",
					 cls == DDP_GK_OPT      ? "optimizer"
					 : cls == DDP_GK_READER ? "gradient-reader"
								: "gradient-consumer",
					 k->demangled, why);
				die(msg);
			}
			explicit_ranges = 0; /* the generic decoder: unbounded ranges */
		} else {
			args = xargs.v;
			n = xargs.n;
		}
	}
	if (!explicit_ranges) {
		struct ddp_launch_params p = { c->params, c->extra };
		ddp_result rc = ddp_launch_decode(k, &p, &launch_buf);
		if (rc != DDP_OK) {
			if (cls != DDP_GK_OTHER) {
				char msg[600];
				snprintf(msg, sizeof msg,
					 "libddp: cannot decode the arguments of %s kernel %s (%s); its "
					 "gradients cannot be found",
					 cls == DDP_GK_OPT ? "optimizer" : "gradient-reader", k->demangled,
					 ddp_strerror(rc));
				die(msg);
			}
			goto out_unlock;
		}
		n = launch_buf.nargs;
		truncated = launch_buf.truncated;
		for (uint32_t i = 0; i < n; i++) {
			const struct ddp_launch_arg *a = &launch_buf.args[i];
			struct ddp_grad_arg *g = &args_buf[i];
			g->base = a->alloc.base;
			g->size = a->alloc.size;
			g->ptr = a->value;
			g->ext = 0;
			g->bounded = 0;
			g->alloc_id = a->alloc.id;
			g->param = a->param;
			g->word = a->word;
			g->access = a->access;
			g->in_struct = a->in_struct;
			g->tlist = DDP_GRAD_NO_LIST;
			g->dtype = DDP_DT_UNKNOWN;
			if (k->types_known && !a->in_struct && a->param < k->nparams)
				g->dtype = k->params[a->param].dtype;
		}
		bound_ranges(k, &p, c->grid, n);
		libcall_bound(k, n);
	}
	CUstream s = call_stream(c);
	if (cls == DDP_GK_OPT && !explicit_ranges && !no_measure) {
		/* count-guessed extents of an optimizer launch: measured in the
		 * calibration steps, the rules learned apply after them */
		char msg[700];
		struct ddp_extent_probe pr = { NULL,     op_read,   op_write, op_relaunch,
					       op_drain, (void *)s, (void *)c };
		check_stream = (void *)s;
		if (ddp_extent_measured(k->id, k->sync_kname, ints_buf, nints, args_buf, n,
					ddp_grad_steps(tracker) < 3, &pr, msg, sizeof msg) != DDP_OK)
			die(msg);
		/* its drain may have waited for the peers' collectives: the
		 * heartbeat must not read that wait as a stalled rank */
		ddp_job_progress();
	}
	struct ddp_grad_launch gl = {
		.kname = k->sync_kname,
		.kid = k->id,
		.kclass = (uint8_t)cls,
		.template_dtype = k->template_dtype,
		.nargs = n,
		.args = args,
		.stream = (void *)s,
		.launch_ctx = (void *)c,
		.truncated = truncated,
		.const_correct = (uint8_t)const_correct(k),
		.seq = ++launch_seq,
		.explicit_ranges = (uint8_t)explicit_ranges,
		.grad_list = explicit_ranges ? xargs.grad_list : DDP_GRAD_NO_LIST,
		.boundary = k->sync_boundary,
	};
	check_stream = (void *)s;
	cur_k = k;
	cur_call = c;
	ddp_result rc = ddp_grad_launch(tracker, &gl);
	cur_call = NULL;
	if (!opt_seen && ddp_grad_steps(tracker)) /* an update found from the data flow */
		__atomic_store_n(&opt_seen, 1, __ATOMIC_RELAXED);
	if (rc != DDP_OK) {
		const char *e = ddp_grad_last_error(tracker);
		die(e && *e ? e : "libddp: gradient tracking failed");
	}
	if (cls == DDP_GK_OPT)
		refuse_guessed_gradients();
	if (ddp_overlap_before(gl.seq, &gl))
		token = gl.seq;
	fast_update();
out_unlock:
	pthread_mutex_unlock(&sync_lock);
	ddp_port_own_end();
	return token;
}

void ddp_sync_launched(uint64_t token, const struct ddp_launch_call *c)
{
	uint64_t colls = 0, bytes = 0, t0 = ddp_now_ns();
	CUstream s = call_stream(c);
	ddp_port_own_begin();
	pthread_mutex_lock(&sync_lock);
	if (ddp_sync_on_) {
		uint64_t st = reduce_step();
		ddp_status_coll_begin("allreduce"); /* ddprun sees who waits where */
		ddp_overlap_after(token, (void *)s, st, &colls, &bytes);
		ddp_status_coll_leave();
		stats.allreduce_calls += colls;
		stats.allreduce_bytes += bytes;
		stats.allreduce_ns += ddp_now_ns() - t0;
		account_step_bytes(st, bytes);
	}
	pthread_mutex_unlock(&sync_lock);
	ddp_port_own_end();
}

static int stepped_aside; /* ddp_sync_step_aside: the job stays until exit */

void ddp_sync_step_aside(const char *why)
{
	if (!__atomic_exchange_n(&ddp_sync_on_, 0, __ATOMIC_ACQ_REL))
		return;
	__atomic_store_n(&stepped_aside, 1, __ATOMIC_RELEASE);
	if (my_rank == 0)
		DDP_WARN("libddp: rank 0: the program is already data-parallel (%s); ddprun's gradient "
			 "synchronisation steps aside: each rank's program synchronises itself",
			 why);
	else
		DDP_INFO(GRAD, "rank %d: %s; gradient synchronisation steps aside", my_rank, why);
}

int ddp_sync_exit(const char *trace_dir, int rank)
{
	int failed = 0;
	if (__atomic_load_n(&stepped_aside, __ATOMIC_ACQUIRE)) {
		ddp_job_fini();
		return 0;
	}
	if (!ddp_sync_on_)
		return 0;
	pthread_mutex_lock(&sync_lock);
	/* an open update phase ends here (its invariant check, if due, runs) */
	at_exit = 1;
	if (ddp_grad_finish(tracker) != DDP_OK) {
		const char *e = ddp_grad_last_error(tracker);
		DDP_ERROR("%s", e && *e ? e : "libddp: gradient tracking failed at exit");
		failed = 1;
	}
	uint64_t steps = ddp_grad_steps(tracker);
	uint64_t red = ddp_grad_reductions(tracker);
	double per = steps ? 1.0 / (double)steps : 0.0;
	char ovs[256];
	if (!dry)
		ddp_overlap_finish();
	ddp_overlap_summary(ovs, sizeof ovs);
	if (!dry && !failed && (red == 0 || steps == 0) && stats.launches > 0) {
		/* nothing is silent: a rank of a multi-rank job that launched kernels
		 * and averaged nothing did not train as one model with the others;
		 * one whose optimizer was never recognised cannot be known to have
		 * (a reader, e.g. a gradient norm, may have averaged what it read) */
		DDP_ERROR("libddp: this rank launched %" PRIu64
			  " kernels and %s; it is not known to have trained as "
			  "one model with the other ranks: %sname the optimizer kernel with DDP_OPT_KERNELS=+NAME (the "
			  "last kernel launched: %.100s), or set DDP_SYNC=off to train unsynchronised",
			  stats.launches,
			  steps ? "averaged no gradient (optimizer steps ran but no gradient was found)"
			  : red ? "no kernel was recognised as an optimizer (gradient readers averaged what they read)"
				: "averaged no gradient (no kernel was recognised as an optimizer)",
			  torch_seen ? "PyTorch optimizers built with foreach=False are not recognised: use foreach=True "
				       "or fused=True; else "
				     : "",
			  cur_k && cur_k->demangled ? cur_k->demangled : "?");
		failed = 1;
	}
	DDP_INFO(GRAD,
		 "sync summary: %" PRIu64 " optimizer steps, %" PRIu64 " gradient reductions "
		 "(%" PRIu64 " buffer allreduces, %" PRIu64 " bytes, %.3f ms; per step %.0f bytes, %.3f ms), "
		 "%" PRIu64 " parameter broadcasts (%" PRIu64 " bytes, %.3f ms), %" PRIu64 " signature checks, "
		 "%" PRIu64 " --check comparisons, %" PRIu64 " calibration launches, about %" PRIu64
		 " launches on "
		 "the cheap path; %s",
		 steps, red, stats.allreduce_calls, stats.allreduce_bytes, stats.allreduce_ns / 1e6,
		 stats.allreduce_bytes * per, stats.allreduce_ns / 1e6 * per, stats.bcast_calls,
		 stats.bcast_bytes, stats.bcast_ns / 1e6, stats.sig_checks, stats.hash_checks,
		 stats.calibrations, __atomic_load_n(&fastcount.n, __ATOMIC_RELAXED), ovs);
	if (trace_dir && *trace_dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/rank%d.sync.json", trace_dir, rank);
		FILE *f = DDP_SYS(fopen64)(path, "w");
		if (f) {
			fprintf(f,
				"{\"rank\":%d,\"world\":%d,\"steps\":%" PRIu64 ",\"reductions\":%" PRIu64
				",\"allreduce_calls\":%" PRIu64 ",\"allreduce_bytes\":%" PRIu64
				",\"allreduce_ms\":%.3f,\"broadcast_calls\":%" PRIu64
				",\"broadcast_bytes\":%" PRIu64
				",\"broadcast_ms\":%.3f,\"signature_checks\":%" PRIu64 ",\"hash_checks\":%" PRIu64
				",\"bytes_reduced_per_step\":%.0f,\"coll_ms_per_step\":%.3f,\"gradient_bytes\":%" PRIu64
				",\"invariant_checks\":%" PRIu64 ",\"invariant_bytes_hashed\":%" PRIu64
				",\"invariant_ms\":%.3f,\"calibrations\":%" PRIu64
				",\"bytes_reduced_by_step\":[",
				rank, my_world, steps, red, stats.allreduce_calls, stats.allreduce_bytes,
				stats.allreduce_ns / 1e6, stats.bcast_calls, stats.bcast_bytes,
				stats.bcast_ns / 1e6, stats.sig_checks, stats.hash_checks,
				stats.allreduce_bytes * per, (stats.allreduce_ns + stats.bcast_ns) / 1e6 * per,
				ddp_grad_grad_bytes(tracker), stats.inv_checks, stats.inv_bytes,
				stats.inv_ns / 1e6, stats.calibrations);
			for (uint64_t i = 0; i < steps; i++)
				fprintf(f, "%s%" PRIu64, i ? "," : "",
					i < stats.nstep_bytes ? stats.step_bytes[i] : 0);
			fputc(']', f);
			ddp_overlap_json(f);
			ddp_rangelog_json(f);
			fprintf(f, ",\"buffers\":[");
			int first = 1;
			for (size_t i = 0; i < ddp_grad_nbufs(tracker); i++) {
				const struct ddp_grad_buf *b = ddp_grad_buf_at(tracker, i);
				if ((b->role != DDP_GR_GRAD && b->role != DDP_GR_PARAM) ||
				    !ddp_grad_buf_current(tracker, b))
					continue;
				fprintf(f, "%s{\"role\":\"%s\",\"label\":\"", first ? "" : ",",
					b->role == DDP_GR_GRAD ? "gradient" : "parameter");
				ddp_json_escape(f, b->label);
				fprintf(f,
					"\",\"bytes\":%" PRIu64 ",\"offset\":%" PRIu64
					",\"allocation_bytes\":%" PRIu64
					",\"dtype\":\"%s\",\"evidence\":\"%s\"}",
					b->size, b->base - b->alloc_base, b->alloc_size,
					b->role == DDP_GR_GRAD ? ddp_dtype_name((enum ddp_dtype)b->dtype) : "",
					ddp_grad_evidence_name((enum ddp_grad_evidence)b->evidence));
				first = 0;
			}
			fprintf(f, "]}\n");
			fclose(f);
		}
	}
	/* The job goes away below; launches the program still makes after this
	 * (its own atexit handlers run after ours) pass straight to the driver. */
	__atomic_store_n(&ddp_sync_on_, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sync_lock);
	if (!dry)
		ddp_job_fini();
	return failed;
}

void ddp_sync_explain(const char *path)
{
	FILE *f;
	if (!dry || !tracker || !path || !*path || !(f = DDP_SYS(fopen64)(path, "a")))
		return;
	pthread_mutex_lock(&sync_lock);
	fprintf(f, "\n## Roles (the gradient tracker's rules, run dry: docs/gradient-sync.md)\n");
	fprintf(f,
		"optimizer steps: %" PRIu64 ", calibration launches: %" PRIu64 ", gradient bytes: %" PRIu64
		"\n",
		ddp_grad_steps(tracker), stats.calibrations, ddp_grad_grad_bytes(tracker));
	fprintf(f, "%-10s %-40s %10s %10s %6s  %s\n", "role", "range", "offset", "bytes", "dtype", "evidence");
	size_t shown = 0;
	for (size_t i = 0; i < ddp_grad_nbufs(tracker); i++) {
		const struct ddp_grad_buf *b = ddp_grad_buf_at(tracker, i);
		if (b->role == DDP_GR_NONE || b->role == DDP_GR_OTHER || !ddp_grad_buf_current(tracker, b))
			continue;
		fprintf(f, "%-10s %-40s %10" PRIu64 " %10" PRIu64 " %6s  %s",
			ddp_grad_role_name((enum ddp_grad_role)b->role), b->label, b->base - b->alloc_base,
			b->size, b->role == DDP_GR_GRAD ? ddp_dtype_name((enum ddp_dtype)b->dtype) : "-",
			ddp_grad_evidence_name((enum ddp_grad_evidence)b->evidence));
		if (b->role == DDP_GR_GRAD && b->named)
			fprintf(f, "; named by its consumer, whatever its address (PyTorch: docs/pytorch.md)");
		else if (b->role == DDP_GR_GRAD)
			fprintf(f, "; written by %s%s%s; pairs with %s", b->writer,
				b->reader[0] ? "; revealed by " : "", b->reader,
				b->paired[0] ? b->paired : "?");
		fprintf(f, " (allocation #%u, %" PRIu64 " bytes%s)\n", b->alloc_id, b->alloc_size,
			b->bounded == DDP_GB_COUNT      ? ", range bounded by a count argument"
			: b->bounded == DDP_GB_EXACT    ? ", range exact (its tensor's extent)"
			: b->bounded == DDP_GB_MEASURED ? ", range measured (a rule of its launch's arguments)"
							: "");
		shown++;
	}
	if (!shown)
		fprintf(f,
			"  none: no optimizer step was recognised (set DDP_OPT_KERNELS to name the optimizer)\n");
	pthread_mutex_unlock(&sync_lock);
	fclose(f);
}
