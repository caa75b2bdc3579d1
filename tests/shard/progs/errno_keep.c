/* SPDX-License-Identifier: MIT
 *
 * errno_keep.c - the file hooks leave errno alone when a call succeeds
 * (tests/shard/test_errno.sh).  Programs rely on it, e.g. `errno = 0; while
 * ((e = readdir(d))) stat(e->d_name...); if (errno) ...`.  Each check sets
 * errno to a sentinel, makes a call that must succeed, and prints
 * `ok - NAME` when it succeeded with the sentinel kept, else `not ok - NAME`
 * with what happened.
 *
 *   errno_keep write SHARED     rank != 0, write redirection on: SHARED is an
 *                               existing file in the job folder (never
 *                               written by this rank)
 *   errno_keep shard FILE N R   FILE is sharded (raw, 16-byte records, N
 *                               records of byte value = record index): the
 *                               first call (the library's init), stat, open,
 *                               and open with O_DIRECT, whose reads show rank
 *                               R's records (of 2 ranks)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SENTINEL 4242

static int fails;

static void report(const char *name, int succeeded, int err)
{
	if (succeeded && err == SENTINEL) {
		printf("ok - %s\n", name);
	} else {
		printf("not ok - %s (%s, errno %d%s)\n", name, succeeded ? "succeeded" : "failed",
		       err, err == SENTINEL ? " = the sentinel" : "");
		fails++;
	}
}

#define EXPECT(name, call_ok)                    \
	do {                                     \
		errno = SENTINEL;                \
		int ok_ = (call_ok);             \
		report(name, ok_, errno);        \
	} while (0)

static int do_write(const char *shared)
{
	struct stat st;
	int fd;
	FILE *f;

	EXPECT("stat of a file without side copy", stat(shared, &st) == 0);
	EXPECT("lstat of a file without side copy", lstat(shared, &st) == 0);
	EXPECT("access of a file without side copy", access(shared, R_OK) == 0);
	EXPECT("open for reading, no side copy", (fd = open(shared, O_RDONLY)) >= 0);
	close(fd);
	EXPECT("mkdir of a new folder", mkdir("sub", 0755) == 0);
	EXPECT("mkdir of a new folder in it", mkdir("sub/dir", 0755) == 0);
	EXPECT("open O_CREAT of a new file in a new folder",
	       (fd = open("sub/dir/new.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0);
	if (fd >= 0)
		(void)!write(fd, "x", 1);
	close(fd);
	EXPECT("open O_CREAT of a second file in the same folder",
	       (fd = open("sub/dir/new2.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0);
	close(fd);
	EXPECT("open O_RDWR of the shared file (copied up)", (fd = open(shared, O_RDWR)) >= 0);
	close(fd);
	EXPECT("fopen \"w\" of a new file", (f = fopen("sub/log.txt", "w")) != NULL);
	if (f)
		fclose(f);
	EXPECT("stat of a file with a side copy", stat("sub/dir/new.bin", &st) == 0);
	EXPECT("rename of this rank's file", rename("sub/dir/new.bin", "sub/dir/renamed.bin") == 0);
	EXPECT("rename of a shared file never written (copied)",
	       rename("other.txt", "sub/other-copy.txt") == 0);
	EXPECT("unlink of this rank's file", unlink("sub/dir/new2.bin") == 0);
	EXPECT("unlink of a shared file never written (hidden, left in place)",
	       unlink("third.txt") == 0);
	if (stat("third.txt", &st) == 0 || errno != ENOENT) {
		printf("not ok - the shared file it unlinked is gone for this rank\n");
		fails++;
	} else {
		printf("ok - the shared file it unlinked is gone for this rank\n");
	}
	EXPECT("remove of a shared file it copied up", remove(shared) == 0);
	return fails != 0;
}

static int do_shard(const char *file, long n, int rank)
{
	struct stat st;
	long mine = (n - rank + 1) / 2; /* stride over 2 ranks */
	int fd;

	/* the very first hooked call runs the library's init */
	EXPECT("first call (library init), stat of the sharded file", stat(file, &st) == 0);
	if (st.st_size != mine * 16) {
		printf("not ok - stat shows the view: size %lld, want %ld\n", (long long)st.st_size,
		       mine * 16);
		fails++;
	}
	EXPECT("stat of the sharded file again", stat(file, &st) == 0);
	EXPECT("open of the sharded file", (fd = open(file, O_RDONLY)) >= 0);
	close(fd);
	EXPECT("open O_DIRECT of the sharded file", (fd = open(file, O_RDONLY | O_DIRECT)) >= 0);
	if (fd < 0)
		return 1;
	unsigned char *buf = aligned_alloc(4096, 8192);
	ssize_t got = buf ? read(fd, buf, 8192) : -1;
	int good = got == mine * 16;
	for (long k = 0; good && k < mine; k++)
		for (int b = 0; b < 16; b++)
			if (buf[k * 16 + b] != (unsigned char)(rank + 2 * k))
				good = 0;
	if (good) {
		printf("ok - O_DIRECT reads show rank %d's %ld records\n", rank, mine);
	} else {
		printf("not ok - O_DIRECT reads show rank %d's records (read %zd: %s)\n", rank, got,
		       got < 0 ? strerror(errno) : "wrong bytes");
		fails++;
	}
	free(buf);
	close(fd);
	return fails != 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "write") == 0)
		return do_write(argv[2]);
	if (argc == 5 && strcmp(argv[1], "shard") == 0)
		return do_shard(argv[2], atol(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: errno_keep write SHARED | shard FILE N RANK\n");
	return 2;
}
