/* SPDX-License-Identifier: MIT
 *
 * ddp_write_dir.h - the private folders of ranks other than 0, made and
 * removed without ever following a symbolic link (docs/write-safety.md
 * "The private folder").
 *
 * DDP_WRITE_DIR is the user's: it must be a folder (never a symbolic link)
 * owned by the user.  rank<k> under it must be a folder owned by the user
 * with mode 0700 (made so when missing).  Anything else is foreign (another
 * user pre-created it in a shared folder): refused, never used, never
 * cleaned.
 *
 * Contract: any thread, any process (ddprun and libddp); only the port's
 * libc calls (never the program's hooks).
 */
#ifndef DDP_WRITE_DIR_H
#define DDP_WRITE_DIR_H

#include <stddef.h>
#include <sys/types.h>

/* Process start time (clock ticks since boot, /proc/<pid>/stat field 22)
 * of pid, 0 when gone; with the host tag (at most 32 of [A-Za-z0-9._-],
 * others as '_') it names a run folder run-<pid>-<start>-<host>, which a
 * later run removes only once that process is gone. */
unsigned long long ddp_write_start_time(pid_t pid);
const char *ddp_write_host_tag(void);

/* Opens (O_DIRECTORY|O_NOFOLLOW) the folder DDP_WRITE_DIR base, making it
 * (mode 0700, its parents as needed) when missing, then rank<rank> in it
 * (made mode 0700 when missing).  Returns the rank folder's fd, or -1 with
 * errno and why (one sentence naming the folder and the fault, no prefix)
 * when either is missing and cannot be made, or is foreign: a symbolic
 * link, not a folder, owned by another user, or (rank<k>) not mode 0700. */
int ddp_write_dir_open(const char *base, int rank, char *why, size_t len);
/* The same for the folder name under base (rank<k>, locks). */
int ddp_write_dir_open_sub(const char *base, const char *name, char *why, size_t len);

/* Removes name under the folder dirfd (AT_FDCWD: name is a path) and,
 * for a folder, everything in it; never follows a symbolic link (a link is
 * removed, its target untouched).  0, or -1 with errno of the first
 * failure (the rest is still tried).  ENOENT counts as done. */
int ddp_write_remove_tree_at(int dirfd, const char *name);

/* Whether the file system of path is full (less than max(64 KiB, 1% of it)
 * left to this user): 1 with why ("<path> is on a full file system (N KiB
 * of M KiB free)"), else 0.  Said where the private folder's writes may have
 * failed with ENOSPC, which names nothing. */
int ddp_write_dir_full(const char *path, char *why, size_t len);

#endif
