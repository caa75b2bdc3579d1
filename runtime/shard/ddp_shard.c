/* SPDX-License-Identifier: MIT
 *
 * ddp_shard.c - --shard specs, file layouts and the per-rank view of a file.
 *
 * Spec syntax: PATH[:mode=stride|block][:record=BYTES][:header=BYTES][:pad|:drop].
 * Options are taken from the right: a trailing `:word=value` with a
 * lowercase key, `:pad` or `:drop` is an option, anything else is part of
 * PATH (so PATH may hold colons).  Each option may appear once.
 *
 * The view arithmetic (ddp_shard.h) maps a rank's record k to source record
 * (first + k*step) mod M.  ddp_shard_view_read turns a byte range of the
 * virtual file into pread calls on the real file: block views read whole
 * runs straight into the caller's buffer; strided views of small records
 * read a span of the real file into a 16 KiB stack buffer and pick the
 * rank's records out of it; strided views of big records read each record
 * straight into the caller's buffer.
 *
 * Contract: the parsers and the view functions are pure (no globals, no
 * allocation, no logging) and safe from any thread (ddp_shard_snapshot_find
 * too).  ddp_shard_check_spec and ddp_shard_snapshot do file I/O and
 * allocate (glob); they are for ddprun and tools.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ddp_shard.h"
#include "ddp_port.h"

#define ERR(...) \
	do { \
		if (err && errlen) \
			snprintf(err, errlen, __VA_ARGS__); \
	} while (0)
#define SHARD_BOUNCE 16384

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* Parses one option token.  Returns 1 when it was an option, 0 when it is
 * part of the path, -1 on error (message in err). */
static int parse_opt(const char *text, const char *opt, struct ddp_shard_spec *s, unsigned *seen, char *err,
		     size_t errlen)
{
	const char *eq = strchr(opt, '=');
	size_t klen;
	uint64_t v;

	if (!*opt) {
		ERR("--shard %s: empty option (a doubled or trailing ':')", text);
		return -1;
	}
	if (strcmp(opt, "pad") == 0 || strcmp(opt, "drop") == 0) {
		if (*seen & 8) {
			ERR("--shard %s: give at most one of :pad and :drop", text);
			return -1;
		}
		*seen |= 8;
		s->uneven = opt[0] == 'p' ? DDP_SHARD_PAD : DDP_SHARD_DROP;
		return 1;
	}
	if (!eq)
		return 0;
	klen = (size_t)(eq - opt);
	if (klen == 0)
		return 0;
	for (size_t i = 0; i < klen; i++)
		if (opt[i] < 'a' || opt[i] > 'z')
			return 0;
	if (klen == 4 && memcmp(opt, "mode", 4) == 0) {
		if (*seen & 1)
			goto twice;
		*seen |= 1;
		if (strcmp(eq + 1, "stride") == 0)
			s->mode = DDP_SHARD_STRIDE;
		else if (strcmp(eq + 1, "block") == 0)
			s->mode = DDP_SHARD_BLOCK;
		else {
			ERR("--shard %s: mode=%s is not a mode; use mode=stride or mode=block", text, eq + 1);
			return -1;
		}
		return 1;
	}
	if ((klen == 6 && memcmp(opt, "record", 6) == 0) || (klen == 6 && memcmp(opt, "header", 6) == 0)) {
		int is_rec = opt[0] == 'r';
		unsigned bit = is_rec ? 2 : 4;

		if (*seen & bit)
			goto twice;
		*seen |= bit;
		if (parse_u64(eq + 1, &v) != 0 || (is_rec && v == 0) || v >= (1ull << 48)) {
			ERR("--shard %s: %.*s=%s is not a byte count%s", text, (int)klen, opt, eq + 1,
			    is_rec ? " of at least 1" : "");
			return -1;
		}
		if (is_rec)
			s->record = v;
		else
			s->header = v;
		return 1;
	}
	ERR("--shard %s: unknown option '%.*s'; use mode=, record=, header=, pad or drop", text, (int)klen,
	    opt);
	return -1;
twice:
	ERR("--shard %s: option %.*s= given twice", text, (int)klen, opt);
	return -1;
}

ddp_result ddp_shard_parse_spec(const char *text, struct ddp_shard_spec *out, char *err, size_t errlen)
{
	char buf[DDP_SHARD_PATH_MAX];
	size_t len = strlen(text);
	unsigned seen = 0;

	memset(out, 0, sizeof *out);
	out->header = UINT64_MAX;
	if (len == 0) {
		ERR("--shard: empty spec; give PATH[:mode=stride|block][:record=BYTES]"
		    "[:header=BYTES][:pad|:drop]");
		return DDP_ERR_INVALID;
	}
	if (len >= sizeof buf) {
		ERR("--shard %.40s...: spec longer than %d bytes", text, DDP_SHARD_PATH_MAX - 1);
		return DDP_ERR_INVALID;
	}
	memcpy(buf, text, len + 1);
	for (;;) {
		char *c = strrchr(buf, ':');
		int r;

		if (!c)
			break;
		r = parse_opt(text, c + 1, out, &seen, err, errlen);
		if (r < 0)
			return DDP_ERR_INVALID;
		if (r == 0)
			break;
		*c = '\0';
	}
	if (!buf[0]) {
		ERR("--shard %s: no PATH before the options", text);
		return DDP_ERR_INVALID;
	}
	memcpy(out->path, buf, strlen(buf) + 1);
	return DDP_OK;
}

ddp_result ddp_shard_parse_list(const char *text, struct ddp_shard_spec *specs, int max, int *n, char *err,
				size_t errlen)
{
	char line[DDP_SHARD_PATH_MAX];
	const char *p = text;

	*n = 0;
	while (*p) {
		size_t len = strcspn(p, "\n");

		if (len >= sizeof line) {
			ERR("--shard %.40s...: spec longer than %d bytes", p, DDP_SHARD_PATH_MAX - 1);
			return DDP_ERR_INVALID;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (p[len] == '\n');
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (*n >= max) {
			ERR("--shard: more than %d specs", max);
			return DDP_ERR_INVALID;
		}
		DDP_CHECK(ddp_shard_parse_spec(line, &specs[*n], err, errlen));
		(*n)++;
	}
	return DDP_OK;
}

ddp_result ddp_shard_layout_resolve(const struct ddp_shard_spec *spec, const char *path,
				    const unsigned char *head, size_t head_len, uint64_t file_size,
				    struct ddp_shard_layout *out, char *err, size_t errlen)
{
	char msg[384];
	ddp_result rc;
	uint64_t data;

	msg[0] = '\0';
	rc = ddp_shard_format_detect(head, head_len, file_size, out, msg, sizeof msg);
	if (rc != DDP_OK) {
		if (spec->record == 0) {
			ERR("--shard %s: %s", path, msg);
			return rc;
		}
		/* the user declared the layout: a look-alike magic is not a format */
		memset(out, 0, sizeof *out);
		out->file_size = file_size;
		out->natural_mode = DDP_SHARD_STRIDE;
	}
	if (out->fmt == DDP_SHARD_FMT_UNKNOWN) {
		uint64_t h = spec->header == UINT64_MAX ? 0 : spec->header;

		if (spec->record == 0) {
			ERR("--shard %s: unknown file format (no DDPREC01, MNIST idx, npy or "
			    "token-shard header); give record=BYTES, header=BYTES and mode=block or mode=stride",
			    path);
			return DDP_ERR_INVALID;
		}
		if (file_size < h || (file_size - h) % spec->record != 0) {
			ERR("--shard %s: size %llu is not a whole number of %llu-byte records "
			    "after a %llu-byte header; give record=BYTES and header=BYTES",
			    path, (unsigned long long)file_size, (unsigned long long)spec->record,
			    (unsigned long long)h);
			return DDP_ERR_INVALID;
		}
		/* no format says how to cut it, and a guess cuts one way or the
		 * other silently: stride gives every rank every N-th token of a
		 * token stream, block gives one rank all of a class-sorted file */
		if (spec->mode == DDP_SHARD_MODE_AUTO) {
			ERR("--shard %s: a raw file (no known header) does not say how to cut it; add "
			    ":mode=block (a token stream: each rank one contiguous slice) or :mode=stride "
			    "(independent records: record i to rank i mod N)",
			    path);
			return DDP_ERR_INVALID;
		}
		out->fmt = DDP_SHARD_FMT_RAW;
		out->natural_mode = spec->mode;
		out->header_bytes = h;
		out->record_bytes = spec->record;
		out->item_bytes = spec->record;
		out->record_count = (file_size - h) / spec->record;
		return DDP_OK;
	}
	if (spec->header != UINT64_MAX && spec->header != out->header_bytes) {
		ERR("--shard %s: header=%llu does not match the %s header of %llu bytes; "
		    "leave header= out",
		    path, (unsigned long long)spec->header, ddp_shard_fmt_name(out->fmt),
		    (unsigned long long)out->header_bytes);
		return DDP_ERR_INVALID;
	}
	if (spec->record && spec->record != out->record_bytes) {
		data = out->record_count * out->record_bytes; /* checked against the size */
		if (spec->record % out->item_bytes != 0 || data % spec->record != 0) {
			ERR("--shard %s: record=%llu does not split the %s data (%llu bytes of "
			    "%llu-byte items) into whole records; use a multiple of %llu that "
			    "divides it",
			    path, (unsigned long long)spec->record, ddp_shard_fmt_name(out->fmt),
			    (unsigned long long)data, (unsigned long long)out->item_bytes,
			    (unsigned long long)out->item_bytes);
			return DDP_ERR_INVALID;
		}
		out->record_bytes = spec->record;
		out->record_count = data / spec->record;
	}
	return DDP_OK;
}

ddp_result ddp_shard_view_init(const struct ddp_shard_spec *spec, const struct ddp_shard_layout *l, int rank,
			       int world, struct ddp_shard_view *v)
{
	uint64_t M = l->record_count, N, r, q, rem, c;
	enum ddp_shard_mode mode = spec->mode != DDP_SHARD_MODE_AUTO ? spec->mode : l->natural_mode;

	if (world < 1 || rank < 0 || rank >= world || l->record_bytes == 0)
		return DDP_ERR_INVALID;
	N = (uint64_t)world;
	r = (uint64_t)rank;
	q = M / N;
	rem = M % N;
	c = q + (rem != 0);
	memset(v, 0, sizeof *v);
	v->header_bytes = l->header_bytes;
	v->record_bytes = l->record_bytes;
	v->src_records = M;
	v->step = 1;
	if (M > 0 && mode == DDP_SHARD_BLOCK) {
		switch (spec->uneven) {
		case DDP_SHARD_KEEP:
			v->first = r * q + (r < rem ? r : rem);
			v->count = q + (r < rem);
			break;
		case DDP_SHARD_PAD:
			v->first = r * c;
			v->count = c;
			break;
		case DDP_SHARD_DROP:
			v->first = r * q;
			v->count = q;
			break;
		}
	} else if (M > 0) {
		v->step = N;
		v->first = r;
		v->count = spec->uneven == DDP_SHARD_PAD    ? c
			   : spec->uneven == DDP_SHARD_DROP ? q
							    : q + (r < rem);
	}
	if (__builtin_mul_overflow(v->count, v->record_bytes, &v->size) ||
	    __builtin_add_overflow(v->size, v->header_bytes, &v->size))
		return DDP_ERR_INVALID;
	return DDP_OK;
}

/* pread until n bytes, end of file or an error; returns bytes or -1. */
static ssize_t read_full(ddp_shard_pread_fn rd, void *ctx, unsigned char *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t g = rd(ctx, buf + done, n - done, off + done);

		if (g < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -1;
		}
		if (g == 0)
			break;
		done += (size_t)g;
	}
	return (ssize_t)done;
}

ssize_t ddp_shard_view_read(const struct ddp_shard_view *v, const unsigned char *header,
			    ddp_shard_pread_fn rd, void *ctx, void *buf, size_t n, uint64_t off)
{
	unsigned char *dst = buf;
	const uint64_t H = v->header_bytes, R = v->record_bytes;
	size_t done = 0;

	if (off >= v->size || n == 0)
		return 0;
	if (n > v->size - off)
		n = (size_t)(v->size - off);
	if (off < H) {
		size_t m = n < H - off ? n : (size_t)(H - off);

		if (header) {
			memcpy(dst, header + off, m);
		} else {
			ssize_t g = read_full(rd, ctx, dst, m, off);
			if (g < 0)
				return -1;
			if ((size_t)g < m)
				return g;
		}
		done = m;
		off += m;
	}
	while (done < n) {
		uint64_t pos = off - H, k = pos / R, in = pos % R;
		uint64_t src = ddp_shard_view_src(v, k);
		size_t want = n - done, bytes;
		ssize_t g;

		if (v->step == 1 || R * (v->step + 1) > SHARD_BOUNCE) {
			/* a contiguous run (block) or one big record (stride) */
			uint64_t run = v->step == 1 ? v->count - k : 1;

			if (run > v->src_records - src)
				run = v->src_records - src;
			bytes = run * R - in < want ? (size_t)(run * R - in) : want;
			g = read_full(rd, ctx, dst + done, bytes, H + src * R + in);
		} else {
			/* gather m strided records from one span of the real file */
			unsigned char bounce[SHARD_BOUNCE];
			uint64_t m = (in + want + R - 1) / R, lim;
			size_t span, copied = 0;

			if (m > v->count - k)
				m = v->count - k;
			lim = (v->src_records - 1 - src) / v->step + 1; /* before wrapping */
			if (m > lim)
				m = lim;
			lim = (SHARD_BOUNCE - R) / (v->step * R) + 1;
			if (m > lim)
				m = lim;
			span = (size_t)(((m - 1) * v->step + 1) * R);
			g = read_full(rd, ctx, bounce, span, H + src * R);
			if (g >= 0 && (size_t)g < span)
				g = 0; /* the real file shrank: report what came before */
			for (uint64_t j = 0; g > 0 && j < m && copied < want; j++) {
				uint64_t skip = j == 0 ? in : 0;
				size_t piece = (size_t)(R - skip);

				if (piece > want - copied)
					piece = want - copied;
				memcpy(dst + done + copied, bounce + j * v->step * R + skip, piece);
				copied += piece;
			}
			bytes = copied;
			if (g > 0)
				g = (ssize_t)copied;
		}
		if (g < 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)g;
		if ((size_t)g < bytes || g == 0)
			break;
		off += (uint64_t)g;
	}
	return (ssize_t)done;
}

int ddp_shard_glob(const char *pattern, glob_t *g)
{
	char lit[2 * DDP_SHARD_PATH_MAX];
	struct stat st;
	size_t j = 0;

	memset(g, 0, sizeof *g);
	if (!strpbrk(pattern, "*?[\\") || ddp_sys_fstatat(AT_FDCWD, pattern, &st, 0) != 0)
		return glob(pattern, 0, NULL, g);
	/* a file of that very name: match it alone (`train[1].raw` beside
	 * `train1.raw` is the file so named), through glob with every special
	 * character escaped, so the caller frees it the same way */
	for (const char *c = pattern; *c && j + 2 < sizeof lit; c++) {
		if (strchr("*?[\\", *c))
			lit[j++] = '\\';
		lit[j++] = *c;
	}
	lit[j] = '\0';
	return glob(lit, 0, NULL, g);
}

/* Checks one file matched by a spec. */
static ddp_result check_file(const struct ddp_shard_spec *s, const char *path, int world, char *err,
			     size_t errlen)
{
	unsigned char head[DDP_SHARD_HEAD_MAX];
	struct ddp_shard_layout l;
	struct ddp_shard_view v;
	struct stat st;
	ssize_t got = 0;
	ddp_result rc = DDP_OK;
	/* a FIFO or device would block open() (a FIFO waits for a writer
	 * forever): refused before it is opened, and opened non-blocking in
	 * case it changes in between */
	if (ddp_sys_fstatat(AT_FDCWD, path, &st, 0) == 0 && !S_ISREG(st.st_mode)) {
		ERR("--shard %s: %s is not a regular file", s->path, path);
		return DDP_ERR_INVALID;
	}
	int fd = DDP_SYS(open64)(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		ERR("--shard %s: cannot open %s: %s", s->path, path, strerror(errno));
		return DDP_ERR_INVALID;
	}
	if (ddp_sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		ERR("--shard %s: %s is not a regular file", s->path, path);
		rc = DDP_ERR_INVALID;
		goto out_close_fd;
	}
	if (st.st_size > 0) {
		size_t want = st.st_size < DDP_SHARD_HEAD_MAX ? (size_t)st.st_size : DDP_SHARD_HEAD_MAX;
		got = DDP_SYS(pread64)(fd, head, want, 0);
		if (got != (ssize_t)want) {
			ERR("--shard %s: cannot read %s", s->path, path);
			rc = DDP_ERR_INVALID;
			goto out_close_fd;
		}
	}
	DDP_CHECK_GOTO(
		ddp_shard_layout_resolve(s, path, head, (size_t)got, (uint64_t)st.st_size, &l, err, errlen),
		rc, out_close_fd);
	for (int r = 0; r < world; r++) {
		if (ddp_shard_view_init(s, &l, r, world, &v) != DDP_OK) {
			ERR("--shard %s: %s is too large to shard", s->path, path);
			rc = DDP_ERR_INVALID;
			goto out_close_fd;
		}
	}
out_close_fd:
	DDP_SYS(close)(fd);
	return rc;
}

ddp_result ddp_shard_check_spec(const char *spec, int world_size, char *err, size_t errlen)
{
	struct ddp_shard_spec s;
	ddp_result rc = DDP_OK;
	glob_t g;
	int grc;

	DDP_CHECK(ddp_shard_parse_spec(spec, &s, err, errlen));
	if (world_size < 1) {
		ERR("--shard %s: world size %d is not positive", spec, world_size);
		return DDP_ERR_INVALID;
	}
	grc = ddp_shard_glob(s.path, &g);
	if (grc == GLOB_NOMATCH || (grc == 0 && g.gl_pathc == 0)) {
		/* `good.rec:RECORD=16`, `x:Pad`: a mistyped option, taken as part
		 * of PATH because options are lowercase; say so rather than
		 * "no file" */
		const char *c = strrchr(s.path, ':');
		if (c && c[1] &&
		    (strchr(c, '=') || strcasecmp(c + 1, "pad") == 0 || strcasecmp(c + 1, "drop") == 0)) {
			ERR("--shard %s: unknown option '%s' (no file is named %s); the options are "
			    "lowercase: mode=, record=, header=, pad or drop",
			    spec, c + 1, s.path);
			if (grc == 0)
				globfree(&g);
			return DDP_ERR_INVALID;
		}
		ERR("--shard %s: no file matches %s", spec, s.path);
		if (grc == 0)
			globfree(&g);
		return DDP_ERR_INVALID;
	}
	if (grc != 0) {
		ERR("--shard %s: cannot expand %s", spec, s.path);
		return DDP_ERR_INVALID;
	}
	for (size_t i = 0; i < g.gl_pathc && rc == DDP_OK; i++)
		rc = check_file(&s, g.gl_pathv[i], world_size, err, errlen);
	globfree(&g);
	return rc;
}

ddp_result ddp_shard_snapshot(const char *spec, int spec_index, char *out, size_t cap, size_t *len, char *err,
			      size_t errlen)
{
	struct ddp_shard_spec s;
	ddp_result rc = DDP_OK;
	char cwd[DDP_SHARD_PATH_MAX];
	glob_t g;

	DDP_CHECK(ddp_shard_parse_spec(spec, &s, err, errlen));
	if (!getcwd(cwd, sizeof cwd)) {
		ERR("--shard %s: cannot name the working folder: %s", spec, strerror(errno));
		return DDP_ERR_INVALID;
	}
	if (ddp_shard_glob(s.path, &g) != 0)
		return DDP_OK; /* ddp_shard_check_spec says what is wrong */
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct stat st;
		const char *p = g.gl_pathv[i];
		int rel = p[0] != '/';
		if (strchr(p, '\n')) {
			ERR("--shard %s: the file name '%s' holds a newline; rename it", spec, p);
			rc = DDP_ERR_INVALID;
			break;
		}
		if (ddp_sys_fstatat(AT_FDCWD, p, &st, 0) != 0 || !S_ISREG(st.st_mode))
			continue;
		/* absolute: a rank that changes folder (hydra, `cd sub && exec
		 * prog ../data`) still finds the file ddprun checked */
		int n = snprintf(out + *len, cap - *len, "%d %llu %lld %llu %llu %s%s%s\n", spec_index,
				 (unsigned long long)st.st_size,
				 (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
				 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, rel ? cwd : "",
				 rel ? "/" : "", p);
		if (n < 0 || (size_t)n >= cap - *len) {
			out[*len] = '\0';
			ERR("--shard %s: too many files to list (at most %zu bytes of names)", spec, cap);
			rc = DDP_ERR_INVALID;
			break;
		}
		*len += (size_t)n;
	}
	globfree(&g);
	return rc;
}

int ddp_shard_snapshot_next(const char **cursor, int *spec, struct ddp_shard_fixed *out, char *path, size_t cap)
{
	const char *l = *cursor;

	while (l && *l) {
		const char *end = strchr(l, '\n');
		size_t llen = end ? (size_t)(end - l) : strlen(l);
		unsigned long long size, dev, ino;
		long long mt;
		int si, off = 0;

		*cursor = l + llen + (end ? 1 : 0);
		if (sscanf(l, "%d %llu %lld %llu %llu %n", &si, &size, &mt, &dev, &ino, &off) == 5 &&
		    off > 0 && (size_t)off < llen && llen - (size_t)off < cap) {
			memcpy(path, l + off, llen - (size_t)off);
			path[llen - (size_t)off] = '\0';
			*spec = si;
			out->size = size;
			out->mtime_ns = mt;
			out->dev = dev;
			out->ino = ino;
			return 1;
		}
		l = *cursor;
	}
	return 0;
}
