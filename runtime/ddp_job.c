/* SPDX-License-Identifier: MIT
 *
 * ddp_job.c - the job state of a synchronising rank (see ddp_job.h).
 *
 * At init: rank info (ddp_rank.c: ddprun, torchrun, Slurm, MPI), the store
 * connection (60 s to come up) and the heartbeat thread, which posts
 * ddp_job_progress_ every second (or a quarter of DDP_TIMEOUT when that is
 * shorter).  The communicator is made at the first collective with the
 * real driver's entry points (copies for the host backend's staging go
 * straight to the driver, never through the hooks).
 *
 * Contract: init once from ddp_init (inside-ddp flag set); the rest from the
 * synchronising thread under ddp_sync's lock.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hook.h"
#include "hook_resolve.h"
#include "ddp_coll.h"
#include "ddp_job.h"
#include "ddp_params.h"
#include "ddp_rank.h"
#include "ddp_store.h"

volatile uint64_t ddp_job_progress_;

static struct ddp_job_info info;
static struct ddp_store *store;
static struct ddp_comm *comm;
static ddp_result comm_rc = DDP_OK;
static struct ddp_coll_driver drv;

const struct ddp_job_info *ddp_job_info(void)
{
	return &info;
}

struct ddp_store *ddp_job_store(void)
{
	return store;
}

ddp_result ddp_job_init(void)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	const char *secret = getenv(DDP_STORE_SECRET_ENV);
	ddp_result rc;

	info.rank = ri->rank;
	info.world = ri->world_size;
	info.local_rank = ri->local_rank;
	info.local_world = ri->local_world_size > 0 ? ri->local_world_size : ri->world_size;
	info.master_addr = ri->master_addr ? ri->master_addr : getenv("MASTER_ADDR");
	info.master_port = ri->master_port ? ri->master_port
			   : (getenv("MASTER_PORT") ? atoi(getenv("MASTER_PORT")) : 0);
	if (!info.master_addr || !*info.master_addr || info.master_port <= 0) {
		DDP_ERROR("libddp: rank %d of %d has no MASTER_ADDR/MASTER_PORT, so it cannot reach the other "
			  "ranks; run it under ddprun, or set DDP_SYNC=off to train unsynchronised",
			  info.rank, info.world);
		return DDP_ERR_INVALID;
	}
	rc = ddp_store_connect(info.master_addr, info.master_port, secret ? secret : "", info.rank, 60.0,
			       &store);
	if (rc != DDP_OK) {
		DDP_ERROR("libddp: cannot connect to the store at %s:%d (%s); is ddprun running and "
			  "DDP_STORE_SECRET set?", info.master_addr, info.master_port, ddp_strerror(rc));
		store = NULL;
		return rc;
	}
	double interval = 1.0;
	long to = ddp_param_timeout();
	if (to > 0 && to / 4.0 < interval)
		interval = to / 4.0 < 0.05 ? 0.05 : to / 4.0;
	rc = ddp_store_heartbeat_start(store, &ddp_job_progress_, interval);
	if (rc != DDP_OK)
		DDP_WARN("heartbeat not started (%s): ddprun --timeout cannot watch this rank",
			 ddp_strerror(rc));
	DDP_INFO(RDZV, "job: rank %d of %d (local %d of %d), store %s:%d", info.rank, info.world,
		 info.local_rank, info.local_world, info.master_addr, info.master_port);
	return DDP_OK;
}

/* The CPU device (tests/simcuda) is not a real GPU: NCCL cannot use it. */
static int on_real_gpu(void)
{
	Dl_info di;
	void *p = (void *)HOOK_REAL(cuInit);
	if (p && dladdr(p, &di) && di.dli_fname && strstr(di.dli_fname, "simcuda"))
		return 0;
	return 1;
}

static char join_msg[512];

/* Which ranks never reached their first collective (probes, no waiting). */
static void missing_ranks(void)
{
	size_t o = 0;
	int n = 0;
	for (int r = 0; r < info.world && o < sizeof join_msg - 32; r++) {
		char key[64];
		void *v = NULL;
		size_t len = 0;
		snprintf(key, sizeof key, "ddp/join/%d", r);
		if (ddp_store_get(store, key, &v, &len, 0) == DDP_OK) {
			free(v);
			continue;
		}
		o += (size_t)snprintf(join_msg + o, sizeof join_msg - o, "%s%d", n++ ? ", " : "rank ", r);
	}
	if (n)
		snprintf(join_msg + o, sizeof join_msg - o, " never reached the first collective (a different "
			 "program, or its optimizer was not recognised: DDP_OPT_KERNELS)");
}

const char *ddp_job_comm_error(void)
{
	return join_msg;
}

static void *sym(const char *name)
{
	return hook_driver_sym(name);
}

ddp_result ddp_job_comm(struct ddp_comm **out)
{
	struct ddp_coll_config cfg;

	if (comm) {
		*out = comm;
		return DDP_OK;
	}
	if (comm_rc != DDP_OK)
		return comm_rc;
	if (!store)
		return comm_rc = DDP_ERR_INVALID;
	drv.memcpyDtoHAsync = HOOK_REAL(cuMemcpyDtoHAsync_v2);
	drv.memcpyHtoDAsync = HOOK_REAL(cuMemcpyHtoDAsync_v2);
	drv.streamSynchronize = (CUresult (*)(CUstream))sym("cuStreamSynchronize");
	drv.streamQuery = (CUresult (*)(CUstream))sym("cuStreamQuery");
	drv.memAllocHost = (CUresult (*)(void **, size_t))sym("cuMemAllocHost_v2");
	drv.memFreeHost = (CUresult (*)(void *))sym("cuMemFreeHost");
	drv.getErrorName = (CUresult (*)(CUresult, const char **))sym("cuGetErrorName");
	ddp_coll_config_default(&cfg);
	cfg.driver = &drv;
	cfg.real_gpu = on_real_gpu();
	/* a marker per rank, so that a failed creation can name who never came */
	char key[64];
	snprintf(key, sizeof key, "ddp/join/%d", info.rank);
	if (ddp_store_set(store, key, "1", 1) != DDP_OK)
		return comm_rc = DDP_ERR_REMOTE;
	comm_rc = ddp_comm_init(store, info.rank, info.world, info.local_rank, info.local_world, &cfg, &comm);
	if (comm_rc != DDP_OK) {
		comm = NULL;
		missing_ranks();
		return comm_rc;
	}
	DDP_INFO(COLL, "communicator ready: %d ranks, %s backend", info.world, ddp_comm_backend_name(comm));
	*out = comm;
	return DDP_OK;
}

void ddp_job_fini(void)
{
	/* the communicator's staging is left to process exit: the program may
	 * already have destroyed its context */
	if (store) {
		ddp_store_close(store);
		store = NULL;
	}
}
