/* SPDX-License-Identifier: MIT
 *
 * ddp_status.c - libddp's side of the status board (ddp_status.h): maps
 * its own slot of the memfd that ddprun passed in DDP_STATUS_FD and writes
 * progress, step and collective state into it.
 *
 * Contract: ddp_status_attach runs once, from ddp_job_init; the writers may
 * run from any thread (relaxed atomic stores, no allocation; the collective
 * ones under a spin lock over the table of collectives in flight).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_status.h"

static struct ddp_status_slot *slot;
static struct ddp_status_slot *marks; /* the same slot, kept in a fork child */
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
	slot = marks = s;
}

/* Writes len bytes at offset `at` of this rank's slot (LOCAL_RANK) through
 * the descriptor DDP_STATUS_FD names, when it is ddprun's board: for a
 * process that has not mapped it.  Constructor-safe (getenv, raw
 * syscalls); errno preserved. */
static void board_pwrite(size_t at, const void *buf, size_t len)
{
	const char *v = getenv(DDP_STATUS_FD_ENV), *lr = getenv("LOCAL_RANK");
	char *end;
	struct stat st;
	int saved = errno;

	if (!v || !*v || !lr || !*lr)
		return;
	long fd = strtol(v, &end, 10);
	if (*end || fd < 3 || fd > 1 << 20)
		goto out;
	long k = strtol(lr, &end, 10);
	if (*end || k < 0 || k > 1 << 16)
		goto out;
	if (syscall(SYS_fstat, (int)fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)((k + 1) * DDP_STATUS_SLOT_BYTES))
		goto out;
	(void)syscall(SYS_pwrite64, (int)fd, buf, len, (off_t)(k * DDP_STATUS_SLOT_BYTES + (long)at));
out:
	errno = saved;
}

void ddp_status_mark_image(void)
{
	struct {
		int32_t pid;
		char comm[16];
	} m;

	_Static_assert(offsetof(struct ddp_status_slot, image_comm) ==
			       offsetof(struct ddp_status_slot, image_pid) + sizeof(int32_t),
		       "image_pid and image_comm are written together");
	/* the rank's own process leads its process group (ddprun made it so)
	 * in ddprun's session; a daemon it started with setsid leads a
	 * session of its own and must not overwrite the mark */
	if (getpid() != getpgrp() || getsid(0) == getpid())
		return;
	memset(&m, 0, sizeof m);
	m.pid = (int32_t)getpid();
	(void)prctl(PR_GET_NAME, m.comm);
	m.comm[15] = 0;
	board_pwrite(offsetof(struct ddp_status_slot, image_pid), &m, sizeof m);
}

void ddp_status_shard_opened(int spec)
{
	static const uint8_t one = 1;
	struct ddp_status_slot *s = marks;
	if (spec < 0 || spec >= DDP_STATUS_SHARD_SPECS)
		return;
	if (s)
		DDP_STATUS_STORE(s->shard_opened[spec], one);
	else
		board_pwrite(offsetof(struct ddp_status_slot, shard_opened) + (size_t)spec, &one, 1);
}

void ddp_status_averaged(uint64_t bytes)
{
	struct ddp_status_slot *s = slot;
	if (s && bytes)
		__atomic_fetch_add(&s->avg_bytes, bytes, __ATOMIC_RELAXED);
}

void ddp_status_aside(void)
{
	struct ddp_status_slot *s = slot;
	if (s)
		DDP_STATUS_STORE(s->aside, 1u);
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

/* Inside a step's update phase (ddp_status_step .. ddp_status_step_end)? */
static int phase_open;

void ddp_status_step(uint64_t step)
{
	struct ddp_status_slot *s = slot;
	__atomic_store_n(&phase_open, 1, __ATOMIC_RELAXED);
	if (s)
		DDP_STATUS_STORE(s->step, step);
}

void ddp_status_step_end(void)
{
	__atomic_store_n(&phase_open, 0, __ATOMIC_RELAXED);
}

/* Collectives this process is inside (the injecting thread and the
 * collectives' progress or watchdog thread may both be, so may several
 * ranks' worth of overlapped allreduces): a small table, under a spin lock.
 * The board shows the lowest-numbered one (the collective that holds the
 * rank up), and the highest finished below it. */
#define FLIGHT_MAX 32
struct flight {
	uint64_t seq, since, step;
	char name[32];
};
static struct flight flight[FLIGHT_MAX];
static int nflight;
static int flight_lock;
static uint64_t busy_since;      /* when the table last became non-empty  */
static uint64_t left_max;        /* highest collective left               */
static uint64_t left_step;       /* and the step it was entered at        */
static char left_name[32];       /* and its kind                          */
static uint64_t coll_numbered;   /* ddp_status_coll_next                  */
static int coll_broken;          /* a collective failed: the board stays "inside" */
/* What this thread entered and has not left (enter and leave pair up per
 * thread); deeper nesting than this is not tracked. */
static __thread uint64_t my_seq[8];
static __thread int my_depth;

/* The step each collective belongs to, taken when it is numbered (program
 * order, the same on every rank; an overlapped allreduce is entered later,
 * on the comm's thread, when the board's step may have moved on): the
 * board's step inside an update phase, the next one outside (backward's
 * allreduces, checks after a step). */
#define STEP_RING 1024
static uint64_t step_at[STEP_RING];

static void lock(void)
{
	while (__atomic_test_and_set(&flight_lock, __ATOMIC_ACQUIRE))
		;
}

static void unlock(void)
{
	__atomic_clear(&flight_lock, __ATOMIC_RELEASE);
}

static void put_name(char *dst /* 32 bytes */, const char *src)
{
	size_t n = src ? strnlen(src, 31) : 0;
	for (size_t i = 0; i < 32; i++)
		__atomic_store_n(&dst[i], i < n ? src[i] : '\0', __ATOMIC_RELAXED);
}

/* Writes the table's state to the board (under the lock). */
static void publish(struct ddp_status_slot *s)
{
	int low = -1;
	for (int i = 0; i < nflight; i++)
		if (low < 0 || flight[i].seq < flight[low].seq)
			low = i;
	if (low < 0) {
		DDP_STATUS_STORE(s->coll_in, 0);
		DDP_STATUS_STORE(s->done_step, left_step);
		put_name(s->done_name, left_name);
		DDP_STATUS_STORE(s->coll_done, left_max);
		return;
	}
	const struct flight *f = &flight[low];
	uint64_t done = left_max < f->seq ? left_max : f->seq - 1;
	DDP_STATUS_STORE(s->coll_in, 0); /* a reader sees a whole record or none */
	put_name(s->coll_name, f->name);
	DDP_STATUS_STORE(s->coll_since_ns, f->since);
	DDP_STATUS_STORE(s->coll_in_step, f->step);
	if (done == left_max) {
		DDP_STATUS_STORE(s->done_step, left_step);
		put_name(s->done_name, left_name);
	} else {
		DDP_STATUS_STORE(s->done_step, 0);
		put_name(s->done_name, "");
	}
	DDP_STATUS_STORE(s->coll_done, done);
	DDP_STATUS_STORE(s->coll_in, f->seq);
}

void ddp_status_coll_enter(uint64_t seq, const char *name)
{
	struct ddp_status_slot *s = slot;
	if (!s)
		return;
	uint64_t t = now_ns();
	if (my_depth < (int)(sizeof my_seq / sizeof my_seq[0]))
		my_seq[my_depth] = seq;
	my_depth++;
	lock();
	if (nflight < FLIGHT_MAX) {
		struct flight *f = &flight[nflight++];
		f->seq = seq;
		f->since = t;
		f->step = __atomic_load_n(&step_at[seq % STEP_RING], __ATOMIC_ACQUIRE);
		snprintf(f->name, sizeof f->name, "%s", name);
		if (nflight == 1)
			busy_since = t;
	}
	publish(s);
	unlock();
	DDP_STATUS_STORE(s->last_ns, t); /* entering a collective is progress */
	__atomic_fetch_add(&s->progress, 1, __ATOMIC_RELAXED);
}

uint64_t ddp_status_coll_next(void)
{
	uint64_t seq = __atomic_add_fetch(&coll_numbered, 1, __ATOMIC_RELAXED);
	struct ddp_status_slot *s = slot;
	if (s)
		__atomic_store_n(&step_at[seq % STEP_RING],
				 DDP_STATUS_LOAD(s->step) + !__atomic_load_n(&phase_open, __ATOMIC_RELAXED),
				 __ATOMIC_RELEASE);
	return seq;
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
	if (!s || my_depth <= 0)
		return;
	my_depth--;
	if (my_depth >= (int)(sizeof my_seq / sizeof my_seq[0]))
		return; /* not tracked */
	if (__atomic_load_n(&coll_broken, __ATOMIC_ACQUIRE))
		return; /* it never finished: the rank stops inside it */
	uint64_t seq = my_seq[my_depth], t = now_ns();
	lock();
	for (int i = 0; i < nflight; i++) {
		if (flight[i].seq != seq)
			continue;
		if (seq > left_max) {
			left_max = seq;
			left_step = flight[i].step;
			memcpy(left_name, flight[i].name, sizeof left_name);
		}
		flight[i] = flight[--nflight];
		if (nflight == 0)
			DDP_STATUS_STORE(s->coll_ns, DDP_STATUS_LOAD(s->coll_ns) + (t - busy_since));
		break;
	}
	publish(s);
	unlock();
	DDP_STATUS_STORE(s->last_ns, t);
}
