/* SPDX-License-Identifier: MIT
 *
 * ddp_write.c - write safety: a private overlay of the file system for each
 * rank other than 0 (docs/write-safety.md).
 *
 * Layout.  Rank k's overlay is its run folder
 *   $DDP_WRITE_DIR/rank<k>/run-<pid>-<start>-<host>/<absolute path>
 * where pid and start (clock ticks since boot, /proc/<pid>/stat field 22)
 * name the rank's first process, on host (another host's folder is never
 * judged from here).  That process exports DDP_WRITE_RUN so the
 * programs it execs join the same folder; a folder whose process is gone
 * belongs to an earlier (finished or crashed) run: it is never read, and
 * the next setup of the same rank removes it with everything else under
 * rank<k>/.  The first process removes its own folder at exit unless
 * DDP_WRITE_KEEP=1.
 *
 * Entries.  For an absolute path P the rank's entry is root+P:
 *   - absent:     the rank sees the real P (rank 0's file, or nothing);
 *   - a whiteout  (a symbolic link whose target is WHITEOUT): P is deleted
 *                 for this rank, whatever the real P is;
 *   - anything else (file, folder, symbolic link): the rank's own P.
 * resolve() walks a path component by component through that merged view,
 * following symbolic links (the rank's and the real ones, magic links of
 * /proc and /dev included) in every component, so each path form of one
 * object ends at one canonical absolute name before any decision.
 *
 * Operations (ranks other than 0, under a launcher, DDP_ALL_RANKS_WRITE
 * unset; paths outside the shared list below):
 *   - a write of an existing file copies it up first (unless the open
 *     truncates, which starts an empty copy); a created file is made in the
 *     overlay, its folders mirrored from the real ones (a missing real
 *     folder is ENOENT, as without ddp);
 *   - reads, stats, access and readlink use the rank's entry when it has
 *     one, else the real file;
 *   - mkdir and symlink make the entry; unlink and rmdir remove the rank's
 *     entry and leave a whiteout when a real one exists; rename moves the
 *     rank's entry (copying up a real file or symbolic link first) and
 *     leaves a whiteout for a real source; link gives a new name in the
 *     overlay (a real file is copied, never given a second name).
 * Shared (never redirected): /dev, /proc, /sys, /run, DDP_WRITE_DIR itself,
 * and, with DDP_REDIRECT_TMP=0 only, the temporary folders.  A regular file
 * written there is reported once per rank.
 * Fail closed: a write that cannot be redirected fails with errno and one
 * `libddp:` line per path; it never lands in place.
 *
 * Contract: ddp_write_setup runs once (files stage); the state is read-only
 * afterwards; any thread.  All libc file calls go through the port
 * (ddp_libc_), never the program's hooks.  Costs syscalls only on ranks that
 * redirect: per path the program names, one lstat per component the rank
 * has on the way, then either the kernel's resolution (an O_PATH open, a
 * readlink, an fstat) or, when the rank has entries on the way or the file
 * is missing, the walk: two lstats per component.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_port.h"
#include "ddp_rank.h"
#include "ddp_path.h"
#include "ddp_write.h"
#include "ddp_write_dir.h"
#include "ddp_write_lock.h"

#define WHITEOUT "/\001ddprun-deleted"

static int wr_active; /* this rank redirects                 */
static int wr_rank;
static int wr_tmp;                 /* DDP_REDIRECT_TMP: redirect temp too */
static int wr_keep;                /* DDP_WRITE_KEEP                      */
static pid_t wr_owner;             /* the process that removes root at exit */
static char wr_base[PATH_MAX];     /* absolute $DDP_WRITE_DIR ("" broken) */
static char wr_root[PATH_MAX];     /* the run folder ("": every write fails) */
static int wr_root_errno = EACCES; /* why there is none (the writes' errno) */
#define WR_MAX_TEMP 8
static char wr_temp[WR_MAX_TEMP][PATH_MAX]; /* DDP_TEMP_DIRS + $TMPDIR, absolute */
static int wr_ntemp;
#define WR_MAX_KERN 32
static char wr_kern[WR_MAX_KERN][PATH_MAX]; /* DDP_OVERLAY_TREES: the kernel's */
static int wr_nkern;
static int wr_said_unprotected; /* the one "left unprotected" line (atomic) */
static uint64_t logged[1024];   /* hashes of paths logged (atomic)     */
static uint64_t failed[256];    /* hashes of paths refused (atomic)    */

/* ---- paths ---------------------------------------------------------- */

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
 * made.  Symbolic links are resolved later, by resolve(). */
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
			n = ddp_libc_.readlink(link, out, len - 1);
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

static int in_temp(const char *abs)
{
	for (int i = 0; i < wr_ntemp; i++)
		if (ddp_path_under(abs, wr_temp[i]))
			return 1;
	return 0;
}

/* Whether abs is in a folder the kernel overlays in this rank's mount
 * namespace (DDP_OVERLAY_TREES, set by ddprun): the kernel keeps it. */
static int in_kernel_tree(const char *abs)
{
	for (int i = 0; i < wr_nkern; i++)
		if (ddp_path_under(abs, wr_kern[i]))
			return 1;
	return 0;
}

/* Whether abs is shared or kernel-overlaid: never redirected here. */
static int excluded(const char *abs)
{
	if (ddp_path_in_shared_folder(abs) || in_kernel_tree(abs))
		return 1;
	if (!wr_tmp && in_temp(abs))
		return 1;
	return wr_base[0] && ddp_path_under(abs, wr_base);
}

/* wr_root + abs into out; -1 with errno when too long (ENAMETOOLONG) or
 * when there is no side folder at all (EACCES). */
static int side_path(const char *abs, char *out, size_t len)
{
	if (!wr_root[0])
		return errno = wr_root_errno, -1;
	int n = snprintf(out, len, "%s%s", wr_root, strcmp(abs, "/") ? abs : "");

	return n < 0 || (size_t)n >= len ? (errno = ENAMETOOLONG, -1) : 0;
}

static int lstat_(const char *p, struct stat *st)
{
	struct stat tmp;

	return ddp_sys_fstatat(AT_FDCWD, p, st ? st : &tmp, AT_SYMLINK_NOFOLLOW);
}

static int exists(const char *p, struct stat *st)
{
	return lstat_(p, st) == 0;
}

static int is_whiteout(const char *side, const struct stat *st)
{
	char t[sizeof WHITEOUT + 1];
	ssize_t n;

	if (!S_ISLNK(st->st_mode) || st->st_size != (off_t)sizeof WHITEOUT - 1)
		return 0;
	n = ddp_libc_.readlink(side, t, sizeof t);
	return n == (ssize_t)sizeof WHITEOUT - 1 && memcmp(t, WHITEOUT, (size_t)n) == 0;
}

/* ---- the merged view ------------------------------------------------ */

enum where {
	W_MISSING,
	W_REAL,
	W_SIDE,
	W_WHITEOUT
};
enum {
	RES_FILE = 0,
	RES_NOTFILE = 1,
	RES_DELETED = 2
};

/* Resolves the absolute path abs (in place) through the rank's view: every
 * component's symbolic link is followed (the last one only when follow),
 * the rank's entries first, then the real ones; the magic links of /proc
 * and /dev/fd too.  Returns
 *   RES_FILE     abs is canonical; *where says what is there (W_MISSING
 *                also when a folder on the way is missing), *st its lstat;
 *   RES_NOTFILE  a magic link to something that has no name (pipe, socket);
 *   RES_DELETED  a magic link to a file whose name was removed (abs: the
 *                old name);
 *  -1            errno (ELOOP, ENAMETOOLONG, readlink's). */
static int resolve_walk(char *abs, size_t len, int follow, enum where *where, struct stat *st)
{
	char cur[PATH_MAX], rest[PATH_MAX], side[PATH_MAX], t[PATH_MAX];
	size_t cl = 0;
	int links = 0;

	if (strlen(abs) >= sizeof rest)
		return errno = ENAMETOOLONG, -1;
	/* a name inside the rank's run folder (its working folder may be
	 * there, after a chdir into a folder only it has) is its overlay name */
	if (wr_root[0] && ddp_path_under(abs, wr_root) && strcmp(abs, wr_root) != 0)
		memmove(abs, abs + strlen(wr_root), strlen(abs + strlen(wr_root)) + 1);
	strcpy(rest, abs);
	cur[0] = '\0';
	*where = W_REAL; /* "/" */
	memset(st, 0, sizeof *st);
	st->st_mode = S_IFDIR;
	for (;;) {
		char *r = rest, *c;
		size_t n;
		int last, magic;
		ssize_t tn;

		while (*r == '/')
			r++;
		if (!*r)
			break;
		n = strcspn(r, "/");
		c = r;
		r += n;
		while (*r == '/')
			r++;
		last = *r == '\0';
		if (n == 1 && c[0] == '.') {
			memmove(rest, r, strlen(r) + 1);
			continue;
		}
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			while (cl > 0 && cur[--cl] != '/')
				;
			cur[cl] = '\0';
			memmove(rest, r, strlen(r) + 1);
			*where = W_REAL;
			st->st_mode = S_IFDIR;
			continue;
		}
		if (*where == W_MISSING || *where == W_WHITEOUT) {
			/* below a missing folder: nothing exists */
			*where = W_MISSING;
			goto append;
		}
		if (cl + 1 + n >= sizeof cur)
			return errno = ENAMETOOLONG, -1;
		cur[cl] = '/';
		memcpy(cur + cl + 1, c, n);
		cur[cl + 1 + n] = '\0';
		magic = ddp_path_under(cur, "/proc") || ddp_path_under(cur, "/dev");
		if (!excluded(cur) && side_path(cur, side, sizeof side) == 0 && exists(side, st)) {
			if (is_whiteout(side, st)) {
				*where = W_WHITEOUT;
				cl += 1 + n;
				memmove(rest, r, strlen(r) + 1);
				continue;
			}
			*where = W_SIDE;
			if (!S_ISLNK(st->st_mode) || (last && !follow)) {
				cl += 1 + n;
				memmove(rest, r, strlen(r) + 1);
				continue;
			}
			tn = ddp_libc_.readlink(side, t, sizeof t - 1);
		} else if (exists(cur, st)) {
			*where = W_REAL;
			if (!S_ISLNK(st->st_mode) || (last && !follow)) {
				cl += 1 + n;
				memmove(rest, r, strlen(r) + 1);
				continue;
			}
			tn = ddp_libc_.readlink(cur, t, sizeof t - 1);
		} else {
			*where = W_MISSING;
			cl += 1 + n;
			memmove(rest, r, strlen(r) + 1);
			continue;
		}
		/* a symbolic link: splice its target in front of the rest */
		if (tn < 0)
			return -1;
		if (tn >= (ssize_t)sizeof t - 1)
			return errno = ENAMETOOLONG, -1;
		t[tn] = '\0';
		if (++links > 40)
			return errno = ELOOP, -1;
		if (magic && t[0] != '/' && strchr(t, ':'))
			return RES_NOTFILE; /* pipe:[...], socket:[...], anon_inode:... */
		if (magic && t[0] == '/') {
			static const char del[] = " (deleted)";
			size_t dn = sizeof del - 1;
			if ((size_t)tn > dn && strcmp(t + tn - dn, del) == 0) {
				if (!last)
					return errno = ENOENT, -1;
				t[tn - dn] = '\0';
				if (strlen(t) >= len)
					return errno = ENAMETOOLONG, -1;
				strcpy(abs, t);
				normalise(abs);
				return RES_DELETED;
			}
		}
		if (t[0] == '/')
			cl = 0; /* absolute: from the root again */
		cur[cl] = '\0';
		if ((size_t)tn + 1 + strlen(r) >= sizeof rest)
			return errno = ENAMETOOLONG, -1;
		memmove(rest + tn + 1, r, strlen(r) + 1);
		memcpy(rest, t, (size_t)tn);
		rest[tn] = '/';
		*where = W_REAL;
		continue;
append:
		if (cl + 1 + n >= sizeof cur)
			return errno = ENAMETOOLONG, -1;
		cur[cl] = '/';
		memcpy(cur + cl + 1, c, n);
		cl += 1 + n;
		cur[cl] = '\0';
		memmove(rest, r, strlen(r) + 1);
	}
	if (cl == 0)
		strcpy(cur, "/");
	/* a magic link into the rank's own run folder names the overlay path */
	if (wr_root[0] && ddp_path_under(cur, wr_root) && strcmp(cur, wr_root) != 0) {
		memmove(cur, cur + strlen(wr_root), strlen(cur + strlen(wr_root)) + 1);
		if (side_path(cur, side, sizeof side) == 0 && exists(side, st))
			*where = W_SIDE;
	}
	if (strlen(cur) >= len)
		return errno = ENAMETOOLONG, -1;
	strcpy(abs, cur);
	return RES_FILE;
}

/* Whether the rank's entries cannot change how the absolute, normalised
 * path p resolves: walking the run folder along p's components reaches a
 * missing one, and each one there before it is a folder (a mirror: the
 * real one has the same name).  One lstat per component the rank has. */
static int side_free(const char *p)
{
	char side[PATH_MAX];
	struct stat st;
	size_t rl = strlen(wr_root), i = 0;

	if (!wr_root[0] || rl + strlen(p) >= sizeof side)
		return 0;
	memcpy(side, wr_root, rl);
	for (;;) {
		while (p[i] == '/')
			i++;
		if (!p[i])
			return 0; /* the rank has p itself */
		size_t n = strcspn(p + i, "/");
		memcpy(side + rl, p, i + n);
		side[rl + i + n] = '\0';
		if (lstat_(side, &st) != 0)
			return errno == ENOENT;
		if (!S_ISDIR(st.st_mode))
			return 0; /* a link or whiteout of the rank's */
		i += n;
	}
}

/* resolve_walk's contract.  Fast path: when the rank has no entry on the
 * way (side_free of the path and of the kernel's answer), the kernel
 * resolves the whole path at once (an O_PATH open, then its /proc/self/fd
 * link): three system calls instead of two lstats per component.  A
 * missing file, or any entry of the rank on the way, takes the walk. */
static int resolve(char *abs, size_t len, int follow, enum where *where, struct stat *st)
{
	char link[64], c[PATH_MAX];
	ssize_t n;
	int fd;

	if (wr_root[0] && ddp_path_under(abs, wr_root))
		return resolve_walk(abs, len, follow, where, st);
	if (!side_free(abs))
		return resolve_walk(abs, len, follow, where, st);
	fd = ddp_libc_.open64(abs, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return resolve_walk(abs, len, follow, where, st);
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = ddp_libc_.readlink(link, c, sizeof c - 1);
	if (n <= 0 || n >= (ssize_t)sizeof c - 1 || c[0] != '/' || ddp_sys_fstat(fd, st) != 0) {
		ddp_libc_.close(fd);
		return resolve_walk(abs, len, follow, where, st); /* pipes, deleted: the walk says */
	}
	ddp_libc_.close(fd);
	c[n] = '\0';
	{
		static const char del[] = " (deleted)";
		size_t dn = sizeof del - 1;
		if ((size_t)n > dn && strcmp(c + n - dn, del) == 0)
			return resolve_walk(abs, len, follow, where, st);
	}
	if ((size_t)n >= len || (strcmp(c, abs) != 0 && !side_free(c)) || ddp_path_under(c, wr_root))
		return resolve_walk(abs, len, follow, where, st);
	strcpy(abs, c);
	*where = W_REAL;
	return RES_FILE;
}

/* ---- files and folders ---------------------------------------------- */

/* Mirrors in the overlay the folders holding abs (abs canonical): each one
 * the rank has is kept, each real one is made with the real one's mode; a
 * folder missing from both is ENOENT, one that is a whiteout too. */
static int mirror_dirs(const char *abs)
{
	char d[PATH_MAX], s[PATH_MAX];
	size_t n = strlen(abs);

	if (n + 1 >= sizeof d)
		return errno = ENAMETOOLONG, -1;
	memcpy(d, abs, n + 1);
	for (char *p = d + 1; *p; p++) {
		struct stat st;

		if (*p != '/')
			continue;
		*p = '\0';
		if (side_path(d, s, sizeof s) != 0)
			return -1;
		if (exists(s, &st)) {
			if (is_whiteout(s, &st))
				return errno = ENOENT, -1;
			if (!S_ISDIR(st.st_mode))
				return errno = ENOTDIR, -1;
		} else if (ddp_sys_fstatat(AT_FDCWD, d, &st, 0) == 0 && S_ISDIR(st.st_mode)) {
			if (ddp_libc_.mkdir(s, (st.st_mode & 07777) | 0700) != 0 && errno != EEXIST)
				return -1;
		} else {
			return errno = ENOENT, -1;
		}
		*p = '/';
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
	out = ddp_libc_.open64(dst, O_WRONLY | O_CREAT | (excl ? O_EXCL : O_TRUNC) | O_CLOEXEC, mode & 07777);
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

/* Removes path and, for a folder, everything in it, never through a link. */
static int remove_tree(const char *path)
{
	return ddp_write_remove_tree_at(AT_FDCWD, path);
}

/* Makes the rank's entry of abs a whiteout (its folders mirrored). */
static int make_whiteout(const char *abs, const char *side)
{
	if (mirror_dirs(abs) != 0)
		return -1;
	if (remove_tree(side) != 0)
		return -1;
	return ddp_libc_.symlink(WHITEOUT, side);
}

/* Whether the real folder abs has an entry the rank has not deleted, or
 * the rank's folder side an entry that is not a whiteout. */
static int dir_has_entries(const char *abs, const char *side)
{
	const char *dirs[2] = { side, abs };
	char p[PATH_MAX];
	int found = 0;

	for (int i = 0; i < 2 && !found; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;

		if (!d)
			continue;
		while (!found && (e = readdir(d))) {
			struct stat st;
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (i == 0) {
				snprintf(p, sizeof p, "%s/%s", side, e->d_name);
				found = !(exists(p, &st) && is_whiteout(p, &st));
			} else {
				snprintf(p, sizeof p, "%s/%s", side, e->d_name);
				found = !exists(p, NULL); /* the rank's entry decides */
			}
		}
		closedir(d);
	}
	return found;
}

/* ---- logging -------------------------------------------------------- */

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
		if (cur == 0 &&
		    __atomic_compare_exchange_n(&t[j], &cur, h, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
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
		DDP_ERROR("libddp: rank %d cannot write %s%.160s: %s (%s%s%s); the call fails rather than "
			  "write rank 0's file (docs/write-safety.md)",
			  wr_rank, strlen(path) > 160 ? "..." : "",
			  path + (strlen(path) > 160 ? strlen(path) - 160 : 0), why, strerror(e),
			  e == ENOSPC || e == EDQUOT ? " in its private folder " : "",
			  e == ENOSPC || e == EDQUOT ? (wr_base[0] ? wr_base : "DDP_WRITE_DIR") : "");
	errno = e;
	return -1;
}

/* A regular file written in a shared folder: said once per rank. */
/* mirror_dirs for a name the call makes: -1 with errno when the folders
 * cannot be made; a missing or non-folder parent (ENOENT, ENOTDIR) fails
 * as it would on rank 0, anything else is also refused with one line. */
static int mirror_for(const char *abs, const char *path)
{
	if (mirror_dirs(abs) == 0)
		return 0;
	if (errno == ENOENT || errno == ENOTDIR)
		return -1;
	return refuse(path, "the side folder cannot be created");
}

static void say_unprotected(const char *abs)
{
	int expect = 0;

	if (in_kernel_tree(abs))
		return; /* protected by the kernel's overlay */
	if (ddp_param_write_said() && wr_rank != 1)
		return; /* under ddprun rank 1 says it for the job (every rank runs the same program) */
	if (__atomic_compare_exchange_n(&wr_said_unprotected, &expect, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		DDP_WARN("libddp: rank %d writes %.200s in place: %s is shared by every rank "
			 "(docs/write-safety.md); this is said once",
			 wr_rank, abs,
			 in_temp(abs) ? "a temporary folder under DDP_REDIRECT_TMP=0" : "this folder");
}

/* ---- set-up --------------------------------------------------------- */

/* Whether a run folder's name (run-<pid>-<start>-<host>) is a live
 * process's.  Another host's folder counts as live: its process cannot be
 * seen from here (a DDP_WRITE_DIR on a shared file system). */
static int run_alive(const char *name)
{
	int pid, off = 0;
	unsigned long long st;

	if (sscanf(name, "run-%d-%llu-%n", &pid, &st, &off) != 2 || pid <= 0 || off == 0)
		return 0;
	if (strcmp(name + off, ddp_write_host_tag()) != 0)
		return 1;
	return ddp_write_start_time((pid_t)pid) == st;
}

/* Removes everything under the rank folder rfd (shown as dir) but the run
 * folder keep (earlier runs'), never through a link. */
static void remove_stale(int rfd, const char *dir, const char *keep)
{
	int fd = ddp_libc_.dup(rfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			ddp_libc_.close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, keep))
			continue;
		if (!strncmp(e->d_name, "run-", 4) && run_alive(e->d_name))
			continue; /* another live job with the same DDP_WRITE_DIR */
		if (ddp_write_remove_tree_at(rfd, e->d_name) != 0)
			DDP_WARN("libddp: rank %d cannot remove %s/%s, left by an earlier run (%s); it is "
				 "never read",
				 wr_rank, dir, e->d_name, strerror(errno));
		else
			DDP_DEBUG(HOOK, "rank %d removed %s/%s, left by an earlier run", wr_rank, dir, e->d_name);
	}
	closedir(d);
}

static void remove_own(void)
{
	char why[PATH_MAX + 128];

	if (getpid() != wr_owner || !wr_root[0])
		return;
	/* before its space is given back: ENOSPC named nothing to the program */
	if (!wr_nkern && ddp_write_dir_full(wr_root, why, sizeof why)) /* else ddprun says it */
		DDP_WARN("libddp: rank %d's private folder %s: its writes there may have failed with ENOSPC; "
			 "free space or choose a bigger place (ddprun --log-dir, DDP_WRITE_DIR)",
			 wr_rank, why);
	if (wr_keep)
		return;
	if (remove_tree(wr_root) != 0)
		DDP_WARN("libddp: rank %d cannot remove its run folder %s (%s); the next run removes it",
			 wr_rank, wr_root, strerror(errno));
}

/* Fills wr_temp from the colon-separated list plus $TMPDIR (absolute). */
static void temp_dirs_setup(const char *list, const char *tmpdir)
{
	char buf[4096];
	char *save = NULL;

	wr_ntemp = 0;
	if (snprintf(buf, sizeof buf, "%s:%s", list ? list : "", tmpdir ? tmpdir : "") >= (int)sizeof buf) {
		DDP_WARN("DDP_TEMP_DIRS is too long; only /tmp and /var/tmp count as temporary");
		snprintf(buf, sizeof buf, "/tmp:/var/tmp");
	}
	for (char *d = strtok_r(buf, ":", &save); d && wr_ntemp < WR_MAX_TEMP; d = strtok_r(NULL, ":", &save))
		if (*d && abs_path(AT_FDCWD, d, wr_temp[wr_ntemp], sizeof wr_temp[0]) == 0)
			wr_ntemp++;
}

/* Fills wr_kern from the colon-separated absolute folders of list. */
static void kernel_trees_setup(const char *list)
{
	const char *p = list;

	wr_nkern = 0;
	while (p && *p && wr_nkern < WR_MAX_KERN) {
		size_t n = strcspn(p, ":");
		if (p[0] == '/' && n < sizeof wr_kern[0]) {
			memcpy(wr_kern[wr_nkern], p, n);
			wr_kern[wr_nkern++][n] = '\0';
		}
		p += n + (p[n] == ':');
	}
	if (wr_nkern)
		DDP_DEBUG(HOOK, "rank %d: %d folder%s overlaid by the kernel (%s); the libc overlay keeps the rest",
			  wr_rank, wr_nkern, wr_nkern == 1 ? "" : "s", list);
}

/* The run folder: joined from DDP_WRITE_RUN when its process lives (an
 * exec'd program of this rank), else this process's new one.  The rank
 * folder is checked first (ddp_write_dir.h): a foreign one is refused with
 * why filled.  -1 with errno. */
static int run_setup(char *why, size_t wlen)
{
	const char *run = getenv("DDP_WRITE_RUN");
	char name[64], rankdir[PATH_MAX];
	int n, fresh = 0, rfd;

	n = snprintf(rankdir, sizeof rankdir, "%s/rank%d", strcmp(wr_base, "/") ? wr_base : "", wr_rank);
	if (n < 0 || (size_t)n >= sizeof rankdir) {
		snprintf(why, wlen, "%s/rank%d is too long", wr_base, wr_rank);
		return errno = ENAMETOOLONG, -1;
	}
	rfd = ddp_write_dir_open(wr_base, wr_rank, why, wlen);
	if (rfd < 0)
		return -1;
	size_t hl = strlen(ddp_write_host_tag()), rl = run ? strlen(run) : 0;

	/* joined only on this host (a folder of another host counts as alive) */
	if (run && rl < sizeof name && rl > hl && !strcmp(run + rl - hl, ddp_write_host_tag()) &&
	    run[rl - hl - 1] == '-' && run_alive(run) && !strchr(run, '/')) {
		int pid = 0;
		snprintf(name, sizeof name, "%s", run);
		/* the first process itself, after an exec (a shell or a shim that
		 * execs the program): still the owner */
		if (sscanf(name, "run-%d-", &pid) == 1 && pid == (int)getpid())
			wr_owner = getpid();
	} else {
		fresh = 1;
		wr_owner = getpid();
		snprintf(name, sizeof name, "run-%d-%llu-%s", (int)wr_owner, ddp_write_start_time(wr_owner), ddp_write_host_tag());
		setenv("DDP_WRITE_RUN", name, 1);
	}
	if (snprintf(wr_root, sizeof wr_root, "%s/%s", rankdir, name) >= (int)sizeof wr_root) {
		ddp_libc_.close(rfd);
		snprintf(why, wlen, "%s/%s is too long", rankdir, name);
		return errno = ENAMETOOLONG, -1;
	}
	if (fresh)
		remove_stale(rfd, rankdir, name);
	if (ddp_libc_.mkdirat(rfd, name, 0700) != 0 && errno != EEXIST) {
		int e = errno;
		snprintf(why, wlen, "%s cannot be made (%s)", wr_root, strerror(e));
		ddp_libc_.close(rfd);
		return errno = e, -1;
	}
	ddp_libc_.close(rfd);
	if (wr_owner)
		atexit(remove_own);
	return 0;
}

void ddp_write_setup(void)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	const char *dir = ddp_param_write_dir(), *tmp = getenv("TMPDIR");
	char why[PATH_MAX + 128], cwd[PATH_MAX];

	temp_dirs_setup(ddp_param_temp_dirs(), tmp); /* every rank: ddp_write_output_path too */
	ddp_write_lock_setup();                       /* every rank: locks across ranks */
	if (strcmp(ri->source, "none") == 0 || ri->rank == 0)
		return;
	if (ddp_param_all_ranks_write()) {
		DDP_INFO(HOOK, "DDP_ALL_RANKS_WRITE is set: rank %d writes files in place", ri->rank);
		return;
	}
	if (!dir || !*dir)
		dir = ".ddprun";
	kernel_trees_setup(ddp_param_overlay_trees());
	wr_tmp = ddp_param_redirect_tmp();
	wr_keep = ddp_param_write_keep();
	wr_rank = ri->rank;
	if (abs_path(AT_FDCWD, dir, wr_base, sizeof wr_base) != 0 || strlen(wr_base) + 64 >= sizeof wr_base) {
		DDP_ERROR("libddp: DDP_WRITE_DIR='%.64s%s' cannot be made an absolute path (%zu bytes); "
			  "rank %d's writes outside the shared folders fail (set DDP_WRITE_DIR to a "
			  "shorter path)",
			  dir, strlen(dir) > 64 ? "..." : "", strlen(dir), ri->rank);
		wr_base[0] = wr_root[0] = '\0';
	} else if (run_setup(why, sizeof why) != 0) {
		wr_root_errno = errno ? errno : EACCES;
		DDP_ERROR("libddp: rank %d cannot use its private folder: %s; its writes outside "
			  "the shared folders fail (docs/write-safety.md)",
			  ri->rank, why);
		wr_root[0] = '\0';
	}
	/* under ddprun (DDP_WRITE_SAID) these were said once, by ddprun */
	if (!wr_tmp && wr_ntemp > 0 && !ddp_param_write_said())
		DDP_WARN("libddp: DDP_REDIRECT_TMP=0: rank %d writes files under the temporary folders "
			 "(%s%s%s) in place, shared with every rank",
			 ri->rank, wr_temp[0], wr_ntemp > 1 ? ", " : "", wr_ntemp > 1 ? wr_temp[1] : "");
	if (!ddp_param_write_said() && getcwd(cwd, sizeof cwd) && excluded(cwd) && !in_kernel_tree(cwd) &&
	    !(wr_base[0] && ddp_path_under(cwd, wr_base)))
		DDP_WARN("libddp: rank %d's working folder %s is shared (" DDP_SHARED_FOLDERS_TEXT "%s): "
			 "files written there are not protected (docs/write-safety.md)",
			 ri->rank, cwd, wr_tmp ? "" : ", temporary folders");
	__atomic_store_n(&wr_active, 1, __ATOMIC_RELEASE);
	DDP_DEBUG(HOOK, "rank %d redirects its writes to %s", wr_rank, wr_root);
}

int ddp_write_output_path(int dirfd, const char *path, int flags, char *abs, size_t len)
{
	const char *wd = ddp_param_write_dir();
	char dir[PATH_MAX];
	int saved = errno, rc = 0;

	if (!path || !*path || (flags & (O_PATH | O_DIRECTORY)) ||
	    ((flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC))))
		return 0;
	char cwd[PATH_MAX];
	const char *rel = abs; /* what the dot-folder test reads */
	int in_cwd;

	if (abs_path(dirfd, path, abs, len) != 0)
		goto out;
	if (ddp_path_in_shared_folder(abs))
		goto out;
	/* a working folder under a temporary folder (a CI checkout in /tmp)
	 * holds outputs like any other: only the rest of /tmp is scratch */
	in_cwd = getcwd(cwd, sizeof cwd) && strcmp(cwd, "/") != 0 && ddp_path_under(abs, cwd);
	if (in_cwd)
		rel = abs + strlen(cwd);
	else if (in_temp(abs))
		goto out;
	if (strstr(rel, "/.")) /* dot-folders: caches, and the side folders (.ddprun) */
		goto out;
	if (abs_path(AT_FDCWD, wd && *wd ? wd : ".ddprun", dir, sizeof dir) == 0 && ddp_path_under(abs, dir))
		goto out;
	rc = 1;
out:
	errno = saved;
	return rc;
}

int ddp_write_active(void)
{
	return __atomic_load_n(&wr_active, __ATOMIC_ACQUIRE);
}

const char *ddp_write_root(void)
{
	return wr_root;
}

/* ---- lookups and opens ---------------------------------------------- */

/* A name that never exists (a deleted entry's lookups fail with ENOENT). */
static const char *missing_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/.ddprun-deleted/x", wr_root[0] ? wr_root : "/proc/self/ddprun");
	return buf;
}

/* Where a lookup goes: NULL for path itself, else buf. */
static const char *lookup(int dirfd, const char *path, int follow, char *buf, size_t len)
{
	char abs[PATH_MAX];
	struct stat st;
	enum where w;

	if (abs_path(dirfd, path, abs, sizeof abs) != 0)
		return NULL;
	if (resolve(abs, sizeof abs, follow, &w, &st) != RES_FILE || excluded(abs))
		return NULL;
	switch (w) {
	case W_SIDE: return side_path(abs, buf, len) == 0 ? buf : NULL;
	case W_WHITEOUT: return missing_path(buf, len);
	case W_MISSING:
		/* a name under a folder only the rank has: its entry */
		if (side_path(abs, buf, len) == 0)
			return buf;
		return NULL;
	default:
		if (strlen(abs) >= len)
			return NULL;
		strcpy(buf, abs);
		return buf;
	}
}

const char *ddp_write_map_lookup(int dirfd, const char *path, int follow, char *buf, size_t len)
{
	int saved = errno; /* a lookup that finds no side copy is no error */
	const char *p;

	if (!path || !*path)
		return path;
	p = lookup(dirfd, path, follow, buf, len);
	errno = saved;
	return p ? p : path;
}

/* Where a write to (dirfd, path) goes: path itself (*side = 0) or the
 * rank's entry in buf (*side = 1: its folders mirrored; an existing real
 * file copied up when copy_up, an empty copy made when trunc).  abs gets
 * the canonical name.  -1 with errno (one line when it is ddp's trouble). */
static int map_write(int dirfd, const char *path, int follow, int flags, char *abs, char *buf, size_t len,
		     int *side)
{
	struct stat st, now;
	enum where w;
	int r;

	*side = 0;
	if (abs_path(dirfd, path, abs, PATH_MAX) != 0)
		return refuse(path, "its absolute path cannot be made");
	r = resolve(abs, PATH_MAX, follow, &w, &st);
	if (r < 0)
		return errno == ENOENT ? -1 : refuse(path, "its symbolic links cannot be followed");
	if (r == RES_NOTFILE)
		return 0;
	if (r == RES_DELETED) {
		/* an unnamed file (O_TMPFILE, memfd, unlinked) is nobody's name */
		if (excluded(abs) || (ddp_sys_fstatat(dirfd, path, &now, 0) == 0 && now.st_nlink == 0))
			return 0;
		errno = EACCES;
		return refuse(path, "it reopens a file whose name was removed");
	}
	if (excluded(abs)) {
		/* a data file in a shared folder; kernel files are not data */
		if ((w != W_REAL || S_ISREG(st.st_mode)) && !ddp_path_under(abs, "/proc") &&
		    !ddp_path_under(abs, "/sys"))
			say_unprotected(abs);
		return 0;
	}
	if (side_path(abs, buf, len) != 0)
		return refuse(path, "its side path cannot be made");
	switch (w) {
	case W_SIDE: *side = 1; return 0;
	case W_REAL:
		if (!S_ISREG(st.st_mode))
			return 0; /* FIFO, socket, device, folder, a link not followed */
		if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
			return 0; /* it exists: the open fails with EEXIST, as on rank 0 */
		if (mirror_dirs(abs) != 0)
			return refuse(path, "the side folder cannot be created");
		if (flags & O_TRUNC) {
			int fd = ddp_libc_.open64(buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
						  st.st_mode & 07777);
			if (fd < 0 && errno != EEXIST)
				return refuse(path, "its side copy cannot be created");
			if (fd >= 0)
				ddp_libc_.close(fd);
		} else if (copy_file(abs, buf, st.st_mode, 1) != 0 && errno != EEXIST) {
			return refuse(path, "the file cannot be copied to the side folder");
		}
		*side = 1;
		return 0;
	case W_WHITEOUT:
		if (!(flags & O_CREAT))
			return errno = ENOENT, -1;
		if (remove_tree(buf) != 0)
			return refuse(path, "its deleted entry cannot be replaced");
		/* fall through */
	default: /* W_MISSING */
		if (!(flags & O_CREAT))
			return errno = ENOENT, -1;
		if (mirror_for(abs, path) != 0)
			return -1;
		*side = 1;
		return 0;
	}
}

/* The work of ddp_write_map_open; may leave errno changed. */
static const char *map_open(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	char abs[PATH_MAX];
	int writing = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
	int side;

	if (!path || !*path || (flags & O_PATH))
		return path;
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		/* an unnamed file in a folder: made in the rank's copy of it */
		struct stat st;
		enum where w;
		int r;

		if (abs_path(dirfd, path, abs, sizeof abs) != 0) {
			refuse(path, "its absolute path cannot be made");
			return NULL;
		}
		r = resolve(abs, sizeof abs, 1, &w, &st);
		if (r != RES_FILE || excluded(abs))
			return path;
		if (w == W_MISSING || w == W_WHITEOUT)
			return missing_path(buf, len); /* ENOENT, as without ddp */
		if (w == W_REAL) {
			/* mirror the folder itself: mirror_dirs makes the folders
			 * holding a name, so give it one inside */
			char inside[PATH_MAX];
			if (snprintf(inside, sizeof inside, "%s/x", abs) >= (int)sizeof inside ||
			    mirror_dirs(inside) != 0) {
				refuse(path, "the side folder cannot be created");
				return NULL;
			}
		}
		if (side_path(abs, buf, len) != 0) {
			refuse(path, "its side path cannot be made");
			return NULL;
		}
		log_once("makes an O_TMPFILE file of", path, buf);
		return buf;
	}
	if (!writing || (flags & O_DIRECTORY)) {
		const char *p = lookup(dirfd, path, !(flags & O_NOFOLLOW), buf, len);
		return p ? p : path;
	}
	if (map_write(dirfd, path, !(flags & O_NOFOLLOW), flags, abs, buf, len, &side) != 0)
		return NULL;
	if (!side)
		return path;
	log_once("writes", path, buf);
	return buf;
}

const char *ddp_write_map_open(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	/* The open that follows sets errno if it fails; a successful one must
	 * leave it as the program had it.  A refusal keeps its own errno. */
	int saved = errno;
	const char *p = map_open(dirfd, path, flags, buf, len);

	if (p)
		errno = saved;
	return p;
}

/* ---- name operations ------------------------------------------------ */

/* One name of a name operation: canonical abs, the rank's entry side, what
 * is there.  *shared: the name is in a shared folder (the real call acts).
 * -1 with errno. */
struct name {
	char abs[PATH_MAX];
	char side[PATH_MAX];
	struct stat st;
	enum where w;
	int shared;
};

static int name_get(int dirfd, const char *path, int follow, struct name *n)
{
	int r;

	n->shared = 0;
	n->w = W_MISSING; /* resolve() sets it on every path that returns >= 0 */
	if (abs_path(dirfd, path, n->abs, sizeof n->abs) != 0)
		return refuse(path, "its absolute path cannot be made");
	r = resolve(n->abs, sizeof n->abs, follow, &n->w, &n->st);
	if (r < 0)
		return -1;
	if (r != RES_FILE || excluded(n->abs)) {
		n->shared = 1;
		return 0;
	}
	if (side_path(n->abs, n->side, sizeof n->side) != 0)
		return refuse(path, "its side path cannot be made");
	return 0;
}

/* Gives the rank's entry new->side the content of a real source (a copy of
 * a file, a new link with the same target); folders are EXDEV, as renaming
 * a lower folder on overlayfs. */
static int copy_up_to(const struct name *src, const char *dst)
{
	if (S_ISREG(src->st.st_mode))
		return copy_file(src->abs, dst, src->st.st_mode, 1);
	if (S_ISLNK(src->st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = ddp_libc_.readlink(src->abs, t, sizeof t - 1);
		if (n < 0)
			return -1;
		t[n] = '\0';
		return ddp_libc_.symlink(t, dst);
	}
	return errno = EXDEV, -1;
}

int ddp_write_rename(int odir, const char *old, int ndir, const char *new, unsigned flags)
{
	struct name *o = calloc(1, sizeof *o), *n = calloc(1, sizeof *n);
	int saved = errno, rc = -1;

	if (!o || !n) {
		errno = ENOMEM;
		goto out_free;
	}
	if (name_get(odir, old, 0, o) != 0 || name_get(ndir, new, 0, n) != 0)
		goto out_free;
	if (o->shared && n->shared) {
		errno = saved;
		rc = ddp_libc_.renameat2 ? ddp_libc_.renameat2(odir, old, ndir, new, flags)
					 : ddp_libc_.renameat(odir, old, ndir, new);
		goto out_free;
	}
	if (o->shared || n->shared || (flags & ~1u /* RENAME_NOREPLACE */)) {
		errno = EXDEV; /* across the overlay's edge, as across file systems */
		goto out_free;
	}
	if (o->w == W_MISSING || o->w == W_WHITEOUT) {
		errno = ENOENT;
		goto out_free;
	}
	if ((flags & 1u) && (n->w == W_SIDE || n->w == W_REAL)) {
		errno = EEXIST;
		goto out_free;
	}
	if (n->w == W_REAL && S_ISDIR(n->st.st_mode) && dir_has_entries(n->abs, n->side)) {
		errno = ENOTEMPTY;
		goto out_free;
	}
	if (mirror_for(n->abs, new) != 0)
		goto out_free;
	if (n->w == W_WHITEOUT || n->w == W_REAL) {
		/* the new name's deleted entry, or a mirror of the real folder the
		 * rank made on the way: cleared, the source takes its place */
		if (remove_tree(n->side) != 0) {
			refuse(new, "its entry cannot be replaced");
			goto out_free;
		}
	}
	log_once("renames", new, n->side);
	if (o->w == W_SIDE) {
		if (ddp_libc_.renameat(AT_FDCWD, o->side, AT_FDCWD, n->side) != 0)
			goto out_free;
	} else if (copy_up_to(o, n->side) != 0) {
		goto out_free;
	}
	/* the real source, if any, is deleted for this rank */
	if (exists(o->abs, NULL) && make_whiteout(o->abs, o->side) != 0) {
		refuse(old, "its deleted entry cannot be made");
		goto out_free;
	}
	errno = saved;
	rc = 0;
out_free:
	free(o);
	free(n);
	return rc;
}

int ddp_write_unlink(int dirfd, const char *path, int flags, int kind)
{
	struct name *n = calloc(1, sizeof *n);
	int saved = errno, rc = -1, dir;

	if (!n)
		return errno = ENOMEM, -1;
	if (name_get(dirfd, path, 0, n) != 0)
		goto out_free;
	if (n->shared) {
		errno = saved;
		rc = kind == DDP_WRITE_UNLINK_REMOVE ? ddp_libc_.remove(path)
						     : ddp_libc_.unlinkat(dirfd, path, flags);
		goto out_free;
	}
	if (n->w == W_MISSING || n->w == W_WHITEOUT) {
		errno = ENOENT;
		goto out_free;
	}
	dir = S_ISDIR(n->st.st_mode);
	if (kind == DDP_WRITE_UNLINK_REMOVE)
		flags = dir ? AT_REMOVEDIR : 0;
	if (dir && !(flags & AT_REMOVEDIR)) {
		errno = EISDIR;
		goto out_free;
	}
	if (!dir && (flags & AT_REMOVEDIR)) {
		errno = ENOTDIR;
		goto out_free;
	}
	if (dir && dir_has_entries(n->abs, n->side)) {
		errno = ENOTEMPTY;
		goto out_free;
	}
	if (exists(n->abs, NULL)) {
		if (make_whiteout(n->abs, n->side) != 0) {
			refuse(path, "its deleted entry cannot be made");
			goto out_free;
		}
	} else if (remove_tree(n->side) != 0) {
		goto out_free;
	}
	log_once("deletes", path, n->side);
	errno = saved;
	rc = 0;
out_free:
	free(n);
	return rc;
}

/* A name mkdir or symlink makes on the rank's overlay: EEXIST when the rank
 * sees one there, else its folders made and a whiteout of it removed;
 * -1 with errno when the name cannot be made. */
static int new_name_ready(const struct name *n, const char *path)
{
	if (n->w == W_SIDE || n->w == W_REAL)
		return errno = EEXIST, -1;
	if (mirror_for(n->abs, path) != 0)
		return -1;
	if (n->w == W_WHITEOUT && remove_tree(n->side) != 0)
		return -1;
	return 0;
}

int ddp_write_mkdir(int dirfd, const char *path, mode_t mode)
{
	struct name *n = calloc(1, sizeof *n);
	int saved = errno, rc = -1;

	if (!n)
		return errno = ENOMEM, -1;
	if (name_get(dirfd, path, 0, n) != 0)
		goto out_free;
	if (n->shared) {
		errno = saved;
		rc = ddp_libc_.mkdirat(dirfd, path, mode);
		goto out_free;
	}
	if (new_name_ready(n, path) != 0)
		goto out_free;
	if (ddp_libc_.mkdir(n->side, mode) != 0)
		goto out_free;
	log_once("makes folder", path, n->side);
	errno = saved;
	rc = 0;
out_free:
	free(n);
	return rc;
}

int ddp_write_symlink(const char *target, int dirfd, const char *path)
{
	struct name *n = calloc(1, sizeof *n);
	int saved = errno, rc = -1;

	if (!n)
		return errno = ENOMEM, -1;
	if (name_get(dirfd, path, 0, n) != 0)
		goto out_free;
	if (n->shared) {
		errno = saved;
		rc = ddp_libc_.symlinkat(target, dirfd, path);
		goto out_free;
	}
	if (new_name_ready(n, path) != 0)
		goto out_free;
	if (ddp_libc_.symlink(target, n->side) != 0)
		goto out_free;
	log_once("makes link", path, n->side);
	errno = saved;
	rc = 0;
out_free:
	free(n);
	return rc;
}

int ddp_write_chdir(const char *path)
{
	struct name *n = calloc(1, sizeof *n);
	struct stat st;
	int saved = errno, rc = -1;

	if (!n)
		return errno = ENOMEM, -1;
	if (name_get(AT_FDCWD, path, 1, n) != 0)
		goto out_free;
	if (n->shared) {
		errno = saved;
		rc = ddp_libc_.chdir(path);
		goto out_free;
	}
	if (n->w == W_MISSING || n->w == W_WHITEOUT) {
		errno = ENOENT;
		goto out_free;
	}
	if (!S_ISDIR(n->st.st_mode)) {
		errno = ENOTDIR;
		goto out_free;
	}
	errno = saved;
	if (n->w == W_SIDE && !(ddp_sys_fstatat(AT_FDCWD, n->abs, &st, 0) == 0 && S_ISDIR(st.st_mode)))
		rc = ddp_libc_.chdir(n->side); /* a folder only the rank has */
	else
		rc = ddp_libc_.chdir(n->abs);
out_free:
	free(n);
	return rc;
}

/* link/linkat: the new name is the rank's; the old one is the rank's entry,
 * an unnamed file (O_TMPFILE: linked as it is), or a real file, which is
 * copied: a rank's name must never be a second name of rank 0's file. */
int ddp_write_link(int odir, const char *old, int ndir, const char *new, int flags)
{
	struct name *o = calloc(1, sizeof *o), *n = calloc(1, sizeof *n);
	int saved = errno, rc = -1;

	if (!o || !n) {
		errno = ENOMEM;
		goto out_free;
	}
	if (name_get(ndir, new, 0, n) != 0)
		goto out_free;
	if (!*old && (flags & AT_EMPTY_PATH)) {
		/* the file open as odir */
		struct stat fst;
		char link[64];
		ssize_t k;
		if (ddp_sys_fstat(odir, &fst) != 0)
			goto out_free;
		if (fst.st_nlink == 0) {
			o->shared = 1; /* unnamed: nobody's name, linked as it is */
		} else {
			snprintf(link, sizeof link, "/proc/self/fd/%d", odir);
			k = ddp_libc_.readlink(link, o->abs, sizeof o->abs - 1);
			if (k <= 0 || o->abs[0] != '/') {
				errno = EBADF;
				goto out_free;
			}
			o->abs[k] = '\0';
			char tmp[PATH_MAX];
			memcpy(tmp, o->abs, (size_t)k + 1);
			if (name_get(AT_FDCWD, tmp, 0, o) != 0)
				goto out_free;
		}
	} else {
		char tmp[PATH_MAX];
		int r;
		if (abs_path(odir, old, tmp, sizeof tmp) != 0) {
			refuse(old, "its absolute path cannot be made");
			goto out_free;
		}
		if (flags & AT_SYMLINK_FOLLOW) {
			enum where w;
			struct stat st;
			char t2[PATH_MAX];
			memcpy(t2, tmp, sizeof t2);
			r = resolve(t2, sizeof t2, 1, &w, &st);
			if (r < 0)
				goto out_free;
			if (r == RES_DELETED) {
				struct stat now;
				if (ddp_sys_fstatat(odir, old, &now, 0) != 0)
					goto out_free;
				if (now.st_nlink > 0 && !excluded(t2)) {
					errno = EACCES;
					refuse(old, "it links a file whose name was removed");
					goto out_free;
				}
				o->shared = 1;
			} else if (r == RES_NOTFILE) {
				o->shared = 1;
			}
		}
		if (!o->shared && name_get(AT_FDCWD, tmp, !!(flags & AT_SYMLINK_FOLLOW), o) != 0)
			goto out_free;
	}
	if (n->shared && o->shared) {
		errno = saved;
		rc = ddp_libc_.linkat(odir, old, ndir, new, flags);
		goto out_free;
	}
	if (n->shared) {
		errno = EXDEV;
		goto out_free;
	}
	if (n->w == W_SIDE || n->w == W_REAL) {
		errno = EEXIST;
		goto out_free;
	}
	if (!o->shared && (o->w == W_MISSING || o->w == W_WHITEOUT)) {
		errno = ENOENT;
		goto out_free;
	}
	if (mirror_for(n->abs, new) != 0)
		goto out_free;
	if (n->w == W_WHITEOUT && remove_tree(n->side) != 0)
		goto out_free;
	log_once("links", new, n->side);
	if (o->shared) {
		rc = ddp_libc_.linkat(odir, old, AT_FDCWD, n->side, flags);
	} else if (o->w == W_SIDE) {
		rc = ddp_libc_.linkat(AT_FDCWD, o->side, AT_FDCWD, n->side, 0);
	} else if (S_ISREG(o->st.st_mode)) {
		rc = copy_file(o->abs, n->side, o->st.st_mode, 1);
	} else {
		errno = EPERM;
		goto out_free;
	}
	if (rc == 0)
		errno = saved;
out_free:
	free(o);
	free(n);
	return rc;
}

/* truncate(path): the rank's copy (copied up first). */
int ddp_write_truncate(const char *path, off_t len)
{
	char buf[PATH_MAX];
	const char *p = ddp_write_map_open(AT_FDCWD, path, O_WRONLY, buf, sizeof buf);

	if (!p)
		return -1;
	return ddp_libc_.truncate64(p, len);
}

/* mkstemp and its variants.  glibc creates the file through internal calls
 * no preload sees, so for a template in a redirected folder the name is
 * made here and the file created through the open hook: it lands in the
 * rank's overlay (the template keeps the name the program asked for). */
int ddp_write_mkostemps(char *tmpl, int suffixlen, int flags,
			int (*open_fn)(int dirfd, const char *path, int flags, mode_t mode))
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char abs[PATH_MAX];
	size_t n;
	char *x;

	if (!tmpl || abs_path(AT_FDCWD, tmpl, abs, sizeof abs) != 0 || excluded(abs))
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
		int fd = open_fn(AT_FDCWD, tmpl, (flags & ~O_ACCMODE) | O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return errno = EEXIST, -1;
}
