/* SPDX-License-Identifier: MIT
 *
 * ddp_launch.h - the launch decoder: which tracked buffers a kernel launch
 * touches, and how (from the parameters' const-ness).
 *
 * For each parameter of a launch (kernelParams[i], or the packed buffer of
 * extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
 * &size, CU_LAUNCH_PARAM_END}) with a known layout:
 *   - an 8-byte pointer (or an 8-byte value of unknown type) whose value lies
 *     inside a live allocation becomes an argument: allocation, offset,
 *     access (read for `T const*`, write for `T*`, unknown without types);
 *   - a by-value struct larger than 8 bytes is scanned word by word (8-byte
 *     aligned in the parameter area) for values inside live allocations
 *     (e.g. PyTorch's TensorListMetadata holding arrays of tensor addresses);
 *     such arguments carry in_struct = 1 and access unknown.
 * Scalars the signature types as arithmetic are never taken for pointers.
 *
 * Contract: pure reader of the launch's arguments and the allocation table;
 * no allocation, no lock (the table's lookups are lock-free), no syscall.
 * Bad input (NULL params with parameters declared, a buffer smaller than the
 * layout) is reported through the return value; the launch itself is the
 * caller's business and always goes to the driver unchanged.
 */
#ifndef DDP_LAUNCH_H
#define DDP_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_alloc.h"
#include "ddp_err.h"
#include "ddp_kreg.h"

#define DDP_LAUNCH_MAX_ARGS 256

enum ddp_access {
	DDP_ACC_UNKNOWN = 0,
	DDP_ACC_READ,  /* T const*                     */
	DDP_ACC_WRITE, /* T* (may read and write)      */
};

struct ddp_launch_arg {
	uint16_t param; /* parameter index                    */
	uint16_t word;  /* 8-byte word inside a struct param  */
	uint8_t access; /* enum ddp_access                    */
	uint8_t in_struct;
	uint64_t value;             /* the address passed                 */
	struct ddp_alloc_ent alloc; /* the allocation holding it          */
};

struct ddp_launch {
	const struct ddp_kfunc *k;
	uint32_t nargs;
	uint32_t truncated; /* more than DDP_LAUNCH_MAX_ARGS       */
	struct ddp_launch_arg args[DDP_LAUNCH_MAX_ARGS];
};

/* Where a launch's parameter values are. */
struct ddp_launch_params {
	void **kernel_params; /* cuLaunchKernel's kernelParams       */
	void **extra;         /* cuLaunchKernel's extra              */
};

/*
 * Decodes one launch of k into *out.  DDP_ERR_UNSUPPORTED when the layout
 * is unknown; DDP_ERR_INVALID when the arguments are inconsistent with the
 * layout (NULL kernelParams, extra without a buffer, buffer too small): out
 * then holds what could be decoded safely (nothing).
 */
ddp_result ddp_launch_decode(const struct ddp_kfunc *k, const struct ddp_launch_params *p,
			     struct ddp_launch *out /* OUT */);

/* The bytes of parameter i; NULL when unavailable. */
const void *ddp_launch_param_ptr(const struct ddp_kfunc *k, const struct ddp_launch_params *p, uint32_t i);

const char *ddp_access_name(enum ddp_access a);

#endif /* DDP_LAUNCH_H */
