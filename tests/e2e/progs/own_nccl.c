/* SPDX-License-Identifier: MIT
 *
 * own_nccl.c - a preloaded shim that makes an unmodified trainer look
 * already data-parallel, as a PyTorch DDP script is: at the OWN_NCCL_AFTER-th
 * read(2) of a regular file (a per-step data read), it loads a module whose
 * kernel is named like NCCL's (own_nccl.cu, embedded here) and launches it
 * once through the driver, as the program's own NCCL would.  It writes
 * "own-nccl: rank R launched" on stderr.  Every read passes through
 * (dlsym RTLD_NEXT: libddp's hook when it is preloaded after this shim).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const unsigned char tests_e2e_progs_own_nccl_fatbin[];

/* The driver as the program reaches it (libddp's hooks when preloaded);
 * looked up at run time, so that ddprun, which loads this shim too, needs
 * no libcuda. */
#define DRV(name, ...) ((CUresult(*)(__VA_ARGS__))dlsym(RTLD_DEFAULT, #name))

static void launch_own(void)
{
	CUmodule m;
	CUfunction f;
	CUdeviceptr d;
	int n = 32;
	void *args[] = { &d, &n };
	char msg[96];

	if (DRV(cuModuleLoadData, CUmodule *, const void *)(&m, tests_e2e_progs_own_nccl_fatbin) ||
	    DRV(cuModuleGetFunction, CUfunction *, CUmodule, const char *)(
		    &f, m, "ncclDevKernel_AllReduce_Sum_f32_RING_LL") ||
	    DRV(cuMemAlloc_v2, CUdeviceptr *, size_t)(&d, (size_t)n * sizeof(float)) ||
	    DRV(cuMemsetD8_v2, CUdeviceptr, unsigned char, size_t)(d, 0, (size_t)n * sizeof(float)) ||
	    DRV(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		unsigned, CUstream, void **, void **)(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) ||
	    DRV(cuCtxSynchronize, void)()) {
		fprintf(stderr, "own-nccl: the launch failed\n");
		_exit(98);
	}
	snprintf(msg, sizeof msg, "own-nccl: rank %s launched\n", getenv("RANK") ? getenv("RANK") : "?");
	if (write(2, msg, strlen(msg)) < 0)
		_exit(99);
}

ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*real)(int, void *, size_t);
	static long count, after = -1;
	struct stat st;

	if (!real)
		real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	if (after < 0)
		after = getenv("OWN_NCCL_AFTER") ? atol(getenv("OWN_NCCL_AFTER")) : 3;
	if (fd > 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ++count == after)
		launch_own();
	return real(fd, buf, n);
}
