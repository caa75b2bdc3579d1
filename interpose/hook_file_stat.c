/* SPDX-License-Identifier: MIT
 *
 * hook_file_stat.c - the stat family of libddp.so's file hooks: a sharded
 * file's size is the rank's virtual size (docs/sharding.md), and on ranks
 * other than 0 a path this rank wrote (redirected, docs/write-safety.md)
 * is looked up in the rank's side folder.
 *
 * Hooked: fstat, fstat64, __fxstat, __fxstat64 (the fd's view); stat,
 * stat64, lstat, lstat64, __xstat, __xstat64, __lxstat, __lxstat64, fstatat,
 * fstatat64, __fxstatat, __fxstatat64, statx (the file's device and inode
 * are compared with the sharded files; no syscall is added).  The __*xstat*
 * names serve programs built against glibc before 2.33.
 *
 * Contract: any thread, any time; passes through before init.  Relies on
 * struct stat and struct stat64 having one layout (x86_64, aarch64).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if __has_include("ddp_export.h")
#include "ddp_export.h"
#endif
#ifndef DDP_EXPORT
#define DDP_EXPORT __attribute__((visibility("default")))
#endif
#include "hook_file.h"

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "struct stat must be struct stat64");

/* Old-glibc entry points, not declared by current headers. */
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

static int real_fstat(int fd, struct stat64 *st)
{
	hook_libc_resolve();
	return ddp_sys_fstat(fd, (struct stat *)st);
}

int hook_real_fstatat(int dirfd, const char *path, struct stat64 *st, int flags)
{
	hook_libc_resolve();
	return ddp_sys_fstatat(dirfd, path, (struct stat *)st, flags);
}

static int do_fstat(int fd, struct stat64 *st)
{
	int r = real_fstat(fd, st);

	if (r == 0)
		hook_shard_patch_stat(fd, st);
	return r;
}

static int do_fstatat(int dirfd, const char *path, struct stat64 *st, int flags)
{
	char buf[PATH_MAX];
	const char *p;
	int r;

	HOOK_LAUNDER(path);
	p = path;
	if (path && !*path && (flags & AT_EMPTY_PATH)) {
		r = hook_real_fstatat(dirfd, path, st, flags);
		if (r == 0)
			hook_shard_patch_stat(dirfd == AT_FDCWD ? -1 : dirfd, st);
		return r;
	}
	hook_file_init();
	if (path && hook_file_ready() && hook_write_active()) {
		p = hook_write_map_lookup_at(dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), buf, sizeof buf);
		if (p != path)
			dirfd = AT_FDCWD;
	}
	r = hook_real_fstatat(dirfd, p, st, flags);
	if (r == 0)
		hook_shard_patch_stat(-1, st);
	return r;
}

DDP_EXPORT int statx(int dirfd, const char *restrict path, int flags, unsigned mask, struct statx *restrict stx)
{
	char buf[PATH_MAX];
	const char *p;
	int fd_based, r;

	HOOK_LAUNDER(path);
	p = path;
	fd_based = path && !*path && (flags & AT_EMPTY_PATH);

	if (!fd_based) {
		hook_file_init();
		if (path && hook_file_ready() && hook_write_active()) {
			p = hook_write_map_lookup_at(dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), buf,
						     sizeof buf);
			if (p != path)
				dirfd = AT_FDCWD;
		}
	}
	hook_libc_resolve();
	if (!ddp_libc_.statx) {
		errno = ENOSYS;
		return -1;
	}
	r = ddp_libc_.statx(dirfd, p, flags, mask, stx);
	if (r == 0)
		hook_shard_patch_statx(fd_based && dirfd != AT_FDCWD ? dirfd : -1, stx);
	return r;
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_STAT
#include "hook_libc_gen.h"
