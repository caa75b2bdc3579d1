/* SPDX-License-Identifier: MIT
 *
 * hook_launch.h - switches of the launch hooks (hook_launch.c).
 *
 * Contract: hook_launch_observe_ is set once during library init (before
 * ddp_ready_ is published) and only read afterwards.  hook_launch_flush
 * runs on the thread whose pending launch counts it adds (its exit, and the
 * library's exit handler before the summary).
 */
#ifndef DDP_HOOK_LAUNCH_H
#define DDP_HOOK_LAUNCH_H

/* Decode every launch's arguments (inspection, debug logging). */
extern int hook_launch_observe_ __attribute__((visibility("hidden")));

/* Adds the calling thread's pending launch counts to their kernels'
 * counters (ddp_kfunc.launches). */
void hook_launch_flush(void) __attribute__((visibility("hidden")));

#endif /* DDP_HOOK_LAUNCH_H */
