/* SPDX-License-Identifier: MIT
 *
 * hooks_gen.c - everything hooks.def generates that is code or data:
 *   - the exported symbols (cuMemAlloc_v2, cuLaunchKernel_ptsz, ...) that
 *     programs linked to libcuda reach; each forwards to hook_<symbol>;
 *   - the bodies of HOOK_PASS rows: count, time, the row's `before` action,
 *     forward, on success its `after` action (copy counters, allocation
 *     table, kernel registry, launch follow-up), trace, log at trace level;
 *   - typed "missing" stubs returning CUDA_ERROR_NOT_FOUND, installed for a
 *     symbol the real driver lacks, so no hook ever calls NULL;
 *   - hook_info_[] and the sorted views hook_by_name_[] / hook_by_base_[]
 *     (order from the generated hooks_sorted.h).
 *
 * Contract: no state of its own besides constant tables.  The generated
 * bodies follow hook.h's protocol (no lock, no allocation on the fast path);
 * what an action does is its area's (hook_acct.c, hook_mem.c, hook_module.c,
 * hook_launch.c).
 */
#include <stdint.h>
#include "hook.h"
#include "hook_acct.h"
#include "hook_launch.h"
#include "hook_mem.h"
#include "hook_module.h"

_Static_assert(HOOK_COUNT <= DDP_STATS_MAX_HOOKS, "raise DDP_STATS_MAX_HOOKS");
_Static_assert(HOOK_COUNT < 65536, "hook ids are uint16_t");

/* ---- the action columns (hooks.def documents them): the action NAME(...)
 * of a row is HOOK_DO_NAME(...) here.  In scope: f_ (the hook frame), r_
 * (the result, after the call) and the row's arguments. */
#define HOOK_DO_ACT_NONE (void)0
#define HOOK_DO_ACCT_COPY(dir, n) hook_acct_copy(&f_, DDP_COPY_##dir, (uint64_t)(n))
#define HOOK_DO_ACCT_COPY_UNI(dst, src, n) hook_acct_unified(&f_, (dst), (src), (uint64_t)(n))
#define HOOK_DO_ACCT_HTOD(dst, src, n) hook_acct_htod(&f_, (dst), (src), (uint64_t)(n))
#define HOOK_DO_ACCT_DTOD(dst, src, n) hook_acct_dtod(&f_, (dst), (src), (uint64_t)(n))
#define HOOK_DO_ACCT_COPY2D(p) hook_acct_2d(&f_, (p))
#define HOOK_DO_ACCT_COPY3D(p) hook_acct_3d(&f_, (p))
#define HOOK_DO_ACCT_COPY3DP(p) hook_acct_3d_peer(&f_, (p))
#define HOOK_DO_ACCT_SET(dst, reach, n) \
	hook_acct_copy_at(&f_, DDP_COPY_SET, (uint64_t)(dst), (uint64_t)(reach), (uint64_t)(n))
#define HOOK_DO_TRACK_ALLOC(dptr, n, kind) hook_mem_alloced(&f_, (dptr), (n), DDP_ALLOC_##kind)
#define HOOK_DO_TRACK_FREE(p) hook_mem_freed(&f_, (p))
#define HOOK_DO_FREEING(p) hook_mem_freeing(&f_, (p))
#define HOOK_DO_TRACK_UNMAP(p, n) hook_mem_unmapped(&f_, (p), (n))
#define HOOK_DO_CTX_GOING(how, ctx, dev) hook_mem_ctx_going(&f_, HOOK_CTX_##how, (ctx), (int)(dev))
#define HOOK_DO_CTX_DONE(how, ctx, dev) hook_mem_ctx_done(&f_, HOOK_CTX_##how, (ctx), (int)(dev))
#define HOOK_DO_KREG_LOAD_FILE(h, lib, path) \
	hook_module_loaded_file((h) ? (const void *)*(h) : NULL, (lib), (path))
#define HOOK_DO_KREG_LOAD_IMAGE(h, lib, image) \
	hook_module_loaded_image((h) ? (const void *)*(h) : NULL, (lib), (image))
#define HOOK_DO_KREG_UNLOAD(h) hook_module_unloaded((const void *)(h))
#define HOOK_DO_KREG_KERNEL(out, h, name) \
	hook_module_kernel(&f_, (out) ? (const void *)*(out) : NULL, (const void *)(h), (name))
#define HOOK_DO_KREG_ALIAS(out, kernel) \
	hook_module_alias(&f_, (out) ? (const void *)*(out) : NULL, (const void *)(kernel))
/* A launch: the one launch body (hook_launch.h) over the kernel and its
 * arguments; when synchronisation, tracing or logging wants more, the launch
 * normalised into one record (struct ddp_launch_call) for hook_launch_full.
 * The record is built only then: the steady-state path stores nothing.
 * LAUNCHED follows a successful launch that hook_launch_full gave a token. */
#define HOOK_DO_LAUNCH(kind, fn, gx, gy, gz, bx, by, bz, shm, st, params, extra) \
	struct ddp_launch_call c_; \
	uint64_t tok_ = 0; \
	struct ddp_kfunc *k_ = hook_launch_enter(&f_, (fn), (params), (extra)); \
	if (__builtin_expect(ddp_sync_on_ | f_.trace | f_.log, 0)) { \
		c_ = (struct ddp_launch_call){ DDP_LAUNCH_##kind, \
					       (fn), \
					       { (gx), (gy), (gz) }, \
					       { (bx), (by), (bz) }, \
					       (shm), \
					       (st), \
					       (params), \
					       (extra), \
					       NULL }; \
		tok_ = hook_launch_full(&f_, k_, &c_); \
	}
#define HOOK_DO_LAUNCH_EX(kind, cfg, fn, params, extra) \
	struct ddp_launch_call c_; \
	uint64_t tok_ = 0; \
	struct ddp_kfunc *k_ = hook_launch_enter(&f_, (fn), (params), (extra)); \
	if (__builtin_expect(ddp_sync_on_ | f_.trace | f_.log, 0)) { \
		hook_launch_record_ex(&c_, DDP_LAUNCH_##kind, (cfg), (fn), (params), (extra)); \
		tok_ = hook_launch_full(&f_, k_, &c_); \
	}
#define HOOK_DO_LAUNCHED \
	if (__builtin_expect(tok_ != 0, 0)) \
	hook_launch_done(tok_, &c_)

/* ---- generated bodies (HOOK_PASS rows); HOOK_BODY rows are hand-written
 * and may not carry actions.  HOOK pastes HOOK_DO_ to each action's name, so
 * an action reaches the body as one unexpanded argument (expanded first, its
 * commas would split the arguments); `names` is the two columns as written. */
#define HOOK_BODY_HOOK_BODY(b, s, r, p, a, x, y, names) \
	_Static_assert(sizeof(names) == sizeof("ACT_NONE" \
					       "ACT_NONE"), \
		       "hooks.def: a HOOK_BODY row has an action column: " #b #s);
#define HOOK_BODY_HOOK_PASS(b, s, r, p, a, x, y, names) \
	r hook_##b##s p \
	{ \
		struct hook_frame f_; \
		if (!hook_begin(&f_, HOOK_ID_##b##s)) \
			return hook_real_.t.b##s a; \
		x; \
		r r_ = hook_real_.t.b##s a; \
		if (r_ == CUDA_SUCCESS) { \
			y; \
		} \
		HOOK_FINISH(&f_, r_, a); \
		return r_; \
	}
#define HOOK(b, s, v, k, r, p, a, x, y) HOOK_BODY_##k(b, s, r, p, a, HOOK_DO_##x, HOOK_DO_##y, #x #y)
#include "hooks.def"
#undef HOOK

/* ---- exported symbols: the program's direct calls */
#define HOOK(b, s, v, k, r, p, a, x, y) \
	DDP_EXPORT r b##s p \
	{ \
		return hook_##b##s a; \
	}
#include "hooks.def"
#undef HOOK

/* ---- stubs for symbols the real driver lacks */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define HOOK(b, s, v, k, r, p, a, x, y) \
	static r hook_missing_##b##s p \
	{ \
		return CUDA_ERROR_NOT_FOUND; \
	}
#include "hooks.def"
#undef HOOK
#pragma GCC diagnostic pop

const union hook_real hook_missing_ = { .t = {
#define HOOK(b, s, v, k, r, p, a, x, y) .b##s = hook_missing_##b##s,
#include "hooks.def"
#undef HOOK
					} };

/* The real entry points: stubs until hook_resolve_all fills them, so that a
 * hook reached before (or during) init never calls NULL. */
union hook_real hook_real_ = { .t = {
#define HOOK(b, s, v, k, r, p, a, x, y) .b##s = hook_missing_##b##s,
#include "hooks.def"
#undef HOOK
			       } };

/* ---- tables */
#define HOOK_IS_HOOK_BODY 1
#define HOOK_IS_HOOK_PASS 0
const struct hook_info hook_info_[HOOK_COUNT] = {
#define HOOK(b, s, v, k, r, p, a, x, y) \
	[HOOK_ID_##b##s] = { #b #s, #b, (void *)hook_##b##s, (void *)b##s, v, HOOK_IS_##k },
#include "hooks.def"
#undef HOOK
};

const uint16_t hook_by_name_[HOOK_COUNT] = { HOOK_BY_NAME_LIST };
const uint16_t hook_by_base_[HOOK_COUNT] = { HOOK_BY_BASE_LIST };
