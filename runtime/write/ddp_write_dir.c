/* SPDX-License-Identifier: MIT
 *
 * ddp_write_dir.c - the private folders, made and removed without following
 * a symbolic link (ddp_write_dir.h).
 */
#include <dirent.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "ddp_port.h"
#include "ddp_write_dir.h"

/* mkdir -p of the folders above path (the user's own path: links there are
 * the user's and are followed). */
static void make_parents(const char *path)
{
	char d[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof d)
		return;
	memcpy(d, path, n + 1);
	for (char *s = d + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		(void)ddp_libc_.mkdir(d, 0700);
		*s = '/';
	}
}

/* Opens name under dirfd as a folder owned by this user, never through a
 * link; mode, when not 0, is the exact mode it must have.  -1 with errno
 * and why filled when it is foreign. */
static int open_own(int dirfd, const char *name, const char *shown, mode_t mode, char *why, size_t len)
{
	struct stat st;
	int fd = ddp_libc_.openat64(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;
		if (ddp_sys_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			snprintf(why, len, "%s is a symbolic link (a private folder is never reached through one)",
				 shown);
		else
			snprintf(why, len, "%s cannot be opened as a folder (%s)", shown, strerror(e));
		return errno = e == ENOENT ? ENOENT : (e == ELOOP ? EACCES : e), -1;
	}
	if (ddp_sys_fstat(fd, &st) != 0) {
		int e = errno;
		snprintf(why, len, "%s cannot be checked (%s)", shown, strerror(e));
		ddp_libc_.close(fd);
		return errno = e, -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, len, "%s belongs to uid %u, not to this user (uid %u)", shown, (unsigned)st.st_uid,
			 (unsigned)geteuid());
		ddp_libc_.close(fd);
		return errno = EACCES, -1;
	}
	if (mode && (st.st_mode & 07777) != mode) {
		snprintf(why, len, "%s has mode %04o, not %04o (others could place files in it)", shown,
			 (unsigned)(st.st_mode & 07777), (unsigned)mode);
		ddp_libc_.close(fd);
		return errno = EACCES, -1;
	}
	return fd;
}

/* Process start time (clock ticks since boot) of pid, 0 when gone. */
unsigned long long ddp_write_start_time(pid_t pid)
{
	char p[64], buf[1024];
	unsigned long long v = 0;
	int fd;
	ssize_t n;
	char *s;

	snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
	fd = ddp_libc_.open64(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = ddp_libc_.read(fd, buf, sizeof buf - 1);
	ddp_libc_.close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	s = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!s)
		return 0;
	/* fields 3.. follow ") "; start time is field 22 */
	s += 2;
	for (int f = 3; f < 22 && s; f++) {
		s = strchr(s, ' ');
		if (s)
			s++;
	}
	if (s)
		v = strtoull(s, NULL, 10);
	return v;
}

/* This host's name as it goes into a run folder's name: at most 32 of
 * [A-Za-z0-9._-], others as '_'. */
const char *ddp_write_host_tag(void)
{
	static char tag[33];

	if (!tag[0]) {
		char h[256] = "";
		size_t i;
		(void)gethostname(h, sizeof h - 1);
		for (i = 0; i < sizeof tag - 1 && h[i]; i++) {
			char c = h[i];
			int okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
			tag[i] = okc ? c : '_';
		}
		if (i == 0)
			tag[i++] = '_';
		tag[i] = '\0';
	}
	return tag;
}

int ddp_write_dir_open(const char *base, int rank, char *why, size_t len)
{
	char name[32];

	snprintf(name, sizeof name, "rank%d", rank);
	return ddp_write_dir_open_sub(base, name, why, len);
}

int ddp_write_dir_open_sub(const char *base, const char *name, char *why, size_t len)
{
	char shown[PATH_MAX + 40];
	int bfd, fd;

	snprintf(why, len, "unknown fault");
	make_parents(base);
	if (ddp_libc_.mkdir(base, 0700) != 0 && errno != EEXIST) {
		int e = errno;
		snprintf(why, len, "%s cannot be made (%s)", base, strerror(e));
		return errno = e, -1;
	}
	bfd = open_own(AT_FDCWD, base, base, 0, why, len);
	if (bfd < 0)
		return -1;
	snprintf(shown, sizeof shown, "%s/%s", strcmp(base, "/") ? base : "", name);
	int made = ddp_libc_.mkdirat(bfd, name, 0700) == 0;
	if (!made && errno != EEXIST) {
		int e = errno;
		snprintf(why, len, "%s cannot be made (%s)", shown, strerror(e));
		ddp_libc_.close(bfd);
		return errno = e, -1;
	}
	fd = open_own(bfd, name, shown, made ? 0 : 0700, why, len);
	if (fd >= 0 && made && fchmod(fd, 0700) != 0) { /* a umask cannot widen it; be exact */
		int e = errno;
		snprintf(why, len, "%s cannot be given mode 0700 (%s)", shown, strerror(e));
		ddp_libc_.close(fd);
		fd = -1;
		errno = e;
	}
	int e = errno;
	ddp_libc_.close(bfd);
	errno = e;
	return fd;
}

int ddp_write_remove_tree_at(int at, const char *name)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	int fd, rc = 0, err = 0;

	if (ddp_sys_fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return ddp_libc_.unlinkat(at, name, 0) == 0 || errno == ENOENT ? 0 : -1;
	fd = ddp_libc_.openat64(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && st.st_uid == geteuid()) {
		/* overlayfs leaves its work folder mode 0: our own, opened again */
		(void)fchmodat(at, name, 0700, 0);
		fd = ddp_libc_.openat64(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -1; /* swapped for a link meanwhile: never followed */
	d = fdopendir(fd);
	if (!d) {
		err = errno;
		ddp_libc_.close(fd);
		return errno = err, -1;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (ddp_write_remove_tree_at(dirfd(d), e->d_name) != 0 && !err) {
			err = errno;
			rc = -1;
		}
	}
	closedir(d);
	if (ddp_libc_.unlinkat(at, name, AT_REMOVEDIR) != 0 && errno != ENOENT && !err) {
		err = errno;
		rc = -1;
	}
	errno = err;
	return rc;
}

int ddp_write_dir_full(const char *path, char *why, size_t len)
{
	struct statvfs v;
	unsigned long long total, avail, floor;

	if (statvfs(path, &v) != 0 || v.f_blocks == 0)
		return 0;
	total = (unsigned long long)v.f_blocks * v.f_frsize;
	avail = (unsigned long long)v.f_bavail * v.f_frsize;
	floor = total / 100 > 65536 ? total / 100 : 65536;
	if (avail >= floor)
		return 0;
	snprintf(why, len, "%s is on a full file system (%llu KiB of %llu KiB free)", path, avail >> 10, total >> 10);
	return 1;
}
