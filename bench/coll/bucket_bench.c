/* SPDX-License-Identifier: MIT
 *
 * bucket_bench.c - how to reduce a model's gradient ranges on the CPU
 * device (build/cpudev/lib), host backend, forked ranks: one collective per
 * range against buckets (ddp_coll_bucket_plan, DDP_BUCKET_MB) reduced as
 * one span or through the staging buffer.
 *
 *   build/bench/bucket_bench [-r RANKS] [-b BUCKET_MiB] [-d D_MODEL] [-l LAYERS] [-v VOCAB] [-i ITERS]
 *
 * The ranges are a GPT-2-shaped model's parameter tensors (defaults: d 256,
 * 12 layers, vocab 8192, context 1024: 148 tensors, 11.9 M floats, 47.5 MB),
 * listed in backward order (last layer first).  Modes, each timed from the
 * first enqueue to the host's ddp_coll_wait of the last op, median of ITERS
 * iterations after 2 warm-ups, on rank 0:
 *   sync-per-range    ddp_allreduce_avg per tensor (what gradient sync did
 *                     before buckets: one synchronous collective each)
 *   async-per-range   one async op per tensor, separate allocations
 *   staged            separate allocations, buckets of -b MiB, one async op
 *                     per bucket gathered through the pinned staging buffer
 *   each              same buckets, one collective per tensor inside the op
 *   span              one flat allocation (tensors adjacent), buckets of -b
 *                     MiB, one async op per bucket reduced in place
 * Not a test; docs/gradient-sync.md records the results.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda.h>
#include "ddp_coll.h"
#include "ddp_store.h"
#include "test_coll_harness.h"

static const struct ddp_driver sim_driver = COLL_TEST_DRIVER_INIT;

#define MAXT 1024
#define NMODES 5
static const char *const mode_names[NMODES] = { "sync-per-range", "async-per-range", "staged", "each", "span" };

struct shared {
	int d, layers, vocab, iters;
	double bucket_mb;
	double ms[NMODES];
	int colls[NMODES], buckets[NMODES];
	char err[256];
};

/* The tensors' sizes in floats, backward order. */
static size_t model(const struct shared *sh, size_t *n)
{
	size_t k = 0;
	const size_t d = (size_t)sh->d;
	n[k++] = d; /* final ln */
	n[k++] = d;
	for (int l = 0; l < sh->layers; l++) {
		size_t layer[12] = { d, 4 * d * d, 4 * d, 4 * d * d, d, d, d, d * d, 3 * d, 3 * d * d, d, d };
		for (int i = 0; i < 12; i++)
			n[k++] = layer[i];
	}
	n[k++] = 1024 * d;                   /* wpe */
	n[k++] = (size_t)sh->vocab * d;      /* wte */
	return k;
}

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static int bench_rank(struct coll_job *job, int rank, void *arg)
{
	struct shared *sh = arg;
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	static size_t n[MAXT];
	static CUdeviceptr sep[MAXT];
	static struct ddp_coll_range rs[MAXT], rf[MAXT], tmp[MAXT];
	static struct ddp_coll_bucket bk[MAXT];
	static struct ddp_coll_seg sg[MAXT];
	CUdeviceptr flat;
	size_t nt = model(sh, n), total = 0;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev) ||
	    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
		return 1;
	struct ddp_coll_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.backend = DDP_COLL_HOST;
	cfg.timeout_s = 60;
	cfg.shm_dir = job->shm_dir;
	cfg.driver = &sim_driver;
	struct ddp_store *st;
	struct ddp_comm *c;
	if (coll_job_comm(job, rank, &cfg, &st, &c) != DDP_OK)
		return 2;
	for (size_t i = 0; i < nt; i++)
		total += n[i];
	if (cuMemAlloc(&flat, total * 4))
		return 3;
	size_t off = 0;
	for (size_t i = 0; i < nt; i++) {
		if (cuMemAlloc(&sep[i], n[i] * 4) || cuMemsetD32(sep[i], 0x3f800000u, n[i]))
			return 3;
		rs[i] = (struct ddp_coll_range){ sep[i], n[i] * 4, (uint32_t)(i + 2), DDP_DT_F32 };
		/* the flat buffer is laid out forward (embeddings first), as trainers do */
		off += n[i];
		rf[i] = (struct ddp_coll_range){ flat + (total - off) * 4, n[i] * 4, 1, DDP_DT_F32 };
	}
	if (cuMemsetD32(flat, 0x3f800000u, total))
		return 3;
	uint64_t cap = (uint64_t)(sh->bucket_mb * 1048576.0);
	for (int m = 0; m < NMODES; m++) {
		double t[64];
		int colls = 0, nbk = 0;
		for (int it = 0; it < sh->iters + 2; it++) {
			uint64_t tk;
			double t0 = coll_test_now();
			colls = 0;
			if (m <= 1) {
				for (size_t i = 0; i < nt; i++, colls++) {
					ddp_result rc = m == 0 ? ddp_allreduce_avg(c, (void *)(uintptr_t)sep[i], n[i], DDP_DT_F32, 1, s)
							       : ddp_allreduce_avg_async(c, (void *)(uintptr_t)sep[i], n[i],
											 DDP_DT_F32, 1, s, &tk);
					if (rc != DDP_OK)
						goto fail;
				}
			} else {
				const struct ddp_coll_range *r = m == 4 ? rf : rs;
				nbk = (int)ddp_coll_bucket_plan(r, nt, cap, bk, MAXT);
				for (int b = 0; b < nbk; b++) {
					size_t ns = ddp_coll_bucket_segments(r + bk[b].first, bk[b].n, tmp, sg);
					if (ddp_allreduce_avg_segs_async(c, sg, ns, DDP_DT_F32, 1, s,
									 m == 3 ? DDP_SEG_EACH : DDP_SEG_AUTO, &tk) != DDP_OK)
						goto fail;
					colls += m == 3 ? (int)ns : 1;
				}
			}
			if (ddp_coll_wait(c, 0) != DDP_OK)
				goto fail;
			if (it >= 2)
				t[it - 2] = (coll_test_now() - t0) * 1e3;
		}
		if (rank == 0) {
			sh->ms[m] = median(t, sh->iters);
			sh->colls[m] = colls;
			sh->buckets[m] = m <= 1 ? (int)nt : nbk;
		}
	}
	ddp_comm_destroy(c);
	ddp_store_close(st);
	return 0;
fail:
	snprintf(sh->err, sizeof sh->err, "rank %d: %s", rank, ddp_coll_last_error(c));
	return 4;
}

int main(int argc, char **argv)
{
	struct shared *sh = coll_shared_alloc(sizeof *sh);
	int world = 2, opt, status[16];
	if (!sh)
		return 1;
	sh->d = 256;
	sh->layers = 12;
	sh->vocab = 8192;
	sh->iters = 9;
	sh->bucket_mb = 25;
	while ((opt = getopt(argc, argv, "r:b:d:l:v:i:")) != -1) {
		switch (opt) {
		case 'r': world = atoi(optarg); break;
		case 'b': sh->bucket_mb = atof(optarg); break;
		case 'd': sh->d = atoi(optarg); break;
		case 'l': sh->layers = atoi(optarg); break;
		case 'v': sh->vocab = atoi(optarg); break;
		case 'i': sh->iters = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bucket_bench [-r RANKS] [-b BUCKET_MiB] [-d D] [-l LAYERS] [-v VOCAB] [-i ITERS]\n");
			return 2;
		}
	}
	if (world < 2 || world > 16 || sh->iters < 1 || sh->iters > 62 || sh->layers < 1 || 2 + 12 * sh->layers + 2 > MAXT) {
		fprintf(stderr, "bucket_bench: bad arguments\n");
		return 2;
	}
	size_t n[MAXT], total = 0, nt = model(sh, n);
	for (size_t i = 0; i < nt; i++)
		total += n[i];
	printf("# %d ranks, %zu tensors, %.1f MB of f32 gradients, buckets of %.0f MiB, median of %d iterations\n", world,
	       nt, total * 4 / 1e6, sh->bucket_mb, sh->iters);
	if (coll_job_run(world, bench_rank, sh, 600, status) != 0) {
		fprintf(stderr, "bucket_bench: a rank failed (status %d): %s\n", status[0], sh->err);
		return 1;
	}
	printf("| mode | collectives | async ops | ms per step | GB/s (algbw) |\n|---|---:|---:|---:|---:|\n");
	for (int m = 0; m < NMODES; m++)
		printf("| %s | %d | %d | %.2f | %.2f |\n", mode_names[m], sh->colls[m], m == 0 ? 0 : sh->buckets[m],
		       sh->ms[m], total * 4 / (sh->ms[m] * 1e6));
	coll_shared_free(sh, sizeof *sh);
	return 0;
}
