/* SPDX-License-Identifier: MIT
 *
 * notice.c - ddprun says once, at start, where the ranks' writes are left
 * unprotected (docs/write-safety.md "What is protected, and what stays
 * shared"), instead of every rank's libddp saying it: the temporary folders
 * under DDP_REDIRECT_TMP=0, and a working folder that is itself a shared
 * place.  The ranks then get DDP_WRITE_SAID=1: their libddp does not repeat
 * these lines, and only rank 1 says the first write it makes in place in a
 * shared folder (what a program writes is known only when it writes it;
 * every rank runs the same program).
 *
 * ddprun reads DDP_REDIRECT_TMP and DDP_TEMP_DIRS from its environment,
 * which the ranks inherit.
 *
 * Contract: the rules mirror runtime/write/ddp_write.c's excluded() for the
 * folders known before the ranks start (/dev, /proc, /sys, /run; the
 * temporary folders, DDP_TEMP_DIRS and $TMPDIR, when DDP_REDIRECT_TMP=0;
 * the write folder itself); paths are compared as written (absolute, no
 * symbolic link resolved), as libddp compares them.  Nothing is said (and
 * DDP_WRITE_SAID is not set) when no rank other than 0 runs here, with
 * --all-ranks-write, or without libddp.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "ddp_path.h"
#include "launch.h"

/* The temporary folders, absolute, ", "-separated into list; whether abs
 * is under one of them. */
static int temp_folders(const char *cwd, const char *abs, char *list, size_t cap)
{
	const char *dirs = getenv("DDP_TEMP_DIRS"), *tmpdir = getenv("TMPDIR");
	char buf[4096], *save = NULL;
	int in = 0;
	size_t o = 0;

	list[0] = '\0';
	snprintf(buf, sizeof buf, "%s:%s", dirs && *dirs ? dirs : "/tmp:/var/tmp", tmpdir ? tmpdir : "");
	for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char a[PATH_MAX];
		if (!*d || snprintf(a, sizeof a, "%s%s%s", d[0] == '/' ? "" : cwd, d[0] == '/' ? "" : "/",
				    d) >= (int)sizeof a)
			continue;
		in |= abs && ddp_path_under(abs, a);
		if (o < cap)
			o += (size_t)snprintf(list + o, cap - o, "%s%s", o ? ", " : "", a);
	}
	return in;
}

void launch_write_notice(struct launch_job *job)
{
	const struct launch_opts *o = job->o;
	char cwd[PATH_MAX], temps[1024];
	int others = 0;

	job->write_said = 0;
	for (int i = 0; i < job->nranks; i++)
		others |= job->ranks[i].rank != 0;
	if (!others || o->all_ranks_write || !job->preload || !getcwd(cwd, sizeof cwd))
		return;
	job->write_said = 1;
	/* DDP_REDIRECT_TMP as libddp reads it (runtime/base/params.def): a
	 * malformed value keeps the default, protected, and libddp says so */
	const char *rt = getenv("DDP_REDIRECT_TMP");
	int tmp_shared = rt && (!strcmp(rt, "0") || !strcasecmp(rt, "no") || !strcasecmp(rt, "false") ||
				!strcasecmp(rt, "off"));
	int cwd_in_temp = temp_folders(cwd, cwd, temps, sizeof temps);
	if (tmp_shared && temps[0])
		launch_msg("DDP_REDIRECT_TMP=0: ranks other than 0 write files under the temporary folders "
			   "(%s) in place, shared with every rank",
			   temps);
	int shared = (tmp_shared && cwd_in_temp) || ddp_path_in_shared_folder(cwd);
	if (shared && !(job->write_dir && ddp_path_under(cwd, job->write_dir)))
		launch_msg("the working folder %s is shared (" DDP_SHARED_FOLDERS_TEXT "%s): files the ranks "
			   "other than 0 write there are not protected (docs/write-safety.md)",
			   cwd, tmp_shared ? ", temporary folders" : "");
}
