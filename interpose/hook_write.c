/* SPDX-License-Identifier: MIT
 *
 * hook_write.c - the libc entry points of write safety: open-time mapping
 * for the open, stat and stdio hooks, and the name operations (rename,
 * unlink, rmdir, mkdir, chdir, symlink, readlink, link, truncate, access,
 * mkstemp).
 * The policy, where each call goes on a rank other than 0, is
 * runtime/write/ddp_write.c (docs/write-safety.md): this file wraps, the
 * runtime decides.
 *
 * Contract: any thread, any time.  Each hook initialises the files stage
 * first; when this rank does not redirect, or the calling thread is inside
 * ddp's own work (hook_file_bypass), the call goes to the real libc as it
 * is.  Nothing here decides a path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ddp_sync.h"
#include "ddp_write.h"
#if __has_include("ddp_export.h")
#include "ddp_export.h"
#endif
#ifndef DDP_EXPORT
#define DDP_EXPORT __attribute__((visibility("default")))
#endif
#include "hook_file.h"

void hook_write_setup(void)
{
	ddp_write_setup();
}

int hook_write_active(void)
{
	/* The library's own files (traces, summaries) are never redirected. */
	return ddp_write_active() && !hook_file_bypass();
}

const char *hook_write_map_lookup_at(int dirfd, const char *path, int follow, char *buf, size_t len)
{
	if (!hook_write_active())
		return path;
	return ddp_write_map_lookup(dirfd, path, follow, buf, len);
}

const char *hook_write_map_lookup(int dirfd, const char *path, char *buf, size_t len)
{
	return hook_write_map_lookup_at(dirfd, path, 1, buf, len);
}

void hook_write_output_gate(int dirfd, const char *path, int flags)
{
	char abs[PATH_MAX];

	if (!ddp_sync_gate_open() || hook_file_bypass())
		return;
	if (ddp_write_output_path(dirfd, path, flags, abs, sizeof abs))
		ddp_sync_output_open(abs);
	else if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)))
		ddp_sync_file_written(path); /* a temporary folder's: the invariant's waiting compare */
}

const char *hook_write_map_open(int dirfd, const char *path, int flags, char *buf, size_t len)
{
	if (!hook_write_active())
		return path;
	return ddp_write_map_open(dirfd, path, flags, buf, len);
}

/* Whether a name operation on these paths goes through the policy. */
static int redirecting(const char *a, const char *b)
{
	hook_file_init();
	hook_libc_resolve();
	return hook_file_ready() && hook_write_active() && a && b && *b;
}

static int do_rename(int odir, const char *old, int ndir, const char *new, unsigned flags, int plain)
{
	HOOK_LAUNDER(old);
	HOOK_LAUNDER(new);
	if (redirecting(old, new) && *old)
		return ddp_write_rename(odir, old, ndir, new, flags);
	if (plain)
		return ddp_libc_.rename(old, new);
	if (flags)
		return ddp_libc_.renameat2(odir, old, ndir, new, flags);
	return ddp_libc_.renameat(odir, old, ndir, new);
}

enum {
	UNLINK_PLAIN,
	UNLINK_AT,
	UNLINK_REMOVE,
	UNLINK_RMDIR
};

static int do_unlink(int dirfd, const char *path, int flags, int kind)
{
	HOOK_LAUNDER(path);
	if (redirecting(path, path))
		return ddp_write_unlink(dirfd, path, kind == UNLINK_RMDIR ? AT_REMOVEDIR : flags,
					kind == UNLINK_REMOVE ? DDP_WRITE_UNLINK_REMOVE : DDP_WRITE_UNLINK_AT);
	switch (kind) {
	case UNLINK_PLAIN: return ddp_libc_.unlink(path);
	case UNLINK_REMOVE: return ddp_libc_.remove(path);
	case UNLINK_RMDIR: return ddp_libc_.rmdir(path);
	default: return ddp_libc_.unlinkat(dirfd, path, flags);
	}
}

static int do_link(int odir, const char *old, int ndir, const char *new, int flags, int plain)
{
	HOOK_LAUNDER(old);
	HOOK_LAUNDER(new);
	if (redirecting(old, new))
		return ddp_write_link(odir, old, ndir, new, flags);
	if (plain)
		return ddp_libc_.link(old, new);
	return ddp_libc_.linkat(odir, old, ndir, new, flags);
}

static int do_mkdir(int dirfd, const char *path, mode_t mode, int plain)
{
	HOOK_LAUNDER(path);
	if (redirecting(path, path))
		return ddp_write_mkdir(dirfd, path, mode);
	if (plain)
		return ddp_libc_.mkdir(path, mode);
	return ddp_libc_.mkdirat(dirfd, path, mode);
}

static int do_symlink(const char *target, int dirfd, const char *path, int plain)
{
	HOOK_LAUNDER(target);
	HOOK_LAUNDER(path);
	if (redirecting(target, path))
		return ddp_write_symlink(target, dirfd, path);
	if (plain)
		return ddp_libc_.symlink(target, path);
	return ddp_libc_.symlinkat(target, dirfd, path);
}

/* readlink: the rank's own link when it has one (a link it made, then
 * renamed: the "latest" idiom). */
static ssize_t do_readlink(int dirfd, const char *path, char *out, size_t len, int plain)
{
	char buf[PATH_MAX];
	const char *p;

	HOOK_LAUNDER(path);
	if (!redirecting(path, path))
		return plain ? ddp_libc_.readlink(path, out, len) : ddp_libc_.readlinkat(dirfd, path, out, len);
	p = ddp_write_map_lookup(dirfd, path, 0, buf, sizeof buf);
	if (p == path)
		return ddp_libc_.readlinkat(dirfd, path, out, len);
	return ddp_libc_.readlinkat(AT_FDCWD, p, out, len);
}

static int do_chdir(const char *path)
{
	HOOK_LAUNDER(path);
	if (redirecting(path, path))
		return ddp_write_chdir(path);
	return ddp_libc_.chdir(path);
}

static int do_truncate(const char *path, off64_t len)
{
	HOOK_LAUNDER(path);
	if (redirecting(path, path))
		return ddp_write_truncate(path, len);
	return ddp_libc_.truncate64(path, len);
}

static int do_mkostemps(char *tmpl, int suffixlen, int flags)
{
	HOOK_LAUNDER(tmpl);
	if (redirecting(tmpl, tmpl))
		return ddp_write_mkostemps(tmpl, suffixlen, flags, hook_file_open);
	return ddp_libc_.mkostemps(tmpl, suffixlen, flags);
}

DDP_EXPORT int access(const char *path, int mode)
{
	char buf[PATH_MAX];
	const char *p;

	HOOK_LAUNDER(path);
	p = path;
	if (redirecting(path, path))
		p = ddp_write_map_lookup(AT_FDCWD, path, 1, buf, sizeof buf);
	return ddp_libc_.access(p, mode);
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_WRITE
#include "hook_libc_gen.h"
