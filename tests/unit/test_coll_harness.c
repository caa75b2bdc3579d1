/* SPDX-License-Identifier: MIT
 *
 * test_coll_harness.c - forked multi-rank jobs for the collectives tests
 * (test_coll_harness.h).
 *
 * Contract: single-threaded parent; each rank is a child process that exits
 * with its function's result (never returns into the test).
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ddp_store.h"
#include "ddp_store_server.h"
#include "test_coll_harness.h"

#define JOB_SECRET "coll-test-secret"

double coll_test_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *coll_shared_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void coll_shared_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes ? bytes : 1);
}

int coll_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int coll_job_run(int world, coll_rank_fn fn, void *arg, double limit_s, int *status)
{
	struct coll_job job;
	struct ddp_store_server *srv = NULL;
	pid_t pids[64];
	int failed = 0, left = 0;
	memset(&job, 0, sizeof job);
	if (world < 1 || world > 64)
		return world;
	for (int r = 0; r < world; r++)
		status[r] = 125;
	if (ddp_store_server_start("127.0.0.1", 0, JOB_SECRET, &srv) != DDP_OK)
		return world;
	job.port = ddp_store_server_port(srv);
	job.world = world;
	snprintf(job.shm_dir, sizeof job.shm_dir, "%s/ddp-coll-test-XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(job.shm_dir)) {
		ddp_store_server_stop(srv);
		return world;
	}
	fflush(stdout);
	fflush(stderr);
	job.t0 = coll_test_now();
	for (int r = 0; r < world; r++) {
		pid_t p = fork();
		if (p == 0) {
			int rc = fn(&job, r, arg);
			fflush(stdout);
			_exit(rc);
		}
		pids[r] = p;
		if (p > 0)
			left++;
		else
			status[r] = 126;
	}
	double deadline = coll_test_now() + limit_s;
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			for (int r = 0; r < world; r++)
				if (pids[r] == p) {
					status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
					pids[r] = 0;
					left--;
				}
			continue;
		}
		if (coll_test_now() > deadline) {
			for (int r = 0; r < world; r++)
				if (pids[r] > 0) {
					kill(pids[r], SIGKILL);
					waitpid(pids[r], NULL, 0);
					status[r] = 124;
					pids[r] = 0;
					left--;
				}
			break;
		}
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	for (int r = 0; r < world; r++)
		failed += status[r] != 0;
	ddp_store_server_stop(srv);
	/* leave the directory if a segment leaked: the test checks it first */
	rmdir(job.shm_dir);
	return failed;
}

ddp_result coll_job_comm(struct coll_job *job, int rank, const struct ddp_coll_config *cfg,
			 struct ddp_store **store, struct ddp_comm **comm)
{
	struct ddp_coll_config def;
	*comm = NULL;
	DDP_CHECK(ddp_store_connect("127.0.0.1", job->port, JOB_SECRET, rank, 10.0, store));
	if (!cfg) {
		memset(&def, 0, sizeof def);
		def.backend = DDP_COLL_HOST;
		def.timeout_s = 10;
		def.shm_dir = job->shm_dir;
		cfg = &def;
	}
	ddp_result rc = ddp_comm_init(*store, rank, job->world, rank, job->world, cfg, comm);
	if (rc != DDP_OK) {
		ddp_store_close(*store);
		*store = NULL;
	}
	return rc;
}
