/* SPDX-License-Identifier: MIT
 *
 * hook_procaddr.c - cuGetProcAddress and cuGetProcAddress_v2: how cudart
 * (since 11.3), NCCL and PyTorch reach the driver.
 *
 * Recipe (DESIGN.md section 3): ask the real cuGetProcAddress for the base
 * name with the caller's flags and cudaVersion, then compare the pointer it
 * returns with the real address of every decorated symbol hooks.def lists
 * for that base (cuLaunchKernel, cuLaunchKernel_ptsz, ...).  The match names
 * the exact ABI the driver chose, and the answer is that row's hook, which
 * forwards to that same real function.  (A driver that takes the addresses
 * of its own exported functions through the GOT answers, under LD_PRELOAD,
 * with libddp's exported symbol of the same name: that matches the row too.)
 * No match (an older ABI we do not
 * hook, or a base we do not list): the driver's pointer is returned as is.
 *
 * Cache: per base name, up to 8 (cudaVersion, flags) keys with the answer
 * and the symbol status; a hit answers without calling the driver.  Slots
 * are claimed with a CAS and published with a release store of the key, so
 * readers take no lock.  Only flags 0, 1, 2 and successful lookups are cached.
 *
 * Contract: any thread; allocation-free; the driver is called at most once
 * per (base, version, flags) in steady state.
 */
#include <string.h>
#include "hook.h"
#include "hook_resolve.h"

#define PA_SLOTS 8

struct pa_slot {
	uint64_t key; /* (version << 2 | flags) + 1; 0 = empty; release-published */
	void *answer;
	int status; /* CUdriverProcAddressQueryResult */
};

/* Indexed by the base's first position in hook_by_base_. */
static struct pa_slot pa_cache[HOOK_COUNT][PA_SLOTS];
static int pa_used[HOOK_COUNT];

static int cache_get(size_t g, uint64_t key, void **answer, int *status)
{
	for (int i = 0; i < PA_SLOTS; i++) {
		uint64_t k = __atomic_load_n(&pa_cache[g][i].key, __ATOMIC_ACQUIRE);
		if (k == 0)
			return 0;
		if (k == key) {
			*answer = pa_cache[g][i].answer;
			*status = pa_cache[g][i].status;
			return 1;
		}
	}
	return 0;
}

static void cache_put(size_t g, uint64_t key, void *answer, int status)
{
	int i = __atomic_fetch_add(&pa_used[g], 1, __ATOMIC_RELAXED);
	if (i >= PA_SLOTS)
		return; /* full: answered from the driver every time (still correct) */
	pa_cache[g][i].answer = answer;
	pa_cache[g][i].status = status;
	__atomic_store_n(&pa_cache[g][i].key, key, __ATOMIC_RELEASE);
}

/* Our answer for the driver's pointer realp to base's rows. */
static void *match(size_t first, size_t count, void *realp, int *which)
{
	for (size_t i = 0; i < count; i++) {
		int id = hook_by_base_[first + i];
		/* a driver that takes its own functions' addresses through the GOT
		 * (no -Bsymbolic) answers with our exported symbol: same row */
		if ((hook_real_found_[id] && hook_real_.v[id] == realp) || hook_info_[id].exported == realp) {
			*which = id;
			return hook_info_[id].hook;
		}
	}
	*which = -1;
	return realp;
}

static CUresult procaddr(enum hook_id self, int v2, const char *symbol, void **pfn, int cudaVersion,
			 cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	struct hook_frame f;
	size_t first = 0, count = 0;
	CUresult r;

	int tracked = hook_begin(&f, self);
	if (!tracked || !symbol || !pfn || hook_find_base(symbol, &first, &count) != 0) {
		/* not ours: the driver answers alone */
		r = v2 ? HOOK_REAL(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags, status)
		       : HOOK_REAL(cuGetProcAddress)(symbol, pfn, cudaVersion, flags);
		if (tracked)
			HOOK_FINISH(&f, r, (symbol, pfn, cudaVersion, flags));
		return r;
	}
	uint64_t key =
		(flags <= 2 && cudaVersion >= 0) ? ((((uint64_t)(unsigned)cudaVersion) << 2) | flags) + 1 : 0;
	void *answer;
	int st;
	if (key && cache_get(first, key, &answer, &st)) {
		*pfn = answer;
		if (v2 && status)
			*status = (CUdriverProcAddressQueryResult)st;
		r = CUDA_SUCCESS;
	} else {
		CUdriverProcAddressQueryResult s = CU_GET_PROC_ADDRESS_SUCCESS;
		r = v2 ? HOOK_REAL(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags, &s)
		       : HOOK_REAL(cuGetProcAddress)(symbol, pfn, cudaVersion, flags);
		if (v2 && status)
			*status = s;
		if (r == CUDA_SUCCESS && *pfn) {
			int which;
			answer = match(first, count, *pfn, &which);
			if (which >= 0)
				DDP_DEBUG(HOOK, "cuGetProcAddress(%s, %d, flags %llu) -> %s (hooked)", symbol,
					  cudaVersion, (unsigned long long)flags, hook_info_[which].name);
			else
				DDP_DEBUG(HOOK,
					  "cuGetProcAddress(%s, %d, flags %llu): driver's "
					  "answer is no hooked ABI; passed through",
					  symbol, cudaVersion, (unsigned long long)flags);
			*pfn = answer;
			if (key)
				cache_put(first, key, answer, (int)s);
		}
	}
	HOOK_FINISH(&f, r, (symbol, pfn, cudaVersion, flags));
	return r;
}

CUresult hook_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return procaddr(HOOK_ID_cuGetProcAddress, 0, symbol, pfn, cudaVersion, flags, NULL);
}

CUresult hook_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				  CUdriverProcAddressQueryResult *symbolStatus)
{
	return procaddr(HOOK_ID_cuGetProcAddress_v2, 1, symbol, pfn, cudaVersion, flags, symbolStatus);
}
