/* SPDX-License-Identifier: MIT
 *
 * ddp_port.h - the runtime's one door outward: the real driver and the real
 * libc.
 *
 * runtime/ depends on nothing above it.  Inside libddp.so a plain call to
 * open() or cuMemcpyDtoH() from runtime code would land in libddp's own hooks
 * (they are exported, and LD_PRELOAD puts them first), so it would pass
 * through sharding, write redirection and tracking; so the runtime never
 * calls them by name.  It calls through two tables:
 *
 *   ddp_libc_    the real libc functions of ddp_libc.def.  ddprun, the CPU
 *                device and the tests get plain libc (ddp_port_libc.c);
 *                libddp.so defines its own ddp_libc_ (interpose/hook_libc.c),
 *                filled with dlvsym(RTLD_NEXT, ...) before anything else
 *                runs, so the archive member with the plain filling is never
 *                linked into it.
 *   ddp_driver_  the real driver entry points of ddp_driver.def (copies,
 *                syncs, pinned memory, error names, kernel names and
 *                parameter layouts, the relaunch of a captured launch) and
 *                whether the driver is the CPU device.  Filled by interpose/
 *                at start-up from the real libcuda (never from its hooks);
 *                zero elsewhere unless a test fills it.  A NULL entry means
 *                the driver lacks it.
 *
 * Calls through ddp_driver_ reach the real driver directly: they are never
 * tracked.  ddp_port_own_begin/end bracket work whose driver calls come back
 * through the hooks on ddp's behalf (NCCL's): interpose forwards those
 * untracked.
 *
 * Contract: both tables are written once, at start-up, before the runtime
 * uses them, and are read-only afterwards (any thread).
 */
#ifndef DDP_PORT_H
#define DDP_PORT_H

#include <cuda.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "ddp_err.h"

#if defined(__x86_64__)
#define DDP_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define DDP_GLIBC_BASE "GLIBC_2.17"
#else
#define DDP_GLIBC_BASE "GLIBC_2.0"
#endif
#define DDP_GLIBC_DLSYM "GLIBC_2.34"

struct statx;

/* ---- libc ------------------------------------------------------------ */
struct ddp_libc {
#define DDP_LIBC(ret, field, sym, ver, params) ret(*field) params;
#include "ddp_libc.def"
#undef DDP_LIBC
};
extern struct ddp_libc ddp_libc_;

/* The real function: DDP_SYS(open64)(path, O_RDONLY). */
#define DDP_SYS(fn) (ddp_libc_.fn)

/* fstat/fstatat/stat through the real libc (fstat64 or, before glibc 2.33,
 * __fxstat64; the system call when the table has neither). */
int ddp_sys_fstat(int fd, struct stat *st);
int ddp_sys_fstatat(int dirfd, const char *path, struct stat *st, int flags);
int ddp_sys_stat(const char *path, struct stat *st);

/* ---- driver ---------------------------------------------------------- */

/* How a captured launch is reissued: the entry point the program used. */
enum ddp_launch_kind {
	DDP_LAUNCH_PLAIN = 0, /* cuLaunchKernel                          */
	DDP_LAUNCH_PTSZ,      /* cuLaunchKernel_ptsz                     */
	DDP_LAUNCH_COOP,      /* cuLaunchCooperativeKernel               */
	DDP_LAUNCH_COOP_PTSZ, /* cuLaunchCooperativeKernel_ptsz          */
	DDP_LAUNCH_EX,        /* cuLaunchKernelEx                        */
	DDP_LAUNCH_EX_PTSZ,   /* cuLaunchKernelEx_ptsz                   */
};

/* One launch as the program made it. */
struct ddp_launch_call {
	enum ddp_launch_kind kind;
	CUfunction f;
	unsigned grid[3], block[3], shmem;
	CUstream stream;
	void **params;
	void **extra;
	const CUlaunchConfig *config; /* the _EX kinds */
};

struct ddp_driver {
	int cpu_device; /* the driver is the CPU device (cpudev)   */
			/* the real entry points (ddp_driver.def) */
#define DDP_DRIVER(ret, field, base, suffix, ver, params) ret(*field) params;
#include "ddp_driver.def"
#undef DDP_DRIVER
	/* marks the calling thread's next hooked driver calls as ddp's own
	 * (NULL outside libddp) */
	void (*own_begin)(void);
	void (*own_end)(void);
};
extern struct ddp_driver ddp_driver_;

/* Reissues a captured launch through the entry point the program used.
 * CUDA_ERROR_NOT_SUPPORTED when the driver lacks it. */
CUresult ddp_port_relaunch(const struct ddp_launch_call *c);

/* Whether the memory at p lies in a loaded executable or shared library
 * (dladdr): such a module image lives as long as that object, so it may be
 * read later than the load that named it.  0 for heap, stack and anonymous
 * memory, which the program may free at once. */
int ddp_port_image_lasts(const void *p);

/* The name of a CUfunction or CUkernel (tried in that order): 0, or -1. */
int ddp_port_func_name(const void *handle, const char **name /* OUT */);

/* Offset and size of parameter i of a CUfunction or CUkernel: 0; 1 past
 * the last parameter; -1 when the driver cannot say. */
int ddp_port_param_info(const void *handle, size_t i, size_t *off, size_t *size);

/* The current device's SM (e.g. 90), 0 when unknown. */
uint32_t ddp_port_device_arch(void);

/* 1 when the calling thread's current context is one the program created
 * (cuCtxCreate), not its device's primary context (which cudart, NCCL and
 * most libraries use); 0 when it is the primary one or the driver cannot
 * say.  Never creates or activates a context. */
int ddp_port_own_context(void);

static inline void ddp_port_own_begin(void)
{
	if (ddp_driver_.own_begin)
		ddp_driver_.own_begin();
}
static inline void ddp_port_own_end(void)
{
	if (ddp_driver_.own_end)
		ddp_driver_.own_end();
}

#endif /* DDP_PORT_H */
