/* SPDX-License-Identifier: MIT
 *
 * ddp_coll.h - the collectives libddp injects: allreduce-average and
 * broadcast, over a host backend (shared memory within one node) or NCCL
 * (loaded with dlopen at run time), with signature checks and a watchdog.
 *
 * Usage (every rank, same order of calls):
 *
 *     struct ddp_coll_config cfg;
 *     ddp_coll_config_default(&cfg);           // DDP_BACKEND, DDP_COLL_TIMEOUT...
 *     cfg.driver = &my_driver_table;           // for device buffers
 *     ddp_comm_init(store, rank, world, local_rank, local_world, &cfg, &comm);
 *     ddp_check_signature(comm, "allreduce", "f32 count=1234 bufs=W1,b1");
 *     ddp_allreduce_avg(comm, (void *)dptr, count, DDP_DT_F32, 1, stream);
 *     ddp_broadcast(comm, (void *)dptr, bytes, 0, 1, stream);
 *     ddp_comm_destroy(comm);
 *
 * Semantics:
 * - ddp_allreduce_avg leaves on every rank the element-wise mean of the
 *   ranks' buffers, bit-identical on every rank.  Host backend: summed in a
 *   wider type (fp32 in double, fp16/bf16 in fp32) in rank order 0..N-1,
 *   divided by N and rounded once (ddp_dtype.h).  NCCL backend: ncclAvg.
 * - Both calls return when the result is in the buffer (device buffers: the
 *   copies were enqueued on `stream` and the stream was synchronised), so the
 *   caller's later work on any stream sees the result.
 * - A collective that makes no progress for cfg.timeout_s seconds returns
 *   DDP_ERR_TIMEOUT naming the ranks that never arrived; a peer process that
 *   died is noticed within about a second (DDP_ERR_REMOTE naming it).  After
 *   any error the communicator is broken: every later call fails at once
 *   with DDP_ERR_REMOTE, and the job must stop.  Other ranks waiting in the
 *   same collective fail too (they see the abort), never hang.
 * - Errors are one line, `libddp: ...`, logged once (DDP_ERROR) and kept for
 *   ddp_coll_last_error().
 *
 * Stream-ordered (asynchronous) allreduce, the caller never waits:
 *
 *     uint64_t t;
 *     ddp_allreduce_avg_async(comm, (void *)dptr, count, DDP_DT_F32, 1, producer, &t);
 *     ...                                     // the host goes on launching
 *     ddp_coll_stream_wait(comm, t, consumer); // consumer's later work sees the mean
 *
 *   The reduction runs on the comm's communication stream (created at the
 *   first call, non-blocking, highest priority) after everything enqueued on
 *   `producer` so far; ddp_coll_stream_wait makes `consumer` wait for it
 *   (cuStreamWaitEvent), the host thread not at all.  NCCL runs on that
 *   stream; the host backend runs on a progress thread fed in stream order
 *   by host functions (cuLaunchHostFunc), so the CPU device overlaps it with
 *   kernels exactly as a GPU overlaps NCCL.  Ops complete in issue order.
 *   Results are those of ddp_allreduce_avg (bit-identical on every rank).
 *   The synchronous calls first wait for every async op.  An error on the
 *   progress thread breaks the comm; the next call returns it.
 *
 * Contract: one struct ddp_comm per process; it is used by one thread at a
 * time (the library's injection thread), plus the async calls' own progress
 * thread (ddp_coll_async.c), which never runs user-visible callbacks; the store connection passed to
 * ddp_comm_init must not be used by another thread while a call of this API
 * runs.  No global constructors, nothing on stdout; logging through
 * DDP_*(COLL, ...).  Driver calls go only through cfg.driver (filled by the
 * caller with the real driver's entry points), so the interposer need not
 * track them.
 */
#ifndef DDP_COLL_H
#define DDP_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>
#include "ddp_port.h"
#include "ddp_dtype.h"
#include "ddp_err.h"

struct ddp_store;
struct ddp_comm;

/* Backend choice.  The values are the indices of DDP_BACKEND=auto|host|nccl. */
enum ddp_coll_backend {
	DDP_COLL_AUTO = 0, /* NCCL when cfg.real_gpu and NCCL loads, else host */
	DDP_COLL_HOST = 1, /* shared memory, one node, any buffers              */
	DDP_COLL_NCCL = 2, /* NCCL, device buffers only                          */
};

struct ddp_coll_config {
	enum ddp_coll_backend backend; /* DDP_BACKEND                          */
	double timeout_s;              /* DDP_COLL_TIMEOUT: no progress for this long = error */
	const char *shm_dir;           /* DDP_SHM_DIR: where the host segment lives */
	const char *nccl_lib;          /* DDP_NCCL_LIB: path or soname of NCCL  */
	int real_gpu;                  /* buffers live on a real GPU (auto -> NCCL) */
	int own_context;               /* ... in a context the program created
					  (cuCtxCreate): NCCL, which works in the
					  device's primary context, cannot reach
					  them (auto -> host; nccl -> refused)   */
	size_t stage_bytes;            /* pinned staging per buffer (x2); 0 = default 8 MiB */
	size_t slot_bytes;             /* host segment bytes per rank per chunk; 0 = default */
	int no_host_cma;               /* !DDP_COLL_HOST_CMA: host buffers go through the
					  segment too, never process_vm_readv */
	/* The driver entry points the collectives call: a view of the port's
	 * table (ddp_port.h; libddp passes &ddp_driver_, tests fill their own).
	 * Used for device buffers (memcpy*, streamSynchronize, memAllocHost/
	 * FreeHost), NCCL (streamQuery) and error names; NULL: host buffers only. */
	const struct ddp_driver *driver;
	/* Optional: called with entering 1 when an asynchronous collective
	 * starts waiting for the other ranks (the host backend's progress
	 * thread runs it; with NCCL while ops are outstanding on the
	 * communication stream), 0 when it finished and -1 when it failed
	 * (the comm is broken: it never finished); seq numbers the op.  From
	 * the comm's own thread; must not call back into the comm.  libddp
	 * shows it on ddprun's status board. */
	void (*busy)(int entering, uint64_t seq);
	/* Optional: called on the enqueuing thread when asynchronous op seq is
	 * numbered, before any thread can run it (busy then names the same
	 * seq).  Must not call back into the comm. */
	void (*enqueued)(uint64_t seq);
	/* Optional: after asynchronous op seq made no progress for timeout_s
	 * on this rank, which ranks do not answer: writes their numbers
	 * ("1" or "1,3") to list, "" when every rank answered or it cannot
	 * tell.  Each rank whose own watch gives up on op seq answers; one
	 * that stopped (SIGSTOP, a debugger), died, or never issued the op does
	 * not.  Runs on the comm's watchdog thread (it may wait a few seconds)
	 * and must not call back into the comm; libddp asks the rendezvous
	 * store over a connection of its own. */
	void (*silent)(uint64_t seq, char *list, size_t len);
};

/* Statistics per kind of collective (index enum ddp_coll_kind). */
enum ddp_coll_kind {
	DDP_COLL_ALLREDUCE = 0,
	DDP_COLL_BROADCAST = 1,
	DDP_COLL_KINDS
};
struct ddp_coll_stats {
	uint64_t calls[DDP_COLL_KINDS];
	uint64_t bytes[DDP_COLL_KINDS]; /* bytes of the caller's buffer       */
	uint64_t ns[DDP_COLL_KINDS];    /* wall time inside the calls          */
};

/* Fills cfg from the settings (ddp_params.h getters: DDP_BACKEND,
 * DDP_COLL_TIMEOUT, DDP_SHM_DIR, DDP_NCCL_LIB); driver NULL, real_gpu 0. */
void ddp_coll_config_default(struct ddp_coll_config *cfg /* OUT */);

/* Collective over the whole job: every rank calls it with the same world
 * sizes and backend.  It agrees with the others through the store (keys
 * "coll/<n>/...", n counting the communicators of the job), and for the host
 * backend maps a shared segment that is unlinked once every rank mapped it.
 * Host backend with ranks on several nodes (local_world != world):
 * DDP_ERR_UNSUPPORTED with a message.  cfg NULL: ddp_coll_config_default.
 * cfg is copied except *driver and the strings, which must outlive the comm. */
ddp_result ddp_comm_init(struct ddp_store *store, int rank, int world, int local_rank, int local_world,
			 const struct ddp_coll_config *cfg, struct ddp_comm **out /* OUT */);

/* In place: buf (a host pointer, or a CUdeviceptr cast to void * when
 * buf_is_device) holds count elements of dtype; on return it holds the mean
 * over the ranks.  count may be 0 (the ranks still synchronise).  dtype must
 * be reducible (f32, f16, bf16: ddp_dtype_reducible), else DDP_ERR_INVALID. */
ddp_result ddp_allreduce_avg(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype dtype,
			     int buf_is_device, CUstream stream);

/* A piece of device (or host) memory reduced by one op. */
struct ddp_coll_seg {
	uint64_t addr;
	uint64_t bytes; /* whole elements of the op's dtype */
};

/* As ddp_allreduce_avg, for n segments of one dtype at once: NCCL runs
 * them as one group (one launch, then the host waits); the host backend
 * one after the other.  Every rank passes the same sizes. */
ddp_result ddp_allreduce_avg_segs(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
				  enum ddp_dtype dtype, int buf_is_device, CUstream stream);

/* ---- stream-ordered calls (see the header comment) */

/* How an op of several segments is reduced.  AUTO: one segment in place;
 * several: host backend, device buffers: gathered into the pinned staging
 * buffer, one collective, scattered back; NCCL: one ncclAllReduce per
 * segment inside one NCCL group (no copies).  EACH: one collective per
 * segment (host backend; NCCL groups them anyway).  STAGED: as AUTO. */
enum ddp_coll_seg_mode {
	DDP_SEG_AUTO = 0,
	DDP_SEG_STAGED = 1,
	DDP_SEG_EACH = 2
};

/* Where the next async ops stand in the program (issue 19, docs/overlap.md
 * "Ranks agree on every collective"): the optimizer step, the phase and a
 * short label of what they reduce (e.g. "w_grad[+0,+64) and 2 more").  Every
 * async op enqueued until the next call carries it, and the ranks compare
 * it at the op itself: the host backend in its descriptor barrier, NCCL
 * through a grouped max-allreduce of one double per rank in pinned memory,
 * read by the op's end stamp.  Ranks whose ops pair up with different tags
 * (a rank that re-reduced a gradient alone: its step-k op meets the others'
 * step k+1) stop at that op with one line naming both tags and the ranks.
 * Phase NONE (the default, and what ddp_coll_set_tag(c, 0, NONE, NULL)
 * restores) compares nothing extra (NCCL: no tag op). */
enum ddp_coll_phase {
	DDP_COLL_PH_NONE = 0,
	DDP_COLL_PH_EARLY = 1,    /* an early reduction during backward        */
	DDP_COLL_PH_CONSUMER = 2, /* at the consumer, bytes not reduced early  */
	DDP_COLL_PH_AGAIN = 3     /* at the consumer, with bytes re-reduced:
				   * written after their early reduction     */
};
void ddp_coll_set_tag(struct ddp_comm *c, uint64_t step, enum ddp_coll_phase phase, const char *what);
/* "step 5, early reduction" (what the tag says, for messages) */
void ddp_coll_tag_text(uint64_t step, unsigned phase, char *out, size_t cap);

/* One async op over n segments of one dtype (all device or all host
 * memory): every segment ends up holding the mean.  Ticket, ordering and
 * errors as ddp_allreduce_avg_async; every rank passes the same sizes. */
ddp_result ddp_allreduce_avg_segs_async(struct ddp_comm *c, const struct ddp_coll_seg *seg, size_t n,
					enum ddp_dtype dtype, int buf_is_device, CUstream producer,
					enum ddp_coll_seg_mode mode, uint64_t *ticket /* OUT */);

/* Enqueues the allreduce-average of buf behind everything enqueued on
 * `producer` so far and returns at once; *ticket (OUT) names the op (1, 2,
 * ... in issue order; 0 on error).  Same arguments and result as
 * ddp_allreduce_avg.  buf must not be touched by anything but the
 * collective until the op is done (a consumer stream waited for it, or
 * ddp_coll_wait).  cfg.driver must have streams, events and host
 * functions (ddp_port.h). */
ddp_result ddp_allreduce_avg_async(struct ddp_comm *c, void *buf, size_t count, enum ddp_dtype dtype,
				   int buf_is_device, CUstream producer, uint64_t *ticket /* OUT */);

/* Makes `consumer` wait (on the device, not the host) for op `ticket` and
 * every op before it; ticket 0 means every op issued so far. */
ddp_result ddp_coll_stream_wait(struct ddp_comm *c, uint64_t ticket, CUstream consumer);

/* The host waits for op `ticket` (0: every op issued so far), watching
 * NCCL's errors and the timeout; returns the first async error if any. */
ddp_result ddp_coll_wait(struct ddp_comm *c, uint64_t ticket);

/* ddp_coll_wait(c, 0) when async ops were ever issued, else DDP_OK. */
ddp_result ddp_coll_async_drain(struct ddp_comm *c);

/* Is op `ticket` (0: the last) done?  1 yes, 0 not yet, -1 driver error.
 * Never blocks. */
int ddp_coll_async_query(struct ddp_comm *c, uint64_t ticket);

/* DDP_OK, or the error an async op met (the comm is then broken and
 * ddp_coll_last_error has the line).  Cheap: one atomic load when fine. */
ddp_result ddp_coll_async_error(struct ddp_comm *c);

/* The last ticket handed out (0: none). */
uint64_t ddp_coll_async_issued(const struct ddp_comm *c);

/* Can the stream-ordered calls run on c?  1 yes (or they already ran);
 * 0 with why (one clause, for a log line) when the driver lacks streams,
 * events or host functions, or a high-priority non-blocking stream cannot
 * be made (a trial one, destroyed at once).  Leaves c usable either way:
 * the caller falls back to the synchronous calls (DDP_OVERLAP=auto). */
int ddp_coll_async_usable(struct ddp_comm *c, char *why, size_t len);

/* When each finished async op ran (monotonic ns, ddp_now_ns()'s clock): the
 * host backend's reduction from its first chunk's start to its last
 * chunk's end; NCCL: between host functions stamped before and after
 * ncclAllReduce on the communication stream.  Each op is returned once,
 * oldest first; at most 256 are kept unread. */
struct ddp_coll_time {
	uint64_t ticket;
	uint64_t start_ns, end_ns;
	uint64_t arrive_ns; /* host backend: when every rank had reached the
				    op (its first chunk), so arrive - start is
				    the wait for the other ranks; NCCL: 0 (unknown) */
	uint64_t bytes;     /* NCCL: bytes of the op; host backend: 0 */
};
size_t ddp_coll_async_times(struct ddp_comm *c, struct ddp_coll_time *out /* OUT [max] */, size_t max);

/* ---- buckets (ddp_coll_bucket.c) */

/* A gradient range as the caller knows it. */
struct ddp_coll_range {
	uint64_t addr, bytes;
	uint32_t alloc_id; /* ranges of one allocation may merge        */
	enum ddp_dtype dtype;
};
/* A bucket: ranges r[first .. first+n), bytes in all, one dtype. */
struct ddp_coll_bucket {
	size_t first, n;
	uint64_t bytes;
	enum ddp_dtype dtype;
};

/* Groups r[0..n), in that order, into buckets: consecutive ranges of one
 * dtype, at most cap_bytes together (a larger range alone).  Writes at
 * most max buckets to out; returns how many there are. */
size_t ddp_coll_bucket_plan(const struct ddp_coll_range *r, size_t n, uint64_t cap_bytes,
			    struct ddp_coll_bucket *out /* OUT [max] */, size_t max);

/* The segments of the ranges r[0..n) (one bucket): ranges of one
 * allocation that touch or overlap become one segment (their union);
 * nothing else merges.  tmp: scratch of n ranges; out: room for n
 * segments.  Returns the number of segments (sorted by allocation, then
 * address). */
size_t ddp_coll_bucket_segments(const struct ddp_coll_range *r, size_t n, struct ddp_coll_range *tmp,
				struct ddp_coll_seg *out /* OUT [n] */);

/* In place: rank `root`'s bytes are copied into every rank's buf. */
ddp_result ddp_broadcast(struct ddp_comm *c, void *buf, size_t bytes, int root, int buf_is_device,
			 CUstream stream);

/* Checks that every rank is about to issue the same collective.  Every rank
 * posts "kind: sig" through the one cross-rank compare (ddp_xrank.h,
 * DDP_XR_JUDGE: keys xr/sig/<n>/<k>/..., k counting checks): rank 0 reads
 * every rank's and posts the verdict.  Identical: DDP_OK.  Different:
 * DDP_ERR_REMOTE on every rank, with one error line (printed by rank 0,
 * kept on all) naming the ranks that differ from rank 0 and the first
 * differing word of both texts, e.g.
 *   libddp: collectives differ between ranks at check #0: rank 2 has
 *   'count=1000' where rank 0 has 'count=1234' (ranks differing from
 *   rank 0: 2)
 * A rank that never posts: DDP_ERR_TIMEOUT naming it.  The comm is broken
 * after an error.  kind and sig: printable text; the pair at most 16 KiB. */
ddp_result ddp_check_signature(struct ddp_comm *c, const char *kind, const char *sig);

/* The backend in use, as enum and name ("host", "nccl"). */
enum ddp_coll_backend ddp_comm_backend(const struct ddp_comm *c);
const char *ddp_comm_backend_name(const struct ddp_comm *c);

/* The one-line message of the last error on c ("" when none). */
const char *ddp_coll_last_error(const struct ddp_comm *c);

/* Copies the statistics so far. */
void ddp_coll_get_stats(const struct ddp_comm *c, struct ddp_coll_stats *out /* OUT */);

/* NCCL's version code (e.g. 22809) once loaded, else 0. */
int ddp_comm_nccl_version(const struct ddp_comm *c);

/* Frees everything (the pinned staging through cfg.driver: call it while the
 * CUDA context lives, or the staging is left to process exit).  Does not
 * synchronise with the other ranks.  NULL is a no-op. */
void ddp_comm_destroy(struct ddp_comm *c);

/* Loads NCCL alone (no communicator): path NULL means "libnccl.so.2".  On
 * success *version holds ncclGetVersion's code.  A missing library or symbol:
 * DDP_ERR_UNSUPPORTED with a message naming DDP_NCCL_LIB (returned in msg,
 * which may be NULL).  For tests and `ddprun --dry-run`. */
ddp_result ddp_coll_nccl_probe(const char *path, int *version /* OUT */, char *msg, size_t msg_len);

#endif /* DDP_COLL_H */
