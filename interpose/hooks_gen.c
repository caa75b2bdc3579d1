/* SPDX-License-Identifier: MIT
 *
 * hooks_gen.c - everything hooks.def generates that is code or data:
 *   - the exported symbols (cuMemAlloc_v2, cuLaunchKernel_ptsz, ...) that
 *     programs linked to libcuda reach; each forwards to hook_<symbol>;
 *   - the passthrough bodies of HOOK_PASS rows: count, time, trace, log at
 *     trace level, forward, and on success add the row's `acct` to the copy
 *     counters;
 *   - typed "missing" stubs returning CUDA_ERROR_NOT_FOUND, installed for a
 *     symbol the real driver lacks, so no hook ever calls NULL;
 *   - hook_info_[] and the sorted views hook_by_name_[] / hook_by_base_[]
 *     (order from the generated hooks_sorted.h).
 *
 * Contract: no state of its own besides constant tables.  The generated
 * bodies follow hook.h's protocol (no lock, no allocation on the fast path).
 */
#include <stdint.h>
#include "hook.h"
#include "hook_acct.h"

_Static_assert(HOOK_COUNT <= DDP_STATS_MAX_HOOKS, "raise DDP_STATS_MAX_HOOKS");
_Static_assert(HOOK_COUNT < 65536, "hook ids are uint16_t");

/* ---- what a successful HOOK_PASS call adds to the counters */
#define ACCT_NONE (void)0
#define ACCT_COPY(dir, n) hook_acct_copy(&f_, DDP_COPY_##dir, (uint64_t)(n))
#define ACCT_COPY_UNI(dst, src, n) hook_acct_unified(&f_, (dst), (src), (uint64_t)(n))
#define ACCT_COPY2D(p) hook_acct_2d(&f_, (p))
#define ACCT_COPY3D(p) hook_acct_3d(&f_, (p))
#define ACCT_COPY3DP(p) hook_acct_3d_peer(&f_, (p))
#define ACCT_SET(n) hook_acct_copy(&f_, DDP_COPY_SET, (uint64_t)(n))

/* ---- passthrough bodies (HOOK_PASS rows only) */
#define HOOK_BODY_HOOK_BODY(b, s, r, p, a, x)
#define HOOK_BODY_HOOK_PASS(b, s, r, p, a, x) \
	r hook_##b##s p \
	{ \
		struct hook_frame f_; \
		if (!hook_begin(&f_, HOOK_ID_##b##s)) \
			return hook_real_.t.b##s a; \
		r r_ = hook_real_.t.b##s a; \
		if (r_ == CUDA_SUCCESS) { \
			x; \
		} \
		HOOK_FINISH(&f_, r_, a); \
		return r_; \
	}
#define HOOK(b, s, v, k, r, p, a, x) HOOK_BODY_##k(b, s, r, p, a, x)
#include "hooks.def"
#undef HOOK

/* ---- exported symbols: the program's direct calls */
#define HOOK(b, s, v, k, r, p, a, x) \
	DDP_EXPORT r b##s p { return hook_##b##s a; }
#include "hooks.def"
#undef HOOK

/* ---- stubs for symbols the real driver lacks */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define HOOK(b, s, v, k, r, p, a, x) \
	static r hook_missing_##b##s p { return CUDA_ERROR_NOT_FOUND; }
#include "hooks.def"
#undef HOOK
#pragma GCC diagnostic pop

const union hook_real hook_missing_ = { .t = {
#define HOOK(b, s, v, k, r, p, a, x) .b##s = hook_missing_##b##s,
#include "hooks.def"
#undef HOOK
} };

/* The real entry points: stubs until hook_resolve_all fills them, so that a
 * hook reached before (or during) init never calls NULL. */
union hook_real hook_real_ = { .t = {
#define HOOK(b, s, v, k, r, p, a, x) .b##s = hook_missing_##b##s,
#include "hooks.def"
#undef HOOK
} };

/* ---- tables */
#define HOOK_IS_HOOK_BODY 1
#define HOOK_IS_HOOK_PASS 0
const struct hook_info hook_info_[HOOK_COUNT] = {
#define HOOK(b, s, v, k, r, p, a, x) \
	[HOOK_ID_##b##s] = { #b #s, #b, (void *)hook_##b##s, (void *)b##s, v, HOOK_IS_##k },
#include "hooks.def"
#undef HOOK
};

const uint16_t hook_by_name_[HOOK_COUNT] = { HOOK_BY_NAME_LIST };
const uint16_t hook_by_base_[HOOK_COUNT] = { HOOK_BY_BASE_LIST };
