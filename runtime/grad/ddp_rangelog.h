/* SPDX-License-Identifier: MIT
 *
 * ddp_rangelog.h - the per-step record of every device range averaged or
 * broadcast (rank<k>.sync.json "ranges"), for tests that hold a program's
 * own truth (each gradient's address and bytes per step) against what the
 * library synchronised.
 */
#ifndef DDP_RANGELOG_H
#define DDP_RANGELOG_H

#include <stdint.h>
#include <stdio.h>

/* Records one range (kind 'A' allreduce-average, 'B' broadcast) of step
 * `step` when tracing is on (ddp_trace_enabled); a no-op otherwise.  Any
 * thread.  Past DDP_RANGELOG_MAX records, counts the rest as dropped. */
void ddp_rangelog_add(uint64_t step, char kind, uint64_t addr, uint64_t bytes);

/* Writes `,"ranges":[[step,"A",addr,bytes],...],"ranges_dropped":N` (addr
 * in decimal) to f: the caller's JSON object continues. */
void ddp_rangelog_json(FILE *f);

#define DDP_RANGELOG_MAX (1u << 20)

#endif /* DDP_RANGELOG_H */
