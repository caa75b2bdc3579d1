/* SPDX-License-Identifier: MIT
 *
 * sim_unsupported.c - every driver entry point cuda.h declares that the CPU
 * device does not implement: an exported stub that says so once on stderr
 * and returns CUDA_ERROR_NOT_SUPPORTED.  Never a silent success.
 *
 * The list is generated (sim_gen.sh unsupported) from cuda.h minus the
 * symbols of sim_api.def, into sim_unsupported.inc, sorted by name.  The
 * stubs ignore their arguments, so they are defined without cuda.h (whose
 * prototypes they would contradict): on x86-64 and aarch64 a function that
 * takes no arguments and returns an int may be called with any arguments.
 * sim_proc.c hands them out through cuGetProcAddress as well.
 *
 * Contract: constant table; the "said so" flags are atomics.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SIM_NOT_SUPPORTED 801 /* CUDA_ERROR_NOT_SUPPORTED */

void sim_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sim_unsup_say(const char *name, int *said)
{
	/* Stream capture and graphs get a hint: a program may have a path
	 * without them (cudart's graph APIs end up here too). */
	int graphs = !strncmp(name, "cuGraph", 7) || strstr(name, "Capture") != NULL;

	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		sim_msg("%s is not implemented by the CPU device; returning CUDA_ERROR_NOT_SUPPORTED%s", name,
			graphs ? " (stream capture and CUDA graphs are not emulated: run without them)" : "");
	return SIM_NOT_SUPPORTED;
}

#define SIM_UNSUP(name) \
	__attribute__((visibility("default"))) int name(void); \
	int name(void) \
	{ \
		static int said; \
		return sim_unsup_say(#name, &said); \
	}
#include "sim_unsupported.inc"
#undef SIM_UNSUP

struct sim_unsup_entry {
	const char *name;
	int (*fn)(void);
};

const struct sim_unsup_entry sim_unsup_table[] = {
#define SIM_UNSUP(name) { #name, name },
#include "sim_unsupported.inc"
#undef SIM_UNSUP
};
const size_t sim_unsup_count = sizeof(sim_unsup_table) / sizeof(sim_unsup_table[0]);
