/* SPDX-License-Identifier: MIT
 *
 * shard_seen.c - ddprun says, once and at the end of the job, when no rank
 * opened a --shard file: the program then read its data by another path or
 * name (a hard link, a copy) or not at all, and every rank saw all of it.
 * Before, each process the ranks ran (a pyenv shim, the shell of
 * `sh -c 'cd sub && exec prog'`) expanded the specs again from its own
 * folder and said "--shard ... matches no file" when it did not match there,
 * though sharding worked in the program itself.
 *
 * The channel is a small file of ddprun's (DDP_SHARD_SEEN, /dev/shm or
 * $TMPDIR), named by path, so that it reaches every process of a rank: one
 * started by Python's subprocess (close_fds=True: no inherited descriptor,
 * such as the status board's, survives), after a `cd`, or a fork worker.
 * Byte i is set by any process of any rank that built a view of the i-th
 * file of DDP_SHARD_FILES; byte nfiles + k by local rank k's libddp when it
 * loaded the list (it could report).  launch_progress_shard_unopened
 * (progress.c) speaks only when no rank marked a spec, here or on the
 * status board, and every local rank could report.
 *
 * Contract: single-threaded (ddprun's main thread); failures to make the
 * channel are silent (launch_shard_seen_load then answers 0: unknown).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ddp_shard.h"
#include "launch.h"

static char seen_path[512];
static size_t seen_files;

static size_t count_lines(const char *list)
{
	const char *cur = list;
	struct ddp_shard_fixed at;
	char path[DDP_SHARD_PATH_MAX];
	size_t n = 0;
	int si;

	while (ddp_shard_snapshot_next(&cur, &si, &at, path, sizeof path))
		n++;
	return n;
}

const char *launch_shard_seen_create(struct launch_job *job)
{
	const char *tmp = getenv("TMPDIR");
	int fd = -1;

	if (seen_path[0])
		return seen_path;
	seen_files = count_lines(job->shard_files);
	for (int i = 0; i < 2 && fd < 0; i++) {
		const char *dir = i == 0 ? "/dev/shm" : tmp && *tmp ? tmp : "/tmp";
		snprintf(seen_path, sizeof seen_path, "%s/ddprun-shard-%d-XXXXXX", dir, (int)getpid());
		fd = mkostemp(seen_path, O_CLOEXEC);
	}
	if (fd < 0 || ftruncate(fd, (off_t)(seen_files + (size_t)job->nranks)) != 0) {
		if (fd >= 0)
			unlink(seen_path);
		seen_path[0] = '\0';
	}
	if (fd >= 0)
		close(fd);
	return seen_path[0] ? seen_path : NULL;
}

int launch_shard_seen_load(struct launch_job *job, unsigned char *opened, int nspecs)
{
	size_t n = seen_files + (size_t)job->nranks;
	unsigned char *b = NULL;
	int fd, ok = 0;

	if (!seen_path[0])
		return 0;
	fd = open(seen_path, O_RDONLY | O_CLOEXEC);
	b = fd >= 0 ? calloc(1, n) : NULL;
	if (!b || pread(fd, b, n, 0) != (ssize_t)n)
		goto out;
	for (int k = 0; k < job->nranks; k++)
		if (!b[seen_files + (size_t)k])
			goto out; /* a rank that could not report: unknown */
	const char *cur = job->shard_files;
	struct ddp_shard_fixed at;
	char path[DDP_SHARD_PATH_MAX];
	int si;
	for (size_t i = 0; ddp_shard_snapshot_next(&cur, &si, &at, path, sizeof path); i++)
		if (si >= 0 && si < nspecs && i < seen_files && b[i])
			opened[si] = 1;
	ok = 1;
out:
	free(b);
	if (fd >= 0)
		close(fd);
	return ok;
}

void launch_shard_seen_remove(void)
{
	if (seen_path[0])
		unlink(seen_path);
	seen_path[0] = '\0';
}
