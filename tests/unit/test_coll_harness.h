/* SPDX-License-Identifier: MIT
 *
 * test_coll_harness.h - a multi-process job inside one test: the parent
 * starts a store server in-process (runtime/store/ddp_store_server.h) and a private
 * DDP_SHM_DIR, forks N ranks that run a function, reaps them as they exit
 * (waitpid(-1): a dead rank never lingers as a zombie) and kills the rest
 * after a limit.  Used by tests/unit/test_coll*.c and bench/coll/.
 *
 * Contract: call from the main thread of a process that has no CUDA state
 * (children initialise CUDA themselves after the fork).
 */
#ifndef TEST_COLL_HARNESS_H
#define TEST_COLL_HARNESS_H

#include <stddef.h>
#include <cuda.h>
#include "ddp_coll.h"

struct coll_job {
	int port;                 /* store port                              */
	char shm_dir[256];        /* private segment directory (empty after) */
	int world;
	double t0;                /* monotonic time of the fork              */
};

/* What a rank runs: returns 0 for success, anything else is its exit code. */
typedef int (*coll_rank_fn)(struct coll_job *job, int rank, void *arg);

/* Runs fn in `world` forked ranks.  status[r] gets each rank's exit code
 * (128+signal when killed, 124 when it outlived limit_s and was killed).
 * Returns the number of ranks with a non-zero status. */
int coll_job_run(int world, coll_rank_fn fn, void *arg, double limit_s, int *status /* OUT [world] */);

/* In a rank: connects to the job's store and makes a communicator.
 * cfg may be NULL (host backend, timeout 10 s, the job's shm dir). */
ddp_result coll_job_comm(struct coll_job *job, int rank, const struct ddp_coll_config *cfg,
			 struct ddp_store **store /* OUT */, struct ddp_comm **comm /* OUT */);

/* Shared memory visible to parent and ranks (MAP_SHARED, zeroed); allocate
 * before coll_job_run.  Free with coll_shared_free. */
void *coll_shared_alloc(size_t bytes);
void coll_shared_free(void *p, size_t bytes);

/* Monotonic seconds. */
double coll_test_now(void);

/* Number of entries left in dir (segment leak check); -1 on error. */
int coll_dir_entries(const char *dir);

/* The port's driver table (ddp_port.h) from the libcuda a test or bench
 * links (the CPU device, or the real driver for tests/gpu): every entry the
 * collectives use, synchronous and stream-ordered. */
#define COLL_TEST_DRIVER_INIT { \
	.memcpyDtoHAsync = cuMemcpyDtoHAsync, .memcpyHtoDAsync = cuMemcpyHtoDAsync, \
	.streamSynchronize = cuStreamSynchronize, .streamQuery = cuStreamQuery, \
	.memAllocHost = cuMemAllocHost, .memFreeHost = cuMemFreeHost, .getErrorName = cuGetErrorName, \
	.streamCreateWithPriority = cuStreamCreateWithPriority, .streamDestroy = cuStreamDestroy, \
	.ctxGetStreamPriorityRange = cuCtxGetStreamPriorityRange, .eventCreate = cuEventCreate, \
	.eventDestroy = cuEventDestroy, .eventRecord = cuEventRecord, .eventQuery = cuEventQuery, \
	.eventSynchronize = cuEventSynchronize, .streamWaitEvent = cuStreamWaitEvent, \
	.launchHostFunc = cuLaunchHostFunc, \
}


#endif /* TEST_COLL_HARNESS_H */
