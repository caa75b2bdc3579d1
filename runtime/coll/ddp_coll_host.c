/* SPDX-License-Identifier: MIT
 *
 * ddp_coll_host.c - the host collectives backend: allreduce-average and
 * broadcast between the processes of one node through one shared-memory
 * segment, with process-shared barriers and a watchdog.
 *
 * Segment (a file in DDP_SHM_DIR, default /dev/shm, mode 0600, created by rank
 * 0 under a random name once every rank has arrived, published in the store
 * as coll/<n>/shm, unlinked as soon as every rank mapped it, so nothing is
 * left behind even after a crash):
 *
 *     struct host_hdr        magic, sizes, the barrier word, the abort record
 *     struct host_rank[W]    per rank, one cache line: barrier epoch, current
 *                            collective and its descriptor, pid
 *     data                   2 sets x W slots x slot_bytes (page aligned)
 *
 * Single copy (CMA): when every rank can read every other's memory with
 * process_vm_readv (probed once at set-up with a random cookie; needs the
 * same uid and pid namespace and no ptrace restriction; DDP_COLL_HOST_CMA=0
 * turns it off) and every rank's buffer of this collective is readable
 * (host memory; device buffers and device-file mappings are not), the data
 * does not go through the segment at all: see host_ar_cma / host_bc_cma.
 * The ranks agree through flags posted with the descriptor, so all take
 * the same path.  Otherwise:
 *
 * Allreduce of a chunk (m elements, set s; the sets alternate):
 *     1. every rank copies its m elements into slot[s][rank]      -> barrier
 *     2. rank r reduces slice r (a cache-line aligned 1/W of the chunk) over
 *        slot[s][0..W-1] in rank order, writing the result in place into
 *        its own slot[s][r] (lines already in its cache); nobody else
 *        touches slice r of any slot                             -> barrier
 *     3. every rank copies slice q of slot[s][q], for every q, out.
 * Each element is computed once, by one rank, in one order, so all ranks end
 * bit-identical.  Two barriers per chunk suffice because the sets alternate:
 * a rank writes set s again only after the barrier of the next chunk, which
 * nobody reaches before it finished reading set s.  Broadcast: the root
 * copies a chunk (a whole set) in -> barrier -> the others copy it out.
 * Every collective starts with a descriptor barrier: each rank posts (kind,
 * count, dtype, root) and checks everybody's after it, so ranks that disagree
 * fail with a message instead of corrupting each other.
 *
 * Device buffers are staged through two pinned host buffers (cfg.driver):
 * the copy to the host of chunk i+1 runs on the caller's stream while chunk i
 * is reduced, then chunk i goes back; one cuStreamSynchronize per chunk.
 *
 * Barriers: each rank publishes its barrier epoch; barrier e is complete when
 * every epoch is >= e.  Waiters spin (20 us), then yield (to 1 ms), then
 * FUTEX_WAIT (shared) on
 * a 32-bit wake word in slices of 50 ms; the arrival that completes a barrier
 * bumps the word and wakes sleepers (only when some sleep).  While waiting a rank
 * watches: the abort record (another rank failed: stop at once), the
 * timeout (no completion for cfg.timeout_s: name the ranks whose epoch is
 * behind), and every 200 ms the pids of the missing ranks (kill(pid, 0) and
 * the zombie state in /proc): a dead peer is named within a fraction of a
 * second.  The first rank to fail posts the abort record and wakes everyone.
 *
 * Contract: one thread per comm (ddp_coll.h).  The segment is shared by the
 * W processes; all cross-process fields are accessed with __atomic builtins.
 * No allocation on the collective path after the first device call (which
 * allocates the pinned staging).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "ddp_coll_backend.h"
#include "ddp_port.h"
#include "ddp_log.h"
#include "ddp_stats.h"
#include "ddp_store.h"

#define HOST_MAGIC 0x4c4c4f43505044ull /* "DDPCOLL" */
#define HOST_VERSION 2
#define HOST_MAX_RANKS 4096
#define HOST_DEFAULT_SLOT (1u << 20)
#define HOST_DEFAULT_STAGE (8u << 20)
#define HOST_SPIN 100000     /* pause-spin iterations at most       */
#define HOST_SPIN_S 20e-6    /* pause-spin this long, then yield    */
#define HOST_YIELD_S 1e-3    /* yield this long, then sleep (futex) */
#define HOST_BG_YIELD_S 2e-4 /* the async progress thread, inside an op */
#define HOST_PID_CHECK_S 0.2
#define HOST_MSG_LEN COLL_ERR_LEN
#define HOST_CMA_MAX (1ul << 30)  /* bytes per process_vm_readv call      */
#define HOST_CMA_TMP (512u << 10) /* peer data in flight per piece (all)  */

struct host_hdr {
	uint64_t magic; /* HOST_MAGIC, stored last by rank 0 (release)     */
	uint32_t version;
	uint32_t world;
	uint64_t slot_bytes; /* bytes per rank per set                           */
	uint64_t seg_bytes;
	uint64_t data_off;           /* offset of the data area (page aligned)          */
	_Alignas(64) uint32_t total; /* barrier arrivals (futex word, wraps)   */
	uint32_t waiters;            /* ranks in FUTEX_WAIT (wake only if > 0)   */
	_Alignas(64) uint32_t abort; /* 0, then 1 once a rank failed            */
	int32_t abort_rank;
	char abort_msg[HOST_MSG_LEN]; /* written before abort is set (release)   */
};

struct host_rank {
	_Alignas(64) uint64_t epoch; /* barriers entered                         */
	uint64_t seq;                /* collective in progress (number)          */
	uint64_t count;              /* descriptor: elements or bytes            */
	uint32_t kind;               /* enum ddp_coll_kind                       */
	uint32_t dtype;
	int32_t root;
	int32_t pid;
	uint64_t pidns;        /* inode of /proc/self/ns/pid               */
	uint64_t chunking;     /* slot and stage bytes folded together      */
	uint64_t buf;          /* CMA: this collective's buffer address    */
	uint32_t cma;          /* CMA: this rank's buffer is readable      */
	uint32_t cma_ok;       /* set-up: this rank can read every peer    */
	uint64_t probe_addr;   /* set-up: address of probe_cookie          */
	uint64_t probe_cookie; /* set-up: random value peers read there    */
	uint64_t tag_step;     /* the op's tag (ddp_coll_set_tag; async ops) */
	uint32_t tag_phase;
	char tag_what[48];
};

struct coll_host {
	struct host_hdr *hdr;
	struct host_rank *ranks; /* hdr's rank array                           */
	unsigned char *data;
	size_t seg_bytes;
	size_t slot;    /* bytes per rank per set                     */
	uint64_t epoch; /* barriers this rank entered                 */
	unsigned set;   /* set of the next chunk                      */
	void *stage[2]; /* pinned staging (device buffers)            */
	size_t stage_bytes;
	const char *what; /* current collective, for messages            */
	uint64_t pidns;
	int cma;            /* every rank can read every peer (CMA)       */
	unsigned char *tmp; /* CMA: (W-1) x tmp_bytes of peer data         */
	size_t tmp_bytes;
	uint64_t cookie; /* CMA probe value (peers read it here)       */
};

static long futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static unsigned char *slot_ptr(struct coll_host *h, unsigned set, int r, int world)
{
	return h->data + ((size_t)set * (size_t)world + (size_t)r) * h->slot;
}

static uint64_t self_pidns(void)
{
	struct stat st;
	return ddp_sys_stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Is the process gone (or a zombie)? */
static int pid_dead(pid_t pid)
{
	if (pid <= 0)
		return 0;
	if (kill(pid, 0) == -1 && errno == ESRCH)
		return 1;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = DDP_SYS(open64)(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	ssize_t n = DDP_SYS(read)(fd, buf, sizeof buf - 1);
	DDP_SYS(close)(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

/* Posts the abort record (first failure wins) and wakes every sleeper. */
static void host_post_abort(struct ddp_comm *c, const char *msg)
{
	struct coll_host *h = c->host;
	uint32_t zero = 0;
	/* claim with a CAS on abort_rank's companion: abort 0 -> 2 (writing) */
	if (__atomic_compare_exchange_n(&h->hdr->abort, &zero, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		h->hdr->abort_rank = c->rank;
		snprintf(h->hdr->abort_msg, sizeof h->hdr->abort_msg, "%s", msg);
		__atomic_store_n(&h->hdr->abort, 1, __ATOMIC_RELEASE);
	}
	/* move the barrier word so sleepers re-check, then wake them all */
	__atomic_add_fetch(&h->hdr->total, 0x40000000u, __ATOMIC_SEQ_CST);
	futex(&h->hdr->total, FUTEX_WAKE, INT_MAX, NULL);
}

void coll_host_abort(struct ddp_comm *c)
{
	if (c->host && c->host->hdr)
		host_post_abort(c, c->err);
}

/* Fails the comm with a message and tells the peers. */
static ddp_result host_fail(struct ddp_comm *c, ddp_result rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static ddp_result host_fail(struct ddp_comm *c, ddp_result rc, const char *fmt, ...)
{
	char msg[COLL_ERR_LEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	coll_fail(c, rc, 1, "%s", msg);
	coll_host_abort(c);
	return rc;
}

/* An abort by someone else: report it (quietly: its author logged it). */
static ddp_result host_seen_abort(struct ddp_comm *c)
{
	struct coll_host *h = c->host;
	/* the author writes its message between abort = 2 and abort = 1; if it
	 * was killed in between, do not wait for it for ever */
	double give_up = coll_now() + 1.0;
	while (__atomic_load_n(&h->hdr->abort, __ATOMIC_ACQUIRE) == 2 && coll_now() < give_up)
		sched_yield();
	if (__atomic_load_n(&h->hdr->abort, __ATOMIC_ACQUIRE) == 2)
		return coll_fail(c, DDP_ERR_REMOTE, 1,
				 "another rank stopped %s on rank %d and died before saying why", h->what,
				 c->rank);
	const char *msg = h->hdr->abort_msg;
	if (strncmp(msg, "libddp: ", 8) == 0)
		msg += 8;
	return coll_fail(c, DDP_ERR_REMOTE, 0, "rank %d stopped %s on rank %d: %s", h->hdr->abort_rank,
			 h->what, c->rank, msg);
}

/* Lists the ranks whose epoch is behind ours ("2,5") and notes dead ones. */
static void host_laggards(struct ddp_comm *c, char *list, size_t len, int *dead_rank)
{
	struct coll_host *h = c->host;
	size_t n = 0;
	list[0] = 0;
	*dead_rank = -1;
	for (int q = 0; q < c->world; q++) {
		if (__atomic_load_n(&h->ranks[q].epoch, __ATOMIC_ACQUIRE) >= h->epoch)
			continue;
		if (*dead_rank < 0 && h->ranks[q].pidns == h->pidns && pid_dead(h->ranks[q].pid))
			*dead_rank = q;
		if (n + 40 < len)
			n += (size_t)snprintf(list + n, len - n, "%s%d (at collective #%" PRIu64 ")",
					      n ? ", " : "", q,
					      __atomic_load_n(&h->ranks[q].seq, __ATOMIC_RELAXED));
	}
}

static int host_all_arrived(const struct coll_host *h, int world)
{
	for (int q = 0; q < world; q++)
		if (__atomic_load_n(&h->ranks[q].epoch, __ATOMIC_SEQ_CST) < h->epoch)
			return 0;
	return 1;
}

static ddp_result host_barrier(struct ddp_comm *c)
{
	struct coll_host *h = c->host;
	struct host_hdr *hd = h->hdr;
	h->epoch++;
	/* Arrive: publish the epoch, bump the wake word, and if that completed
	 * the barrier wake the sleepers (seq_cst orders this against a sleeper's
	 * waiters++ / epoch scan / FUTEX_WAIT on the old word). */
	__atomic_store_n(&h->ranks[c->rank].epoch, h->epoch, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&hd->total, 1, __ATOMIC_SEQ_CST);
	if (host_all_arrived(h, c->world)) {
		if (__atomic_load_n(&hd->waiters, __ATOMIC_SEQ_CST))
			futex(&hd->total, FUTEX_WAKE, INT_MAX, NULL);
		return __atomic_load_n(&hd->abort, __ATOMIC_ACQUIRE) ? host_seen_abort(c) : DDP_OK;
	}
	/* Completion is judged from the epochs (exact), the counter only wakes.
	 * Wait: pause-spin for HOST_SPIN_S, then sched_yield until HOST_YIELD_S
	 * (runs other ranks when they outnumber the cores, else a cheap spin),
	 * then FUTEX_WAIT: waking a sleeping vCPU costs 50-200 us on a VM, far
	 * more than a chunk of work.  The async progress thread (c->bg_wait)
	 * sleeps at once at an op's first barrier, where it may wait for a rank
	 * still computing: it runs beside the kernels it overlaps, and spinning
	 * would take their cores.  Inside an op every rank has reached
	 * (c->bg_in_op) it spins, then yields for HOST_BG_YIELD_S, then
	 * sleeps: the next barrier is a chunk away, and a futex sleep and wake
	 * at each of an op's barriers made the ops of a rank that arrived last
	 * cost 0.3-0.6 ms each, most of the communication left after backward.
	 * (The yields are what it takes on a loaded 2-core machine, where the
	 * peer's progress thread waits for a core; they cost the CPU device's
	 * kernels a few percent with many tiny buckets: docs/overlap.md.) */
	double start = 0, next_pid = 0, t0 = coll_now();
	for (unsigned spin = 0;; spin++) {
		if (__atomic_load_n(&hd->abort, __ATOMIC_ACQUIRE))
			return host_seen_abort(c);
		if (host_all_arrived(h, c->world))
			return DDP_OK;
		if (start == 0 && (!c->bg_wait || c->bg_in_op)) {
			double el = (spin & 31) == 0 || spin > HOST_SPIN ? coll_now() - t0 : 0;
			if (el < HOST_SPIN_S && spin <= HOST_SPIN) {
				cpu_relax();
				continue;
			}
			if (el < (c->bg_wait ? HOST_BG_YIELD_S : HOST_YIELD_S)) {
				spin = HOST_SPIN + 1;
				sched_yield();
				continue;
			}
		}
		double now = coll_now();
		if (start == 0) {
			start = now;
			next_pid = now + HOST_PID_CHECK_S;
		}
		if (now >= next_pid || now - start >= c->cfg.timeout_s) {
			char list[256];
			int dead;
			host_laggards(c, list, sizeof list, &dead);
			if (dead >= 0)
				return host_fail(
					c, DDP_ERR_REMOTE,
					"rank %d (pid %d) exited or was killed; rank %d stopped waiting for it "
					"in %s",
					dead, (int)h->ranks[dead].pid, c->rank, h->what);
			if (now - start >= c->cfg.timeout_s)
				return host_fail(
					c, DDP_ERR_TIMEOUT,
					"%s made no progress for %.0f s on rank %d: rank(s) %s never arrived "
					"(hung, or not issuing this collective)",
					h->what, c->cfg.timeout_s, c->rank, list[0] ? list : "?");
			next_pid = now + HOST_PID_CHECK_S;
		}
		uint32_t cur = __atomic_load_n(&hd->total, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&hd->waiters, 1, __ATOMIC_SEQ_CST);
		if (!host_all_arrived(h, c->world) && !__atomic_load_n(&hd->abort, __ATOMIC_ACQUIRE)) {
			struct timespec ts = { 0, 50 * 1000 * 1000 };
			futex(&hd->total, FUTEX_WAIT, cur, &ts);
		}
		__atomic_sub_fetch(&hd->waiters, 1, __ATOMIC_SEQ_CST);
	}
}

static size_t round_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

/* ---- single copy between address spaces (CMA, process_vm_readv) */

/* Reads len bytes at address raddr of rank q into dst: 0, or an errno. */
static int host_cma_read(const struct coll_host *h, int q, void *dst, uint64_t raddr, size_t len)
{
	pid_t pid = h->ranks[q].pid;
	unsigned char *d = dst;
	while (len) {
		size_t n = len < HOST_CMA_MAX ? len : HOST_CMA_MAX;
		struct iovec l = { d, n }, r = { (void *)(uintptr_t)raddr, n };
		ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno;
		if (got == 0)
			return EFAULT;
		d += got;
		raddr += (uint64_t)got;
		len -= (size_t)got;
	}
	return 0;
}

/* A failed read of rank q's memory: a dead peer, an abort, or an error. */
static ddp_result host_cma_fail(struct ddp_comm *c, int q, int err)
{
	struct coll_host *h = c->host;
	if (__atomic_load_n(&h->hdr->abort, __ATOMIC_ACQUIRE))
		return host_seen_abort(c);
	if (err == ESRCH || pid_dead(h->ranks[q].pid))
		return host_fail(c, DDP_ERR_REMOTE,
				 "rank %d (pid %d) exited or was killed; rank %d stopped waiting for it in %s",
				 q, (int)h->ranks[q].pid, c->rank, h->what);
	return host_fail(c, DDP_ERR_SYS,
			 "rank %d cannot read rank %d's buffer in %s: %s; set DDP_COLL_HOST_CMA=0 to copy through "
			 "the shared segment instead",
			 c->rank, q, h->what, strerror(err));
}

/* Set-up, before the ranks meet: allocate the piece buffers and post where
 * peers can read a random cookie (they check it, so a pid of another
 * namespace or a recycled pid cannot pass).  DDP_COLL_HOST_CMA=0 opts out. */
static void host_cma_post(struct ddp_comm *c)
{
	struct coll_host *h = c->host;
	struct host_rank *me = &h->ranks[c->rank];
	me->probe_addr = 0;
	if (c->cfg.no_host_cma)
		return;
	if (getrandom(&h->cookie, sizeof h->cookie, GRND_NONBLOCK) != (ssize_t)sizeof h->cookie)
		h->cookie = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(coll_now() * 1e9);
	h->cookie |= 1;
	h->tmp_bytes = round_up(HOST_CMA_TMP / (size_t)(c->world - 1), 4096);
	if (h->tmp_bytes < (64u << 10))
		h->tmp_bytes = 64u << 10;
	h->tmp = aligned_alloc(4096, h->tmp_bytes * (size_t)(c->world - 1));
	if (!h->tmp)
		return;
	me->probe_cookie = h->cookie;
	__atomic_store_n(&me->probe_addr, (uint64_t)(uintptr_t)&h->cookie, __ATOMIC_RELEASE);
}

/* Set-up, after every rank posted: try to read every peer's cookie, then
 * meet, and use CMA only if every rank could read every other. */
static ddp_result host_cma_agree(struct ddp_comm *c)
{
	struct coll_host *h = c->host;
	struct host_rank *me = &h->ranks[c->rank];
	int ok = me->probe_addr != 0;
	for (int q = 0; ok && q < c->world; q++) {
		uint64_t v = 0, addr = __atomic_load_n(&h->ranks[q].probe_addr, __ATOMIC_ACQUIRE);
		if (q == c->rank)
			continue;
		ok = addr && h->ranks[q].pidns == h->pidns && host_cma_read(h, q, &v, addr, sizeof v) == 0 &&
		     v == h->ranks[q].probe_cookie;
	}
	me->cma_ok = (uint32_t)ok;
	DDP_CHECK(host_barrier(c));
	h->cma = 1;
	for (int q = 0; q < c->world; q++)
		h->cma &= __atomic_load_n(&h->ranks[q].cma_ok, __ATOMIC_ACQUIRE) != 0;
	if (!h->cma) {
		free(h->tmp);
		h->tmp = NULL;
	}
	return DDP_OK;
}

/* Can peers read this buffer with process_vm_readv?  (Memory mapped from a
 * device file, e.g. some pinned allocations, cannot be.)  Checks the first
 * and the last byte, reading our own process. */
static int host_cma_usable(const void *buf, size_t bytes)
{
	unsigned char a, b;
	if (bytes == 0)
		return 1;
	struct iovec l[2] = { { &a, 1 }, { &b, 1 } };
	struct iovec r[2] = { { (void *)(uintptr_t)buf, 1 },
			      { (unsigned char *)(uintptr_t)buf + bytes - 1, 1 } };
	return process_vm_readv(getpid(), l, 2, r, 2, 0) == 2;
}

/* ---- set-up */

static uint64_t host_chunking(const struct coll_host *h)
{
	return (uint64_t)h->slot ^ ((uint64_t)h->stage_bytes << 20);
}

ddp_result coll_host_init(struct ddp_comm *c)
{
	ddp_result rc = DDP_OK;
	char key[64], path[PATH_MAX], bar[64];
	int fd = -1, created = 0;
	void *val = NULL;
	size_t len = 0;
	if (c->local_world != c->world)
		return coll_fail(c, DDP_ERR_UNSUPPORTED, 1,
				 "the host collectives backend works within one node, but the ranks span nodes "
				 "(%d of %d ranks on this node); use DDP_BACKEND=nccl",
				 c->local_world, c->world);
	if (c->world > HOST_MAX_RANKS)
		return coll_fail(c, DDP_ERR_UNSUPPORTED, 1,
				 "the host backend supports at most %d ranks, not %d", HOST_MAX_RANKS,
				 c->world);
	struct coll_host *h = calloc(1, sizeof *h);
	if (!h)
		return DDP_ERR_NOMEM;
	c->host = h;
	h->what = "setup";
	h->pidns = self_pidns();
	if (c->world == 1)
		return DDP_OK; /* nothing to share */
	long page = sysconf(_SC_PAGESIZE);
	h->slot = round_up(c->cfg.slot_bytes ? c->cfg.slot_bytes : HOST_DEFAULT_SLOT, 4096);
	h->stage_bytes = round_up(c->cfg.stage_bytes ? c->cfg.stage_bytes : HOST_DEFAULT_STAGE, 4096);
	size_t hdr_bytes = sizeof(struct host_hdr) + (size_t)c->world * sizeof(struct host_rank);
	size_t data_off = round_up(hdr_bytes, (size_t)page);
	h->seg_bytes = data_off + 2 * (size_t)c->world * h->slot;
	snprintf(key, sizeof key, "coll/%d/shm", c->gen);
	/* Every rank arrives before rank 0 creates the file: the file exists
	 * only from its creation to the unlink once all have mapped it
	 * (milliseconds), not while rank 0 waits for a late or dead rank, when
	 * a kill (the launcher stopping the job) would leave it behind. */
	snprintf(bar, sizeof bar, "coll/%d/arrived", c->gen);
	rc = ddp_store_barrier(c->store, bar, c->world, c->cfg.timeout_s);
	if (rc != DDP_OK) {
		rc = coll_fail(c, rc, 1, "not every rank reached the collectives set-up within %.0f s: %s",
			       c->cfg.timeout_s, ddp_store_last_error(c->store));
		goto out_free;
	}
	snprintf(bar, sizeof bar, "coll/%d/mapped", c->gen);

	if (c->rank == 0) {
		uint64_t rnd[2] = { 0, 0 };
		if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
			rnd[0] = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(coll_now() * 1e9);
		snprintf(path, sizeof path, "%s/ddp-coll-%d-%016" PRIx64 "%016" PRIx64, c->cfg.shm_dir,
			 (int)getpid(), rnd[0], rnd[1]);
		fd = DDP_SYS(open64)(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			rc = coll_fail(c, DDP_ERR_SYS, 1,
				       "cannot create the collectives segment %s: %s; set DDP_SHM_DIR to a writable "
				       "directory on a memory file system",
				       path, strerror(errno));
			goto out_free;
		}
		created = 1;
		int e = posix_fallocate(fd, 0, (off_t)h->seg_bytes);
		if (e != 0) {
			rc = coll_fail(c, DDP_ERR_SYS, 1,
				       "no room for the %zu MiB collectives segment in %s: %s; enlarge it (docker: "
				       "--shm-size) or set DDP_SHM_DIR",
				       h->seg_bytes >> 20, c->cfg.shm_dir, strerror(e));
			goto out_close;
		}
	} else {
		rc = ddp_store_get(c->store, key, &val, &len, c->cfg.timeout_s);
		if (rc != DDP_OK) {
			rc = coll_fail(c, rc, 1, "rank %d got no collectives segment name from rank 0: %s",
				       c->rank, ddp_store_last_error(c->store));
			goto out_free;
		}
		snprintf(path, sizeof path, "%.*s", (int)len, (const char *)val);
		free(val);
		fd = DDP_SYS(open64)(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			rc = coll_fail(c, DDP_ERR_SYS, 1,
				       "rank %d cannot open the collectives segment %s: %s (are all ranks on one node "
				       "and sharing %s?)",
				       c->rank, path, strerror(errno), c->cfg.shm_dir);
			goto out_free;
		}
		struct stat st;
		if (ddp_sys_fstat(fd, &st) != 0 || (size_t)st.st_size != h->seg_bytes) {
			rc = coll_fail(c, DDP_ERR_INVALID, 1,
				       "collectives segment %s has %lld bytes, expected %zu (ranks configured "
				       "differently?)",
				       path, (long long)st.st_size, h->seg_bytes);
			goto out_close;
		}
	}
	void *m = DDP_SYS(mmap64)(NULL, h->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		rc = coll_fail(c, DDP_ERR_SYS, 1, "mmap of the collectives segment (%zu bytes) failed: %s",
			       h->seg_bytes, strerror(errno));
		goto out_close;
	}
	DDP_SYS(close)(fd);
	fd = -1;
	h->hdr = m;
	h->ranks = (struct host_rank *)(h->hdr + 1);
	h->data = (unsigned char *)m + data_off;
	if (c->rank == 0) {
		h->hdr->version = HOST_VERSION;
		h->hdr->world = (uint32_t)c->world;
		h->hdr->slot_bytes = h->slot;
		h->hdr->seg_bytes = h->seg_bytes;
		h->hdr->data_off = data_off;
		__atomic_store_n(&h->hdr->magic, HOST_MAGIC, __ATOMIC_RELEASE);
	}
	struct host_rank *me = &h->ranks[c->rank];
	me->pid = (int32_t)getpid();
	me->pidns = h->pidns;
	me->chunking = host_chunking(h);
	host_cma_post(c);
	if (c->rank == 0) {
		DDP_CHECK_GOTO(ddp_store_set(c->store, key, path, strlen(path)), rc, out_unmap);
	}
	rc = ddp_store_barrier(c->store, bar, c->world, c->cfg.timeout_s);
	if (rc != DDP_OK) {
		rc = coll_fail(c, rc, 1, "not every rank mapped the collectives segment within %.0f s: %s",
			       c->cfg.timeout_s, ddp_store_last_error(c->store));
		goto out_unmap;
	}
	if (c->rank == 0) {
		DDP_SYS(unlink)(path);
		created = 0;
	}
	if (__atomic_load_n(&h->hdr->magic, __ATOMIC_ACQUIRE) != HOST_MAGIC ||
	    h->hdr->world != (uint32_t)c->world || h->hdr->slot_bytes != h->slot) {
		rc = coll_fail(c, DDP_ERR_INVALID, 1, "collectives segment %s does not match this job", path);
		goto out_unmap;
	}
	DDP_CHECK_GOTO(host_cma_agree(c), rc, out_unmap);
	DDP_INFO(COLL, "host backend: segment %s, %zu KiB, slot %zu KiB, %s", path, h->seg_bytes >> 10,
		 h->slot >> 10, h->cma ? "single copy (CMA)" : "copies through the segment");
	return DDP_OK;

out_unmap:
	free(h->tmp);
	DDP_SYS(munmap)(h->hdr, h->seg_bytes);
	h->hdr = NULL;
out_close:
	if (fd >= 0)
		DDP_SYS(close)(fd);
	if (created)
		DDP_SYS(unlink)(path);
out_free:
	free(h);
	c->host = NULL;
	return rc;
}

void coll_host_destroy(struct ddp_comm *c)
{
	struct coll_host *h = c->host;
	if (!h)
		return;
	for (int i = 0; i < 2; i++)
		if (h->stage[i] && c->cfg.driver && c->cfg.driver->memFreeHost)
			c->cfg.driver->memFreeHost(h->stage[i]);
	if (h->hdr)
		DDP_SYS(munmap)(h->hdr, h->seg_bytes);
	free(h->tmp);
	free(h);
	c->host = NULL;
}

/* ---- collectives */

/* Posts this rank's descriptor, meets the others, compares descriptors. */
static ddp_result host_begin(struct ddp_comm *c, enum ddp_coll_kind kind, uint64_t count, int dtype, int root,
			     const char *what)
{
	struct coll_host *h = c->host;
	struct host_rank *me = &h->ranks[c->rank];
	h->what = what;
	if (__atomic_load_n(&h->hdr->abort, __ATOMIC_ACQUIRE))
		return host_seen_abort(c);
	__atomic_store_n(&me->seq, c->seq, __ATOMIC_RELAXED);
	me->kind = (uint32_t)kind;
	me->count = count;
	me->dtype = (uint32_t)dtype;
	me->root = root;
	me->tag_step = c->host_tag.step;
	me->tag_phase = c->host_tag.phase;
	memcpy(me->tag_what, c->host_tag.what, sizeof me->tag_what);
	DDP_CHECK(host_barrier(c));
	static const char *const kinds[] = { "allreduce", "broadcast" };
	const struct host_rank *r0 = &h->ranks[0];
	for (int q = 1; q < c->world; q++) {
		const struct host_rank *rq = &h->ranks[q];
		if (rq->kind == r0->kind && rq->count == r0->count && rq->dtype == r0->dtype &&
		    rq->root == r0->root && rq->seq == r0->seq && rq->chunking == r0->chunking &&
		    rq->tag_step == r0->tag_step && rq->tag_phase == r0->tag_phase)
			continue;
		if (rq->tag_step != r0->tag_step || rq->tag_phase != r0->tag_phase) {
			/* the same op number, another place in the program: a rank
			 * issued a gradient collective the others did not */
			char ta[96], tb[96];
			ddp_coll_tag_text(rq->tag_step, rq->tag_phase, ta, sizeof ta);
			ddp_coll_tag_text(r0->tag_step, r0->tag_phase, tb, sizeof tb);
			return coll_fail(c, DDP_ERR_REMOTE, c->rank == 0,
					 "the ranks' gradient collectives no longer pair up: at collective #%" PRIu64
					 " rank %d is in %.60s (%.47s) while rank 0 is in %.60s (%.47s); " COLL_TAG_WHY,
					 r0->seq, q, ta, rq->tag_what, tb, r0->tag_what);
		}
		char a[96], b[96];
		snprintf(a, sizeof a, "%s #%" PRIu64 " %s=%" PRIu64 " dtype=%s root=%d", kinds[rq->kind & 1],
			 rq->seq, rq->kind == DDP_COLL_BROADCAST ? "bytes" : "count", rq->count,
			 ddp_dtype_name((enum ddp_dtype)rq->dtype), rq->root);
		snprintf(b, sizeof b, "%s #%" PRIu64 " %s=%" PRIu64 " dtype=%s root=%d", kinds[r0->kind & 1],
			 r0->seq, r0->kind == DDP_COLL_BROADCAST ? "bytes" : "count", r0->count,
			 ddp_dtype_name((enum ddp_dtype)r0->dtype), r0->root);
		if (rq->chunking != r0->chunking)
			snprintf(a, sizeof a, "different chunk settings");
		/* every rank sees the same descriptors: all fail alike; only the
		 * lowest rank prints */
		return coll_fail(c, DDP_ERR_REMOTE, c->rank == 0,
				 "ranks issue different collectives: rank %d is in '%s' while rank 0 is in '%s'",
				 q, a, b);
	}
	return DDP_OK;
}

/* The chunk loop of allreduce over a host buffer (after host_begin). */
static ddp_result host_ar_run(struct ddp_comm *c, unsigned char *buf, size_t count, enum ddp_dtype t)
{
	struct coll_host *h = c->host;
	const int W = c->world;
	const size_t es = ddp_dtype_size(t);
	const size_t per_chunk = h->slot / es;
	const size_t align = 64 / es;
	const void *src[HOST_MAX_RANKS <= 64 ? HOST_MAX_RANKS : 64];
	const void **srcp = W <= 64 ? src : NULL;
	const void **heap = NULL;
	if (!srcp) {
		heap = malloc((size_t)W * sizeof *heap);
		if (!heap)
			return DDP_ERR_NOMEM;
		srcp = heap;
	}
	ddp_result rc = DDP_OK;
	for (size_t off = 0; off < count; off += per_chunk) {
		size_t m = count - off < per_chunk ? count - off : per_chunk;
		unsigned s = h->set;
		h->set ^= 1;
		memcpy(slot_ptr(h, s, c->rank, W), buf + off * es, m * es);
		DDP_CHECK_GOTO(host_barrier(c), rc, out);
		size_t per = round_up((m + (size_t)W - 1) / (size_t)W, align);
		size_t lo = (size_t)c->rank * per < m ? (size_t)c->rank * per : m;
		size_t hi = lo + per < m ? lo + per : m;
		if (hi > lo) {
			for (int q = 0; q < W; q++)
				srcp[q] = slot_ptr(h, s, q, W) + lo * es;
			/* the result goes into our own slot: those lines are
			 * already in this core's cache (we just wrote them) */
			ddp_dtype_avg(t, slot_ptr(h, s, c->rank, W) + lo * es, srcp, W, hi - lo, W);
		}
		DDP_CHECK_GOTO(host_barrier(c), rc, out);
		for (int q = 0; q < W; q++) {
			size_t qlo = (size_t)q * per < m ? (size_t)q * per : m;
			size_t qhi = qlo + per < m ? qlo + per : m;
			if (qhi > qlo)
				memcpy(buf + (off + qlo) * es, slot_ptr(h, s, q, W) + qlo * es,
				       (qhi - qlo) * es);
		}
	}
out:
	free(heap);
	return rc;
}

/* Allreduce by single copies (CMA; after host_begin, every rank's buffer
 * posted and readable).  Rank r owns slice r (a cache-line aligned 1/W):
 *     1. piece by piece, it reads slice r of every peer's buffer into its
 *        piece buffers (cache resident) and averages them with its own in
 *        rank order, in place into its buffer              -> barrier
 *     2. it reads slice q of every peer q's buffer (now the result) into
 *        its own buffer                                    -> barrier
 * Phase 1 reads only the slices peers do not write; phase 2 writes slices
 * whose owners finished reading them (barrier); the last barrier keeps
 * every buffer valid until nobody reads it.  Per rank: one read of the
 * input, one pass of the peers' slices, one copy of the result. */
static ddp_result host_ar_cma(struct ddp_comm *c, unsigned char *buf, size_t count, enum ddp_dtype t)
{
	struct coll_host *h = c->host;
	const int W = c->world, r = c->rank;
	const size_t es = ddp_dtype_size(t);
	const size_t per = round_up((count + (size_t)W - 1) / (size_t)W, 64 / es);
	const size_t piece = h->tmp_bytes / es;
	const void *src[HOST_MAX_RANKS <= 64 ? HOST_MAX_RANKS : 64];
	const void **srcp = W <= 64 ? src : NULL;
	const void **heap = NULL;
	ddp_result rc = DDP_OK;
	int err;
	if (!srcp) {
		heap = malloc((size_t)W * sizeof *heap);
		if (!heap)
			return host_fail(c, DDP_ERR_NOMEM, "out of memory in %s on rank %d", h->what, r);
		srcp = heap;
	}
	size_t lo = (size_t)r * per < count ? (size_t)r * per : count;
	size_t hi = lo + per < count ? lo + per : count;
	for (size_t off = lo; off < hi; off += piece) {
		size_t m = hi - off < piece ? hi - off : piece;
		unsigned char *mine = buf + off * es, *tmp = h->tmp;
		for (int q = 0; q < W; q++) {
			if (q == r) {
				srcp[q] = mine;
				continue;
			}
			err = host_cma_read(h, q, tmp, h->ranks[q].buf + off * es, m * es);
			if (err) {
				rc = host_cma_fail(c, q, err);
				goto out;
			}
			srcp[q] = tmp;
			tmp += h->tmp_bytes;
		}
		ddp_dtype_avg(t, mine, srcp, W, m, W);
	}
	DDP_CHECK_GOTO(host_barrier(c), rc, out);
	for (int i = 1; i < W; i++) {
		int q = (r + i) % W;
		size_t qlo = (size_t)q * per < count ? (size_t)q * per : count;
		size_t qhi = qlo + per < count ? qlo + per : count;
		if (qhi > qlo &&
		    (err = host_cma_read(h, q, buf + qlo * es, h->ranks[q].buf + qlo * es, (qhi - qlo) * es))) {
			rc = host_cma_fail(c, q, err);
			goto out;
		}
	}
	DDP_CHECK_GOTO(host_barrier(c), rc, out);
out:
	free(heap);
	return rc;
}

/* Broadcast by single copies: the others read the root's buffer; the
 * barrier keeps it valid until they have. */
static ddp_result host_bc_cma(struct ddp_comm *c, unsigned char *buf, size_t bytes, int root)
{
	int err;
	if (c->rank != root && (err = host_cma_read(c->host, root, buf, c->host->ranks[root].buf, bytes)))
		return host_cma_fail(c, root, err);
	return host_barrier(c);
}

static ddp_result host_bc_run(struct ddp_comm *c, unsigned char *buf, size_t bytes, int root)
{
	struct coll_host *h = c->host;
	const size_t per_chunk = h->slot * (size_t)c->world;
	for (size_t off = 0; off < bytes; off += per_chunk) {
		size_t m = bytes - off < per_chunk ? bytes - off : per_chunk;
		unsigned s = h->set;
		h->set ^= 1;
		unsigned char *area = slot_ptr(h, s, 0, c->world);
		if (c->rank == root)
			memcpy(area, buf + off, m);
		DDP_CHECK(host_barrier(c));
		if (c->rank != root)
			memcpy(buf + off, area, m);
	}
	return DDP_OK;
}

static ddp_result host_stage_alloc(struct ddp_comm *c)
{
	struct coll_host *h = c->host;
	for (int i = 0; i < 2; i++) {
		if (h->stage[i])
			continue;
		CUresult e = c->cfg.driver->memAllocHost(&h->stage[i], h->stage_bytes);
		if (e != CUDA_SUCCESS) {
			h->stage[i] = NULL;
			return host_fail(c, DDP_ERR_CUDA,
					 "cannot allocate %zu MiB of pinned staging memory: %s",
					 h->stage_bytes >> 20, coll_cu_name(c, e));
		}
	}
	return DDP_OK;
}

/* Turns a failed driver call into the comm's error (and an abort). */
static ddp_result host_cu(struct ddp_comm *c, CUresult e, const char *op)
{
	if (e == CUDA_SUCCESS)
		return DDP_OK;
	return host_fail(c, DDP_ERR_CUDA, "%s in %s failed on rank %d: %s", op, c->host->what, c->rank,
			 coll_cu_name(c, e));
}

/* Device allreduce: staged through the two pinned buffers, overlapping the
 * copy-in of the next stage chunk with the reduction of this one. */
static ddp_result host_ar_device(struct ddp_comm *c, CUdeviceptr dbuf, size_t count, enum ddp_dtype t,
				 CUstream s)
{
	struct coll_host *h = c->host;
	const struct ddp_driver *d = c->cfg.driver;
	const size_t es = ddp_dtype_size(t);
	const size_t per = h->stage_bytes / es;
	if (count == 0)
		return DDP_OK;
	DDP_CHECK(host_stage_alloc(c));
	unsigned char *cur = h->stage[0], *next = h->stage[1];
	size_t m0 = count < per ? count : per;
	DDP_CHECK(host_cu(c, d->memcpyDtoHAsync(cur, dbuf, m0 * es, s), "copy to host"));
	DDP_CHECK(host_cu(c, d->streamSynchronize(s), "stream synchronize"));
	for (size_t off = 0; off < count; off += per) {
		size_t m = count - off < per ? count - off : per;
		size_t noff = off + per;
		if (noff < count) {
			size_t nm = count - noff < per ? count - noff : per;
			DDP_CHECK(host_cu(c, d->memcpyDtoHAsync(next, dbuf + noff * es, nm * es, s),
					  "copy to host"));
		}
		DDP_CHECK(host_ar_run(c, cur, m, t));
		DDP_CHECK(host_cu(c, d->memcpyHtoDAsync(dbuf + off * es, cur, m * es, s), "copy to device"));
		DDP_CHECK(host_cu(c, d->streamSynchronize(s), "stream synchronize"));
		unsigned char *tmp = cur;
		cur = next;
		next = tmp;
	}
	return DDP_OK;
}

static ddp_result host_bc_device(struct ddp_comm *c, CUdeviceptr dbuf, size_t bytes, int root, CUstream s)
{
	struct coll_host *h = c->host;
	const struct ddp_driver *d = c->cfg.driver;
	if (bytes == 0)
		return DDP_OK;
	DDP_CHECK(host_stage_alloc(c));
	for (size_t off = 0; off < bytes; off += h->stage_bytes) {
		size_t m = bytes - off < h->stage_bytes ? bytes - off : h->stage_bytes;
		if (c->rank == root) {
			DDP_CHECK(host_cu(c, d->memcpyDtoHAsync(h->stage[0], dbuf + off, m, s), "copy to host"));
			DDP_CHECK(host_cu(c, d->streamSynchronize(s), "stream synchronize"));
		}
		DDP_CHECK(host_bc_run(c, h->stage[0], m, root));
		if (c->rank != root) {
			DDP_CHECK(host_cu(c, d->memcpyHtoDAsync(dbuf + off, h->stage[0], m, s),
					  "copy to device"));
			DDP_CHECK(host_cu(c, d->streamSynchronize(s), "stream synchronize"));
		}
	}
	return DDP_OK;
}

/* Posts this rank's buffer for the single-copy path (device buffers and
 * memory that process_vm_readv cannot read go through the segment). */
static void host_post_buf(struct ddp_comm *c, void *buf, size_t bytes, int dev)
{
	struct coll_host *h = c->host;
	struct host_rank *me = &h->ranks[c->rank];
	me->buf = (uint64_t)(uintptr_t)buf;
	me->cma = (uint32_t)(h->cma && !dev && host_cma_usable(buf, bytes));
}

/* After host_begin: did every rank post a readable buffer?  (All ranks see
 * the same flags, so all take the same path.) */
static int host_all_cma(const struct ddp_comm *c)
{
	for (int q = 0; q < c->world; q++)
		if (!c->host->ranks[q].cma)
			return 0;
	return 1;
}

ddp_result coll_host_allreduce(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype t, int dev,
			       CUstream s)
{
	char what[96];
	snprintf(what, sizeof what, "allreduce #%" PRIu64 " (%s, count=%zu)", c->seq, ddp_dtype_name(t), count);
	host_post_buf(c, buf, count * ddp_dtype_size(t), dev);
	DDP_CHECK(host_begin(c, DDP_COLL_ALLREDUCE, count, (int)t, 0, what));
	c->arrived_ns = ddp_now_ns(); /* every rank is here (stream-ordered ops' figures) */
	ddp_result rc = DDP_OK;
	c->bg_in_op = c->bg_wait;
	if (count && host_all_cma(c))
		rc = host_ar_cma(c, buf, count, t);
	else if (dev)
		rc = host_ar_device(c, (CUdeviceptr)(uintptr_t)buf, count, t, s);
	else
		rc = host_ar_run(c, buf, count, t);
	if (rc == DDP_OK && count == 0) /* keep descriptors until everyone compared them */
		rc = host_barrier(c);
	c->bg_in_op = 0;
	c->host->what = "(between collectives)";
	return rc;
}

ddp_result coll_host_broadcast(struct ddp_comm *c, void *buf, size_t bytes, int root, int dev, CUstream s)
{
	char what[96];
	snprintf(what, sizeof what, "broadcast #%" PRIu64 " (bytes=%zu, root %d)", c->seq, bytes, root);
	host_post_buf(c, buf, bytes, dev);
	DDP_CHECK(host_begin(c, DDP_COLL_BROADCAST, bytes, 0, root, what));
	if (bytes && host_all_cma(c))
		DDP_CHECK(host_bc_cma(c, buf, bytes, root));
	else if (dev)
		DDP_CHECK(host_bc_device(c, (CUdeviceptr)(uintptr_t)buf, bytes, root, s));
	else
		DDP_CHECK(host_bc_run(c, buf, bytes, root));
	if (bytes == 0)
		DDP_CHECK(host_barrier(c));
	c->host->what = "(between collectives)";
	return DDP_OK;
}
