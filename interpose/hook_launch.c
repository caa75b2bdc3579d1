/* SPDX-License-Identifier: MIT
 *
 * hook_launch.c - kernel launch hooks: cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, each with its _ptsz twin.
 *
 * Per launch: look the handle up in the kernel registry (lock-free hash; a
 * CUkernel cast to CUfunction is found the same way), count it on the
 * kernel (in batches of HOOK_KCOUNT_BATCH per thread: the kernel's counter
 * is one cache line that every launching thread would otherwise write on
 * every launch; a thread's pending counts are added at its exit and, for
 * the thread that runs the exit handler, before the summary, so a thread
 * still launching when the process exits may leave up to 63 launches per
 * kernel uncounted), and when an observer wants it (DDP_INSPECT, or DDP_LOG=debug for
 * the launch subsystem) decode the arguments against the allocation table.
 * An unknown handle is discovered once through the driver (name, parameter
 * info).  NCCL's kernels (ncclDevKernel_*, ncclKernel_*) are not tracked.
 * Inconsistent arguments (no kernelParams and no extra for a kernel with
 * parameters, an extra without a buffer) are reported once per kernel; the
 * launch always reaches the driver unchanged and its result is returned.
 *
 * With gradient synchronisation on (ddp_sync_on_, world size > 1) every
 * launch is first handed to ddp_sync_launch (runtime/grad/ddp_sync.c), which may
 * reduce gradients or broadcast parameters before the launch goes out; when
 * it returns a token, ddp_sync_launched(token) follows the launch (an early
 * gradient reduction enqueued behind it).
 *
 * Contract: the steady-state path (known kernel, no observer, no trace,
 * sync off) takes no lock, allocates nothing, makes no syscall and writes
 * no shared cache line but once per HOOK_KCOUNT_BATCH launches: hash probe,
 * a thread-local count, one branch on ddp_sync_on_, the real call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hook.h"
#include "hook_launch.h"
#include "ddp_inspect.h"
#include "ddp_kreg.h"
#include "ddp_launch.h"
#include "ddp_sync.h"

int hook_launch_observe_ HOOK_HIDDEN;

static __thread struct ddp_launch *tls_launch;

static void warn_once(struct ddp_kfunc *k, const char *why)
{
	if (!__atomic_exchange_n(&k->warned, 1, __ATOMIC_RELAXED))
		DDP_WARN("launch of %s: %s; passed to the driver unchanged (reported once per kernel)",
			 k->demangled, why);
}

/* Decode and hand to the observers (slow path, only when asked for). */
static void observe(struct ddp_kfunc *k, void **params, void **extra)
{
	struct ddp_launch *L = tls_launch;
	struct ddp_launch_params p = { params, extra };

	if (!L && !(L = tls_launch = malloc(sizeof *L)))
		return;
	ddp_result rc = ddp_launch_decode(k, &p, L);
	if (rc == DDP_ERR_INVALID) {
		warn_once(k, "arguments inconsistent with the kernel's parameter layout");
		return;
	}
	if (rc != DDP_OK) {
		DDP_DEBUG(LAUNCH, "launch %s: parameter layout unknown, arguments not decoded",
			  k->demangled);
		return;
	}
	if (DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_LAUNCH)) {
		for (uint32_t i = 0; i < L->nargs; i++) {
			const struct ddp_launch_arg *a = &L->args[i];
			DDP_DEBUG(LAUNCH, "launch %s: param %u%s -> allocation #%u 0x%llx+%llu (offset %llu) %s",
				  k->name, a->param, a->in_struct ? " (in struct)" : "", a->alloc.id,
				  (unsigned long long)a->alloc.base, (unsigned long long)a->alloc.size,
				  (unsigned long long)(a->value - a->alloc.base),
				  ddp_access_name((enum ddp_access)a->access));
		}
	}
	if (ddp_inspect_enabled())
		ddp_inspect_launch(L);
}

/* A kernel of NCCL's (kreg marks them untracked) launched by the program
 * (libddp's own collectives never reach the launch hooks: hook_begin), so
 * the program is already data-parallel: ddprun's gradient synchronisation
 * steps aside. */
static void foreign_nccl(const struct ddp_kfunc *k)
{
	char why[160];

	snprintf(why, sizeof why, "it launched NCCL kernel %.100s of its own", k->demangled);
	ddp_sync_step_aside(why);
}

/* One launch of k by this thread: counted in the thread's slot for k, added
 * to k's shared counter every HOOK_KCOUNT_BATCH launches or when another
 * kernel takes the slot. */
static inline void count_launch(struct ddp_kfunc *k)
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

void hook_launch_flush(void)
{
	struct hook_tls *t = &hook_tls_;
	for (unsigned i = 0; i < HOOK_KCOUNT_SLOTS; i++) {
		if (t->kc[i].k && t->kc[i].n)
			__atomic_fetch_add(&t->kc[i].k->launches, t->kc[i].n, __ATOMIC_RELAXED);
		t->kc[i].n = 0;
	}
}

static inline struct ddp_kfunc *launch_prepare(struct hook_frame *fr, CUfunction f,
					       void **params, void **extra)
{
	struct ddp_kfunc *k = ddp_kreg_lookup(f);
	if (__builtin_expect(!k, 0)) {
		k = ddp_kreg_discover(f);
		if (!k)
			return NULL;
	}
	if (__builtin_expect(k->untracked, 0)) {
		/* NCCL's kernels; libddp's own never reach the hooks (hook_begin) */
		if (ddp_sync_on_)
			foreign_nccl(k);
		fr->kname = k->demangled;
		return NULL;
	}
	fr->kname = k->demangled;
	if (__builtin_expect(hook_launch_observe_, 0)) {
		/* the inspector may write its report (launch counts) from here */
		__atomic_fetch_add(&k->launches, 1, __ATOMIC_RELAXED);
	} else {
		count_launch(k);
	}
	if (__builtin_expect(!params && !extra && k->layout_known && k->nparams, 0))
		warn_once(k, "kernelParams and extra are both NULL");
	else if (__builtin_expect(hook_launch_observe_, 0))
		observe(k, params, extra);
	return k;
}

static inline void set_dims(struct hook_frame *fr, unsigned gx, unsigned gy, unsigned gz,
			    unsigned bx, unsigned by, unsigned bz)
{
	fr->grid[0] = gx;
	fr->grid[1] = gy;
	fr->grid[2] = gz;
	fr->block[0] = bx;
	fr->block[1] = by;
	fr->block[2] = bz;
}

#define LAUNCH_KERNEL(sym, kind) \
	CUresult hook_##sym(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, \
			    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
			    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
			    void **kernelParams, void **extra) \
	{ \
		struct hook_frame fr; \
		if (!hook_begin(&fr, HOOK_ID_##sym)) \
			return HOOK_REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, \
					      blockDimZ, sharedMemBytes, hStream, kernelParams, extra); \
		struct ddp_kfunc *k_ = launch_prepare(&fr, f, kernelParams, extra); \
		uint64_t tok_ = 0; \
		struct ddp_launch_call c_; \
		if (__builtin_expect(ddp_sync_on_, 0) && k_) { \
			c_ = (struct ddp_launch_call){ kind, f, { gridDimX, gridDimY, gridDimZ }, \
				{ blockDimX, blockDimY, blockDimZ }, sharedMemBytes, hStream, \
				kernelParams, extra, NULL }; \
			tok_ = ddp_sync_launch(k_, &c_); \
		} \
		CUresult r = HOOK_REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, \
					    blockDimZ, sharedMemBytes, hStream, kernelParams, extra); \
		if (__builtin_expect(tok_ != 0, 0) && r == CUDA_SUCCESS) \
			ddp_sync_launched(tok_, &c_); \
		if (__builtin_expect(fr.trace | fr.log, 0)) \
			set_dims(&fr, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ); \
		HOOK_FINISH(&fr, r, (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, \
				     sharedMemBytes, hStream, kernelParams, extra)); \
		return r; \
	}
LAUNCH_KERNEL(cuLaunchKernel, DDP_LAUNCH_PLAIN)
LAUNCH_KERNEL(cuLaunchKernel_ptsz, DDP_LAUNCH_PTSZ)

#define LAUNCH_COOP(sym, kind) \
	CUresult hook_##sym(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, \
			    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
			    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
			    void **kernelParams) \
	{ \
		struct hook_frame fr; \
		if (!hook_begin(&fr, HOOK_ID_##sym)) \
			return HOOK_REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, \
					      blockDimZ, sharedMemBytes, hStream, kernelParams); \
		struct ddp_kfunc *k_ = launch_prepare(&fr, f, kernelParams, NULL); \
		uint64_t tok_ = 0; \
		struct ddp_launch_call c_; \
		if (__builtin_expect(ddp_sync_on_, 0) && k_) { \
			c_ = (struct ddp_launch_call){ kind, f, { gridDimX, gridDimY, gridDimZ }, \
				{ blockDimX, blockDimY, blockDimZ }, sharedMemBytes, hStream, \
				kernelParams, NULL, NULL }; \
			tok_ = ddp_sync_launch(k_, &c_); \
		} \
		CUresult r = HOOK_REAL(sym)(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, \
					    blockDimZ, sharedMemBytes, hStream, kernelParams); \
		if (__builtin_expect(tok_ != 0, 0) && r == CUDA_SUCCESS) \
			ddp_sync_launched(tok_, &c_); \
		if (__builtin_expect(fr.trace | fr.log, 0)) \
			set_dims(&fr, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ); \
		HOOK_FINISH(&fr, r, (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, \
				     sharedMemBytes, hStream, kernelParams)); \
		return r; \
	}
LAUNCH_COOP(cuLaunchCooperativeKernel, DDP_LAUNCH_COOP)
LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz, DDP_LAUNCH_COOP_PTSZ)

#define LAUNCH_EX(sym, kind) \
	CUresult hook_##sym(const CUlaunchConfig *config, CUfunction f, void **kernelParams, \
			    void **extra) \
	{ \
		struct hook_frame fr; \
		if (!hook_begin(&fr, HOOK_ID_##sym)) \
			return HOOK_REAL(sym)(config, f, kernelParams, extra); \
		struct ddp_kfunc *k_ = launch_prepare(&fr, f, kernelParams, extra); \
		uint64_t tok_ = 0; \
		struct ddp_launch_call c_; \
		if (__builtin_expect(ddp_sync_on_, 0) && k_ && config) { \
			c_ = (struct ddp_launch_call){ kind, f, { config->gridDimX, config->gridDimY, \
				config->gridDimZ }, { config->blockDimX, config->blockDimY, \
				config->blockDimZ }, config->sharedMemBytes, config->hStream, \
				kernelParams, extra, config }; \
			tok_ = ddp_sync_launch(k_, &c_); \
		} \
		CUresult r = HOOK_REAL(sym)(config, f, kernelParams, extra); \
		if (__builtin_expect(tok_ != 0, 0) && r == CUDA_SUCCESS) \
			ddp_sync_launched(tok_, &c_); \
		if (__builtin_expect(fr.trace | fr.log, 0) && config) \
			set_dims(&fr, config->gridDimX, config->gridDimY, config->gridDimZ, \
				 config->blockDimX, config->blockDimY, config->blockDimZ); \
		HOOK_FINISH(&fr, r, (config, f, kernelParams, extra)); \
		return r; \
	}
LAUNCH_EX(cuLaunchKernelEx, DDP_LAUNCH_EX)
LAUNCH_EX(cuLaunchKernelEx_ptsz, DDP_LAUNCH_EX_PTSZ)
