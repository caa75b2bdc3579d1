/* SPDX-License-Identifier: MIT
 *
 * hook_file.h - what the libc hooks of libddp.so (interpose/hook_file*.c,
 * hook_write.c) share: the real libc functions, lazy initialisation, the
 * per-fd table of sharded views and the write-redirection mapping.
 *
 * Contract: internal to libddp.so (hidden).  hook_file_init() is cheap once
 * done and safe from any thread; a call that re-enters it from inside the
 * initialisation (same thread) returns at once with hook_file_ready() false,
 * and the caller then passes through to libc.  The real-function pointers are
 * resolved with dlvsym(RTLD_NEXT, name, version), never dlsym (the CUDA half
 * of libddp.so overrides dlsym).
 */
#ifndef HOOK_FILE_H
#define HOOK_FILE_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "ddp_port.h"
#include "ddp_shard.h"

#ifndef HOOK_HIDDEN
#define HOOK_HIDDEN __attribute__((visibility("hidden")))
#endif

/* Makes the compiler forget that libc declared a pointer nonnull: programs
 * do pass NULL, and the real function must see it to fail properly. */
#define HOOK_LAUNDER(p) __asm__("" : "+r"(p))

/* fds at or above this are never sharded (a warning says so). */
#define HOOK_FD_MAX 65536

/* The real libc functions are the port's table (ddp_libc_, ddp_libc.def),
 * filled by hook_libc.c: resolves every row (once). */
void hook_libc_resolve(void) HOOK_HIDDEN;

/* fstatat through the real libc (fstatat64, or __fxstatat64 before 2.33). */
int hook_real_fstatat(int dirfd, const char *path, struct stat64 *st, int flags) HOOK_HIDDEN;

/* libddp's start-up, files stage (hook_init.c): real libc, logs, settings,
 * rank, DDP_SHARD, write redirection.  Every file hook calls it first. */
void hook_file_init(void) HOOK_HIDDEN;
int hook_file_ready(void) HOOK_HIDDEN;

/* True in the child of a vfork() (or any clone sharing the caller's memory,
 * as posix_spawn and Python's subprocess make) before it execs: that child
 * runs in its parent's memory, so a hook must not change libddp's tables
 * there (its close of an inherited fd would drop the PARENT's sharded view,
 * and the parent would go on reading the whole file).  Such a child's fds are
 * its own; the parent's tables describe the parent's.  Decided by the process
 * id against the one the memory belongs to (set at the files stage and in
 * every fork() child by pthread_atfork; vfork runs no atfork handler). */
int hook_memory_borrowed(void) HOOK_HIDDEN;

/* fcntl's F_SETLK, F_SETLKW, F_OFD_SETLK(W): the lock, also taken on the
 * job's key file of fd (hook_write.c; runtime/write/ddp_write_lock.h). */
struct flock;
int hook_write_lock_fcntl(int fd, int cmd, struct flock *fl) HOOK_HIDDEN;

/* Reads DDP_SHARD and finds the sharded files (start-up, once). */
void hook_shard_setup(void) HOOK_HIDDEN;

/* One open sharded file description (shared by dup'ed fds). */
struct hook_shard_open {
	int refs;             /* fds pointing here (atomic)           */
	int file;             /* index in the sharded-file table      */
	pthread_mutex_t lock; /* guards pos                           */
	uint64_t pos;         /* the virtual file position            */
	struct ddp_shard_view view;
	unsigned char *header; /* rewritten header, NULL: read the real one */
};

/* The view behind fd, or NULL (the fast check of every fd hook). */
struct hook_shard_open *hook_shard_get(int fd) HOOK_HIDDEN;

/* Whether any --shard file exists (a plain load). */
int hook_shard_active(void) HOOK_HIDDEN;

/* After a successful real open of path (flags as given) returned fd: clears
 * a stale table entry and attaches a view when path is a sharded file.
 * Returns fd, or -1 (fd closed, errno set) when the file cannot be shown. */
int hook_shard_after_open(int fd, const char *path, int flags) HOOK_HIDDEN;

/* Reads n bytes at virtual offset off of view o on fd (no position). */
ssize_t hook_shard_pread_view(struct hook_shard_open *o, int fd, void *buf, size_t n, uint64_t off) HOOK_HIDDEN;

/* Virtual read/seek/close at the fd level (used by the stdio cookie). */
ssize_t hook_shard_read(int fd, void *buf, size_t n) HOOK_HIDDEN;
off64_t hook_shard_lseek(int fd, off64_t off, int whence) HOOK_HIDDEN;
int hook_shard_close(int fd) HOOK_HIDDEN;

/* When st describes a sharded file, replaces its size by the rank's view
 * size.  fd >= 0 when st came from fstat(fd). */
void hook_shard_patch_stat(int fd, struct stat64 *st) HOOK_HIDDEN;
void hook_shard_patch_statx(int fd, struct statx *stx) HOOK_HIDDEN;

/* Whether path's name could be a sharded file (no syscall). */
int hook_shard_candidate(const char *path) HOOK_HIDDEN;

/* ---- write redirection (hook_write.c) ------------------------------ */

/* Sets the redirection up from the rank info and the environment. */
void hook_write_setup(void) HOOK_HIDDEN;

/* Whether this rank redirects (rank != 0 under a launcher). */
int hook_write_active(void) HOOK_HIDDEN;

/* Nonzero while the calling thread is inside ddp's own work (its inside-ddp
 * flag, interpose/hook_common.c): files opened then (NCCL's, on ddp's
 * behalf) are neither redirected nor sharded.  The runtime's own I/O never
 * reaches the hooks at all: it goes through the port (ddp_libc_). */
int hook_file_bypass(void) HOOK_HIDDEN;

/* The path an open with flags should use: path itself, or buf holding the
 * rank's side copy (created with its directories, copied up when the open
 * keeps existing content).  Reads use the side copy when it exists.  NULL,
 * with errno set and one line logged, when a write cannot be redirected:
 * the caller fails the call (it never writes in place). */
const char *hook_write_map_open(int dirfd, const char *path, int flags, char *buf, size_t len) HOOK_HIDDEN;

/* Never late (every rank): an open with write access (flags) of a file
 * outside /dev, /proc, /sys, /run, the temporary folders, the side folders
 * and dot-folders (caches: ~/.nv, ~/.triton, ~/.cache), while kernels ran
 * and no update is known, stops the job before the file is written
 * (ddp_sync_output_open).  Costs one flag test once an update is known. */
void hook_write_output_gate(int dirfd, const char *path, int flags) HOOK_HIDDEN;

/* The path a stat-like lookup should use (side copy when it exists). */
const char *hook_write_map_lookup(int dirfd, const char *path, char *buf, size_t len) HOOK_HIDDEN;

/* The open hook itself (redirection, then sharding), for libddp's own
 * callers that create files on the program's behalf (mkstemp). */
int hook_file_open(int dirfd, const char *path, int flags, mode_t mode) HOOK_HIDDEN;

/* Like hook_write_map_lookup; follow: a symbolic link as the last component
 * is followed (stat, open), else not (lstat, AT_SYMLINK_NOFOLLOW). */
const char *hook_write_map_lookup_at(int dirfd, const char *path, int follow, char *buf, size_t len)
	HOOK_HIDDEN;

/* Open flags for an fopen mode string ("r", "w+", "ab", "re"...). */
int hook_file_mode_flags(const char *mode) HOOK_HIDDEN;

#endif /* HOOK_FILE_H */
