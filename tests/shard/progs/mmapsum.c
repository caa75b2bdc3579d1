/* SPDX-License-Identifier: MIT
 * mmapsum.c - `mmapsum FILE [OFFSET]`: maps FILE read-only from OFFSET (a
 * page multiple) to its end (size from fstat) and writes the mapped bytes to
 * stdout, then "mmapsum: N bytes fnv1a=H" on stderr.  tests/shard compares
 * the bytes with the rank's expected view. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct stat st;
	long off = argc > 2 ? atol(argv[2]) : 0;
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;

	if (fd < 0 || fstat(fd, &st) != 0) {
		perror("mmapsum: open");
		return 1;
	}
	if (st.st_size <= off)
		return 0;
	size_t len = (size_t)(st.st_size - off);
	const unsigned char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	if (p == MAP_FAILED) {
		perror("mmapsum: mmap");
		return 1;
	}
	close(fd); /* the mapping outlives the fd */
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	if (fwrite(p, 1, len, stdout) != len)
		return 1;
	fprintf(stderr, "mmapsum: %zu bytes fnv1a=%016llx\n", len, (unsigned long long)h);
	return munmap((void *)p, len) != 0;
}
