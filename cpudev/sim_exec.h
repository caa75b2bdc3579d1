/* SPDX-License-Identifier: MIT
 *
 * sim_exec.h - the kernel-execution half of the CPU device: finding the
 * host-compiled kernels (<program>.kern.so) and running a grid of them.
 *
 * Used by the driver half (sim_launch.c, sim_module.c) and by the tests.
 * Implemented in sim_kernels.c (library loading, lookup), sim_exec.c (block
 * and thread scheduler, the runtime entry points the kernel header calls) and
 * sim_fiber.c (fibers).
 *
 * A kernel library imports no symbol from libcuda.so.1 (sim_kernel_abi.h,
 * ABI 2): sim_kernels.c hands it sim_exec_runtime (barriers, warp functions,
 * trap) through its table's bind() right after dlopen, and the scheduler
 * writes the library's own threadIdx & co., found through each entry's
 * thread_state().  Nothing here is exported from libcuda.so.1.
 *
 * Contract: sim_exec_launch runs on the calling OS thread (a stream worker)
 * and returns when the whole grid is done; several OS threads may launch at
 * the same time (every piece of scheduler state is per OS thread).
 */
#ifndef SIM_EXEC_H
#define SIM_EXEC_H

#include "sim_kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The scheduler's entry points for kernel libraries (sim_exec.c). */
extern const struct sim_runtime sim_exec_runtime;

/*
 * Finds a kernel by its mangled name (the cubin's symbol; extern "C" kernels
 * by plain name) in the loaded kernel libraries.  On first use loads, once
 * (pthread_once): "<realpath of /proc/self/exe>.kern.so" when that file
 * exists, then every file of SIMCUDA_KERNELS (colon-separated).  A library
 * that fails to load is reported once on stderr (`simcuda: ...`) and skipped.
 * Thread-safe.  Returns its first definition (by library order), NULL when
 * no library defines the name.
 */
const struct sim_kernel_entry *sim_kernels_find(const char *mangled);

/*
 * The same, for a module's kernel whose parameters have these sizes: two
 * libraries may define one name with different parameter layouts (two
 * builds of one source, as PyTorch's CUDA 12 and CUDA 13 multi-tensor
 * kernels: the same names, other struct sizes; a GPU resolves names per
 * module).  Returns the first definition whose sizes match, else the first
 * definition of the name (the caller then reports the mismatch), else NULL.
 */
const struct sim_kernel_entry *sim_kernels_find_sized(const char *mangled, uint32_t nparams, const uint32_t *sizes);

/*
 * A module image is being loaded from `image`: when that address lies in a
 * mapped file other than the executable (a shared library embedding its
 * fatbin), loads "<absolute path of that file>.kern.so" if it exists and was
 * not looked at before.  Its kernels rank after those loaded earlier.
 */
void sim_kernels_image_loaded(const void *image);

/* The host storage of a __device__ / __constant__ variable (the kernel
 * library's own global of that name, from its table's globals), looked up
 * like kernels (first definition wins).  NULL when no library has it. */
const struct sim_global_entry *sim_kernels_find_global(const char *mangled);

/* For error messages: the kernel library files looked at, e.g.
 * "/x/prog.kern.so (loaded), /y/k.kern.so (dlopen: ...)", or "none". */
const char *sim_kernels_searched(void);

/*
 * Runs the whole grid synchronously on the calling thread.  args[i] points at
 * parameter i (the caller's copy; must stay valid until return).
 * dyn_shared_bytes: the launch's dynamic shared memory (checked against the
 * capacity, SIM_DYN_SHARED_MAX).  Honours SIMCUDA_THREAD_ORDER
 * (forward|reverse|random) and SIMCUDA_SEED.
 * Returns 0 on success; nonzero when the launch was refused (bad dims, bad
 * setting) or a thread trapped: the message was already printed on stderr.
 */
int sim_exec_launch(const struct sim_kernel_entry *k, struct sim_dim3 grid,
		    struct sim_dim3 block, unsigned dyn_shared_bytes,
		    void *const *args);

/* Capacity of dynamic shared memory (bytes) per block: each
 * `extern __shared__` array of a kernel library gets this many bytes. */
#define SIM_DYN_SHARED_MAX (228u * 1024u)

/* Largest block (threads) and grid dimensions accepted, as on sm_80+. */
#define SIM_MAX_BLOCK_THREADS 1024u

#ifdef __cplusplus
}
#endif
#endif /* SIM_EXEC_H */
