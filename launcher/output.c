/* SPDX-License-Identifier: MIT
 *
 * output.c - the ranks' stdout and stderr, as whole prefixed lines.
 *
 * Each rank writes into two pipes.  What arrives is cut at newlines; every
 * complete line goes out as `[rank k] line\n`, stdout lines to ddprun's
 * stdout and stderr lines to its stderr, all the lines of one read in one
 * write(2), so lines of different ranks never tear or interleave inside a
 * line.  A partial line waits in the stream's buffer for its end; one longer
 * than LINE_MAX_BYTES is cut there (each piece a line of its own); a final
 * partial line is flushed with a newline when the job ends.  With
 * --log-dir, DIR/rank<k>.log receives the rank's raw lines (stdout and
 * stderr, no prefix), whatever --quiet and --ranks-filter hide from the
 * terminal.  The last TAIL_LINES stderr lines of each rank are kept for the
 * failure report.
 *
 * Contract: main thread only (supervise.c's poll loop).  No thread per pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "launch.h"

#define LINE_MAX_BYTES (64 * 1024)
#define TAIL_LINES 10
#define TAIL_LINE_BYTES 512

struct out_stream {
	char *buf;  /* partial line (LINE_MAX_BYTES)   */
	size_t len;
};

struct out_rank {
	int rank;                 /* global rank for the prefix            */
	int show;                 /* on the terminal (filter, --quiet)     */
	int log_fd;               /* DIR/rank<k>.log or -1                 */
	struct out_stream s[2];   /* [0] stdout, [1] stderr                */
	char tail[TAIL_LINES][TAIL_LINE_BYTES];
	int tail_next, tail_count;
};

static struct out_rank *out_ranks;
static int out_nranks;
static int term_ok[3] = { 1, 1, 1 }; /* cleared when fd 1/2 is gone (EPIPE) */
static char *stage;                   /* one read's worth of prefixed lines  */
static size_t stage_len, stage_cap;

/* Writes all of p.  ddprun's stdout/stderr may be non-blocking (an O_NONBLOCK
 * set on a shared pipe or terminal by whoever started ddprun): a full pipe
 * then says EAGAIN, and ddprun waits for room as a blocking write would,
 * rather than dropping the rest of the job's output. */
static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return;
			continue;
		}
		if (w <= 0) {
			if (fd == 1 || fd == 2)
				term_ok[fd] = 0;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static int stage_add(const char *prefix, size_t plen, const char *line, size_t len)
{
	size_t need = stage_len + plen + len + 1;
	if (need > stage_cap) {
		size_t cap = stage_cap ? stage_cap : 65536;
		while (cap < need)
			cap *= 2;
		char *n = realloc(stage, cap);
		if (!n)
			return -1;
		stage = n;
		stage_cap = cap;
	}
	memcpy(stage + stage_len, prefix, plen);
	memcpy(stage + stage_len + plen, line, len);
	stage[stage_len + plen + len] = '\n';
	stage_len = need;
	return 0;
}

static void tail_add(struct out_rank *r, const char *line, size_t len)
{
	if (len >= TAIL_LINE_BYTES)
		len = TAIL_LINE_BYTES - 1;
	memcpy(r->tail[r->tail_next], line, len);
	r->tail[r->tail_next][len] = '\0';
	r->tail_next = (r->tail_next + 1) % TAIL_LINES;
	if (r->tail_count < TAIL_LINES)
		r->tail_count++;
}

ddp_result launch_output_init(const struct launch_job *job)
{
	const struct launch_opts *o = job->o;
	unsigned char *filter = NULL;

	out_nranks = job->nranks;
	out_ranks = calloc((size_t)job->nranks, sizeof *out_ranks);
	if (!out_ranks)
		return DDP_ERR_NOMEM;
	if (o->ranks_filter) {
		filter = malloc((size_t)job->world_size);
		if (!filter)
			return DDP_ERR_NOMEM;
		DDP_CHECK(launch_parse_rank_list("--ranks-filter", o->ranks_filter, job->world_size,
						 filter));
	}
	unsigned char *local = NULL;
	if (o->local_ranks_filter) {
		local = malloc((size_t)job->nranks);
		if (!local)
			return DDP_ERR_NOMEM;
		DDP_CHECK(launch_parse_rank_list("--local-ranks-filter", o->local_ranks_filter, job->nranks,
						 local));
	}
	/* -r 3 (torchrun): the output goes to the log files only */
	int quiet = o->quiet || (o->redirects && strcmp(o->redirects, "3") == 0);
	for (int i = 0; i < job->nranks; i++) {
		struct out_rank *r = &out_ranks[i];
		r->rank = job->ranks[i].rank;
		r->show = !quiet && (!filter || filter[r->rank]) && (!local || local[i]);
		r->log_fd = -1;
		for (int k = 0; k < 2; k++) {
			r->s[k].buf = malloc(LINE_MAX_BYTES);
			if (!r->s[k].buf)
				return DDP_ERR_NOMEM;
		}
		if (o->log_dir) {
			char path[4096];
			snprintf(path, sizeof path, "%s/rank%d.log", o->log_dir, r->rank);
			r->log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (r->log_fd < 0) {
				launch_msg("cannot write %s: %s", path, strerror(errno));
				return DDP_ERR_SYS;
			}
		}
	}
	free(filter);
	free(local);
	return DDP_OK;
}

/* Emits the complete lines of data[0..n) (n includes the last newline, or
 * is a forced cut: then a newline is added). */
static void emit(struct out_rank *r, int is_err, const char *data, size_t n, int add_nl)
{
	char prefix[32];
	size_t plen = (size_t)snprintf(prefix, sizeof prefix, "[rank %d] ", r->rank);
	const char *p = data, *end = data + n;

	if (r->log_fd >= 0) {
		write_all(r->log_fd, data, n);
		if (add_nl)
			write_all(r->log_fd, "\n", 1);
	}
	stage_len = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (is_err)
			tail_add(r, p, len);
		if (r->show && stage_add(prefix, plen, p, len) != 0)
			break;
		p += len + (nl ? 1 : 0);
	}
	if (r->show && stage_len && term_ok[is_err ? 2 : 1])
		write_all(is_err ? 2 : 1, stage, stage_len);
	stage_len = 0;
}

int launch_output_read(int idx, int is_err, int fd)
{
	struct out_rank *r = &out_ranks[idx];
	struct out_stream *s = &r->s[is_err];

	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t n = read(fd, s->buf + s->len, LINE_MAX_BYTES - s->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 1 : 0;
		}
		if (n == 0)
			return 0;
		s->len += (size_t)n;
		char *last = memrchr(s->buf, '\n', s->len);
		if (last) {
			size_t done = (size_t)(last - s->buf) + 1;
			emit(r, is_err, s->buf, done, 0);
			memmove(s->buf, s->buf + done, s->len - done);
			s->len -= done;
		} else if (s->len == LINE_MAX_BYTES) {
			emit(r, is_err, s->buf, s->len, 1);
			s->len = 0;
		}
	}
	return 2;
}

void launch_output_finish(void)
{
	for (int i = 0; i < out_nranks; i++) {
		struct out_rank *r = &out_ranks[i];
		for (int k = 0; k < 2; k++) {
			if (r->s[k].len)
				emit(r, k, r->s[k].buf, r->s[k].len, 1);
			r->s[k].len = 0;
		}
		if (r->log_fd >= 0)
			close(r->log_fd);
		r->log_fd = -1;
	}
}

void launch_output_print_tail(int idx)
{
	struct out_rank *r = &out_ranks[idx];
	/* a partial last line counts too */
	struct out_stream *s = &r->s[1];
	int partial = s->len > 0;

	if (r->tail_count == 0 && !partial)
		return;
	launch_msg("last lines of rank %d's stderr:", r->rank);
	for (int i = 0; i < r->tail_count; i++) {
		int k = (r->tail_next - r->tail_count + i + TAIL_LINES) % TAIL_LINES;
		if (partial && i == 0 && r->tail_count == TAIL_LINES)
			continue;
		dprintf(2, "    [rank %d] %s\n", r->rank, r->tail[k]);
	}
	if (partial)
		dprintf(2, "    [rank %d] %.*s\n", r->rank, (int)(s->len < 500 ? s->len : 500), s->buf);
}
