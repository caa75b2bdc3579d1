/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_int.h - the synchronisation glue's insides, shared by its files
 * (ddp_sync.h has the interface):
 *   ddp_sync.c         the state, the fatal path, helpers (the signature
 *                      check, tracing), settings and init;
 *   ddp_sync_exec.c    the executor: carries out each plan the tracker
 *                      returns (ddp_plan.h), in order;
 *   ddp_sync_coll.c    what it issues (collectives, copies), the tracker's
 *                      measurement callbacks, what the overlap layer needs;
 *   ddp_sync_check.c   checks: --check hashes, the data-parallel invariant,
 *                      step begin and end;
 *   ddp_sync_launch.c  the launch path: the cheap path, library calls'
 *                      outputs, argument bounds, the locked path;
 *   ddp_sync_exit.c    stepping aside, the exit report, ddprun inspect's
 *                      roles;
 *   ddp_sync_input.c   do the ranks copy different input to the device
 *                      (the compare at step 2, --shard's warning).
 * Names shared across these files carry the sync_ prefix; nothing here is
 * exported from libddp.so (hidden visibility).
 *
 * Contract: as ddp_sync.c's: sync_st.lock serialises everything but the cheap
 * path.
 */
#ifndef DDP_SYNC_INT_H
#define DDP_SYNC_INT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include "ddp_fused.h"
#include "ddp_grad.h"
#include "ddp_kreg.h"
#include "ddp_launch.h"
#include "ddp_port.h"
#include "ddp_torch_launch.h"
#include "ddp_xrank.h"

struct sync_stats {
	uint64_t allreduce_calls, allreduce_bytes, allreduce_ns;
	uint64_t bcast_calls, bcast_bytes, bcast_ns;
	uint64_t sig_checks, hash_checks, calibrations;
	uint64_t hash_ns; /* parameter checks and the final compare */
	uint64_t inv_checks, inv_bytes, inv_ns; /* the invariant check    */
	uint64_t step_first_ns, step_last_ns;
	uint64_t launches;    /* seen with sync on      */
	uint64_t *step_bytes; /* bytes averaged, by step */
	size_t nstep_bytes;
};

/* ddp_sync.c */
void sync_check_sig(struct ddp_comm *c, const char *kind, const char *sig, uint64_t h);
ddp_result sync_coll_fail(ddp_result rc, const char *what);
CUstream sync_the_stream(void *s);
void sync_trace_coll(const char *name, uint64_t t0, uint64_t bytes, const char *what);
void sync_die(const char *msg) __attribute__((noreturn));

/* ddp_sync_check.c: 64-bit hash of bytes, eight at a time (large buffers),
 * the same on every rank; chain by passing the previous result as h. */
uint64_t sync_hash_bytes(uint64_t h, const unsigned char *p, size_t n);
/* ddp_sync_exit.c: steps aside when the program's own rendezvous came
 * before synchronisation was on (ddp_sync_program_rendezvous) */
void sync_aside_pending(void);
/* ddp_sync_input.c: the end of update phase `step` (windows, the compare) */
void sync_input_step_end(uint64_t step);

/* ddp_sync_launch.c: the evidence that no update ran (an evaluation
 * program): 1 and *seen (launches covered) when it holds */
struct ddp_cycle_report;
int sync_no_update_evidence(struct ddp_cycle_report *rep, uint64_t *seen);
/* "" or a clause saying why host writes withhold that evidence */
const char *sync_host_writes_note(void);

/* ddp_sync_fused.c: before launch L reaches the tracker, while no update
 * step is known: its input arguments marked (ddp_grad_arg.input), and a
 * fused update stops the job (ddprun inspect: recorded, and 1 returned:
 * the tracker does not see the launch); else 0.  Under sync_st.lock. */
int sync_fused_launch(struct ddp_grad_arg *args, const struct ddp_grad_launch *L);
/* ddprun inspect's "Fused updates" section; 1 when it named one */
int sync_fused_explain(FILE *f);

/* ddp_sync_check.c: the invariant's hashes of a checked step compared now,
 * before its end (a file opened for writing while they wait: a step whose
 * end may never come).  Under sync_st.lock. */
void sync_inv_pending(void);

/* ddp_sync_exec.c: the one executor of the tracker's plans (ddp_plan.h);
 * a failure stops the rank */
void sync_exec_plan(const struct ddp_plan *p);
/* ddprun inspect's "Plan" section: what the executor did in steps 1-2 */
void sync_exec_explain(FILE *f);

/* ddp_sync_coll.c: what the executor issues */
void sync_account_step_bytes(uint64_t st, uint64_t bytes);
ddp_result sync_do_allreduce(struct ddp_grad_buf *const *bufs, size_t n, void *stream);
ddp_result sync_do_broadcast(struct ddp_grad_buf *const *bufs, size_t n, void *stream);
ddp_result sync_do_copy(uint64_t dst, uint64_t src, uint64_t bytes, void *stream);
ddp_result sync_do_reduce(struct ddp_grad_buf *const *bufs, size_t n, void *stream);
int sync_reduce_overlapped(void);
/* ... and the tracker's measurement callbacks (struct ddp_grad_ops) */
int sync_op_alive(void *ctx, const struct ddp_grad_buf *b);
ddp_result sync_op_drain(void *ctx);
ddp_result sync_op_read(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream);
ddp_result sync_op_relaunch(void *ctx, void *launch_ctx);
ddp_result sync_op_write(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream);
int sync_ov_alive(const struct ddp_grad_buf *b);
void sync_ov_coll_fail(ddp_result rc, const char *what);
uint64_t sync_reduce_step(void);

/* ddp_sync_check.c */
ddp_result sync_op_opt_reads(void *ctx, const struct ddp_grad_launch *L, uint64_t step,
			       const struct ddp_grad_read *r, size_t n);
ddp_result sync_op_step_begin(void *ctx, uint64_t step);
ddp_result sync_op_step_end(void *ctx, uint64_t step);
/* The final compare (every parameter and state range across ranks, once;
 * ddp_sync_freeing, ddp_sync_exit): 1 and *msg on a difference. */
int sync_final_compare(uint64_t steps, char *msg, size_t cap);

/* One range the optimizer read at a checked step (the invariant check). */
struct inv_item {
	uint64_t hash, bytes, off;
	uint32_t alloc_id;
	uint16_t param, word; /* word 0xffff: scalar argument `param`         */
	uint32_t kid;         /* the launch's kernel                         */
	uint8_t role;         /* enum ddp_grad_role (NONE: no record)       */
	char kname[48];
	char label[112];
};

/* The glue's state: one struct, defined in ddp_sync.c.  sync_st.lock
 * guards all of it except the settings (written once by ddp_sync_init
 * before any launch reaches the glue, read-only afterwards), opt_seen and
 * stepped_aside (atomic; read without the lock).  Outside it, on purpose:
 * the cheap path's lock-free objects (ddp_sync_launch.c: hot, and
 * sync_fastcount below, a cache line each), the per-thread values
 * (fast_tick, libcall: __thread) and ddp_sync_on_ (ddp_sync.h). */
struct sync_state {
	pthread_mutex_t lock; /* serialises everything below the launch hooks */

	/* settings: ddp_sync_init (ddp_sync.c) */
	struct ddp_grad *tracker;
	const char *opt_setting, *reader_setting;
	long check_every;
	int my_rank, my_world;
	int dry;          /* ddprun inspect: no collectives      */
	int check_inv;    /* DDP_CHECK_INVARIANT                 */
	long skip_avg;    /* DDP_DEBUG_SKIP_AVG (-1: none)       */
	int no_measure;   /* DDP_DEBUG_NO_MEASURE                */
	int no_names;     /* DDP_DEBUG_NO_NAMES: names decide nothing */
	long opt_wait_s;  /* DDP_OPT_WAIT                        */
	int overlap_mode; /* DDP_OVERLAP: 0 auto, 1 on, 2 off    */
	uint64_t bucket_bytes; /* DDP_BUCKET_MB in bytes (both reduction paths) */
	CUresult (*real_sync)(CUstream);
	CUresult (*real_ctx_sync)(void);
	struct ddp_cycle *cycles; /* the steps while no update is known (ddp_cycle.h) */
	struct ddp_fused *fused;  /* host-set bytes and fused updates until the first
				   * update step (ddp_fused.h; ddp_sync_fused.c)   */
	struct ddp_fused_report fused_rep; /* ddprun inspect: the first fused update */
	uint64_t fused_launches;           /* ddprun inspect: launches judged fused  */
	uint32_t fused_kid;                /* ddprun inspect: their kernel, +1       */

	/* counters: every file, under the lock; reported by ddp_sync_exit.c */
	struct sync_stats stats;

	/* the step: ddp_sync_check.c's step callbacks, ddp_sync_exit.c */
	uint64_t cur_step;
	int phase_open; /* between step_begin and step_end     */
	int at_exit;    /* ddp_sync_exit / the final compare end the run */
	int final_done; /* the final compare ran (ddp_sync_check.c) */
	int final_differs; /* ... and found ranks that differ */

	/* the context of the first launch the tracker saw (ddp_sync_launch.c):
	 * the parameters' context, for ddp_sync_ctx_going (ddp_sync_exit.c) */
	void *train_ctx;

	/* the launch being processed: ddp_sync_launch.c (the callbacks read it) */
	struct ddp_kfunc *cur_k;
	const struct ddp_launch_call *cur_call;
	void *check_stream;  /* its stream (per-thread default resolved) */
	uint64_t launch_seq; /* launches handed to the tracker      */
	int torch_seen;      /* a PyTorch kernel was decoded        */
	int opt_seen;        /* an optimizer kernel was launched (atomic) */
	uint64_t first_launch_ns;
	struct ddp_launch launch_buf;
	struct ddp_grad_arg args_buf[DDP_LAUNCH_MAX_ARGS];
	struct ddp_xargs xargs; /* explicit launches' tensors (grows)  */
	uint64_t ints_buf[16];  /* the launch's integer arguments (0: <= 0) */
	uint32_t nints;

	/* the cross-rank compares' last two rounds, per check (ddp_sync_check.c) */
	uint64_t xr_prev[DDP_XR_NCHECKS][2];

	/* the collective signature cache: sync_check_sig (ddp_sync.c) */
	uint64_t *sigs_seen;
	size_t nsigs, sigcap;

	/* the invariant check: ddp_sync_check.c */
	struct inv_item *inv;
	size_t ninv, invcap;
	uint64_t inv_step; /* the step inv[] belongs to           */
	uint64_t inv_done; /* a step compared before its end: at a repeated
			    * launch or a file open (sync_inv_pending)    */
	int inv_pending;   /* inv[] holds hashes not compared yet (atomic) */
	pthread_t inv_thread; /* the thread that hashed them: only its own
			       * file opens compare them (another thread's
			       * open meets each rank at another point)   */
	const struct ddp_grad_read *sort_reads; /* cmp_read's (qsort) */

	/* ddprun inspect: the plans of steps 1 and 2 as text (ddp_sync_exec.c) */
	char *plan_text;
	size_t nplan_text, plan_cap;

	/* device memory written without a kernel after the first launch
	 * (ddp_sync_device_written; atomic): no evaluation evidence then */
	uint64_t host_writes;

	/* ddp_sync_step_aside (ddp_sync_exit.c): the job stays until exit (atomic) */
	int stepped_aside;
};
extern struct sync_state sync_st __attribute__((visibility("hidden")));

/* cheap-path launches (ddp_sync_launch.c), read by the exit summary:
 * written rarely, a cache line of their own */
struct sync_fastcount {
	uint64_t n; /* cheap-path launches (approximate)   */
	char pad[56];
};
extern struct sync_fastcount sync_fastcount;

#endif
