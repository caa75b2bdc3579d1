/* SPDX-License-Identifier: MIT
 * test_shard.c - unit tests of runtime/shard/ddp_shard.c, ddp_shard_format.c and
 * ddp_rank.c: spec parsing and its messages, format detection and header
 * rewriting for every format, the view arithmetic against an independent
 * construction of each rank's record list (DistributedSampler style), and
 * byte-exact reads of the virtual file at every offset. */
#define CHECK_MAIN
#include "../check.h"
#include <stdint.h>
#include <unistd.h>
#include "ddp_rank.h"
#include "ddp_shard.h"

static char err[512];

static struct ddp_shard_spec parse_ok(const char *text)
{
	struct ddp_shard_spec s;
	err[0] = 0;
	ddp_result rc = ddp_shard_parse_spec(text, &s, err, sizeof err);
	if (rc != DDP_OK)
		printf("# parse %s: %s\n", text, err);
	CHECK(rc == DDP_OK);
	return s;
}

/* Parse must fail with a message containing want. */
static void parse_bad(const char *text, const char *want)
{
	struct ddp_shard_spec s;
	err[0] = 0;
	CHECK(ddp_shard_parse_spec(text, &s, err, sizeof err) == DDP_ERR_INVALID);
	if (!strstr(err, want))
		printf("# spec '%s': message '%s' lacks '%s'\n", text, err, want);
	CHECK(strstr(err, want) != NULL);
	CHECK(strchr(err, '\n') == NULL);
}

TEST(spec_parsing)
{
	struct ddp_shard_spec s = parse_ok("data/train.bin");
	CHECK_EQ_STR(s.path, "data/train.bin");
	CHECK(s.mode == DDP_SHARD_MODE_AUTO && s.record == 0 && s.header == UINT64_MAX);
	CHECK(s.uneven == DDP_SHARD_KEEP);
	s = parse_ok("d/*.bin:mode=block:record=64:header=16:pad");
	CHECK_EQ_STR(s.path, "d/*.bin");
	CHECK(s.mode == DDP_SHARD_BLOCK && s.record == 64 && s.header == 16);
	CHECK(s.uneven == DDP_SHARD_PAD);
	s = parse_ok("x.npy:drop:mode=stride");
	CHECK(s.uneven == DDP_SHARD_DROP && s.mode == DDP_SHARD_STRIDE);
	s = parse_ok("a:b/c.bin:header=0:record=1");
	CHECK_EQ_STR(s.path, "a:b/c.bin");
	CHECK(s.header == 0 && s.record == 1);
	s = parse_ok("/data/run:v2");
	CHECK_EQ_STR(s.path, "/data/run:v2");
}

TEST(spec_errors_have_messages)
{
	parse_bad("", "empty spec");
	parse_bad("x.bin:mode=random", "mode=random is not a mode");
	parse_bad("x.bin:record=0", "record=0 is not a byte count of at least 1");
	parse_bad("x.bin:record=12k", "record=12k is not a byte count");
	parse_bad("x.bin:header=-1", "header=-1 is not a byte count");
	parse_bad("x.bin:pad:drop", "at most one of :pad and :drop");
	parse_bad("x.bin:record=4:record=8", "record= given twice");
	parse_bad("x.bin:size=4", "unknown option 'size'");
	parse_bad("x.bin::pad", "empty option");
	parse_bad("x.bin:", "empty option");
	parse_bad(":pad", "no PATH");
}

TEST(spec_list)
{
	struct ddp_shard_spec specs[4];
	int n = -1;
	CHECK(ddp_shard_parse_list("a.bin\n\nb.npy:drop\r\n", specs, 4, &n, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_STR(specs[1].path, "b.npy");
	CHECK(specs[1].uneven == DDP_SHARD_DROP);
	CHECK(ddp_shard_parse_list("a\nb\nc\nd\ne", specs, 4, &n, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "more than 4") != NULL);
	CHECK(ddp_shard_parse_list("", specs, 4, &n, err, sizeof err) == DDP_OK && n == 0);
}

/* ---- format detection ------------------------------------------------ */

static unsigned char file[1 << 16];

static void put32le(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> 8 * i); }
static void put32be(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i)); }

static size_t make_ddprec(uint32_t rec, uint64_t count)
{
	memset(file, 0, 64);
	memcpy(file, "DDPREC01", 8);
	put32le(file + 8, 64);
	put32le(file + 12, rec);
	put32le(file + 16, (uint32_t)count);
	put32le(file + 20, (uint32_t)(count >> 32));
	put32le(file + 24, 50257);
	put32le(file + 28, 64);
	for (size_t i = 64; i < 64 + rec * count; i++)
		file[i] = (unsigned char)(i * 7);
	return 64 + rec * count;
}

static size_t make_npy_v(int version, const char *dict, size_t data)
{
	size_t pre = version == 1 ? 10 : 12;
	size_t dl = strlen(dict), hl = (pre + dl + 1 + 63) / 64 * 64 - pre;
	memcpy(file, "\x93NUMPY", 6);
	file[6] = (unsigned char)version;
	file[7] = 0;
	if (version == 1) {
		file[8] = (unsigned char)hl;
		file[9] = (unsigned char)(hl >> 8);
	} else {
		put32le(file + 8, (uint32_t)hl);
	}
	memset(file + pre, ' ', hl);
	memcpy(file + pre, dict, dl);
	file[pre + hl - 1] = '\n';
	for (size_t i = 0; i < data; i++)
		file[pre + hl + i] = (unsigned char)i;
	return pre + hl + data;
}

static size_t make_npy(const char *dict, size_t data)
{
	return make_npy_v(1, dict, data);
}

static struct ddp_shard_layout detect_ok(size_t size)
{
	struct ddp_shard_layout l;
	err[0] = 0;
	ddp_result rc = ddp_shard_format_detect(file, size, size, &l, err, sizeof err);
	if (rc != DDP_OK)
		printf("# detect: %s\n", err);
	CHECK(rc == DDP_OK);
	return l;
}

static void detect_bad(size_t size, const char *want)
{
	struct ddp_shard_layout l;
	err[0] = 0;
	CHECK(ddp_shard_format_detect(file, size, size, &l, err, sizeof err) == DDP_ERR_INVALID);
	if (!strstr(err, want))
		printf("# message '%s' lacks '%s'\n", err, want);
	CHECK(strstr(err, want) != NULL);
}

TEST(format_ddprec)
{
	size_t n = make_ddprec(20, 7);
	struct ddp_shard_layout l = detect_ok(n);
	CHECK(l.fmt == DDP_SHARD_FMT_DDPREC);
	CHECK_EQ_INT(l.header_bytes, 64);
	CHECK_EQ_INT(l.record_bytes, 20);
	CHECK_EQ_INT(l.record_count, 7);
	CHECK(l.natural_mode == DDP_SHARD_STRIDE);
	unsigned char out[64];
	CHECK(ddp_shard_format_rewrite(&l, file, 3, out) == DDP_OK);
	CHECK_EQ_INT(out[16], 3);
	CHECK(memcmp(out, file, 16) == 0 && memcmp(out + 17, file + 17, 64 - 17) == 0);
	detect_bad(n - 1, "declares 7 records of 20 bytes");
	put32le(file + 8, 32);
	detect_bad(n, "below 64");
	/* A header beyond the first 64 KiB (the bytes the library reads and
	 * copies into the rewritten header) is refused, not read past. */
	struct ddp_shard_layout big;
	make_ddprec(16, 1);
	put32le(file + 8, 70000);
	err[0] = 0;
	CHECK(ddp_shard_format_detect(file, sizeof file, 70016, &big, err, sizeof err) ==
	      DDP_ERR_INVALID);
	CHECK(strstr(err, "larger than the 65536 bytes supported") != NULL);
	/* and a header_bytes past a short file's end says so */
	n = make_ddprec(16, 1);
	put32le(file + 8, 1000);
	detect_bad(n, "runs past the end of the file");
}

TEST(format_idx)
{
	/* images: 5 of 3x2 */
	put32be(file, 0x00000803);
	put32be(file + 4, 5);
	put32be(file + 8, 3);
	put32be(file + 12, 2);
	struct ddp_shard_layout l = detect_ok(16 + 30);
	CHECK(l.fmt == DDP_SHARD_FMT_IDX);
	CHECK_EQ_INT(l.header_bytes, 16);
	CHECK_EQ_INT(l.record_bytes, 6);
	CHECK_EQ_INT(l.record_count, 5);
	unsigned char out[16];
	CHECK(ddp_shard_format_rewrite(&l, file, 2, out) == DDP_OK);
	CHECK(out[7] == 2 && out[4] == 0 && out[11] == 3 && out[15] == 2);
	detect_bad(16 + 29, "declares 5 records of 6 bytes");
	/* labels */
	put32be(file, 0x00000801);
	put32be(file + 4, 10);
	l = detect_ok(8 + 10);
	CHECK_EQ_INT(l.header_bytes, 8);
	CHECK_EQ_INT(l.record_bytes, 1);
	CHECK_EQ_INT(l.record_count, 10);
	/* floats, 2-d */
	put32be(file, 0x00000D02);
	put32be(file + 4, 4);
	put32be(file + 8, 3);
	l = detect_ok(12 + 4 * 3 * 4);
	CHECK_EQ_INT(l.record_bytes, 12);
	put32be(file, 0x00000805);
	detect_bad(12, "truncated");
}

TEST(format_tokens)
{
	memset(file, 0, 1024);
	put32le(file, 20240520);
	put32le(file + 4, 1);
	put32le(file + 8, 100);
	struct ddp_shard_layout l = detect_ok(1024 + 200);
	CHECK(l.fmt == DDP_SHARD_FMT_TOKENS);
	CHECK_EQ_INT(l.record_bytes, 2);
	CHECK_EQ_INT(l.record_count, 100);
	CHECK(l.natural_mode == DDP_SHARD_BLOCK);
	static unsigned char out[1024];
	CHECK(ddp_shard_format_rewrite(&l, file, 25, out) == DDP_OK);
	CHECK(out[8] == 25 && out[9] == 0 && out[0] == file[0] && out[4] == 1);
	put32le(file, 20240801);
	l = detect_ok(1024 + 400);
	CHECK_EQ_INT(l.record_bytes, 4);
	detect_bad(1024 + 200, "declares 100 records of 4 bytes");
	detect_bad(1000, "shorter than its 1024-byte header");
}

TEST(format_npy)
{
	size_t n = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 3), }", 1000 * 12);
	struct ddp_shard_layout l = detect_ok(n);
	CHECK(l.fmt == DDP_SHARD_FMT_NPY);
	CHECK_EQ_INT(l.header_bytes, 128);
	CHECK_EQ_INT(l.record_bytes, 12);
	CHECK_EQ_INT(l.record_count, 1000);
	unsigned char out[256];
	CHECK(ddp_shard_format_rewrite(&l, file, 7, out) == DDP_OK);
	const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (7, 3), }";
	CHECK(memcmp(out + 10, want, strlen(want)) == 0);
	CHECK(memcmp(out, file, 10) == 0);
	CHECK(out[127] == '\n');
	for (size_t i = 10 + strlen(want); i < 127; i++)
		CHECK(out[i] == ' ');
	/* 1-d, unicode */
	n = make_npy("{'descr': '<U3', 'fortran_order': False, 'shape': (5,), }", 5 * 12);
	l = detect_ok(n);
	CHECK_EQ_INT(l.record_bytes, 12);
	CHECK_EQ_INT(l.record_count, 5);
	CHECK(ddp_shard_format_rewrite(&l, file, 2, out) == DDP_OK);
	CHECK(memcmp(out + 10, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 57) == 0);
	/* v2 and v3 */
	for (int ver = 2; ver <= 3; ver++) {
		n = make_npy_v(ver, "{'descr': '<i8', 'fortran_order': False, 'shape': (14, 2, 3), }", 14 * 48);
		l = detect_ok(n);
		CHECK_EQ_INT(l.header_bytes, 128);
		CHECK_EQ_INT(l.record_bytes, 48);
		CHECK_EQ_INT(l.record_count, 14);
		CHECK(ddp_shard_format_rewrite(&l, file, 1, out) == DDP_OK);
		CHECK(memcmp(out + 12, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2, 3), }  ", 64) == 0);
		CHECK(out[127] == '\n' && out[126] == ' ');
	}
	/* refusals */
	n = make_npy("{'descr': '<f8', 'fortran_order': True, 'shape': (4, 2), }", 64);
	detect_bad(n, "Fortran order");
	n = make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", 16);
	detect_bad(n, "structured");
	n = make_npy("{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", 32);
	detect_bad(n, "object");
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8);
	detect_bad(n, "0-dimensional");
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), }", 63);
	detect_bad(n, "declares 4 records of 16 bytes");
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4; 2), }", 64);
	detect_bad(n, "malformed 'shape'");
	/* strict: the two headers issue 14 found accepted, and their cousins */
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), ", 64);
	detect_bad(n, "expected a quoted key"); /* a dict without '}' */
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), }", 64);
	file[127] = ' ';
	detect_bad(n, "does not end with a newline");
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), } x", 64);
	detect_bad(n, "text after the closing '}'");
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), 'shape': (4, 2)}", 64);
	detect_bad(n, "unknown or repeated key 'shape'");
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), 'extra': 1}", 64);
	detect_bad(n, "unknown or repeated key 'extra'");
	n = make_npy("{'descr': '<f8', 'fortran_order': False}", 64);
	detect_bad(n, "lacks 'shape'");
	n = make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (8)}", 64);
	detect_bad(n, "malformed 'shape'"); /* (8) is not a tuple */
	n = make_npy("{'descr': '<f8' 'fortran_order': False, 'shape': (8,)}", 64);
	detect_bad(n, "expected ',' or '}'");
	n = make_npy("{'descr': '<f8x', 'fortran_order': False, 'shape': (8,)}", 64);
	detect_bad(n, "no plain 'descr'");
	/* still accepted: numpy's own spellings */
	n = make_npy("{\"descr\": \"<M8[ns]\", \"fortran_order\": False, \"shape\": (8L,)}", 64);
	l = detect_ok(n);
	CHECK_EQ_INT(l.record_count, 8);
}

TEST(format_unknown_and_raw)
{
	struct ddp_shard_spec s = parse_ok("data.bin");
	struct ddp_shard_layout l;
	memset(file, 'x', 1000);
	CHECK(ddp_shard_layout_resolve(&s, "data.bin", file, 1000, 1000, &l, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "data.bin: unknown file format") && strstr(err, "give record=BYTES and header=BYTES"));
	s = parse_ok("data.bin:record=64:header=16");
	CHECK(ddp_shard_layout_resolve(&s, "data.bin", file, 1000, 1000, &l, err, sizeof err) == DDP_ERR_INVALID);
	CHECK_EQ_STR(err, "--shard data.bin: size 1000 is not a whole number of 64-byte records after a "
		     "16-byte header; give record=BYTES and header=BYTES");
	s = parse_ok("data.bin:record=98:header=20");
	CHECK(ddp_shard_layout_resolve(&s, "data.bin", file, 1000, 1000, &l, err, sizeof err) == DDP_OK);
	CHECK(l.fmt == DDP_SHARD_FMT_RAW && l.record_count == 10 && l.header_bytes == 20);
	s = parse_ok("data.bin:record=10");
	CHECK(ddp_shard_layout_resolve(&s, "data.bin", file, 1000, 1000, &l, err, sizeof err) == DDP_OK);
	CHECK(l.header_bytes == 0 && l.record_count == 100);
	/* record= on a detected format: multiple of the item; header= must agree */
	size_t n = make_ddprec(8, 12);
	s = parse_ok("r.bin:record=24");
	CHECK(ddp_shard_layout_resolve(&s, "r.bin", file, n, n, &l, err, sizeof err) == DDP_OK);
	CHECK(l.record_count == 4 && l.record_bytes == 24);
	unsigned char out[64];
	CHECK(ddp_shard_format_rewrite(&l, file, 2, out) == DDP_OK);
	CHECK_EQ_INT(out[16], 6); /* 2 records of 3 items */
	s = parse_ok("r.bin:record=12");
	CHECK(ddp_shard_layout_resolve(&s, "r.bin", file, n, n, &l, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "record=12 does not split") != NULL);
	s = parse_ok("r.bin:header=16");
	CHECK(ddp_shard_layout_resolve(&s, "r.bin", file, n, n, &l, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "header=16 does not match the DDPREC01 records header of 64 bytes") != NULL);
	/* a broken look-alike with a declared layout is read as raw */
	n = make_ddprec(8, 12);
	s = parse_ok("r.bin:record=2:header=0");
	CHECK(ddp_shard_layout_resolve(&s, "r.bin", file, n - 2, n - 2, &l, err, sizeof err) == DDP_OK);
	CHECK(l.fmt == DDP_SHARD_FMT_RAW && l.record_count == 79);
}

/* ---- view arithmetic ----------------------------------------------- */

/* Independent construction: the sampler's index list for rank r. */
static size_t expected(int block, int uneven, size_t M, size_t N, size_t r, size_t *out)
{
	static size_t idx[4096];
	size_t total = M, n = 0;
	if (M == 0)
		return 0;
	if (uneven == DDP_SHARD_PAD)
		total = (M + N - 1) / N * N;
	else if (uneven == DDP_SHARD_DROP)
		total = M / N * N;
	for (size_t i = 0; i < total; i++)
		idx[i] = i < M ? i : idx[i - M]; /* repeat from the start */
	if (!block) {
		for (size_t i = r; i < total; i += N)
			out[n++] = idx[i];
		return n;
	}
	/* block: sizes as even as possible, the first ranks one longer */
	size_t start = 0;
	for (size_t q = 0; q < r; q++)
		start += total / N + (q < total % N);
	size_t len = total / N + (r < total % N);
	for (size_t i = 0; i < len; i++)
		out[n++] = idx[start + i];
	return n;
}

TEST(view_matches_sampler)
{
	static const int unevens[] = { DDP_SHARD_KEEP, DDP_SHARD_PAD, DDP_SHARD_DROP };
	struct ddp_shard_layout l = { .fmt = DDP_SHARD_FMT_RAW, .header_bytes = 3, .record_bytes = 5, .item_bytes = 5 };
	size_t want[4096];
	int bad = 0;
	for (int block = 0; block < 2; block++)
	for (int u = 0; u < 3; u++)
	for (size_t M = 0; M <= 23; M++)
	for (size_t N = 1; N <= 6; N++) {
		struct ddp_shard_spec s = { .mode = block ? DDP_SHARD_BLOCK : DDP_SHARD_STRIDE,
					    .uneven = unevens[u], .header = UINT64_MAX };
		size_t seen[32] = { 0 }, total = 0;
		l.record_count = M;
		for (size_t r = 0; r < N; r++) {
			struct ddp_shard_view v;
			REQUIRE(ddp_shard_view_init(&s, &l, (int)r, (int)N, &v) == DDP_OK);
			size_t n = expected(block, unevens[u], M, N, r, want);
			if (v.count != n || v.size != 3 + 5 * n) {
				if (bad++ < 5)
					printf("# block=%d uneven=%d M=%zu N=%zu r=%zu: count %llu, want %zu\n",
					       block, u, M, N, r, (unsigned long long)v.count, n);
				continue;
			}
			for (size_t k = 0; k < n; k++) {
				if (ddp_shard_view_src(&v, k) != want[k] && bad++ < 5)
					printf("# block=%d uneven=%d M=%zu N=%zu r=%zu k=%zu: src %llu want %zu\n",
					       block, u, M, N, r, k,
					       (unsigned long long)ddp_shard_view_src(&v, k), want[k]);
				seen[ddp_shard_view_src(&v, k)]++;
			}
			total += n;
		}
		if (unevens[u] == DDP_SHARD_KEEP) {
			/* every record exactly once */
			CHECK_EQ_INT(total, M);
			for (size_t i = 0; i < M; i++)
				CHECK_EQ_INT(seen[i], 1);
		}
	}
	CHECK_EQ_INT(bad, 0);
}

TEST(view_split_is_documented_one)
{
	/* 10 records on 4 ranks: stride 3,3,2,2; block [0,3) [3,6) [6,8) [8,10) */
	struct ddp_shard_layout l = { .fmt = DDP_SHARD_FMT_RAW, .record_bytes = 1, .item_bytes = 1, .record_count = 10 };
	struct ddp_shard_spec s = { .mode = DDP_SHARD_BLOCK, .header = UINT64_MAX };
	struct ddp_shard_view v;
	static const int first[] = { 0, 3, 6, 8 }, count[] = { 3, 3, 2, 2 };
	for (int r = 0; r < 4; r++) {
		CHECK(ddp_shard_view_init(&s, &l, r, 4, &v) == DDP_OK);
		CHECK_EQ_INT(v.first, first[r]);
		CHECK_EQ_INT(v.count, count[r]);
	}
	s.mode = DDP_SHARD_STRIDE;
	s.uneven = DDP_SHARD_PAD;
	CHECK(ddp_shard_view_init(&s, &l, 3, 4, &v) == DDP_OK);
	CHECK_EQ_INT(v.count, 3);
	CHECK_EQ_INT(ddp_shard_view_src(&v, 2), 1); /* index 11 wraps to record 1 */
	CHECK(ddp_shard_view_init(&s, &l, 4, 4, &v) == DDP_ERR_INVALID);
}

/* ---- reading the virtual file --------------------------------------- */

static unsigned char real[1 << 20];
static size_t real_size;
static int reads;

static ssize_t mem_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	(void)ctx;
	reads++;
	if (off >= real_size)
		return 0;
	if (n > real_size - off)
		n = real_size - off;
	if (n > 3000)
		n = 3000; /* short reads must be retried */
	memcpy(buf, real + off, n);
	return (ssize_t)n;
}

static void check_reads(uint64_t H, uint64_t R, uint64_t M, int mode, int uneven, int N, int rewritten)
{
	static unsigned char virt[1 << 20], got[1 << 20];
	static size_t want[1 << 16];
	struct ddp_shard_layout l = { .fmt = DDP_SHARD_FMT_RAW, .header_bytes = H, .record_bytes = R,
				      .item_bytes = R, .record_count = M };
	struct ddp_shard_spec s = { .mode = mode, .uneven = uneven, .header = UINT64_MAX };
	unsigned char hdr[64];

	real_size = H + R * M;
	for (size_t i = 0; i < real_size; i++)
		real[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
	memset(hdr, 0xEE, sizeof hdr);
	for (int r = 0; r < N; r++) {
		struct ddp_shard_view v;
		REQUIRE(ddp_shard_view_init(&s, &l, r, N, &v) == DDP_OK);
		size_t n = expected(mode == DDP_SHARD_BLOCK, uneven, M, (size_t)N, (size_t)r, want);
		REQUIRE(v.count == n);
		/* the expected virtual file, built record by record */
		size_t vs = H;
		memcpy(virt, rewritten ? hdr : real, H);
		for (size_t k = 0; k < n; k++, vs += R)
			memcpy(virt + vs, real + H + want[k] * R, R);
		REQUIRE(vs == v.size);
		/* whole file in one read, and past the end */
		ssize_t g = ddp_shard_view_read(&v, rewritten ? hdr : NULL, mem_pread, NULL, got, sizeof got, 0);
		CHECK_EQ_INT(g, (long long)vs);
		CHECK(memcmp(got, virt, vs) == 0);
		CHECK_EQ_INT(ddp_shard_view_read(&v, NULL, mem_pread, NULL, got, 10, vs), 0);
		CHECK_EQ_INT(ddp_shard_view_read(&v, NULL, mem_pread, NULL, got, 10, vs + 100), 0);
		/* pseudo-random offsets and sizes, crossing records and the end */
		unsigned x = 12345u + (unsigned)r;
		for (int t = 0; t < 300; t++) {
			x = x * 1103515245u + 12345u;
			uint64_t off = (x >> 8) % (vs + 5);
			x = x * 1103515245u + 12345u;
			size_t len = (x >> 8) % (t % 3 == 0 ? 7 : 3 * R + 40) + 1;
			memset(got, 0, len);
			g = ddp_shard_view_read(&v, rewritten ? hdr : NULL, mem_pread, NULL, got, len, off);
			size_t exp = off >= vs ? 0 : (vs - off < len ? vs - off : len);
			if (g != (ssize_t)exp || (exp && memcmp(got, virt + off, exp) != 0)) {
				printf("# H=%llu R=%llu M=%llu mode=%d uneven=%d N=%d r=%d off=%llu len=%zu: got %zd want %zu\n",
				       (unsigned long long)H, (unsigned long long)R, (unsigned long long)M,
				       mode, uneven, N, r, (unsigned long long)off, len, g, exp);
				check_failed_ = 1;
				return;
			}
		}
	}
}

TEST(view_read_every_mode)
{
	static const int unevens[] = { DDP_SHARD_KEEP, DDP_SHARD_PAD, DDP_SHARD_DROP };
	for (int u = 0; u < 3; u++)
		for (int N = 1; N <= 4; N++) {
			check_reads(16, 1, 61, DDP_SHARD_STRIDE, unevens[u], N, 1);    /* labels: bounce */
			check_reads(8, 784, 23, DDP_SHARD_STRIDE, unevens[u], N, 0);   /* images: bounce */
			check_reads(64, 9000, 7, DDP_SHARD_STRIDE, unevens[u], N, 1);  /* big: per record */
			check_reads(0, 2, 1001, DDP_SHARD_BLOCK, unevens[u], N, 0);    /* tokens */
			check_reads(5, 33, 10, DDP_SHARD_BLOCK, unevens[u], N, 1);
		}
}

TEST(view_read_gathers_small_records)
{
	/* 60000 one-byte labels on 4 ranks must not cost a pread per byte */
	struct ddp_shard_layout l = { .fmt = DDP_SHARD_FMT_IDX, .header_bytes = 8, .record_bytes = 1,
				      .item_bytes = 1, .record_count = 60000 };
	struct ddp_shard_spec s = { .mode = DDP_SHARD_STRIDE, .header = UINT64_MAX };
	struct ddp_shard_view v;
	static unsigned char got[15000 + 8];
	real_size = 60008;
	CHECK(ddp_shard_view_init(&s, &l, 1, 4, &v) == DDP_OK);
	reads = 0;
	CHECK_EQ_INT(ddp_shard_view_read(&v, real, mem_pread, NULL, got, sizeof got, 0), 15008);
	CHECK(reads < 40);
	CHECK(got[8 + 100] == real[8 + 1 + 400]);
}

/* ---- rank info from the environment ------------------------------- */

static void clear_env(void)
{
	static const char *const vars[] = {
		"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
		"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
		"SLURM_TASKS_PER_NODE", "SLURM_NODEID", "OMPI_COMM_WORLD_RANK",
		"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
		"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "MASTER_ADDR", "MASTER_PORT",
	};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
}

TEST(rank_sources)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	clear_env();
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK(ri->rank == 0 && ri->world_size == 1 && !strcmp(ri->source, "none"));
	setenv("RANK", "3", 1); setenv("WORLD_SIZE", "4", 1);
	setenv("LOCAL_RANK", "1", 1); setenv("LOCAL_WORLD_SIZE", "2", 1);
	setenv("MASTER_ADDR", "10.0.0.1", 1); setenv("MASTER_PORT", "29500", 1);
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK(ri->rank == 3 && ri->world_size == 4 && ri->local_rank == 1 && ri->local_world_size == 2);
	CHECK_EQ_STR(ri->source, "ddprun");
	CHECK_EQ_STR(ri->master_addr, "10.0.0.1");
	CHECK_EQ_INT(ri->master_port, 29500);
	setenv("TORCHELASTIC_RUN_ID", "x", 1);
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK_EQ_STR(ri->source, "torchrun");
	/* ddprun sets torchrun's TORCHELASTIC_* too, and its store's address */
	setenv("DDP_STORE_ADDR", "127.0.0.1", 1); setenv("DDP_STORE_PORT", "29601", 1);
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK_EQ_STR(ri->source, "ddprun");
	CHECK_EQ_INT(ri->master_port, 29601);
	unsetenv("DDP_STORE_ADDR"); unsetenv("DDP_STORE_PORT");
	clear_env();
	setenv("SLURM_PROCID", "5", 1); setenv("SLURM_NTASKS", "8", 1); setenv("SLURM_LOCALID", "2", 1);
	setenv("SLURM_TASKS_PER_NODE", "2(x1),3(x2)", 1); setenv("SLURM_NODEID", "1", 1);
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK(ri->rank == 5 && ri->world_size == 8 && ri->local_rank == 2 && ri->local_world_size == 3);
	CHECK_EQ_STR(ri->source, "slurm");
	setenv("SLURM_NTASKS_PER_NODE", "4", 1);
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK_EQ_INT(ri->local_world_size, 4);
	clear_env();
	setenv("OMPI_COMM_WORLD_RANK", "1", 1); setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK(ri->rank == 1 && ri->world_size == 2 && ri->local_rank == 1 && ri->local_world_size == 2);
	CHECK_EQ_STR(ri->source, "ompi");
	clear_env();
	setenv("PMI_RANK", "0", 1); setenv("PMI_SIZE", "3", 1);
	CHECK(ddp_rank_init() == DDP_OK);
	CHECK(ri->world_size == 3 && !strcmp(ri->source, "pmi"));
	clear_env();
}

TEST(rank_malformed)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	static const char *const bad[][4] = {
		{ "RANK", "x", "WORLD_SIZE", "2" },
		{ "RANK", "2", "WORLD_SIZE", "2" },
		{ "RANK", "0", "WORLD_SIZE", "0" },
		{ "RANK", "-1", "WORLD_SIZE", "2" },
		{ "RANK", "1", "MASTER_PORT", "2" },  /* WORLD_SIZE missing */
		{ "SLURM_PROCID", "0", "SLURM_NTASKS", "2a" },
	};
	clear_env();
	CHECK(ddp_rank_init() == DDP_OK);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		clear_env();
		setenv(bad[i][0], bad[i][1], 1);
		setenv(bad[i][2], bad[i][3], 1);
		CHECK(ddp_rank_init() == DDP_ERR_INVALID);
		CHECK(ri->world_size == 1); /* the last good record stays */
	}
	clear_env();
	setenv("RANK", "0", 1); setenv("WORLD_SIZE", "2", 1); setenv("MASTER_PORT", "70000", 1);
	CHECK(ddp_rank_init() == DDP_ERR_INVALID);
	setenv("MASTER_PORT", "1", 1);
	setenv("SLURM_TASKS_PER_NODE", "garbage", 1);
	CHECK(ddp_rank_init() == DDP_OK); /* RANK wins; Slurm's not read */
	clear_env();
	setenv("SLURM_PROCID", "0", 1); setenv("SLURM_NTASKS", "2", 1);
	setenv("SLURM_TASKS_PER_NODE", "2(y3)", 1);
	CHECK(ddp_rank_init() == DDP_ERR_INVALID);
	clear_env();
}

/* ---- ddp_shard_check_spec on real files ----------------------------- */

TEST(check_spec_files)
{
	char dir[] = "/tmp/ddp_shard_unitXXXXXX", path[128], spec[192];
	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/data.bin", dir);
	FILE *f = fopen(path, "wb");
	REQUIRE(f);
	memset(file, 1, 1000);
	fwrite(file, 1, 1000, f);
	fclose(f);
	snprintf(spec, sizeof spec, "%s:record=64:header=16", path);
	CHECK(ddp_shard_check_spec(spec, 2, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "size 1000 is not a whole number of 64-byte records after a 16-byte header") != NULL);
	snprintf(spec, sizeof spec, "%s:record=100", path);
	CHECK(ddp_shard_check_spec(spec, 2, err, sizeof err) == DDP_OK);
	snprintf(spec, sizeof spec, "%s/*.bin:record=100:drop", dir);
	CHECK(ddp_shard_check_spec(spec, 3, err, sizeof err) == DDP_OK);
	snprintf(spec, sizeof spec, "%s/*.npy", dir);
	CHECK(ddp_shard_check_spec(spec, 3, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "no file matches") != NULL);
	snprintf(spec, sizeof spec, "%s", path);
	CHECK(ddp_shard_check_spec(spec, 3, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "unknown file format") != NULL);
	snprintf(spec, sizeof spec, "%s:mode=zigzag", path);
	CHECK(ddp_shard_check_spec(spec, 3, err, sizeof err) == DDP_ERR_INVALID);
	unlink(path);
	rmdir(dir);
}

int main(int argc, char **argv) { return check_main(argc, argv); }
