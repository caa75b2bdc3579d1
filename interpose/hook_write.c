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
 *   - a symbolic link as the last component (a chain of them, and the
 *     magic links /proc/self/fd/N, /dev/fd/N, /dev/stdout) is resolved
 *     first: the target is what is redirected (or excluded);
 *   - O_TMPFILE in a folder: the unnamed file is made in the side copy of
 *     that folder; link/linkat give names in the side folder and never a
 *     second name to a shared file (it is copied); truncate() works on the
 *     side copy (copied up first); mkstemp and its variants create their
 *     file in the side folder, so `sed -i`-style temp + rename edits leave
 *     nothing in rank 0's folder;
 *   - reads, stats and access() of a path whose side copy exists use it, so
 *     a rank re-reads what it wrote (also after exec: the state is the side
 *     folder itself);
 *   - rename: the source is the side copy if one exists (else a shared file
 *     is copied, never moved), the destination is redirected by the same
 *     rules;
 *   - unlink/unlinkat/remove delete the side copy if one exists; a shared
 *     file is left in place and the call reports success.
 * Fail closed: when a write cannot be redirected (a side path longer than
 * PATH_MAX, a side folder that cannot be made, a copy-up that fails, a
 * DDP_WRITE_DIR that cannot be made absolute, a deleted file reopened
 * through /proc) the call fails with an errno and one `libddp:` line per
 * path; it never lands in place.
 * Paths are made absolute lexically (cwd or the dirfd's /proc/self/fd link;
 * symbolic links before the last component are not resolved).  Each
 * redirected file is logged at INFO once.
 *
 * Contract: set up once by hook_write_setup (from hook_file_init); read-only
 * afterwards, any thread.  Adds syscalls only on ranks that redirect: a
 * getcwd for relative paths, an lstat of the side path per lookup (and of
 * the path itself when no side copy exists, to follow a symbolic link).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
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
#include "ddp_sync.h"
#include "hook_file.h"

static int wr_active;              /* this rank redirects                 */
static int wr_rank;
static int wr_tmp;                 /* DDP_REDIRECT_TMP: redirect temp too */
static char wr_base[PATH_MAX];     /* absolute $DDP_WRITE_DIR ("" broken) */
static char wr_root[PATH_MAX];     /* wr_base/rank<k> ("": every write fails) */
#define WR_MAX_TEMP 8
static char wr_temp[WR_MAX_TEMP][PATH_MAX]; /* DDP_TEMP_DIRS + $TMPDIR, absolute */
static int wr_ntemp;
static uint64_t logged[1024];      /* hashes of paths logged (atomic)     */
static uint64_t failed[256];       /* hashes of paths refused (atomic)    */

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

/* The absolute, normalised form of path relative to dirfd; -1 with errno
 * (ENAMETOOLONG, EBADF for an unknown dirfd, getcwd's) when it cannot be
 * made. */
static int abs_path(int dirfd, const char *path, char *out, size_t len)
{
	size_t bl, pl = strlen(path);

	if (path[0] == '/') {
		if (pl >= len)
			return errno = ENAMETOOLONG, -1;
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
				return errno = n >= (ssize_t)len - 1 ? ENAMETOOLONG : EBADF, -1;
			out[n] = '\0';
		}
		bl = strlen(out);
		if (bl + 1 + pl >= len)
			return errno = ENAMETOOLONG, -1;
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

/* wr_root + abs into out; -1 with errno when too long (ENAMETOOLONG) or
 * when there is no side folder at all (EACCES). */
static int side_path(const char *abs, char *out, size_t len)
{
	if (!wr_root[0])
		return errno = EACCES, -1;
	int n = snprintf(out, len, "%s%s", wr_root, abs);

	return n < 0 || (size_t)n >= len ? (errno = ENAMETOOLONG, -1) : 0;
}

static int exists(const char *p, struct stat64 *st)
{
	struct stat64 tmp;

	return hook_real_fstatat(AT_FDCWD, p, st ? st : &tmp, AT_SYMLINK_NOFOLLOW) == 0;
}

/* mkdir -p of the folder holding file p (and of p itself when self). */
static int make_dirs(const char *p, int self)
{
	char d[PATH_MAX];
	size_t n = strlen(p);

	if (n + 1 >= sizeof d)
		return errno = ENAMETOOLONG, -1;
	memcpy(d, p, n + 1);
	if (self) {
		d[n] = '/';
		d[n + 1] = '\0';
	}
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

/* Copies regular file src to dst (created, or truncated unless excl). */
static int copy_file(const char *src, const char *dst, mode_t mode, int excl)
{
	char *buf = malloc(1 << 16);
	int in, out, rc = -1;
	ssize_t n;

	if (!buf)
		return errno = ENOMEM, -1;
	in = ddp_libc_.open64(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		goto out_free_buf;
	out = ddp_libc_.open64(dst, O_WRONLY | O_CREAT | (excl ? O_EXCL : O_TRUNC) | O_CLOEXEC,
			       mode & 07777);
	if (out < 0)
		goto out_close_in;
	while ((n = ddp_libc_.read(in, buf, 1 << 16)) > 0) {
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				if (k == 0)
					errno = EIO;
				goto out_close_out;
			}
			w += k;
		}
	}
	rc = n == 0 ? 0 : -1;
out_close_out:
	ddp_libc_.close(out);
	if (rc != 0) {
		int e = errno;
		ddp_libc_.unlinkat(AT_FDCWD, dst, 0); /* never leave a half copy */
		errno = e;
	}
out_close_in:
	ddp_libc_.close(in);
out_free_buf:
	free(buf);
	return rc;
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h | 1;
}

/* Whether h is new in table t of n entries (and records it). */
static int first_time(uint64_t *t, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++) {
		size_t j = (h + i) % n;
		uint64_t cur = __atomic_load_n(&t[j], __ATOMIC_RELAXED);

		if (cur == h)
			return 0;
		if (cur == 0 && __atomic_compare_exchange_n(&t[j], &cur, h, 0, __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED))
			return 1;
		if (cur == h)
			return 0;
	}
	return 1; /* table full: log again rather than never */
}

/* INFO once per path. */
static void log_once(const char *what, const char *path, const char *side)
{
	if (!DDP_LOG_ON(DDP_LOG_INFO, DDP_SUB_HOOK))
		return;
	if (first_time(logged, sizeof logged / sizeof logged[0], path_hash(side)))
		DDP_INFO(HOOK, "rank %d %s %s to %s", wr_rank, what, path, side);
}

/* A write that cannot be redirected fails: one line per path, errno kept.
 * Returns -1. */
static int refuse(const char *path, const char *why)
{
	int e = errno;

	if (first_time(failed, sizeof failed / sizeof failed[0], path_hash(path)))
		DDP_ERROR("libddp: rank %d cannot write %s%.160s: %s (%s); the call fails rather than "
			  "write rank 0's file (docs/write-safety.md)", wr_rank,
			  strlen(path) > 160 ? "..." : "", path + (strlen(path) > 160 ? strlen(path) - 160 : 0),
			  why, strerror(e));
	errno = e;
	return -1;
}

/* Follows symbolic links in the last component of abs (in place): a chain
 * of them, and the magic links of /proc/<pid>/fd and /dev/fd.  Returns
 *   0  abs names the final file; *st holds its lstat when *there;
 *   1  a magic link to something that is not a file name (pipe, socket,
 *      anonymous inode): nothing to redirect;
 *   2  a magic link to a file that has been unlinked (abs: that old name);
 *  -1  error (errno: ELOOP, ENAMETOOLONG, readlink's).
 * A missing file is 0 with *there = 0. */
enum { RES_FILE = 0, RES_NOTFILE = 1, RES_DELETED = 2 };

static int resolve_last(char *abs, size_t len, struct stat64 *st, int *there)
{
	for (int depth = 0;; depth++) {
		char t[PATH_MAX];
		ssize_t n;

		*there = exists(abs, st);
		if (!*there || !S_ISLNK(st->st_mode))
			return RES_FILE;
		if (depth == 40)
			return errno = ELOOP, -1;
		n = readlink(abs, t, sizeof t - 1);
		if (n < 0)
			return -1;
		if (n >= (ssize_t)sizeof t - 1)
			return errno = ENAMETOOLONG, -1;
		t[n] = '\0';
		int magic = under(abs, "/proc") || under(abs, "/dev");
		if (t[0] != '/') {
			if (magic)
				return RES_NOTFILE;
			char *slash = strrchr(abs, '/');
			size_t dl = (size_t)(slash - abs);
			if (dl + 1 + (size_t)n >= len)
				return errno = ENAMETOOLONG, -1;
			memcpy(abs + dl + 1, t, (size_t)n + 1);
		} else {
			static const char del[] = " (deleted)";
			size_t dn = sizeof del - 1;
			if ((size_t)n >= len)
				return errno = ENAMETOOLONG, -1;
			memcpy(abs, t, (size_t)n + 1);
			if (magic && (size_t)n > dn && strcmp(abs + n - dn, del) == 0) {
				abs[n - dn] = '\0';
				return RES_DELETED;
			}
		}
		normalise(abs);
	}
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

	temp_dirs_setup(ddp_param_temp_dirs(), tmp); /* the output gate's exclusions too */
	if (strcmp(ri->source, "none") == 0 || ri->rank == 0)
		return;
	if (ddp_param_all_ranks_write()) {
		DDP_INFO(HOOK, "DDP_ALL_RANKS_WRITE is set: rank %d writes files in place", ri->rank);
		return;
	}
	if (!dir || !*dir)
		dir = ".ddprun";
	wr_tmp = ddp_param_redirect_tmp();
	wr_rank = ri->rank;
	if (abs_path(AT_FDCWD, dir, wr_base, sizeof wr_base) != 0 ||
	    snprintf(wr_root, sizeof wr_root, "%s/rank%d", strcmp(wr_base, "/") ? wr_base : "",
		     ri->rank) >= (int)sizeof wr_root) {
		DDP_ERROR("libddp: DDP_WRITE_DIR='%.64s%s' cannot be made an absolute path (%zu bytes); "
			  "rank %d's writes outside the temporary folders fail (set DDP_WRITE_DIR to a "
			  "shorter path)", dir, strlen(dir) > 64 ? "..." : "", strlen(dir), ri->rank);
		wr_base[0] = wr_root[0] = '\0';
	}
	__atomic_store_n(&wr_active, 1, __ATOMIC_RELEASE);
	DDP_DEBUG(HOOK, "rank %d redirects its writes to %s", wr_rank, wr_root);
}

int hook_write_active(void)
{
	/* The library's own files (traces, summaries) are never redirected. */
	return __atomic_load_n(&wr_active, __ATOMIC_ACQUIRE) &&
	       !hook_file_bypass();
}

/* The side copy of path when one exists (following a symbolic link in the
 * last component when follow), else NULL. */
static const char *lookup(int dirfd, const char *path, int follow, char *buf, size_t len)
{
	char abs[PATH_MAX];
	struct stat64 st;
	int there;

	if (abs_path(dirfd, path, abs, sizeof abs) != 0)
		return NULL;
	if (!excluded(abs) && side_path(abs, buf, len) == 0 && exists(buf, NULL))
		return buf;
	if (!follow || resolve_last(abs, sizeof abs, &st, &there) != RES_FILE || excluded(abs))
		return NULL;
	if (side_path(abs, buf, len) == 0 && exists(buf, NULL))
		return buf;
	return NULL;
}

const char *hook_write_map_lookup_at(int dirfd, const char *path, int follow, char *buf,
				     size_t len)
{
	int saved = errno; /* a lookup that finds no side copy is no error */
	const char *p = path;

	if (!hook_write_active() || !path || !*path)
		return path;
	p = lookup(dirfd, path, follow, buf, len);
	errno = saved;
	return p ? p : path;
}

const char *hook_write_map_lookup(int dirfd, const char *path, char *buf, size_t len)
{
	return hook_write_map_lookup_at(dirfd, path, 1, buf, len);
}

/* Where a write to (dirfd, path) goes: path itself (*side = 0) or the side
 * copy in buf (*side = 1, its folders made, copied up when copy_up and the
 * file exists); -1 with errno and one line when it cannot be redirected.
 * abs gets the resolved absolute name. */
static int map_write(int dirfd, const char *path, int nofollow, int copy_up, char *abs,
		     char *buf, size_t len, int *side, struct stat64 *st, int *there)
{
	int r;

	*side = 0;
	if (abs_path(dirfd, path, abs, PATH_MAX) != 0)
		return refuse(path, "its absolute path cannot be made");
	if (nofollow) {
		*there = exists(abs, st);
		if (*there && S_ISLNK(st->st_mode))
			return 0; /* the open refuses a link (ELOOP) */
		r = RES_FILE;
	} else {
		r = resolve_last(abs, PATH_MAX, st, there);
	}
	if (r < 0)
		return refuse(path, "its symbolic link cannot be followed");
	if (r == RES_NOTFILE)
		return 0;
	if (r == RES_DELETED) {
		struct stat64 now;
		/* an unnamed file (O_TMPFILE, memfd, unlinked) is nobody's name */
		if (excluded(abs) || (hook_real_fstatat(dirfd, path, &now, 0) == 0 && now.st_nlink == 0))
			return 0;
		errno = EACCES;
		return refuse(path, "it reopens a file whose name was removed");
	}
	if (excluded(abs))
		return 0;
	if (side_path(abs, buf, len) != 0)
		return refuse(path, "its side path cannot be made");
	if (*there && !S_ISREG(st->st_mode))
		return 0; /* FIFO, socket, device, folder: where it is */
	if (!exists(buf, NULL)) {
		if (make_dirs(buf, 0) != 0)
			return refuse(path, "the side folder cannot be created");
		if (copy_up && *there && copy_file(abs, buf, st->st_mode, 1) != 0 && errno != EEXIST)
			return refuse(path, "the file cannot be copied to the side folder");
	}
	*side = 1;
	return 0;
}

/* The work of hook_write_map_open; may leave errno changed. */
static const char *map_open(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	char abs[PATH_MAX];
	struct stat64 st;
	int writing = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
	int side, there;

	if (!hook_write_active() || !path || !*path || (flags & O_PATH))
		return path;
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		/* an unnamed file in a folder: made in the side copy of the folder */
		if (abs_path(dirfd, path, abs, sizeof abs) != 0) {
			refuse(path, "its absolute path cannot be made");
			return NULL;
		}
		if (resolve_last(abs, sizeof abs, &st, &there) != RES_FILE || excluded(abs))
			return path;
		if (side_path(abs, buf, len) != 0) {
			refuse(path, "its side path cannot be made");
			return NULL;
		}
		if (make_dirs(buf, 1) != 0) {
			refuse(path, "the side folder cannot be created");
			return NULL;
		}
		log_once("makes an O_TMPFILE file of", path, buf);
		return buf;
	}
	if (flags & O_DIRECTORY)
		return path; /* folders stay where they are */
	if (!writing) {
		const char *p = lookup(dirfd, path, !(flags & O_NOFOLLOW), buf, len);
		return p ? p : path;
	}
	if (map_write(dirfd, path, !!(flags & O_NOFOLLOW), !(flags & (O_TRUNC | O_APPEND | O_EXCL)),
		      abs, buf, len, &side, &st, &there) != 0)
		return NULL;
	if (!side)
		return path;
	log_once("writes", path, buf);
	return buf;
}

void hook_write_output_gate(int dirfd, const char *path, int flags)
{
	static const char *const always[] = { "/dev", "/proc", "/sys", "/run" };
	char abs[PATH_MAX];
	int saved = errno;

	if (!ddp_sync_gate_open() || !path || !*path || hook_file_bypass() || (flags & (O_PATH | O_DIRECTORY)) ||
	    ((flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC))))
		return;
	if (abs_path(dirfd, path, abs, sizeof abs) != 0)
		goto out;
	for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
		if (under(abs, always[i]))
			goto out;
	for (int i = 0; i < wr_ntemp; i++)
		if (under(abs, wr_temp[i]))
			goto out;
	if (strstr(abs, "/.")) /* dot-folders: caches, and the side folders (.ddprun) */
		goto out;
	{
		char dir[PATH_MAX];
		const char *wd = ddp_param_write_dir();
		if (abs_path(AT_FDCWD, wd && *wd ? wd : ".ddprun", dir, sizeof dir) == 0 && under(abs, dir))
			goto out;
	}
	ddp_sync_output_open(abs);
out:
	errno = saved;
}

const char *hook_write_map_open(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	/* The open that follows sets errno if it fails; a successful one must
	 * leave it as the program had it (ENOENT of a missing side copy, EEXIST
	 * of a folder that existed are not the program's errors).  A refusal
	 * keeps its own errno. */
	int saved = errno;
	const char *p = map_open(dirfd, path, flags, buf, len);

	if (p)
		errno = saved;
	return p;
}

/* ---- rename, unlink, link, truncate, mkstemp ------------------------ */

/* Where the source of a rename or link is: the side copy (*src = buf), the
 * name itself (*src = NULL: excluded, nothing to redirect), or a shared file
 * this rank never wrote (*shared = 1, st filled).  -1 with errno. */
static int map_source(int dirfd, const char *path, char *abs, char *buf, size_t len,
		      const char **src, int *shared, struct stat64 *st)
{
	*src = NULL;
	*shared = 0;
	if (abs_path(dirfd, path, abs, PATH_MAX) != 0)
		return refuse(path, "its absolute path cannot be made");
	if (excluded(abs))
		return 0;
	if (side_path(abs, buf, len) != 0)
		return refuse(path, "its side path cannot be made");
	if (exists(buf, NULL)) {
		*src = buf;
		return 0;
	}
	if (exists(abs, st)) {
		*shared = 1;
		return 0;
	}
	return errno = ENOENT, -1;
}

/* The side copy of a destination name (no link followed), folders made;
 * *dst = NULL when excluded.  -1 with errno and one line. */
static int map_dest(int dirfd, const char *path, char *abs, char *buf, size_t len,
		    const char **dst)
{
	*dst = NULL;
	if (abs_path(dirfd, path, abs, PATH_MAX) != 0)
		return refuse(path, "its absolute path cannot be made");
	if (excluded(abs))
		return 0;
	if (side_path(abs, buf, len) != 0)
		return refuse(path, "its side path cannot be made");
	if (make_dirs(buf, 0) != 0)
		return refuse(path, "the side folder cannot be created");
	*dst = buf;
	return 0;
}

static int do_rename(int odir, const char *old, int ndir, const char *new, unsigned flags,
		     int plain)
{
	char aold[PATH_MAX], anew[PATH_MAX], sold[PATH_MAX], snew[PATH_MAX];
	const char *src, *dst;
	struct stat64 st;
	int shared;

	int saved = errno; /* restored before every call that succeeds or sets its own */

	HOOK_LAUNDER(old);
	HOOK_LAUNDER(new);
	hook_file_init();
	hook_libc_resolve();
	if (!hook_write_active() || !old || !new || !*old || !*new)
		goto out_real;
	if (map_source(odir, old, aold, sold, sizeof sold, &src, &shared, &st) != 0 ||
	    map_dest(ndir, new, anew, snew, sizeof snew, &dst) != 0)
		return -1;
	if (!src && !shared && !dst)
		goto out_real;
	if (src)
		odir = AT_FDCWD;
	else
		src = old;
	if (dst)
		ndir = AT_FDCWD;
	else
		dst = new;
	log_once("renames", new, dst);
	errno = saved;
	if (shared) {
		/* a shared file this rank never wrote: copy, never move */
		if (!S_ISREG(st.st_mode))
			return 0;
		if (copy_file(aold, dst, st.st_mode, 0) != 0)
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
	if (hook_write_active() && path && *path) {
		if (abs_path(dirfd, path, abs, sizeof abs) != 0)
			return refuse(path, "its absolute path cannot be made");
		if (excluded(abs))
			goto out_real;
		if (side_path(abs, side, sizeof side) != 0)
			return refuse(path, "its side path cannot be made");
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
out_real:
	errno = saved;
	switch (kind) {
	case UNLINK_PLAIN: return ddp_libc_.unlink(path);
	case UNLINK_REMOVE: return ddp_libc_.remove(path);
	default: return ddp_libc_.unlinkat(dirfd, path, flags);
	}
}

/* link/linkat: the new name is redirected; the old one is the rank's side
 * copy, an unnamed file (O_TMPFILE: linked as it is), or a shared file,
 * which is copied: a side name must never be a second name of rank 0's
 * file (writes through it would change rank 0's). */
static int do_link(int odir, const char *old, int ndir, const char *new, int flags, int plain)
{
	char aold[PATH_MAX], anew[PATH_MAX], sold[PATH_MAX], snew[PATH_MAX], name[PATH_MAX];
	const char *src = old, *dst;
	struct stat64 st;
	int saved = errno, shared = 0, there;

	HOOK_LAUNDER(old);
	HOOK_LAUNDER(new);
	hook_file_init();
	hook_libc_resolve();
	if (!hook_write_active() || !old || !new || !*new)
		goto out_real;
	if (map_dest(ndir, new, anew, snew, sizeof snew, &dst) != 0)
		return -1;
	if (!*old && (flags & AT_EMPTY_PATH)) {
		/* the file open as odir */
		struct stat64 fst;
		char link[64];
		if (ddp_sys_fstat(odir, (struct stat *)&fst) != 0)
			return -1;
		if (fst.st_nlink > 0) {
			snprintf(link, sizeof link, "/proc/self/fd/%d", odir);
			ssize_t n = readlink(link, aold, sizeof aold - 1);
			if (n <= 0 || aold[0] != '/')
				return errno = EBADF, -1;
			aold[n] = '\0';
			memcpy(name, aold, (size_t)n + 1);
			if (map_source(AT_FDCWD, name, aold, sold, sizeof sold, &src, &shared, &st) != 0)
				return -1;
			if (src) {
				odir = AT_FDCWD;
				flags &= ~AT_EMPTY_PATH;
			} else {
				src = old;
			}
		}
	} else {
		int r;
		if (abs_path(odir, old, aold, sizeof aold) != 0)
			return refuse(old, "its absolute path cannot be made");
		r = (flags & AT_SYMLINK_FOLLOW) ? resolve_last(aold, sizeof aold, &st, &there) : RES_FILE;
		if (r < 0)
			return -1;
		if (r == RES_DELETED) {
			struct stat64 now;
			if (hook_real_fstatat(odir, old, &now, 0) != 0)
				return -1;
			if (now.st_nlink > 0 && !excluded(aold))
				return errno = EACCES, refuse(old, "it links a file whose name was removed");
		} else if (r == RES_FILE) {
			memcpy(name, aold, strlen(aold) + 1);
			if (map_source(AT_FDCWD, name, aold, sold, sizeof sold, &src, &shared, &st) != 0)
				return -1;
			if (src) {
				odir = AT_FDCWD;
				flags &= ~AT_SYMLINK_FOLLOW;
			} else {
				src = old;
			}
		}
	}
	if (!dst && !shared && src == old)
		goto out_real;
	if (dst)
		ndir = AT_FDCWD;
	else
		dst = new;
	log_once("links", new, dst);
	if (shared) {
		if (!S_ISREG(st.st_mode))
			return errno = EPERM, -1;
		if (copy_file(aold, dst, st.st_mode, 1) != 0)
			return -1;
		errno = saved;
		return 0;
	}
	errno = saved;
	return ddp_libc_.linkat(odir, src, ndir, dst, flags);
out_real:
	errno = saved;
	if (plain)
		return ddp_libc_.link(old, new);
	return ddp_libc_.linkat(odir, old, ndir, new, flags);
}

/* truncate(path): the side copy (copied up first). */
static int do_truncate(const char *path, off64_t len)
{
	char buf[PATH_MAX];
	const char *p;

	HOOK_LAUNDER(path);
	p = path;
	hook_file_init();
	hook_libc_resolve();
	if (path && hook_file_ready() && hook_write_active()) {
		p = hook_write_map_open(AT_FDCWD, path, O_WRONLY, buf, sizeof buf);
		if (!p)
			return -1;
	}
	return ddp_libc_.truncate64(p, len);
}

/* mkstemp and its variants.  glibc creates the file through internal calls
 * no preload sees, so for a template in a redirected folder the name is
 * made here and the file created through the open hook: it lands in the
 * side folder (the template keeps the name the program asked for, which
 * the rank's later rename and open find there). */
static int do_mkostemps(char *tmpl, int suffixlen, int flags)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char abs[PATH_MAX];
	size_t n;
	char *x;

	HOOK_LAUNDER(tmpl);
	hook_file_init();
	hook_libc_resolve();
	if (!tmpl || !hook_file_ready() || !hook_write_active() ||
	    abs_path(AT_FDCWD, tmpl, abs, sizeof abs) != 0 || excluded(abs))
		return ddp_libc_.mkostemps(tmpl, suffixlen, flags);
	n = strlen(tmpl);
	if (suffixlen < 0 || (size_t)suffixlen + 6 > n ||
	    strncmp(tmpl + n - (size_t)suffixlen - 6, "XXXXXX", 6) != 0)
		return errno = EINVAL, -1;
	x = tmpl + n - (size_t)suffixlen - 6;
	for (int attempt = 0; attempt < 10000; attempt++) {
		unsigned char r[6];
		if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t v = (uint64_t)ts.tv_nsec * 6364136223846793005ull + (uint64_t)attempt +
				     (uint64_t)getpid();
			memcpy(r, &v, sizeof r);
		}
		for (int i = 0; i < 6; i++)
			x[i] = chars[r[i] % (sizeof chars - 1)];
		int fd = hook_file_open(AT_FDCWD, tmpl, (flags & ~O_ACCMODE) | O_RDWR | O_CREAT | O_EXCL,
					0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return errno = EEXIST, -1;
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
