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
 * Off (the default, refuse), a kernel the program's images have but no host
 * code implements is refused at lookup; a program that ignores the error
 * (cudart programs rarely check launches) would compute nothing and exit 0
 * with garbage ("loss 0.000000").  So each refusal is counted, and when
 * the process ends (a destructor: after the program's and libddp's atexit
 * handlers, its traces written) one line names the first such kernel and
 * ddp-cpu-kernels, and the process exits 1 whatever status it chose.
 *
 * Contract: any thread; counters are atomics, the kernel list has a lock.
 */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

static pthread_once_t sim_trace_once = PTHREAD_ONCE_INIT;
static int sim_trace_on;
static atomic_ulong sim_trace_launches;
static atomic_ulong sim_trace_kernels;

static atomic_ulong sim_refused;
static char sim_refused_first[160]; /* the first refused kernel's name */

/* A destructor: _dl_fini runs it after every atexit handler. */
__attribute__((destructor)) static void sim_refused_exit(void)
{
	unsigned long n = atomic_load(&sim_refused);
	if (!n)
		return;
	sim_msg("error: %lu kernel%s had no CPU implementation and ran nowhere (first: %s): this run computed "
		"nothing real; build the program's kernels with ddp-cpu-kernels (docs/cpu-device-kernels.md) or "
		"run on a GPU (SIMCUDA_UNKNOWN_KERNELS=skip records a trace on purpose); exit 1",
		n, n == 1 ? "" : "s", sim_refused_first);
	fflush(NULL);
	_exit(1);
}

void sim_trace_kernel_refused(const char *name)
{
	if (atomic_fetch_add(&sim_refused, 1) == 0)
		snprintf(sim_refused_first, sizeof sim_refused_first, "%s", name);
}

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
