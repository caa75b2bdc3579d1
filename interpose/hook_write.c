/* SPDX-License-Identifier: MIT
 *
 * hook_write.c - write safety: on ranks other than 0, files the program
 * creates, truncates or writes go to the rank's side folder
 * $DDP_WRITE_DIR/rank<k>/<absolute path> (docs/write-safety.md).
 *
 * Rules (a rank other than 0, under a launcher, DDP_ALL_RANKS_WRITE unset):
 *   - an open/openat/creat/fopen/freopen with write access, O_CREAT or
 *     O_TRUNC of a path outside /dev, /proc, /sys, /run, the temporary
 *     folders (/tmp, /var/tmp, $TMPDIR; unless DDP_REDIRECT_TMP=1) and
 *     $DDP_WRITE_DIR, that is not an existing non-regular file (FIFO,
 *     socket, device, directory), opens the side copy instead; its folders
 *     are created; an open that keeps existing content (no O_TRUNC, no
 *     O_APPEND, no O_EXCL) of an existing file first copies the file there;
 *     an append starts from an empty side file (it holds what this rank
 *     appended);
 *   - reads, stats and access() of a path whose side copy exists use it, so
 *     a rank re-reads what it wrote (also after exec: the state is the side
 *     folder itself);
 *   - rename: the source is the side copy if one exists (else a shared file
 *     is copied, never moved), the destination is redirected by the same
 *     rules;
 *   - unlink/unlinkat/remove delete the side copy if one exists; a shared
 *     file is left in place and the call reports success.
 * Paths are made absolute lexically (cwd or the dirfd's /proc/self/fd link;
 * symbolic links are not resolved).  Each redirected file is logged at INFO
 * once.
 *
 * Contract: set up once by hook_write_setup (from hook_file_init); read-only
 * afterwards, any thread.  Adds syscalls only on ranks that redirect: a
 * getcwd for relative paths and an lstat of the side path per lookup.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_rank.h"
#if __has_include("ddp_export.h")
#include "ddp_export.h"
#endif
#ifndef DDP_EXPORT
#define DDP_EXPORT __attribute__((visibility("default")))
#endif
#include "hook_file.h"

static int wr_active;              /* this rank redirects                 */
static int wr_rank;
static int wr_tmp;                 /* DDP_REDIRECT_TMP: redirect temp too */
static char wr_base[PATH_MAX];     /* absolute $DDP_WRITE_DIR             */
static char wr_root[PATH_MAX];     /* wr_base/rank<k>                     */
#define WR_MAX_TEMP 8
static char wr_temp[WR_MAX_TEMP][PATH_MAX]; /* DDP_TEMP_DIRS + $TMPDIR, absolute */
static int wr_ntemp;
static uint64_t logged[1024];      /* hashes of paths logged (atomic)     */

/* Collapses "//", "." and ".." of the absolute path p in place. */
static void normalise(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		size_t n = strcspn(in, "/");
		if (n == 1 && in[0] == '.') {
			in += 1;
			continue;
		}
		if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > p && *--out != '/')
				;
			in += 2;
			continue;
		}
		*out++ = '/';
		memmove(out, in, n);
		out += n;
		in += n;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

/* The absolute, normalised form of path relative to dirfd; -1 when it
 * cannot be made (too long, unknown dirfd). */
static int abs_path(int dirfd, const char *path, char *out, size_t len)
{
	size_t bl, pl = strlen(path);

	if (path[0] == '/') {
		if (pl >= len)
			return -1;
		memcpy(out, path, pl + 1);
	} else {
		if (dirfd == AT_FDCWD) {
			if (!getcwd(out, len))
				return -1;
		} else {
			char link[64];
			ssize_t n;

			snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
			n = readlink(link, out, len - 1);
			if (n <= 0 || out[0] != '/')
				return -1;
			out[n] = '\0';
		}
		bl = strlen(out);
		if (bl + 1 + pl >= len)
			return -1;
		out[bl] = '/';
		memcpy(out + bl + 1, path, pl + 1);
	}
	normalise(out);
	return 0;
}

/* Whether abs is dir or inside it. */
static int under(const char *abs, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 0 || strncmp(abs, dir, n) != 0)
		return 0;
	return abs[n] == '\0' || abs[n] == '/' || n == 1;
}

static int excluded(const char *abs)
{
	static const char *const always[] = { "/dev", "/proc", "/sys", "/run" };

	for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
		if (under(abs, always[i]))
			return 1;
	if (!wr_tmp)
		for (int i = 0; i < wr_ntemp; i++)
			if (under(abs, wr_temp[i]))
				return 1;
	return under(abs, wr_base);
}

/* wr_root + abs into out; -1 when too long. */
static int side_path(const char *abs, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", wr_root, abs);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int exists(const char *p, struct stat64 *st)
{
	struct stat64 tmp;

	return hook_real_fstatat(AT_FDCWD, p, st ? st : &tmp, AT_SYMLINK_NOFOLLOW) == 0;
}

/* mkdir -p of the folder holding file p. */
static int make_parents(const char *p)
{
	char d[PATH_MAX];
	size_t n = strlen(p);

	if (n >= sizeof d)
		return -1;
	memcpy(d, p, n + 1);
	for (char *s = d + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(d, 0777) != 0 && errno != EEXIST) {
			*s = '/';
			return -1;
		}
		*s = '/';
	}
	return 0;
}

/* Copies regular file src to dst (created or truncated). */
static int copy_file(const char *src, const char *dst, mode_t mode)
{
	char *buf = malloc(1 << 16);
	int in, out, rc = -1;
	ssize_t n;

	if (!buf)
		return -1;
	in = ddp_libc_.open64(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		goto out_free_buf;
	out = ddp_libc_.open64(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777);
	if (out < 0)
		goto out_close_in;
	while ((n = ddp_libc_.read(in, buf, 1 << 16)) > 0) {
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				goto out_close_out;
			w += k;
		}
	}
	rc = n == 0 ? 0 : -1;
out_close_out:
	ddp_libc_.close(out);
out_close_in:
	ddp_libc_.close(in);
out_free_buf:
	free(buf);
	return rc;
}

/* INFO once per path. */
static void log_once(const char *what, const char *path, const char *side)
{
	uint64_t h = 1469598103934665603ull;

	if (!DDP_LOG_ON(DDP_LOG_INFO, DDP_SUB_HOOK))
		return;
	for (const char *s = side; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	h |= 1;
	for (size_t i = 0; i < sizeof logged / sizeof logged[0]; i++) {
		size_t j = (h + i) % (sizeof logged / sizeof logged[0]);
		uint64_t cur = __atomic_load_n(&logged[j], __ATOMIC_RELAXED);

		if (cur == h)
			return;
		if (cur == 0 && __atomic_compare_exchange_n(&logged[j], &cur, h, 0, __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED))
			break;
		if (cur == h)
			return;
	}
	DDP_INFO(HOOK, "rank %d %s %s to %s", wr_rank, what, path, side);
}

/* Fills wr_temp from the colon-separated list plus $TMPDIR (absolute). */
static void temp_dirs_setup(const char *list, const char *tmpdir)
{
	char buf[4096];
	char *save = NULL;

	wr_ntemp = 0;
	if (snprintf(buf, sizeof buf, "%s:%s", list ? list : "", tmpdir ? tmpdir : "") >=
	    (int)sizeof buf) {
		DDP_WARN("DDP_TEMP_DIRS is too long; only /tmp and /var/tmp count as temporary");
		snprintf(buf, sizeof buf, "/tmp:/var/tmp");
	}
	for (char *d = strtok_r(buf, ":", &save); d && wr_ntemp < WR_MAX_TEMP;
	     d = strtok_r(NULL, ":", &save))
		if (*d && abs_path(AT_FDCWD, d, wr_temp[wr_ntemp], sizeof wr_temp[0]) == 0)
			wr_ntemp++;
}

void hook_write_setup(void)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	const char *dir = ddp_param_write_dir(), *tmp = getenv("TMPDIR");

	if (strcmp(ri->source, "none") == 0 || ri->rank == 0)
		return;
	if (ddp_param_all_ranks_write()) {
		DDP_INFO(HOOK, "DDP_ALL_RANKS_WRITE is set: rank %d writes files in place", ri->rank);
		return;
	}
	if (!dir || !*dir)
		dir = ".ddprun";
	if (abs_path(AT_FDCWD, dir, wr_base, sizeof wr_base) != 0 ||
	    snprintf(wr_root, sizeof wr_root, "%s/rank%d", strcmp(wr_base, "/") ? wr_base : "",
		     ri->rank) >= (int)sizeof wr_root) {
		DDP_ERROR("DDP_WRITE_DIR='%s' cannot be made an absolute path; rank %d writes "
			  "files in place", dir, ri->rank);
		return;
	}
	temp_dirs_setup(ddp_param_temp_dirs(), tmp);
	wr_tmp = ddp_param_redirect_tmp();
	wr_rank = ri->rank;
	__atomic_store_n(&wr_active, 1, __ATOMIC_RELEASE);
	DDP_DEBUG(HOOK, "rank %d redirects its writes to %s", wr_rank, wr_root);
}

int hook_write_active(void)
{
	/* The library's own files (traces, summaries) are never redirected. */
	return __atomic_load_n(&wr_active, __ATOMIC_ACQUIRE) &&
	       !hook_file_bypass();
}

const char *hook_write_map_lookup(int dirfd, const char *path, char *buf, size_t len)
{
	char abs[PATH_MAX];
	int saved = errno; /* a lookup that finds no side copy is no error */
	const char *p = path;

	if (!hook_write_active() || !path || !*path)
		return path;
	if (abs_path(dirfd, path, abs, sizeof abs) == 0 && !excluded(abs) &&
	    side_path(abs, buf, len) == 0 && exists(buf, NULL))
		p = buf;
	errno = saved;
	return p;
}

/* The work of hook_write_map_open; may leave errno changed. */
static const char *map_open(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	char abs[PATH_MAX];
	struct stat64 st;
	int writing = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
	int orig;

	if (!hook_write_active() || !path || !*path || (flags & (O_PATH | O_DIRECTORY)))
		return path; /* folders, O_TMPFILE included, stay where they are */
	if (!writing)
		return hook_write_map_lookup(dirfd, path, buf, len);
	if (abs_path(dirfd, path, abs, sizeof abs) != 0 || excluded(abs) ||
	    side_path(abs, buf, len) != 0)
		return path;
	orig = exists(abs, &st);
	if (orig && !S_ISREG(st.st_mode))
		return path;
	if (!exists(buf, NULL)) {
		if (make_parents(buf) != 0) {
			DDP_WARN("cannot create the folders of %s (%s); rank %d writes %s in place",
				 buf, strerror(errno), wr_rank, path);
			return path;
		}
		if (orig && !(flags & (O_TRUNC | O_APPEND | O_EXCL)) &&
		    copy_file(abs, buf, st.st_mode) != 0)
			DDP_WARN("cannot copy %s to %s (%s); the copy starts empty", abs, buf,
				 strerror(errno));
	}
	log_once("writes", path, buf);
	return buf;
}

const char *hook_write_map_open(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	/* The open that follows sets errno if it fails; a successful one must
	 * leave it as the program had it (ENOENT of a missing side copy, EEXIST
	 * of a folder that existed are not the program's errors). */
	int saved = errno;
	const char *p = map_open(dirfd, path, flags, buf, len);

	errno = saved;
	return p;
}

/* ---- rename and unlink ------------------------------------------------ */

static int do_rename(int odir, const char *old, int ndir, const char *new, unsigned flags,
		     int plain)
{
	char aold[PATH_MAX], anew[PATH_MAX], sold[PATH_MAX], snew[PATH_MAX];
	const char *src = old, *dst = new;
	struct stat64 st;
	int copy = 0;

	int saved = errno; /* restored before every call that succeeds or sets its own */

	HOOK_LAUNDER(old);
	HOOK_LAUNDER(new);
	hook_file_init();
	hook_libc_resolve();
	if (!hook_write_active() || !old || !new || abs_path(odir, old, aold, sizeof aold) != 0 ||
	    abs_path(ndir, new, anew, sizeof anew) != 0)
		goto out_real;
	if (!excluded(aold) && side_path(aold, sold, sizeof sold) == 0) {
		if (exists(sold, NULL)) {
			src = sold;
			odir = AT_FDCWD;
		} else if (exists(aold, &st)) {
			copy = 1; /* a shared file this rank never wrote: copy, never move */
		} else {
			errno = ENOENT;
			return -1;
		}
	}
	if (!excluded(anew) && side_path(anew, snew, sizeof snew) == 0) {
		if (make_parents(snew) != 0)
			return -1;
		dst = snew;
		ndir = AT_FDCWD;
	}
	errno = saved;
	if (dst == new && src == old)
		goto out_real;
	log_once("renames", new, dst);
	errno = saved;
	if (copy) {
		if (!S_ISREG(st.st_mode))
			return 0;
		if (copy_file(aold, dst, st.st_mode) != 0)
			return -1;
		errno = saved;
		return 0;
	}
	if (flags)
		return ddp_libc_.renameat2(odir, src, ndir, dst, flags);
	return ddp_libc_.renameat(odir, src, ndir, dst);
out_real:
	errno = saved;
	if (plain)
		return ddp_libc_.rename(old, new);
	if (flags)
		return ddp_libc_.renameat2(odir, old, ndir, new, flags);
	return ddp_libc_.renameat(odir, old, ndir, new);
}

enum { UNLINK_PLAIN, UNLINK_AT, UNLINK_REMOVE };

static int do_unlink(int dirfd, const char *path, int flags, int kind)
{
	char abs[PATH_MAX], side[PATH_MAX];
	int saved = errno; /* a success leaves errno as it was */

	HOOK_LAUNDER(path);
	hook_file_init();
	hook_libc_resolve();
	if (hook_write_active() && path && *path && abs_path(dirfd, path, abs, sizeof abs) == 0 &&
	    !excluded(abs) && side_path(abs, side, sizeof side) == 0) {
		if (exists(side, NULL)) {
			errno = saved;
			if (kind == UNLINK_REMOVE)
				return ddp_libc_.remove(side);
			return ddp_libc_.unlinkat(AT_FDCWD, side, flags);
		}
		if (exists(abs, NULL)) {
			DDP_INFO(HOOK, "rank %d leaves shared %s in place (it never wrote it)",
				 wr_rank, path);
			errno = saved;
			return 0;
		}
		errno = ENOENT;
		return -1;
	}
	errno = saved;
	switch (kind) {
	case UNLINK_PLAIN: return ddp_libc_.unlink(path);
	case UNLINK_REMOVE: return ddp_libc_.remove(path);
	default: return ddp_libc_.unlinkat(dirfd, path, flags);
	}
}

DDP_EXPORT int access(const char *path, int mode)
{
	char buf[PATH_MAX];
	const char *p;

	HOOK_LAUNDER(path);
	p = path;
	hook_file_init();
	hook_libc_resolve();
	if (path && hook_file_ready() && hook_write_active())
		p = hook_write_map_lookup(AT_FDCWD, path, buf, sizeof buf);
	return ddp_libc_.access(p, mode);
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_WRITE
#include "hook_libc_gen.h"
