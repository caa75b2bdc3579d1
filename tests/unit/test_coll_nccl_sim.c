/* SPDX-License-Identifier: MIT
 *
 * test_coll_nccl_sim.c - libddp's NCCL backend, synchronous and
 * stream-ordered (runtime/coll/ddp_coll_nccl.c, ddp_coll_async.c: NCCL on
 * the communication stream, groups, the watchdog thread), run end to end on
 * the CPU device with its NCCL stand-in ($(BUILD)/cpudev/lib/nccl/libnccl.so.2,
 * docs/cpu-device.md "NCCL"): forked ranks, the device's primary context.
 *
 *   - ordering, as test_coll_async.c checks the host backend: each op's
 *     producer is held behind a gate (a host function that blocks its
 *     stream) and writes its final input only after it; the async call
 *     must return while the gate is closed, the op and the consumer's copy
 *     must still be pending (an op that ran early would average the stale
 *     bytes: a wrong mean), then the mean must be right in every chunk;
 *     f32/f16/bf16, counts 1, 300001 and 0, world 2 and 3, ranks
 *     bit-identical;
 *   - overlap: an op completes while the producer is held by a later gate;
 *   - segments with gaps as one NCCL group (gaps keep their bytes), a
 *     synchronous allreduce and a broadcast after async ops;
 *   - the stand-in's own counts (SIMNCCL_STATS) match: collectives, one
 *     group, no call on a dead communicator;
 *   - a peer that exits: the watchdog reports NCCL's asynchronous error
 *     naming the rank (no hang), the broken comm refuses the next op;
 *   - a peer that never issues the collective: the watchdog aborts after
 *     the timeout with one line, the consumer stream is released, and the
 *     communicator is aborted exactly once (the stand-in counts calls on a
 *     dead communicator) also when the calling thread waits too.
 */
#define CHECK_MAIN
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <cuda.h>
#include "check.h"
#include "ddp_coll.h"
#include "ddp_store.h"
#include "test_coll_harness.h"
#include "coll_values.h"

#ifndef SIMNCCL_LIB
#define SIMNCCL_LIB ""
#endif

static const struct ddp_driver sim_driver = {
	.memcpyDtoHAsync = cuMemcpyDtoHAsync, .memcpyHtoDAsync = cuMemcpyHtoDAsync,
	.streamSynchronize = cuStreamSynchronize, .streamQuery = cuStreamQuery,
	.memAllocHost = cuMemAllocHost, .memFreeHost = cuMemFreeHost, .getErrorName = cuGetErrorName,
	.streamCreateWithPriority = cuStreamCreateWithPriority, .streamDestroy = cuStreamDestroy,
	.ctxGetStreamPriorityRange = cuCtxGetStreamPriorityRange, .eventCreate = cuEventCreate,
	.eventDestroy = cuEventDestroy, .eventRecord = cuEventRecord, .eventQuery = cuEventQuery,
	.eventSynchronize = cuEventSynchronize, .streamWaitEvent = cuStreamWaitEvent,
	.launchHostFunc = cuLaunchHostFunc, .ctxGetCurrent = cuCtxGetCurrent, .ctxSetCurrent = cuCtxSetCurrent,
};

#define MAXW 3
#define NBIG 300001

enum { MODE_OK, MODE_PEER_EXIT, MODE_PEER_SILENT, MODE_PEER_SILENT_WAIT };

struct nc_case {
	int mode;
	char msg[MAXW][320];
	uint64_t hash[MAXW][16];
	double fail_after[MAXW];
	char err[MAXW][320];
	char stats_dir[128];
};

/* ---- a gate: a host function that holds its stream until opened */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
};

static void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->open = 0;
}

static void CUDA_CB gate_fn(void *p)
{
	struct gate *g = p;
	pthread_mutex_lock(&g->mu);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* ---- values: multiples of 1/8 in [-3, 4.5], exact in every dtype */
/* 0 when every element is the mean within one unit in the last place of
 * its type (NCCL's average multiplies each input by 1/n, then sums);
 * else the failing index + 1. */
static size_t check_mean(const void *h, enum ddp_dtype t, int W, size_t n, double *got, double *want)
{
	for (size_t i = 0; i < n; i++) {
		double sum = 0, g;
		int e;
		for (int r = 0; r < W; r++)
			sum += val(r, i);
		double ref = sum / W;
		if (t == DDP_DT_F32)
			g = ((const float *)h)[i];
		else
			g = t == DDP_DT_F16 ? from_f16(((const uint16_t *)h)[i]) : from_bf16(((const uint16_t *)h)[i]);
		/* one unit in the last place of the result's type, plus the
		 * float rounding of W products and sums of inputs up to 4.5 */
		frexp(ref, &e);
		if (fabs(g - ref) <= ldexp(1.0, e - (t == DDP_DT_F32 ? 24 : t == DDP_DT_F16 ? 11 : 8)) + 2 * W * 4.5 * 0x1p-24)
			continue;
		*got = g;
		*want = ref;
		return i + 1;
	}
	return 0;
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FAILR(...) do { snprintf(nc->msg[rank], sizeof nc->msg[rank], __VA_ARGS__); return 1; } while (0)

static int gated_op(struct nc_case *nc, int rank, int W, struct ddp_comm *c, CUstream prod, CUstream cons,
		    CUdeviceptr d, enum ddp_dtype t, size_t n, void *h, int check_no)
{
	const size_t es = esize(t);
	struct gate g;
	uint64_t ticket = 0;
	gate_init(&g);
	memset(h, 0x3c, n * es + 1); /* stale: a wrong mean if reduced before the producer */
	if (n && cuMemcpyHtoD(d, h, n * es))
		FAILR("rank %d: HtoD failed", rank);
	fill(h, t, rank, n);
	if (cuLaunchHostFunc(prod, gate_fn, &g) || (n && cuMemcpyHtoDAsync(d, h, n * es, prod)))
		FAILR("rank %d: producer enqueue failed", rank);
	if (ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, n, t, 1, prod, &ticket) != DDP_OK)
		FAILR("rank %d: async allreduce: %s", rank, ddp_coll_last_error(c));
	if (ddp_coll_stream_wait(c, ticket, cons) != DDP_OK)
		FAILR("rank %d: stream wait: %s", rank, ddp_coll_last_error(c));
	void *out = calloc(1, n * es + 1);
	if (!out)
		FAILR("rank %d: out of memory", rank);
	if (n && cuMemcpyDtoHAsync(out, d, n * es, cons))
		FAILR("rank %d: DtoHAsync failed", rank);
	usleep(30000);
	if (cuStreamQuery(cons) != CUDA_ERROR_NOT_READY || ddp_coll_async_query(c, ticket) != 0)
		FAILR("rank %d: the consumer or the op finished while the producer was held", rank);
	gate_open(&g);
	if (cuStreamSynchronize(cons))
		FAILR("rank %d: consumer sync failed", rank);
	double got = 0, want = 0;
	size_t bad = check_mean(out, t, W, n, &got, &want);
	if (bad)
		FAILR("rank %d: %s n=%zu element %zu = %g, expected %g", rank, ddp_dtype_name(t), n, bad - 1, got, want);
	nc->hash[rank][check_no] = fnv(out, n * es);
	free(out);
	cuStreamSynchronize(prod);
	return 0;
}

static int failure_rank(struct nc_case *nc, int rank, struct ddp_comm *c, CUstream prod, CUstream cons,
			CUdeviceptr d, void *h)
{
	uint64_t t;
	if (rank == 1) {
		if (nc->mode == MODE_PEER_EXIT)
			_exit(0);
		sleep(6); /* silent: never issues the collective */
		return 0;
	}
	fill(h, DDP_DT_F32, rank, 1000);
	double t0 = coll_test_now();
	if (cuMemcpyHtoD(d, h, 4000) ||
	    ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, 1000, DDP_DT_F32, 1, prod, &t) != DDP_OK ||
	    ddp_coll_stream_wait(c, t, cons) != DDP_OK)
		FAILR("rank %d: enqueue failed: %s", rank, ddp_coll_last_error(c));
	ddp_result rc;
	if (nc->mode == MODE_PEER_SILENT_WAIT) {
		rc = ddp_coll_wait(c, t); /* the calling thread and the watchdog both watch */
	} else {
		/* the host thread does not wait: only the watchdog can notice */
		while ((rc = ddp_coll_async_error(c)) == DDP_OK && coll_test_now() - t0 < 20)
			usleep(10000);
	}
	nc->fail_after[rank] = coll_test_now() - t0;
	snprintf(nc->err[rank], sizeof nc->err[rank], "%s", ddp_coll_last_error(c));
	if (rc == DDP_OK)
		FAILR("rank %d: no error without rank 1", rank);
	if (cuStreamSynchronize(cons) != CUDA_SUCCESS)
		FAILR("rank %d: the consumer stream was not released", rank);
	if (ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, 1000, DDP_DT_F32, 1, prod, &t) == DDP_OK)
		FAILR("rank %d: the broken comm accepted another op", rank);
	return 0;
}

static int nccl_rank(struct coll_job *job, int rank, void *arg)
{
	struct nc_case *nc = arg;
	const int W = job->world;
	CUdevice dev;
	CUcontext ctx;
	CUstream prod, cons;
	CUdeviceptr d;
	setenv("SIMNCCL_STATS", nc->stats_dir, 1);
	/* the primary context, as cudart programs have it (NCCL uses it) */
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
	    cuStreamCreate(&prod, CU_STREAM_NON_BLOCKING) || cuStreamCreate(&cons, CU_STREAM_NON_BLOCKING))
		FAILR("rank %d: CPU device set-up failed", rank);
	struct ddp_coll_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.backend = DDP_COLL_NCCL;
	cfg.timeout_s = nc->mode == MODE_PEER_SILENT || nc->mode == MODE_PEER_SILENT_WAIT ? 2 : 10;
	cfg.shm_dir = job->shm_dir;
	cfg.nccl_lib = SIMNCCL_LIB;
	cfg.driver = &sim_driver;
	struct ddp_store *st;
	struct ddp_comm *c;
	if (coll_job_comm(job, rank, &cfg, &st, &c) != DDP_OK)
		FAILR("rank %d: comm init failed", rank);
	if (ddp_comm_backend(c) != DDP_COLL_NCCL || ddp_comm_nccl_version(c) < 21400)
		FAILR("rank %d: backend %d, NCCL version %d", rank, (int)ddp_comm_backend(c), ddp_comm_nccl_version(c));
	void *h = malloc(NBIG * 4 + 1);
	if (!h || cuMemAlloc(&d, NBIG * 4 + 64))
		FAILR("rank %d: allocation failed", rank);
	if (nc->mode != MODE_OK) {
		int r = failure_rank(nc, rank, c, prod, cons, d, h);
		ddp_comm_destroy(c);
		ddp_store_close(st);
		return r;
	}

	static const enum ddp_dtype types[] = { DDP_DT_F32, DDP_DT_F16, DDP_DT_BF16 };
	int k = 0;
	for (int ti = 0; ti < 3; ti++)
		if (gated_op(nc, rank, W, c, prod, cons, d, types[ti], 1, h, k++) ||
		    gated_op(nc, rank, W, c, prod, cons, d, types[ti], NBIG, h, k++))
			return 1;
	if (gated_op(nc, rank, W, c, prod, cons, d, DDP_DT_F32, 0, h, k++))
		return 1;

	/* overlap: the op completes while the producer is held by a later gate */
	struct gate g2;
	uint64_t t1;
	gate_init(&g2);
	fill(h, DDP_DT_BF16, rank, NBIG);
	if (cuMemcpyHtoDAsync(d + 2, h, NBIG * 2, prod) ||
	    ddp_allreduce_avg_async(c, (void *)(uintptr_t)(d + 2), NBIG, DDP_DT_BF16, 1, prod, &t1) != DDP_OK ||
	    cuLaunchHostFunc(prod, gate_fn, &g2))
		FAILR("rank %d: overlap enqueue failed: %s", rank, ddp_coll_last_error(c));
	if (ddp_coll_wait(c, t1) != DDP_OK)
		FAILR("rank %d: wait: %s", rank, ddp_coll_last_error(c));
	if (cuStreamQuery(prod) != CUDA_ERROR_NOT_READY)
		FAILR("rank %d: the producer was not held (the overlap check proves nothing)", rank);
	gate_open(&g2);
	cuStreamSynchronize(prod);
	double got, want;
	if (cuMemcpyDtoH(h, d + 2, NBIG * 2))
		FAILR("rank %d: DtoH failed", rank);
	size_t bad = check_mean(h, DDP_DT_BF16, W, NBIG, &got, &want);
	if (bad)
		FAILR("rank %d: overlap bf16 element %zu = %g, expected %g", rank, bad - 1, got, want);
	nc->hash[rank][k++] = fnv(h, NBIG * 2);

	/* segments with gaps: one NCCL group; the gaps keep this rank's bytes */
	static const size_t so[3] = { 0, 2000, 5016 }, sn[3] = { 1000, 3000, 20000 };
	const size_t span = 25016;
	float *hv = h;
	uint64_t ts;
	memset(hv, 0x11 * (rank + 1), span * 4);
	for (int q = 0; q < 3; q++)
		for (size_t i = 0; i < sn[q]; i++)
			hv[so[q] + i] = (float)val(rank, so[q] + i);
	struct ddp_coll_seg sg[3];
	for (int q = 0; q < 3; q++) {
		sg[q].addr = d + so[q] * 4;
		sg[q].bytes = sn[q] * 4;
	}
	if (cuMemcpyHtoDAsync(d, hv, span * 4, prod) ||
	    ddp_allreduce_avg_segs_async(c, sg, 3, DDP_DT_F32, 1, prod, DDP_SEG_AUTO, &ts) != DDP_OK ||
	    ddp_coll_wait(c, ts) != DDP_OK || cuMemcpyDtoH(hv, d, span * 4))
		FAILR("rank %d: segments: %s", rank, ddp_coll_last_error(c));
	unsigned char sent[4];
	memset(sent, 0x11 * (rank + 1), 4);
	for (size_t i = 0; i < span; i++) {
		int in = 0;
		for (int q = 0; q < 3; q++)
			in |= i >= so[q] && i < so[q] + sn[q];
		if (!in) {
			if (memcmp(&hv[i], sent, 4))
				FAILR("rank %d: segments: gap float %zu was overwritten", rank, i);
			continue;
		}
		double s = 0;
		for (int r = 0; r < W; r++)
			s += val(r, i);
		if (fabs(hv[i] - s / W) > 1e-6)
			FAILR("rank %d: segments: element %zu = %g, expected %g", rank, i, hv[i], s / W);
	}

	/* ops in flight, then a synchronous allreduce and a broadcast (they
	 * wait for them), then the time records */
	uint64_t ta;
	fill(h, DDP_DT_F32, rank, 5000);
	if (cuMemcpyHtoD(d, h, 5000 * 4) ||
	    ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, 5000, DDP_DT_F32, 1, prod, &ta) != DDP_OK)
		FAILR("rank %d: in-flight enqueue failed: %s", rank, ddp_coll_last_error(c));
	CUdeviceptr one_d = d + 5000 * 4;
	float one = (float)(rank + 1);
	if (cuMemcpyHtoD(one_d, &one, 4) || ddp_allreduce_avg(c, (void *)(uintptr_t)one_d, 1, DDP_DT_F32, 1, prod) != DDP_OK ||
	    ddp_coll_async_query(c, ta) != 1 || cuMemcpyDtoH(&one, one_d, 4))
		FAILR("rank %d: sync allreduce after async: %s", rank, ddp_coll_last_error(c));
	if (fabsf(one - (float)((W + 1) / 2.0)) > 1e-6f)
		FAILR("rank %d: sync allreduce gave %g", rank, one);
	if (cuMemcpyDtoH(h, d, 5000 * 4) || check_mean(h, DDP_DT_F32, W, 5000, &got, &want))
		FAILR("rank %d: in-flight op wrong (%g, expected %g)", rank, got, want);
	unsigned char bb[100];
	for (int i = 0; i < 100; i++)
		bb[i] = (unsigned char)(rank * 50 + i);
	if (cuMemcpyHtoD(one_d, bb, 100) || ddp_broadcast(c, (void *)(uintptr_t)one_d, 100, W - 1, 1, prod) != DDP_OK ||
	    cuMemcpyDtoH(bb, one_d, 100))
		FAILR("rank %d: broadcast: %s", rank, ddp_coll_last_error(c));
	for (int i = 0; i < 100; i++)
		if (bb[i] != (unsigned char)((W - 1) * 50 + i))
			FAILR("rank %d: broadcast byte %d = %d", rank, i, bb[i]);
	struct ddp_coll_time tr[300];
	size_t nt = ddp_coll_async_times(c, tr, 300);
	if (nt != ddp_coll_async_issued(c))
		FAILR("rank %d: %zu time records for %llu ops", rank, nt, (unsigned long long)ddp_coll_async_issued(c));
	for (size_t i = 0; i < nt; i++)
		if (tr[i].ticket != i + 1 || tr[i].end_ns < tr[i].start_ns || (i && tr[i].start_ns < tr[i - 1].end_ns))
			FAILR("rank %d: time record %zu: ticket %llu, %llu..%llu", rank, i, (unsigned long long)tr[i].ticket,
			      (unsigned long long)tr[i].start_ns, (unsigned long long)tr[i].end_ns);
	cuMemFree(d);
	ddp_comm_destroy(c);
	ddp_store_close(st);
	cuStreamDestroy(prod);
	cuStreamDestroy(cons);
	free(h);
	return 0;
}

/* The stand-in's counts of rank r's communicator ("" when none). */
static void read_stats(const char *dir, int r, char *out, size_t len)
{
	char pre[32];
	struct dirent *e;
	DIR *dp = opendir(dir);
	out[0] = 0;
	snprintf(pre, sizeof pre, "simnccl.%d.", r);
	while (dp && (e = readdir(dp))) {
		if (strncmp(e->d_name, pre, strlen(pre)))
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(out, (int)len, f))
				out[0] = 0;
			fclose(f);
		}
		unlink(path);
	}
	if (dp)
		closedir(dp);
}

static struct nc_case *new_case(int mode)
{
	struct nc_case *nc = coll_shared_alloc(sizeof *nc);
	if (nc) {
		nc->mode = mode;
		snprintf(nc->stats_dir, sizeof nc->stats_dir, "/tmp/simnccl-test.XXXXXX");
		if (!mkdtemp(nc->stats_dir))
			nc->stats_dir[0] = 0;
	}
	return nc;
}

static void end_case(struct nc_case *nc)
{
	rmdir(nc->stats_dir);
	coll_shared_free(nc, sizeof *nc);
}

static int have_lib(void)
{
	if (SIMNCCL_LIB[0] && access(SIMNCCL_LIB, R_OK) == 0)
		return 1;
	printf("# SKIP: the NCCL stand-in %s is not built (nccl.h missing?)\n", SIMNCCL_LIB);
	return 0;
}

static void run_ok(int world)
{
	if (!have_lib())
		return;
	struct nc_case *nc = new_case(MODE_OK);
	int status[MAXW];
	char stats[256];
	REQUIRE(nc);
	double t0 = coll_test_now();
	coll_job_run(world, nccl_rank, nc, 90, status);
	for (int r = 0; r < world; r++) {
		if (nc->msg[r][0])
			CHECK_FAIL_("%s", nc->msg[r]);
		CHECK_EQ_INT(status[r], 0);
		/* 6 ops, 1 empty (no data), overlap, 3 segments in one group, in flight,
		 * sync: 12 allreduces; 1 broadcast; 1 group */
		read_stats(nc->stats_dir, r, stats, sizeof stats);
		printf("# %s", stats);
		CHECK(strstr(stats, " groups 1 allreduce 12 broadcast 1 ") != NULL);
		CHECK(strstr(stats, " aborted 0 misuse 0") != NULL);
	}
	for (int r = 1; r < world; r++)
		for (int k = 0; k < 8; k++)
			if (nc->hash[r][k] != nc->hash[0][k])
				CHECK_FAIL_("check %d: rank %d's result differs from rank 0's", k, r);
	printf("# world %d: %.2f s\n", world, coll_test_now() - t0);
	end_case(nc);
}

TEST(nccl_sim_world2) { run_ok(2); }
TEST(nccl_sim_world3) { run_ok(3); }

static void run_fail(int mode, const char *want, double max_s)
{
	if (!have_lib())
		return;
	struct nc_case *nc = new_case(mode);
	int status[MAXW];
	char stats[256];
	REQUIRE(nc);
	coll_job_run(2, nccl_rank, nc, 60, status);
	if (nc->msg[0][0])
		CHECK_FAIL_("%s", nc->msg[0]);
	CHECK_EQ_INT(status[0], 0);
	printf("# rank 0 after %.2f s: %s\n", nc->fail_after[0], nc->err[0]);
	CHECK(strstr(nc->err[0], want) != NULL);
	CHECK(nc->fail_after[0] < max_s);
	read_stats(nc->stats_dir, 0, stats, sizeof stats);
	printf("# %s", stats);
	CHECK(strstr(stats, " aborted 1 misuse 0") != NULL);
	read_stats(nc->stats_dir, 1, stats, sizeof stats);
	end_case(nc);
}

/* NCCL's asynchronous error, seen by the watchdog, names the dead rank */
TEST(nccl_sim_peer_exit) { run_fail(MODE_PEER_EXIT, "rank 1 (pid", 5.0); }
/* nothing from NCCL: the watchdog's timeout (2 s) */
TEST(nccl_sim_peer_silent_watchdog) { run_fail(MODE_PEER_SILENT, "made no progress for 2 s", 5.0); }
/* the calling thread waits as well: both notice; one abort */
TEST(nccl_sim_peer_silent_host_wait) { run_fail(MODE_PEER_SILENT_WAIT, "2 s", 5.0); }

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
