/* SPDX-License-Identifier: MIT
 *
 * ddp_flow.h - the evidence the tracker (ddp_grad.c) keeps about the step's
 * DATA FLOW for launches that name no optimizer: generic BLAS-like kernels
 * (axpy, scal, mul, fill, copy) that the forward pass, the backward pass and
 * the update all use.  It holds no roles; ddp_grad.c decides them.
 *
 * Two tables:
 * - the ACCESS HISTORY of the first step: per range of an allocation, was it
 *   read by a launch, written by one (a non-const pointer counts as written).
 *   A PARAMETER is a range the launches read before any launch wrote it
 *   (its bytes came from the host: initialised weights) and that the update
 *   then rewrites; a GRADIENT is a same-sized range a launch of this step
 *   wrote, which the update reads.
 * - the UPDATE's launches learned in the first step, by identity (kernel and
 *   argument ranges): the CUT launches (the first update launch of each
 *   tensor: where its gradient is averaged) and the other update launches
 *   (which rewrite gradients or state identically on every rank: never
 *   "dirty").  From step 2 on a launch is looked up here; a launch not in the
 *   table ends an update phase.
 * - the ranges the update wrote in the current update phase (optimizer
 *   state formed by generic kernels before the optimizer kernel reads it).
 *
 * Contract: owned by one struct ddp_grad, called under its caller's lock;
 * the tables grow with malloc (slow path: the first step, and one lookup
 * per launch that touches a gradient afterwards).  Nothing here does I/O.
 */
#ifndef DDP_FLOW_H
#define DDP_FLOW_H

#include <stdint.h>
#include "ddp_err.h"

struct ddp_flow;

ddp_result ddp_flow_new(struct ddp_flow **out /* OUT */);
void ddp_flow_free(struct ddp_flow *f);

/* ---- the first step's access history */

/* Launch number seq (counting from 1, increasing), of identity key (its
 * kernel and argument ranges), accessed [lo, hi) of allocation alloc_id:
 * wrote != 0 when it may have written it. */
ddp_result ddp_flow_note(struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi, int wrote,
			 uint64_t seq, uint64_t key);
/* The last launch that may have written a byte of [lo, hi) (0: none). */
uint64_t ddp_flow_last_write(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi);
/* The identity of that launch (0: none). */
uint64_t ddp_flow_last_writer(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi);
/* The first launch that read a byte of [lo, hi) (0: none). */
uint64_t ddp_flow_first_read(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi);
/* The first step is over: the history is dropped. */
void ddp_flow_history_done(struct ddp_flow *f);

/* ---- the update's launches */

enum ddp_flow_kind {
	DDP_FLOW_NONE = 0,
	DDP_FLOW_UPDATE = 1,
	DDP_FLOW_CUT = 2
};

ddp_result ddp_flow_learn(struct ddp_flow *f, uint64_t key, enum ddp_flow_kind kind);
enum ddp_flow_kind ddp_flow_lookup(const struct ddp_flow *f, uint64_t key);
uint32_t ddp_flow_ncuts(const struct ddp_flow *f);

/* ---- ranges the current update phase wrote */

ddp_result ddp_flow_upd_write(struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi);
int ddp_flow_upd_written(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi);
void ddp_flow_upd_clear(struct ddp_flow *f);

#endif /* DDP_FLOW_H */
