/* SPDX-License-Identifier: MIT
 *
 * ddp_summary.h - the exit summary of one process: calls per hooked
 * function (with errors and estimated time), kernels by launch count,
 * allocation totals and peak, bytes copied by direction, estimated time in
 * hooked calls.  Printed at info level to stderr; with a trace directory
 * also written to DIR/rank<k>.summary.json, which `ddprun report` merges.
 *
 * JSON layout (one object):
 *   {"version":1, "rank":R, "world_size":W, "pid":P,
 *    "hook_time_ns":T, "hooks":[{"name","calls","errors","timed","time_ns"}...],
 *    "kernels":[{"name","launches"}...], "alloc":{"count","bytes","peak","live",
 *    "live_bytes","frees"}, "copies":{"htod":{"bytes","calls"},...}}
 *
 * Contract: called once at exit, single-threaded in spirit (other threads'
 * counters are read racily, at worst slightly stale).
 */
#ifndef DDP_SUMMARY_H
#define DDP_SUMMARY_H

void ddp_summary_emit(const char *dir, int rank, int world, const char *(*hook_name)(unsigned id),
		      unsigned nhooks);

#endif /* DDP_SUMMARY_H */
