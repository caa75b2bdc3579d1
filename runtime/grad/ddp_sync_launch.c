/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_launch.c - the launch path: the cheap path (no lock, no decoding),
 * outputs declared by library calls, argument bounds, the locked path that
 * decodes a launch and hands it to the tracker.
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
#include "ddp_cycle.h"
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
#include "ddp_sync_int.h"

/* Kernel classes cached in ddp_kfunc.sync_class: 0 = not yet, else 1 + class. */


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
struct sync_fastcount sync_fastcount __attribute__((aligned(64)));

#define FAST_TICK 64 /* cheap launches per progress mark    */
/* initial-exec: a plain %fs-relative access, no __tls_get_addr call per launch */
static __thread uint32_t fast_tick __attribute__((tls_model("initial-exec")));

/* Every FAST_TICK cheap launches of a thread: training progress (ddprun's
 * --timeout and status board) and the count of cheap launches (summary). */
static void fast_progress(void) __attribute__((noinline, cold));
static void fast_progress(void)
{
	ddp_job_progress();
	__atomic_fetch_add(&sync_fastcount.n, FAST_TICK, __ATOMIC_RELAXED);
}

/* ---- the cheap path */

static int cmp_iv(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Publishes the gradients' allocations (sync_st.lock held). */
static void gsnap_rebuild(void)
{
	size_t nb = ddp_grad_nbufs(sync_st.tracker), n = 0;
	struct gsnap *g = malloc(sizeof *g + (nb ? nb : 1) * sizeof g->iv[0]);
	if (!g) {
		__atomic_store_n(&hot.ok, 0, __ATOMIC_RELEASE); /* no snapshot: the slow path */
		return;
	}
	for (size_t i = 0; i < nb; i++) {
		const struct ddp_grad_buf *b = ddp_grad_buf_at(sync_st.tracker, i);
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
 * (sync_st.lock held). */
static void fast_update(void)
{
	static uint64_t built_gen = UINT64_MAX;
	int ok = !sync_st.dry && sync_st.opt_seen && ddp_grad_steady(sync_st.tracker);
	if (ok && (!__atomic_load_n(&hot.ok, __ATOMIC_RELAXED) || ddp_grad_gen(sync_st.tracker) != built_gen)) {
		built_gen = ddp_grad_gen(sync_st.tracker);
		gsnap_rebuild();
	}
	__atomic_store_n(&hot.ok, ok && hot.snap, __ATOMIC_RELEASE);
}

/* The kernel's words that may hold a pointer, as ddp_launch_decode scans
 * them (sync_st.lock held, once per kernel). */
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

/* A write without a kernel of [dst, dst + reach) joins the launch stream's
 * history (ddp_cycle_host_write): whether it rewrote bytes a launch read
 * first (1), none (0); unknown counts as rewrote. */
static int host_write_rewrites(uint64_t dst, uint64_t reach)
{
	struct ddp_alloc_ent e;
	int r = 1;
	int known = dst && reach && ddp_alloc_find(dst, &e);
	pthread_mutex_lock(&sync_st.lock);
	if (sync_st.cycles && known)
		r = ddp_cycle_host_write(sync_st.cycles, e.id, dst, dst + reach) != 0;
	else if (sync_st.cycles)
		(void)ddp_cycle_host_write(sync_st.cycles, 0, 0, 0);
	pthread_mutex_unlock(&sync_st.lock);
	return r;
}

void ddp_sync_device_written(uint64_t dst, uint64_t reach)
{
	/* once an update is known the evidence is never asked: no shared
	 * counter on every copy of a training run */
	if (__atomic_load_n(&sync_st.opt_seen, __ATOMIC_RELAXED))
		return;
	/* before the first launch nothing was read: the write is start-up
	 * state, remembered so that a launch's read of it is a read of state */
	if (host_write_rewrites(dst, reach) && __atomic_load_n(&sync_st.stats.launches, __ATOMIC_RELAXED))
		__atomic_fetch_add(&sync_st.host_writes, 1, __ATOMIC_RELAXED);
}

const char *sync_host_writes_note(void)
{
	static char note[256];
	uint64_t n = __atomic_load_n(&sync_st.host_writes, __ATOMIC_RELAXED);
	if (!n)
		return "";
	snprintf(note, sizeof note,
		 "; after its first launch it wrote device memory %" PRIu64
		 " times without a kernel (copies, memsets): an update made on the host cannot be told from "
		 "new inputs, so it is not taken for an evaluation program",
		 n);
	return note;
}

/* The evidence of an evaluation program: no launch rewrote memory an
 * earlier one read (ddp_cycle_rewrote_any, over every launch this rank
 * made) and nothing wrote device memory without a kernel after the first
 * launch (ddp_sync_device_written).  *seen: the launches covered.  Under
 * sync_st.lock. */
int sync_no_update_evidence(struct ddp_cycle_report *rep, uint64_t *seen)
{
	*seen = 0;
	return sync_st.cycles && !__atomic_load_n(&sync_st.host_writes, __ATOMIC_RELAXED) &&
	       ddp_cycle_rewrote_any(sync_st.cycles, rep, seen) == 0 && *seen == sync_st.stats.launches;
}

void ddp_sync_copied(uint64_t dst, uint64_t src, uint64_t bytes)
{
	struct ddp_alloc_ent d, s;
	if (!ddp_sync_on_ || !sync_st.tracker || !bytes)
		return;
	if (!ddp_alloc_covers(dst, bytes, &d) || !ddp_alloc_covers(src, bytes, &s))
		return;
	/* a range straddling mapped pages (expandable segments) spans them */
	uint64_t dsz = dst + bytes - d.base > d.size ? dst + bytes - d.base : d.size;
	uint64_t ssz = src + bytes - s.base > s.size ? src + bytes - s.base : s.size;
	pthread_mutex_lock(&sync_st.lock);
	ddp_grad_copied(sync_st.tracker, dst, d.base, dsz, d.id, src, s.base, ssz, s.id, bytes);
	pthread_mutex_unlock(&sync_st.lock);
}

/* Inside a library call that declared its output: an argument pointing
 * into it (one allocation holds it all) covers exactly that output. */
static void libcall_bound(const struct ddp_kfunc *k, uint32_t n)
{
	uint64_t lo = libcall.lo, hi = libcall.hi;

	if (lo >= hi)
		return;
	for (uint32_t j = 0; j < n; j++) {
		struct ddp_grad_arg *g = &sync_st.args_buf[j];
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


/* The range each pointer argument covers, from the launch's integer
 * arguments and its grid (ddp_extent.h: one instance's count, or the union
 * over a grid-strided launch's instances); else the rest of the allocation
 * (ext 0).  Leaves the integer arguments in ints_buf (measured extents). */

static void bound_ranges(const struct ddp_kfunc *k, const struct ddp_launch_params *p, const unsigned grid[3],
			 uint32_t n)
{
	static struct ddp_extent_ptr ep[DDP_LAUNCH_MAX_ARGS];
	uint64_t *counts = sync_st.ints_buf;
	uint32_t nc = 0;

	sync_st.nints = 0;
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
	sync_st.nints = nc;
	if (n > DDP_LAUNCH_MAX_ARGS)
		n = DDP_LAUNCH_MAX_ARGS;
	for (uint32_t j = 0; j < n; j++) {
		const struct ddp_launch_arg *a = &sync_st.launch_buf.args[j];
		size_t es = ddp_dtype_size((enum ddp_dtype)sync_st.args_buf[j].dtype);
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
			sync_st.args_buf[j].ext = ep[j].ext;
			sync_st.args_buf[j].bounded = ep[j].bounded;
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
	uint64_t gen = ddp_grad_gen(sync_st.tracker);
	if (gen == seen_gen || sync_st.no_measure)
		return;
	seen_gen = gen;
	for (size_t i = 0, n = ddp_grad_nbufs(sync_st.tracker); i < n; i++) {
		const struct ddp_grad_buf *b = ddp_grad_buf_at(sync_st.tracker, i);
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
		sync_die(msg);
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
		__atomic_store_n(&sync_st.opt_seen, 1, __ATOMIC_RELAXED);
		return;
	}
	uint64_t now = ddp_now_ns();
	if (!sync_st.first_launch_ns) {
		sync_st.first_launch_ns = now;
		return;
	}
	if (sync_st.dry || sync_st.opt_wait_s <= 0 || now - sync_st.first_launch_ns < (uint64_t)sync_st.opt_wait_s * 1000000000ULL)
		return;
	snprintf(msg, sizeof msg,
		 "libddp: %" PRIu64 " kernel launches in %ld s and none was recognised as an "
		 "optimizer, so no gradient is averaged and the ranks train apart (the last kernel launched: %.100s); "
		 "the job stops (docs/gradient-sync.md, \"How ddprun stops\")%s",
		 sync_st.stats.launches, sync_st.opt_wait_s, k->demangled ? k->demangled : "?",
		 sync_st.torch_seen ? "; PyTorch optimizers built with foreach=False (one elementwise kernel per parameter) "
				   "are not recognised: use foreach=True or fused=True (the defaults on CUDA)"
				 : "");
	sync_die(msg);
}

/* Three steps rewrote persistent memory and no update was found
 * (ddp_cycle.h): the job stops before this launch, the third step's
 * rewrite, runs. */
static void no_update_stop(const struct ddp_cycle_report *r)
{
	char msg[1100];
	snprintf(msg, sizeof msg,
		 "libddp: no update of the parameters was found in the first %" PRIu64 " steps (a step: the %" PRIu64
		 " kernel launches the program repeats, from %.80s), yet each step rewrote memory it had read first, "
		 "as an update rewrites parameters (%.80s writes the %" PRIu64 " bytes at +%" PRIu64
		 " of allocation #%u that %.80s read): the ranks would train apart, so the job stops in step %" PRIu64
		 " before that write (docs/gradient-sync.md, \"How ddprun stops\")%s",
		 r->cycles, r->period, r->first ? r->first : "?", r->writer ? r->writer : "?", r->hi - r->lo,
		 r->lo - r->alloc_base, r->alloc_id, r->reader ? r->reader : "?", r->cycles,
		 sync_st.torch_seen ? "; PyTorch optimizers built with foreach=False are not recognised: use foreach=True or "
			      "fused=True (the defaults on CUDA; foreach=False runs one elementwise kernel per parameter)"
			    : "");
	sync_die(msg);
}

int ddp_sync_gate_open(void)
{
	return ddp_sync_on_ && !sync_st.dry &&
	       (!__atomic_load_n(&sync_st.opt_seen, __ATOMIC_RELAXED) ||
		__atomic_load_n(&sync_st.inv_pending, __ATOMIC_RELAXED));
}

void ddp_sync_file_written(const char *path)
{
	if (!path || !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6) || !strncmp(path, "/sys/", 5) ||
	    !__atomic_load_n(&sync_st.inv_pending, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&sync_st.lock);
	sync_inv_pending();
	pthread_mutex_unlock(&sync_st.lock);
}

void ddp_sync_output_open(const char *path)
{
	char msg[1400];
	struct ddp_cycle_report rep;
	uint64_t seen = 0;
	pthread_mutex_lock(&sync_st.lock);
	sync_inv_pending(); /* a check waiting for a step end acts before the file is written */
	if (!ddp_sync_gate_open() || !sync_st.stats.launches) {
		pthread_mutex_unlock(&sync_st.lock);
		return;
	}
	/* no launch so far rewrote memory that another had read (an
	 * evaluation or inference program writing its outputs): nothing
	 * trained apart yet; the cycles and the exit still watch */
	if (sync_no_update_evidence(&rep, &seen)) {
		DDP_DEBUG(GRAD,
			  "%s opened for writing after %" PRIu64 " launches, none of which rewrote memory another "
			  "had read (no update so far): let through",
			  path, seen);
		pthread_mutex_unlock(&sync_st.lock);
		return;
	}
	snprintf(msg, sizeof msg,
		 "libddp: the program opens %.300s for writing after %" PRIu64 " kernel launches, and "
		 "no update of its parameters was found among them (no optimizer kernel, and no launch that reads a "
		 "parameter and a gradient the way an update does; the last kernel launched: %.200s)%s: the ranks "
		 "would train apart, so the job stops before the file is written (docs/gradient-sync.md, \"Which "
		 "updates libddp finds\")",
		 path, sync_st.stats.launches, sync_st.cur_k && sync_st.cur_k->demangled ? sync_st.cur_k->demangled : "?",
		 sync_host_writes_note());
	sync_die(msg);
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
		cls = 1 + (sync_st.no_names ? (int)DDP_GK_OTHER
					    : (int)ddp_grad_classify(k->demangled, sync_st.opt_setting,
								     sync_st.reader_setting));
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
	pthread_mutex_lock(&sync_st.lock);
	sync_st.stats.launches++;
	if (!sync_st.train_ctx && ddp_driver_.ctxGetCurrent) {
		CUcontext cur = NULL;
		if (ddp_driver_.ctxGetCurrent(&cur) == CUDA_SUCCESS)
			sync_st.train_ctx = cur;
	}
	if (!sync_st.opt_seen)
		no_optimizer_check(k, cls);
	if (!k->sync_torch_state) {
		short_name(k, k->sync_kname, sizeof k->sync_kname);
		ddp_torch_launch_learn(k);
		sync_st.torch_seen |= k->sync_torch_state == DDP_XT_OK;
		k->sync_boundary = (uint8_t)(!sync_st.no_names && ddp_grad_is_boundary(k->demangled));
		if (k->sync_boundary) /* never skipped by the cheap path */
			__atomic_store_n(&k->sync_scan_state, 2, __ATOMIC_RELEASE);
	}
	if (cls == DDP_GK_OTHER && !k->sync_scan_state)
		scan_build(k);
	if (cls == DDP_GK_OTHER && !ddp_grad_active(sync_st.tracker)) {
		sync_st.cur_k = k; /* the last kernel launched, for the exit message */
		goto out_unlock;
	}

	uint32_t n = 0;
	struct ddp_grad_arg *args = sync_st.args_buf;
	uint32_t truncated = 0;
	int explicit_ranges = k->sync_torch_state == DDP_XT_OK;
	if (k->sync_torch_state == DDP_XT_REFUSE && cls != DDP_GK_OTHER) {
		char msg[700];
		snprintf(msg, sizeof msg,
			 "libddp: PyTorch kernel %.300s is a gradient consumer whose tensors libddp "
			 "cannot bound (an argument layout it does not know); its gradients would be averaged as "
			 "guesses, so the job stops: report the kernel name",
			 k->demangled);
		sync_die(msg);
	}
	if (explicit_ranges) {
		char why[300];
		ddp_result rc = ddp_torch_launch_args(k, c, cls != DDP_GK_OTHER, &sync_st.xargs, why, sizeof why);
		if (rc != DDP_OK) {
			if (cls != DDP_GK_OTHER) {
				char msg[900];
				snprintf(msg, sizeof msg,
					 "libddp: cannot read the tensors of %s kernel %.300s: %s",
					 cls == DDP_GK_OPT      ? "optimizer"
					 : cls == DDP_GK_READER ? "gradient-reader"
								: "gradient-consumer",
					 k->demangled, why);
				sync_die(msg);
			}
			DDP_DEBUG(GRAD, "%s: %s; its pointers are taken to their allocations' ends", k->sync_kname,
				  why);
			explicit_ranges = 0; /* the generic decoder: unbounded ranges */
		} else {
			args = sync_st.xargs.v;
			n = sync_st.xargs.n;
		}
	}
	if (!explicit_ranges) {
		struct ddp_launch_params p = { c->params, c->extra };
		ddp_result rc = ddp_launch_decode(k, &p, &sync_st.launch_buf);
		if (rc != DDP_OK) {
			if (cls != DDP_GK_OTHER) {
				char msg[600];
				snprintf(msg, sizeof msg,
					 "libddp: cannot decode the arguments of %s kernel %s (%s); its "
					 "gradients cannot be found",
					 cls == DDP_GK_OPT ? "optimizer" : "gradient-reader", k->demangled,
					 ddp_strerror(rc));
				sync_die(msg);
			}
			goto out_unlock;
		}
		n = sync_st.launch_buf.nargs;
		truncated = sync_st.launch_buf.truncated;
		for (uint32_t i = 0; i < n; i++) {
			const struct ddp_launch_arg *a = &sync_st.launch_buf.args[i];
			struct ddp_grad_arg *g = &sync_st.args_buf[i];
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
			g->outside = a->alloc.kind != DDP_ALLOC_PLAIN && a->alloc.kind != DDP_ALLOC_ASYNC;
			g->tlist = DDP_GRAD_NO_LIST;
			g->input = 0;
			g->host_set = 0;
			g->dtype = DDP_DT_UNKNOWN;
			if (k->types_known && !a->in_struct && a->param < k->nparams)
				g->dtype = k->params[a->param].dtype;
		}
		bound_ranges(k, &p, c->grid, n);
		libcall_bound(k, n);
	}
	if (sync_st.fused || sync_st.fused_kid) { /* until the first update step (ddp_fused.h) */
		struct ddp_grad_launch fl = { .kname = k->sync_kname, .kid = k->id, .kclass = (uint8_t)cls,
					      .nargs = n, .args = args, .truncated = truncated };
		if (sync_fused_launch(args, &fl))
			goto out_unlock; /* ddprun inspect: a fused update is no optimizer */
	}
	CUstream s = call_stream(c);
	if (cls == DDP_GK_OPT && !explicit_ranges && !sync_st.no_measure) {
		/* count-guessed extents of an optimizer launch: measured in the
		 * calibration steps, the rules learned apply after them */
		char msg[700];
		struct ddp_extent_probe pr = { NULL,     sync_op_read,   sync_op_write, sync_op_relaunch,
					       sync_op_drain, (void *)s, (void *)c };
		sync_st.check_stream = (void *)s;
		if (ddp_extent_measured(k->id, k->sync_kname, sync_st.ints_buf, sync_st.nints, sync_st.args_buf, n,
					ddp_grad_steps(sync_st.tracker) < 3, &pr, msg, sizeof msg) != DDP_OK)
			sync_die(msg);
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
		.seq = ++sync_st.launch_seq,
		.explicit_ranges = (uint8_t)explicit_ranges,
		.grad_list = explicit_ranges && !sync_st.no_names ? sync_st.xargs.grad_list : DDP_GRAD_NO_LIST,
		.boundary = k->sync_boundary,
	};
	sync_st.check_stream = (void *)s;
	sync_st.cur_k = k;
	sync_st.cur_call = c;
	const struct ddp_plan *plan = NULL;
	ddp_result rc = ddp_grad_launch(sync_st.tracker, &gl, &plan);
	if (!sync_st.opt_seen && ddp_grad_steps(sync_st.tracker)) /* an update found from the data flow */
		__atomic_store_n(&sync_st.opt_seen, 1, __ATOMIC_RELAXED);
	if (rc != DDP_OK) {
		const char *e = ddp_grad_last_error(sync_st.tracker);
		sync_die(e && *e ? e : "libddp: gradient tracking failed");
	}
	sync_exec_plan(plan); /* (the invariant check hashes cur_call's scalars) */
	sync_st.cur_call = NULL;
	if (sync_st.cycles) { /* no update known yet: the steps, from the stream's cycle */
		struct ddp_cycle_report rep;
		if (!sync_st.opt_seen && ddp_cycle_launch(sync_st.cycles, &gl, &rep))
			no_update_stop(&rep);
		if (sync_st.opt_seen || ddp_cycle_gave_up(sync_st.cycles)) {
			if (!sync_st.opt_seen)
				DDP_INFO(GRAD, "no repeating step found in the first %u launches: a job whose update is "
					       "not found stops at its first output file or at exit",
					 DDP_CYCLE_MAX_LAUNCHES);
			ddp_cycle_free(sync_st.cycles);
			sync_st.cycles = NULL;
		}
	}
	if (cls == DDP_GK_OPT)
		refuse_guessed_gradients();
	if (ddp_overlap_before(gl.seq, &gl))
		token = gl.seq;
	fast_update();
out_unlock:
	pthread_mutex_unlock(&sync_st.lock);
	ddp_port_own_end();
	return token;
}

void ddp_sync_launched(uint64_t token, const struct ddp_launch_call *c)
{
	uint64_t colls = 0, bytes = 0, t0 = ddp_now_ns();
	CUstream s = call_stream(c);
	ddp_port_own_begin();
	pthread_mutex_lock(&sync_st.lock);
	if (ddp_sync_on_) {
		uint64_t st = sync_reduce_step();
		ddp_status_coll_begin("allreduce"); /* ddprun sees who waits where */
		ddp_overlap_after(token, (void *)s, st, &colls, &bytes);
		ddp_status_coll_leave();
		sync_st.stats.allreduce_calls += colls;
		sync_st.stats.allreduce_bytes += bytes;
		sync_st.stats.allreduce_ns += ddp_now_ns() - t0;
		sync_account_step_bytes(st, bytes);
	}
	pthread_mutex_unlock(&sync_st.lock);
	ddp_port_own_end();
}
