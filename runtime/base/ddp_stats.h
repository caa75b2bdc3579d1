/* SPDX-License-Identifier: MIT
 *
 * ddp_stats.h - per-hook counters and the exit summary of libddp.
 *
 * Each thread that enters a hook gets its own block of counters (calls,
 * errors, timed calls and their time per hook id, bytes copied by direction),
 * written only by that thread with plain relaxed stores: no lock, no shared
 * cache line on the launch path.  The blocks are linked in a global list
 * (mutex, taken only when a thread first enters a hook and when it exits,
 * when its counts are folded into the retired totals).  The summary sums the
 * list.  An exiting thread's block is folded into the totals and freed.
 *
 * Contract: ddp_stats_init once (library init).  ddp_stats_count/_time/
 * _error/_copy only from the block's own thread.  ddp_stats_summary at exit
 * (or any time: counts read racily are at worst slightly stale).
 */
#ifndef DDP_STATS_H
#define DDP_STATS_H

#include <stdint.h>
#include <stddef.h>
#include "ddp_err.h"

#define DDP_STATS_MAX_HOOKS 256

enum ddp_copy_dir {
	DDP_COPY_HTOD = 0,
	DDP_COPY_DTOH,
	DDP_COPY_DTOD,
	DDP_COPY_HTOH,
	DDP_COPY_SET, /* memset bytes */
	DDP_COPY_NDIR,
};

struct ddp_stats_thread {
	uint64_t calls[DDP_STATS_MAX_HOOKS];
	uint64_t errors[DDP_STATS_MAX_HOOKS];
	uint64_t timed[DDP_STATS_MAX_HOOKS];   /* calls whose time was taken  */
	uint64_t time_ns[DDP_STATS_MAX_HOOKS]; /* their summed duration       */
	uint64_t copy_bytes[DDP_COPY_NDIR];
	uint64_t copy_calls[DDP_COPY_NDIR];
	struct ddp_stats_thread *next, *prev; /* global list (stats mutex)   */
};

static inline void ddp_stats_add_(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}
static inline void ddp_stats_count(struct ddp_stats_thread *st, unsigned id)
{
	ddp_stats_add_(&st->calls[id], 1);
}
static inline void ddp_stats_error(struct ddp_stats_thread *st, unsigned id)
{
	ddp_stats_add_(&st->errors[id], 1);
}
static inline void ddp_stats_time(struct ddp_stats_thread *st, unsigned id, uint64_t ns)
{
	ddp_stats_add_(&st->timed[id], 1);
	ddp_stats_add_(&st->time_ns[id], ns);
}
static inline void ddp_stats_copy(struct ddp_stats_thread *st, enum ddp_copy_dir d, uint64_t bytes)
{
	ddp_stats_add_(&st->copy_bytes[d], bytes);
	ddp_stats_add_(&st->copy_calls[d], 1);
}

/* Creates the thread-exit fold (pthread key).  Call once at init.  forget
 * runs on an exiting thread once its block is folded, just before the block
 * is freed: it must drop the thread's own pointer to it (NULL: blocks of
 * exited threads are kept, zeroed, until exit). */
ddp_result ddp_stats_init(void (*forget)(void));

/* Blocks currently allocated (live threads'; tests). */
size_t ddp_stats_blocks(void);

/* A zeroed block for the calling thread, linked in; NULL when out of memory
 * (the hooks then count nothing for this thread). */
struct ddp_stats_thread *ddp_stats_thread_new(void);

/* Sum of every thread's counters (live and exited) into *out. */
void ddp_stats_total(struct ddp_stats_thread *out /* OUT */);

/* Direction names: "htod", "dtoh", "dtod", "htoh", "memset". */
const char *ddp_copy_dir_name(enum ddp_copy_dir d);

/* Monotonic nanoseconds (vDSO clock_gettime). */
uint64_t ddp_now_ns(void);

#endif /* DDP_STATS_H */
