/* SPDX-License-Identifier: MIT
 * ckpt.c - `ckpt OUTDIR TMPFILE`: a program that saves like a trainer does,
 * for tests/shard/test_write_safety.sh.  It knows nothing of ranks except
 * that its data depend on RANK (as a rank's data do):
 *   - checkpoint: open(OUTDIR/ckpt.bin.tmp, O_CREAT|O_TRUNC), write, rename
 *     to OUTDIR/ckpt.bin, then open and read it back and compare;
 *   - log: fopen(OUTDIR/train.log, "w"), lines, fclose; fopen "a", one more
 *     line; fopen "r" and check both are there;
 *   - scratch: creat(OUTDIR/scratch-RANK), unlink it, check stat says gone;
 *   - TMPFILE and /dev/null written directly.
 * Exits non-zero when any step fails or reads back something else. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAIL(...) do { fprintf(stderr, "ckpt: " __VA_ARGS__); fprintf(stderr, ": %s\n", strerror(errno)); exit(1); } while (0)
#define CKPT_BYTES 100000

int main(int argc, char **argv)
{
	const char *rank = getenv("RANK") ? getenv("RANK") : "solo";
	char p[4096], q[4096], line[256];
	static unsigned char data[CKPT_BYTES], back[CKPT_BYTES];
	struct stat st;
	int fd;

	if (argc != 3)
		FAIL("usage: ckpt OUTDIR TMPFILE");
	for (int i = 0; i < CKPT_BYTES; i++)
		data[i] = (unsigned char)(i * 31 + rank[0]);
	mkdir(argv[1], 0777);
	snprintf(p, sizeof p, "%s/ckpt.bin.tmp", argv[1]);
	snprintf(q, sizeof q, "%s/ckpt.bin", argv[1]);
	fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0 || write(fd, data, CKPT_BYTES) != CKPT_BYTES || close(fd) != 0)
		FAIL("write %s", p);
	usleep(20000); /* let the other rank overlap */
	if (rename(p, q) != 0)
		FAIL("rename %s", p);
	fd = open(q, O_RDONLY);
	if (fd < 0 || read(fd, back, CKPT_BYTES) != CKPT_BYTES || close(fd) != 0)
		FAIL("read back %s", q);
	if (memcmp(data, back, CKPT_BYTES) != 0 || stat(q, &st) != 0 || st.st_size != CKPT_BYTES)
		FAIL("%s reads back different", q);
	/* no access(p) check: a rank other than 0 also sees rank 0's files,
	 * here rank 0's own ckpt.bin.tmp (docs/write-safety.md, Limits) */

	snprintf(p, sizeof p, "%s/train.log", argv[1]);
	FILE *f = fopen(p, "w");
	if (!f)
		FAIL("fopen %s", p);
	for (int i = 0; i < 3; i++)
		fprintf(f, "rank %s step %d\n", rank, i);
	fclose(f);
	f = fopen(p, "a");
	if (!f)
		FAIL("fopen a %s", p);
	fprintf(f, "rank %s done\n", rank);
	fclose(f);
	f = fopen(p, "r");
	int lines = 0;
	while (f && fgets(line, sizeof line, f))
		lines += strncmp(line, "rank ", 5) == 0 && strstr(line, rank) != NULL;
	if (!f || lines != 4)
		FAIL("%s has %d of my 4 lines", p, lines);
	fclose(f);

	snprintf(p, sizeof p, "%s/scratch-%s", argv[1], rank);
	fd = creat(p, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1 || close(fd) != 0)
		FAIL("creat %s", p);
	if (unlink(p) != 0 || stat(p, &st) == 0)
		FAIL("unlink %s", p);

	f = fopen(argv[2], "w");
	if (!f || fprintf(f, "tmp from rank %s\n", rank) < 0 || fclose(f) != 0)
		FAIL("write %s", argv[2]);
	fd = open("/dev/null", O_WRONLY | O_TRUNC);
	if (fd < 0 || write(fd, "x", 1) != 1)
		FAIL("/dev/null");
	close(fd);
	return 0;
}
