/* SPDX-License-Identifier: MIT
 *
 * replay_main.c - runs a libFuzzer target over files without libFuzzer.
 *
 * `make test` links every fuzz target with this main and replays its corpus
 * (tests/fuzz/<target>/corpus/ plus any crash reproducers kept there), so a
 * parser bug found once by fuzzing stays fixed.  Usage: replay FILE|DIR...
 * Prints one "ok - replay <arg> (N inputs)" line per argument; an unreadable
 * input is a failed case and a crash fails the whole test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replayed;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("not ok - replay %s: cannot open\n", path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	replayed++;
	return 0;
}

static int replay_path(const char *path)
{
	struct stat st;
	int bad = 0;
	if (stat(path, &st) != 0) {
		printf("not ok - replay %s: missing\n", path);
		return 1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.') {
			char *p;
			if (asprintf(&p, "%s/%s", path, ents[i]->d_name) >= 0) {
				bad |= replay_path(p);
				free(p);
			}
		}
		free(ents[i]);
	}
	free(ents);
	return bad;
}

int main(int argc, char **argv)
{
	int bad = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		replayed = 0;
		int b = replay_path(argv[i]);
		if (!b)
			printf("ok - replay %s (%d inputs)\n", argv[i], replayed);
		bad |= b;
	}
	return bad;
}
