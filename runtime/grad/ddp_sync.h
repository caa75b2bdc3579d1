/* SPDX-License-Identifier: MIT
 *
 * ddp_sync.h - gradient synchronisation glue: decides, per kernel launch,
 * what to reduce or broadcast (through the tracker, ddp_grad.h) and does it
 * with the collectives (ddp_coll.h): signature checks before each new kind
 * of collective, `--check N` parameter hashing, statistics, trace events,
 * and the fatal-error path (one line, then the process exits non-zero so
 * that ddprun stops the job: never a silent unsynced run, never a hang).
 *
 * Contract: ddp_sync_init once at library init (after settings and rank).
 * ddp_sync_on_ is then set for the run (ddp_sync_exit clears it before the
 * job is torn down, so later launches pass through); the launch hooks test it and call
 * ddp_sync_launch only when it is set (world size > 1 and DDP_SYNC not off),
 * so with sync off the launch path gains one branch.  ddp_sync_launch may
 * be entered from any thread; it serialises on one mutex.
 */
#ifndef DDP_SYNC_H
#define DDP_SYNC_H

#include <stdint.h>
#include <cuda.h>
#include "ddp_port.h"

struct ddp_kfunc;

extern int ddp_sync_on_ __attribute__((visibility("hidden")));

/* Reads DDP_SYNC & co; with sync on, connects the job (ddp_job_init).  A
 * failure is fatal (exits the process). */
void ddp_sync_init(int rank, int world) __attribute__((visibility("hidden")));

/* Called by the launch hooks BEFORE the launch reaches the driver.
 * Returns 0, or a token: then the hook calls ddp_sync_launched(token, c)
 * right AFTER the launch reached the driver (early gradient reductions are
 * enqueued behind it; ddp_overlap.h). */
uint64_t ddp_sync_launch(struct ddp_kfunc *k, const struct ddp_launch_call *c)
	__attribute__((visibility("hidden")));
void ddp_sync_launched(uint64_t token, const struct ddp_launch_call *c) __attribute__((visibility("hidden")));

/* A library call of the calling thread (cuBLAS: interpose/hook_blas.c)
 * declares the one output it writes, [lo, hi): by its contract a launch it
 * makes writes through a pointer into [lo, hi) nothing outside it (cuBLAS
 * writes the C or D matrix its arguments lay out).  Such a pointer's
 * extent is then exact (DDP_GB_EXACT, ddp_grad.h) instead of a count
 * argument's guess; pointers outside it keep the generic rule.  enter
 * saves the enclosing call's declaration (one library call made inside
 * another) into *saved; leave puts it back.  lo == hi declares nothing.
 * Any thread, no lock, no allocation. */
struct ddp_sync_libcall {
	uint64_t lo, hi;
	const char *fn;
};
void ddp_sync_libcall_enter(const char *fn, uint64_t lo, uint64_t hi, struct ddp_sync_libcall *saved)
	__attribute__((visibility("hidden")));
void ddp_sync_libcall_leave(const struct ddp_sync_libcall *saved) __attribute__((visibility("hidden")));

/* The program copied `bytes` from device address src to dst (a
 * device-to-device copy that reached the driver).  Recorded for the first
 * step only (ddp_grad_copied: a copy of a gradient the update reads).  Any
 * thread; takes the sync lock. */
void ddp_sync_copied(uint64_t dst, uint64_t src, uint64_t bytes) __attribute__((visibility("hidden")));
/* A host-to-device copy of n bytes from src (host memory) succeeded: its
 * bytes join the input compare of the first two steps (ddp_sync_input.c);
 * a flag test after step 2. */
void ddp_sync_input_copy(const void *src, uint64_t n) __attribute__((visibility("hidden")));

/* The program copied `bytes` from the host to device address dst (a copy
 * that reached the driver).  Until the first update step the bytes are
 * remembered as host-set (ddp_fused.h): input data and start-up state,
 * which are never gradients, and which a launch rewriting them in place
 * from other host-set data shows to be a fused update.  Any thread; takes
 * the sync lock. */
void ddp_sync_host_copied(uint64_t dst, uint64_t bytes) __attribute__((visibility("hidden")));

/* The program wrote device memory without a kernel (a host-to-device or
 * device-to-device copy, a memset) that reached the driver: reach bytes
 * from dst (dst 0: where is not known).  A write of loop-carried bytes
 * (bytes a launch so far read before any launch wrote them) is counted: an
 * update made on the host (weights computed on the CPU and copied back)
 * looks, launch by launch, exactly like the next batch of inputs copied over
 * the last, so a run with such writes is never taken for an evaluation
 * program (ddp_sync_exit.c, the output gate).  A first write of bytes no
 * launch has read (start-up state, a batch staged for its first use) is
 * not.  Any thread; takes the sync lock only before an update is known. */
void ddp_sync_device_written(uint64_t dst, uint64_t reach) __attribute__((visibility("hidden")));

/* The program is already data-parallel (it runs collectives of its own,
 * e.g. it launched NCCL kernels libddp did not make): gradient
 * synchronisation stops for good, with one line naming why (rank 0 at
 * warn, the others at info); the job stays connected until exit.  Any
 * thread; idempotent. */
void ddp_sync_step_aside(const char *why) __attribute__((visibility("hidden")));
/* The program made its own rendezvous (hook_net.c: a connection to its
 * MASTER_PORT): it synchronises itself.  Steps aside now when
 * synchronisation is on, else as soon as ddp_sync_init turns it on (the
 * rendezvous usually comes before the first CUDA call).  Any thread. */
void ddp_sync_program_rendezvous(const char *why) __attribute__((visibility("hidden")));

/* Never late: the program opens an output file (interpose/hook_write.c,
 * hook_write_output_gate).  ddp_sync_gate_open() is a cheap test, any
 * thread: nonzero while synchronisation is on and no update (a recognised
 * optimizer, or one found from the data flow) is known yet, or while the
 * invariant's hashes of a step wait for a compare.
 * ddp_sync_output_open(path): the waiting compare runs; when kernels were
 * launched and still no update is known, the job stops with one line
 * naming the file, before the file is written (the ranks would have
 * trained apart).  ddp_sync_file_written(path): any other file opened for
 * writing (a temporary folder's, say): only the waiting compare runs
 * (nothing under /dev, /proc, /sys). */
int ddp_sync_gate_open(void) __attribute__((visibility("hidden")));
void ddp_sync_output_open(const char *path) __attribute__((visibility("hidden")));
void ddp_sync_file_written(const char *path) __attribute__((visibility("hidden")));

/* The program is about to free device memory at p (interpose/hook_mem.c,
 * before cuMemFree): the first time p is a parameter's or optimizer state's
 * allocation, every parameter and state range is compared across ranks
 * (the final compare: the last moment they can be read; a mismatch stops
 * the rank with one line naming the range, its role and the step). */
void ddp_sync_freeing(uint64_t p) __attribute__((visibility("hidden")));

/* The program is about to destroy context ctx (interpose/hook_mem.c, before
 * cuCtxDestroy, the last cuDevicePrimaryCtxRelease or
 * cuDevicePrimaryCtxReset; fn names the call): when ctx is the context the
 * gradient tracker's launches ran in, the final compare runs now, as
 * ddp_sync_freeing's, while the parameters can still be read. */
void ddp_sync_ctx_going(void *ctx, const char *fn) __attribute__((visibility("hidden")));

/* At exit: ends an open step, logs the summary (and writes
 * DIR/rank<k>.sync.json with DDP_TRACE=DIR), closes the job.  Returns
 * non-zero when the process must exit non-zero: a rank of a multi-rank job
 * that launched kernels and averaged nothing (one line said why). */
int ddp_sync_exit(const char *trace_dir, int rank) __attribute__((visibility("hidden")));

/* ddprun inspect (one process, DDP_INSPECT): the tracker ran dry; appends
 * every range's role and evidence to the report at path. */
void ddp_sync_explain(const char *path) __attribute__((visibility("hidden")));

#endif /* DDP_SYNC_H */
