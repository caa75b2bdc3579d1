/* SPDX-License-Identifier: MIT
 *
 * ddp_trace.c - Chrome trace writer (see ddp_trace.h).
 *
 * Contract: trace_lock guards the FILE, the list of thread buffers and
 * `first_event`.  A thread appends to its own buffer without a lock and
 * publishes the count with a release store; a flush by another thread (only
 * at close) reads up to the published count.  In the child of a fork()
 * (ddp_trace_fork_child) tracing is off and the inherited FILE holds nothing
 * to write, so the parent's file stays whole.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_trace.h"

struct trace_buf {
	struct trace_buf *next;     /* trace_lock                     */
	int tid;
	size_t cap;
	size_t n;                   /* published with release         */
	struct ddp_trace_ev ev[];
};

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *trace_file;
static int trace_on;
static int trace_rank;
static int first_event = 1;
static size_t trace_cap = 8192;
static struct trace_buf *bufs;
static __thread struct trace_buf *my_buf;

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

ddp_result ddp_trace_open(const char *dir, int rank, size_t events_per_thread)
{
	char path[4096];

	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		DDP_ERROR("DDP_TRACE=%s: cannot create the directory: %s", dir, strerror(errno));
		return DDP_ERR_SYS;
	}
	snprintf(path, sizeof path, "%s/rank%d.trace.json", dir, rank);
	FILE *f = DDP_SYS(fopen64)(path, "we"); /* a program's fork + exec must not inherit it */
	if (!f) {
		DDP_ERROR("DDP_TRACE=%s: cannot write %s: %s", dir, path, strerror(errno));
		return DDP_ERR_SYS;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
		   "\"args\":{\"name\":\"rank %d\"}}", rank, rank);
	first_event = 0;
	trace_rank = rank;
	if (events_per_thread)
		trace_cap = events_per_thread;
	trace_file = f;
	__atomic_store_n(&trace_on, 1, __ATOMIC_RELEASE);
	DDP_INFO(INIT, "tracing to %s", path);
	return DDP_OK;
}

int ddp_trace_enabled(void)
{
	return __atomic_load_n(&trace_on, __ATOMIC_ACQUIRE);
}

/* trace_lock held. */
static void write_events(const struct trace_buf *b, size_t n)
{
	FILE *f = trace_file;
	for (size_t i = 0; i < n; i++) {
		const struct ddp_trace_ev *e = &b->ev[i];
		fprintf(f, "%s\n{\"name\":\"", first_event ? "" : ",");
		first_event = 0;
		ddp_json_escape(f, e->name ? e->name : "?");
		fprintf(f, "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%llu.%03llu,\"dur\":%llu.%03llu,"
			   "\"pid\":%d,\"tid\":%d,\"args\":{\"result\":%d",
			e->cat ? e->cat : "hook", (unsigned long long)(e->ts_ns / 1000),
			(unsigned long long)(e->ts_ns % 1000), (unsigned long long)(e->dur_ns / 1000),
			(unsigned long long)(e->dur_ns % 1000), trace_rank, b->tid, (int)e->result);
		if (e->kernel) {
			fputs(",\"kernel\":\"", f);
			ddp_json_escape(f, e->kernel);
			fputc('"', f);
		}
		if (e->grid[0])
			fprintf(f, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]", e->grid[0], e->grid[1],
				e->grid[2], e->block[0], e->block[1], e->block[2]);
		if (e->bytes)
			fprintf(f, ",\"bytes\":%llu", (unsigned long long)e->bytes);
		if (e->addr)
			fprintf(f, ",\"addr\":\"0x%llx\"", (unsigned long long)e->addr);
		if (e->step)
			fprintf(f, ",\"step\":%llu", (unsigned long long)e->step);
		fputs("}}", f);
	}
}

static struct trace_buf *buf_new(void)
{
	struct trace_buf *b = calloc(1, sizeof *b + trace_cap * sizeof(struct ddp_trace_ev));
	if (!b)
		return NULL;
	b->cap = trace_cap;
	b->tid = (int)syscall(SYS_gettid);
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
		pthread_mutex_lock(&trace_lock);
		if (trace_file)
			write_events(b, n);
		__atomic_store_n(&b->n, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&trace_lock);
		n = 0;
	}
	b->ev[n] = *ev;
	__atomic_store_n(&b->n, n + 1, __ATOMIC_RELEASE);
}

void ddp_trace_fork_child(void)
{
	/* Runs in the child of the program's fork(), where other threads of the
	 * parent may have held trace_lock or been inside the FILE: no lock, no
	 * write.  The FILE shares its offset with the parent's; its unwritten
	 * bytes are the parent's and would be written twice at the child's exit
	 * (stdio flushes every stream), so they are dropped here. */
	__atomic_store_n(&trace_on, 0, __ATOMIC_RELEASE);
	if (trace_file)
		__fpurge(trace_file);
}

void ddp_trace_close(void)
{
	if (!__atomic_exchange_n(&trace_on, 0, __ATOMIC_ACQ_REL))
		return;
	pthread_mutex_lock(&trace_lock);
	for (struct trace_buf *b = bufs; b; b = b->next) {
		size_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
		write_events(b, n);
		__atomic_store_n(&b->n, 0, __ATOMIC_RELEASE);
	}
	fprintf(trace_file, "\n]}\n");
	fclose(trace_file);
	trace_file = NULL;
	pthread_mutex_unlock(&trace_lock);
}
