/* SPDX-License-Identifier: MIT
 *
 * hook_resolve.h - name lookups over hooks.def and the real driver library
 * (hook_resolve.c).
 *
 * Contract: hook_resolve_all once, inside library init; the rest from any
 * thread, lock-free.
 */
#ifndef DDP_HOOK_RESOLVE_H
#define DDP_HOOK_RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"
#include "ddp_params.h"
#include "hook.h"

extern uint8_t hook_real_found_[HOOK_COUNT] HOOK_HIDDEN; /* the driver has it */
extern void *hook_libcuda_ HOOK_HIDDEN;                  /* dlopen handle     */

/* Opens the driver and fills hook_real_ (stubs for what it lacks). */
ddp_result hook_resolve_all(void) HOOK_HIDDEN;

/* The real dlsym (never the override). */
void *hook_real_dlsym(void *handle, const char *name) HOOK_HIDDEN;

/* A driver symbol not in hooks.def (cuFuncGetName ...); NULL before init. */
void *hook_driver_sym(const char *name) HOOK_HIDDEN;

/* hook id of an exported symbol name, -1 when not hooked. */
int hook_find_name(const char *name) HOOK_HIDDEN;

/* Rows of a base name: hook_by_base_[first .. first+count); -1 when none. */
int hook_find_base(const char *base, size_t *first, size_t *count) HOOK_HIDDEN;

/* Is caller inside the real libcuda's mapping? */
int hook_caller_is_libcuda(const void *caller) HOOK_HIDDEN;

#endif /* DDP_HOOK_RESOLVE_H */
