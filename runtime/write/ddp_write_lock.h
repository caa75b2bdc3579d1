/* SPDX-License-Identifier: MIT
 *
 * ddp_write_lock.h - file locks across ranks (docs/write-safety.md "Locks
 * across ranks").
 *
 * A rank other than 0 locks its own copy of a file (the libc overlay's side
 * file, or the kernel overlay's upper or lower inode), never rank 0's: so
 * "rank 0 builds a cache under a lock, the others wait, then read it" would
 * not wait.  Every rank of a job under a launcher (world size > 1, writes
 * redirected) therefore also takes each flock/fcntl/lockf lock on a key
 * file shared by the job, $DDP_WRITE_DIR/locks/<hash of the real absolute
 * path>, first (same mode, same byte range), and releases it after.  The
 * key of a program fd is opened once and closed with the fd.
 *
 * Contract: any thread; only the port's libc calls.  ddp_write_lock_key
 * costs a readlink and an open the first time per fd, then a table read.
 */
#ifndef DDP_WRITE_LOCK_H
#define DDP_WRITE_LOCK_H

/* Called once at set-up (the files stage): whether this rank mirrors its
 * locks (every rank of a multi-rank job whose ranks other than 0 redirect). */
void ddp_write_lock_setup(void);

/* The key file's fd for the program's fd (opened on first use), or -1:
 * mirroring off, fd not a file with a name, or the key cannot be opened
 * (the lock is then this rank's only, said once). */
int ddp_write_lock_key(int fd);

/* The program closed fd: its key (and the key's locks) go too. */
void ddp_write_lock_forget(int fd);

#endif
