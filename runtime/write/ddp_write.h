/* SPDX-License-Identifier: MIT
 *
 * ddp_write.h - write safety policy: on ranks other than 0 the program's
 * writes go to a private overlay of the file system, the rank's run folder
 * $DDP_WRITE_DIR/rank<k>/run-<pid>-<start>/<absolute path>
 * (docs/write-safety.md).  interpose/hook_write.c wraps the libc entry
 * points; this module decides where each call goes and makes it, through
 * the port (ddp_libc_) only.
 *
 * Contract: ddp_write_setup runs once, from libddp's files stage, before any
 * other call; the state is read-only afterwards (any thread).  Every other
 * function may be called only when ddp_write_active() is true; it keeps
 * errno as the program had it on success and never writes in place what it
 * cannot redirect (fail closed: -1/NULL with errno and one `libddp:` line).
 */
#ifndef DDP_WRITE_H
#define DDP_WRITE_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the rank and the settings; on a redirecting rank makes (or joins,
 * after an exec) its run folder, removes what earlier runs left, and
 * registers the removal of its own folder at exit. */
void ddp_write_setup(void);

/* Whether an open with flags of path (relative to dirfd) writes one of the
 * program's output files: not a read, not under /dev, /proc, /sys, /run,
 * the temporary folders (unless inside the working folder), a dot-folder
 * (caches, the side folders) or DDP_WRITE_DIR.  abs (len bytes) gets the absolute path.  Any rank, any
 * time after ddp_write_setup; keeps errno. */
int ddp_write_output_path(int dirfd, const char *path, int flags, char *abs, size_t len);

/* Whether this rank redirects (rank != 0 under a launcher). */
int ddp_write_active(void);

/* The path an open with flags should use: path itself, or buf holding the
 * rank's copy (its folders made; copied up unless the open truncates).
 * NULL with errno (one line logged) when a write cannot be redirected. */
const char *ddp_write_map_open(int dirfd, const char *path, int flags, char *buf, size_t len);

/* The path a lookup (stat, access, a read-only open) should use: the rank's
 * copy when it has one, else path.  follow: a symbolic link as the last
 * component is followed. */
const char *ddp_write_map_lookup(int dirfd, const char *path, int follow, char *buf, size_t len);

/* Name operations, made on the rank's overlay (the real call included). */
int ddp_write_rename(int odir, const char *old, int ndir, const char *new, unsigned flags);
enum {
	DDP_WRITE_UNLINK_AT,
	DDP_WRITE_UNLINK_REMOVE
};
int ddp_write_unlink(int dirfd, const char *path, int flags, int kind);
int ddp_write_link(int odir, const char *old, int ndir, const char *new, int flags);
int ddp_write_truncate(const char *path, off_t len);
int ddp_write_mkdir(int dirfd, const char *path, mode_t mode);
int ddp_write_symlink(const char *target, int dirfd, const char *path);
/* chdir: the real folder when it exists, else the rank's own (then the
 * working folder is inside the run folder, read as its overlay path). */
int ddp_write_chdir(const char *path);

/* mkostemps for a template: in a redirected folder the name is made here
 * and the file created with open_fn (the open hook), else the real one. */
int ddp_write_mkostemps(char *tmpl, int suffixlen, int flags,
			int (*open_fn)(int dirfd, const char *path, int flags, mode_t mode));

/* The rank's run folder ("" when none). */
const char *ddp_write_root(void);

#endif /* DDP_WRITE_H */
