/* SPDX-License-Identifier: MIT
 *
 * ddp_overlap.h - early, stream-ordered gradient reductions (the overlap
 * layer of gradient synchronisation; internal to runtime/grad, used by
 * ddp_sync.c only).  docs/overlap.md tells the story.
 *
 * Contract: every call is made under ddp_sync.c's sync_st.lock (one thread at
 * a time); the only other thread that touches this state is the driver's
 * host-function thread, through one atomic store per step.
 */
#ifndef DDP_OVERLAP_H
#define DDP_OVERLAP_H

#include <stdint.h>
#include <stdio.h>
#include "ddp_grad.h"

struct ddp_comm;

/* What the overlap layer needs of ddp_sync.c. */
struct ddp_overlap_env {
	/* a failed collective: one line, then the rank stops (never returns) */
	void (*coll_fail)(ddp_result rc, const char *what);
	/* the cross-rank signature check of a composition (first time only) */
	void (*check_sig)(struct ddp_comm *c, const char *kind, const char *sig, uint64_t h);
	/* is b's allocation still the one the tracker learned? */
	int (*alive)(const struct ddp_grad_buf *b);
};

/* on: DDP_OVERLAP=on (else only the per-step accounting of the synchronous
 * path is kept); bucket_bytes: DDP_BUCKET_MB in bytes, 0 for auto (DDP's
 * 1 MiB first bucket and 25 MiB after it, each at most an eighth of the
 * bytes planned; the consumer's buckets 25 MiB); slices:
 * DDP_OVERLAP_SLICES (ranges written in slices are reduced slice by
 * slice). */
void ddp_overlap_init(const struct ddp_overlap_env *env, int on, uint64_t bucket_bytes, int slices);
int ddp_overlap_on(void);

/* Switches early and stream-ordered reductions off before the first one
 * (DDP_OVERLAP=auto's fallback, with either backend, when the driver cannot
 * run them: ddp_coll_async_usable); the synchronous path of DDP_OVERLAP=off
 * from then on. */
void ddp_overlap_turn_off(void);

/* The update phase ended at launch `seq`: positions of the next step count
 * from here. */
void ddp_overlap_step_base(uint64_t seq);

/* The tracker's ops.written: launch L may write [lo, hi) of gradient (or
 * candidate) b; bound (enum ddp_grad_bound) says how hi is known.  Records
 * the written slice and its writer, and marks the units of b reduced early
 * that it overlaps as written again.  Only an exact extent ends where it
 * says: a count-bounded one is taken to b's end (a count argument is a
 * guess: a 2-D or scatter kernel writes past it, and a slice claimed too
 * narrow would be reduced before its last write). */
void ddp_overlap_written(struct ddp_grad_buf *b, const struct ddp_grad_launch *L, uint64_t lo, uint64_t hi,
			 uint8_t bound);

/* After the tracker processed launch `seq` (kernel kid, its decoded
 * arguments in L) and before the launch goes to the driver: makes its
 * stream wait for early reductions in flight of the ranges it touches, and
 * returns 1 when buckets are due right after this launch
 * (ddp_overlap_after). */
int ddp_overlap_before(uint64_t seq, const struct ddp_grad_launch *L);

/* Right after launch `seq` was enqueued on `stream`: enqueues the buckets
 * whose last writer it was predicted to be, as collectives of step `step`;
 * adds their collectives and bytes to *colls and *bytes. */
void ddp_overlap_after(uint64_t seq, void *stream, uint64_t step, uint64_t *colls, uint64_t *bytes);

/* The tracker's ops.reduce at a consumer of step `step`: units reduced
 * early and not written since only make `stream` wait; every other byte
 * of the ranges is reduced now, in buckets; re-reductions are counted; the
 * units (whole ranges or slices) and their last writers are learned for
 * the next step. */
ddp_result ddp_overlap_reduce(struct ddp_grad_buf *const *bufs, size_t n, void *stream, uint64_t step,
			      uint64_t *colls /* OUT, added to */, uint64_t *bytes /* OUT, added to */);

/* DDP_OVERLAP=off: a synchronous reduction of `colls` collectives that took
 * ns, at step `step` (the consumer waited for all of it). */
void ddp_overlap_account_sync(uint64_t step, size_t colls, uint64_t ns);

/* At exit, before the communicator goes: waits for every op and closes the
 * per-step figures. */
void ddp_overlap_finish(void);

/* Writes ,"overlap":"on|off","early_reductions":N,...,"per_step":[...] */
void ddp_overlap_json(FILE *f);

/* The exit line's part: "overlap on: 2.0 collectives, comm 3.1 ms of which
 * 82% hidden, grad wait 0.4 ms per step (steps 3+)". */
void ddp_overlap_summary(char *out, size_t cap);

#endif /* DDP_OVERLAP_H */
