/* SPDX-License-Identifier: MIT
 *
 * ddp_fatbin.c - fatbin containers and cudart wrappers: classification,
 * container and entry walking, SM selection, decompression, and the top of
 * ddp_module_parse (which hands ELF to ddp_cubin.c and PTX to ddp_ptx.c).
 *
 * Layout, as verified on nvcc 13.0 output (docs/fatbin-reader.md has the
 * full tables):
 *   container: u32 magic 0xBA55ED50, u16 version (1), u16 header size (16),
 *              u64 bytes of entries that follow.  Containers may be
 *              concatenated.
 *   entry:     u16 kind (1 PTX, 2 ELF, 8 LTO-IR), u16 (0x0101), u32 header
 *              size (64, 72, 80, 96, 112, 120, 128 seen), u64 payload size
 *              (padded to 8), u32 exact compressed size (0 when stored),
 *              u32 options offset, u16 minor, u16 major, u32 arch, u32 name
 *              offset, u32 name length, u64 flags (0x2000 LZ4 block,
 *              0x8000 zstd), u64, u64 decompressed size (0 when stored).
 *
 * Contract: pure functions of their input; any thread; no locks, no global
 * state.  Never reads outside [image, image + len) when len != 0; with
 * len == 0 it reads only what the headers declare (and only the first
 * container, see ddp_fatbin_entries).  Malformed input gives DDP_ERR_INVALID
 * and one line in err, never a crash.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "ddp_bytes.h"
#include "ddp_fatbin.h"
#include "ddp_log.h"

#define FB_CONTAINER_HDR 16u       /* smallest container header            */
#define FB_CONTAINER_HDR_MAX 4096u /* a larger one is corrupt              */
#define FB_ENTRY_HDR 64u           /* smallest entry header                */
#define FB_KIND_PTX 1u
#define FB_KIND_ELF 2u
#define FB_FLAG_LZ4 0x2000u
#define FB_FLAG_ZSTD 0x8000u
#define WRAPPER_MIN_BYTES 16u /* magic, version, data pointer          */

ddp_result ddp_fatbin_fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return DDP_ERR_INVALID;
}

/* ---- classification ---------------------------------------------------- */

/* Skips blanks and C/C++ comments from p; stops at end (NULL: at NUL). */
static const char *ptx_skip_blank(const char *p, const char *end)
{
	for (;;) {
		while ((end ? p < end : 1) && *p && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if ((end ? end - p >= 2 : (p[0] && p[1])) && p[0] == '/' && p[1] == '/') {
			while ((end ? p < end : 1) && *p && *p != '\n')
				p++;
			continue;
		}
		if ((end ? end - p >= 2 : (p[0] && p[1])) && p[0] == '/' && p[1] == '*') {
			p += 2;
			while ((end ? end - p >= 2 : (p[0] && p[1])) && !(p[0] == '*' && p[1] == '/'))
				p++;
			if (end ? end - p >= 2 : (p[0] && p[1]))
				p += 2;
			else
				return end ? end : p + strlen(p);
			continue;
		}
		return p;
	}
}

static bool looks_like_ptx(const char *text, size_t len)
{
	const char *end = len ? text + len : NULL;
	const char *p = ptx_skip_blank(text, end);
	static const char *const starts[] = { ".version", ".target" };
	for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
		size_t n = strlen(starts[i]);
		if (end && (size_t)(end - p) < n)
			continue;
		if (strncmp(p, starts[i], n) == 0)
			return true;
	}
	return false;
}

enum ddp_image_kind ddp_image_kind(const void *image, size_t len)
{
	const uint8_t *p = image;
	uint8_t b[4];
	size_t n = 0;

	if (!image)
		return DDP_IMAGE_UNKNOWN;
	/* Byte by byte, stopping at NUL: none of the magics holds a zero byte,
	 * and a short PTX string must not be read past its end. */
	while (n < 4 && (len == 0 || n < len)) {
		b[n] = p[n];
		if (!b[n])
			break;
		n++;
	}
	if (n == 4) {
		uint32_t magic = ddp_rd32(b);
		if (magic == DDP_FATBIN_MAGIC)
			return DDP_IMAGE_FATBIN;
		if (magic == DDP_FATBIN_WRAPPER_MAGIC)
			return DDP_IMAGE_WRAPPER;
		if (memcmp(b, "\177ELF", 4) == 0)
			return DDP_IMAGE_CUBIN;
	}
	if (looks_like_ptx(image, len))
		return DDP_IMAGE_PTX;
	return DDP_IMAGE_UNKNOWN;
}

/* ---- containers and entries -------------------------------------------- */

struct fb_container {
	size_t offset;          /* of the container header in the image      */
	size_t total;           /* header + entries                          */
	const uint8_t *entries; /* first entry header                        */
	size_t entries_size;    /* declared size of the entries              */
};

/* Reads the container header at img + off; avail is what remains of the
 * image (0: unknown length). */
static ddp_result fb_container_at(const uint8_t *img, size_t off, size_t avail, struct fb_container *c,
				  char *err, size_t errlen)
{
	const uint8_t *p = img + off;
	if (avail && avail < FB_CONTAINER_HDR)
		return ddp_fatbin_fail(
			err, errlen,
			"fatbin container at byte %zu is truncated: %zu of its 16 header bytes present", off,
			avail);
	if (ddp_rd32(p) != DDP_FATBIN_MAGIC)
		return ddp_fatbin_fail(err, errlen, "fatbin container at byte %zu has magic 0x%08x, not 0x%08x",
				       off, ddp_rd32(p), DDP_FATBIN_MAGIC);
	uint16_t hs = ddp_rd16(p + 6);
	uint64_t size = ddp_rd64(p + 8);
	if (hs < FB_CONTAINER_HDR || hs > FB_CONTAINER_HDR_MAX)
		return ddp_fatbin_fail(
			err, errlen,
			"fatbin container at byte %zu declares a header size of %u bytes (expected 16)", off,
			hs);
	if (size > DDP_FATBIN_MAX_SIZE)
		return ddp_fatbin_fail(
			err, errlen, "fatbin container at byte %zu declares %llu bytes of entries (limit %zu)",
			off, (unsigned long long)size, DDP_FATBIN_MAX_SIZE);
	if (avail && (hs > avail || size > avail - hs))
		return ddp_fatbin_fail(
			err, errlen, "fatbin container at byte %zu declares %llu bytes but only %zu are given",
			off, (unsigned long long)(hs + size), avail);
	c->offset = off;
	c->total = hs + (size_t)size;
	c->entries = p + hs;
	c->entries_size = (size_t)size;
	return DDP_OK;
}

/* Reads one entry header at c->entries + pos into *e; *next is the position
 * of the following entry. */
static ddp_result fb_entry_at(const struct fb_container *c, size_t pos, struct ddp_fatbin_entry *e,
			      size_t *next, char *err, size_t errlen)
{
	const uint8_t *p = c->entries + pos;
	size_t avail = c->entries_size - pos;
	size_t at = c->offset + (c->total - c->entries_size) + pos; /* for messages */

	if (avail < FB_ENTRY_HDR)
		return ddp_fatbin_fail(
			err, errlen,
			"fatbin entry at byte %zu is truncated: %zu of its 64 header bytes present", at, avail);
	uint32_t hs = ddp_rd32(p + 4);
	uint64_t psize = ddp_rd64(p + 8);
	uint32_t csize = ddp_rd32(p + 16);
	uint64_t flags = ddp_rd64(p + 40);
	uint64_t dsize = ddp_rd64(p + 56);
	if (hs < FB_ENTRY_HDR || hs > avail)
		return ddp_fatbin_fail(
			err, errlen,
			"fatbin entry at byte %zu declares a header size of %u bytes (64..%zu possible)", at,
			hs, avail);
	if (psize > avail - hs)
		return ddp_fatbin_fail(
			err, errlen,
			"fatbin entry at byte %zu declares a %llu-byte payload but only %zu bytes remain in its container",
			at, (unsigned long long)psize, avail - hs);
	memset(e, 0, sizeof *e);
	e->kind = ddp_rd16(p);
	e->arch = ddp_rd32(p + 28);
	e->flags = flags;
	e->payload = p + hs;
	if (flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD)) {
		/* The payload is padded to 8 bytes; the u32 at 16 is the exact
		 * compressed size. */
		e->payload_size = (csize && csize <= psize) ? csize : (size_t)psize;
		e->decompressed_size = dsize > SIZE_MAX ? SIZE_MAX : (size_t)dsize;
	} else {
		e->payload_size = (size_t)psize;
		e->decompressed_size = 0;
	}
	*next = pos + hs + (size_t)psize;
	return DDP_OK;
}

/* Lists the entries of one container (n counts them all; at most max kept). */
static ddp_result fb_container_entries(const struct fb_container *c, struct ddp_fatbin_entry *entries,
				       size_t max, size_t *n, char *err, size_t errlen)
{
	size_t pos = 0;
	while (pos < c->entries_size) {
		struct ddp_fatbin_entry e;
		size_t next = 0;
		DDP_CHECK(fb_entry_at(c, pos, &e, &next, err, errlen));
		if (*n < max)
			entries[*n] = e;
		(*n)++;
		pos = next;
	}
	return DDP_OK;
}

/* Steps to the container after the one ending at *off: true when there is
 * one.  With len == 0 only the first container is read (nothing says how
 * far the memory goes); with len != 0 containers follow while the next 4
 * bytes are the magic, and anything else (padding, a NUL) ends the image. */
static bool fb_more(const uint8_t *img, size_t len, size_t off)
{
	return len && len - off >= FB_CONTAINER_HDR && ddp_rd32(img + off) == DDP_FATBIN_MAGIC;
}

ddp_result ddp_fatbin_entries(const void *image, size_t len, struct ddp_fatbin_entry *entries, size_t max,
			      size_t *n, char *err, size_t errlen)
{
	const uint8_t *img = image;
	size_t off = 0;
	*n = 0;
	if (!image)
		return ddp_fatbin_fail(err, errlen, "fatbin image pointer is NULL");
	do {
		struct fb_container c;
		DDP_CHECK(fb_container_at(img, off, len ? len - off : 0, &c, err, errlen));
		DDP_CHECK(fb_container_entries(&c, entries, max, n, err, errlen));
		off += c.total;
	} while (fb_more(img, len, off));
	return DDP_OK;
}

ddp_result ddp_fatbin_entry_data(const struct ddp_fatbin_entry *e, uint8_t **data, size_t *size, char *err,
				 size_t errlen)
{
	uint8_t *buf;
	size_t out;

	*data = NULL;
	*size = 0;
	if (!e || (!e->payload && e->payload_size))
		return ddp_fatbin_fail(err, errlen, "fatbin entry has no payload");
	if ((e->flags & FB_FLAG_LZ4) && (e->flags & FB_FLAG_ZSTD))
		return ddp_fatbin_fail(
			err, errlen, "fatbin entry (sm_%u) claims both LZ4 and zstd compression (flags 0x%llx)",
			e->arch, (unsigned long long)e->flags);
	if (!(e->flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD))) {
		if (e->payload_size > DDP_FATBIN_MAX_SIZE)
			return ddp_fatbin_fail(err, errlen,
					       "fatbin entry payload of %zu bytes is over the %zu limit",
					       e->payload_size, DDP_FATBIN_MAX_SIZE);
		buf = malloc(e->payload_size + 1);
		if (!buf)
			return DDP_ERR_NOMEM;
		if (e->payload_size)
			memcpy(buf, e->payload, e->payload_size);
		buf[e->payload_size] = 0;
		*data = buf;
		*size = e->payload_size;
		return DDP_OK;
	}

	out = e->decompressed_size;
	if (out == 0 || out > DDP_FATBIN_MAX_SIZE)
		return ddp_fatbin_fail(
			err, errlen,
			"compressed fatbin entry (sm_%u) declares a decompressed size of %zu bytes (1..%zu allowed)",
			e->arch, out, DDP_FATBIN_MAX_SIZE);
	if (e->flags & FB_FLAG_ZSTD) {
		size_t fsz = ZSTD_findFrameCompressedSize(e->payload, e->payload_size);
		if (ZSTD_isError(fsz))
			return ddp_fatbin_fail(err, errlen,
					       "zstd payload of fatbin entry (sm_%u) is corrupt: %s", e->arch,
					       ZSTD_getErrorName(fsz));
		unsigned long long fcs = ZSTD_getFrameContentSize(e->payload, fsz);
		if (fcs == ZSTD_CONTENTSIZE_ERROR || (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != out))
			return ddp_fatbin_fail(
				err, errlen,
				"zstd payload of fatbin entry (sm_%u) holds %llu bytes, the entry header says %zu",
				e->arch, fcs, out);
		buf = malloc(out + 1);
		if (!buf)
			return DDP_ERR_NOMEM;
		size_t r = ZSTD_decompress(buf, out, e->payload, fsz);
		if (ZSTD_isError(r) || r != out) {
			free(buf);
			return ddp_fatbin_fail(
				err, errlen,
				"zstd payload of fatbin entry (sm_%u) does not decompress to %zu bytes: %s",
				e->arch, out, ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short output");
		}
	} else {
		/* An LZ4 block expands at most ~255x; refuse before allocating. */
		if (e->payload_size > INT_MAX || out > INT_MAX || out / 255 > e->payload_size + 16)
			return ddp_fatbin_fail(
				err, errlen,
				"LZ4 fatbin entry (sm_%u): %zu compressed bytes cannot hold %zu bytes",
				e->arch, e->payload_size, out);
		buf = malloc(out + 1);
		if (!buf)
			return DDP_ERR_NOMEM;
		int r = LZ4_decompress_safe((const char *)e->payload, (char *)buf, (int)e->payload_size,
					    (int)out);
		if (r < 0 || (size_t)r != out) {
			free(buf);
			return ddp_fatbin_fail(
				err, errlen,
				"LZ4 payload of fatbin entry (sm_%u) does not decompress to %zu bytes",
				e->arch, out);
		}
	}
	buf[out] = 0;
	*data = buf;
	*size = out;
	return DDP_OK;
}

/* ---- kernel list -------------------------------------------------------- */

void ddp_kernel_info_clear(struct ddp_kernel_info *k)
{
	free(k->name);
	free(k->demangled);
	free(k->params);
	memset(k, 0, sizeof *k);
}

ddp_result ddp_module_add_kernel(struct ddp_module_info *m, struct ddp_kernel_info *k)
{
	/* Capacity is implicit: the next power of two >= nkernels. */
	size_t n = m->nkernels;
	if (n == 0 || (n & (n - 1)) == 0) {
		size_t cap = n ? 2 * n : 8;
		struct ddp_kernel_info *nk = realloc(m->kernels, cap * sizeof *nk);
		if (!nk)
			return DDP_ERR_NOMEM;
		m->kernels = nk;
	}
	m->kernels[n] = *k;
	m->nkernels = n + 1;
	memset(k, 0, sizeof *k);
	return DDP_OK;
}

void ddp_module_info_free(struct ddp_module_info *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nkernels; i++)
		ddp_kernel_info_clear(&m->kernels[i]);
	free(m->kernels);
	for (size_t i = 0; i < m->nglobals; i++)
		free(m->globals[i].name);
	free(m->globals);
	memset(m, 0, sizeof *m);
}

static int global_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ddp_global_info *)a)->name, ((const struct ddp_global_info *)b)->name);
}

/* Sorts the device variables by name and drops repeated names. */
static void globals_finish(struct ddp_module_info *m)
{
	size_t kept = 0;
	if (m->nglobals > 1)
		qsort(m->globals, m->nglobals, sizeof *m->globals, global_cmp);
	for (size_t i = 0; i < m->nglobals; i++) {
		if (kept && strcmp(m->globals[kept - 1].name, m->globals[i].name) == 0) {
			free(m->globals[i].name);
			continue;
		}
		m->globals[kept++] = m->globals[i];
	}
	m->nglobals = kept;
}

const struct ddp_global_info *ddp_module_find_global(const struct ddp_module_info *m, const char *name)
{
	if (!m || !name || !m->nglobals)
		return NULL;
	struct ddp_global_info key = { (char *)name, 0, 0 };
	return bsearch(&key, m->globals, m->nglobals, sizeof *m->globals, global_cmp);
}

/* Sorts by name (keeping the first of equal names: an earlier container
 * wins) and fills the demangled names. */
static ddp_result module_finish(struct ddp_module_info *m)
{
	size_t n = m->nkernels, kept = 0;
	globals_finish(m);
	if (n == 0)
		return DDP_OK;
	size_t *idx = malloc(n * sizeof *idx);
	size_t *tmp = malloc(n * sizeof *tmp);
	struct ddp_kernel_info *sorted = malloc(n * sizeof *sorted);
	if (!idx || !tmp || !sorted) {
		free(idx);
		free(tmp);
		free(sorted);
		return DDP_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	/* Bottom-up merge sort of the indices: stable (so the first of equal
	 * names stays first) and, unlike qsort, needs no global context. */
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, o = lo;
			while (a < mid && b < hi)
				tmp[o++] = strcmp(m->kernels[idx[a]].name, m->kernels[idx[b]].name) <= 0
						   ? idx[a++]
						   : idx[b++];
			while (a < mid)
				tmp[o++] = idx[a++];
			while (b < hi)
				tmp[o++] = idx[b++];
		}
		memcpy(idx, tmp, n * sizeof *idx);
	}
	free(tmp);
	for (size_t i = 0; i < n; i++) {
		struct ddp_kernel_info *k = &m->kernels[idx[i]];
		if (kept && strcmp(sorted[kept - 1].name, k->name) == 0) {
			ddp_kernel_info_clear(k);
			continue;
		}
		sorted[kept++] = *k;
	}
	free(idx);
	free(m->kernels);
	m->kernels = sorted;
	m->nkernels = kept;
	for (size_t i = 0; i < kept; i++) {
		struct ddp_kernel_info *k = &m->kernels[i];
		k->demangled = ddp_demangle(k->name);
		if (!k->demangled)
			k->demangled = strdup(k->name);
		if (!k->demangled)
			return DDP_ERR_NOMEM;
	}
	return DDP_OK;
}

const struct ddp_kernel_info *ddp_module_find(const struct ddp_module_info *m, const char *name)
{
	if (!m || !name)
		return NULL;
	size_t lo = 0, hi = m->nkernels;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, m->kernels[mid].name);
		if (c == 0)
			return &m->kernels[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* ---- SM selection ------------------------------------------------------- */

/* Index of the entry to load for want_arch, or -1.  SASS runs on the same
 * major with minor <= the device's; PTX of any version <= the device's can be
 * JIT-compiled.  want 0: the highest ELF (else the highest PTX). */
static long fb_select(const struct ddp_fatbin_entry *e, size_t n, uint32_t want)
{
	long best = -1;
	for (size_t i = 0; i < n; i++) {
		if (e[i].kind != FB_KIND_ELF)
			continue;
		if (want && (e[i].arch / 10 != want / 10 || e[i].arch > want))
			continue;
		if (best < 0 || e[i].arch > e[best].arch)
			best = (long)i;
	}
	if (best >= 0)
		return best;
	for (size_t i = 0; i < n; i++) {
		if (e[i].kind != FB_KIND_PTX || (want && e[i].arch > want))
			continue;
		if (best < 0 || e[i].arch > e[best].arch)
			best = (long)i;
	}
	return best;
}

static ddp_result fb_no_match(const struct ddp_fatbin_entry *e, size_t n, uint32_t want, size_t coff,
			      char *err, size_t errlen)
{
	char list[256];
	size_t used = 0;
	list[0] = 0;
	for (size_t i = 0; i < n && used < sizeof list - 32; i++) {
		const char *what = e[i].kind == FB_KIND_ELF   ? "sm_"
				   : e[i].kind == FB_KIND_PTX ? "compute_"
							      : NULL;
		int w = what ? snprintf(list + used, sizeof list - used, " %s%u", what, e[i].arch)
			     : snprintf(list + used, sizeof list - used, " kind%u(sm_%u)", e[i].kind,
					e[i].arch);
		if (w > 0)
			used += (size_t)w < sizeof list - used ? (size_t)w : sizeof list - used - 1;
	}
	return ddp_fatbin_fail(
		err, errlen,
		"fatbin container at byte %zu has no entry for sm_%u (SASS of the same major and minor <= %u, or PTX <= compute_%u); it holds:%s",
		coff, want, want % 10, want, n ? list : " nothing");
}

/* Loads one chosen entry into m. */
static ddp_result fb_load_entry(const struct ddp_fatbin_entry *e, struct ddp_module_info *m, char *err,
				size_t errlen)
{
	uint8_t *data;
	size_t size;
	ddp_result rc;
	DDP_CHECK(ddp_fatbin_entry_data(e, &data, &size, err, errlen));
	if (e->kind == FB_KIND_ELF) {
		size_t need;
		rc = ddp_cubin_size(data, size, &need, err, errlen);
		if (rc == DDP_OK)
			rc = ddp_cubin_parse(data, need, m, err, errlen);
	} else {
		rc = ddp_ptx_parse((const char *)data, size, m, err, errlen);
	}
	free(data);
	return rc;
}

static ddp_result parse_fatbin(const uint8_t *img, size_t len, uint32_t want, struct ddp_module_info *m,
			       char *err, size_t errlen)
{
	size_t off = 0;
	bool first = true;
	ddp_result rc = DDP_OK;
	do {
		struct fb_container c;
		size_t n = 0, n2 = 0;
		DDP_CHECK(fb_container_at(img, off, len ? len - off : 0, &c, err, errlen));
		DDP_CHECK(fb_container_entries(&c, NULL, 0, &n, err, errlen));
		struct ddp_fatbin_entry *e = calloc(n ? n : 1, sizeof *e);
		if (!e)
			return DDP_ERR_NOMEM;
		rc = fb_container_entries(&c, e, n, &n2, err, errlen);
		if (rc == DDP_OK) {
			long sel = fb_select(e, n, want);
			if (sel < 0) {
				rc = fb_no_match(e, n, want, off, err, errlen);
			} else {
				uint32_t arch_before = m->arch;
				rc = fb_load_entry(&e[sel], m, err, errlen);
				/* The module's arch is the first container's
				 * choice: the fatbin header's, 0 for PTX. */
				m->arch = first ? (e[sel].kind == FB_KIND_ELF ? e[sel].arch : 0) : arch_before;
			}
		}
		free(e);
		if (rc != DDP_OK)
			return rc;
		first = false;
		off += c.total;
	} while (fb_more(img, len, off));
	m->image_size = off;
	return DDP_OK;
}

static ddp_result parse_wrapper(const uint8_t *img, size_t len, uint32_t want, struct ddp_module_info *m,
				char *err, size_t errlen)
{
	if (len && len < WRAPPER_MIN_BYTES)
		return ddp_fatbin_fail(err, errlen, "fatbin wrapper is truncated: %zu of its 16 bytes given",
				       len);
	uint32_t version = ddp_rd32(img + 4);
	const uint8_t *data;
	memcpy(&data, img + 8, sizeof data);
	if (version != 1 && version != 2)
		return ddp_fatbin_fail(err, errlen, "fatbin wrapper has version %u (1 or 2 expected)", version);
	if (!data)
		return ddp_fatbin_fail(err, errlen, "fatbin wrapper's data pointer is NULL");
	size_t dlen = 0;
	if (len) {
		/* With a length, the data must lie inside it (the contract: never
		 * read outside [image, image + len)).  Callers that hold a real
		 * cudart wrapper pass len 0. */
		uintptr_t lo = (uintptr_t)img, hi = lo + len, d = (uintptr_t)data;
		if (d < lo || d >= hi)
			return ddp_fatbin_fail(
				err, errlen,
				"fatbin wrapper's data pointer lies outside the %zu bytes given (pass length 0 for a wrapper)",
				len);
		dlen = (size_t)(hi - d);
	}
	if (ddp_image_kind(data, dlen) != DDP_IMAGE_FATBIN)
		return ddp_fatbin_fail(err, errlen,
				       "fatbin wrapper's data does not start with the fatbin magic 0x%08x",
				       DDP_FATBIN_MAGIC);
	return parse_fatbin(data, dlen, want, m, err, errlen);
}

ddp_result ddp_module_parse(const void *image, size_t len, uint32_t want_arch, struct ddp_module_info *out,
			    char *err, size_t errlen)
{
	const uint8_t *img = image;
	ddp_result rc;
	char dummy[8];

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof dummy;
	}
	err[0] = 0;
	memset(out, 0, sizeof *out);
	if (!image)
		return ddp_fatbin_fail(err, errlen, "module image pointer is NULL");
	if (len > DDP_FATBIN_MAX_SIZE)
		len = DDP_FATBIN_MAX_SIZE; /* only the declared sizes are read anyway */
	out->kind = ddp_image_kind(image, len);
	switch (out->kind) {
	case DDP_IMAGE_FATBIN: rc = parse_fatbin(img, len, want_arch, out, err, errlen); break;
	case DDP_IMAGE_WRAPPER: rc = parse_wrapper(img, len, want_arch, out, err, errlen); break;
	case DDP_IMAGE_CUBIN: {
		size_t size;
		rc = ddp_cubin_size(img, len, &size, err, errlen);
		if (rc == DDP_OK) {
			out->image_size = size;
			rc = ddp_cubin_parse(img, size, out, err, errlen);
		}
		break;
	}
	case DDP_IMAGE_PTX: {
		size_t n = len ? strnlen(image, len) : strlen(image);
		out->image_size = (len && n == len) ? n : n + 1;
		rc = ddp_ptx_parse(image, n, out, err, errlen);
		break;
	}
	default: {
		uint8_t b[4] = { 0, 0, 0, 0 };
		for (size_t i = 0; i < 4 && (len == 0 || i < len); i++) {
			b[i] = img[i];
			if (!b[i])
				break;
		}
		rc = ddp_fatbin_fail(
			err, errlen,
			"module image is neither a fatbin, a fatbin wrapper, a cubin nor PTX text (first bytes %02x %02x %02x %02x)",
			b[0], b[1], b[2], b[3]);
		break;
	}
	}
	if (rc == DDP_OK)
		rc = module_finish(out);
	if (rc != DDP_OK) {
		enum ddp_image_kind kind = out->kind;
		if (rc == DDP_ERR_NOMEM && !err[0])
			snprintf(err, errlen, "out of memory while reading a module image");
		if (!err[0])
			snprintf(err, errlen, "module image is malformed");
		ddp_module_info_free(out);
		out->kind = kind;
		DDP_DEBUG(KREG, "module image rejected: %s", err);
		return rc;
	}
	DDP_DEBUG(KREG, "module image: kind %d, sm_%u, %zu bytes, %zu kernels", out->kind, out->arch,
		  out->image_size, out->nkernels);
	return DDP_OK;
}
