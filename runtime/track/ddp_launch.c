/* SPDX-License-Identifier: MIT
 *
 * ddp_launch.c - the launch decoder (see ddp_launch.h).
 *
 * Contract: no allocation, no lock, no syscall; reads only the parameter
 * bytes the layout declares (and, for extra, only inside the declared buffer
 * size).
 */
#include <string.h>
#include "ddp_launch.h"
#include "ddp_sig.h"

/* From cuda.h (kept here so the decoder builds without it). */
#define LP_END ((void *)0x00)
#define LP_BUFFER_POINTER ((void *)0x01)
#define LP_BUFFER_SIZE ((void *)0x02)

/* Finds the packed buffer in an extra array; 0 when malformed. */
static int extra_buffer(void **extra, const uint8_t **buf, size_t *size)
{
	*buf = NULL;
	*size = 0;
	int have_size = 0;
	for (int i = 0; i < 64 && extra[i] != LP_END; i += 2) {
		if (extra[i] == LP_BUFFER_POINTER)
			*buf = extra[i + 1];
		else if (extra[i] == LP_BUFFER_SIZE && extra[i + 1]) {
			*size = *(const size_t *)extra[i + 1];
			have_size = 1;
		} else {
			return 0;
		}
	}
	return *buf && have_size;
}

const void *ddp_launch_param_ptr(const struct ddp_kfunc *k, const struct ddp_launch_params *p, uint32_t i)
{
	if (!k->layout_known || i >= k->nparams)
		return NULL;
	if (p->kernel_params)
		return p->kernel_params[i];
	if (p->extra) {
		const uint8_t *buf;
		size_t size;
		if (!extra_buffer(p->extra, &buf, &size))
			return NULL;
		if ((uint64_t)k->params[i].offset + k->params[i].size > size)
			return NULL;
		return buf + k->params[i].offset;
	}
	return NULL;
}

static void add_arg(struct ddp_launch *out, uint32_t param, uint32_t word, int access, int in_struct,
		    uint64_t value, const struct ddp_alloc_ent *a)
{
	if (out->nargs == DDP_LAUNCH_MAX_ARGS) {
		out->truncated++;
		return;
	}
	struct ddp_launch_arg *g = &out->args[out->nargs++];
	g->param = (uint16_t)param;
	g->word = (uint16_t)word;
	g->access = (uint8_t)access;
	g->in_struct = (uint8_t)in_struct;
	g->value = value;
	g->alloc = *a;
}

ddp_result ddp_launch_decode(const struct ddp_kfunc *k, const struct ddp_launch_params *p,
			     struct ddp_launch *out)
{
	const uint8_t *buf = NULL;
	size_t bufsize = 0;
	struct ddp_alloc_ent a;

	out->k = k;
	out->nargs = 0;
	out->truncated = 0;
	if (!k->layout_known)
		return DDP_ERR_UNSUPPORTED;
	if (k->nparams == 0)
		return DDP_OK;
	if (!p->kernel_params) {
		if (!p->extra || !extra_buffer(p->extra, &buf, &bufsize))
			return DDP_ERR_INVALID;
		const struct ddp_kparam_desc *last = &k->params[k->nparams - 1];
		if ((uint64_t)last->offset + last->size > bufsize)
			return DDP_ERR_INVALID;
	}
	for (uint32_t i = 0; i < k->nparams; i++) {
		const struct ddp_kparam_desc *d = &k->params[i];
		const uint8_t *v = buf ? buf + d->offset : (const uint8_t *)p->kernel_params[i];
		if (!v)
			return DDP_ERR_INVALID;
		if (d->size == 8 && (d->ptype == DDP_PT_POINTER || d->ptype == DDP_PT_UNKNOWN)) {
			uint64_t x;
			memcpy(&x, v, 8);
			if (x && ddp_alloc_find(x, &a)) {
				int acc = d->ptype == DDP_PT_POINTER
						  ? (d->is_const ? DDP_ACC_READ : DDP_ACC_WRITE)
						  : DDP_ACC_UNKNOWN;
				add_arg(out, i, 0, acc, 0, x, &a);
			}
		} else if (d->size >= 8 && (d->ptype == DDP_PT_STRUCT || d->ptype == DDP_PT_UNKNOWN)) {
			/* scan the 8-byte-aligned words of a by-value struct */
			uint32_t first = (d->offset + 7) & ~7u;
			for (uint32_t o = first; o + 8 <= d->offset + d->size; o += 8) {
				uint64_t x;
				memcpy(&x, v + (o - d->offset), 8);
				if (x && ddp_alloc_find(x, &a))
					add_arg(out, i, (o - d->offset) / 8, DDP_ACC_UNKNOWN, 1, x, &a);
			}
		}
	}
	return DDP_OK;
}

const char *ddp_access_name(enum ddp_access a)
{
	switch (a) {
	case DDP_ACC_READ: return "read";
	case DDP_ACC_WRITE: return "write";
	default: return "unknown";
	}
}
