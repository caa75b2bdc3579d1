/* SPDX-License-Identifier: MIT
 *
 * ddp_write_lock.c - file locks across ranks: key files shared by the job
 * (ddp_write_lock.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_path.h"
#include "ddp_port.h"
#include "ddp_rank.h"
#include "ddp_write.h"
#include "ddp_write_dir.h"
#include "ddp_write_lock.h"

#define LOCK_FD_MAX 65536

static int lk_active;                   /* mirroring on                  */
static char lk_base[PATH_MAX];          /* absolute DDP_WRITE_DIR        */
static int lk_dir = -1;                 /* locks/ (opened on first use)  */
static int lk_dir_failed;               /* said once                     */
static int lk_key[LOCK_FD_MAX];         /* key fd + 1 of each program fd */
static pthread_mutex_t lk_mu = PTHREAD_MUTEX_INITIALIZER;

void ddp_write_lock_setup(void)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	const char *dir = ddp_param_write_dir();
	char cwd[PATH_MAX];

	if (!strcmp(ri->source, "none") || ri->world_size < 2 || ddp_param_all_ranks_write())
		return;
	if (!dir || !*dir)
		dir = ".ddprun";
	if (dir[0] == '/')
		snprintf(lk_base, sizeof lk_base, "%s", dir);
	else if (!getcwd(cwd, sizeof cwd) ||
		 snprintf(lk_base, sizeof lk_base, "%s/%s", cwd, dir) >= (int)sizeof lk_base)
		return;
	__atomic_store_n(&lk_active, 1, __ATOMIC_RELEASE);
}

/* locks/ under DDP_WRITE_DIR, made and checked like a rank folder. */
static int lock_dir(void)
{
	char why[PATH_MAX + 128];

	if (lk_dir >= 0 || lk_dir_failed)
		return lk_dir;
	lk_dir = ddp_write_dir_open_sub(lk_base, "locks", why, sizeof why);
	if (lk_dir < 0) {
		lk_dir_failed = 1;
		DDP_WARN("libddp: the job's lock folder cannot be used: %s; a file lock of this rank does not "
			 "wait for the other ranks' (docs/write-safety.md)",
			 why);
	}
	return lk_dir;
}

int ddp_write_lock_key(int fd)
{
	char link[64], path[PATH_MAX], name[40];
	const char *root, *abs = path;
	uint64_t h = 1469598103934665603ull;
	ssize_t n;
	int k;

	if (!__atomic_load_n(&lk_active, __ATOMIC_ACQUIRE) || fd < 0 || fd >= LOCK_FD_MAX)
		return -1;
	k = __atomic_load_n(&lk_key[fd], __ATOMIC_ACQUIRE);
	if (k > 0)
		return k - 1;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = ddp_libc_.readlink(link, path, sizeof path - 1);
	if (n <= 0 || path[0] != '/')
		return -1; /* a pipe, a socket, an unnamed file: nobody else's */
	path[n] = '\0';
	/* the libc overlay's side file stands for the real name */
	root = ddp_write_root();
	if (root && root[0] && ddp_path_under(path, root) && strcmp(path, root) != 0)
		abs = path + strlen(root);
	for (const char *c = abs; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	snprintf(name, sizeof name, "%016llx", (unsigned long long)h);
	pthread_mutex_lock(&lk_mu);
	k = lk_key[fd];
	if (k <= 0 && lock_dir() >= 0) {
		int kfd = ddp_libc_.openat64(lk_dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (kfd >= 0)
			__atomic_store_n(&lk_key[fd], k = kfd + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lk_mu);
	return k > 0 ? k - 1 : -1;
}

void ddp_write_lock_forget(int fd)
{
	int k;

	if (fd < 0 || fd >= LOCK_FD_MAX || !__atomic_load_n(&lk_active, __ATOMIC_ACQUIRE))
		return;
	k = __atomic_exchange_n(&lk_key[fd], 0, __ATOMIC_ACQ_REL);
	if (k > 0)
		ddp_libc_.close(k - 1);
}
