/* SPDX-License-Identifier: MIT
 *
 * ddp_alloc.h - the allocation table: every live device allocation the
 * program made through a hooked call, and the lookup of any address to the
 * allocation holding it.
 *
 * Layout: one array of 24-byte entries sorted by base, in a region reserved
 * once with mmap (never moves, so a reader can never touch freed memory).
 * Writers (alloc/free hooks) take a mutex and bump a sequence counter around
 * each change; readers (the launch decoder, copy accounting) binary-search
 * without any lock and retry when the sequence moved (a seqlock).  Lookups are
 * O(log n); inserts and removes move the tail (O(n) memmove, writers only).
 *
 * Overlap: an insert over a range that still holds entries (a free we never
 * saw, e.g. through an untracked path) drops those stale entries first.
 *
 * Contract: ddp_alloc_init once before use (library init); any thread may
 * call anything afterwards.  Lookups take no lock, allocate nothing and make
 * no syscall.  Counters: totals since init and per step (since the last
 * ddp_alloc_step_reset, which the step tracker calls at a step boundary).
 */
#ifndef DDP_ALLOC_H
#define DDP_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"

enum ddp_alloc_kind {
	DDP_ALLOC_PLAIN = 0, /* cuMemAlloc, cuMemAllocPitch          */
	DDP_ALLOC_ASYNC,     /* cuMemAllocAsync / FromPoolAsync      */
	DDP_ALLOC_MANAGED,   /* cuMemAllocManaged                    */
	DDP_ALLOC_VMM,       /* a cuMemMap'ed range                  */
	DDP_ALLOC_NKIND,
};

/* One live allocation (24 bytes: the table's whole cost per allocation). */
struct ddp_alloc_ent {
	uint64_t base;
	uint64_t size;
	uint32_t id;  /* sequence number of the allocation, from 1    */
	uint8_t kind; /* enum ddp_alloc_kind                          */
	uint8_t pad;
	uint16_t creator; /* hook id of the creating call                 */
};

struct ddp_alloc_stats {
	uint64_t live_count, live_bytes, peak_bytes;
	uint64_t total_allocs, total_frees, total_bytes; /* since init      */
	uint64_t step_allocs, step_frees, step_bytes_alloc, step_bytes_freed;
	uint64_t dropped; /* inserts refused: table full            */
	uint64_t stale;   /* stale overlapping entries dropped      */
};

/* Reserves room for max_entries live allocations (virtual memory only). */
ddp_result ddp_alloc_init(size_t max_entries);

/* Frees the table (tests). */
void ddp_alloc_fini(void);

/* Records [base, base+size).  size 0 is recorded as 1 byte.  *id (may be
 * NULL) receives the allocation's id.  DDP_ERR_NOMEM when the table is full
 * (the allocation stays untracked). */
ddp_result ddp_alloc_insert(uint64_t base, uint64_t size, enum ddp_alloc_kind kind, unsigned creator,
			    uint32_t *id /* OUT, may be NULL */);

/* Removes the allocation starting exactly at base; its entry goes to *out
 * (may be NULL).  DDP_ERR_INVALID when none starts there. */
ddp_result ddp_alloc_remove(uint64_t base, struct ddp_alloc_ent *out /* OUT */);

/* Removes every allocation inside [base, base+size) (cuMemUnmap); returns
 * how many. */
size_t ddp_alloc_remove_range(uint64_t base, uint64_t size);

/* 1 and *out filled when addr lies inside a live allocation, else 0.
 * Lock-free. */
int ddp_alloc_find(uint64_t addr, struct ddp_alloc_ent *out /* OUT */);

/* 1 when the whole range [addr, addr+bytes) is device memory the table
 * holds: inside one allocation, or across adjacent VMM mappings (PyTorch's
 * expandable segments map 2 MiB / 20 MiB pages, and a tensor may straddle
 * them); *first (may be NULL) gets the allocation holding addr.  A range
 * that crosses from one cuMemAlloc allocation into another is not covered.
 * Lock-free. */
int ddp_alloc_covers(uint64_t addr, uint64_t bytes, struct ddp_alloc_ent *first /* OUT, may be NULL */);

/* Copies up to max live entries (ascending base) into out; returns the
 * number of live entries. */
size_t ddp_alloc_snapshot(struct ddp_alloc_ent *out /* OUT */, size_t max);

void ddp_alloc_stats(struct ddp_alloc_stats *out /* OUT */);

/* Starts a new step: the step_* counters restart from zero. */
void ddp_alloc_step_reset(void);

const char *ddp_alloc_kind_name(enum ddp_alloc_kind k);

#endif /* DDP_ALLOC_H */
