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
 * ddprun's own stdout and stderr are written without ever blocking the
 * event loop (launch_term_write, for ddprun's messages too): a consumer that
 * stalls (`| less` not scrolled) must not delay failure handling.  What it
 * does not take waits, up to TERM_PENDING_MAX bytes per stream; beyond that
 * output to it is dropped and counted (said once, and the count at the end;
 * the log files keep everything).  After the job, ddprun waits for the
 * reader to take what waits (a signal ends that wait).
 *
 * Contract: main thread only (supervise.c's poll loop).  No thread per pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include "launch.h"

#define LINE_MAX_BYTES (64 * 1024)
#define TAIL_LINES 10
#define TAIL_LINE_BYTES 512

struct out_stream {
	char *buf; /* partial line (LINE_MAX_BYTES)   */
	size_t len;
};

struct out_rank {
	int rank;               /* global rank for the prefix            */
	int show;               /* on the terminal (filter, --quiet)     */
	int log_fd;             /* DIR/rank<k>.log or -1                 */
	struct out_stream s[2]; /* [0] stdout, [1] stderr                */
	char tail[TAIL_LINES][TAIL_LINE_BYTES];
	int tail_next, tail_count;
};

static struct out_rank *out_ranks;
static int out_nranks;
static char *stage; /* one read's worth of prefixed lines  */
static size_t stage_len, stage_cap;

/* Writes all of p to a log file (a regular file: it never waits for a
 * reader). */
static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* ddprun's own stdout (fd 1) and stderr (fd 2), written without ever
 * blocking the event loop: what the consumer does not take now waits in
 * `pend` (at most TERM_PENDING_MAX bytes); beyond that, output to it is
 * dropped and counted until it has taken what waits. */
#define TERM_PENDING_MAX (16u << 20)
struct term {
	int wfd;     /* descriptor written: fd itself or a non-blocking reopen */
	int mode;    /* TERM_*                                                  */
	int gone;    /* EPIPE or another hard error: nothing more goes there    */
	int stalled; /* dropping now (pend was full)                            */
	char *pend;  /* bytes not yet taken, in order                           */
	size_t len, cap;
	unsigned long long dropped_lines, dropped_bytes;
};
enum {
	TERM_UNSET,
	TERM_NONBLOCK,
	TERM_DIRECT,
	TERM_POLL
};
static struct term terms[3] = { { .wfd = -1 }, { .wfd = -1 }, { .wfd = -1 } };

/* How fd 1 or 2 can be written without blocking: a pipe gets a description
 * of its own with O_NONBLOCK (reopened through /proc/self/fd, so the flag
 * never changes the description ddprun shares with its parent); one that is
 * already non-blocking is used as it is; a regular file is written directly
 * (it never waits for a reader); anything else (a terminal, a socket) is
 * written only when poll(2) says it has room, PIPE_BUF bytes at a time. */
static void term_setup(struct term *t, int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	t->wfd = fd;
	t->mode = TERM_POLL;
	if (fl < 0 || fstat(fd, &st) != 0) {
		t->gone = 1;
		return;
	}
	if (fl & O_NONBLOCK) {
		t->mode = TERM_NONBLOCK;
	} else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
		t->mode = TERM_DIRECT;
	} else if (S_ISFIFO(st.st_mode)) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		int n = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (n >= 0) {
			t->wfd = n;
			t->mode = TERM_NONBLOCK;
		}
	}
}

/* One write that never blocks: bytes taken, 0 when there is no room, -1
 * when the consumer is gone. */
static ssize_t term_try(struct term *t, const char *p, size_t n)
{
	if (t->mode == TERM_POLL) {
		struct pollfd pf = { .fd = t->wfd, .events = POLLOUT };
		if (poll(&pf, 1, 0) <= 0)
			return 0;
		if (pf.revents & (POLLERR | POLLNVAL))
			return -1;
		if (n > PIPE_BUF)
			n = PIPE_BUF;
	}
	for (;;) {
		ssize_t w = write(t->wfd, p, n);
		if (w >= 0)
			return w;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	}
}

static void term_drop(struct term *t, const char *p, size_t n)
{
	t->dropped_bytes += n;
	for (const char *q = p; q < p + n && (q = memchr(q, '\n', (size_t)(p + n - q))); q++)
		t->dropped_lines++;
}

/* Writes what is pending; 1 when nothing is left. */
static int term_flush(struct term *t)
{
	size_t off = 0;
	while (off < t->len && !t->gone) {
		ssize_t w = term_try(t, t->pend + off, t->len - off);
		if (w < 0)
			t->gone = 1;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (t->gone)
		off = t->len;
	memmove(t->pend, t->pend + off, t->len - off);
	t->len -= off;
	return t->len == 0;
}

void launch_term_write(int fd, const char *p, size_t n)
{
	struct term *t = &terms[fd == 1 ? 1 : 2];
	if (t->mode == TERM_UNSET)
		term_setup(t, fd == 1 ? 1 : 2);
	if (t->gone)
		return;
	if (t->len && !term_flush(t) && t->len + n > TERM_PENDING_MAX) {
		if (!t->stalled) {
			t->stalled = 1;
			char msg[320];
			int m = snprintf(
				msg, sizeof msg,
				"ddprun: %s is not being read (%u MiB wait for its reader); output to it "
				"is dropped and counted until it reads again%s\n",
				fd == 1 ? "stdout" : "stderr", TERM_PENDING_MAX >> 20,
				out_nranks && out_ranks[0].log_fd >= 0 ? " (the log files keep all of it)"
								       : "");
			/* said once, on stderr when that one is not the stuck one */
			if (fd == 1 && !terms[2].stalled)
				launch_term_write(2, msg, (size_t)m);
		}
		term_drop(t, p, n);
		return;
	}
	if (!t->len)
		t->stalled = 0; /* it has read what waited */
	if (!t->len) {
		while (n > 0) {
			ssize_t w = term_try(t, p, n);
			if (w < 0) {
				t->gone = 1;
				return;
			}
			if (w == 0)
				break;
			p += w;
			n -= (size_t)w;
		}
		if (!n)
			return;
	}
	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap : 65536;
		while (cap < t->len + n)
			cap *= 2;
		char *b = realloc(t->pend, cap);
		if (!b) {
			term_drop(t, p, n);
			return;
		}
		t->pend = b;
		t->cap = cap;
	}
	memcpy(t->pend + t->len, p, n);
	t->len += n;
}

int launch_term_pending(int fds[2])
{
	int k = 0;
	for (int fd = 1; fd <= 2; fd++) {
		struct term *t = &terms[fd];
		if (t->len && !t->gone)
			term_flush(t);
		if (t->len && !t->gone)
			fds[k++] = t->wfd;
	}
	return k;
}

void launch_term_finish(int sigfd)
{
	for (int fd = 1; fd <= 2; fd++) {
		struct term *t = &terms[fd];
		while (t->len && !t->gone && !term_flush(t)) {
			/* the job is over: wait for the reader, but a signal ends it */
			struct pollfd pf[2] = { { .fd = t->wfd, .events = POLLOUT },
						{ .fd = sigfd, .events = POLLIN } };
			if (poll(pf, sigfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
				break;
			if (sigfd < 0 || !(pf[1].revents & POLLIN))
				continue;
			struct signalfd_siginfo si;
			int stop = 0;
			while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
				stop |= si.ssi_signo != SIGCHLD; /* late exits of the job do not count */
			if (stop) { /* SIGINT, SIGTERM, SIGHUP: stop waiting for the reader */
				term_drop(t, t->pend, t->len);
				t->len = 0;
			}
		}
	}
	for (int fd = 1; fd <= 2; fd++) {
		struct term *t = &terms[fd];
		if (t->dropped_bytes) {
			char msg[256];
			int m = snprintf(msg, sizeof msg,
					 "ddprun: %llu line%s (%llu bytes) of output to %s "
					 "were dropped because it was not read\n",
					 t->dropped_lines, t->dropped_lines == 1 ? "" : "s", t->dropped_bytes,
					 fd == 1 ? "stdout" : "stderr");
			struct term *e = &terms[2];
			if (e->mode == TERM_UNSET)
				term_setup(e, 2);
			if (!e->gone && !e->len)
				term_try(e, msg, (size_t)m);
			t->dropped_lines = t->dropped_bytes = 0; /* said once */
		}
		if (t->wfd > 2)
			close(t->wfd);
		t->wfd = fd;
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

	for (int i = 0; out_ranks && i < out_nranks; i++) /* a restart's: the last attempt's */
		for (int k = 0; k < 2; k++)
			free(out_ranks[i].s[k].buf);
	free(out_ranks);
	out_nranks = job->nranks;
	out_ranks = calloc((size_t)job->nranks, sizeof *out_ranks);
	if (!out_ranks)
		return DDP_ERR_NOMEM;
	if (o->ranks_filter) {
		filter = malloc((size_t)job->world_size);
		if (!filter)
			return DDP_ERR_NOMEM;
		DDP_CHECK(launch_parse_rank_list("--ranks-filter", o->ranks_filter, job->world_size, filter));
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
	if (r->show && stage_len)
		launch_term_write(is_err ? 2 : 1, stage, stage_len);
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
	char line[TAIL_LINE_BYTES + 32];
	for (int i = 0; i < r->tail_count; i++) {
		int k = (r->tail_next - r->tail_count + i + TAIL_LINES) % TAIL_LINES;
		if (partial && i == 0 && r->tail_count == TAIL_LINES)
			continue;
		int m = snprintf(line, sizeof line, "    [rank %d] %s\n", r->rank, r->tail[k]);
		launch_term_write(2, line, (size_t)(m < (int)sizeof line ? m : (int)sizeof line - 1));
	}
	if (partial) {
		int m = snprintf(line, sizeof line, "    [rank %d] %.*s\n", r->rank,
				 (int)(s->len < 500 ? s->len : 500), s->buf);
		launch_term_write(2, line, (size_t)(m < (int)sizeof line ? m : (int)sizeof line - 1));
	}
}
