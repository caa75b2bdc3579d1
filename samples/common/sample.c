/* SPDX-License-Identifier: MIT
 *
 * sample.c - host helpers of the sample trainers (see sample.h).
 *
 * Contract: single-threaded; every error prints one line prefixed with
 * sample_prog and exits.  The data reader uses plain open()/read()/lseek()
 * and reads the file sequentially, so that any shim that presents a part of
 * the file (a per-rank view) sees exactly the calls an ordinary program makes.
 */
#include "sample.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *sample_prog = "sample";

void sample_die(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", sample_prog, msg);
	exit(code);
}

void sample_cuda_check(CUresult r, const char *expr, const char *file, int line)
{
	const char *name = NULL;
	size_t len;

	if (r == CUDA_SUCCESS)
		return;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
		name = "unknown error";
	len = strcspn(expr, "( ");
	sample_die(1, "%.*s failed: %s (%s:%d)", (int)len, expr, name, file, line);
}

/* ---- command line ------------------------------------------------------------ */

static int choice_index(const char *choices, const char *value)
{
	const char *p = choices;
	size_t vlen = strlen(value);
	int i = 0;

	while (*p) {
		size_t len = strcspn(p, "|");

		if (len == vlen && strncmp(p, value, len) == 0)
			return i;
		p += len;
		if (*p == '|')
			p++;
		i++;
	}
	return -1;
}

static void usage_die(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void usage_die(const char *usage, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sample_die(2, "%s; usage: %s", msg, usage);
}

static void parse_value(const struct sample_opt *o, const char *v, const char *usage)
{
	char *end = NULL;

	errno = 0;
	switch (o->kind) {
	case SAMPLE_OPT_STR:
		if (*v == '\0')
			usage_die(usage, "option %s needs a non-empty value", o->name);
		*(const char **)o->dst = v;
		return;
	case SAMPLE_OPT_INT: {
		long x = strtol(v, &end, 10);

		if (errno || end == v || *end || x < (long)o->min || x > (long)o->max)
			usage_die(usage, "option %s wants an integer in [%.0f, %.0f], got '%s'", o->name,
				  o->min, o->max, v);
		*(int *)o->dst = (int)x;
		return;
	}
	case SAMPLE_OPT_U64: {
		unsigned long long x;

		if (*v == '-')
			usage_die(usage, "option %s wants an unsigned integer, got '%s'", o->name, v);
		x = strtoull(v, &end, 0);
		if (errno || end == v || *end)
			usage_die(usage, "option %s wants an unsigned integer, got '%s'", o->name, v);
		*(uint64_t *)o->dst = x;
		return;
	}
	case SAMPLE_OPT_FLOAT: {
		double x = strtod(v, &end);

		if (errno || end == v || *end || !isfinite(x) || x < o->min || x > o->max)
			usage_die(usage, "option %s wants a number in [%g, %g], got '%s'", o->name, o->min,
				  o->max, v);
		*(float *)o->dst = (float)x;
		return;
	}
	case SAMPLE_OPT_CHOICE: {
		int i = choice_index(o->choices, v);

		if (i < 0)
			usage_die(usage, "option %s wants one of %s, got '%s'", o->name, o->choices, v);
		*(int *)o->dst = i;
		return;
	}
	case SAMPLE_OPT_FLAG:
		break;
	}
	usage_die(usage, "option %s takes no value", o->name);
}

void sample_parse_args(int argc, char **argv, const struct sample_opt *opts, size_t nopts,
		       const char *usage)
{
	unsigned char seen[64] = {0};
	size_t i;
	int a;

	if (nopts > sizeof(seen))
		sample_die(1, "internal error: too many options");
	for (a = 1; a < argc; a++) {
		const char *arg = argv[a];
		const char *eq = strchr(arg, '=');
		size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
		const struct sample_opt *o = NULL;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			printf("usage: %s\n", usage);
			exit(0);
		}
		for (i = 0; i < nopts; i++)
			if (strlen(opts[i].name) == nlen && strncmp(opts[i].name, arg, nlen) == 0) {
				o = &opts[i];
				break;
			}
		if (o == NULL)
			usage_die(usage, "unknown %s '%s'", strncmp(arg, "--", 2) == 0 ? "option" : "argument",
				  arg);
		if (seen[i])
			usage_die(usage, "option %s given twice", o->name);
		seen[i] = 1;
		if (o->kind == SAMPLE_OPT_FLAG) {
			if (eq)
				usage_die(usage, "option %s takes no value", o->name);
			*(int *)o->dst = 1;
			continue;
		}
		if (eq) {
			parse_value(o, eq + 1, usage);
		} else {
			if (a + 1 >= argc)
				usage_die(usage, "option %s needs a value", o->name);
			parse_value(o, argv[++a], usage);
		}
	}
	for (i = 0; i < nopts; i++)
		if (opts[i].required && !seen[i])
			usage_die(usage, "missing option %s", opts[i].name);
}

/* ---- data --------------------------------------------------------------------- */

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* read() exactly n bytes; returns the count read (short only at end of file). */
static size_t read_full(int fd, void *buf, size_t n, const char *path)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			sample_die(1, "cannot read %s: %s", path, strerror(errno));
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return got;
}

void sample_data_open(struct sample_data *d, const char *path)
{
	unsigned char h[SAMPLE_REC_HEADER_BYTES];
	struct stat st;
	size_t got;
	unsigned i;

	memset(d, 0, sizeof(*d));
	d->path = path;
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0)
		sample_die(1, "cannot open data file %s: %s (make builds build/data/*.rec)", path,
			   strerror(errno));
	got = read_full(d->fd, h, sizeof(h), path);
	if (got < sizeof(h) || memcmp(h, SAMPLE_REC_MAGIC, 8) != 0)
		sample_die(1, "%s is not a DDPREC01 record file (bad or short header)", path);
	d->header_bytes = get_u32(h + 8);
	d->record_bytes = get_u32(h + 12);
	d->record_count = get_u64(h + 16);
	d->vocab = get_u32(h + 24);
	d->context = get_u32(h + 28);
	for (i = 32; i < 64; i++)
		if (h[i] != 0)
			sample_die(1, "%s: reserved header bytes are not zero", path);
	if (d->header_bytes != SAMPLE_REC_HEADER_BYTES)
		sample_die(1, "%s: header_bytes is %u, expected %u", path, d->header_bytes,
			   SAMPLE_REC_HEADER_BYTES);
	if (d->vocab != SAMPLE_VOCAB)
		sample_die(1, "%s: vocab is %u, expected %u", path, d->vocab, SAMPLE_VOCAB);
	if (d->context < 1 || d->context > 1024 || d->record_bytes != d->context + 1)
		sample_die(1, "%s: record_bytes %u does not match context %u (+1 target)", path,
			   d->record_bytes, d->context);
	if (d->record_count == 0)
		sample_die(1, "%s: the file holds no records", path);
	if (fstat(d->fd, &st) != 0)
		sample_die(1, "cannot stat %s: %s", path, strerror(errno));
	if (S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size != d->header_bytes + d->record_count * (uint64_t)d->record_bytes)
		sample_die(1, "%s: size %lld does not match its header (%u + %llu records of %u bytes)", path,
			   (long long)st.st_size, d->header_bytes, (unsigned long long)d->record_count,
			   d->record_bytes);
	d->next = 0;
}

void sample_data_read(struct sample_data *d, unsigned char *buf, size_t n)
{
	size_t done = 0, i;

	while (done < n) {
		size_t want, got;

		if (d->next == d->record_count) {
			if (lseek(d->fd, d->header_bytes, SEEK_SET) != (off_t)d->header_bytes)
				sample_die(1, "cannot seek in %s: %s", d->path, strerror(errno));
			d->next = 0;
		}
		want = n - done;
		if (want > d->record_count - d->next)
			want = (size_t)(d->record_count - d->next);
		got = read_full(d->fd, buf + done * d->record_bytes, want * d->record_bytes, d->path);
		if (got != want * d->record_bytes)
			sample_die(1, "%s: file ended before its %llu records", d->path,
				   (unsigned long long)d->record_count);
		done += want;
		d->next += want;
	}
	for (i = 0; i < n * d->record_bytes; i++)
		if (buf[i] >= d->vocab)
			sample_die(1, "%s: token %u out of range (vocab %u)", d->path, buf[i], d->vocab);
}

void sample_data_close(struct sample_data *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/* ---- initialisation ---------------------------------------------------------------- */

void sample_rng_init(struct sample_rng *r, uint64_t seed, int use_urandom)
{
	memset(r, 0, sizeof(*r));
	r->state = seed;
	r->fd = -1;
	if (use_urandom) {
		r->fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (r->fd < 0)
			sample_die(1, "cannot open /dev/urandom: %s", strerror(errno));
	}
}

uint64_t sample_rng_next(struct sample_rng *r)
{
	uint64_t z;

	if (r->fd >= 0) {
		if (r->len - r->pos < sizeof(z)) {
			r->len = read_full(r->fd, r->buf, sizeof(r->buf), "/dev/urandom");
			r->pos = 0;
			if (r->len < sizeof(z))
				sample_die(1, "/dev/urandom returned too few bytes");
		}
		memcpy(&z, r->buf + r->pos, sizeof(z));
		r->pos += sizeof(z);
		return z;
	}
	/* splitmix64 (Steele, Lea, Flood 2014) */
	z = (r->state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void sample_rng_uniform(struct sample_rng *r, float *p, size_t n, float scale)
{
	size_t i;

	for (i = 0; i < n; i++) {
		/* top 24 bits -> [0, 1) exactly representable, then [-scale, scale) */
		float u = (float)(sample_rng_next(r) >> 40) * (1.0f / 16777216.0f);

		p[i] = (2.0f * u - 1.0f) * scale;
	}
}

void sample_rng_close(struct sample_rng *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* ---- output -------------------------------------------------------------------------- */

void sample_save(const char *path, const float *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		sample_die(1, "cannot create %s: %s", path, strerror(errno));
	if (fwrite(p, sizeof(float), n, f) != n) {
		int e = errno;

		fclose(f);
		sample_die(1, "cannot write %s: %s", path, strerror(e));
	}
	if (fclose(f) != 0)
		sample_die(1, "cannot write %s: %s", path, strerror(errno));
}

/* ---- CUDA setup ------------------------------------------------------------------------ */

void sample_get_kernels(CUmodule mod, const struct sample_kernel *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		CUresult r = cuModuleGetFunction(k[i].fn, mod, k[i].mangled);

		if (r != CUDA_SUCCESS) {
			const char *name = NULL;

			if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
				name = "unknown error";
			sample_die(1, "cuModuleGetFunction failed: %s (%d) for kernel %s", name, (int)r,
				   k[i].mangled);
		}
	}
}

double sample_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sample_report(CUdevice dev, int steps, double seconds)
{
	char name[256] = "unknown device";

	CK(cuDeviceGetName(name, (int)sizeof(name), dev));
	fflush(stdout);
	fprintf(stderr, "%s: ran %d steps on %s in %.2f s\n", sample_prog, steps, name, seconds);
}
