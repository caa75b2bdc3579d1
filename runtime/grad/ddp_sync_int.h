/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_int.h - the synchronisation glue's insides, shared by its files
 * (ddp_sync.h has the interface):
 *   ddp_sync.c         the state, the fatal path, helpers (the signature
 *                      check, tracing), settings and init;
 *   ddp_sync_coll.c    the tracker's callbacks: collectives, copies,
 *                      calibration relaunch, what the overlap layer needs;
 *   ddp_sync_check.c   checks: --check hashes, the data-parallel invariant,
 *                      step begin and end;
 *   ddp_sync_launch.c  the launch path: the cheap path, library calls'
 *                      outputs, argument bounds, the locked path;
 *   ddp_sync_exit.c    stepping aside, the exit report, ddprun inspect's
 *                      roles.
 * Names shared across these files carry the sync_ prefix; nothing here is
 * exported from libddp.so (hidden visibility).
 *
 * Contract: as ddp_sync.c's: sync_lock serialises everything but the cheap
 * path.
 */
#ifndef DDP_SYNC_INT_H
#define DDP_SYNC_INT_H

#include <pthread.h>
#include <stdint.h>
#include "ddp_grad.h"
#include "ddp_kreg.h"
#include "ddp_launch.h"
#include "ddp_port.h"

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

/* ddp_sync.c */
void sync_check_sig(struct ddp_comm *c, const char *kind, const char *sig, uint64_t h);
ddp_result sync_coll_fail(ddp_result rc, const char *what);
CUstream sync_the_stream(void *s);
void sync_trace_coll(const char *name, uint64_t t0, uint64_t bytes, const char *what);
void sync_die(const char *msg) __attribute__((noreturn));

/* ddp_sync_coll.c */
void sync_account_step_bytes(uint64_t st, uint64_t bytes);
int sync_op_alive(void *ctx, const struct ddp_grad_buf *b);
ddp_result sync_op_allreduce(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream);
ddp_result sync_op_broadcast(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream);
ddp_result sync_op_copy(void *ctx, uint64_t dst, uint64_t src, uint64_t bytes, void *stream);
ddp_result sync_op_drain(void *ctx);
ddp_result sync_op_read(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream);
ddp_result sync_op_reduce(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream);
int sync_op_reduce_on(void *ctx);
ddp_result sync_op_relaunch(void *ctx, void *launch_ctx);
ddp_result sync_op_write(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream);
void sync_op_written(void *ctx, struct ddp_grad_buf *b, const struct ddp_grad_launch *L, uint64_t lo,
		       uint64_t hi, uint8_t bound);
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
extern int sync_final_done;

/* The glue's state, defined in ddp_sync.c (sync_fastcount: in
 * ddp_sync_launch.c); sync_lock guards all of it but what the cheap path
 * reads atomically. */
extern pthread_mutex_t sync_lock;
extern struct ddp_grad *sync_tracker;
extern struct sync_stats sync_stats;
extern const char *sync_opt_setting, *sync_reader_setting;
extern long sync_check_every;
extern int sync_my_rank, sync_my_world;
extern uint64_t sync_cur_step;
extern int sync_phase_open;          /* between step_begin and step_end     */
extern int sync_dry;                 /* ddprun inspect: no collectives      */
extern int sync_at_exit;             /* ddp_sync_exit / the final compare end the run */
extern struct ddp_cycle *sync_cycles; /* the steps while no update is known (ddp_cycle.h) */
extern int sync_check_inv;           /* DDP_CHECK_INVARIANT                 */
extern long sync_skip_avg;           /* DDP_DEBUG_SKIP_AVG                  */
extern int sync_no_measure;          /* DDP_DEBUG_NO_MEASURE                */
extern long sync_opt_wait_s;         /* DDP_OPT_WAIT                        */
extern int sync_torch_seen;          /* a PyTorch kernel was decoded        */
extern struct ddp_kfunc *sync_cur_k; /* the launch being processed          */
extern const struct ddp_launch_call *sync_cur_call;
extern uint64_t sync_launch_seq; /* launches handed to the tracker      */
extern CUresult (*sync_real_sync)(CUstream);
extern CUresult (*sync_real_ctx_sync)(void);
extern int sync_overlap_mode;   /* DDP_OVERLAP: 0 auto, 1 on, 2 off */
extern void *sync_check_stream; /* the current launch's stream (per-thread default resolved) */

/* cheap-path launches (ddp_sync_launch.c), read by the exit summary:
 * written rarely, a cache line of their own */
struct sync_fastcount {
	uint64_t n; /* cheap-path launches (approximate)   */
	char pad[56];
};
extern struct sync_fastcount sync_fastcount;

#endif
