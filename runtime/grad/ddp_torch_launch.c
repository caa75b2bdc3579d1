/* SPDX-License-Identifier: MIT
 *
 * ddp_torch_launch.c - PyTorch's decodable kernels as explicit launches of
 * the gradient tracker (see ddp_torch_launch.h).
 *
 * The decoders (runtime/track/ddp_torch_args.c) give byte ranges; this file
 * places each in the allocation table (a tensor of an expandable segment
 * may straddle mapped pages: its record spans them), and names the list a
 * kernel defines as gradients: the AMP unscale's and LpNorm's list 0, a
 * fused optimizer's list 1.  Generic foreach optimizer ops define none: the
 * tracker decides from who wrote their lists this step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_alloc.h"
#include "ddp_array.h"
#include "ddp_launch.h"
#include "ddp_torch_args.h"
#include "ddp_torch_launch.h"

/* PyTorch's own kernels live in at::native (an extension's or apex's
 * multi_tensor_apply_kernel has its own struct: the generic rules). */
static int pytorch_own(const char *demangled)
{
	if (strncmp(demangled, "void ", 5) == 0)
		demangled += 5;
	return strncmp(demangled, "at::native::", 12) == 0;
}

void ddp_torch_launch_learn(struct ddp_kfunc *k)
{
	uint32_t sizes[64];
	struct ddp_torch_kernel tk;

	if (k->sync_torch_state)
		return;
	k->sync_torch_state = DDP_XT_NONE;
	if (!k->layout_known || !k->demangled || k->nparams > 64 || !pytorch_own(k->demangled))
		return;
	for (uint32_t i = 0; i < k->nparams; i++)
		sizes[i] = k->params[i].size;
	ddp_result rc = ddp_torch_kernel_info(k->demangled, sizes, k->nparams, &tk);
	if (rc == DDP_OK) {
		struct ddp_torch_kernel *p = malloc(sizeof *p);
		if (!p)
			return; /* undecoded: the generic decoder's unbounded ranges */
		*p = tk;
		k->sync_torch = p;
		k->sync_torch_state = DDP_XT_OK;
	} else if (rc == DDP_ERR_INVALID || (rc == DDP_ERR_UNSUPPORTED && tk.kind != DDP_TK_NONE)) {
		k->sync_torch_state = DDP_XT_REFUSE;
	}
}

static int grad_list_of(const struct ddp_torch_kernel *tk)
{
	switch (tk->functor) {
	case DDP_TF_AMP_UNSCALE:
	case DDP_TF_LPNORM: return 0;
	case DDP_TF_FUSED_ADAM:
	case DDP_TF_FUSED_SGD:
	case DDP_TF_FUSED_ADAGRAD: return 1;
	default: return DDP_GRAD_NO_LIST;
	}
}

ddp_result ddp_torch_launch_args(const struct ddp_kfunc *k, const struct ddp_launch_call *c, int strict,
				 struct ddp_xargs *out, char *msg, size_t msgcap)
{
	static struct ddp_trange_vec vec;
	const struct ddp_torch_kernel *tk = k->sync_torch;
	const void *param[64];
	struct ddp_launch_params p = { c->params, c->extra };
	ddp_result rc;

	out->n = 0;
	out->grad_list = DDP_GRAD_NO_LIST;
	msg[0] = '\0';
	for (uint32_t i = 0; i < k->nparams && i < 64; i++)
		param[i] = ddp_launch_param_ptr(k, &p, i);
	rc = ddp_trange_vec_decode(&vec, tk, param, c->grid[0]);
	if (rc != DDP_OK) {
		snprintf(msg, msgcap, "its %s argument struct does not fit its layout (%s)",
			 ddp_torch_kind_name((enum ddp_torch_kind)tk->kind), ddp_strerror(rc));
		return rc;
	}
	struct ddp_grad_arg *v = ddp_array_grow(out->v, &out->cap, vec.n ? vec.n : 1, sizeof *v, 256);
	if (!v) {
		snprintf(msg, msgcap, "out of memory (%zu tensors)", vec.n);
		return DDP_ERR_NOMEM;
	}
	out->v = v;
	for (size_t i = 0; i < vec.n; i++) {
		const struct ddp_trange *r = &vec.v[i];
		struct ddp_alloc_ent e;
		uint64_t bytes = r->bytes ? r->bytes : (r->esize ? r->numel * r->esize : 0);
		/* a buffer the kernel writes whose size the struct does not
		 * carry (reduce_kernel's cta_buf, semaphores): to its
		 * allocation's end, as the generic decoder takes it */
		int unbounded = !bytes && !r->esize && (r->role & DDP_TROLE_WRITE);
		if (unbounded && ddp_alloc_covers(r->addr, 1, &e))
			bytes = e.base + e.size - r->addr;
		if (!bytes || !ddp_alloc_covers(r->addr, bytes, &e)) {
			if (!strict)
				continue;
			snprintf(msg, msgcap,
				 "tensor %u of list %u (%llu bytes at 0x%llx) is not device memory "
				 "libddp tracks%s",
				 r->tensor, r->list, (unsigned long long)bytes, (unsigned long long)r->addr,
				 bytes ? "" : " (element size unknown)");
			return DDP_ERR_INVALID;
		}
		struct ddp_grad_arg *a = &out->v[out->n++];
		memset(a, 0, sizeof *a);
		a->base = e.base;
		/* a tensor straddling mapped pages (expandable segments): its
		 * record spans them, from the first page's base */
		a->size = r->addr + bytes - e.base > e.size ? r->addr + bytes - e.base : e.size;
		a->alloc_id = e.id;
		a->outside = e.kind != DDP_ALLOC_PLAIN && e.kind != DDP_ALLOC_ASYNC;
		a->ptr = r->addr;
		a->ext = bytes;
		a->bounded = unbounded ? DDP_GB_NONE : DDP_GB_EXACT;
		if (unbounded)
			a->ext = 0;
		a->in_struct = 1;
		a->param = r->list;
		a->word = r->tensor > 0xffff ? 0xffff : (uint16_t)r->tensor;
		a->tlist = r->list;
		a->access = (uint8_t)(r->role & (DDP_TROLE_READ | DDP_TROLE_WRITE));
		a->dtype = r->dtype;
	}
	out->grad_list = (uint8_t)grad_list_of(tk);
	return DDP_OK;
}

void ddp_xargs_free(struct ddp_xargs *x)
{
	free(x->v);
	memset(x, 0, sizeof *x);
}
