/* SPDX-License-Identifier: MIT
 *
 * sim_proc.c - what sim_api.def generates: the exports of the stream-flavoured
 * entry points (a default and a _ptsz/_ptds function each, distinct
 * functions), the table of every implemented entry point, and
 * cuGetProcAddress / cuGetProcAddress_v2 over it.
 *
 * cuGetProcAddress(symbol, pfn, cudaVersion, flags[, symbolStatus]) answers
 * like the driver:
 *   - flags 0 (DEFAULT) and 1 (LEGACY_STREAM) give the legacy-stream
 *     flavour, 2 (PER_THREAD_DEFAULT_STREAM) the _ptsz/_ptds flavour where
 *     the call has one (else the only flavour there is);
 *   - among the rows of that name and flavour, the one with the highest
 *     min_version <= cudaVersion (cuMemAlloc: cuMemAlloc_v2 from 3020);
 *     rows exist but all need a newer version: CUDA_ERROR_NOT_FOUND with
 *     CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
 *   - a name cuda.h declares but the CPU device does not implement: its stub
 *     (sim_unsupported.c), which returns CUDA_ERROR_NOT_SUPPORTED when called;
 *   - anything else: CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND.
 * It works before cuInit, as cudart's loader needs.
 *
 * Contract: constant tables, no locks; any thread.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- generated exports of the SIM_STREAM entries */

#define SIM_UNPAREN(...) __VA_ARGS__
#define SIM_FN(base, sym, ver)
#define SIM_STREAM(base, sym, ver, ptsym, ptver, impl, params, args) \
	SIM_EXPORT CUresult sym params \
	{ \
		SIM_FAULT_RETURN(#sym); \
		return impl(SIM_DS_LEGACY, SIM_UNPAREN args); \
	} \
	SIM_EXPORT CUresult ptsym params \
	{ \
		SIM_FAULT_RETURN(#ptsym); \
		return impl(SIM_DS_PER_THREAD, SIM_UNPAREN args); \
	}
#include "sim_api.def"
#undef SIM_FN
#undef SIM_STREAM

/* ---- the table */

struct sim_proc {
	const char *base;    /* name as asked for (cuMemAlloc)           */
	const char *sym;     /* exported name (cuMemAlloc_v2)            */
	int min_version;     /* first cudaVersion it answers             */
	int per_thread;      /* the _ptsz/_ptds flavour                  */
	void *fn;
};

/* The exported function of each SIM_FN symbol (sim_entry.c's, whose C name
 * sim_internal.h leaves to the hand-written body), as sim_entry_<symbol>. */
#define SIM_FAULT_FN(sym, params, args) extern __typeof__(sym) sim_entry_##sym __asm__(#sym);
#define SIM_FAULT_NONE(sym) extern __typeof__(sym) sim_entry_##sym __asm__(#sym);
#include "sim_faults.inc"
#undef SIM_FAULT_FN
#undef SIM_FAULT_NONE

static const struct sim_proc sim_procs[] = {
#define SIM_FN(base, sym, ver) { #base, #sym, ver, 0, (void *)sim_entry_##sym },
#define SIM_STREAM(base, sym, ver, ptsym, ptver, ...) \
	{ #base, #sym, ver, 0, (void *)sym }, { #base, #ptsym, ptver, 1, (void *)ptsym },
#include "sim_api.def"
#undef SIM_FN
#undef SIM_STREAM
};

struct sim_unsup_entry {
	const char *name;
	int (*fn)(void);
};
extern const struct sim_unsup_entry sim_unsup_table[];
extern const size_t sim_unsup_count;

static int sim_unsup_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct sim_unsup_entry *)elem)->name);
}

static void *sim_unsup_find(const char *name)
{
	const struct sim_unsup_entry *e =
		bsearch(name, sim_unsup_table, sim_unsup_count, sizeof(sim_unsup_table[0]), sim_unsup_cmp);
	return e ? (void *)e->fn : NULL;
}

/* Best row of `flavour` for name at version; *seen tells whether any row of
 * that flavour exists. */
static const struct sim_proc *sim_proc_pick(const char *name, int version, int flavour, int *seen)
{
	const struct sim_proc *best = NULL;
	for (size_t i = 0; i < sizeof(sim_procs) / sizeof(sim_procs[0]); i++) {
		const struct sim_proc *p = &sim_procs[i];
		if (p->per_thread != flavour || strcmp(p->base, name) != 0)
			continue;
		*seen = 1;
		if (p->min_version <= version && (!best || p->min_version > best->min_version))
			best = p;
	}
	return best;
}

static CUresult sim_get_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *status)
{
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!symbol || !pfn || cudaVersion <= 0 ||
	    (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
	     flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	int seen = 0;
	const struct sim_proc *p = NULL;
	if (flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		p = sim_proc_pick(symbol, cudaVersion, 1, &seen);
	if (!p)
		p = sim_proc_pick(symbol, cudaVersion, 0, &seen);
	if (p) {
		*pfn = p->fn;
		if (status)
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
		SIM_VERBOSE("cuGetProcAddress(%s, %d, %llu) -> %s", symbol, cudaVersion,
			    (unsigned long long)flags, p->sym);
		return CUDA_SUCCESS;
	}
	if (seen) {
		if (status)
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return CUDA_ERROR_NOT_FOUND;
	}
	void *stub = sim_unsup_find(symbol);
	if (stub) {
		*pfn = stub;
		if (status)
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
		SIM_VERBOSE("cuGetProcAddress(%s): not implemented, handing out a NOT_SUPPORTED stub", symbol);
		return CUDA_SUCCESS;
	}
	SIM_VERBOSE("cuGetProcAddress(%s): unknown symbol", symbol);
	return CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return sim_get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
					CUdriverProcAddressQueryResult *symbolStatus)
{
	return sim_get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}
