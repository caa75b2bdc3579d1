/* SPDX-License-Identifier: MIT
 *
 * ddp_waits.h - the host waits libddp itself issues on the device, counted.
 *
 * A host wait (cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize
 * called by libddp, not by the program) blocks the program's thread until
 * the device caught up: in a step that is not a verification step it is a
 * stall the program would not have had.  ddp_waits_install wraps the port's
 * three synchronise entries (ddp_driver_) with counting, timing wrappers
 * that also put each wait in the trace (cat "wait", named after the entry
 * point), so a trace shows in which step each wait fell (the "optimizer
 * step" events span the steps).  NCCL's and the program's own calls do not
 * go through the port's table and are not counted.
 *
 * Contract: ddp_waits_install once, after the port's driver table is filled
 * and before anything copies its entries; the wrappers run on any thread
 * (atomic counters); ddp_waits_report at exit.
 */
#ifndef DDP_WAITS_H
#define DDP_WAITS_H
#include <stdint.h>

enum ddp_wait_kind {
	DDP_WAIT_STREAM,
	DDP_WAIT_CTX,
	DDP_WAIT_EVENT,
	DDP_WAIT_KINDS
};

struct ddp_waits {
	uint64_t calls[DDP_WAIT_KINDS];
	uint64_t ns[DDP_WAIT_KINDS];
};

void ddp_waits_install(void);
/* The counts so far. */
void ddp_waits_get(struct ddp_waits *out);
/* One info line: "host waits by libddp: N (...)". */
void ddp_waits_report(void);
#endif /* DDP_WAITS_H */
