/* SPDX-License-Identifier: MIT
 *
 * ddp_status.c - libddp's side of the status board (ddp_status.h): maps
 * its own slot of the memfd that ddprun passed in DDP_STATUS_FD and writes
 * progress, step and collective state into it.
 *
 * Contract: ddp_status_attach runs once, from ddp_job_init; the writers may
 * run from any thread (relaxed atomic stores, no locks, no allocation).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_status.h"

static struct ddp_status_slot *slot;
static void *map_base;
static size_t map_len;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ddp_status_attach(int local_rank)
{
	const char *v = getenv(DDP_STATUS_FD_ENV);
	char *end;
	struct stat st;

	if (!v || !*v || slot)
		return;
	long fd = strtol(v, &end, 10);
	if (*end || fd < 3 || fd > 1 << 20 || local_rank < 0)
		return;
	if (ddp_sys_fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < (uint64_t)(local_rank + 1) * DDP_STATUS_SLOT_BYTES) {
		DDP_WARN("libddp: %s=%s is not ddprun's status board: ddprun cannot watch this rank's progress",
			 DDP_STATUS_FD_ENV, v);
		return;
	}
	map_len = (size_t)st.st_size;
	map_base = DDP_SYS(mmap64)(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	DDP_SYS(close)((int)fd); /* the program's children do not need it */
	if (map_base == MAP_FAILED) {
		map_base = NULL;
		DDP_WARN("libddp: cannot map ddprun's status board: %s", strerror(errno));
		return;
	}
	struct ddp_status_slot *s = (struct ddp_status_slot *)map_base + local_rank;
	DDP_STATUS_STORE(s->pid, (int32_t)getpid());
	DDP_STATUS_STORE(s->attach_ns, now_ns());
	DDP_STATUS_STORE(s->magic, DDP_STATUS_MAGIC);
	slot = s;
}

void ddp_status_fork_child(void)
{
	slot = NULL; /* the mapping stays (shared with the parent), unwritten */
}

void ddp_status_progress(void)
{
	struct ddp_status_slot *s = slot;
	if (!s)
		return;
	DDP_STATUS_STORE(s->last_ns, now_ns());
	__atomic_fetch_add(&s->progress, 1, __ATOMIC_RELAXED);
}

void ddp_status_step(uint64_t step)
{
	struct ddp_status_slot *s = slot;
	if (s)
		DDP_STATUS_STORE(s->step, step);
}

/* Collectives this process is inside (the injecting thread and the
 * collectives' progress thread may both be): the board says "inside" until
 * the last one leaves. */
static int coll_depth;
static uint64_t coll_numbered; /* ddp_status_coll_next */
static int coll_broken;        /* a collective failed: the board stays "inside" */

void ddp_status_coll_enter(uint64_t seq, const char *name)
{
	struct ddp_status_slot *s = slot;
	if (!s)
		return;
	__atomic_fetch_add(&coll_depth, 1, __ATOMIC_ACQ_REL);
	size_t n = strlen(name);
	if (n >= sizeof s->coll_name)
		n = sizeof s->coll_name - 1;
	for (size_t i = 0; i < sizeof s->coll_name; i++)
		__atomic_store_n(&s->coll_name[i], i < n ? name[i] : '\0', __ATOMIC_RELAXED);
	uint64_t t = now_ns();
	DDP_STATUS_STORE(s->coll_since_ns, t);
	DDP_STATUS_STORE(s->last_ns, t); /* entering a collective is progress */
	__atomic_fetch_add(&s->progress, 1, __ATOMIC_RELAXED);
	DDP_STATUS_STORE(s->coll_in, seq);
}

uint64_t ddp_status_coll_next(void)
{
	return __atomic_add_fetch(&coll_numbered, 1, __ATOMIC_RELAXED);
}

void ddp_status_coll_begin(const char *name)
{
	ddp_status_coll_enter(ddp_status_coll_next(), name);
}

void ddp_status_coll_failed(void)
{
	__atomic_store_n(&coll_broken, 1, __ATOMIC_RELEASE);
}

void ddp_status_coll_leave(void)
{
	struct ddp_status_slot *s = slot;
	if (!s)
		return;
	if (__atomic_sub_fetch(&coll_depth, 1, __ATOMIC_ACQ_REL) > 0)
		return; /* another one is still inside */
	if (__atomic_load_n(&coll_broken, __ATOMIC_ACQUIRE))
		return; /* it never finished: the rank stops inside it */
	uint64_t seq = DDP_STATUS_LOAD(s->coll_in), t = now_ns();
	if (seq)
		DDP_STATUS_STORE(s->coll_ns,
				 DDP_STATUS_LOAD(s->coll_ns) + (t - DDP_STATUS_LOAD(s->coll_since_ns)));
	DDP_STATUS_STORE(s->coll_in, 0);
	if (seq)
		DDP_STATUS_STORE(s->coll_done, seq);
	DDP_STATUS_STORE(s->last_ns, t);
}
