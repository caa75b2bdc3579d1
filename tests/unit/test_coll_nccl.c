/* SPDX-License-Identifier: MIT
 *
 * test_coll_nccl.c - the NCCL backend on a machine without a GPU: loading
 * (a missing DDP_NCCL_LIB gives a clear error naming the variable; the
 * toolkit's libnccl.so.2 resolves every symbol and reports its version),
 * communicator init failing cleanly (no crash, no hang) when there is no
 * GPU, and DDP_BACKEND=auto choosing the host backend when NCCL cannot be
 * used on every rank.  This binary does not load the CPU device, so NCCL
 * finds no libcuda at all.  COLL_TEST_NCCL_LIB (from tests/unit/coll.mk) is
 * the toolkit's NCCL; tests that need it skip, saying so, when it is absent.
 */
#define CHECK_MAIN
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "ddp_coll.h"
#include "ddp_log.h"
#include "ddp_store.h"
#include "test_coll_harness.h"

#ifndef COLL_TEST_NCCL_LIB
#define COLL_TEST_NCCL_LIB ""
#endif

static const char *nccl_path(void)
{
	const char *p = getenv("DDP_TEST_NCCL_LIB");
	if (!p || !*p)
		p = COLL_TEST_NCCL_LIB;
	return *p && access(p, R_OK) == 0 ? p : NULL;
}

struct nccl_case {
	const char *lib;
	enum ddp_coll_backend backend;
	int real_gpu;
	ddp_result rc[4];
	int chosen[4];
	double t[4];
	char err[4][512];
};

static int nccl_rank(struct coll_job *job, int rank, void *arg)
{
	struct nccl_case *nc = arg;
	struct ddp_coll_config cfg;
	struct ddp_store *st;
	struct ddp_comm *c = NULL;
	memset(&cfg, 0, sizeof cfg);
	cfg.backend = nc->backend;
	cfg.timeout_s = 10;
	cfg.shm_dir = job->shm_dir;
	cfg.nccl_lib = nc->lib;
	cfg.real_gpu = nc->real_gpu;
	if (ddp_store_connect("127.0.0.1", job->port, "coll-test-secret", rank, 10, &st) != DDP_OK)
		return 2;
	double t0 = coll_test_now();
	nc->rc[rank] = ddp_comm_init(st, rank, job->world, rank, job->world, &cfg, &c);
	nc->t[rank] = coll_test_now() - t0;
	nc->chosen[rank] = c ? (int)ddp_comm_backend(c) : -1;
	/* the message is on stderr (DDP_ERROR); keep the last warning */
	snprintf(nc->err[rank], sizeof nc->err[rank], "%s", ddp_log_last_warning());
	ddp_comm_destroy(c);
	ddp_store_close(st);
	return 0;
}

static struct nccl_case *run(int world, const char *lib, enum ddp_coll_backend b, int real_gpu, int *status)
{
	struct nccl_case *nc = coll_shared_alloc(sizeof *nc);
	if (!nc)
		return NULL;
	nc->lib = lib;
	nc->backend = b;
	nc->real_gpu = real_gpu;
	coll_job_run(world, nccl_rank, nc, 60, status);
	for (int r = 0; r < world; r++)
		printf("# rank %d: %s after %.2f s, backend %d: %s\n", r, ddp_strerror(nc->rc[r]), nc->t[r], nc->chosen[r],
		       nc->err[r]);
	return nc;
}

TEST(probe_missing_library_names_the_variable)
{
	int v = -1;
	char msg[512];
	CHECK_EQ_INT(ddp_coll_nccl_probe("/nonexistent/libnccl.so.2", &v, msg, sizeof msg), DDP_ERR_UNSUPPORTED);
	CHECK_EQ_INT(v, 0);
	printf("# %s\n", msg);
	CHECK(strstr(msg, "DDP_NCCL_LIB=/nonexistent/libnccl.so.2") != NULL);
	/* a library that is not NCCL: symbols missing */
	CHECK_EQ_INT(ddp_coll_nccl_probe("libm.so.6", &v, msg, sizeof msg), DDP_ERR_UNSUPPORTED);
	printf("# %s\n", msg);
	CHECK(strstr(msg, "lacks ncclGetVersion") != NULL);
}

TEST(probe_toolkit_nccl_resolves_symbols)
{
	const char *p = nccl_path();
	if (!p)
		SKIP("no libnccl.so.2 next to the CUDA toolkit (set DDP_TEST_NCCL_LIB to one)");
	int v = 0;
	char msg[512];
	CHECK_EQ_INT(ddp_coll_nccl_probe(p, &v, msg, sizeof msg), DDP_OK);
	printf("# %s: NCCL version code %d\n", p, v);
	CHECK(v >= 21400);
}

TEST(init_with_missing_library_fails_on_every_rank)
{
	int status[2];
	struct nccl_case *nc = run(2, "/nonexistent/libnccl.so.2", DDP_COLL_NCCL, 1, status);
	REQUIRE(nc);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(status[r], 0);
		CHECK_EQ_INT(nc->rc[r], DDP_ERR_UNSUPPORTED);
		CHECK(strstr(nc->err[r], "DDP_NCCL_LIB=/nonexistent/libnccl.so.2") != NULL);
	}
	coll_shared_free(nc, sizeof *nc);
}

TEST(init_without_gpu_fails_cleanly)
{
	const char *p = nccl_path();
	if (!p)
		SKIP("no libnccl.so.2 next to the CUDA toolkit (set DDP_TEST_NCCL_LIB to one)");
	int status[2];
	struct nccl_case *nc = run(2, p, DDP_COLL_NCCL, 1, status);
	REQUIRE(nc);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(status[r], 0);       /* no crash, no hang (limit 60 s) */
		CHECK(nc->rc[r] != DDP_OK);
		CHECK(nc->t[r] < 15);
		CHECK(strstr(nc->err[r], "NCCL init failed on rank") != NULL);
	}
	coll_shared_free(nc, sizeof *nc);
}

TEST(auto_picks_host_without_gpu_or_nccl)
{
	int status[2];
	struct nccl_case *nc = run(2, "/nonexistent/libnccl.so.2", DDP_COLL_AUTO, 1, status);
	REQUIRE(nc);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(nc->rc[r], DDP_OK);
		CHECK_EQ_INT(nc->chosen[r], DDP_COLL_HOST);
	}
	coll_shared_free(nc, sizeof *nc);
	nc = run(2, NULL, DDP_COLL_AUTO, 0, status);
	REQUIRE(nc);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(nc->rc[r], DDP_OK);
		CHECK_EQ_INT(nc->chosen[r], DDP_COLL_HOST);
	}
	coll_shared_free(nc, sizeof *nc);
}

/* Builds a stand-in "NCCL" that loads and resolves every symbol but reports
 * version 2.13 (too old for the backend).  Returns its path, or NULL when no
 * C compiler is at hand (the test then skips). */
static const char *fake_old_nccl(char *path, size_t len)
{
	static const char src[] =
		"int ncclGetVersion(int *v) { *v = 21300; return 0; }\n"
		"int ncclGetUniqueId(void) { return 1; }\n"
		"int ncclCommInitRankConfig(void) { return 1; }\n"
		"int ncclCommGetAsyncError(void) { return 1; }\n"
		"int ncclAllReduce(void) { return 1; }\n"
		"int ncclBroadcast(void) { return 1; }\n"
		"int ncclCommAbort(void) { return 1; }\n"
		"int ncclCommDestroy(void) { return 1; }\n"
		"int ncclGroupStart(void) { return 0; }\n"
		"int ncclGroupEnd(void) { return 0; }\n"
		"const char *ncclGetErrorString(int r) { (void)r; return \"fake\"; }\n";
	char dir[] = "/tmp/ddp-fake-nccl-XXXXXX", c_path[96], cmd[512];
	if (!mkdtemp(dir))
		return NULL;
	snprintf(c_path, sizeof c_path, "%s/fake.c", dir);
	snprintf(path, len, "%s/libnccl.so.2", dir);
	FILE *f = fopen(c_path, "w");
	if (!f)
		return NULL;
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s' 2>/dev/null", path, c_path);
	int rc = system(cmd);
	unlink(c_path);
	if (rc != 0) {
		rmdir(dir);
		return NULL;
	}
	return path;
}

TEST(auto_picks_host_when_nccl_is_too_old)
{
	char path[128];
	if (!fake_old_nccl(path, sizeof path))
		SKIP("no C compiler (cc) to build a stand-in NCCL 2.13");
	int v = 0;
	CHECK_EQ_INT(ddp_coll_nccl_probe(path, &v, NULL, 0), DDP_OK);
	CHECK_EQ_INT(v, 21300);
	int status[2];
	/* auto on a "real GPU" where every rank loads NCCL 2.13: host, not an
	 * NCCL communicator that the backend then refuses as too old */
	struct nccl_case *nc = run(2, path, DDP_COLL_AUTO, 1, status);
	REQUIRE(nc);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(status[r], 0);
		CHECK_EQ_INT(nc->rc[r], DDP_OK);
		CHECK_EQ_INT(nc->chosen[r], DDP_COLL_HOST);
	}
	coll_shared_free(nc, sizeof *nc);
	/* asked for explicitly, it is refused with the version */
	nc = run(2, path, DDP_COLL_NCCL, 1, status);
	REQUIRE(nc);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(nc->rc[r], DDP_ERR_UNSUPPORTED);
		CHECK(strstr(nc->err[r], "too old") != NULL);
	}
	coll_shared_free(nc, sizeof *nc);
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
