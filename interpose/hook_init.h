/* SPDX-License-Identifier: MIT
 *
 * hook_init.h - libddp's start-up, driver stage (hook_init.c; the files
 * stage is hook_file_init, hook_file.h).
 *
 * Contract: ddp_init_once may be called from any hook (cu* or file) on any
 * thread; it returns once the library is initialised (or at once when called
 * back from inside the initialisation itself).
 */
#ifndef DDP_HOOK_INIT_H
#define DDP_HOOK_INIT_H

void ddp_init_once(void) __attribute__((visibility("hidden")));

/* The rank and world size read at init (0 and 1 before). */
int ddp_init_rank(void) __attribute__((visibility("hidden")));
int ddp_init_world_size(void) __attribute__((visibility("hidden")));

#endif /* DDP_HOOK_INIT_H */
