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
 * The launch hooks' bodies are generated from hooks.def: the LAUNCH and
 * LAUNCH_EX before-columns run the one launch body, hook_launch_enter
 * (hook_launch.h, inline), and when synchronisation, tracing or logging is
 * on, normalise the six entry points' arguments into one record (struct
 * ddp_launch_call; an Ex launch without a config gets zero dimensions and is
 * not handed to the synchronisation) for hook_launch_full; the LAUNCHED
 * after-column follows a successful launch.  This file holds the slow
 * halves.
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
		DDP_DEBUG(LAUNCH, "launch %s: parameter layout unknown, arguments not decoded", k->demangled);
		return;
	}
	if (DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_LAUNCH)) {
		for (uint32_t i = 0; i < L->nargs; i++) {
			const struct ddp_launch_arg *a = &L->args[i];
			DDP_DEBUG(LAUNCH,
				  "launch %s: param %u%s -> allocation #%u 0x%llx+%llu (offset %llu) %s",
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

void hook_launch_flush(void)
{
	struct hook_tls *t = &hook_tls_;
	for (unsigned i = 0; i < HOOK_KCOUNT_SLOTS; i++) {
		if (t->kc[i].k && t->kc[i].n)
			__atomic_fetch_add(&t->kc[i].k->launches, t->kc[i].n, __ATOMIC_RELAXED);
		t->kc[i].n = 0;
	}
}

/* The slow half of hook_launch_enter: a kernel the registry has not seen
 * (discovered once through the driver), or one of NCCL's. */
struct ddp_kfunc *hook_launch_unusual(struct hook_frame *fr, CUfunction f)
{
	struct ddp_kfunc *k = ddp_kreg_lookup(f);
	if (!k && !(k = ddp_kreg_discover(f)))
		return NULL;
	if (k->untracked) {
		/* NCCL's kernels; libddp's own never reach the hooks (hook_begin) */
		if (ddp_sync_on_)
			foreign_nccl(k);
		fr->kname = k->demangled;
		return NULL;
	}
	return k;
}

void hook_launch_check(struct ddp_kfunc *k, void **params, void **extra)
{
	if (!params && !extra && k->layout_known && k->nparams)
		warn_once(k, "kernelParams and extra are both NULL");
	else if (hook_launch_observe_)
		observe(k, params, extra);
}

uint64_t hook_launch_full(struct hook_frame *fr, struct ddp_kfunc *k, const struct ddp_launch_call *c)
{
	if (fr->trace | fr->log) {
		for (int d = 0; d < 3; d++) {
			fr->grid[d] = c->grid[d];
			fr->block[d] = c->block[d];
		}
	}
	if (ddp_sync_on_ && k && (c->config || (c->kind != DDP_LAUNCH_EX && c->kind != DDP_LAUNCH_EX_PTSZ)))
		return ddp_sync_launch(k, c);
	return 0;
}

void hook_launch_record_ex(struct ddp_launch_call *c, enum ddp_launch_kind kind, const CUlaunchConfig *config,
			   CUfunction f, void **params, void **extra)
{
	*c = (struct ddp_launch_call){ .kind = kind, .f = f, .params = params, .extra = extra, .config = config };
	if (config) {
		c->grid[0] = config->gridDimX;
		c->grid[1] = config->gridDimY;
		c->grid[2] = config->gridDimZ;
		c->block[0] = config->blockDimX;
		c->block[1] = config->blockDimY;
		c->block[2] = config->blockDimZ;
		c->shmem = config->sharedMemBytes;
		c->stream = config->hStream;
	}
}

void hook_launch_done(uint64_t token, const struct ddp_launch_call *c)
{
	ddp_sync_launched(token, c);
}
