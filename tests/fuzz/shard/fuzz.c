/* SPDX-License-Identifier: MIT
 *
 * fuzz.c - libFuzzer target over input sharding's parsers: --shard spec
 * parsing (one spec and newline-separated lists), format detection and
 * header rewriting on arbitrary bytes, reads of the resulting views, and
 * the DDP_SHARD_FILES lines ddprun hands the ranks (ddp_shard_snapshot_next).
 * Input: byte 0 picks the world size and rank, byte 1 the part of the rest
 * used as a spec; the rest is both a spec string and a file's contents.
 * Invariants checked (abort on violation): a detected layout fits the file,
 * a rewritten header keeps its length, view reads never return more than
 * asked or than the view holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "ddp_shard.h"

struct mem { const uint8_t *p; size_t n; };

static ssize_t mem_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	const struct mem *m = ctx;
	if (off >= m->n)
		return 0;
	if (n > m->n - off)
		n = m->n - off;
	memcpy(buf, m->p + off, n);
	return (ssize_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ddp_shard_spec specs[4];
	static unsigned char hdr[DDP_SHARD_HEAD_MAX], out[4096];
	char text[512], err[256];
	struct ddp_shard_layout l;
	struct ddp_shard_view v;
	int n, world, rank;

	if (size < 2)
		return 0;
	world = data[0] % 7 + 1;
	rank = (data[0] / 7) % world;
	size_t tl = data[1] < size - 2 ? data[1] : size - 2;
	memcpy(text, data + 2, tl < sizeof text - 1 ? tl : sizeof text - 1);
	text[tl < sizeof text - 1 ? tl : sizeof text - 1] = '\0';
	data += 2;
	size -= 2;

	{
		const char *cur = text;
		struct ddp_shard_fixed at;
		char path[64];
		int si, lines = 0;
		while (ddp_shard_snapshot_next(&cur, &si, &at, path, sizeof path))
			if (strlen(path) >= sizeof path || ++lines > (int)sizeof text)
				abort();
	}
	if (ddp_shard_parse_list(text, specs, 4, &n, err, sizeof err) == DDP_OK && n > 0 &&
	    strlen(specs[0].path) == 0)
		abort();
	if (ddp_shard_parse_spec(text, &specs[0], err, sizeof err) != DDP_OK) {
		memset(&specs[0], 0, sizeof specs[0]);
		specs[0].header = UINT64_MAX;
	}
	size_t head = size < DDP_SHARD_HEAD_MAX ? size : DDP_SHARD_HEAD_MAX;
	if (ddp_shard_format_detect(data, head, size, &l, err, sizeof err) == DDP_OK &&
	    l.fmt != DDP_SHARD_FMT_UNKNOWN &&
	    (l.header_bytes + l.record_count * l.record_bytes != size || l.header_bytes > head))
		abort();
	if (ddp_shard_layout_resolve(&specs[0], "fuzz", data, head, size, &l, err, sizeof err) != DDP_OK)
		return 0;
	if (l.header_bytes > size || l.record_bytes == 0)
		abort();
	if (ddp_shard_view_init(&specs[0], &l, rank, world, &v) != DDP_OK)
		return 0;
	unsigned char *h = NULL;
	if (l.fmt != DDP_SHARD_FMT_RAW && l.header_bytes <= sizeof hdr) {
		if (ddp_shard_format_rewrite(&l, data, v.count, hdr) != DDP_OK)
			abort();
		h = hdr;
	}
	struct mem m = { data, size };
	uint64_t off = size ? data[size - 1] * 13u % (v.size + 1) : 0;
	ssize_t g = ddp_shard_view_read(&v, h, mem_pread, &m, out, sizeof out, off);
	if (g < 0 || (uint64_t)g > sizeof out || (uint64_t)g > v.size - (off < v.size ? off : v.size))
		abort();
	return 0;
}
