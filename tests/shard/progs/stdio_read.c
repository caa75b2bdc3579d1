/* SPDX-License-Identifier: MIT
 * stdio_read.c - `stdio_read FILE`: reads FILE through stdio the awkward way
 * (fseek to the end and ftell for the size, rewind, fgetc, odd-sized fread,
 * fgets, seeking back and forth with fseek/fseeko, feof) and writes the
 * reassembled bytes to stdout.  Exits 1 when stdio's answers disagree with
 * each other (positions, sizes, EOF). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { fprintf(stderr, "stdio_read: " __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
	if (!f)
		FAIL("cannot open");
	if (fseek(f, 0, SEEK_END) != 0)
		FAIL("fseek end");
	long size = ftell(f);
	if (size < 0)
		FAIL("ftell");
	unsigned char *buf = malloc((size_t)size + 1), *seen = calloc((size_t)size + 1, 1);
	char line[64];
	rewind(f);
	if (ftell(f) != 0)
		FAIL("rewind");
	/* forwards with mixed calls */
	while (!feof(f)) {
		long pos = ftell(f);
		int c = fgetc(f);
		if (c == EOF)
			break;
		buf[pos] = (unsigned char)c, seen[pos] = 1;
		pos = ftell(f);
		size_t n = fread(buf + pos, 1, pos + 7 <= size ? 7 : (size_t)(size - pos), f);
		memset(seen + pos, 1, n);
		pos = ftello(f);
		if (fgets(line, 13, f)) {
			size_t l = strlen(line); /* may stop early at '\n' or NUL bytes */
			memcpy(buf + pos, line, l);
			memset(seen + pos, 1, l);
			if (fseeko(f, pos + (long)l, SEEK_SET) != 0)
				FAIL("fseeko");
		}
		if (ftell(f) > size)
			FAIL("past the end: %ld > %ld", ftell(f), size);
	}
	if (ftell(f) != size)
		FAIL("ended at %ld, size %ld", ftell(f), size);
	/* backwards: re-read a middle piece and compare */
	if (size > 10) {
		unsigned char tmp[10];
		if (fseek(f, -(size / 2), SEEK_END) != 0 || fread(tmp, 1, 10, f) != 10)
			FAIL("seek back");
		if (memcmp(tmp, buf + size - size / 2, 10) != 0)
			FAIL("re-read differs");
	}
	for (long i = 0; i < size; i++)
		if (!seen[i])
			FAIL("byte %ld never read", i);
	fclose(f);
	fwrite(buf, 1, (size_t)size, stdout);
	return 0;
}
