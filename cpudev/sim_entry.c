/* SPDX-License-Identifier: MIT
 *
 * sim_entry.c - the exported function of every hand-written entry point
 * of sim_api.def (SIM_FN rows): the fault check (DDP_SIM_FAIL, counted
 * under the exported name, default code from sim_faults.def), then the
 * hand-written body, which sim_internal.h names sim_impl_<symbol>.
 * Generated from sim_faults.inc (sim_gen.sh faults: each symbol's
 * prototype from cuda.h); the stream-ordered entry points (SIM_STREAM)
 * get theirs in sim_proc.c.  A SIM_FAULT_NONE row keeps its hand-written
 * export (its body counts its own calls).
 *
 * Contract: no state of its own; the check costs one pthread_once and a
 * loop over the rules (none unless DDP_SIM_FAIL is set) per call.
 */
#include "sim_internal.h"

/* sym names the body here (sim_impl_<sym>); sim_entry_<sym> is the export,
 * with cuda.h's type for sym. */
#define SIM_FAULT_FN(sym, params, args) \
	SIM_EXPORT CUresult sim_entry_##sym params __asm__(#sym); \
	_Static_assert(__builtin_types_compatible_p(__typeof__(sim_entry_##sym), __typeof__(sym)), \
		       #sym ": the generated export's type is not cuda.h's"); \
	SIM_EXPORT CUresult sim_entry_##sym params \
	{ \
		SIM_FAULT_RETURN(#sym); \
		return sym args; \
	}
#define SIM_FAULT_NONE(sym)
#include "sim_faults.inc"
#undef SIM_FAULT_FN
#undef SIM_FAULT_NONE
