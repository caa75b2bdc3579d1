/* SPDX-License-Identifier: MIT
 *
 * ddp_shard_check.c - `ddp-shard-check SPEC N`: validates a --shard spec for
 * a job of N ranks exactly as ddprun does before it starts any rank
 * (ddp_shard_check_spec), and prints what each rank would see.
 * Exit 0: valid; 1: invalid (one line on stderr); 2: usage.
 */
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ddp_shard.h"

static void describe(const struct ddp_shard_spec *s, const char *path, int world)
{
	static unsigned char head[DDP_SHARD_HEAD_MAX];
	struct ddp_shard_layout l;
	struct ddp_shard_view v;
	struct stat st;
	char err[512];
	int fd = open(path, O_RDONLY);
	ssize_t got;

	if (fd < 0 || fstat(fd, &st) != 0)
		return;
	got = pread(fd, head, sizeof head, 0);
	close(fd);
	if (got < 0 || ddp_shard_layout_resolve(s, path, head, (size_t)got, (uint64_t)st.st_size,
						&l, err, sizeof err) != DDP_OK)
		return;
	printf("%s: %s, %llu-byte header, %llu records of %llu bytes\n", path,
	       ddp_shard_fmt_name(l.fmt), (unsigned long long)l.header_bytes,
	       (unsigned long long)l.record_count, (unsigned long long)l.record_bytes);
	for (int r = 0; r < world; r++) {
		if (ddp_shard_view_init(s, &l, r, world, &v) != DDP_OK)
			return;
		printf("  rank %d: %llu records, first %llu, step %llu, %llu bytes\n", r,
		       (unsigned long long)v.count, (unsigned long long)v.first,
		       (unsigned long long)v.step, (unsigned long long)v.size);
	}
}

int main(int argc, char **argv)
{
	struct ddp_shard_spec s;
	char err[1024];
	glob_t g;
	int n;

	if (argc != 3 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: ddp-shard-check SPEC NRANKS\n");
		return 2;
	}
	if (ddp_shard_check_spec(argv[1], n, err, sizeof err) != DDP_OK) {
		fprintf(stderr, "ddprun: %s\n", err);
		return 1;
	}
	if (ddp_shard_parse_spec(argv[1], &s, err, sizeof err) == DDP_OK &&
	    glob(s.path, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			describe(&s, g.gl_pathv[i], n);
		globfree(&g);
	}
	return 0;
}
