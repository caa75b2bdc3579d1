/* SPDX-License-Identifier: MIT
 *
 * sim_trace.c - trace mode for programs whose kernels have no host code:
 * SIMCUDA_UNKNOWN_KERNELS=skip.
 *
 * Off by default: a kernel without a host implementation is refused at
 * cuModuleGetFunction / cuLibraryGetKernel (sim_module.c).  With
 * SIMCUDA_UNKNOWN_KERNELS=skip such a kernel gets a function object without
 * host code; its launches are checked like any other (stream, dimensions,
 * arguments) and then do nothing.  Each such kernel is named once on
 * stderr, the launches are counted, and at exit the CPU device says how
 * many launches were skipped and that the run computed nothing real.  It
 * exists to record the driver-level behaviour of a closed-source stack; no
 * result of such a run means anything, and no test compares numbers from it.
 * Any other value than "skip" (or "refuse", the default) is reported once
 * and treated as the default.
 *
 * Contract: any thread; counters are atomics, the kernel list has a lock.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

static pthread_once_t sim_trace_once = PTHREAD_ONCE_INIT;
static int sim_trace_on;
static atomic_ulong sim_trace_launches;
static atomic_ulong sim_trace_kernels;

static void sim_trace_summary(void)
{
	unsigned long n = atomic_load(&sim_trace_launches), k = atomic_load(&sim_trace_kernels);
	if (k)
		sim_msg("trace mode (SIMCUDA_UNKNOWN_KERNELS=skip): %lu launch%s of %lu kernel%s without host code "
			"were skipped; this run computed nothing real", n, n == 1 ? "" : "es", k, k == 1 ? "" : "s");
}

static void sim_trace_read(void)
{
	const char *v = sim_setting_unknown_kernels();
	if (!v || !*v || !strcmp(v, "refuse"))
		return;
	if (strcmp(v, "skip") != 0) {
		sim_msg("SIMCUDA_UNKNOWN_KERNELS=%s is not understood (skip or refuse); kernels without host code are "
			"refused", v);
		return;
	}
	sim_trace_on = 1;
	atexit(sim_trace_summary);
}

int sim_trace_skip_unknown(void)
{
	pthread_once(&sim_trace_once, sim_trace_read);
	return sim_trace_on;
}

void sim_trace_kernel_skipped(const char *name)
{
	atomic_fetch_add(&sim_trace_kernels, 1);
	sim_msg("trace mode: kernel %s has no host implementation; its launches are skipped (they compute nothing)",
		name);
}

void sim_trace_launch_skipped(void)
{
	atomic_fetch_add(&sim_trace_launches, 1);
}
