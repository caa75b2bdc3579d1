/* SPDX-License-Identifier: MIT
 *
 * ddp_fused.h - input data, and updates fused into the compute kernel.
 *
 * Data parallelism by averaging gradients needs a gradient: values a step
 * computed from each rank's data (rank-varying) that the update then reads
 * to rewrite the loop-carried state (parameters, optimizer state).  Some
 * trainers never materialise one: a word2vec CBOW kernel reads a batch of
 * sentences and adds into the embedding tables in place with atomicAdd; a
 * Hogwild matrix-factorisation kernel (named `sgd_update`, like an
 * optimizer) reads the ratings and the CSR index arrays and rewrites the
 * user and item factors in place.  Each rank's tables then move with its
 * own data alone and nothing can be averaged: a FUSED UPDATE.
 *
 * The facts, kept here while no update step is known:
 * - HOST-SET bytes: what the program copied from the host to the device
 *   (cuMemcpyHtoD, a unified copy from host memory) and no kernel wrote
 *   since.  Before the first update step they are start-up state (the
 *   initial tables, copied once) or input data (the batch, the ratings,
 *   index arrays).  Host-set bytes a kernel only reads are INPUT DATA:
 *   never a gradient, never a parameter (ddp_fused_input).
 * - A launch is a FUSED UPDATE when, before it runs,
 *   (1) it may write (a non-const pointer) a floating-point range that is
 *       all host-set: state set at start-up, rewritten in place;
 *   (2) it reads (a const pointer) another allocation's host-set range:
 *       input data, each rank's own under --shard or a per-rank split;
 *   (3) nothing it reads is a separate gradient: no read-only floating
 *       range pairs in element count with a range it writes (a gradient
 *       has its parameter's shape, whether a kernel or the host made it).
 *   A trainer with a gradient is never one: its optimizer reads the
 *   gradient backward wrote (3), its forward writes fresh activations,
 *   not host-set state (1); an update that only scales its state reads no
 *   input data (2).
 *
 * Contract: one instance per tracker, called under the sync lock, only
 * until the first update step.  Memory: one entry per host-set run of
 * bytes (merged when adjacent); at most DDP_FUSED_MAX_RANGES, beyond which
 * it gives up (nothing is host-set any more: no fused update is reported
 * and nothing is called input data).  No I/O.
 */
#ifndef DDP_FUSED_H
#define DDP_FUSED_H

#include <stdint.h>
#include "ddp_err.h"
#include "ddp_grad.h"

#define DDP_FUSED_MAX_RANGES 4096u

struct ddp_fused;

/* What the stop names. */
struct ddp_fused_report {
	const char *kname;
	uint32_t state_param, state_alloc; /* the state rewritten in place       */
	uint64_t state_off, state_bytes;   /* its range in its allocation         */
	uint8_t state_dtype;
	uint32_t data_param, data_alloc; /* one input read (host-set)          */
	uint64_t data_off, data_bytes;
	uint8_t data_dtype;
	uint32_t ninputs; /* input ranges it reads                      */
};

ddp_result ddp_fused_new(struct ddp_fused **out /* OUT */);
void ddp_fused_free(struct ddp_fused *f);

/* [lo, hi) of allocation alloc_id was copied from the host. */
void ddp_fused_host_copy(struct ddp_fused *f, uint32_t alloc_id, uint64_t lo, uint64_t hi);

/* Before launch L runs: 1 when it is a fused update (*rep says which
 * state and which input), else 0.  Either way its writes then end the
 * host-set status of every byte they may reach. */
int ddp_fused_launch(struct ddp_fused *f, const struct ddp_grad_launch *L, struct ddp_fused_report *rep);

/* Whether every byte of [lo, hi) of allocation alloc_id is host-set (copied
 * from the host, written by no kernel since): input data when a launch
 * only reads it. */
int ddp_fused_host_set(const struct ddp_fused *f, uint32_t alloc_id, uint64_t lo, uint64_t hi);

/* The range argument a covers for these rules: its exact or measured
 * extent, else from its pointer to its allocation's end (a count argument
 * is a guess). */
void ddp_fused_arg_range(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi);

#endif /* DDP_FUSED_H */
