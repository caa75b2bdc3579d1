/* SPDX-License-Identifier: MIT
 *
 * drv_fork.c - a Driver-API program (-lcuda) that forks a child which makes
 * a few driver calls and exits through exit() (its atexit handlers run),
 * while the parent goes on.  tests/e2e/interpose/edges.sh runs it under
 * libddp with DDP_TRACE: the rank's trace and summary must be the parent's
 * alone (the child inherits libddp's state, its open trace FILE included).
 *
 *   drv_fork N      N cuMemAlloc/cuMemFree pairs before the fork, 3 in the
 *                   child, N after; prints "parent <pid>" on stdout
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
	fprintf(stderr, "drv_fork: %s failed: %d (line %d)\n", #x, (int)r_, __LINE__); exit(1); } } while (0)

static void allocs(int n)
{
	for (int i = 0; i < n; i++) {
		CUdeviceptr p;
		CK(cuMemAlloc(&p, 256));
		CK(cuMemFree(p));
	}
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	int n = argc > 1 ? atoi(argv[1]) : 10;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	allocs(n);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("drv_fork: fork");
		return 1;
	}
	if (pid == 0) {
		/* the child's calls are its own business; results are ignored */
		for (int i = 0; i < 3; i++) {
			CUdeviceptr p;
			if (cuMemAlloc(&p, 64) == CUDA_SUCCESS)
				cuMemFree(p);
		}
		exit(0);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "drv_fork: child failed (status 0x%x)\n", st);
		return 1;
	}
	allocs(n);
	printf("parent %d\n", (int)getpid());
	return 0;
}
