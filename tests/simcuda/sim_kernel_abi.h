/* SPDX-License-Identifier: MIT
 *
 * sim_kernel_abi.h - the contract between the CPU device's driver
 * (libcuda.so.1, sim_*.c) and the host-compiled kernels (.kern.so files).
 *
 * A kernel library (<program>.kern.so, built from the same .cu file as the
 * program's fatbin, with sim_kernel.h forced in) exports one symbol:
 *
 *     extern "C" const struct sim_kernel_table sim_kernel_table;
 *
 * listing every __global__ function by its mangled name with a typed
 * trampoline and the host sizes of its parameters.  The driver matches a
 * module's kernels (from the fatbin, via runtime/ddp_fatbin.h) by mangled name
 * and refuses a launch when the cubin's parameter sizes differ from the host
 * signature's.
 *
 * Contract: plain C structs, stable layout; the table is constant data.
 */
#ifndef SIM_KERNEL_ABI_H
#define SIM_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIM_KERNEL_ABI_VERSION 1
#define SIM_MAX_PARAMS 64

struct sim_dim3 {
	unsigned x, y, z;
};

/* Calls the kernel body for the current thread; args[i] points at a copy of
 * parameter i (the driver copied it at launch). */
typedef void (*sim_trampoline_fn)(void *const *args);

struct sim_kernel_entry {
	const char *mangled;              /* name as in the cubin                */
	const char *signature;            /* demangled, for messages             */
	sim_trampoline_fn trampoline;
	uint32_t nparams;
	uint32_t param_size[SIM_MAX_PARAMS];  /* sizeof of each host parameter   */
	uint32_t param_align[SIM_MAX_PARAMS]; /* alignof of each host parameter  */
};

struct sim_kernel_table {
	uint32_t abi_version;             /* SIM_KERNEL_ABI_VERSION             */
	uint32_t count;
	const struct sim_kernel_entry *entries;
};

/* Per-thread execution state the kernels' threadIdx & co. read.  Owned by
 * the driver (libcuda.so.1 exports sim_exec_state()); the kernel library's
 * header reads it through that accessor. */
struct sim_thread_state {
	struct sim_dim3 thread_idx, block_idx, block_dim, grid_dim;
	void *dyn_shared;                 /* extern __shared__ memory           */
	void *block_ctx;                  /* opaque: the scheduler's block       */
};

#ifdef __cplusplus
}
#endif
#endif /* SIM_KERNEL_ABI_H */
