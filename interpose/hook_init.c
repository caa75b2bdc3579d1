/* SPDX-License-Identifier: MIT
 *
 * hook_init.c - libddp.so's one start-up path, and its exit.
 *
 * Almost nothing happens when the library is loaded: the one constructor
 * only marks, on ddprun's status board, that the rank's image has libddp
 * (ddp_status_mark_image: getenv, prctl, one raw pwrite; again at exit, by
 * atexit), so that ddprun can tell a rank whose wrapper dropped
 * LD_PRELOAD; dlsym never initialises.  Start-up runs in two stages, in this order, each
 * once per process, from whichever hook comes first:
 *
 *   files   (hook_file_init: the first hooked libc call, or the first cu*
 *           call, which runs it first) the real libc table (the port's
 *           ddp_libc_), logs, settings, rank, the sharded files, write
 *           redirection.  Cheap and safe inside any libc call: no driver,
 *           no threads, no sockets.
 *   driver  (ddp_init_once: the first cu* call, any thread, pthread_once)
 *           the real driver's symbols and the port's driver table, counters,
 *           the allocation table, the kernel registry, the trace file, the
 *           inspector, the exit handler, then gradient synchronisation
 *           (joins the job).  Other threads wait in pthread_once; the
 *           initialising thread's own nested hook calls (if the driver calls
 *           back) are forwarded untracked.
 *
 * At exit (atexit, only when the driver stage ran): the inspector's report,
 * the summary (stderr at info level; DIR/rank<k>.summary.json with
 * DDP_TRACE=DIR) and the trace file's closing.  Not in the child of a fork()
 * of the program (pthread_atfork): those files and the job are the parent's.
 *
 * Contract: ddp_ready_ is published (release) after every setting the fast
 * path reads is final.  hook_file_init returns at once when called back from
 * inside its own stage (hook_file_ready() is then false and the caller passes
 * through to libc); it preserves errno (it runs inside the program's call).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hook.h"
#include "hook_launch.h"
#include "hook_module.h"
#include "hook_port.h"
#include "hook_resolve.h"
#include "hook_file.h"
#include "ddp_alloc.h"
#include "hook_init.h"
#include "ddp_inspect.h"
#include "ddp_params.h"
#include "ddp_status.h"
#include "ddp_summary.h"
#include "ddp_waits.h"
#include "ddp_sync.h"
#include "ddp_trace.h"
#include "ddp_rank.h"

int ddp_ready_;
int hook_timing_all_;
int hook_tracing_;
int hook_log_calls_;
uint32_t hook_sample_mask_ = UINT32_MAX;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int init_running;
static int init_rank, init_world = 1;

/* ---- files stage ---------------------------------------------------- */

static int files_state; /* 0 not started, 1 running, 2 done */
static __thread int files_running;
static int rank_ok; /* ddp_rank_init accepted the variables */
static pid_t memory_pid; /* the process this memory belongs to (0: not yet known) */

static void files_fork_child(void)
{
	memory_pid = getpid();
}

int hook_memory_borrowed(void)
{
	pid_t owner = __atomic_load_n(&memory_pid, __ATOMIC_RELAXED);
	return owner && getpid() != owner;
}

static void files_stage(void)
{
	const struct ddp_rank_info *ri;

	hook_libc_resolve();
	memory_pid = getpid();
	if (pthread_atfork(NULL, NULL, files_fork_child) != 0)
		memory_pid = 0; /* without it a fork child could not be told from vfork's */
	(void)ddp_log_init("libddp");
	(void)ddp_params_init();
	rank_ok = ddp_rank_init() == DDP_OK;
	if (!rank_ok)
		DDP_ERROR("rank variables are malformed; files are neither sharded nor redirected");
	ri = ddp_rank_get();
	if (strcmp(ri->source, "none") != 0)
		ddp_log_set_rank(ri->rank);
	if (ri->world_size >= 1)
		hook_shard_setup();
	hook_write_setup();
}

void hook_file_init(void)
{
	int expect = 0;

	if (__atomic_load_n(&files_state, __ATOMIC_ACQUIRE) == 2 || files_running)
		return;
	if (__atomic_compare_exchange_n(&files_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		int saved = errno;

		files_running = 1;
		files_stage();
		files_running = 0;
		errno = saved;
		__atomic_store_n(&files_state, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&files_state, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
}

int hook_file_ready(void)
{
	return __atomic_load_n(&files_state, __ATOMIC_ACQUIRE) == 2;
}

/* ---- driver stage --------------------------------------------------- */

int ddp_init_rank(void)
{
	return init_rank;
}

int ddp_init_world_size(void)
{
	return init_world;
}

/* Rank and world size, from the files stage's rank info; RANK/WORLD_SIZE
 * as they are when that info was refused. */
static void read_rank(void)
{
	if (rank_ok) {
		const struct ddp_rank_info *ri = ddp_rank_get();
		init_rank = ri->rank;
		init_world = ri->world_size;
		return;
	}
	const char *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
	init_rank = r ? atoi(r) : 0;
	init_world = w ? atoi(w) : 1;
	if (init_rank < 0)
		init_rank = 0;
	if (init_world < 1)
		init_world = 1;
}

static const char *hook_name_of(unsigned id)
{
	return id < HOOK_COUNT ? hook_info_[id].name : "?";
}

/* Set in the child of the program's fork() (pthread_atfork).  The child is
 * no rank: the parent writes the trace, the summary, the inspector's report
 * and leaves the job; the child's exit must not touch them. */
static volatile sig_atomic_t forked_child;

static void ddp_fork_child(void)
{
	forked_child = 1;
	ddp_trace_fork_child();
	ddp_status_fork_child();
}

/* An exiting thread's counters were folded and are freed: its next hook
 * call (from a later TLS destructor) allocates new ones. */
static void stats_forget(void)
{
	hook_tls_.stats = NULL;
	hook_launch_flush(); /* its pending launch counts (hook_launch.c) */
}

static void ddp_exit(void)
{
	if (forked_child)
		return;
	hook_inside_enter();
	hook_launch_flush(); /* this thread's pending launch counts, before the summary */
	int sync_failed = ddp_sync_exit(ddp_param_trace(), init_rank);
	ddp_inspect_write();
	ddp_sync_explain(ddp_param_inspect());
	ddp_summary_emit(ddp_param_trace(), init_rank, init_world, hook_name_of, HOOK_COUNT);
	ddp_waits_report();
	ddp_trace_close();
	hook_inside_leave();
	if (sync_failed) {
		/* a rank that did not train as one model with the others must not
		 * exit 0 (ddp_sync_exit said why) */
		fflush(NULL);
		_exit(1);
	}
}

/* Under ddprun (DDPRUN_JOB_ID is the job's marker) a process that reaches
 * the driver without a valid rank identity lost it on the way (`env -u
 * RANK`, a wrapper that keeps some variables): it would train alone,
 * unsharded and unsynchronised, and exit 0.  It stops instead, one line.
 * DDP_SYNC=off asks for exactly that, and is left alone. */
static void check_identity(void)
{
	const char *job = getenv("DDPRUN_JOB_ID");
	if (!job || !*job || ddp_param_sync() == 2)
		return;
	if (rank_ok && strcmp(ddp_rank_get()->source, "none") != 0)
		return;
	DDP_ERROR("libddp: this process runs under ddprun (DDPRUN_JOB_ID is set) but its rank variables are "
		  "%s (RANK=%s WORLD_SIZE=%s): something between ddprun and the program removed them (env -u, "
		  "a wrapper that rebuilds the environment), so it would train alone; pass them through "
		  "(DDP_SYNC=off trains each rank alone on purpose)",
		  rank_ok ? "missing" : "malformed", getenv("RANK") ? getenv("RANK") : "<unset>",
		  getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "<unset>");
	fflush(NULL);
	_exit(1);
}

__attribute__((constructor)) static void ddp_loaded(void)
{
	ddp_status_mark_image();
	/* again at exit: a program that renamed itself ends with its new comm */
	(void)atexit(ddp_status_mark_image);
}

static void ddp_init(void)
{
	init_running = 1;
	hook_inside_enter();
	hook_file_init();
	check_identity();
	read_rank();
	if (init_world > 1 || getenv("RANK"))
		ddp_log_set_rank(init_rank);
	hook_resolve_all();
	hook_port_fill();
	ddp_waits_install(); /* before anything copies the table's entries */
	ddp_stats_init(stats_forget);
	if (ddp_alloc_init((size_t)ddp_param_alloc_max()) != DDP_OK)
		DDP_WARN("allocation table unavailable: allocations are not tracked");
	hook_module_init();

	long sample = ddp_param_hook_sample();
	if (sample <= 0) {
		hook_sample_mask_ = UINT32_MAX;
	} else {
		uint32_t p = 1;
		while (p < (uint32_t)sample)
			p <<= 1;
		hook_sample_mask_ = p - 1;
	}
	const char *dir = ddp_param_trace();
	if (dir && *dir && ddp_trace_open(dir, init_rank, (size_t)ddp_param_trace_buffer()) == DDP_OK)
		hook_tracing_ = 1;
	hook_log_calls_ = DDP_LOG_ON(DDP_LOG_TRACE, DDP_SUB_HOOK);
	hook_timing_all_ = hook_tracing_ || hook_log_calls_;
	ddp_inspect_init(ddp_param_inspect(), ddp_param_inspect_steps());
	hook_launch_observe_ = ddp_inspect_enabled() || DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_LAUNCH);
	atexit(ddp_exit);
	if (pthread_atfork(NULL, NULL, ddp_fork_child) != 0)
		DDP_WARN("pthread_atfork failed: a forked child of this program may write "
			 "into this rank's trace and summary");
	/* gradient synchronisation (world > 1): joins the job, may exit */
	ddp_sync_init(init_rank, init_world);
	DDP_INFO(INIT, "libddp ready: rank %d of %d, %d hooks, driver %s", init_rank, init_world,
		 (int)HOOK_COUNT, ddp_param_cuda_lib());
	hook_inside_leave();
	init_running = 0;
	__atomic_store_n(&ddp_ready_, 1, __ATOMIC_RELEASE);
}

void ddp_init_once(void)
{
	if (init_running)
		return; /* a hook called back during init: forwarded untracked */
	pthread_once(&init_once, ddp_init);
}
