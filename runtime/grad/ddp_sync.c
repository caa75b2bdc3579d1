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
 * Contract: sync_lock serialises everything below the launch hooks; the
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
#include "ddp_coll.h"
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
#include "ddp_trace.h"

int ddp_sync_on_;

/* Kernel classes cached in ddp_kfunc.sync_class: 0 = not yet, else 1 + class. */

struct sync_stats {
	uint64_t allreduce_calls, allreduce_bytes, allreduce_ns;
	uint64_t bcast_calls, bcast_bytes, bcast_ns;
	uint64_t sig_checks, hash_checks, calibrations;
	uint64_t step_first_ns, step_last_ns;
};

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ddp_grad *tracker;
static struct sync_stats stats;
static const char *opt_setting, *reader_setting;
static long check_every;
static int my_rank, my_world;
static uint64_t cur_step;
static uint64_t coll_seq;        /* collectives entered (ddprun's status board) */
static uint64_t *sigs_seen;
static size_t nsigs, sigcap;
static struct ddp_launch launch_buf;
static struct ddp_grad_arg args_buf[DDP_LAUNCH_MAX_ARGS];
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
		.name = name, .cat = "coll", .kernel = what, .ts_ns = t0,
		.dur_ns = ddp_now_ns() - t0, .bytes = bytes, .step = cur_step,
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
	const char *name;        /* "allreduce" / "broadcast" (trace, signature) */
	const char *what;        /* what one buffer is, for messages            */
	int is_allreduce;
	uint64_t *calls, *bytes, *ns;
};

static ddp_result run_collective(const struct coll_kind *k, struct ddp_grad_buf *const *bufs, size_t n,
				 void *stream)
{
	struct ddp_comm *c;
	static char sig[8192];   /* well below ddp_check_signature's 16 KiB */
	uint64_t bytes = 0, t0 = ddp_now_ns(), h;
	ddp_result rc;

	ddp_status_coll_enter(++coll_seq, k->name); /* ddprun sees who waits where */
	if ((rc = ddp_job_comm(&c)) != DDP_OK)
		coll_fail(rc, "creating the communicator");
	ddp_grad_signature(sig, sizeof sig, bufs, n, k->is_allreduce, &h);
	check_sig(c, k->name, sig, h);
	for (size_t i = 0; i < n; i++) {
		void *base = (void *)(uintptr_t)bufs[i]->base;
		enum ddp_dtype dt = (enum ddp_dtype)bufs[i]->dtype;
		uint64_t b = k->is_allreduce ? bufs[i]->count * ddp_dtype_size(dt) : bufs[i]->size;
		rc = k->is_allreduce
			     ? ddp_allreduce_avg(c, base, (size_t)bufs[i]->count, dt, 1, the_stream(stream))
			     : ddp_broadcast(c, base, (size_t)bufs[i]->size, 0, 1, the_stream(stream));
		if (rc != DDP_OK) {
			char what[128];
			snprintf(what, sizeof what, "%s of %s %s", k->name, k->what, bufs[i]->label);
			coll_fail(rc, what);
		}
		bytes += b;
	}
	ddp_status_coll_leave();
	uint64_t dt = ddp_now_ns() - t0;
	*k->calls += n;
	*k->bytes += bytes;
	*k->ns += dt;
	trace_coll(k->name, t0, bytes, n == 1 ? bufs[0]->label : NULL);
	DDP_INFO(COLL, "step %" PRIu64 ": %s of %zu %s buffer%s%s, %" PRIu64 " bytes, %.3f ms",
		 cur_step ? cur_step : 1, k->is_allreduce ? "allreduce-avg" : "broadcast", n, k->what,
		 n == 1 ? "" : "s", k->is_allreduce ? "" : " from rank 0", bytes, dt / 1e6);
	return DDP_OK;
}

static ddp_result op_allreduce(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	static const struct coll_kind k = { "allreduce", "gradient", 1, &stats.allreduce_calls,
					    &stats.allreduce_bytes, &stats.allreduce_ns };
	(void)ctx;
	return run_collective(&k, bufs, n, stream);
}

static ddp_result op_broadcast(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream)
{
	static const struct coll_kind k = { "broadcast", "parameter/state", 0, &stats.bcast_calls,
					    &stats.bcast_bytes, &stats.bcast_ns };
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

static void *check_stream;   /* the current launch's stream (per-thread default resolved) */

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

/* Is b's allocation still the one the tracker learned?  (A freed buffer's
 * address may be free, or belong to another allocation by now.) */
static int op_alive(void *ctx, const struct ddp_grad_buf *b)
{
	struct ddp_alloc_ent e;
	(void)ctx;
	return ddp_alloc_find(b->base, &e) && e.base == b->base && e.id == b->alloc_id;
}

/* --check N: hash every parameter/state buffer and compare across ranks.
 * Every stream of the context is drained first: the optimizer may have run
 * on another stream than the launch that ends the step, and a hash taken
 * while it still runs would differ between ranks by timing alone. */
static ddp_result check_hashes(uint64_t step, void *stream)
{
	static uint64_t prev_step[2];  /* the last two checked steps (key clean-up) */
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
			ddp_grad_forget(tracker, b->base);
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
			snprintf(msg, sizeof msg, "libddp: --check at step %" PRIu64 ": rank %d never posted its "
				 "parameter hashes (%s)", step, r, ddp_strerror(rc));
			die(msg);
		}
		if (len != np * sizeof *h) {
			snprintf(msg, sizeof msg, "libddp: --check at step %" PRIu64 ": rank %d has %zu parameter "
				 "buffers, rank %d has %zu: the ranks run different programs", step, r,
				 len / sizeof *h, my_rank, np);
			die(msg);
		}
		for (size_t i = 0; i < np; i++) {
			uint64_t other;
			memcpy(&other, (char *)val + i * sizeof other, sizeof other);
			if (other != h[i]) {
				snprintf(msg, sizeof msg, "libddp: --check: parameters diverged at step %" PRIu64
					 ": buffer %s (%" PRIu64 " bytes) differs between rank %d (hash %016" PRIx64
					 ") and rank %d (hash %016" PRIx64 ")", step, pb[i]->label, pb[i]->size,
					 my_rank, h[i], r, other);
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
	DDP_INFO(GRAD, "--check at step %" PRIu64 ": %zu parameter buffers identical on all %d ranks", step, np,
		 my_world);
	free(h);
	free(pb);
	return DDP_OK;
}

static ddp_result op_step_begin(void *ctx, uint64_t step)
{
	(void)ctx;
	cur_step = step;
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
	if (ddp_trace_enabled()) {
		struct ddp_trace_ev ev = {
			.name = "optimizer step", .cat = "step",
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
	DDP_DEBUG(GRAD, "step %" PRIu64 " ends: %" PRIu64 " allocations (%" PRIu64 " bytes), %" PRIu64
		  " frees (%" PRIu64 " bytes), %" PRIu64 " live (%" PRIu64 " bytes)", step, as.step_allocs,
		  as.step_bytes_alloc, as.step_frees, as.step_bytes_freed, as.live_count, as.live_bytes);
	ddp_alloc_step_reset();
	if (check_every > 0 && step % (uint64_t)check_every == 0) {
		ddp_status_coll_enter(++coll_seq, "--check hash exchange");
		ddp_result rc = check_hashes(step, check_stream);
		ddp_status_coll_leave();
		return rc;
	}
	return DDP_OK;
}

/* ---- init and the launch path */

void ddp_sync_init(int rank, int world)
{
	static const struct ddp_grad_ops ops = {
		.ctx = NULL, .allreduce = op_allreduce, .broadcast = op_broadcast, .read = op_read,
		.write = op_write, .relaunch = op_relaunch, .step_begin = op_step_begin,
		.step_end = op_step_end, .alive = op_alive,
	};
	int mode = ddp_param_sync(); /* auto|on|off */
	enum ddp_dtype ov = DDP_DT_UNKNOWN;
	const char *dt = ddp_param_grad_dtype();

	my_rank = rank;
	my_world = world;
	if (mode == 2 || world <= 1) {
		if (mode == 1 && world <= 1)
			DDP_INFO(GRAD, "DDP_SYNC=on with one rank: nothing to synchronise");
		return;
	}
	if (mode == 0 && !ddp_job_launched()) {
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
	real_sync = ddp_driver_.streamSynchronize;
	real_ctx_sync = ddp_driver_.ctxSynchronize;
	if (!real_sync)
		die("libddp: the driver has no cuStreamSynchronize");
	if (ddp_grad_new(&ops, ov, &tracker) != DDP_OK)
		die("libddp: out of memory (gradient tracker)");
	if (ddp_job_init() != DDP_OK)
		die("libddp: cannot join the job; see the line above");
	DDP_INFO(GRAD, "gradient synchronisation on: %d ranks%s%s", world,
		 check_every ? ", --check every " : "", check_every ? "N steps" : "");
	ddp_sync_on_ = 1;
}

static void short_name(const struct ddp_kfunc *k, char *out, size_t cap)
{
	const char *s = k->demangled ? k->demangled : k->name;
	const char *paren = strchr(s, '(');
	const char *start = s;
	/* skip a return type ("void name(") */
	for (const char *p = s; p < (paren ? paren : s + strlen(s)); p++) {
		if (*p == '<')
			break;
		if (*p == ' ')
			start = p + 1;
	}
	const char *lt = strchr(start, '<');
	size_t n = paren ? (size_t)(paren - start) : strlen(start);
	if (lt && (!paren || lt < paren))
		n = (size_t)(lt - start);  /* templates are in the demangled name */
	if (n >= cap)
		n = cap - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

void ddp_sync_launch(struct ddp_kfunc *k, const struct ddp_launch_call *c)
{
	ddp_job_progress();
	int cls = __atomic_load_n(&k->sync_class, __ATOMIC_RELAXED);
	if (__builtin_expect(!cls, 0)) {
		cls = 1 + (int)ddp_grad_classify(k->demangled, opt_setting, reader_setting);
		__atomic_store_n(&k->sync_class, (uint8_t)cls, __ATOMIC_RELAXED);
		if (cls - 1 != DDP_GK_OTHER)
			DDP_INFO(GRAD, "%s kernel: %s", cls - 1 == DDP_GK_OPT ? "optimizer" : "gradient-reader",
				 k->demangled);
	}
	cls -= 1;

	ddp_port_own_begin();
	pthread_mutex_lock(&sync_lock);
	if (cls == DDP_GK_OTHER && !ddp_grad_active(tracker))
		goto out_unlock;

	struct ddp_launch_params p = { c->params, c->extra };
	ddp_result rc = ddp_launch_decode(k, &p, &launch_buf);
	if (rc != DDP_OK) {
		if (cls != DDP_GK_OTHER) {
			char msg[600];
			snprintf(msg, sizeof msg, "libddp: cannot decode the arguments of %s kernel %s (%s); its "
				 "gradients cannot be found", cls == DDP_GK_OPT ? "optimizer" : "gradient-reader",
				 k->demangled, ddp_strerror(rc));
			die(msg);
		}
		goto out_unlock;
	}
	uint32_t n = launch_buf.nargs;
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_launch_arg *a = &launch_buf.args[i];
		struct ddp_grad_arg *g = &args_buf[i];
		g->base = a->alloc.base;
		g->size = a->alloc.size;
		g->alloc_id = a->alloc.id;
		g->param = a->param;
		g->word = a->word;
		g->access = a->access;
		g->in_struct = a->in_struct;
		g->dtype = DDP_DT_UNKNOWN;
		if (k->types_known && !a->in_struct && a->param < k->nparams)
			g->dtype = k->params[a->param].dtype;
	}
	char kname[64];
	short_name(k, kname, sizeof kname);
	CUstream s = c->stream;
	if (!s && (c->kind == DDP_LAUNCH_PTSZ || c->kind == DDP_LAUNCH_COOP_PTSZ ||
		   c->kind == DDP_LAUNCH_EX_PTSZ))
		s = CU_STREAM_PER_THREAD;
	struct ddp_grad_launch gl = {
		.kname = kname, .kid = k->id, .kclass = (uint8_t)cls,
		.template_dtype = k->template_dtype,
		.nargs = n, .args = args_buf, .stream = (void *)s, .launch_ctx = (void *)c,
		.truncated = launch_buf.truncated,
	};
	check_stream = (void *)s;
	rc = ddp_grad_launch(tracker, &gl);
	if (rc != DDP_OK) {
		const char *e = ddp_grad_last_error(tracker);
		die(e && *e ? e : "libddp: gradient tracking failed");
	}
out_unlock:
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
			 "synchronisation steps aside: each rank's program synchronises itself", why);
	else
		DDP_INFO(GRAD, "rank %d: %s; gradient synchronisation steps aside", my_rank, why);
}

void ddp_sync_exit(const char *trace_dir, int rank)
{
	if (__atomic_load_n(&stepped_aside, __ATOMIC_ACQUIRE)) {
		ddp_job_fini();
		return;
	}
	if (!ddp_sync_on_)
		return;
	pthread_mutex_lock(&sync_lock);
	uint64_t steps = ddp_grad_steps(tracker);
	uint64_t red = ddp_grad_reductions(tracker);
	double per = steps ? 1.0 / (double)steps : 0.0;
	DDP_INFO(GRAD, "sync summary: %" PRIu64 " optimizer steps, %" PRIu64 " gradient reductions "
		 "(%" PRIu64 " buffer allreduces, %" PRIu64 " bytes, %.3f ms; per step %.0f bytes, %.3f ms), "
		 "%" PRIu64 " parameter broadcasts (%" PRIu64 " bytes, %.3f ms), %" PRIu64 " signature checks, "
		 "%" PRIu64 " --check comparisons, %" PRIu64 " calibration launches",
		 steps, red, stats.allreduce_calls, stats.allreduce_bytes, stats.allreduce_ns / 1e6,
		 stats.allreduce_bytes * per, stats.allreduce_ns / 1e6 * per, stats.bcast_calls,
		 stats.bcast_bytes, stats.bcast_ns / 1e6, stats.sig_checks, stats.hash_checks,
		 stats.calibrations);
	if (trace_dir && *trace_dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/rank%d.sync.json", trace_dir, rank);
		FILE *f = DDP_SYS(fopen64)(path, "w");
		if (f) {
			fprintf(f, "{\"rank\":%d,\"world\":%d,\"steps\":%" PRIu64 ",\"reductions\":%" PRIu64
				   ",\"allreduce_calls\":%" PRIu64 ",\"allreduce_bytes\":%" PRIu64
				   ",\"allreduce_ms\":%.3f,\"broadcast_calls\":%" PRIu64 ",\"broadcast_bytes\":%" PRIu64
				   ",\"broadcast_ms\":%.3f,\"signature_checks\":%" PRIu64 ",\"hash_checks\":%" PRIu64
				   ",\"bytes_reduced_per_step\":%.0f,\"coll_ms_per_step\":%.3f,\"buffers\":[",
				rank, my_world, steps, red, stats.allreduce_calls, stats.allreduce_bytes,
				stats.allreduce_ns / 1e6, stats.bcast_calls, stats.bcast_bytes, stats.bcast_ns / 1e6,
				stats.sig_checks, stats.hash_checks, stats.allreduce_bytes * per,
				(stats.allreduce_ns + stats.bcast_ns) / 1e6 * per);
			int first = 1;
			for (size_t i = 0; i < ddp_grad_nbufs(tracker); i++) {
				const struct ddp_grad_buf *b = ddp_grad_buf_at(tracker, i);
				if (b->role != DDP_GR_GRAD && b->role != DDP_GR_PARAM)
					continue;
				fprintf(f, "%s{\"role\":\"%s\",\"label\":\"", first ? "" : ",",
					b->role == DDP_GR_GRAD ? "gradient" : "parameter");
				ddp_json_escape(f, b->label);
				fprintf(f, "\",\"bytes\":%" PRIu64 ",\"dtype\":\"%s\"}", b->size,
					b->role == DDP_GR_GRAD ? ddp_dtype_name((enum ddp_dtype)b->dtype) : "");
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
	ddp_job_fini();
}
