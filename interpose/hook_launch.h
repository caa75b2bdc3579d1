/* SPDX-License-Identifier: MIT
 *
 * hook_launch.h - switches of the launch hooks (hook_launch.c).
 *
 * Contract: hook_launch_observe_ is set once during library init (before
 * ddp_ready_ is published) and only read afterwards.
 */
#ifndef DDP_HOOK_LAUNCH_H
#define DDP_HOOK_LAUNCH_H

/* Decode every launch's arguments (inspection, debug logging). */
extern int hook_launch_observe_ __attribute__((visibility("hidden")));

#endif /* DDP_HOOK_LAUNCH_H */
