/* SPDX-License-Identifier: MIT
 *
 * ddp_status.h - the per-rank status board that ddprun reads while a job
 * runs: when each rank last made training progress (a kernel launch, a
 * step, a collective entry), which step it is at, and whether it is inside
 * one of libddp's collectives (and which).  ddprun judges --timeout and "a
 * rank left while the others wait for it" from it (launcher/supervise.c).
 *
 * The board is one shared memory file (memfd) made by ddprun before the
 * ranks start, DDP_STATUS_SLOTS slots of 256 bytes, one per local rank; its
 * descriptor is inherited by the ranks and named by DDP_STATUS_FD.  libddp
 * maps it when it joins the job (ddp_job_init), closes the descriptor, and
 * writes only its own slot (index LOCAL_RANK); a forked child of the
 * program stops writing.  Times are CLOCK_MONOTONIC nanoseconds, which are
 * the same clock in every process of one machine.  Every field is written
 * and read with relaxed atomics: a reader may see a slot mid-update, which
 * costs at most one poll of precision.
 *
 * Contract: the layout is an ABI between ddprun and libddp of the same
 * build (DDP_STATUS_MAGIC changes with it).  On the writer side
 * (ddp_status_*), progress and step are async-signal-safe and lock-free;
 * the collective calls (enter, begin, leave) take a tiny spin lock over the
 * process's table of collectives in flight (never called from a signal
 * handler).  Every function is a no-op when no board is attached.
 */
#ifndef DDP_STATUS_H
#define DDP_STATUS_H

#include <stdint.h>

#define DDP_STATUS_MAGIC 0x34545344u /* "DST4" */
#define DDP_STATUS_FD_ENV "DDP_STATUS_FD"
#define DDP_STATUS_SLOT_BYTES 256
#define DDP_STATUS_SHARD_SPECS 32 /* DDP_SHARD_MAX_SPECS */

/* The collective fields describe the LOWEST-numbered collective the rank
 * is inside (the one that holds it up: with overlap an earlier allreduce
 * may still be in flight on the comm's thread while the main thread has
 * entered a later one), and the highest one it finished with every lower
 * one it entered finished too. */
struct ddp_status_slot {
	uint32_t magic;         /* DDP_STATUS_MAGIC once the rank attached     */
	int32_t pid;            /* the attached process                        */
	uint64_t last_ns;       /* last training progress (CLOCK_MONOTONIC)    */
	uint64_t progress;      /* progress events so far                      */
	uint64_t step;          /* optimizer step in progress (0: none yet)    */
	uint64_t coll_done;     /* last collective finished (see above)        */
	uint64_t coll_in;       /* lowest collective it is inside, 0: none     */
	uint64_t coll_since_ns; /* when it entered that collective             */
	char coll_name[32];     /* its kind: "allreduce", "broadcast", ...     */
	uint64_t coll_ns;       /* time spent inside finished collectives      */
	uint64_t attach_ns;     /* when the rank attached                      */
	uint64_t coll_in_step;  /* the step coll_in belongs to (see .c)        */
	uint64_t done_step;     /* the step coll_done belonged to              */
	char done_name[32];     /* coll_done's kind                            */
	uint64_t avg_bytes;     /* gradient bytes libddp averaged so far       */
	/* written when libddp is loaded (ddp_status_mark_image), by the rank's
	 * own process only (its process group's leader), whatever it runs:
	 * which image last loaded libddp.  ddprun compares it with the rank's
	 * comm at its exit: a rank whose last image ran without libddp (a
	 * wrapper cleared LD_PRELOAD: env -i, sudo) trained alone. */
	int32_t image_pid;      /* that process (0: no image loaded libddp)    */
	char image_comm[16];    /* its comm (PR_GET_NAME) then                 */
	uint32_t aside;         /* 1: the program synchronises itself and
				 * libddp stepped aside (ddp_sync_step_aside) */
	/* 1 once any process of the rank (forked or spawned data loaders too)
	 * opened a file of --shard spec i (DDP_SHARD's i-th): ddprun warns
	 * at the end about a spec no rank opened */
	uint8_t shard_opened[DDP_STATUS_SHARD_SPECS];
	uint8_t pad_[DDP_STATUS_SLOT_BYTES - 184 - DDP_STATUS_SHARD_SPECS];
};
_Static_assert(sizeof(struct ddp_status_slot) == DDP_STATUS_SLOT_BYTES, "status slot layout");

#define DDP_STATUS_LOAD(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define DDP_STATUS_STORE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELAXED)

/* ---- writer side (libddp, runtime/ddp_status.c) ---- */

/* Maps slot local_rank of the board named by DDP_STATUS_FD (nothing when
 * unset or invalid; one warning when it cannot be used). */
void ddp_status_attach(int local_rank) __attribute__((visibility("hidden")));
/* From libddp's constructor, and again at exit (a program that renamed
 * itself, setproctitle, ends with its new comm): marks slot LOCAL_RANK's
 * image_pid and image_comm when this process is the rank's own (pid ==
 * pgid, not a session leader) and DDP_STATUS_FD names the board.  Constructor-safe: getenv, prctl and one
 * raw pwrite, no libc hook, no allocation, errno preserved. */
void ddp_status_mark_image(void) __attribute__((visibility("hidden")));
/* A file of --shard spec `spec` (its index in DDP_SHARD) was opened with
 * its view: marks shard_opened[spec], through the mapped board or, before
 * the process attached (or in a spawned child), through DDP_STATUS_FD. */
void ddp_status_shard_opened(int spec) __attribute__((visibility("hidden")));
/* In the child of the program's fork(): stop writing the parent's slot. */
void ddp_status_fork_child(void) __attribute__((visibility("hidden")));
/* Training progress happened now. */
void ddp_status_progress(void) __attribute__((visibility("hidden")));
/* A step's update phase begins (the optimizer's first launch), ends. */
void ddp_status_step(uint64_t step) __attribute__((visibility("hidden")));
void ddp_status_step_end(void) __attribute__((visibility("hidden")));
/* bytes of gradients were averaged; libddp stepped aside for good. */
void ddp_status_averaged(uint64_t bytes) __attribute__((visibility("hidden")));
void ddp_status_aside(void) __attribute__((visibility("hidden")));
/* The next collective's number on the board (from 1): one sequence for
 * every collective this process runs, synchronous or not, taken in program
 * order, so that the same collective has the same number on every rank. */
uint64_t ddp_status_coll_next(void) __attribute__((visibility("hidden")));
/* Entering collective number seq (ddp_status_coll_next) named name;
 * leaving it (the last one this thread entered: enter and leave pair up
 * per thread).  begin: entering the next one (enter(next(), name)), for a
 * collective numbered when it starts. */
void ddp_status_coll_enter(uint64_t seq, const char *name) __attribute__((visibility("hidden")));
void ddp_status_coll_begin(const char *name) __attribute__((visibility("hidden")));
void ddp_status_coll_leave(void) __attribute__((visibility("hidden")));
/* The collective this process is inside failed (a peer left, a timeout):
 * it never finished, and the board keeps saying so (collective seq still
 * "inside", not "done") whatever leaves follow, until the process exits,
 * which it is about to.  So ddprun, seeing a rank exit 0 and this one fail
 * in the same instant, names the one that left as the cause. */
void ddp_status_coll_failed(void) __attribute__((visibility("hidden")));

#endif /* DDP_STATUS_H */
