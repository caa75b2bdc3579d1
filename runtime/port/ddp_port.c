/* SPDX-License-Identifier: MIT
 *
 * ddp_port.c - the driver table and what the runtime builds on it
 * (ddp_port.h).
 *
 * Contract: ddp_driver_ is zero until interpose/ (or a test) fills it at
 * start-up; every helper here checks the entry it uses and answers "the
 * driver cannot say" for a missing one.  No allocation, no lock: any thread.
 */
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ddp_port.h"

struct ddp_driver ddp_driver_;

int ddp_sys_fstat(int fd, struct stat *st)
{
	if (ddp_libc_.fstat64)
		return ddp_libc_.fstat64(fd, (struct stat64 *)st);
	if (ddp_libc_.fxstat64)
		return ddp_libc_.fxstat64(1 /* _STAT_VER_LINUX */, fd, (struct stat64 *)st);
	return (int)syscall(SYS_fstat, fd, st);
}

int ddp_sys_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	if (ddp_libc_.fstatat64)
		return ddp_libc_.fstatat64(dirfd, path, (struct stat64 *)st, flags);
	if (ddp_libc_.fxstatat64)
		return ddp_libc_.fxstatat64(1 /* _STAT_VER_LINUX */, dirfd, path, (struct stat64 *)st, flags);
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
}

int ddp_sys_stat(const char *path, struct stat *st)
{
	return ddp_sys_fstatat(AT_FDCWD, path, st, 0);
}

CUresult ddp_port_relaunch(const struct ddp_launch_call *c)
{
	const struct ddp_driver *d = &ddp_driver_;

	switch (c->kind) {
	case DDP_LAUNCH_PTSZ:
		if (!d->launchKernel_ptsz)
			break;
		return d->launchKernel_ptsz(c->f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
					    c->block[2], c->shmem, c->stream, c->params, c->extra);
	case DDP_LAUNCH_COOP:
		if (!d->launchCooperativeKernel)
			break;
		return d->launchCooperativeKernel(c->f, c->grid[0], c->grid[1], c->grid[2], c->block[0],
						  c->block[1], c->block[2], c->shmem, c->stream, c->params);
	case DDP_LAUNCH_COOP_PTSZ:
		if (!d->launchCooperativeKernel_ptsz)
			break;
		return d->launchCooperativeKernel_ptsz(c->f, c->grid[0], c->grid[1], c->grid[2], c->block[0],
						       c->block[1], c->block[2], c->shmem, c->stream,
						       c->params);
	case DDP_LAUNCH_EX:
		if (!d->launchKernelEx)
			break;
		return d->launchKernelEx(c->config, c->f, c->params, c->extra);
	case DDP_LAUNCH_EX_PTSZ:
		if (!d->launchKernelEx_ptsz)
			break;
		return d->launchKernelEx_ptsz(c->config, c->f, c->params, c->extra);
	case DDP_LAUNCH_PLAIN:
	default:
		if (!d->launchKernel)
			break;
		return d->launchKernel(c->f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
				       c->block[2], c->shmem, c->stream, c->params, c->extra);
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}

int ddp_port_image_lasts(const void *p)
{
	Dl_info dl;
	return p && dladdr(p, &dl) != 0;
}

int ddp_port_func_name(const void *h, const char **name)
{
	const struct ddp_driver *d = &ddp_driver_;
	CUresult r = CUDA_ERROR_NOT_FOUND;

	*name = NULL;
	if (d->funcGetName)
		r = d->funcGetName(name, (CUfunction)(uintptr_t)h);
	if (r != CUDA_SUCCESS && d->kernelGetName)
		r = d->kernelGetName(name, (CUkernel)(uintptr_t)h);
	return r == CUDA_SUCCESS && *name ? 0 : -1;
}

int ddp_port_param_info(const void *h, size_t i, size_t *off, size_t *size)
{
	const struct ddp_driver *d = &ddp_driver_;
	CUresult r = CUDA_ERROR_NOT_FOUND;

	if (d->funcGetParamInfo)
		r = d->funcGetParamInfo((CUfunction)(uintptr_t)h, i, off, size);
	if ((r == CUDA_ERROR_INVALID_HANDLE || !d->funcGetParamInfo) && d->kernelGetParamInfo)
		r = d->kernelGetParamInfo((CUkernel)(uintptr_t)h, i, off, size);
	if (r == CUDA_SUCCESS)
		return 0;
	return r == CUDA_ERROR_INVALID_VALUE ? 1 : -1;
}

int ddp_port_own_context(void)
{
	const struct ddp_driver *d = &ddp_driver_;
	CUcontext cur = NULL, prim = NULL;
	CUdevice dev;
	unsigned flags = 0;
	int active = 0;

	if (!d->ctxGetCurrent || !d->ctxGetDevice || !d->devicePrimaryCtxGetState ||
	    !d->devicePrimaryCtxRetain || !d->devicePrimaryCtxRelease)
		return 0;
	if (d->ctxGetCurrent(&cur) != CUDA_SUCCESS || !cur || d->ctxGetDevice(&dev) != CUDA_SUCCESS ||
	    d->devicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS)
		return 0;
	if (!active)
		return 1; /* a context is current, and it is not the (inactive) primary one */
	if (d->devicePrimaryCtxRetain(&prim, dev) != CUDA_SUCCESS)
		return 0;
	(void)d->devicePrimaryCtxRelease(dev);
	return prim != cur;
}

uint32_t ddp_port_device_arch(void)
{
	const struct ddp_driver *d = &ddp_driver_;
	CUdevice dev;
	int major = 0, minor = 0;

	if (!d->ctxGetDevice || !d->deviceGetAttribute)
		return 0;
	if (d->ctxGetDevice(&dev) != CUDA_SUCCESS ||
	    d->deviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
	    d->deviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS ||
	    major <= 0)
		return 0;
	return (uint32_t)(major * 10 + minor);
}
