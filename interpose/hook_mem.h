/* SPDX-License-Identifier: MIT
 *
 * hook_mem.h - the allocation hooks' actions (hook_mem.c), named by the
 * TRACK_* after-columns of hooks.def.
 *
 * Contract: called by the generated hook bodies after a successful driver
 * call (hook_mem_freeing: before the call), on the calling thread, with its
 * hook frame.
 */
#ifndef DDP_HOOK_MEM_H
#define DDP_HOOK_MEM_H

#include <stddef.h>
#include <cuda.h>
#include "ddp_alloc.h"

struct hook_frame;

/* *dptr (when dptr is not NULL) now holds size bytes of the given kind. */
void hook_mem_alloced(struct hook_frame *f, const CUdeviceptr *dptr, size_t size, enum ddp_alloc_kind kind)
	__attribute__((visibility("hidden")));
/* p is about to be freed: the gradient tracker compares the parameters
 * across ranks first when p holds one (ddp_sync_freeing). */
void hook_mem_freeing(struct hook_frame *f, CUdeviceptr p) __attribute__((visibility("hidden")));
/* p was freed (an address the table does not hold is passed on: DEBUG). */
void hook_mem_freed(struct hook_frame *f, CUdeviceptr p) __attribute__((visibility("hidden")));
/* [p, p + size) was unmapped: every mapping inside it leaves the table. */
void hook_mem_unmapped(struct hook_frame *f, CUdeviceptr p, size_t size) __attribute__((visibility("hidden")));

/* Contexts (hooks.def's CTX_GOING before the call, CTX_DONE after it). */
enum hook_ctx_how { HOOK_CTX_RETAIN, HOOK_CTX_RELEASE, HOOK_CTX_RESET, HOOK_CTX_DESTROY };
/* The context is about to go (DESTROY: ctx; RELEASE, RESET: dev's primary
 * context; a RELEASE only when it drops the last retain seen): the
 * gradient tracker's final compare runs first (ddp_sync_ctx_going). */
void hook_mem_ctx_going(struct hook_frame *f, enum hook_ctx_how how, CUcontext ctx, int dev)
	__attribute__((visibility("hidden")));
/* A successful retain (ctx: the primary context), release or reset of
 * dev's primary context: its retains counted. */
void hook_mem_ctx_done(struct hook_frame *f, enum hook_ctx_how how, CUcontext ctx, int dev)
	__attribute__((visibility("hidden")));

#endif /* DDP_HOOK_MEM_H */
