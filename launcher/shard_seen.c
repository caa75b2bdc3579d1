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
 * $TMPDIR): byte i is set by any process of any rank that built a view of
 * the i-th file of DDP_SHARD_FILES; byte nfiles + k is set by local rank
 * k's libddp when it loaded the list (it could report).  ddprun speaks only
 * when every local rank could report and none opened any file of a spec.
 *
 * Contract: single-threaded (ddprun's main thread); failures to make the
 * channel are silent (then nothing is said at the end).
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

void launch_shard_seen_report(struct launch_job *job, int say)
{
	size_t n = seen_files + (size_t)job->nranks;
	unsigned char *b;
	int fd;

	if (!seen_path[0])
		return;
	fd = open(seen_path, O_RDONLY | O_CLOEXEC);
	unlink(seen_path);
	seen_path[0] = '\0';
	b = fd >= 0 ? calloc(1, n) : NULL;
	if (!say || !b || pread(fd, b, n, 0) != (ssize_t)n)
		goto out;
	for (int k = 0; k < job->nranks; k++)
		if (!b[seen_files + (size_t)k])
			goto out; /* a rank that could not report: say nothing */
	for (int s = 0; s < job->o->shard.n; s++) {
		const char *cur = job->shard_files, *first = NULL;
		struct ddp_shard_fixed at;
		char path[DDP_SHARD_PATH_MAX], name[DDP_SHARD_PATH_MAX] = "";
		size_t i = 0, files = 0;
		int si, opened = 0;

		for (; ddp_shard_snapshot_next(&cur, &si, &at, path, sizeof path); i++) {
			if (si != s)
				continue;
			files++;
			opened |= b[i];
			if (!first) {
				snprintf(name, sizeof name, "%s", path);
				first = name;
			}
		}
		if (files && !opened)
			launch_msg("warning: --shard %s: no rank%s opened %s%s, so nothing was sharded; if the "
				   "program read its data, it did so by another path or name (give that one to "
				   "--shard)",
				   job->o->shard.v[s], job->nranks < job->world_size ? " on this node" : "",
				   first, files > 1 ? " or any other file it matched" : "");
	}
out:
	free(b);
	if (fd >= 0)
		close(fd);
}
