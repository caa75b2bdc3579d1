/* SPDX-License-Identifier: MIT
 *
 * coll_gpu_bench.c - allreduce-average of device buffers through libddp's
 * collectives (ddp_allreduce_avg, runtime/coll/ddp_coll.h) against a direct NCCL
 * call of the same size (ncclAllReduce with ncclAvg, then
 * cuStreamSynchronize, as the library's call is synchronous).
 *
 *   coll_gpu_bench [-s 1M,16M,64M] [--backend nccl|host]
 *                  [--nccl-lib PATH] [--hostid] [--no-direct]
 *
 * Two ranks are forked (tests/unit/test_coll_harness: in-process store, a
 * private DDP_SHM_DIR); both use device 0 (one GPU holds both ranks: give
 * each its own NCCL_HOSTID with --hostid, or export
 * NCCL_MULTI_RANK_GPU_ENABLE=1 where NCCL >= 2.30 accepts it).  Rank r's
 * buffer holds r + 1 in every element; after the first call every rank
 * checks that it holds 1.5 (first and last element).  Per size: one
 * warm-up call, then a fixed number of timed calls (both ranks must make
 * the same number): 200 up to 1 MiB, 50 up to 16 MiB, 10 above.
 * Prints, on rank 0, one line per size:
 *
 *   coll bytes=N lib_us=X lib_algbw_gbps=Y direct_us=X direct_algbw_gbps=Y
 *
 * (direct_* absent with --no-direct), and `nccl_version V` first when NCCL
 * was loaded.  On the CPU device (cpudev) it runs with --backend host
 * --no-direct, which exercises everything except NCCL.  Not a test: the
 * GPU suite (tests/gpu/run.sh) reads its output.
 *
 * Contract: the parent has no CUDA state (ranks initialise after fork);
 * exit 0 when every rank succeeded, 1 otherwise, 2 on a bad command line.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#define GPU_BENCH_HAVE_NCCL_H 1
#endif
#endif
#include "ddp_coll.h"
#include "ddp_store.h"
#include "test_coll_harness.h"

enum { MAX_SIZES = 16, WORLD = 2 };

/* Shared between the parent and the ranks (coll_shared_alloc). */
struct bench {
	size_t sizes[MAX_SIZES];    /* bytes                                   */
	int nsizes;
	int backend;                /* enum ddp_coll_backend                    */
	const char *nccl_lib;       /* NULL: libnccl.so.2                       */
	int hostid, direct;
	double lib_s[MAX_SIZES];    /* rank 0: seconds per call                */
	double direct_s[MAX_SIZES];
	int nccl_version;
	volatile int id_ready;      /* rank 0 published the NCCL unique id      */
	unsigned char id[128];      /* ncclUniqueId                              */
	char err[WORLD][256];       /* each rank's failure, if any              */
};

static const struct ddp_driver real_driver = COLL_TEST_DRIVER_INIT;

#define FAIL(b, rank, ...)                                                        \
	do {                                                                      \
		snprintf((b)->err[rank], sizeof((b)->err[rank]), __VA_ARGS__);   \
		return 1;                                                         \
	} while (0)

#define CU(b, rank, call)                                                         \
	do {                                                                      \
		CUresult cu_r_ = (call);                                          \
		if (cu_r_ != CUDA_SUCCESS) {                                      \
			const char *cu_n_ = "?";                                  \
			cuGetErrorName(cu_r_, &cu_n_);                            \
			FAIL(b, rank, "%s failed: %s", #call, cu_n_);            \
		}                                                                 \
	} while (0)

/* Timed calls per size: the same on every rank. */
static int timed_calls(size_t bytes)
{
	return bytes <= (1u << 20) ? 200 : bytes <= (16u << 20) ? 50 : 10;
}

/* Every rank must end each call holding 1.5 (the mean of 1 and 2). */
static int check_mean(struct bench *b, int rank, CUdeviceptr buf, size_t count, CUstream s, const char *what)
{
	float first = 0, last = 0;

	CU(b, rank, cuMemcpyDtoHAsync(&first, buf, sizeof first, s));
	CU(b, rank, cuMemcpyDtoHAsync(&last, buf + (count - 1) * sizeof(float), sizeof last, s));
	CU(b, rank, cuStreamSynchronize(s));
	if (first != 1.5f || last != 1.5f)
		FAIL(b, rank, "%s: rank %d holds %g and %g after averaging 1 and 2 (expected 1.5)", what, rank,
		     first, last);
	return 0;
}

static int fill(struct bench *b, int rank, CUdeviceptr buf, size_t count, CUstream s)
{
	float v = (float)(rank + 1);
	unsigned bits;

	memcpy(&bits, &v, sizeof bits);
	CU(b, rank, cuMemsetD32Async(buf, bits, count, s));
	CU(b, rank, cuStreamSynchronize(s));
	return 0;
}

static int run_lib(struct bench *b, struct coll_job *job, int rank, CUdeviceptr buf, CUstream s)
{
	struct ddp_coll_config cfg;
	struct ddp_store *store = NULL;
	struct ddp_comm *comm = NULL;
	ddp_result rc;
	int i;

	ddp_coll_config_default(&cfg);
	cfg.backend = (enum ddp_coll_backend)b->backend;
	cfg.timeout_s = 60;
	cfg.shm_dir = job->shm_dir;
	cfg.nccl_lib = b->nccl_lib;
	cfg.real_gpu = b->backend == DDP_COLL_NCCL;
	cfg.driver = &real_driver;
	rc = coll_job_comm(job, rank, &cfg, &store, &comm);
	if (rc != DDP_OK)
		FAIL(b, rank, "ddp_comm_init (%s backend) failed: %s", b->backend == DDP_COLL_NCCL ? "nccl" : "host",
		     ddp_strerror(rc));
	if (rank == 0)
		b->nccl_version = ddp_comm_nccl_version(comm);
	for (i = 0; i < b->nsizes; i++) {
		size_t count = b->sizes[i] / sizeof(float);
		int iters = 0;
		double t0, t1;

		if (fill(b, rank, buf, count, s))
			goto out;
		rc = ddp_allreduce_avg(comm, (void *)(uintptr_t)buf, count, DDP_DT_F32, 1, s); /* warm-up */
		if (rc != DDP_OK) {
			snprintf(b->err[rank], sizeof b->err[rank], "ddp_allreduce_avg: %s", ddp_coll_last_error(comm));
			goto out;
		}
		if (check_mean(b, rank, buf, count, s, "library allreduce"))
			goto out;
		t0 = t1 = coll_test_now();
		int want = timed_calls(b->sizes[i]);
		while (iters < want) {
			rc = ddp_allreduce_avg(comm, (void *)(uintptr_t)buf, count, DDP_DT_F32, 1, s);
			if (rc != DDP_OK) {
				snprintf(b->err[rank], sizeof b->err[rank], "ddp_allreduce_avg: %s",
					 ddp_coll_last_error(comm));
				goto out;
			}
			iters++;
			t1 = coll_test_now();
		}
		if (rank == 0)
			b->lib_s[i] = (t1 - t0) / iters;
	}
out:
	ddp_comm_destroy(comm);
	ddp_store_close(store);
	return b->err[rank][0] ? 1 : 0;
}

#ifdef GPU_BENCH_HAVE_NCCL_H
static int run_direct(struct bench *b, int rank, CUdeviceptr buf, CUstream s)
{
	ncclResult_t (*get_id)(ncclUniqueId *);
	ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
	ncclResult_t (*allreduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
				  cudaStream_t);
	ncclResult_t (*destroy)(ncclComm_t);
	const char *(*errstr)(ncclResult_t);
	ncclUniqueId id;
	ncclComm_t comm;
	ncclResult_t nr;
	void *h = dlopen(b->nccl_lib ? b->nccl_lib : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	int i;

	if (!h)
		FAIL(b, rank, "cannot load NCCL (%s): %s", b->nccl_lib ? b->nccl_lib : "libnccl.so.2", dlerror());
	*(void **)&get_id = dlsym(h, "ncclGetUniqueId");
	*(void **)&init = dlsym(h, "ncclCommInitRank");
	*(void **)&allreduce = dlsym(h, "ncclAllReduce");
	*(void **)&destroy = dlsym(h, "ncclCommDestroy");
	*(void **)&errstr = dlsym(h, "ncclGetErrorString");
	if (!get_id || !init || !allreduce || !destroy || !errstr)
		FAIL(b, rank, "NCCL library lacks a symbol");
	_Static_assert(sizeof(id) <= sizeof(b->id), "ncclUniqueId size");
	if (rank == 0) {
		if ((nr = get_id(&id)) != ncclSuccess)
			FAIL(b, rank, "ncclGetUniqueId: %s", errstr(nr));
		memcpy(b->id, &id, sizeof id);
		__atomic_store_n(&b->id_ready, 1, __ATOMIC_RELEASE);
	} else {
		double t0 = coll_test_now();

		while (!__atomic_load_n(&b->id_ready, __ATOMIC_ACQUIRE)) {
			if (coll_test_now() - t0 > 60)
				FAIL(b, rank, "rank 0 never published the NCCL id");
			usleep(1000);
		}
		memcpy(&id, b->id, sizeof id);
	}
	if ((nr = init(&comm, WORLD, id, rank)) != ncclSuccess)
		FAIL(b, rank, "ncclCommInitRank: %s", errstr(nr));
	for (i = 0; i < b->nsizes; i++) {
		size_t count = b->sizes[i] / sizeof(float);
		int iters = 0, want = timed_calls(b->sizes[i]);
		double t0;

		if (fill(b, rank, buf, count, s))
			return 1;
		if ((nr = allreduce((void *)buf, (void *)buf, count, ncclFloat, ncclAvg, comm, (cudaStream_t)s)) !=
		    ncclSuccess)
			FAIL(b, rank, "ncclAllReduce: %s", errstr(nr));
		CU(b, rank, cuStreamSynchronize(s));
		if (check_mean(b, rank, buf, count, s, "direct ncclAllReduce"))
			return 1;
		t0 = coll_test_now();
		while (iters < want) {
			if ((nr = allreduce((void *)buf, (void *)buf, count, ncclFloat, ncclAvg, comm,
					    (cudaStream_t)s)) != ncclSuccess)
				FAIL(b, rank, "ncclAllReduce: %s", errstr(nr));
			CU(b, rank, cuStreamSynchronize(s));
			iters++;
		}
		if (rank == 0)
			b->direct_s[i] = (coll_test_now() - t0) / iters;
	}
	destroy(comm);
	return 0;
}
#else
static int run_direct(struct bench *b, int rank, CUdeviceptr buf, CUstream s)
{
	(void)buf;
	(void)s;
	FAIL(b, rank, "built without nccl.h: no direct NCCL measurement");
}
#endif

static int rank_main(struct coll_job *job, int rank, void *arg)
{
	struct bench *b = arg;
	size_t max = 0;
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CUdeviceptr buf;
	char host[32];
	int i, rc;

	if (b->hostid) {
		snprintf(host, sizeof host, "ddpbench-host%d", rank);
		setenv("NCCL_HOSTID", host, 1);
	}
	for (i = 0; i < b->nsizes; i++)
		if (b->sizes[i] > max)
			max = b->sizes[i];
	CU(b, rank, cuInit(0));
	CU(b, rank, cuDeviceGet(&dev, 0));
	CU(b, rank, cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(b, rank, cuCtxSetCurrent(ctx));
	CU(b, rank, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU(b, rank, cuMemAlloc(&buf, max));
	rc = run_lib(b, job, rank, buf, s);
	if (rc == 0 && b->direct)
		rc = run_direct(b, rank, buf, s);
	cuMemFree(buf);
	cuStreamDestroy(s);
	return rc;
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return 0;
	switch (*end) {
	case 'K': case 'k': v *= 1024; end++; break;
	case 'M': case 'm': v *= 1024 * 1024; end++; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end != '\0')
		return 0;
	return ((size_t)v + 3) / 4 * 4;
}

static void usage(const char *why)
{
	fprintf(stderr, "coll_gpu_bench: %s; usage: coll_gpu_bench [-s 1M,16M] [--backend nccl|host] "
			"[--nccl-lib PATH] [--hostid] [--no-direct]\n", why);
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench *b = coll_shared_alloc(sizeof *b);
	int status[WORLD], i, failed;
	const char *sizes = "1M,16M,64M";

	if (!b)
		return 1;
	b->backend = DDP_COLL_NCCL;
	b->direct = 1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s") && i + 1 < argc)
			sizes = argv[++i];
		else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "nccl"))
				b->backend = DDP_COLL_NCCL;
			else if (!strcmp(argv[i], "host"))
				b->backend = DDP_COLL_HOST;
			else
				usage("--backend takes nccl or host");
		} else if (!strcmp(argv[i], "--nccl-lib") && i + 1 < argc)
			b->nccl_lib = argv[++i];
		else if (!strcmp(argv[i], "--hostid"))
			b->hostid = 1;
		else if (!strcmp(argv[i], "--no-direct"))
			b->direct = 0;
		else
			usage("unknown or incomplete option");
	}
	{
		char list[256], *save = NULL, *tok;

		snprintf(list, sizeof list, "%s", sizes);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (b->nsizes == MAX_SIZES)
				usage("too many sizes");
			if (!(b->sizes[b->nsizes++] = parse_size(tok)))
				usage("bad size");
		}
	}
	failed = coll_job_run(WORLD, rank_main, b, 300, status);
	for (i = 0; i < WORLD; i++)
		if (status[i] != 0)
			fprintf(stderr, "coll_gpu_bench: rank %d failed (status %d): %s\n", i, status[i],
				b->err[i][0] ? b->err[i] : "no message");
	if (failed)
		return 1;
	if (b->nccl_version)
		printf("nccl_version %d\n", b->nccl_version);
	for (i = 0; i < b->nsizes; i++) {
		double gb = (double)b->sizes[i] / 1e9;

		printf("coll bytes=%zu backend=%s lib_us=%.1f lib_algbw_gbps=%.2f", b->sizes[i],
		       b->backend == DDP_COLL_NCCL ? "nccl" : "host", b->lib_s[i] * 1e6, gb / b->lib_s[i]);
		if (b->direct)
			printf(" direct_us=%.1f direct_algbw_gbps=%.2f", b->direct_s[i] * 1e6, gb / b->direct_s[i]);
		printf("\n");
	}
	return 0;
}
