/* SPDX-License-Identifier: MIT
 *
 * mkdata.c - ddp-mkdata: builds the samples' data sets from the text of
 * /usr/share/common-licenses (or --source DIR).
 *
 *   ddp-mkdata --kind mlp|charlm|gpt --out PATH [--context K] [--max-records N]
 *              [--source DIR]
 *
 * The regular files of the source directory (symbolic links and everything
 * else skipped), in byte-wise sorted name order, are concatenated and each
 * byte becomes one of 96 tokens: '\n' -> 0, printable ASCII 32..126 -> 1..95,
 * anything else -> the token of ' ' (1).  Records are windows of K+1 tokens
 * (K inputs; the last token is the target of an mlp record, and for charlm
 * tokens 1..K are the targets of positions 0..K-1), taken with stride K.
 * Defaults: K = 8 for mlp, 32 for charlm.
 *
 * File format (little-endian), shared with the input-sharding code:
 *   0  8  magic "DDPREC01"     8 4 header_bytes (64)   12 4 record_bytes
 *   16 8  record_count         24 4 vocab (96)          28 4 context (K)
 *   32 32 reserved, zero;  then record_count records of record_bytes bytes.
 *
 * --kind gpt writes a token shard instead (the format of llm.c's data
 * files): 256 int32 (1024 bytes): magic 20240520, version 1, token count,
 * the rest zero; then every token of the text as a uint16.  --max-records N
 * keeps the first N tokens; --context does not apply.
 *
 * Contract: deterministic (same input files -> same output bytes); writes the
 * output through a temporary file renamed into place; every failure prints
 * one `ddp-mkdata: ...` line and exits 1 (2 for a bad command line).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define USAGE "usage: ddp-mkdata --kind mlp|charlm|gpt --out PATH [--context K] [--max-records N] [--source DIR]"
#define VOCAB 96
#define HEADER_BYTES 64
#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("ddp-mkdata: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (code == 2)
		fputs("; " USAGE, stderr);
	fputc('\n', stderr);
	exit(code);
}

static unsigned char to_token(unsigned char c)
{
	if (c == '\n')
		return 0;
	if (c >= 32 && c <= 126)
		return (unsigned char)(c - 31);
	return 1; /* ' ' */
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends the tokens of every regular file of dir (sorted by name) to *buf. */
static void read_corpus(const char *dir, unsigned char **buf, size_t *len, int verbose)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0, i, used = 0, bcap = 0;

	if (d == NULL)
		die(1, "cannot open source directory %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			if (names == NULL)
				die(1, "out of memory");
		}
		names[n] = strdup(e->d_name);
		if (names[n] == NULL)
			die(1, "out of memory");
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	*buf = NULL;
	*len = 0;
	for (i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		FILE *f;
		size_t got;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (lstat(path, &st) != 0)
			die(1, "cannot stat %s: %s", path, strerror(errno));
		if (!S_ISREG(st.st_mode)) {
			free(names[i]);
			continue;
		}
		f = fopen(path, "rb");
		if (f == NULL)
			die(1, "cannot open %s: %s", path, strerror(errno));
		for (;;) {
			if (bcap - *len < 65536) {
				bcap = bcap ? 2 * bcap : 1 << 20;
				*buf = realloc(*buf, bcap);
				if (*buf == NULL)
					die(1, "out of memory");
			}
			got = fread(*buf + *len, 1, bcap - *len, f);
			*len += got;
			if (got == 0)
				break;
		}
		if (ferror(f))
			die(1, "cannot read %s", path);
		fclose(f);
		if (verbose)
			fprintf(stderr, "ddp-mkdata: source %s (%lld bytes)\n", path, (long long)st.st_size);
		used++;
		free(names[i]);
	}
	free(names);
	if (used == 0 || *len == 0)
		die(1, "no text found in %s (no regular, non-empty files)", dir);
	for (i = 0; i < *len; i++)
		(*buf)[i] = to_token((*buf)[i]);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* Writes the whole token sequence as a token shard (uint16 tokens) to the
 * open file f; returns 0, or -1 with errno set. */
static int write_token_shard(FILE *f, const unsigned char *tok, size_t n)
{
	unsigned char header[SHARD_HEADER_INTS * 4] = {0}, buf[8192];
	size_t i, k;

	put_u32(header, SHARD_MAGIC);
	put_u32(header + 4, SHARD_VERSION);
	put_u32(header + 8, (uint32_t)n);
	if (fwrite(header, 1, sizeof(header), f) != sizeof(header))
		return -1;
	for (i = 0; i < n; i += k) {
		for (k = 0; k < sizeof(buf) / 2 && i + k < n; k++) {
			buf[2 * k] = tok[i + k];
			buf[2 * k + 1] = 0;
		}
		if (fwrite(buf, 2, k, f) != k)
			return -1;
	}
	return 0;
}

static long parse_long(const char *opt, const char *v, long min, long max)
{
	char *end = NULL;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < min || x > max)
		die(2, "option %s wants an integer in [%ld, %ld], got '%s'", opt, min, max, v);
	return x;
}

int main(int argc, char **argv)
{
	const char *kind = NULL, *out = NULL, *source = "/usr/share/common-licenses";
	long context = 0, max_records = -1;
	int verbose = 0, i;
	unsigned char *tok, header[HEADER_BYTES] = {0};
	size_t len;
	uint64_t count, r;
	uint32_t record_bytes = 0;
	char tmp[4096];
	FILE *f;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0) {
			puts(USAGE);
			return 0;
		}
		if (strcmp(a, "--verbose") == 0) {
			verbose = 1;
			continue;
		}
		if (strcmp(a, "--kind") && strcmp(a, "--out") && strcmp(a, "--context") &&
		    strcmp(a, "--max-records") && strcmp(a, "--source"))
			die(2, "unknown option '%s'", a);
		if (i + 1 >= argc)
			die(2, "option %s needs a value", a);
		if (strcmp(a, "--kind") == 0)
			kind = argv[++i];
		else if (strcmp(a, "--out") == 0)
			out = argv[++i];
		else if (strcmp(a, "--source") == 0)
			source = argv[++i];
		else if (strcmp(a, "--context") == 0)
			context = parse_long(a, argv[++i], 1, 1024);
		else
			max_records = parse_long(a, argv[++i], 1, 1L << 40);
	}
	if (kind == NULL)
		die(2, "missing option --kind");
	if (out == NULL || *out == '\0')
		die(2, "missing option --out");
	if (strcmp(kind, "mlp") == 0)
		context = context ? context : 8;
	else if (strcmp(kind, "charlm") == 0)
		context = context ? context : 32;
	else if (strcmp(kind, "gpt") == 0) {
		if (context)
			die(2, "option --context does not apply to --kind gpt (a token shard has no records)");
	} else
		die(2, "option --kind wants mlp, charlm or gpt, got '%s'", kind);

	read_corpus(source, &tok, &len, verbose);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", out, (long)getpid());
	if (strcmp(kind, "gpt") == 0) {
		/* the token count is an int32 in the header */
		count = len > INT32_MAX ? INT32_MAX : len;
		if (max_records > 0 && count > (uint64_t)max_records)
			count = (uint64_t)max_records;
		f = fopen(tmp, "wb");
		if (f == NULL)
			die(1, "cannot create %s: %s", tmp, strerror(errno));
		if (write_token_shard(f, tok, (size_t)count) != 0)
			goto write_error;
		if (fclose(f) != 0) {
			f = NULL;
			goto write_error;
		}
		goto done;
	}
	record_bytes = (uint32_t)context + 1;
	/* window r covers tokens [r*K, r*K + K] */
	count = len > (size_t)context ? (len - 1) / (uint64_t)context : 0;
	if (max_records > 0 && count > (uint64_t)max_records)
		count = (uint64_t)max_records;
	if (count == 0)
		die(1, "the source text (%zu bytes) is too short for one record of %u tokens", len,
		    record_bytes);

	memcpy(header, "DDPREC01", 8);
	put_u32(header + 8, HEADER_BYTES);
	put_u32(header + 12, record_bytes);
	put_u32(header + 16, (uint32_t)count);
	put_u32(header + 20, (uint32_t)(count >> 32));
	put_u32(header + 24, VOCAB);
	put_u32(header + 28, (uint32_t)context);

	f = fopen(tmp, "wb");
	if (f == NULL)
		die(1, "cannot create %s: %s", tmp, strerror(errno));
	if (fwrite(header, 1, sizeof(header), f) != sizeof(header))
		goto write_error;
	for (r = 0; r < count; r++)
		if (fwrite(tok + r * (uint64_t)context, 1, record_bytes, f) != record_bytes)
			goto write_error;
	if (fclose(f) != 0) {
		f = NULL;
		goto write_error;
	}
done:
	if (rename(tmp, out) != 0) {
		unlink(tmp);
		die(1, "cannot rename %s to %s: %s", tmp, out, strerror(errno));
	}
	if (strcmp(kind, "gpt") == 0)
		fprintf(stderr, "ddp-mkdata: %s: token shard of %llu uint16 tokens from %zu bytes of %s\n", out,
			(unsigned long long)count, len, source);
	else
		fprintf(stderr, "ddp-mkdata: %s: %llu %s records of %u bytes from %zu bytes of %s\n", out,
			(unsigned long long)count, kind, record_bytes, len, source);
	free(tok);
	return 0;

write_error:
	{
		int e = errno;

		if (f)
			fclose(f);
		unlink(tmp);
		die(1, "cannot write %s: %s", out, strerror(e));
	}
}
