/* SPDX-License-Identifier: MIT
 *
 * ddp_cycle.h - the program's steps from its launch stream, while no update
 * of its parameters is known: the job is stopped within its first three
 * steps when each of them rewrites memory it read and no update is found.
 *
 * A training program repeats the same launches in the same order every
 * step.  A launch's IDENTITY is its kernel and the ranges of its pointer
 * arguments.  The stream of identities is searched for its period P: a
 * candidate comes from the distance to an earlier launch of the same
 * identity (the latest one, and the first one: a gradient accumulation's
 * micro-step repeats inside the optimizer step), and is confirmed when P
 * launches in a row equal the launch P before them (a kernel launched twice
 * inside a step is no period: the launches after it break the candidate).
 * The periodic stream's start is walked back to the first launch that
 * repeats; the cycles run from there, P launches each, so a cycle begins
 * where the program's first step began.  A launch that breaks the period
 * ends the cycles; a new period is searched for (from the start of the
 * stream again).
 *
 * A cycle REWRITES PERSISTENT MEMORY when a launch writes (a non-const or
 * untyped pointer, not an integer type) bytes that an earlier launch of
 * the same cycle only read before any launch of the cycle wrote them: the
 * parameters the forward pass reads and the update rewrites.  An inference
 * or evaluation step writes only what it then reads (activations, outputs):
 * its cycles rewrite nothing.  Of an unbounded pointer (it runs to its
 * allocation's end) only its first byte is taken as surely read or
 * rewritten, and every byte to the end as maybe written: a later read of
 * those is no first read.
 *
 * ddp_cycle_launch returns 1 at the launch that rewrites persistent memory
 * in a third cycle after two complete cycles that did: the caller stops the
 * job before that launch runs (the third step's update never happens).
 *
 * Contract: one instance per tracker, called under its caller's lock, only
 * while no update is known.  It keeps the stream (identities and accesses)
 * until it decides, at most DDP_CYCLE_MAX_LAUNCHES launches: beyond that it
 * gives up (ddp_cycle_gave_up) and frees it.  Nothing here does I/O.
 */
#ifndef DDP_CYCLE_H
#define DDP_CYCLE_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"
#include "ddp_grad.h"

#define DDP_CYCLE_MAX_LAUNCHES 65536u

struct ddp_cycle;

/* What the stop names: the cycle, and one rewrite seen in it. */
struct ddp_cycle_report {
	uint64_t period;     /* launches per cycle                        */
	uint64_t cycles;     /* cycles seen, the current one included      */
	const char *first;   /* the kernel that begins each cycle          */
	const char *writer;  /* the launch that rewrote persistent memory  */
	const char *reader;  /* the launch that read it first in the cycle */
	uint32_t alloc_id;   /* where                                      */
	uint64_t lo, hi;     /* the bytes read first, then rewritten       */
	uint64_t alloc_base; /* the allocation's first byte                */
};

ddp_result ddp_cycle_new(struct ddp_cycle **out /* OUT */);
void ddp_cycle_free(struct ddp_cycle *c);

/* One launch (in launch order), after the tracker saw it.  Returns 1 when
 * the job must stop before this launch runs (*rep says why), else 0. */
int ddp_cycle_launch(struct ddp_cycle *c, const struct ddp_grad_launch *L, struct ddp_cycle_report *rep);

/* The launches per cycle (0: no period confirmed now), and whether the
 * stream grew past DDP_CYCLE_MAX_LAUNCHES (or memory ran out) with no
 * decision: then it sees nothing more. */
uint64_t ddp_cycle_period(const struct ddp_cycle *c);

/* The evidence that no update ran (an evaluation or inference program):
 * whether any launch of the whole stream so far (warm-up and tail
 * included, not only cycles) wrote bytes of any type, to wherever it may
 * reach, that an earlier launch had read first.  0: none (*launches, when
 * not NULL, gets the launches it covers); 1: one did (*rep names the
 * writer, the first reader and the bytes); -1: unknown (the stream was
 * given up or memory ran out).  Incremental: each call replays only the
 * launches recorded since the last one. */
int ddp_cycle_rewrote_any(struct ddp_cycle *c, struct ddp_cycle_report *rep, uint64_t *launches);
int ddp_cycle_gave_up(const struct ddp_cycle *c);

/* A write without a kernel (a copy, a memset) of bytes [lo, hi) of
 * allocation alloc_id, in stream order (after the launches recorded so
 * far): it joins ddp_cycle_rewrote_any's history as state written from
 * outside the stream, so that a launch's read of it is a first read.
 * alloc_id 0: where is not known.  Returns 1 when it rewrote bytes a launch
 * read first (or the stream already rewrote some, or where is not known:
 * the evidence is gone), 0 when not, -1 unknown (also once the history
 * holds DDP_CYCLE_MAX_LAUNCHES ranges).
 *
 * Bytes of device memory (not managed or mapped: ddp_grad_arg.outside)
 * that nothing wrote, neither a launch nor a write reported here, hold no
 * state: a launch that reads them (an output passed as an input too, a
 * GEMM's C with beta 0) reads no loop-carried state, and a later write of
 * them rewrites nothing.  One write of unknown place (alloc_id 0) ends
 * that: every byte nothing wrote may then be state. */
int ddp_cycle_host_write(struct ddp_cycle *c, uint32_t alloc_id, uint64_t lo, uint64_t hi);

#endif /* DDP_CYCLE_H */
