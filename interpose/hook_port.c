/* SPDX-License-Identifier: MIT
 *
 * hook_port.c - fills the port's driver table (ddp_driver_,
 * runtime/port/ddp_port.h) from the real driver.
 *
 * Entry points hooks.def lists come from hook_real_ (the real symbols, never
 * our hooks); the others from the driver library by name, here and nowhere
 * else.  Whether the driver is the CPU device is asked of the driver itself:
 * cpudev exports the marker `simcuda_cpu_device`, which no real
 * libcuda has.  own_begin/own_end set the calling thread's inside-ddp flag,
 * so driver calls that come back through the hooks on the library's behalf
 * (NCCL's) are forwarded untracked.
 *
 * Contract: hook_port_fill once, inside start-up, after hook_resolve_all.
 */
#include "hook.h"
#include "hook_port.h"
#include "hook_resolve.h"
#include "ddp_port.h"

static void own_begin(void)
{
	hook_inside_enter();
}

static void own_end(void)
{
	hook_inside_leave();
}

#define BY_NAME(field, name) (ddp_driver_.field = (__typeof__(ddp_driver_.field))hook_driver_sym(name))

void hook_port_fill(void)
{
	struct ddp_driver *d = &ddp_driver_;

	d->memcpyDtoHAsync = HOOK_REAL(cuMemcpyDtoHAsync_v2);
	d->memcpyHtoDAsync = HOOK_REAL(cuMemcpyHtoDAsync_v2);
	d->launchKernel = HOOK_REAL(cuLaunchKernel);
	d->launchKernel_ptsz = HOOK_REAL(cuLaunchKernel_ptsz);
	d->launchCooperativeKernel = HOOK_REAL(cuLaunchCooperativeKernel);
	d->launchCooperativeKernel_ptsz = HOOK_REAL(cuLaunchCooperativeKernel_ptsz);
	d->launchKernelEx = HOOK_REAL(cuLaunchKernelEx);
	d->launchKernelEx_ptsz = HOOK_REAL(cuLaunchKernelEx_ptsz);
	BY_NAME(streamSynchronize, "cuStreamSynchronize");
	BY_NAME(streamQuery, "cuStreamQuery");
	BY_NAME(ctxSynchronize, "cuCtxSynchronize");
	BY_NAME(memAllocHost, "cuMemAllocHost_v2");
	BY_NAME(memFreeHost, "cuMemFreeHost");
	BY_NAME(getErrorName, "cuGetErrorName");
	BY_NAME(funcGetName, "cuFuncGetName");
	BY_NAME(kernelGetName, "cuKernelGetName");
	BY_NAME(funcGetParamInfo, "cuFuncGetParamInfo");
	BY_NAME(kernelGetParamInfo, "cuKernelGetParamInfo");
	BY_NAME(ctxGetDevice, "cuCtxGetDevice");
	BY_NAME(deviceGetAttribute, "cuDeviceGetAttribute");
	BY_NAME(streamCreateWithPriority, "cuStreamCreateWithPriority");
	BY_NAME(streamDestroy, "cuStreamDestroy_v2");
	BY_NAME(ctxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange");
	BY_NAME(eventCreate, "cuEventCreate");
	BY_NAME(eventDestroy, "cuEventDestroy_v2");
	BY_NAME(eventRecord, "cuEventRecord");
	BY_NAME(eventQuery, "cuEventQuery");
	BY_NAME(eventSynchronize, "cuEventSynchronize");
	BY_NAME(streamWaitEvent, "cuStreamWaitEvent");
	BY_NAME(launchHostFunc, "cuLaunchHostFunc");
	BY_NAME(ctxSetCurrent, "cuCtxSetCurrent");
	BY_NAME(ctxGetCurrent, "cuCtxGetCurrent");
	BY_NAME(devicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState");
	BY_NAME(devicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	BY_NAME(devicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	d->cpu_device = hook_driver_sym("simcuda_cpu_device") != NULL;
	d->own_begin = own_begin;
	d->own_end = own_end;
}
