/* SPDX-License-Identifier: MIT
 *
 * hook_launch.h - the one launch body (hook_launch_enter, inline: it is the
 * hottest path of the library; hook_launch_full, its half for synchronised,
 * traced or logged launches) and the switches of the launch hooks
 * (hook_launch.c).  The six launch entry points' bodies are generated from
 * hooks.def; their LAUNCH / LAUNCH_EX before-columns call this body and,
 * when its second half runs, build the normalised record (struct
 * ddp_launch_call) it reads.
 *
 * Contract: hook_launch_observe_ is set once during library init (before
 * ddp_ready_ is published) and only read afterwards.  hook_launch_flush
 * runs on the thread whose pending launch counts it adds (its exit, and the
 * library's exit handler before the summary).  hook_launch_enter's
 * steady-state path (known kernel, no observer, no trace, sync off) takes no
 * lock, allocates nothing, makes no syscall: hash probe, a thread-local
 * count, one branch on ddp_sync_on_.
 */
#ifndef DDP_HOOK_LAUNCH_H
#define DDP_HOOK_LAUNCH_H

#include <stdint.h>
#include "hook.h"
#include "ddp_kreg.h"
#include "ddp_port.h"
#include "ddp_sync.h"

/* Decode every launch's arguments (inspection, debug logging). */
extern int hook_launch_observe_ __attribute__((visibility("hidden")));

/* Adds the calling thread's pending launch counts to their kernels'
 * counters (ddp_kfunc.launches). */
void hook_launch_flush(void) __attribute__((visibility("hidden")));

/* Slow halves of hook_launch_enter (hook_launch.c): a kernel the registry
 * does not know yet or does not track (NULL: leave the launch alone); the
 * argument check and observers. */
struct ddp_kfunc *hook_launch_unusual(struct hook_frame *fr, CUfunction f)
	__attribute__((visibility("hidden")));
void hook_launch_check(struct ddp_kfunc *k, void **params, void **extra) __attribute__((visibility("hidden")));

/* The rest of the launch body, when synchronisation, tracing or logging is
 * on, over the normalised launch c: the frame's trace detail, and with
 * gradient synchronisation on the launch handed to ddp_sync_launch (which
 * may reduce gradients or broadcast parameters first).  Returns its token
 * (0: nothing follows the launch).  k: hook_launch_enter's answer. */
uint64_t hook_launch_full(struct hook_frame *fr, struct ddp_kfunc *k, const struct ddp_launch_call *c)
	__attribute__((visibility("hidden")));
/* Normalises a cuLaunchKernelEx call (config may be NULL: zero dimensions). */
void hook_launch_record_ex(struct ddp_launch_call *c, enum ddp_launch_kind kind, const CUlaunchConfig *config,
			   CUfunction f, void **params, void **extra) __attribute__((visibility("hidden")));
/* After a successful launch that hook_launch_enter gave a token. */
void hook_launch_done(uint64_t token, const struct ddp_launch_call *c) __attribute__((visibility("hidden")));

/* One launch of k by this thread: counted in the thread's slot for k, added
 * to k's shared counter every HOOK_KCOUNT_BATCH launches or when another
 * kernel takes the slot. */
static inline void hook_launch_count(struct ddp_kfunc *k)
{
	struct hook_tls *t = &hook_tls_;
	unsigned i = k->id & (HOOK_KCOUNT_SLOTS - 1);
	if (__builtin_expect(t->kc[i].k == k, 1)) {
		if (++t->kc[i].n < HOOK_KCOUNT_BATCH)
			return;
		t->kc[i].n = 0;
		__atomic_fetch_add(&k->launches, HOOK_KCOUNT_BATCH, __ATOMIC_RELAXED);
		return;
	}
	if (t->kc[i].k && t->kc[i].n)
		__atomic_fetch_add(&t->kc[i].k->launches, t->kc[i].n, __ATOMIC_RELAXED);
	t->kc[i].k = k;
	t->kc[i].n = 1;
}

/* The launch body, before the real call: find and count the kernel, check
 * and observe its arguments when asked.  Returns the kernel (NULL: unknown
 * to the driver, or NCCL's: leave the launch alone). */
static inline struct ddp_kfunc *hook_launch_enter(struct hook_frame *fr, CUfunction f, void **params,
						  void **extra)
{
	struct ddp_kfunc *k = ddp_kreg_lookup(f);
	if (__builtin_expect(!k || k->untracked, 0)) {
		k = hook_launch_unusual(fr, f);
		if (!k)
			return NULL;
	}
	fr->kname = k->demangled;
	if (__builtin_expect(hook_launch_observe_, 0)) {
		/* the inspector may write its report (launch counts) from here */
		__atomic_fetch_add(&k->launches, 1, __ATOMIC_RELAXED);
	} else {
		hook_launch_count(k);
	}
	if (__builtin_expect((!params && !extra) || hook_launch_observe_, 0))
		hook_launch_check(k, params, extra);
	return k;
}

#endif /* DDP_HOOK_LAUNCH_H */
