/* SPDX-License-Identifier: MIT
 *
 * hook_port.c - fills the port's driver table (ddp_driver_,
 * runtime/port/ddp_port.h) from the real driver.
 *
 * Every row of runtime/port/ddp_driver.def is looked up by its symbol
 * (base##suffix) in the real driver library (hook_driver_sym: the library's
 * own symbol, never our hook of the same name).  Whether the driver is the CPU device is asked of the driver itself:
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

void hook_port_fill(void)
{
	struct ddp_driver *d = &ddp_driver_;

#define DDP_DRIVER(ret, field, base, suffix, ver, params) \
	d->field = (ret(*) params)hook_driver_sym(#base #suffix);
#include "ddp_driver.def"
#undef DDP_DRIVER
	d->cpu_device = hook_driver_sym("simcuda_cpu_device") != NULL;
	d->own_begin = own_begin;
	d->own_end = own_end;
}
