/* SPDX-License-Identifier: MIT
 *
 * coll_bench.c - host-backend allreduce bandwidth against memcpy bandwidth.
 *
 *   build/bench/coll_bench [-r 2,4,8] [-s 4K,1M,1G] [-t f32|f16|bf16] [-m MAXTOTAL_MiB] [-c SLOT]
 *
 * -c sets the host segment's slot size per rank (default: the library's);
 * -a makes the ranks' buffers page-aligned (like the pinned staging buffers
 * that device gradients go through) instead of malloc's page + 16.
 *
 * For each rank count and size: forked ranks (test_coll_harness), one warm-up
 * call, then as many timed calls as fit in about 0.3 s (at least 3).  Prints
 * NCCL-style columns: algbw = bytes / time, busbw = algbw * 2(n-1)/n, and
 * memcpy bandwidth of the same size measured in this run by one process
 * (bytes copied / time), and per process while n processes copy at once
 * (what each rank can get when all ranks move memory together).  A point whose ranks would hold more than MAXTOTAL
 * MiB together (default 4096) is skipped with a note.  Not a test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_coll.h"
#include "ddp_store.h"
#include "test_coll_harness.h"

struct point {
	size_t bytes;
	size_t slot;   /* host segment slot bytes (0 = default) */
	int align;     /* page-aligned buffers                  */
	enum ddp_dtype t;
	double secs;   /* per call, rank 0 */
	int iters;
};

static double memcpy_bw(size_t bytes)
{
	char *a = malloc(bytes), *b = malloc(bytes);
	if (!a || !b)
		return 0;
	memset(a, 1, bytes);
	memset(b, 2, bytes);
	double best = 1e30;
	int iters = 0;
	double start = coll_test_now();
	while (iters < 3 || (coll_test_now() - start < 0.3 && iters < 100000)) {
		double t0 = coll_test_now();
		memcpy(b, a, bytes);
		__asm__ volatile("" ::"r"(b) : "memory");
		double dt = coll_test_now() - t0;
		if (dt < best)
			best = dt;
		iters++;
	}
	free(a);
	free(b);
	return (double)bytes / best;
}

/* memcpy bandwidth per process while `procs` processes copy at once. */
static int memcpy_rank(struct coll_job *job, int rank, void *arg)
{
	double *out = arg;
	(void)job;
	out[1 + rank] = memcpy_bw((size_t)out[0]);
	return 0;
}

static double memcpy_bw_concurrent(size_t bytes, int procs)
{
	double *out = coll_shared_alloc(sizeof(double) * 65);
	int status[64];
	double sum = 0;
	out[0] = (double)bytes;
	coll_job_run(procs, memcpy_rank, out, 120, status);
	for (int r = 0; r < procs; r++)
		sum += out[1 + r];
	coll_shared_free(out, sizeof(double) * 65);
	return sum / procs;
}

static int bench_rank(struct coll_job *job, int rank, void *arg)
{
	struct point *p = arg;
	struct ddp_store *st;
	struct ddp_comm *c;
	struct ddp_coll_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.backend = DDP_COLL_HOST;
	cfg.timeout_s = 60;
	cfg.shm_dir = job->shm_dir;
	cfg.slot_bytes = p->slot;
	if (coll_job_comm(job, rank, &cfg, &st, &c) != DDP_OK)
		return 2;
	size_t es = ddp_dtype_size(p->t), n = p->bytes / es;
	/* malloc'ed buffers of this size sit at page + 16: as far from the
	 * page-aligned segment as 4 KiB aliasing allows; -a aligns them like
	 * the pinned staging of device buffers */
	void *buf = p->align ? aligned_alloc(4096, (p->bytes + 4095) / 4096 * 4096) : malloc(p->bytes + 64);
	if (!buf)
		return 3;
	memset(buf, 0, p->bytes);
	if (ddp_allreduce_avg(c, buf, n, p->t, 0, NULL) != DDP_OK)
		return 4;
	/* agree on an iteration count from the warm-up's duration */
	double t0 = coll_test_now();
	if (ddp_allreduce_avg(c, buf, n, p->t, 0, NULL) != DDP_OK)
		return 4;
	double one = coll_test_now() - t0;
	int iters = (int)(0.3 / (one > 1e-7 ? one : 1e-7));
	iters = iters < 3 ? 3 : iters > 2000 ? 2000 : iters;
	int64_t agreed = iters;
	if (ddp_broadcast(c, &agreed, sizeof agreed, 0, 0, NULL) != DDP_OK)
		return 4;
	t0 = coll_test_now();
	for (int64_t i = 0; i < agreed; i++)
		if (ddp_allreduce_avg(c, buf, n, p->t, 0, NULL) != DDP_OK)
			return 4;
	if (rank == 0) {
		p->secs = (coll_test_now() - t0) / (double)agreed;
		p->iters = (int)agreed;
	}
	free(buf);
	ddp_comm_destroy(c);
	ddp_store_close(st);
	return 0;
}

static size_t parse_size(const char *s)
{
	char *e;
	double v = strtod(s, &e);
	switch (*e) {
	case 'K': case 'k': v *= 1024; break;
	case 'M': case 'm': v *= 1024 * 1024; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	const char *ranks = "2,3,4,8", *sizes = "4K,64K,1M,16M,256M,1G";
	enum ddp_dtype t = DDP_DT_F32;
	double max_total = 4096;
	size_t slot = 0;
	int align = 0;
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "-a")) {
			align = 1;
			i--;
		} else if (i + 1 >= argc)
			break;
		else if (!strcmp(argv[i], "-r"))
			ranks = argv[i + 1];
		else if (!strcmp(argv[i], "-s"))
			sizes = argv[i + 1];
		else if (!strcmp(argv[i], "-c"))
			slot = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "-m"))
			max_total = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "-t"))
			t = ddp_dtype_reducible(ddp_dtype_parse(argv[i + 1])) ? ddp_dtype_parse(argv[i + 1]) : DDP_DT_F32;
		else {
			fprintf(stderr, "usage: %s [-r 2,4,8] [-s 4K,1M,1G] [-t f32|f16|bf16] [-m MAXTOTAL_MiB] [-c SLOT] [-a]\n", argv[0]);
			return 2;
		}
	}
	printf("| ranks | size | dtype | iters | time/call | algbw GB/s | busbw GB/s | memcpy GB/s | algbw/memcpy | memcpy x n GB/s | algbw/(memcpy x n) |\n");
	printf("|------:|-----:|:-----:|------:|----------:|-----------:|-----------:|------------:|-------------:|------------:|-------------:|\n");
	struct point *p = coll_shared_alloc(sizeof *p);
	char rl[256], sl[256];
	snprintf(rl, sizeof rl, "%s", ranks);
	for (char *rs = strtok(rl, ","); rs; rs = strtok(NULL, ",")) {
		int w = atoi(rs);
		char *save = NULL;
		snprintf(sl, sizeof sl, "%s", sizes);
		for (char *ss = strtok_r(sl, ",", &save); ss; ss = strtok_r(NULL, ",", &save)) {
			size_t bytes = parse_size(ss);
			if ((double)bytes * w / (1024.0 * 1024) > max_total) {
				printf("| %d | %s | %s | skipped: %d x %s exceeds -m %.0f MiB | | | | | |\n", w, ss,
				       ddp_dtype_name(t), w, ss, max_total);
				continue;
			}
			memset(p, 0, sizeof *p);
			p->bytes = bytes;
			p->slot = slot;
			p->align = align;
			p->t = t;
			int status[64];
			if (coll_job_run(w, bench_rank, p, 600, status) != 0 || p->secs <= 0) {
				printf("| %d | %s | failed (rank 0 status %d) | | | | | | |\n", w, ss, status[0]);
				continue;
			}
			double alg = (double)bytes / p->secs / 1e9;
			double bus = alg * 2.0 * (w - 1) / w;
			double mc = memcpy_bw(bytes) / 1e9;
			double mcn = memcpy_bw_concurrent(bytes, w) / 1e9;
			printf("| %d | %s | %s | %d | %.1f us | %.2f | %.2f | %.2f | %.0f%% | %.2f | %.0f%% |\n", w, ss,
			       ddp_dtype_name(t), p->iters, p->secs * 1e6, alg, bus, mc, mc > 0 ? 100.0 * alg / mc : 0, mcn,
			       mcn > 0 ? 100.0 * alg / mcn : 0);
			fflush(stdout);
		}
	}
	coll_shared_free(p, sizeof *p);
	return 0;
}
