/* SPDX-License-Identifier: MIT
 *
 * ddp_trace.c - Chrome trace writer (see ddp_trace.h).
 *
 * The file is valid JSON after every write: it is written in chunks, each
 * chunk a run of whole events followed by the closing "\n]}\n", with one
 * pwrite at the offset where the previous chunk's closing began (so the
 * next chunk overwrites it).  A rank killed by any signal, SIGKILL too,
 * leaves a file that loads, holding every event up to its last flush; a
 * flusher thread flushes every thread's buffer once a second
 * (DDP_TRACE_FLUSH_S).  Only ddp_trace_close writes the final
 * `"otherData":{"ddprun":"complete",...}`, which is how `ddprun report`
 * tells a complete trace from a cut one.  Each thread's first flushed
 * event comes with a thread_name metadata event (its name at its first
 * event).
 *
 * Contract: trace_lock guards the fd, tail_off, the list of thread buffers
 * and each buffer's `done` and `named`.  A thread appends to its own buffer
 * without a lock and publishes the count with a release store; the flusher
 * (and a full buffer's owner) write events [done, n) under the lock; only
 * the owner resets a full buffer, under the lock.  In the child of a
 * fork() (ddp_trace_fork_child) tracing is off and nothing is written (the
 * flusher thread does not exist there), so the parent's file stays whole.
 * The flusher blocks every signal, so the program's signals go to its own
 * threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "ddp_array.h"
#include "ddp_hash.h"
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_trace.h"

#define DDP_TRACE_FLUSH_S 1

struct trace_buf {
	struct trace_buf *next; /* trace_lock                          */
	int tid;
	char tname[16]; /* the thread's name at its first event */
	int named;      /* thread_name event written (trace_lock) */
	size_t cap;
	size_t n;    /* published with release (owner)     */
	size_t done; /* events [0, done) written (trace_lock) */
	struct ddp_trace_ev ev[];
};

/* A growing text buffer (the chunk being formatted). */
struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cond = PTHREAD_COND_INITIALIZER;
static int trace_fd = -1;
static long long tail_off;         /* where the closing "]}" begins      */
static unsigned long long written; /* events written so far              */
static int trace_on;
static int trace_rank;
static int write_failed;
static size_t trace_cap = 8192;
static struct trace_buf *bufs;
static __thread struct trace_buf *my_buf;
static pthread_t flusher;
static int flusher_up, flusher_stop;

void ddp_json_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

static void sb_grow(struct sbuf *b, size_t more)
{
	if (b->oom || b->n + more + 1 <= b->cap)
		return;
	char *p = ddp_array_grow(b->p, &b->cap, b->n + more + 1, 1, 4096);
	if (!p) {
		b->oom = 1;
		return;
	}
	b->p = p;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	char tmp[256];

	va_start(ap, fmt);
	int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	if ((size_t)k >= sizeof tmp) {
		sb_grow(b, (size_t)k);
		if (b->oom)
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
		va_end(ap);
	} else {
		sb_grow(b, (size_t)k);
		if (b->oom)
			return;
		memcpy(b->p + b->n, tmp, (size_t)k + 1);
	}
	b->n += (size_t)k;
}

static void sb_escape(struct sbuf *b, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		sb_grow(b, 6);
		if (b->oom)
			return;
		if (c == '"' || c == '\\') {
			b->p[b->n++] = '\\';
			b->p[b->n++] = (char)c;
		} else if (c < 0x20) {
			b->n += (size_t)snprintf(b->p + b->n, 7, "\\u%04x", c);
		} else {
			b->p[b->n++] = (char)c;
		}
	}
	if (b->p)
		b->p[b->n] = '\0';
}

/* Writes b's text plus the closing tail at tail_off; trace_lock held.  The
 * events in b become part of the file only when the whole write landed. */
static void commit(struct sbuf *b, const char *tail)
{
	size_t tl = strlen(tail);

	if (trace_fd < 0 || b->oom)
		goto out;
	sb_grow(b, tl);
	if (b->oom)
		goto out;
	memcpy(b->p + b->n, tail, tl + 1);
	size_t len = b->n + tl, off = 0;
	while (off < len) {
		ssize_t w = pwrite(trace_fd, b->p + off, len - off, (off_t)(tail_off + (long long)off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!write_failed++)
				DDP_WARN("libddp: cannot write the trace (%s); its later events are lost",
					 w < 0 ? strerror(errno) : "short write");
			goto out;
		}
		off += (size_t)w;
	}
	tail_off += (long long)b->n;
out:
	if (b->oom && !write_failed++)
		DDP_WARN("libddp: out of memory formatting the trace; its later events are lost");
	b->n = 0;
}

/* Formats events [b->done, n) into out; trace_lock held. */
static void format_events(struct trace_buf *b, size_t n, struct sbuf *out)
{
	if (b->done >= n)
		return;
	if (!b->named) {
		b->named = 1;
		sb_printf(out,
			  ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
			  "\"args\":{\"name\":\"",
			  trace_rank, b->tid);
		sb_escape(out, b->tname[0] ? b->tname : "thread");
		sb_printf(out, "\"}}");
	}
	for (size_t i = b->done; i < n; i++) {
		const struct ddp_trace_ev *e = &b->ev[i];
		sb_printf(out, ",\n{\"name\":\"");
		sb_escape(out, e->name ? e->name : "?");
		sb_printf(out,
			  "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%llu.%03llu,\"dur\":%llu.%03llu,"
			  "\"pid\":%d,\"tid\":%d,\"args\":{\"result\":%d",
			  e->cat ? e->cat : "hook", (unsigned long long)(e->ts_ns / 1000),
			  (unsigned long long)(e->ts_ns % 1000), (unsigned long long)(e->dur_ns / 1000),
			  (unsigned long long)(e->dur_ns % 1000), trace_rank,
			  e->track ? DDP_TRACE_TRACK_TID + (int)e->track : b->tid, (int)e->result);
		if (e->kernel) {
			sb_printf(out, ",\"kernel\":\"");
			sb_escape(out, e->kernel);
			sb_printf(out, "\"");
		}
		if (e->grid[0])
			sb_printf(out, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]", e->grid[0], e->grid[1],
				  e->grid[2], e->block[0], e->block[1], e->block[2]);
		if (e->bytes)
			sb_printf(out, ",\"bytes\":%llu", (unsigned long long)e->bytes);
		if (e->addr)
			sb_printf(out, ",\"addr\":\"0x%llx\"", (unsigned long long)e->addr);
		if (e->step)
			sb_printf(out, ",\"step\":%llu", (unsigned long long)e->step);
		sb_printf(out, "}}");
	}
	written += n - b->done;
	b->done = n;
}

static const char open_tail[] = "\n]}\n";

/* Flushes every thread's published events as one chunk; trace_lock held. */
static void flush_all_locked(void)
{
	struct sbuf out = { 0 };

	for (struct trace_buf *b = bufs; b; b = b->next)
		format_events(b, __atomic_load_n(&b->n, __ATOMIC_ACQUIRE), &out);
	if (out.n || out.oom)
		commit(&out, open_tail);
	free(out.p);
}

static void *flusher_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&trace_lock);
	while (!flusher_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += DDP_TRACE_FLUSH_S;
		pthread_cond_timedwait(&flush_cond, &trace_lock, &ts);
		if (flusher_stop || !__atomic_load_n(&trace_on, __ATOMIC_ACQUIRE))
			break;
		flush_all_locked();
	}
	pthread_mutex_unlock(&trace_lock);
	return NULL;
}

ddp_result ddp_trace_open(const char *dir, int rank, size_t events_per_thread)
{
	char path[4096];
	struct sbuf head = { 0 };

	if (DDP_SYS(mkdir)(dir, 0777) != 0 && errno != EEXIST) {
		DDP_ERROR("DDP_TRACE=%s: cannot create the directory: %s", dir, strerror(errno));
		return DDP_ERR_SYS;
	}
	snprintf(path, sizeof path, "%s/rank%d.trace.json", dir, rank);
	/* close-on-exec: a program's fork + exec must not inherit it */
	int fd = DDP_SYS(open64)(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		DDP_ERROR("DDP_TRACE=%s: cannot write %s: %s", dir, path, strerror(errno));
		return DDP_ERR_SYS;
	}
	pthread_mutex_lock(&trace_lock);
	trace_fd = fd;
	tail_off = 0;
	trace_rank = rank;
	if (events_per_thread)
		trace_cap = events_per_thread;
	sb_printf(&head,
		  "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
		  "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
		  "\"args\":{\"name\":\"rank %d\"}},\n"
		  "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
		  "\"args\":{\"name\":\"communication\"}}",
		  rank, rank, rank, DDP_TRACE_TRACK_TID + DDP_TRACE_TRACK_COMM);
	commit(&head, open_tail);
	free(head.p);
	pthread_mutex_unlock(&trace_lock);
	__atomic_store_n(&trace_on, 1, __ATOMIC_RELEASE);

	/* the flusher: every signal blocked, so it never takes the program's */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	flusher_stop = 0;
	if (pthread_create(&flusher, NULL, flusher_main, NULL) == 0) {
		flusher_up = 1;
		pthread_setname_np(flusher, "ddp-trace");
	} else {
		DDP_WARN("libddp: no trace flusher thread; the trace is written when buffers fill "
			 "and at exit");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	DDP_INFO(INIT, "tracing to %s", path);
	return DDP_OK;
}

int ddp_trace_enabled(void)
{
	return __atomic_load_n(&trace_on, __ATOMIC_ACQUIRE);
}

static struct trace_buf *buf_new(void)
{
	struct trace_buf *b = calloc(1, sizeof *b + trace_cap * sizeof(struct ddp_trace_ev));
	if (!b)
		return NULL;
	b->cap = trace_cap;
	b->tid = (int)syscall(SYS_gettid);
	if (pthread_getname_np(pthread_self(), b->tname, sizeof b->tname) != 0)
		b->tname[0] = '\0';
	pthread_mutex_lock(&trace_lock);
	b->next = bufs;
	bufs = b;
	pthread_mutex_unlock(&trace_lock);
	return b;
}

void ddp_trace_event(const struct ddp_trace_ev *ev)
{
	struct trace_buf *b = my_buf;

	if (!__atomic_load_n(&trace_on, __ATOMIC_ACQUIRE))
		return;
	if (!b && !(b = my_buf = buf_new()))
		return;
	size_t n = b->n;
	if (n == b->cap) {
		struct sbuf out = { 0 };
		pthread_mutex_lock(&trace_lock);
		format_events(b, n, &out);
		commit(&out, open_tail);
		b->done = 0;
		__atomic_store_n(&b->n, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&trace_lock);
		free(out.p);
		n = 0;
	}
	b->ev[n] = *ev;
	__atomic_store_n(&b->n, n + 1, __ATOMIC_RELEASE);
}

/* Interned strings: a small open-addressing set, never freed. */
#define INTERN_SLOTS 4096
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char *interned[INTERN_SLOTS];

const char *ddp_trace_intern(const char *s)
{
	const char *r = "?";

	if (!s)
		return NULL;
	uint64_t h = ddp_fnv1a_str(DDP_FNV1A_INIT, s);
	pthread_mutex_lock(&intern_lock);
	for (size_t i = 0; i < INTERN_SLOTS; i++) {
		char **slot = &interned[(h + i) % INTERN_SLOTS];
		if (!*slot) {
			*slot = strdup(s);
			if (*slot)
				r = *slot;
			break;
		}
		if (strcmp(*slot, s) == 0) {
			r = *slot;
			break;
		}
	}
	pthread_mutex_unlock(&intern_lock);
	return r;
}

void ddp_trace_flush(void)
{
	if (!__atomic_load_n(&trace_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&trace_lock);
	flush_all_locked();
	pthread_mutex_unlock(&trace_lock);
}

void ddp_trace_fork_child(void)
{
	/* Runs in the child of the program's fork(), where other threads of the
	 * parent (the flusher too) may have held trace_lock: no lock, no write.
	 * The flusher does not exist here; the fd is the parent's. */
	__atomic_store_n(&trace_on, 0, __ATOMIC_RELEASE);
	flusher_up = 0;
	trace_fd = -1;
}

void ddp_trace_close(void)
{
	if (!__atomic_exchange_n(&trace_on, 0, __ATOMIC_ACQ_REL))
		return;
	if (flusher_up) {
		pthread_mutex_lock(&trace_lock);
		flusher_stop = 1;
		pthread_cond_signal(&flush_cond);
		pthread_mutex_unlock(&trace_lock);
		pthread_join(flusher, NULL);
		flusher_up = 0;
	}
	pthread_mutex_lock(&trace_lock);
	struct sbuf out = { 0 };
	char tail[160];
	for (struct trace_buf *b = bufs; b; b = b->next) {
		format_events(b, __atomic_load_n(&b->n, __ATOMIC_ACQUIRE), &out);
		b->done = 0;
		__atomic_store_n(&b->n, 0, __ATOMIC_RELEASE);
	}
	snprintf(tail, sizeof tail, "\n],\"otherData\":{\"ddprun\":\"complete\",\"events\":%llu}}\n", written);
	commit(&out, tail);
	free(out.p);
	if (trace_fd >= 0) {
		DDP_SYS(close)(trace_fd);
		trace_fd = -1;
	}
	pthread_mutex_unlock(&trace_lock);
}
