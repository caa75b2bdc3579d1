/* SPDX-License-Identifier: MIT
 *
 * test_coll_async.c - stream-ordered collectives (ddp_allreduce_avg_async,
 * ddp_coll_stream_wait, ddp_coll_wait) on the CPU device
 * (build/cpudev/lib/libcuda.so.1): forked ranks, host backend, device and
 * host buffers.
 *
 * Each case holds the producing stream behind a "gate" (a host function
 * that blocks the stream until the test opens it) and only then writes the
 * final input with a copy on that stream, so:
 *   - the host thread not blocking: the async call must return while the
 *     gate is still closed (if it waited for its input, the rank would
 *     deadlock and the harness would kill it);
 *   - ordering: the reduction must wait for the producer (a reduction that
 *     ran early would average the stale contents, a different number), and
 *     the consumer stream must wait for the reduction: its copy of the
 *     result must still be pending while the gate is closed, and what it
 *     copies must be the complete mean, in every chunk (small staging
 *     forces many chunks per op);
 *   - overlap: an op completes (ddp_coll_wait) while the producer stream is
 *     held behind a second closed gate, i.e. the reduction runs beside the
 *     producer's later work;
 *   - correctness: f32, f16 and bf16 at world 2 and 3, counts 0, 1 and
 *     300001, against a reference computed here in double (f32 exact; f16
 *     and bf16 within one unit in the last place), and all ranks
 *     bit-identical (compared through shared memory);
 *   - a sync collective after async ones waits for them; tickets and the
 *     time records are in issue order;
 *   - a peer that exits: the waiting rank gets an error naming it, no hang.
 */
#define CHECK_MAIN
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda.h>
#include "check.h"
#include "ddp_coll.h"
#include "ddp_store.h"
#include "test_coll_harness.h"
#include "coll_values.h"

static const struct ddp_driver sim_driver = COLL_TEST_DRIVER_INIT;

#define MAXW 3
#define NBIG 300001

struct async_case {
	size_t stage;
	char msg[MAXW][256];
	uint64_t hash[MAXW][16];   /* per rank, per check: FNV of the result */
	int peer_exit;             /* failure case: rank 1 exits instead      */
	double fail_after[MAXW];   /* seconds until the error was seen        */
};

/* ---- a gate: a host function that holds its stream until opened */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open, entered;
};

static void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->open = g->entered = 0;
}

static void CUDA_CB gate_fn(void *p)
{
	struct gate *g = p;
	pthread_mutex_lock(&g->mu);
	g->entered = 1;
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

/* ---- values and references */

/* rank r's inputs: val(), fill() (coll_values.h) */
/* 0 when every element is the mean (f32 exactly as rounded from double;
 * f16/bf16 within one ulp); else the failing index + 1. */
static size_t check_mean(const void *h, enum ddp_dtype t, int W, size_t n, double *got, double *want)
{
	for (size_t i = 0; i < n; i++) {
		double sum = 0;
		for (int r = 0; r < W; r++)
			sum += val(r, i);
		double ref = sum / W, g;
		int e;
		if (t == DDP_DT_F32) {
			g = ((const float *)h)[i];
			if (g == (float)ref)
				continue;
		} else {
			g = t == DDP_DT_F16 ? from_f16(((const uint16_t *)h)[i]) : from_bf16(((const uint16_t *)h)[i]);
			frexp(ref, &e);
			if (fabs(g - ref) <= ldexp(1.0, e - (t == DDP_DT_F16 ? 11 : 8)))
				continue;
		}
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

#define FAILR(...) do { snprintf(ac->msg[rank], sizeof ac->msg[rank], __VA_ARGS__); return 1; } while (0)

/* One gated op on a device buffer: stale contents, gate, final input copied
 * on the producer, async allreduce, consumer waits and copies back. */
static int gated_device_op(struct async_case *ac, int rank, int W, struct ddp_comm *c, CUstream prod,
			   CUstream cons, CUdeviceptr d, enum ddp_dtype t, size_t n, void *h, int check_no)
{
	const size_t es = esize(t);
	struct gate g;
	uint64_t ticket = 0;
	gate_init(&g);
	/* stale contents: a wrong mean if the reduction ran before the producer */
	memset(h, 0x3c, n * es + 1);
	if (n && cuMemcpyHtoD(d, h, n * es))
		FAILR("rank %d: HtoD failed", rank);
	fill(h, t, rank, n);
	if (cuLaunchHostFunc(prod, gate_fn, &g))
		FAILR("rank %d: cuLaunchHostFunc failed", rank);
	if (n && cuMemcpyHtoDAsync(d, h, n * es, prod))
		FAILR("rank %d: HtoDAsync failed", rank);
	/* returns while the gate is closed, or this rank deadlocks */
	if (ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, n, t, 1, prod, &ticket) != DDP_OK)
		FAILR("rank %d: async allreduce: %s", rank, ddp_coll_last_error(c));
	if (ticket == 0 || ticket != ddp_coll_async_issued(c))
		FAILR("rank %d: ticket %llu, issued %llu", rank, (unsigned long long)ticket,
		      (unsigned long long)ddp_coll_async_issued(c));
	if (ddp_coll_stream_wait(c, ticket, cons) != DDP_OK)
		FAILR("rank %d: stream wait: %s", rank, ddp_coll_last_error(c));
	void *out = malloc(n * es + 1);
	if (!out)
		FAILR("rank %d: out of memory", rank);
	memset(out, 0, n * es + 1);
	if (n && cuMemcpyDtoHAsync(out, d, n * es, cons))
		FAILR("rank %d: DtoHAsync failed", rank);
	usleep(30000);
	if (cuStreamQuery(cons) != CUDA_ERROR_NOT_READY || ddp_coll_async_query(c, ticket) != 0)
		FAILR("rank %d: the consumer or the op finished while the producer was held", rank);
	gate_open(&g);
	if (cuStreamSynchronize(cons))
		FAILR("rank %d: consumer sync failed", rank);
	if (ddp_coll_async_query(c, ticket) != 1)
		FAILR("rank %d: op not done after the consumer", rank);
	double got = 0, want = 0;
	size_t bad = check_mean(out, t, W, n, &got, &want);
	if (bad)
		FAILR("rank %d: %s n=%zu element %zu = %g, expected %g", rank, ddp_dtype_name(t), n, bad - 1, got, want);
	ac->hash[rank][check_no] = fnv(out, n * es);
	free(out);
	cuStreamSynchronize(prod);
	return 0;
}

/* The board callbacks (cfg.enqueued, cfg.busy) as this rank's process saw
 * them: libddp numbers an op when it is enqueued and shows that number
 * while it waits, so enqueued(t) must come before busy(1, t), and busy's
 * end says whether the op failed (-1). */
static struct {
	pthread_mutex_t mu;
	uint64_t enq[512], n_enq;
	int busy_state[512];     /* last busy() per ticket: 1, 0, -1; 2 never */
	int early;               /* busy(1, t) before enqueued(t) */
} board = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void board_enqueued(uint64_t t)
{
	pthread_mutex_lock(&board.mu);
	if (board.n_enq < 512)
		board.enq[board.n_enq++] = t;
	pthread_mutex_unlock(&board.mu);
}

static void board_busy(int state, uint64_t t)
{
	pthread_mutex_lock(&board.mu);
	int seen = 0;
	for (uint64_t i = 0; i < board.n_enq; i++)
		seen |= board.enq[i] == t;
	if (state > 0 && !seen)
		board.early = 1;
	if (t < 512)
		board.busy_state[t] = state;
	pthread_mutex_unlock(&board.mu);
}

static int async_rank(struct coll_job *job, int rank, void *arg)
{
	struct async_case *ac = arg;
	const int W = job->world;
	CUdevice dev;
	CUcontext ctx;
	CUstream prod, cons;
	CUdeviceptr d;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev) ||
	    cuStreamCreate(&prod, CU_STREAM_NON_BLOCKING) || cuStreamCreate(&cons, CU_STREAM_NON_BLOCKING))
		FAILR("rank %d: CPU device set-up failed", rank);
	struct ddp_coll_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.backend = DDP_COLL_HOST;
	cfg.timeout_s = 10;
	cfg.shm_dir = job->shm_dir;
	cfg.stage_bytes = ac->stage;
	cfg.slot_bytes = 16 << 10;
	cfg.driver = &sim_driver;
	cfg.enqueued = board_enqueued;
	cfg.busy = board_busy;
	for (int i = 0; i < 512; i++)
		board.busy_state[i] = 2;
	struct ddp_store *st;
	struct ddp_comm *c;
	if (coll_job_comm(job, rank, &cfg, &st, &c) != DDP_OK)
		FAILR("rank %d: comm init failed", rank);
	void *h = malloc(NBIG * 4 + 1);
	if (!h || cuMemAlloc(&d, NBIG * 4 + 64))
		FAILR("rank %d: allocation failed", rank);

	if (ac->peer_exit) {
		/* rank 1 leaves; the others' async op must fail, not hang */
		if (rank == 1)
			_exit(0);
		uint64_t t;
		fill(h, DDP_DT_F32, rank, 1000);
		double t0 = coll_test_now();
		if (cuMemcpyHtoD(d, h, 4000) ||
		    ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, 1000, DDP_DT_F32, 1, prod, &t) != DDP_OK)
			FAILR("rank %d: enqueue failed: %s", rank, ddp_coll_last_error(c));
		ddp_result rc = ddp_coll_wait(c, t);
		ac->fail_after[rank] = coll_test_now() - t0;
		if (rc == DDP_OK)
			FAILR("rank %d: the op succeeded without rank 1", rank);
		if (!strstr(ddp_coll_last_error(c), "rank 1"))
			FAILR("rank %d: the error does not name rank 1: %s", rank, ddp_coll_last_error(c));
		if (ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, 1000, DDP_DT_F32, 1, prod, &t) == DDP_OK)
			FAILR("rank %d: the broken comm accepted another op", rank);
		if (board.busy_state[1] != -1 || board.early)
			FAILR("rank %d: the failed op's board end was %d (want -1: it never finished)", rank,
			      board.busy_state[1]);
		ddp_comm_destroy(c);
		ddp_store_close(st);
		return 0;
	}

	/* every dtype, counts 1 and NBIG, then 0 */
	static const enum ddp_dtype types[] = { DDP_DT_F32, DDP_DT_F16, DDP_DT_BF16 };
	int k = 0;
	for (int ti = 0; ti < 3; ti++) {
		if (gated_device_op(ac, rank, W, c, prod, cons, d, types[ti], 1, h, k++) ||
		    gated_device_op(ac, rank, W, c, prod, cons, d, types[ti], NBIG, h, k++))
			return 1;
	}
	if (gated_device_op(ac, rank, W, c, prod, cons, d, DDP_DT_F32, 0, h, k++))
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
	if (cuMemcpyDtoH(h, d + 2, NBIG * 2))
		FAILR("rank %d: DtoH failed", rank);
	double got, want;
	size_t bad = check_mean(h, DDP_DT_BF16, W, NBIG, &got, &want);
	if (bad)
		FAILR("rank %d: overlap bf16 element %zu = %g, expected %g", rank, bad - 1, got, want);
	ac->hash[rank][k++] = fnv(h, NBIG * 2);

	/* several ops in flight on a host buffer and a device buffer, then a
	 * synchronous allreduce (it waits for them), then the time records */
	float *hb = malloc(1000 * 4);
	uint64_t ta, tb;
	if (!hb)
		FAILR("rank %d: out of memory", rank);
	fill(hb, DDP_DT_F32, rank, 1000);
	fill(h, DDP_DT_F32, rank, 5000);
	if (cuMemcpyHtoD(d, h, 5000 * 4) ||
	    ddp_allreduce_avg_async(c, hb, 1000, DDP_DT_F32, 0, prod, &ta) != DDP_OK ||
	    ddp_allreduce_avg_async(c, (void *)(uintptr_t)d, 5000, DDP_DT_F32, 1, prod, &tb) != DDP_OK || tb != ta + 1)
		FAILR("rank %d: in-flight enqueue failed: %s", rank, ddp_coll_last_error(c));
	float one = (float)(rank + 1);
	if (ddp_allreduce_avg(c, &one, 1, DDP_DT_F32, 0, NULL) != DDP_OK || ddp_coll_async_query(c, tb) != 1)
		FAILR("rank %d: sync allreduce after async: %s", rank, ddp_coll_last_error(c));
	if (one != (float)((W + 1) / 2.0))
		FAILR("rank %d: sync allreduce gave %g", rank, one);
	if (check_mean(hb, DDP_DT_F32, W, 1000, &got, &want))
		FAILR("rank %d: host-buffer async op wrong (%g, expected %g)", rank, got, want);
	if (cuMemcpyDtoH(h, d, 5000 * 4) || check_mean(h, DDP_DT_F32, W, 5000, &got, &want))
		FAILR("rank %d: second in-flight op wrong (%g, expected %g)", rank, got, want);
	if (board.early)
		FAILR("rank %d: an op was shown waiting before it was numbered (busy before enqueued)", rank);
	for (uint64_t i = 0; i < board.n_enq; i++)
		if (board.enq[i] != i + 1 || (W > 1 && board.busy_state[i + 1] != 0))
			FAILR("rank %d: op %llu: numbered as ticket %llu, board end %d (want %llu, 0)", rank,
			      (unsigned long long)(i + 1), (unsigned long long)board.enq[i], board.busy_state[i + 1],
			      (unsigned long long)(i + 1));
	if (board.n_enq != ddp_coll_async_issued(c))
		FAILR("rank %d: %llu ops numbered, %llu issued", rank, (unsigned long long)board.n_enq,
		      (unsigned long long)ddp_coll_async_issued(c));
	struct ddp_coll_time tr[300];
	size_t nt = ddp_coll_async_times(c, tr, 300);
	if (nt != ddp_coll_async_issued(c))
		FAILR("rank %d: %zu time records for %llu ops", rank, nt, (unsigned long long)ddp_coll_async_issued(c));
	for (size_t i = 0; i < nt; i++)
		if (tr[i].ticket != i + 1 || tr[i].end_ns < tr[i].start_ns || (i && tr[i].start_ns < tr[i - 1].end_ns) ||
		    tr[i].arrive_ns < tr[i].start_ns || tr[i].arrive_ns > tr[i].end_ns) /* host: all ranks arrived in between */
			FAILR("rank %d: time record %zu: ticket %llu, %llu..%llu, all arrived at %llu", rank, i,
			      (unsigned long long)tr[i].ticket, (unsigned long long)tr[i].start_ns,
			      (unsigned long long)tr[i].end_ns, (unsigned long long)tr[i].arrive_ns);
	/* segments of one allocation with gaps: staged (one collective) and
	 * one collective each; the gaps keep this rank's own bytes */
	static const size_t so[3] = { 0, 2000, 5016 }, sn[3] = { 1000, 3000, 20000 }; /* in floats */
	const size_t span = 25016;
	static const enum ddp_coll_seg_mode modes[2] = { DDP_SEG_AUTO, DDP_SEG_EACH };
	for (int mi = 0; mi < 2; mi++) {
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
		uint64_t before = ddp_coll_async_issued(c);
		if (cuMemcpyHtoDAsync(d, hv, span * 4, prod) ||
		    ddp_allreduce_avg_segs_async(c, sg, 3, DDP_DT_F32, 1, prod, modes[mi], &ts) != DDP_OK ||
		    ts != before + 1 || ddp_coll_wait(c, ts) != DDP_OK)
			FAILR("rank %d: segments (mode %d): %s", rank, mi, ddp_coll_last_error(c));
		if (cuMemcpyDtoH(hv, d, span * 4))
			FAILR("rank %d: DtoH failed", rank);
		unsigned char sent[4];
		memset(sent, 0x11 * (rank + 1), 4);
		for (size_t i = 0; i < span; i++) {
			int in = 0;
			for (int q = 0; q < 3; q++)
				in |= i >= so[q] && i < so[q] + sn[q];
			if (!in) {
				if (memcmp(&hv[i], sent, 4))
					FAILR("rank %d: segments (mode %d): gap float %zu was overwritten", rank, mi, i);
				continue;
			}
			double sum = 0;
			for (int r = 0; r < W; r++)
				sum += val(r, i);
			if (hv[i] != (float)(sum / W))
				FAILR("rank %d: segments (mode %d): element %zu = %g, expected %g", rank, mi, i, hv[i], sum / W);
		}
	}
	free(hb);
	cuMemFree(d);
	ddp_comm_destroy(c);
	ddp_store_close(st);
	cuStreamDestroy(prod);
	cuStreamDestroy(cons);
	cuCtxDestroy(ctx);
	free(h);
	return 0;
}

static void run_case(int world, size_t stage)
{
	struct async_case *ac = coll_shared_alloc(sizeof *ac);
	int status[MAXW];
	REQUIRE(ac);
	ac->stage = stage;
	double t0 = coll_test_now();
	coll_job_run(world, async_rank, ac, 90, status);
	for (int r = 0; r < world; r++) {
		if (ac->msg[r][0])
			CHECK_FAIL_("%s", ac->msg[r]);
		CHECK_EQ_INT(status[r], 0);
	}
	for (int r = 1; r < world; r++)
		for (int k = 0; k < 8; k++)
			if (ac->hash[r][k] != ac->hash[0][k])
				CHECK_FAIL_("check %d: rank %d's result differs from rank 0's", k, r);
	printf("# world %d, stage %zu: %.2f s\n", world, stage, coll_test_now() - t0);
	coll_shared_free(ac, sizeof *ac);
}

TEST(async_world2_small_stage) { run_case(2, 64 << 10); }
TEST(async_world3_small_stage) { run_case(3, 64 << 10); }
TEST(async_world2_default_stage) { run_case(2, 0); }

TEST(async_peer_exit_fails_without_hanging)
{
	struct async_case *ac = coll_shared_alloc(sizeof *ac);
	int status[MAXW];
	REQUIRE(ac);
	ac->peer_exit = 1;
	coll_job_run(2, async_rank, ac, 60, status);
	if (ac->msg[0][0])
		CHECK_FAIL_("%s", ac->msg[0]);
	CHECK_EQ_INT(status[0], 0);
	CHECK(ac->fail_after[0] < 8.0); /* dead-peer detection, not the 10 s timeout */
	coll_shared_free(ac, sizeof *ac);
}

TEST(async_without_driver_streams_is_refused)
{
	static const struct ddp_driver partial = { .memcpyDtoHAsync = cuMemcpyDtoHAsync,
		.memcpyHtoDAsync = cuMemcpyHtoDAsync, .streamSynchronize = cuStreamSynchronize,
		.memAllocHost = cuMemAllocHost };
	struct ddp_comm *c = NULL;
	struct ddp_coll_config cfg;
	uint64_t t = 99;
	memset(&cfg, 0, sizeof cfg);
	cfg.backend = DDP_COLL_HOST;
	cfg.driver = &partial;
	REQUIRE(ddp_comm_init(NULL, 0, 1, 0, 1, &cfg, &c) == DDP_OK);
	CHECK_EQ_INT(ddp_allreduce_avg_async(c, (void *)(uintptr_t)0x1000, 4, DDP_DT_F32, 1, NULL, &t), DDP_ERR_INVALID);
	CHECK_EQ_INT((int)t, 0);
	CHECK(strstr(ddp_coll_last_error(c), "streams, events or host functions") != NULL);
	ddp_comm_destroy(c);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
