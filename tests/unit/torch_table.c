/* SPDX-License-Identifier: MIT
 *
 * torch_table.c - PyTorch's real kernel table for the tests (torch_table.h).
 *
 * Contract: loads once, keeps everything until exit; a malformed line is an
 * error naming its line number.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "torch_table.h"

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "cannot size %s", path);
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		snprintf(err, errlen, "cannot read %s", path);
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int cmp_mangled(const void *a, const void *b)
{
	return strcmp(((const struct torch_kernel *)a)->mangled, ((const struct torch_kernel *)b)->mangled);
}

int torch_table_load(const char *path, struct torch_table *t, char *err, size_t errlen)
{
	size_t zlen, len;
	char *z, *text;
	unsigned long long full;

	memset(t, 0, sizeof *t);
	if (!path)
		path = TORCH_TABLE_PATH;
	z = read_all(path, &zlen, err, errlen);
	if (!z)
		return -1;
	full = ZSTD_getFrameContentSize(z, zlen);
	if (full == ZSTD_CONTENTSIZE_UNKNOWN || full == ZSTD_CONTENTSIZE_ERROR || full > (1ull << 31)) {
		snprintf(err, errlen, "%s: not a zstd frame with a known size", path);
		free(z);
		return -1;
	}
	text = malloc((size_t)full + 1);
	if (!text) {
		free(z);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	len = ZSTD_decompress(text, (size_t)full, z, zlen);
	free(z);
	if (ZSTD_isError(len)) {
		snprintf(err, errlen, "%s: %s", path, ZSTD_getErrorName(len));
		free(text);
		return -1;
	}
	text[len] = 0;

	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	t->k = calloc(lines + 1, sizeof *t->k);
	if (!t->k) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char *p = text, *end = text + len;
	size_t lineno = 0;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *f[5];
		lineno++;
		if (!nl)
			nl = end;
		*nl = 0;
		if (p == nl) {
			p = nl + 1;
			continue;
		}
		int nf = 0;
		f[nf++] = p;
		for (char *q = p; *q && nf < 5; q++)
			if (*q == '\t') {
				*q = 0;
				f[nf++] = q + 1;
			}
		if (nf != 5) {
			snprintf(err, errlen, "%s: line %zu has %d fields, expected 5", path, lineno, nf);
			return -1;
		}
		struct torch_kernel *k = &t->k[t->n++];
		k->mangled = f[0];
		k->demangled = f[1];
		k->nparams = (uint32_t)strtoul(f[2], NULL, 10);
		k->param_bytes = (uint32_t)strtoul(f[3], NULL, 10);
		k->offset = calloc(k->nparams + 1, sizeof *k->offset);
		k->size = calloc(k->nparams + 1, sizeof *k->size);
		if (!k->offset || !k->size) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		char *s = f[4];
		for (uint32_t i = 0; i < k->nparams; i++) {
			char *e;
			k->size[i] = (uint32_t)strtoul(s, &e, 10);
			if (*e != '@') {
				snprintf(err, errlen, "%s: line %zu: bad parameter %u", path, lineno, i);
				return -1;
			}
			k->offset[i] = (uint32_t)strtoul(e + 1, &e, 10);
			if (*e != ',' && *e != 0) {
				snprintf(err, errlen, "%s: line %zu: bad parameter %u", path, lineno, i);
				return -1;
			}
			s = *e ? e + 1 : e;
		}
		p = nl + 1;
	}
	qsort(t->k, t->n, sizeof *t->k, cmp_mangled);
	return 0;
}

const struct torch_kernel *torch_table_find(const struct torch_table *t, const char *mangled)
{
	struct torch_kernel key = { .mangled = mangled };
	return bsearch(&key, t->k, t->n, sizeof *t->k, cmp_mangled);
}
