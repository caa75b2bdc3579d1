/* SPDX-License-Identifier: MIT
 *
 * ddp_inspect.h - what `ddprun inspect` shows: libddp, run with
 * DDP_INSPECT=FILE, records for every decoded launch which allocations each
 * kernel reads and writes, counts optimizer steps, and at exit (or after
 * DDP_INSPECT_STEPS optimizer steps, then exits) writes FILE: kernels by
 * launch count, allocations by size, the kernel/buffer access table, the
 * optimizer kernels (by name pattern), and a guess of the parameter buffers
 * (written by the optimizer) and gradient buffers (only read by the
 * optimizer, written by other kernels).
 *
 * Contract: inspection is a diagnosis mode, not a fast path: every recorded
 * launch takes insp_lock.  ddp_inspect_init once at library init.
 */
#ifndef DDP_INSPECT_H
#define DDP_INSPECT_H

#include "ddp_err.h"
#include "ddp_launch.h"

ddp_result ddp_inspect_init(const char *path, long steps);
int ddp_inspect_enabled(void);
void ddp_inspect_launch(const struct ddp_launch *L);

/* The gradient tracker runs (dry) and counts the steps: from then on the
 * inspection stops at the first launch after it ended DDP_INSPECT_STEPS of
 * them (ddp_inspect_tracker_steps: the steps ended so far), not by kernel
 * names.  Any thread. */
void ddp_inspect_use_tracker(void);
void ddp_inspect_tracker_steps(long steps);

/* Writes the report to the DDP_INSPECT file (once). */
void ddp_inspect_write(void);

#endif /* DDP_INSPECT_H */
