/* SPDX-License-Identifier: MIT
 *
 * private.c - the private folders of the ranks other than 0, and the
 * kernel overlay (docs/write-safety.md).
 *
 * Before any rank starts, ddprun checks DDP_WRITE_DIR and each local rank
 * k >= 1's DDP_WRITE_DIR/rank<k> (runtime/write/ddp_write_dir.h): a foreign
 * one (a symbolic link, another user's, not mode 0700) refuses the job with
 * one line, before anything is written or cleaned there.
 *
 * Then the overlay mode (DDP_OVERLAY, libc by default): kernel or auto makes each rank k >= 1
 * run in its own mount namespace (a user namespace too when not root) where
 * the trees it could write to are overlayfs mounts:
 *   - the trees: the working folder and, unless DDP_REDIRECT_TMP=0, the
 *     temporary folders (DDP_TEMP_DIRS, $TMPDIR), each canonical, without
 *     one inside another, none in the shared folders (/dev, /proc, /sys,
 *     /run) nor "/"; plus every mount point below them (one overlay per
 *     file system: a lower layer does not include its submounts), but none
 *     in DDP_WRITE_DIR;
 *   - lower: the real tree; upper and work:
 *     DDP_WRITE_DIR/rank<k>/run-<ddprun pid>-<start>-<host>/ov<i>/{u,w},
 *     which a later run removes only once this ddprun is gone;
 *   - DDP_WRITE_DIR is bound back over the overlay where it lies in a tree
 *     (the ranks share it, as they share /dev/shm, /dev, /proc, /sys, /run,
 *     which are never overlaid).
 * The ranks get DDP_OVERLAY_TREES (libddp's hooks leave those trees to the
 * kernel and keep protecting the rest).  Whether the kernel allows it is
 * tried once at start, in a throw-away child: under auto a refusal
 * (seccomp, no user namespaces, an upper file system overlayfs refuses) is
 * said once and the job uses the libc overlay; under kernel it refuses the
 * job.
 *
 * Contract: main thread; launch_overlay_enter runs in a forked child
 * (async-signal-safe calls only: everything is built before the fork).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_path.h"
#include "ddp_write_dir.h"
#include "launch.h"

#define OVL_MAX 32

struct launch_overlay {
	int n;                 /* trees, parents before children */
	char *tree[OVL_MAX];   /* mount points (canonical)       */
	int userns;            /* not root: a user namespace too */
	char *bind;            /* DDP_WRITE_DIR when inside a tree, else NULL */
	char *cwd;             /* entered again once mounted     */
	char uid_map[32], gid_map[32];
	char *run;             /* run-<pid>-<start>-<host>       */
	char **upper, **work;  /* [rank index * n + i]; NULL for rank 0 */
	char *trees_env;       /* DDP_OVERLAY_TREES              */
};

/* ---- async-signal-safe helpers of the child ------------------------- */

static size_t put(char *buf, size_t o, size_t cap, const char *s)
{
	while (*s && o + 1 < cap)
		buf[o++] = *s++;
	buf[o] = '\0';
	return o;
}

static size_t put_fd(char *buf, size_t o, size_t cap, int fd)
{
	char d[16];
	int n = 0;

	do
		d[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) && n < 15);
	o = put(buf, o, cap, "/proc/self/fd/");
	while (n && o + 1 < cap)
		buf[o++] = d[--n];
	buf[o] = '\0';
	return o;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

int launch_overlay_enter(const struct launch_overlay *ov, int idx, int *step)
{
	int fds[OVL_MAX][3], bfd = -1, e = 0;
	char opts[3 * 40 + 64];

	*step = 0;
	if (ov->userns) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
			return errno;
		if (write_file("/proc/self/setgroups", "deny") != 0 ||
		    write_file("/proc/self/uid_map", ov->uid_map) != 0 ||
		    write_file("/proc/self/gid_map", ov->gid_map) != 0)
			return errno;
	} else if (unshare(CLONE_NEWNS) != 0) {
		return errno;
	}
	*step = 1;
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
		return errno;
	/* every layer opened before any mount: paths then change */
	for (int i = 0; i < ov->n; i++) {
		fds[i][0] = open(ov->tree[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		fds[i][1] = open(ov->upper[idx * ov->n + i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		fds[i][2] = open(ov->work[idx * ov->n + i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fds[i][0] < 0 || fds[i][1] < 0 || fds[i][2] < 0)
			return *step = 2 + i, errno;
	}
	if (ov->bind && (bfd = open(ov->bind, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return *step = 2 + ov->n, errno;
	for (int i = 0; i < ov->n; i++) {
		size_t o = put(opts, 0, sizeof opts, "lowerdir=");
		o = put_fd(opts, o, sizeof opts, fds[i][0]);
		o = put(opts, o, sizeof opts, ",upperdir=");
		o = put_fd(opts, o, sizeof opts, fds[i][1]);
		o = put(opts, o, sizeof opts, ",workdir=");
		o = put_fd(opts, o, sizeof opts, fds[i][2]);
		/* a user namespace cannot set trusted.* xattrs; as root a rank
		 * may rename a real folder (redirect_dir), as on rank 0 */
		put(opts, o, sizeof opts, ov->userns ? ",userxattr" : ",redirect_dir=on");
		if (mount("overlay", ov->tree[i], "overlay", 0, opts) != 0)
			return *step = 2 + i, errno;
	}
	if (bfd >= 0) {
		char src[40];
		put_fd(src, 0, sizeof src, bfd);
		if (mount(src, ov->bind, NULL, MS_BIND | MS_REC, NULL) != 0)
			return *step = 2 + ov->n, errno;
		close(bfd);
	}
	for (int i = 0; i < ov->n; i++)
		for (int j = 0; j < 3; j++)
			close(fds[i][j]);
	/* the working folder as seen through the overlay */
	if (ov->cwd && chdir(ov->cwd) != 0)
		e = errno;
	return e;
}

/* What step of launch_overlay_enter failed, for a message. */
static void step_text(const struct launch_overlay *ov, int step, char *buf, size_t cap)
{
	if (step == 0)
		snprintf(buf, cap, "unshare(%s)", ov->userns ? "CLONE_NEWUSER|CLONE_NEWNS" : "CLONE_NEWNS");
	else if (step == 1)
		snprintf(buf, cap, "making the mounts private");
	else if (step - 2 < ov->n)
		snprintf(buf, cap, "an overlay on %s", ov->tree[step - 2]);
	else
		snprintf(buf, cap, "binding %s back", ov->bind ? ov->bind : "DDP_WRITE_DIR");
}

/* ---- the trees ------------------------------------------------------ */

static int add_tree(struct launch_overlay *ov, const char *path, const char *write_dir)
{
	char *c = realpath(path, NULL);
	int rc = 0;

	if (!c)
		return 0; /* missing: nothing to protect */
	if (!strcmp(c, "/") || ddp_path_in_shared_folder(c) || ddp_path_under(c, write_dir))
		goto out;
	for (int i = 0; i < ov->n; i++) {
		if (ddp_path_under(c, ov->tree[i]))
			goto out; /* inside one already */
		if (ddp_path_under(ov->tree[i], c)) {
			free(ov->tree[i]); /* the new one holds it */
			ov->tree[i--] = ov->tree[--ov->n];
		}
	}
	if (ov->n == OVL_MAX) {
		rc = -1;
		goto out;
	}
	ov->tree[ov->n++] = c;
	return 0;
out:
	free(c);
	return rc;
}

/* Unescapes mountinfo's octal escapes (\040) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Adds every mount point strictly below the roots (one overlay each). */
static int add_submounts(struct launch_overlay *ov, int roots, const char *write_dir)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192], mp[PATH_MAX];
	int rc = 0;

	if (!f)
		return 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		unescape(mp);
		for (int i = 0; i < roots; i++) {
			if (strcmp(mp, ov->tree[i]) != 0 && ddp_path_under(mp, ov->tree[i]) &&
			    !ddp_path_in_shared_folder(mp) && !ddp_path_under(mp, write_dir)) {
				int dup = 0;
				for (int j = roots; j < ov->n; j++)
					dup |= !strcmp(ov->tree[j], mp);
				if (dup)
					break;
				if (ov->n == OVL_MAX) {
					rc = -1;
					break;
				}
				ov->tree[ov->n++] = strdup(mp);
				break;
			}
		}
	}
	fclose(f);
	return rc;
}

static int by_length(const void *a, const void *b)
{
	size_t x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);
	return x < y ? -1 : x > y;
}

/* The trees of the job (see the header), or -1 with *why when too many. */
static int plan_trees(struct launch_overlay *ov, const char *cwd, const char *write_dir)
{
	if (add_tree(ov, cwd, write_dir) != 0)
		return -1;
	if (ddp_param_redirect_tmp()) {
		const char *dirs = ddp_param_temp_dirs(), *tmpdir = getenv("TMPDIR");
		char buf[4096], *save = NULL;
		snprintf(buf, sizeof buf, "%s:%s", dirs ? dirs : "", tmpdir ? tmpdir : "");
		for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save))
			if (*d && add_tree(ov, d, write_dir) != 0)
				return -1;
	}
	if (add_submounts(ov, ov->n, write_dir) != 0)
		return -1;
	qsort(ov->tree, (size_t)ov->n, sizeof *ov->tree, by_length); /* parents first */
	return 0;
}

/* ---- folders -------------------------------------------------------- */

static char *join(const char *a, const char *b)
{
	char *s = NULL;
	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

/* Makes DDP_WRITE_DIR/rank<rank>/<run>/<sub>/ov<i>/{u,w} for every tree,
 * through the checked rank folder; fills upper/work [base..base+n). */
static int make_layers(struct launch_overlay *ov, const char *write_dir, int rank, const char *sub, int base,
		       char *why, size_t cap)
{
	int rfd = ddp_write_dir_open(write_dir, rank, why, cap);
	char rel[PATH_MAX];

	if (rfd < 0)
		return -1;
	(void)mkdirat(rfd, ov->run, 0700);
	if (sub) {
		snprintf(rel, sizeof rel, "%s/%s", ov->run, sub);
		(void)mkdirat(rfd, rel, 0700);
	}
	for (int i = 0; i < ov->n; i++) {
		char u[256], w[256], d[240], rd[64];
		snprintf(d, sizeof d, "%s%s%.16s/ov%d", ov->run, sub ? "/" : "", sub ? sub : "", i);
		snprintf(u, sizeof u, "%s/u", d);
		snprintf(w, sizeof w, "%s/w", d);
		if ((mkdirat(rfd, d, 0700) != 0 && errno != EEXIST) || (mkdirat(rfd, u, 0700) != 0 && errno != EEXIST) ||
		    (mkdirat(rfd, w, 0700) != 0 && errno != EEXIST)) {
			snprintf(why, cap, "%s/rank%d/%s cannot be made (%s)", write_dir, rank, d, strerror(errno));
			close(rfd);
			return -1;
		}
		snprintf(rd, sizeof rd, "rank%d", rank);
		snprintf(rel, sizeof rel, "%s/%s", write_dir, rd);
		free(ov->upper[base + i]);
		free(ov->work[base + i]);
		char *r = join(rel, u), *k = join(rel, w);
		ov->upper[base + i] = r;
		ov->work[base + i] = k;
		if (!r || !k) {
			close(rfd);
			snprintf(why, cap, "out of memory");
			return -1;
		}
	}
	close(rfd);
	return 0;
}

/* Removes DDP_WRITE_DIR/rank<rank>/<run>[/sub] (never through a link). */
static void remove_layers(const struct launch_overlay *ov, const char *write_dir, int rank, const char *sub)
{
	char why[256], rel[PATH_MAX];
	int rfd = ddp_write_dir_open(write_dir, rank, why, sizeof why);

	if (rfd < 0)
		return;
	snprintf(rel, sizeof rel, "%s%s%s", ov->run, sub ? "/" : "", sub ? sub : "");
	if (ddp_write_remove_tree_at(rfd, rel) != 0)
		launch_msg("warning: cannot remove %s/rank%d/%s (%s); the next run removes it", write_dir, rank, rel,
			   strerror(errno));
	close(rfd);
}

/* ---- the probe ------------------------------------------------------ */

/* Tries the namespace and the mounts in a throw-away child with layers in
 * <run>/probe of rank `rank`.  0, or the errno with *msg saying the step. */
static int probe(struct launch_overlay *ov, const char *write_dir, int rank, int slot, char *msg, size_t cap)
{
	int p[2], res[2] = { 0, 0 }, status;
	pid_t pid;
	char why[PATH_MAX + 128];

	if (make_layers(ov, write_dir, rank, "probe", slot * ov->n, why, sizeof why) != 0) {
		snprintf(msg, cap, "%s", why);
		return EACCES;
	}
	if (pipe2(p, O_CLOEXEC) != 0)
		return snprintf(msg, cap, "pipe (%s)", strerror(errno)), errno;
	pid = fork();
	if (pid == 0) {
		res[1] = launch_overlay_enter(ov, slot, &res[0]);
		if (write(p[1], res, sizeof res) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || DDP_EINTR_RETRY(read(p[0], res, sizeof res)) != (ssize_t)sizeof res)
		res[1] = res[1] ? res[1] : ECHILD;
	close(p[0]);
	if (pid > 0)
		(void)waitpid(pid, &status, 0);
	remove_layers(ov, write_dir, rank, "probe");
	if (res[1]) {
		char st[PATH_MAX + 64];
		step_text(ov, res[0], st, sizeof st);
		snprintf(msg, cap, "%s: %s", st, strerror(res[1]));
	}
	return res[1];
}

/* ---- the job -------------------------------------------------------- */

static void overlay_free(struct launch_overlay *ov, int nranks)
{
	if (!ov)
		return;
	for (int i = 0; i < ov->n; i++)
		free(ov->tree[i]);
	for (int i = 0; ov->upper && i < nranks * ov->n; i++) {
		free(ov->upper[i]);
		free(ov->work[i]);
	}
	free(ov->upper);
	free(ov->work);
	free(ov->bind);
	free(ov->cwd);
	free(ov->run);
	free(ov->trees_env);
	free(ov);
}

/* The kernel overlay of the job, or NULL (the libc one) when not asked for
 * or refused under auto; -1 when refused under DDP_OVERLAY=kernel. */
static int overlay_plan(struct launch_job *job, const char *cwd)
{
	int mode = ddp_param_overlay(); /* 0 libc, 1 kernel, 2 auto */
	struct launch_overlay *ov;
	char msg[PATH_MAX + 256] = "", name[96];
	int first = -1, err;

	if (mode == 0)
		return 0;
	ov = calloc(1, sizeof *ov);
	if (!ov)
		return -1;
	ov->upper = calloc((size_t)(job->nranks + 1) * OVL_MAX, sizeof *ov->upper);
	ov->work = calloc((size_t)(job->nranks + 1) * OVL_MAX, sizeof *ov->work);
	snprintf(name, sizeof name, "run-%d-%llu-%s", (int)getpid(), ddp_write_start_time(getpid()),
		 ddp_write_host_tag());
	ov->run = strdup(name);
	ov->cwd = strdup(cwd);
	ov->userns = geteuid() != 0;
	snprintf(ov->uid_map, sizeof ov->uid_map, "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
	snprintf(ov->gid_map, sizeof ov->gid_map, "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
	if (!ov->upper || !ov->work || !ov->run || !ov->cwd) {
		overlay_free(ov, job->nranks + 1);
		return -1;
	}
	if (plan_trees(ov, cwd, job->write_dir) != 0) {
		snprintf(msg, sizeof msg, "more than %d folders and mount points to overlay", OVL_MAX);
		err = E2BIG;
		goto refused;
	}
	if (ov->n == 0) { /* nothing outside the shared folders: nothing to do */
		overlay_free(ov, job->nranks + 1);
		return 0;
	}
	for (int i = 0; i < ov->n; i++)
		if (ddp_path_under(job->write_dir, ov->tree[i]))
			ov->bind = strdup(job->write_dir);
	for (int i = 0; i < job->nranks && first < 0; i++)
		if (job->ranks[i].rank != 0)
			first = i;
	err = probe(ov, job->write_dir, job->ranks[first].rank, job->nranks, msg, sizeof msg);
	if (err)
		goto refused;
	size_t len = 1;
	for (int i = 0; i < ov->n; i++)
		len += strlen(ov->tree[i]) + 1;
	ov->trees_env = calloc(1, len);
	for (int i = 0; ov->trees_env && i < ov->n; i++) {
		if (i)
			strcat(ov->trees_env, ":");
		strcat(ov->trees_env, ov->tree[i]);
	}
	for (int i = 0; i < job->nranks; i++) {
		char why[PATH_MAX + 128];
		if (job->ranks[i].rank == 0)
			continue;
		if (make_layers(ov, job->write_dir, job->ranks[i].rank, NULL, i * ov->n, why, sizeof why) != 0) {
			snprintf(msg, sizeof msg, "%s", why);
			err = EACCES;
			goto refused;
		}
	}
	job->overlay = ov;
	DDP_INFO(LAUNCH, "ranks other than 0 write through a kernel overlay of %s", ov->trees_env);
	return 0;

refused:
	for (int i = 0; i < job->nranks; i++)
		if (job->ranks[i].rank != 0)
			remove_layers(ov, job->write_dir, job->ranks[i].rank, NULL);
	overlay_free(ov, job->nranks + 1);
	if (mode == 1) {
		launch_msg("DDP_OVERLAY=kernel, but the kernel overlay cannot be made here (%s); unset "
			   "DDP_OVERLAY to use libddp's libc overlay (docs/write-safety.md)",
			   msg);
		return -1;
	}
	launch_msg("no kernel overlay here (%s): ranks other than 0 write through libddp's libc overlay "
		   "(docs/write-safety.md)",
		   msg);
	(void)err;
	return 0;
}

ddp_result launch_private_prepare(struct launch_job *job)
{
	char why[PATH_MAX + 128], cwd[PATH_MAX];
	int others = 0;

	for (int i = 0; i < job->nranks; i++)
		others |= job->ranks[i].rank != 0;
	if (!others || job->o->all_ranks_write || !job->preload || !job->write_dir)
		return DDP_OK;
	(void)ddp_params_init();
	for (int i = 0; i < job->nranks; i++) {
		int fd;
		if (job->ranks[i].rank == 0)
			continue;
		fd = ddp_write_dir_open(job->write_dir, job->ranks[i].rank, why, sizeof why);
		if (fd < 0) {
			launch_msg("refusing to start: rank %d's private folder is unsafe: %s; remove it or "
				   "choose another folder with --log-dir (docs/write-safety.md)",
				   job->ranks[i].rank, why);
			return DDP_ERR_INVALID;
		}
		close(fd);
	}
	if (!getcwd(cwd, sizeof cwd))
		return DDP_OK; /* no working folder: the libc overlay */
	return overlay_plan(job, cwd) == 0 ? DDP_OK : DDP_ERR_INVALID;
}

const char *launch_overlay_trees(const struct launch_job *job)
{
	return job->overlay ? job->overlay->trees_env : NULL;
}

void launch_private_finish(struct launch_job *job)
{
	struct launch_overlay *ov = job->overlay;

	if (!ov)
		return;
	for (int i = 0; i < job->nranks; i++) {
		char d[PATH_MAX], why[PATH_MAX + 128];
		if (job->ranks[i].rank == 0)
			continue;
		snprintf(d, sizeof d, "%s/rank%d", job->write_dir, job->ranks[i].rank);
		if (ddp_write_dir_full(d, why, sizeof why)) { /* before the layers give it back */
			launch_msg("the private folders of the ranks other than 0: %s; their writes may have "
				   "failed with ENOSPC (free space, or choose a bigger place with --log-dir)",
				   why);
			break;
		}
	}
	if (!ddp_param_write_keep())
		for (int i = 0; i < job->nranks; i++)
			if (job->ranks[i].rank != 0)
				remove_layers(ov, job->write_dir, job->ranks[i].rank, NULL);
	overlay_free(ov, job->nranks + 1);
	job->overlay = NULL;
}
