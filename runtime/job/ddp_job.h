/* SPDX-License-Identifier: MIT
 *
 * ddp_job.h - per-process job state of libddp when ranks synchronise:
 * identity (rank, world, local rank), the connection to the rendezvous
 * store, the heartbeat that posts a progress counter (so `ddprun --timeout`
 * can tell a hung rank), and the communicator, created lazily at the first
 * collective.
 *
 * The store: under ddprun it is ddprun's (DDP_STORE_ADDR, DDP_STORE_PORT,
 * DDP_STORE_SECRET).  Under torchrun, Slurm, Open MPI or PMI no ddprun runs,
 * so rank 0's libddp hosts the store itself (runtime/store/ddp_store_server.h, one
 * thread) and keeps it until every rank has left; every rank connects to it
 * with the DDP_STORE_SECRET the user exported (docs/launcher.md, "Under
 * Slurm, torchrun or mpirun", gives the address and port rules).
 *
 * Contract: ddp_job_init runs once at library init (from ddp_sync_init,
 * runtime/grad/ddp_sync.c), only when gradient synchronisation is on.  ddp_job_store and ddp_job_comm are used
 * by the synchronising thread under ddp_sync's lock.  ddp_job_progress may
 * be called from any thread (one relaxed atomic add).  ddp_job_fini runs at
 * exit (a forked child's exit leaves the parent's job alone).
 */
#ifndef DDP_JOB_H
#define DDP_JOB_H

#include <stdint.h>
#include "ddp_err.h"
#include "ddp_status.h"

struct ddp_store;
struct ddp_comm;

struct ddp_job_info {
	int rank, world;
	int local_rank, local_world;
	const char *master_addr;
	int master_port;
};

/* Whether a launcher started this rank whose job libddp can join: torchrun,
 * Slurm, Open MPI, PMI, or ddprun (RANK/WORLD_SIZE with MASTER_ADDR and
 * MASTER_PORT).  DDP_SYNC=auto synchronises only then; RANK/WORLD_SIZE alone
 * (set by hand) train alone.  Call after ddp_rank_init. */
int ddp_job_launched(void) __attribute__((visibility("hidden")));

/* Connects to the store (rank 0 without ddprun: hosts it first) and starts
 * the heartbeat.  An error is one line
 * (logged) naming what is missing; the caller stops the process. */
ddp_result ddp_job_init(void) __attribute__((visibility("hidden")));

const struct ddp_job_info *ddp_job_info(void) __attribute__((visibility("hidden")));

/* The store connection (NULL before init). */
struct ddp_store *ddp_job_store(void) __attribute__((visibility("hidden")));

/* The communicator, created on first use (every rank calls this at its first
 * collective, so the creation is itself collective). */
ddp_result ddp_job_comm(struct ddp_comm **out /* OUT */) __attribute__((visibility("hidden")));

/* The communicator if some collective already created it, else NULL: never
 * creates one.  For exit paths: a rank that ends before its first collective
 * must leave at once (ddprun then names it), not wait in a creation that
 * needs every other rank. */
struct ddp_comm *ddp_job_comm_existing(void) __attribute__((visibility("hidden")));

/* After ddp_job_comm failed: which ranks never came ("" when unknown). */
const char *ddp_job_comm_error(void) __attribute__((visibility("hidden")));

/* The progress counter the heartbeat posts; ddp_job_progress also stamps
 * the time on ddprun's status board (ddp_status.h). */
extern volatile uint64_t ddp_job_progress_ __attribute__((visibility("hidden")));
static inline void ddp_job_progress(void)
{
	__atomic_fetch_add(&ddp_job_progress_, 1, __ATOMIC_RELAXED);
	ddp_status_progress();
}

/* Closes the store connection and the communicator (exit).  Rank 0 hosting
 * the store first waits, at most DDP_COLL_TIMEOUT seconds, until every rank
 * has joined and left it. */
void ddp_job_fini(void) __attribute__((visibility("hidden")));

#endif /* DDP_JOB_H */
