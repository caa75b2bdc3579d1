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
 * module's kernels (from the fatbin, via runtime/image/ddp_fatbin.h) by mangled name
 * and refuses a launch when the cubin's parameter sizes differ from the host
 * signature's.
 *
 * No symbol interposition in either direction (ABI 2): the library imports
 * nothing from libcuda.so.1 (it has no DT_NEEDED on it).  After dlopen the
 * driver calls table.bind(&runtime), handing the library its barrier, warp
 * and trap entry points; the library owns its threadIdx & co. (a hidden
 * thread-local struct sim_thread_state) and gives the scheduler its address
 * for the calling OS thread through entry.thread_state().  So a library
 * behaves the same whether libcuda.so.1 was loaded RTLD_GLOBAL, RTLD_LOCAL
 * (as cudart does) or linked, and whatever else the process defines.
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

#define SIM_KERNEL_ABI_VERSION 2
#define SIM_MAX_PARAMS 64

struct sim_dim3 {
	unsigned x, y, z;
};

/* Calls the kernel body for the current thread; args[i] points at a copy of
 * parameter i (the driver copied it at launch). */
typedef void (*sim_trampoline_fn)(void *const *args);

struct sim_thread_state;

struct sim_kernel_entry {
	const char *mangled;              /* name as in the cubin                */
	const char *signature;            /* demangled, for messages             */
	sim_trampoline_fn trampoline;
	/* The kernel library's own per-thread state (threadIdx & co.) for the
	 * calling OS thread; the scheduler writes it before resuming a thread. */
	struct sim_thread_state *(*thread_state)(void);
	uint32_t nparams;
	uint32_t param_size[SIM_MAX_PARAMS];  /* sizeof of each host parameter   */
	uint32_t param_align[SIM_MAX_PARAMS]; /* alignof of each host parameter  */
};

/* The scheduler's entry points a kernel library calls (sim_kernel.h's
 * __syncthreads, warp functions, __trap).  The driver passes its table to
 * sim_kernel_table.bind() once, right after loading the library. */
struct sim_runtime {
	uint32_t abi_version;             /* SIM_KERNEL_ABI_VERSION             */
	uint32_t size;                    /* sizeof(struct sim_runtime)         */
	void (*syncthreads)(void);
	int (*syncthreads_op)(int pred, int op);  /* op 0 count, 1 and, 2 or    */
	void (*syncwarp)(void);
	unsigned long long *(*warp_slots)(void);
	unsigned long long (*warp_vote)(int pred);
	unsigned (*linear_tid)(void);
	void (*trap)(const char *why);    /* does not return                    */
};

/* A __device__ or __constant__ variable of the library (its host storage),
 * for cuModuleGetGlobal; addr NULL: the cubin has the name but the source
 * does not define it (a compiler-generated table), ignored by the driver. */
struct sim_global_entry {
	const char *mangled;              /* name as in the cubin                */
	void *addr;
	size_t size;
};

struct sim_kernel_table {
	uint32_t abi_version;             /* SIM_KERNEL_ABI_VERSION             */
	uint32_t count;
	const struct sim_kernel_entry *entries;
	void (*bind)(const struct sim_runtime *rt);
	uint32_t nglobals;
	const struct sim_global_entry *globals;
};

/* Per-thread execution state the kernels' threadIdx & co. read.  Each kernel
 * library owns one (thread-local, hidden) and hands out its address through
 * sim_kernel_entry.thread_state; the scheduler sets it. */
struct sim_thread_state {
	struct sim_dim3 thread_idx, block_idx, block_dim, grid_dim;
	void *dyn_shared;                 /* extern __shared__ memory           */
	void *block_ctx;                  /* opaque: the scheduler's block       */
};

#ifdef __cplusplus
}
#endif
#endif /* SIM_KERNEL_ABI_H */
