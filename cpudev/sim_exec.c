/* SPDX-License-Identifier: MIT
 *
 * sim_exec.c - the CPU device's block and thread scheduler, and the runtime
 * entry points that host-compiled kernels call (sim_kernel.h).
 *
 * A launch runs its blocks one after the other on the calling OS thread.  A
 * block starts in LOOP mode: one fiber (the runner) calls the kernel for each
 * thread in turn, so a kernel without barriers costs one fiber switch per
 * block plus an indirect call per thread.  When a thread reaches a barrier
 * (__syncthreads, __syncwarp, a shuffle) the block turns into FIBER mode: the
 * threads that already ran have exited, the one at the barrier stays on the
 * runner, every thread not yet started gets its own fiber, and the block runs
 * in phases: each runnable thread runs until it reaches a barrier or returns;
 * then every warp whose live threads all wait at a warp barrier is released,
 * else, when all live threads wait at __syncthreads, the block is released.
 * Exited threads count as arrived (CUDA allows it).  A mix that can never be
 * released (some threads at __syncthreads, others at a warp barrier of a
 * warp that is not complete) is reported as a barrier mismatch.
 *
 * SIMCUDA_THREAD_ORDER=forward|reverse|random picks the order in which a
 * block's threads run between barriers (random: per block and phase, seeded
 * by SIMCUDA_SEED); reverse and random expose missing barriers.
 *
 * Contract: everything mutable is per OS thread (__thread); several stream
 * workers may run launches at once.  A worker keeps up to 1025 fibers (64 KiB
 * stacks, SIMCUDA_STACK_KB) created lazily and freed when the thread exits.
 * No allocation per launch in steady state (fibers and the block record are
 * reused).
 */
#include "sim_exec.h"
#include "sim_settings.h"
#include "sim_fiber.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- runtime state ----------------------------------------------------- */

/* The running launch's kernel-library thread state (threadIdx & co. of the
 * library that defines the kernel, entry->thread_state()) and block.  Both
 * are this file's own: the kernel library reaches the scheduler only through
 * sim_exec_runtime (handed over by sim_kernels.c at load). */
static __thread struct sim_thread_state *ts;
static __thread struct sim_block *cur_block;

/* ---- settings ---------------------------------------------------------- */

enum sim_order { ORDER_FORWARD, ORDER_REVERSE, ORDER_RANDOM };

static struct {
	int order;               /* enum sim_order                         */
	int bad;                 /* a setting was invalid: refuse launches */
	uint64_t seed;           /* SIMCUDA_SEED                           */
	size_t stack_bytes;      /* fiber stack size                       */
} settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static pthread_key_t worker_key;

static void worker_free(void *p);

static void settings_read(void)
{
	const char *o = sim_setting_thread_order();
	const char *s = sim_setting_seed();
	const char *k = sim_setting_stack_kb();
	char *end;

	settings.order = ORDER_FORWARD;
	if (o && *o) {
		if (!strcmp(o, "forward")) settings.order = ORDER_FORWARD;
		else if (!strcmp(o, "reverse")) settings.order = ORDER_REVERSE;
		else if (!strcmp(o, "random")) settings.order = ORDER_RANDOM;
		else {
			fprintf(stderr, "simcuda: SIMCUDA_THREAD_ORDER=%s is not one of forward, reverse, random\n", o);
			settings.bad = 1;
		}
	}
	settings.seed = 1;
	if (s && *s) {
		errno = 0;
		settings.seed = strtoull(s, &end, 0);
		if (errno || *end) {
			fprintf(stderr, "simcuda: SIMCUDA_SEED=%s is not an unsigned integer\n", s);
			settings.bad = 1;
		}
	}
	settings.stack_bytes = 64 * 1024;
	if (k && *k) {
		unsigned long kb;
		errno = 0;
		kb = strtoul(k, &end, 10);
		if (errno || *end || kb < 16 || kb > 65536) {
			fprintf(stderr, "simcuda: SIMCUDA_STACK_KB=%s is not a size in KiB between 16 and 65536\n", k);
			settings.bad = 1;
		} else {
			settings.stack_bytes = kb * 1024;
		}
	}
	if (pthread_key_create(&worker_key, worker_free) != 0)
		settings.bad = 1;
}

/* ---- per-worker state --------------------------------------------------- */

enum th_state {
	TH_NEW,        /* not started (fiber mode)                      */
	TH_RUNNABLE,   /* suspended, released from its barrier          */
	TH_AT_BLOCK,   /* waiting in __syncthreads                      */
	TH_AT_WARP,    /* waiting in a warp barrier                      */
	TH_EXITED,     /* returned (or never needs to run again)         */
};

enum block_mode { MODE_LOOP, MODE_FIBERS };

struct sim_block {
	const struct sim_kernel_entry *k;   /* the kernel and its arguments   */
	void *const *args;
	struct sim_dim3 bdim;               /* block shape, nthreads = product */
	unsigned nthreads;
	int mode;                           /* enum block_mode                */
	unsigned loop_pos;                  /* LOOP: position in order[]      */
	int trapped;                        /* a thread trapped: abandon      */
	const char *trap_why;
	struct sim_dim3 trap_tid;
	unsigned bar_gen;                   /* releases of __syncthreads      */
	unsigned acc[2], acc_n[2];          /* __syncthreads_count & co.      */
	uint8_t st[SIM_MAX_BLOCK_THREADS];  /* enum th_state per thread       */
	uint16_t order[SIM_MAX_BLOCK_THREADS]; /* run order (linear tids)     */
	uint16_t runq[SIM_MAX_BLOCK_THREADS];
	unsigned long long slots[SIM_MAX_BLOCK_THREADS]; /* warp exchange     */
	uint8_t vote[SIM_MAX_BLOCK_THREADS]; /* 2 = voted, 1 = predicate     */
};

struct sim_worker {
	struct sim_fiber *fiber[SIM_MAX_BLOCK_THREADS + 1]; /* [0] = runner   */
	struct sim_block block;
	uint64_t rng;
};

static __thread struct sim_worker *worker;
static __thread unsigned cur_tid;   /* linear index of the running thread */

static void worker_free(void *p)
{
	struct sim_worker *w = p;

	for (unsigned i = 0; i <= SIM_MAX_BLOCK_THREADS; i++)
		sim_fiber_destroy(w->fiber[i]);
	free(w);
	worker = NULL;
}

static struct sim_worker *worker_get(void)
{
	if (!worker) {
		worker = calloc(1, sizeof(*worker));
		if (!worker)
			return NULL;
		worker->rng = settings.seed * 0x9E3779B97F4A7C15ull + 1;
		pthread_setspecific(worker_key, worker);
	}
	return worker;
}

static struct sim_fiber *fiber_get(struct sim_worker *w, unsigned i)
{
	if (!w->fiber[i])
		w->fiber[i] = sim_fiber_create(settings.stack_bytes);
	return w->fiber[i];
}

static uint64_t rng_next(struct sim_worker *w)
{
	uint64_t x = w->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return w->rng = x;
}

static void shuffle(struct sim_worker *w, uint16_t *a, unsigned n)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned j = (unsigned)(rng_next(w) % i);
		uint16_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static inline void set_tid(const struct sim_block *b, unsigned t)
{
	struct sim_thread_state *s = ts;

	cur_tid = t;
	s->thread_idx.x = t % b->bdim.x;
	s->thread_idx.y = (t / b->bdim.x) % b->bdim.y;
	s->thread_idx.z = t / (b->bdim.x * b->bdim.y);
}

/* ---- fiber bodies ------------------------------------------------------- */

/* LOOP mode: every thread in order[] on this one fiber, until a barrier. */
static void runner_fn(void *arg)
{
	struct sim_block *b = arg;
	void (*const tramp)(void *const *) = b->k->trampoline;
	void *const *const args = b->args;
	struct sim_thread_state *const s = ts;

	if (settings.order == ORDER_FORWARD) {
		unsigned x = 0, y = 0, z = 0;
		for (unsigned t = 0; t < b->nthreads; t++) {
			cur_tid = t;
			s->thread_idx.x = x;
			s->thread_idx.y = y;
			s->thread_idx.z = z;
			b->loop_pos = t;
			tramp(args);
			if (b->mode != MODE_LOOP)
				return;
			if (++x == b->bdim.x) {
				x = 0;
				if (++y == b->bdim.y) {
					y = 0;
					z++;
				}
			}
		}
		return;
	}
	for (unsigned p = 0; p < b->nthreads; p++) {
		b->loop_pos = p;
		set_tid(b, b->order[p]);
		tramp(args);
		if (b->mode != MODE_LOOP)
			return;
	}
}

/* FIBER mode: one thread. */
static void thread_fn(void *arg)
{
	struct sim_block *b = arg;

	b->k->trampoline(b->args);
}

/* ---- barriers ----------------------------------------------------------- */

static struct sim_block *current_block(const char *what)
{
	struct sim_block *b = cur_block;

	if (!b || !sim_fiber_current()) {
		fprintf(stderr, "simcuda: %s called outside a kernel launch\n", what);
		abort();
	}
	return b;
}

/* The running thread waits in a barrier of kind st (TH_AT_BLOCK/TH_AT_WARP). */
static void barrier_wait(struct sim_block *b, int st)
{
	if (b->mode == MODE_LOOP) {
		/* Threads before us in order[] ran to completion; the rest start
		 * on their own fibers; we stay on the runner. */
		unsigned p = b->loop_pos;

		b->mode = MODE_FIBERS;
		for (unsigned i = 0; i < p; i++)
			b->st[b->order[i]] = TH_EXITED;
		for (unsigned i = p + 1; i < b->nthreads; i++)
			b->st[b->order[i]] = TH_NEW;
		memset(b->vote, 0, b->nthreads);
	}
	b->st[cur_tid] = (uint8_t)st;
	sim_fiber_yield();
}

static void sim_syncthreads(void)
{
	barrier_wait(current_block("__syncthreads"), TH_AT_BLOCK);
}

static int sim_syncthreads_op(int pred, int op)
{
	struct sim_block *b = current_block("__syncthreads_count/and/or");
	unsigned g = b->bar_gen & 1, c, n;

	b->acc[g] += pred != 0;
	b->acc_n[g]++;
	barrier_wait(b, TH_AT_BLOCK);
	c = b->acc[g];
	n = b->acc_n[g];
	switch (op) {
	case 0: return (int)c;          /* count */
	case 1: return c == n;          /* and   */
	default: return c != 0;         /* or    */
	}
}

static void sim_syncwarp(void)
{
	barrier_wait(current_block("__syncwarp"), TH_AT_WARP);
}

static unsigned long long *sim_warp_slots(void)
{
	return current_block("a warp function")->slots;
}

/* Ballot: low 32 bits the lanes whose predicate is true, high 32 bits the
 * lanes that took part (live threads of the warp). */
static unsigned long long sim_warp_vote(int pred)
{
	struct sim_block *b = current_block("a warp vote");
	unsigned t = cur_tid, w0 = t & ~31u, ballot = 0, part = 0;

	b->vote[t] = (uint8_t)(2 | (pred != 0));
	barrier_wait(b, TH_AT_WARP);
	for (unsigned l = 0; l < 32 && w0 + l < b->nthreads; l++) {
		part |= (unsigned)(b->vote[w0 + l] >> 1) << l;
		ballot |= (unsigned)(b->vote[w0 + l] & 1) << l;
	}
	barrier_wait(b, TH_AT_WARP);
	b->vote[t] = 0;
	return (unsigned long long)part << 32 | ballot;
}

static unsigned sim_linear_tid(void)
{
	return cur_tid;
}

static void sim_trap(const char *why)
{
	struct sim_block *b = cur_block;

	if (!b || !sim_fiber_current()) {
		fprintf(stderr, "simcuda: %s outside a kernel launch\n", why);
		abort();
	}
	b->trapped = 1;
	b->trap_why = why;
	b->trap_tid = ts->thread_idx;
	sim_fiber_exit();
}

/* What sim_kernels.c hands each kernel library (sim_kernel_table.bind). */
const struct sim_runtime sim_exec_runtime = {
	.abi_version = SIM_KERNEL_ABI_VERSION,
	.size = sizeof(struct sim_runtime),
	.syncthreads = sim_syncthreads,
	.syncthreads_op = sim_syncthreads_op,
	.syncwarp = sim_syncwarp,
	.warp_slots = sim_warp_slots,
	.warp_vote = sim_warp_vote,
	.linear_tid = sim_linear_tid,
	.trap = sim_trap,
};

/* ---- the block scheduler ------------------------------------------------ */

/* Drops every suspended fiber of the block (after a trap). */
static void block_abandon(struct sim_worker *w, struct sim_block *b)
{
	sim_fiber_start(w->fiber[0], runner_fn, b);
	if (b->mode == MODE_FIBERS)
		for (unsigned t = 0; t < b->nthreads; t++)
			if (w->fiber[t + 1])
				sim_fiber_start(w->fiber[t + 1], thread_fn, b);
}

/* The fiber that carries thread t in FIBER mode. */
static struct sim_fiber *thread_fiber(struct sim_worker *w, struct sim_block *b, unsigned t)
{
	return t == b->order[b->loop_pos] ? w->fiber[0] : w->fiber[t + 1];
}

/* Releases what can be released; 1 = progress, 0 = nothing live, -1 = stuck. */
static int block_release(struct sim_block *b)
{
	unsigned live = 0, at_block = 0, released = 0;

	for (unsigned w0 = 0; w0 < b->nthreads; w0 += 32) {
		unsigned end = w0 + 32 < b->nthreads ? w0 + 32 : b->nthreads;
		unsigned wl = 0, ww = 0;
		for (unsigned t = w0; t < end; t++) {
			if (b->st[t] == TH_EXITED)
				continue;
			wl++;
			ww += b->st[t] == TH_AT_WARP;
			at_block += b->st[t] == TH_AT_BLOCK;
		}
		live += wl;
		if (wl && ww == wl) {
			for (unsigned t = w0; t < end; t++)
				if (b->st[t] == TH_AT_WARP)
					b->st[t] = TH_RUNNABLE;
			released = 1;
		}
	}
	if (!live)
		return 0;
	if (released)
		return 1;
	if (at_block == live) {
		for (unsigned t = 0; t < b->nthreads; t++)
			if (b->st[t] == TH_AT_BLOCK)
				b->st[t] = TH_RUNNABLE;
		b->bar_gen++;
		b->acc[b->bar_gen & 1] = 0;
		b->acc_n[b->bar_gen & 1] = 0;
		return 1;
	}
	return -1;
}

static int block_run_fibers(struct sim_worker *w, struct sim_block *b)
{
	for (;;) {
		unsigned n = 0;
		int r;

		for (unsigned i = 0; i < b->nthreads; i++) {
			unsigned t = b->order[i];
			if (b->st[t] == TH_NEW || b->st[t] == TH_RUNNABLE)
				b->runq[n++] = (uint16_t)t;
		}
		if (settings.order == ORDER_RANDOM)
			shuffle(w, b->runq, n);
		for (unsigned i = 0; i < n; i++) {
			unsigned t = b->runq[i];
			struct sim_fiber *f;

			if (b->st[t] == TH_NEW) {
				f = fiber_get(w, t + 1);
				if (!f) {
					b->trap_why = "out of memory for fiber stacks";
					return -1;
				}
				sim_fiber_start(f, thread_fn, b);
			} else {
				f = thread_fiber(w, b, t);
			}
			b->st[t] = TH_RUNNABLE;
			set_tid(b, t);
			if (sim_fiber_resume(f))
				b->st[t] = TH_EXITED;
			if (b->trapped)
				return -1;
		}
		r = block_release(b);
		if (r == 0)
			return 0;
		if (r < 0) {
			b->trap_why = "barrier mismatch: some threads wait in __syncthreads while others of an incomplete warp wait in a warp barrier (__syncwarp/__shfl*)";
			b->trap_tid = (struct sim_dim3){0, 0, 0};
			return -1;
		}
	}
}

static int block_run(struct sim_worker *w, struct sim_block *b)
{
	struct sim_fiber *runner = fiber_get(w, 0);

	if (!runner) {
		b->trap_why = "out of memory for fiber stacks";
		return -1;
	}
	b->mode = MODE_LOOP;
	b->trapped = 0;
	b->bar_gen = 0;
	b->acc[0] = b->acc_n[0] = 0;
	if (settings.order == ORDER_RANDOM)
		shuffle(w, b->order, b->nthreads);
	sim_fiber_start(runner, runner_fn, b);
	if (sim_fiber_resume(runner))
		return b->trapped ? -1 : 0;
	if (b->trapped)
		return -1;
	/* The thread at order[loop_pos] waits in a barrier: fiber mode. */
	return block_run_fibers(w, b);
}

static int dims_ok(const struct sim_kernel_entry *k, struct sim_dim3 g, struct sim_dim3 bl,
		   unsigned dyn)
{
	const char *name = k->signature ? k->signature : k->mangled;
	unsigned long long n = (unsigned long long)bl.x * bl.y * bl.z;

	if (!bl.x || !bl.y || !bl.z || bl.x > 1024 || bl.y > 1024 || bl.z > 64 ||
	    n > SIM_MAX_BLOCK_THREADS) {
		fprintf(stderr, "simcuda: launch of %s: block (%u,%u,%u) is invalid "
			"(each dimension >= 1, x,y <= 1024, z <= 64, at most %u threads)\n",
			name, bl.x, bl.y, bl.z, SIM_MAX_BLOCK_THREADS);
		return 0;
	}
	if (!g.x || !g.y || !g.z || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
		fprintf(stderr, "simcuda: launch of %s: grid (%u,%u,%u) is invalid "
			"(each dimension >= 1, x <= 2^31-1, y,z <= 65535)\n", name, g.x, g.y, g.z);
		return 0;
	}
	if (dyn > SIM_DYN_SHARED_MAX) {
		fprintf(stderr, "simcuda: launch of %s: %u bytes of dynamic shared memory, "
			"the CPU device has %u\n", name, dyn, SIM_DYN_SHARED_MAX);
		return 0;
	}
	return 1;
}

int sim_exec_launch(const struct sim_kernel_entry *k, struct sim_dim3 grid,
		    struct sim_dim3 block, unsigned dyn_shared_bytes,
		    void *const *args)
{
	struct sim_worker *w;
	struct sim_block *b;
	int rc = 0;

	pthread_once(&settings_once, settings_read);
	if (settings.bad) {
		fprintf(stderr, "simcuda: launch refused because of the invalid setting above\n");
		return 1;
	}
	if (!k || !k->trampoline || !k->thread_state) {
		fprintf(stderr, "simcuda: launch of a kernel without host code\n");
		return 1;
	}
	if (!dims_ok(k, grid, block, dyn_shared_bytes))
		return 1;
	if (sim_fiber_current()) {
		fprintf(stderr, "simcuda: launch of %s from inside a kernel is not supported\n",
			k->signature ? k->signature : k->mangled);
		return 1;
	}
	w = worker_get();
	if (!w) {
		fprintf(stderr, "simcuda: out of memory for the launch of %s\n", k->mangled);
		return 1;
	}
	b = &w->block;
	b->k = k;
	b->args = args;
	b->bdim = block;
	b->nthreads = block.x * block.y * block.z;
	for (unsigned i = 0; i < b->nthreads; i++)
		b->order[i] = (uint16_t)(settings.order == ORDER_REVERSE ? b->nthreads - 1 - i : i);

	/* The kernel library's threadIdx & co. for this OS thread: the same
	 * address for every fiber of the launch (fibers share the thread). */
	ts = k->thread_state();
	ts->block_dim = block;
	ts->grid_dim = grid;
	ts->dyn_shared = NULL;
	ts->block_ctx = b;
	cur_block = b;
	for (unsigned z = 0; z < grid.z && !rc; z++)
		for (unsigned y = 0; y < grid.y && !rc; y++)
			for (unsigned x = 0; x < grid.x && !rc; x++) {
				ts->block_idx = (struct sim_dim3){x, y, z};
				if (block_run(w, b) != 0) {
					fprintf(stderr, "simcuda: kernel %s stopped: %s in block (%u,%u,%u) "
						"thread (%u,%u,%u)\n",
						k->signature ? k->signature : k->mangled,
						b->trap_why ? b->trap_why : "error", x, y, z,
						b->trap_tid.x, b->trap_tid.y, b->trap_tid.z);
					block_abandon(w, b);
					rc = 1;
				}
			}
	cur_block = NULL;
	ts = NULL;
	return rc;
}
