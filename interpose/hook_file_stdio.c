/* SPDX-License-Identifier: MIT
 *
 * hook_file_stdio.c - stdio entry points of libddp.so's file hooks.
 *
 * glibc's stdio reads through internal calls that no preload can see, so a
 * FILE for a sharded file cannot be an ordinary FILE over the real fd: fopen
 * and fdopen of a sharded file return a FILE made by fopencookie whose read,
 * seek and close go to the fd's view (hook_file.c).  fread, fgets, fgetc,
 * fseek, ftell, rewind, feof... then work unchanged.  fileno() of such a FILE
 * is the real fd, whose view shares the FILE's position: libstdc++'s
 * std::ifstream opens with fopen and then reads, seeks and stats through
 * fileno() (docs/sharding.md).  On ranks other than 0, fopen/freopen for
 * writing use the rank's side folder (hook_write.c).
 *
 * Contract: any thread; allocation only inside fopen (glibc's own).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ddp_log.h"
#if __has_include("ddp_export.h")
#include "ddp_export.h"
#endif
#ifndef DDP_EXPORT
#define DDP_EXPORT __attribute__((visibility("default")))
#endif
#include "hook_file.h"

int hook_file_mode_flags(const char *mode)
{
	int flags, plus = strchr(mode, '+') != NULL;

	switch (mode[0]) {
	case 'r': flags = plus ? O_RDWR : O_RDONLY; break;
	case 'w': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC; break;
	case 'a': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND; break;
	default: return O_RDONLY;
	}
	if (strchr(mode, 'e'))
		flags |= O_CLOEXEC;
	if (strchr(mode, 'x'))
		flags |= O_EXCL;
	return flags;
}

static ssize_t cookie_read(void *c, char *buf, size_t n)
{
	return hook_shard_read((int)(intptr_t)c, buf, n);
}

static int cookie_seek(void *c, off64_t *off, int whence)
{
	off64_t r = hook_shard_lseek((int)(intptr_t)c, *off, whence);

	if (r < 0)
		return -1;
	*off = r;
	return 0;
}

static int cookie_close(void *c)
{
	return hook_shard_close((int)(intptr_t)c);
}

static const cookie_io_functions_t shard_io = {
	.read = cookie_read,
	.write = NULL,
	.seek = cookie_seek,
	.close = cookie_close,
};

/* A FILE over fd's view; closes fd when that fails. */
static FILE *cookie_file(int fd)
{
	FILE *f = fopencookie((void *)(intptr_t)fd, "r", shard_io);

	if (!f) {
		int e = errno;
		hook_shard_close(fd);
		errno = e;
		return NULL;
	}
#ifdef __GLIBC__
	/* glibc marks a cookie FILE with _fileno -2 ("no real file") and
	 * fileno() then answers -1; but this FILE has a real fd, whose view
	 * reads at the same position as the cookie.  libstdc++'s filebuf reads
	 * read(fileno(f)), seeks lseek64(fileno(f)) and stats fstat64(fileno(f)):
	 * with -1 every std::ifstream of a sharded file failed.  glibc's cookie
	 * functions never use _fileno (they go through the cookie), and a FILE
	 * with _fileno >= 0 is closed the same way (through cookie_close). */
	f->_fileno = fd;
#endif
	return f;
}

static FILE *do_fopen(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	const char *p;
	int flags, fd;
	FILE *f;

	HOOK_LAUNDER(path);
	HOOK_LAUNDER(mode);
	p = path;
	hook_file_init();
	hook_libc_resolve();
	if (!path || !mode || !hook_file_ready())
		return ddp_libc_.fopen64(path, mode);
	flags = hook_file_mode_flags(mode);
	hook_write_output_gate(AT_FDCWD, path, flags);
	if (hook_write_active()) {
		p = hook_write_map_open(AT_FDCWD, path, flags, buf, sizeof buf);
		if (!p)
			return NULL;
	}
	if ((flags & O_ACCMODE) != O_RDONLY || !hook_shard_candidate(path))
		return ddp_libc_.fopen64(p, mode);
	fd = ddp_libc_.open64(p, O_RDONLY | (flags & O_CLOEXEC));
	fd = hook_shard_after_open(fd, path, O_RDONLY);
	if (fd < 0)
		return NULL;
	if (hook_shard_get(fd))
		return cookie_file(fd);
	f = ddp_libc_.fdopen(fd, mode);
	if (!f) {
		int e = errno;
		ddp_libc_.close(fd);
		errno = e;
	}
	return f;
}

DDP_EXPORT FILE *fdopen(int fd, const char *mode)
{
	HOOK_LAUNDER(mode);
	hook_libc_resolve();
	if (mode && hook_shard_get(fd)) {
		if ((hook_file_mode_flags(mode) & O_ACCMODE) != O_RDONLY) {
			errno = EINVAL; /* the fd is read-only */
			return NULL;
		}
		return cookie_file(fd);
	}
	return ddp_libc_.fdopen(fd, mode);
}

/* freopen: write redirection only (a sharded path reopened this way reads
 * the whole file; docs/sharding.md). */
static FILE *do_freopen(const char *path, const char *mode, FILE *stream)
{
	char buf[PATH_MAX];
	const char *p;

	HOOK_LAUNDER(path);
	HOOK_LAUNDER(mode);
	p = path;
	hook_file_init();
	hook_libc_resolve();
	if (path && mode && hook_file_ready())
		hook_write_output_gate(AT_FDCWD, path, hook_file_mode_flags(mode));
	if (path && mode && hook_file_ready() && hook_write_active()) {
		p = hook_write_map_open(AT_FDCWD, path, hook_file_mode_flags(mode), buf, sizeof buf);
		if (!p) {
			/* as a failed freopen does: the stream is closed */
			int e = errno;
			if (stream)
				fclose(stream);
			errno = e;
			return NULL;
		}
	}
	return ddp_libc_.freopen64(p, mode, stream);
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_STDIO
#include "hook_libc_gen.h"
