/* SPDX-License-Identifier: MIT
 *
 * ddp_shard_format.c - recognises sharded files' formats from their header
 * and rewrites the record count in a rank's copy of the header.
 *
 * Formats (all offsets in bytes):
 *   DDPREC  the samples' record files: 0 "DDPREC01", 8 u32 header_bytes
 *           (>= 64), 12 u32 record_bytes, 16 u64 record_count, 24 u32 vocab,
 *           28 u32 context, 32..63 reserved, all little-endian; then records.
 *           Count at 16 rewritten.
 *   idx     MNIST: 0 u16 zero, 2 u8 type (08 u8, 09 i8, 0B i16, 0C i32,
 *           0D f32, 0E f64), 3 u8 ndims, then ndims big-endian u32 dims.
 *           A record is one item of the first dimension (a label, an image).
 *           dims[0] rewritten.
 *   npy     "\x93NUMPY", major, minor, header length (u16 for v1, u32 for
 *           v2/v3, little-endian), then a Python dict literal with 'descr',
 *           'fortran_order' and 'shape'.  A record is one row of the first
 *           axis.  The first shape number is rewritten in place; the header
 *           keeps its length (spaces pad it before the closing newline).
 *   tokens  256 little-endian int32: [0] magic 20240520 (uint16 tokens) or
 *           20240801 (uint32 tokens), [1] version, [2] token count; then the
 *           tokens.  A record is one token; [2] rewritten.
 * Every format's header must agree with the file size exactly.
 *
 * Contract: pure functions over caller buffers: no globals, no allocation, no
 * logging; they must survive any input (tests/fuzz/shard).
 */
#include <stdio.h>
#include <string.h>
#include "ddp_shard.h"

#define ERR(...) \
	do { \
		if (err && errlen) \
			snprintf(err, errlen, __VA_ARGS__); \
	} while (0)

static const char *const fmt_names[] = {
	[DDP_SHARD_FMT_UNKNOWN] = "unknown",
	[DDP_SHARD_FMT_RAW] = "raw records",
	[DDP_SHARD_FMT_DDPREC] = "DDPREC01 records",
	[DDP_SHARD_FMT_IDX] = "MNIST idx",
	[DDP_SHARD_FMT_NPY] = "npy",
	[DDP_SHARD_FMT_TOKENS] = "token shard",
};

const char *ddp_shard_fmt_name(enum ddp_shard_fmt fmt)
{
	if ((unsigned)fmt < sizeof fmt_names / sizeof fmt_names[0])
		return fmt_names[fmt];
	return "?";
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Checks header + count * record == size; message names the format. */
static ddp_result check_size(struct ddp_shard_layout *l, char *err, size_t errlen)
{
	uint64_t data, total;

	if (l->record_bytes == 0) {
		ERR("%s header declares records of 0 bytes", ddp_shard_fmt_name(l->fmt));
		return DDP_ERR_INVALID;
	}
	if (__builtin_mul_overflow(l->record_count, l->record_bytes, &data) ||
	    __builtin_add_overflow(data, l->header_bytes, &total) || total != l->file_size) {
		ERR("%s header declares %llu records of %llu bytes after a %llu-byte header, "
		    "but the file has %llu bytes",
		    ddp_shard_fmt_name(l->fmt), (unsigned long long)l->record_count,
		    (unsigned long long)l->record_bytes, (unsigned long long)l->header_bytes,
		    (unsigned long long)l->file_size);
		return DDP_ERR_INVALID;
	}
	return DDP_OK;
}

static ddp_result detect_ddprec(const unsigned char *h, size_t n, struct ddp_shard_layout *l, char *err,
				size_t errlen)
{
	if (n < 64) {
		ERR("DDPREC01 file is shorter than its 64-byte header");
		return DDP_ERR_INVALID;
	}
	l->fmt = DDP_SHARD_FMT_DDPREC;
	l->header_bytes = le32(h + 8);
	l->record_bytes = le32(h + 12);
	l->record_count = le64(h + 16);
	l->item_bytes = l->record_bytes;
	if (l->header_bytes < 64) {
		ERR("DDPREC01 header_bytes %llu is below 64", (unsigned long long)l->header_bytes);
		return DDP_ERR_INVALID;
	}
	/* The rewritten header is a copy of these bytes: the whole header must
	 * be among them (n is min(file size, DDP_SHARD_HEAD_MAX)). */
	if (l->header_bytes > n) {
		if (n < DDP_SHARD_HEAD_MAX)
			ERR("DDPREC01 header_bytes %llu runs past the end of the file",
			    (unsigned long long)l->header_bytes);
		else
			ERR("DDPREC01 header of %llu bytes is larger than the %d bytes supported",
			    (unsigned long long)l->header_bytes, DDP_SHARD_HEAD_MAX);
		return DDP_ERR_INVALID;
	}
	return check_size(l, err, errlen);
}

static ddp_result detect_idx(const unsigned char *h, size_t n, struct ddp_shard_layout *l, char *err,
			     size_t errlen)
{
	static const unsigned char type_size[16] = {
		[0x08] = 1, [0x09] = 1, [0x0B] = 2, [0x0C] = 4, [0x0D] = 4, [0x0E] = 8,
	};
	unsigned ndims = h[3];
	uint64_t rec;

	l->fmt = DDP_SHARD_FMT_IDX;
	rec = type_size[h[2] & 15];
	if (ndims == 0 || n < 4 + 4 * (size_t)ndims) {
		ERR("MNIST idx header with %u dimensions is truncated or empty", ndims);
		return DDP_ERR_INVALID;
	}
	for (unsigned i = 1; i < ndims; i++) {
		if (__builtin_mul_overflow(rec, (uint64_t)be32(h + 4 + 4 * i), &rec)) {
			ERR("MNIST idx dimensions overflow");
			return DDP_ERR_INVALID;
		}
	}
	l->header_bytes = 4 + 4 * (uint64_t)ndims;
	l->record_count = be32(h + 4);
	l->record_bytes = rec;
	l->item_bytes = rec;
	return check_size(l, err, errlen);
}

static ddp_result detect_tokens(const unsigned char *h, size_t n, struct ddp_shard_layout *l, char *err,
				size_t errlen)
{
	int32_t count;

	l->fmt = DDP_SHARD_FMT_TOKENS;
	if (n < 1024) {
		ERR("token shard is shorter than its 1024-byte header");
		return DDP_ERR_INVALID;
	}
	count = (int32_t)le32(h + 8);
	if (count < 0) {
		ERR("token shard declares a negative token count %d", count);
		return DDP_ERR_INVALID;
	}
	l->header_bytes = 1024;
	l->record_bytes = le32(h) == 20240520u ? 2 : 4;
	l->item_bytes = l->record_bytes;
	l->record_count = (uint64_t)count;
	l->natural_mode = DDP_SHARD_BLOCK;
	return check_size(l, err, errlen);
}

/* --- npy: a strict reader of the header dict ---------------------------
 *
 * The header is a Python literal as numpy writes it: one dict with exactly
 * the keys 'descr' (a type string), 'fortran_order' (True/False) and
 * 'shape' (a tuple of integers; one element needs its trailing comma),
 * padded with spaces and ended by '\n' as the header's last byte.
 * Anything else (a dict without '}', no final newline, an unknown or
 * repeated key, text after the dict) is refused: a header we do not fully
 * understand is never sharded by guesswork. */

struct npy_cur {
	const unsigned char *p, *end;
};

static void npy_sp(struct npy_cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

static int npy_eat(struct npy_cur *c, unsigned char ch)
{
	npy_sp(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

/* A quoted string without escapes: [*s, *s + *len) is its body. */
static int npy_string(struct npy_cur *c, const unsigned char **s, size_t *len)
{
	unsigned char q;

	npy_sp(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return 0;
	q = *c->p++;
	*s = c->p;
	while (c->p < c->end && *c->p != q) {
		if (*c->p == '\\' || *c->p == '\n')
			return 0;
		c->p++;
	}
	if (c->p >= c->end)
		return 0;
	*len = (size_t)(c->p - *s);
	c->p++;
	return 1;
}

/* Item size of a numpy type string body such as <f4, |u1, <U8, <M8[ns]. */
static ddp_result npy_itemsize(const unsigned char *p, const unsigned char *end, uint64_t *size)
{
	uint64_t n = 0;
	unsigned char kind;

	if (p < end && strchr("<>|=", *p) && *p)
		p++;
	if (p >= end)
		return DDP_ERR_INVALID;
	kind = *p++;
	if (!strchr("biufcmMSaUV", kind) || !kind)
		return DDP_ERR_INVALID;
	if (p >= end || *p < '0' || *p > '9')
		return DDP_ERR_INVALID;
	while (p < end && *p >= '0' && *p <= '9') {
		if (n > (1ull << 40))
			return DDP_ERR_INVALID;
		n = n * 10 + (uint64_t)(*p++ - '0');
	}
	if (p < end && (kind == 'm' || kind == 'M')) {
		/* a datetime unit: [ns], [D], ... */
		if (*p++ != '[')
			return DDP_ERR_INVALID;
		while (p < end &&
		       ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			p++;
		if (p >= end || *p++ != ']')
			return DDP_ERR_INVALID;
	}
	if (p != end)
		return DDP_ERR_INVALID;
	if (kind == 'U')
		n *= 4;
	*size = n;
	return n ? DDP_OK : DDP_ERR_INVALID;
}

static ddp_result detect_npy(const unsigned char *h, size_t n, struct ddp_shard_layout *l, char *err,
			     size_t errlen)
{
	const unsigned char *end, *s;
	uint64_t hlen, pre, item = 0, rows = 0, rec = 1;
	int dims = 0, fortran = 0;
	unsigned seen = 0;
	struct npy_cur c;
	const char *why = NULL;
	size_t sl;

	l->fmt = DDP_SHARD_FMT_NPY;
	if (n < 10 || h[6] < 1 || h[6] > 3 || (h[6] >= 2 && n < 12)) {
		ERR("npy header is truncated or has an unknown version %u", n > 6 ? (unsigned)h[6] : 0u);
		return DDP_ERR_INVALID;
	}
	pre = h[6] == 1 ? 10 : 12;
	hlen = h[6] == 1 ? (uint64_t)h[8] | (uint64_t)h[9] << 8 : le32(h + 8);
	if (pre + hlen > n) {
		if (pre + hlen > DDP_SHARD_HEAD_MAX)
			ERR("npy header of %llu bytes is longer than the %d bytes ddprun reads",
			    (unsigned long long)hlen, DDP_SHARD_HEAD_MAX);
		else
			ERR("npy header of %llu bytes runs past the end of the file", (unsigned long long)hlen);
		return DDP_ERR_INVALID;
	}
	end = h + pre + hlen;
	if (hlen == 0 || end[-1] != '\n') {
		ERR("npy header does not end with a newline; it is not a header numpy wrote");
		return DDP_ERR_INVALID;
	}
	c.p = h + pre;
	c.end = end - 1; /* the dict and its padding, before the final newline */
	if (!npy_eat(&c, '{')) {
		why = "it does not start with '{'";
		goto bad;
	}
	while (!npy_eat(&c, '}')) {
		const unsigned char *key;
		size_t kl;

		if (!npy_string(&c, &key, &kl) || !npy_eat(&c, ':')) {
			why = "expected a quoted key and ':' (or a closing '}')";
			goto bad;
		}
		npy_sp(&c);
		if (kl == 5 && memcmp(key, "descr", 5) == 0 && !(seen & 1)) {
			seen |= 1;
			if (c.p < c.end && *c.p == '[') {
				ERR("npy header has a structured 'descr' (not supported); give record=BYTES");
				return DDP_ERR_INVALID;
			}
			if (!npy_string(&c, &s, &sl) || npy_itemsize(s, s + sl, &item) != DDP_OK) {
				ERR("npy header has no plain 'descr' (object dtypes are not supported); "
				    "give record=BYTES");
				return DDP_ERR_INVALID;
			}
		} else if (kl == 13 && memcmp(key, "fortran_order", 13) == 0 && !(seen & 2)) {
			seen |= 2;
			if (c.end - c.p >= 4 && memcmp(c.p, "True", 4) == 0) {
				fortran = 1;
				c.p += 4;
			} else if (c.end - c.p >= 5 && memcmp(c.p, "False", 5) == 0) {
				c.p += 5;
			} else {
				ERR("npy header has no valid 'fortran_order'");
				return DDP_ERR_INVALID;
			}
		} else if (kl == 5 && memcmp(key, "shape", 5) == 0 && !(seen & 4)) {
			int comma = 0;
			seen |= 4;
			if (!npy_eat(&c, '('))
				goto bad_shape;
			while (!npy_eat(&c, ')')) {
				const unsigned char *digits;
				uint64_t v = 0;

				if (dims && !comma)
					goto bad_shape;
				npy_sp(&c);
				digits = c.p;
				while (c.p < c.end && *c.p >= '0' && *c.p <= '9') {
					if (v > (1ull << 50))
						goto bad_shape;
					v = v * 10 + (uint64_t)(*c.p++ - '0');
				}
				if (c.p == digits)
					goto bad_shape;
				if (dims == 0) {
					rows = v;
					l->count_off = (uint32_t)(digits - h);
					l->count_len = (uint32_t)(c.p - digits);
				} else if (__builtin_mul_overflow(rec, v, &rec)) {
					goto bad_shape;
				}
				/* numpy may write Python 2 longs: "3L" */
				if (c.p < c.end && *c.p == 'L')
					c.p++;
				dims++;
				comma = npy_eat(&c, ',');
			}
			if (dims == 1 && !comma)
				goto bad_shape; /* "(3)" is the integer 3, not a tuple */
		} else {
			ERR("npy header has an unknown or repeated key '%.*s'", (int)(kl > 32 ? 32 : kl),
			    (const char *)key);
			return DDP_ERR_INVALID;
		}
		if (!npy_eat(&c, ',')) {
			if (!npy_eat(&c, '}')) {
				why = "expected ',' or '}' after a value";
				goto bad;
			}
			break;
		}
	}
	npy_sp(&c);
	if (c.p != c.end) {
		why = "text after the closing '}'";
		goto bad;
	}
	if (seen != 7) {
		ERR("npy header lacks '%s'", !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
		return DDP_ERR_INVALID;
	}
	if (fortran) {
		ERR("npy array is stored in Fortran order; rows are not contiguous, save it "
		    "with numpy.ascontiguousarray");
		return DDP_ERR_INVALID;
	}
	if (dims == 0) {
		ERR("npy array is 0-dimensional; there are no rows to shard");
		return DDP_ERR_INVALID;
	}
	if (__builtin_mul_overflow(rec, item, &rec))
		goto bad_shape;
	l->header_bytes = pre + hlen;
	l->record_count = rows;
	l->record_bytes = rec;
	l->item_bytes = rec;
	return check_size(l, err, errlen);
bad:
	ERR("npy header is malformed at byte %llu: %s", (unsigned long long)(c.p - h), why);
	return DDP_ERR_INVALID;
bad_shape:
	ERR("npy header has a malformed 'shape'");
	return DDP_ERR_INVALID;
}

ddp_result ddp_shard_format_detect(const unsigned char *head, size_t head_len, uint64_t file_size,
				   struct ddp_shard_layout *out, char *err, size_t errlen)
{
	struct ddp_shard_layout l;

	memset(&l, 0, sizeof l);
	l.file_size = file_size;
	l.natural_mode = DDP_SHARD_STRIDE;
	if (head_len > file_size)
		head_len = (size_t)file_size;
	*out = l;
	if (head_len >= 8 && memcmp(head, "DDPREC01", 8) == 0)
		return detect_ddprec(head, head_len, out, err, errlen);
	if (head_len >= 6 && memcmp(head, "\x93NUMPY", 6) == 0)
		return detect_npy(head, head_len, out, err, errlen);
	if (head_len >= 4 && (le32(head) == 20240520u || le32(head) == 20240801u))
		return detect_tokens(head, head_len, out, err, errlen);
	if (head_len >= 4 && head[0] == 0 && head[1] == 0 &&
	    (head[2] == 0x08 || head[2] == 0x09 || (head[2] >= 0x0B && head[2] <= 0x0E)) && head[3] >= 1 &&
	    head[3] <= 8)
		return detect_idx(head, head_len, out, err, errlen);
	return DDP_OK;
}

ddp_result ddp_shard_format_rewrite(const struct ddp_shard_layout *l, const unsigned char *head,
				    uint64_t records, unsigned char *out)
{
	uint64_t items;

	if (l->item_bytes == 0 || l->record_bytes % l->item_bytes != 0 ||
	    __builtin_mul_overflow(records, l->record_bytes / l->item_bytes, &items))
		return DDP_ERR_INTERNAL;
	memcpy(out, head, (size_t)l->header_bytes);
	switch (l->fmt) {
	case DDP_SHARD_FMT_DDPREC:
		for (int i = 0; i < 8; i++)
			out[16 + i] = (unsigned char)(items >> (8 * i));
		return DDP_OK;
	case DDP_SHARD_FMT_IDX:
		if (items > UINT32_MAX)
			return DDP_ERR_INTERNAL;
		for (int i = 0; i < 4; i++)
			out[4 + i] = (unsigned char)(items >> (24 - 8 * i));
		return DDP_OK;
	case DDP_SHARD_FMT_TOKENS:
		if (items > INT32_MAX)
			return DDP_ERR_INTERNAL;
		put_le32(out + 8, (uint32_t)items);
		return DDP_OK;
	case DDP_SHARD_FMT_NPY: {
		char digits[24];
		int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)items);
		uint64_t off = l->count_off, len = l->count_len, hb = l->header_bytes;
		uint64_t tail, pad;

		if (nd <= 0 || (uint64_t)nd > len || off + len > hb)
			return DDP_ERR_INTERNAL;
		pad = len - (uint64_t)nd;
		memcpy(out + off, digits, (size_t)nd);
		/* shift the rest left by pad, keeping a final '\n' last */
		tail = hb - (off + len);
		if (tail > 0 && head[hb - 1] == '\n')
			tail--;
		memmove(out + off + nd, head + off + len, (size_t)tail);
		memset(out + off + nd + tail, ' ', (size_t)pad);
		return DDP_OK;
	}
	case DDP_SHARD_FMT_RAW:
	case DDP_SHARD_FMT_UNKNOWN: return DDP_OK;
	}
	return DDP_ERR_INTERNAL;
}
