/* SPDX-License-Identifier: MIT
 *
 * ddp_grad.h - the step and gradient tracker: from the stream of kernel
 * launches it learns which buffers are gradients (G) and which are
 * parameters or optimizer state (P), and decides WHEN to average G and
 * broadcast P.  It does no I/O itself: every action goes through a table of
 * callbacks (struct ddp_grad_ops), implemented by ddp_sync.c on the real
 * driver and by tests/unit/test_grad.c on host memory.
 *
 * The rules (docs/gradient-sync.md tells the story):
 * - Kernels come in three classes (decided by name, by the caller):
 *   optimizer, gradient reader (unscale, inf check, grad norm, clipping),
 *   other (forward, backward, anything).
 * - Every G buffer has a dirty flag.  An "other" launch that may write a G
 *   buffer (a non-const pointer into it, or an untyped one) sets it.  A
 *   reader or optimizer launch that touches a dirty G first averages ALL
 *   dirty G (in the order G were first seen, never by address) and clears
 *   them.  So the reduction lands after backward's last write and before
 *   the first launch that consumes the gradients, and gradient accumulation
 *   reduces once per optimizer step.
 * - Learning (first optimizer step): at an optimizer launch, typed non-const
 *   pointers are P, typed const pointers to allocations of more than 64
 *   bytes whose element count pairs with a P allocation are G.  Untyped or
 *   in-struct pointers are classified by calibration on the kernel's first
 *   launch: snapshot, run the launch, compare (changed = P, unchanged and
 *   paired = G), restore, then proceed as usual (so step one is exact);
 *   this repeats for every launch that brings an untyped buffer not seen
 *   before (in practice: the first optimizer step only).
 *   Before the first step ends, a reader launch's large buffers become G
 *   candidates and are reduced there (the AMP unscale or the norm for
 *   clipping comes before the optimizer).
 * - P buffers are broadcast from rank 0 before their first update.
 * - Steps: the first optimizer launch after a non-optimizer launch begins a
 *   step's update phase; the next non-optimizer launch ends the step.
 *
 * Contract: one tracker per process; the caller serialises calls (one lock
 * in ddp_sync.c).  Callbacks are made from inside ddp_grad_launch.  Memory:
 * the buffer table grows with malloc (slow path only).  A callback error
 * stops processing and is returned; the caller treats it as fatal.
 */
#ifndef DDP_GRAD_H
#define DDP_GRAD_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_dtype.h"
#include "ddp_err.h"

/* Element types are enum ddp_dtype (ddp_dtype.h), stored in uint8_t fields.
 * Only reducible types (f32, f16, bf16) make a gradient; the tracker treats
 * any other one as unknown. */

enum ddp_grad_kclass {
	DDP_GK_OTHER = 0,
	DDP_GK_READER,      /* reads gradients before the optimizer           */
	DDP_GK_OPT,         /* optimizer step                                  */
};

enum ddp_grad_access {   /* same values as enum ddp_access (ddp_launch.h) */
	DDP_GA_UNKNOWN = 0,
	DDP_GA_READ = 1,
	DDP_GA_WRITE = 2,
};

/* One argument of a launch: a pointer inside a live allocation. */
struct ddp_grad_arg {
	uint64_t base, size;     /* the allocation                            */
	uint32_t alloc_id;
	uint16_t param;          /* parameter index                           */
	uint16_t word;           /* 8-byte word inside a by-value struct      */
	uint8_t access;          /* enum ddp_grad_access                      */
	uint8_t in_struct;
	uint8_t dtype;           /* enum ddp_dtype of the pointee             */
};

struct ddp_grad_launch {
	const char *kname;       /* short name, for labels and messages       */
	uint32_t kid;            /* kernel id (registration order)            */
	uint8_t kclass;          /* enum ddp_grad_kclass                      */
	uint8_t template_dtype;  /* enum ddp_dtype (functor<T>)               */
	uint32_t nargs;
	const struct ddp_grad_arg *args;
	void *stream;            /* opaque: passed back to the callbacks      */
	void *launch_ctx;        /* opaque: passed to ops->relaunch           */
	uint32_t truncated;      /* buffers the decoder dropped (more than it
				  * can hold): args[] is incomplete           */
};

enum ddp_grad_role { DDP_GR_NONE = 0, DDP_GR_GRAD, DDP_GR_PARAM, DDP_GR_OTHER /* neither */ };

/* A buffer the tracker knows (a whole allocation). */
struct ddp_grad_buf {
	uint64_t base, size;
	uint32_t alloc_id;
	uint8_t role;            /* enum ddp_grad_role                        */
	uint8_t dtype;           /* G: enum ddp_dtype (reducible)             */
	uint8_t dirty;           /* G: written since the last reduction       */
	uint8_t bcast_done;      /* P: broadcast from rank 0 done             */
	uint8_t from_reader;     /* G: learned at a reader launch             */
	uint8_t confirmed;       /* G: seen read-only by an optimizer launch  */
	uint32_t order;          /* G/P: order of first appearance            */
	uint64_t count;          /* G: elements                               */
	char label[64];          /* "sgd_momentum_update:1" (kernel:param)    */
};

struct ddp_grad_ops {
	void *ctx;
	/* Average bufs[0..n) (G, in tracker order) across ranks, in place. */
	ddp_result (*allreduce)(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream);
	/* Copy rank 0's bytes of bufs[0..n) (P) to every rank. */
	ddp_result (*broadcast)(void *ctx, struct ddp_grad_buf *const *bufs, size_t n, void *stream);
	/* Synchronous device <-> host copies (calibration). */
	ddp_result (*read)(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream);
	ddp_result (*write)(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream);
	/* Run the current launch now and wait for it (calibration). */
	ddp_result (*relaunch)(void *ctx, void *launch_ctx);
	/* Step boundaries (may be NULL).  step counts from 1. */
	ddp_result (*step_begin)(void *ctx, uint64_t step);
	ddp_result (*step_end)(void *ctx, uint64_t step);
	/* Is b's allocation still live (same base and allocation id)?  May be
	 * NULL (always).  A freed buffer is forgotten, never reduced. */
	int (*alive)(void *ctx, const struct ddp_grad_buf *b);
};

struct ddp_grad;

/* dtype_override: DDP_DT_UNKNOWN = none, else a reducible type
 * (DDP_GRAD_DTYPE). */
ddp_result ddp_grad_new(const struct ddp_grad_ops *ops, enum ddp_dtype dtype_override,
			struct ddp_grad **out /* OUT */);
void ddp_grad_free(struct ddp_grad *g);

/* Processes one launch, BEFORE it reaches the driver.  Errors are fatal for
 * the job (the message is in ddp_grad_last_error).  A launch whose argument
 * list is incomplete (L->truncated): an optimizer or reader launch is an
 * error (its gradients cannot all be seen); any other launch marks every
 * gradient dirty (averaging an already averaged gradient changes nothing). */
ddp_result ddp_grad_launch(struct ddp_grad *g, const struct ddp_grad_launch *L);

/* Ends an open update phase (at exit). */
ddp_result ddp_grad_finish(struct ddp_grad *g);

/* Is any gradient known, or an update phase open?  (When not, "other"
 * launches need not be decoded.) */
int ddp_grad_active(const struct ddp_grad *g);

/* An allocation is gone (free): forget it. */
void ddp_grad_forget(struct ddp_grad *g, uint64_t base);

/* Introspection (tests, summary, --check). */
size_t ddp_grad_nbufs(const struct ddp_grad *g);
struct ddp_grad_buf *ddp_grad_buf_at(struct ddp_grad *g, size_t i);
uint64_t ddp_grad_steps(const struct ddp_grad *g);       /* steps begun   */
uint64_t ddp_grad_reductions(const struct ddp_grad *g);  /* allreduce calls */
const char *ddp_grad_last_error(const struct ddp_grad *g);

/* The text the ranks compare before a collective over bufs[0..n)
 * (ddp_check_signature): "n=2 label dtype count=N; ..." (grads) or
 * "n=2 label bytes=N; ..." (parameters).  Always fits in cap (>= 128)
 * characters: when the whole description does not, it keeps the buffers that
 * fit and ends with " ...+K more fnv=<hex>", the hash of the whole, so any
 * difference between ranks still shows.  *hash (may be NULL) receives that
 * 64-bit FNV-1a of the whole description.  Returns the text's length. */
size_t ddp_grad_signature(char *out, size_t cap, struct ddp_grad_buf *const *bufs, size_t n, int grads,
			  uint64_t *hash /* OUT, may be NULL */);

/* Pattern lists: "a,b" replaces the built-ins, "+a,b" adds to them; NULL or
 * "" keeps the built-ins.  Matching is a case-insensitive substring test.
 * Returns 1 when name matches. */
int ddp_grad_name_matches(const char *name, const char *const *builtin, const char *setting);
extern const char *const ddp_grad_opt_builtin[];
extern const char *const ddp_grad_reader_builtin[];
/* Reader patterns win over optimizer patterns (multi_tensor_apply<LpNorm>). */
enum ddp_grad_kclass ddp_grad_classify(const char *name, const char *opt_setting,
				       const char *reader_setting);

#endif /* DDP_GRAD_H */
