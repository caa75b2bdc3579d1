/* SPDX-License-Identifier: MIT
 *
 * ddp_stats.c - the list of per-thread counter blocks (see ddp_stats.h).
 *
 * Contract: stats_lock guards the list and the retired totals.  A block is
 * written only by its thread; at thread exit the pthread-key destructor
 * (on that thread) folds it into `retired`, has the owner drop its pointer
 * (the forget callback of ddp_stats_init) and frees it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ddp_stats.h"

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ddp_stats_thread *stats_list; /* live threads' blocks */
static struct ddp_stats_thread retired;     /* exited threads' sums */
static pthread_key_t stats_key;
static int stats_key_ok;
static void (*stats_forget)(void); /* drops the thread's pointer */
static size_t nblocks;             /* blocks on stats_list      */

static void add_block(struct ddp_stats_thread *dst, const struct ddp_stats_thread *src)
{
	for (size_t i = 0; i < DDP_STATS_MAX_HOOKS; i++) {
		dst->calls[i] += __atomic_load_n(&src->calls[i], __ATOMIC_RELAXED);
		dst->errors[i] += __atomic_load_n(&src->errors[i], __ATOMIC_RELAXED);
		dst->timed[i] += __atomic_load_n(&src->timed[i], __ATOMIC_RELAXED);
		dst->time_ns[i] += __atomic_load_n(&src->time_ns[i], __ATOMIC_RELAXED);
	}
	for (size_t d = 0; d < DDP_COPY_NDIR; d++) {
		dst->copy_bytes[d] += __atomic_load_n(&src->copy_bytes[d], __ATOMIC_RELAXED);
		dst->copy_calls[d] += __atomic_load_n(&src->copy_calls[d], __ATOMIC_RELAXED);
	}
}

/* Puts a thread's block on the list the totals are summed from. */
static void link_block(struct ddp_stats_thread *st)
{
	pthread_mutex_lock(&stats_lock);
	st->next = stats_list;
	if (stats_list)
		stats_list->prev = st;
	stats_list = st;
	nblocks++;
	pthread_mutex_unlock(&stats_lock);
}

static void thread_exit(void *p)
{
	struct ddp_stats_thread *st = p;

	pthread_mutex_lock(&stats_lock);
	add_block(&retired, st);
	if (st->prev)
		st->prev->next = st->next;
	else
		stats_list = st->next;
	if (st->next)
		st->next->prev = st->prev;
	nblocks--;
	pthread_mutex_unlock(&stats_lock);
	if (!stats_forget) {
		/* nobody can drop the thread's pointer to the block: a hook called
		 * from a later TLS destructor would use freed memory, so keep it
		 * (zeroed, linked) until exit */
		memset(st, 0, sizeof *st);
		link_block(st);
		return;
	}
	/* runs on the exiting thread itself: once its pointer is dropped, a hook
	 * from a later destructor gets a new block (freed in the next round), and
	 * a program that makes threads by the million does not keep 8 KB each */
	stats_forget();
	free(st);
}

ddp_result ddp_stats_init(void (*forget)(void))
{
	stats_forget = forget;
	if (pthread_key_create(&stats_key, thread_exit) == 0)
		stats_key_ok = 1;
	return DDP_OK;
}

size_t ddp_stats_blocks(void)
{
	pthread_mutex_lock(&stats_lock);
	size_t n = nblocks;
	pthread_mutex_unlock(&stats_lock);
	return n;
}

struct ddp_stats_thread *ddp_stats_thread_new(void)
{
	struct ddp_stats_thread *st = calloc(1, sizeof *st);

	if (!st)
		return NULL;
	link_block(st);
	if (stats_key_ok)
		pthread_setspecific(stats_key, st);
	return st;
}

void ddp_stats_total(struct ddp_stats_thread *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&stats_lock);
	add_block(out, &retired);
	for (struct ddp_stats_thread *st = stats_list; st; st = st->next)
		add_block(out, st);
	pthread_mutex_unlock(&stats_lock);
	out->next = out->prev = NULL;
}

const char *ddp_copy_dir_name(enum ddp_copy_dir d)
{
	static const char *const names[DDP_COPY_NDIR] = { "htod", "dtoh", "dtod", "htoh", "memset" };
	return (unsigned)d < DDP_COPY_NDIR ? names[d] : "?";
}

uint64_t ddp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
