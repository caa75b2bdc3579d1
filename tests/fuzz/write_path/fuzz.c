/* SPDX-License-Identifier: MIT
 *
 * fuzz.c - libFuzzer target over write safety's path handling
 * (runtime/write/ddp_write.c, included whole to reach its static helpers):
 * the lexical normaliser, abs_path, and the component-by-component
 * resolution through a rank's view (real links, /proc and /dev/fd magic
 * links, the rank's entries and whiteouts) on arbitrary paths the program
 * could name.  Only lookups run: nothing is created or removed.
 * Input: byte 0's low bit picks follow; the rest is the path (up to the
 * first NUL).
 * Invariants checked (abort on violation): a normalised path starts with
 * '/', has no "//", no "." or ".." component, and normalising it again
 * changes nothing; a resolved path is absolute and shorter than PATH_MAX; a
 * lookup returns the path itself or a NUL-terminated string in the buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_write.c"

static void check_normal(const char *p)
{
	char again[PATH_MAX];

	if (p[0] != '/' || strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../"))
		abort();
	size_t n = strlen(p);
	if ((n >= 2 && !strcmp(p + n - 2, "/.")) || (n >= 3 && !strcmp(p + n - 3, "/..")))
		abort();
	memcpy(again, p, n + 1);
	normalise(again);
	if (strcmp(again, p) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char path[PATH_MAX + 64], abs[PATH_MAX], buf[PATH_MAX];
	struct stat st;
	enum where w;
	int follow, r;
	size_t n;

	if (!ready) {
		/* a rank 1 whose overlay is a folder that does not exist: every
		 * entry lookup misses, the real file system is read only */
		strcpy(wr_base, "/nonexistent-ddp-fuzz");
		strcpy(wr_root, "/nonexistent-ddp-fuzz/rank1/run-1-1");
		wr_tmp = 1;
		wr_rank = 1;
		ready = 1;
	}
	if (size < 1)
		return 0;
	follow = data[0] & 1;
	n = size - 1;
	if (n >= sizeof path)
		n = sizeof path - 1;
	memcpy(path, data + 1, n);
	path[n] = '\0';
	if (!path[0])
		return 0;
	if (abs_path(AT_FDCWD, path, abs, sizeof abs) == 0) {
		check_normal(abs);
		r = resolve(abs, sizeof abs, follow, &w, &st);
		if (r == RES_FILE && (abs[0] != '/' || strlen(abs) >= PATH_MAX))
			abort();
	}
	const char *p = ddp_write_map_lookup(AT_FDCWD, path, follow, buf, sizeof buf);
	if (p != path && (p != buf || strlen(buf) >= sizeof buf))
		abort();
	return 0;
}
