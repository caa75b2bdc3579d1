/* SPDX-License-Identifier: MIT
 *
 * ddp_torch_launch.h - a launch of one of PyTorch's decodable kernels
 * (ddp_torch_args.h) as the gradient tracker's explicit launch: one
 * ddp_grad_arg per tensor range, with its list, access and element type,
 * and the list the kernel defines as gradients.
 *
 * Contract: the caller serialises every call (ddp_sync.c's sync_st.lock).
 * The argument buffer grows with malloc when a launch has more tensors than
 * ever before; nothing else allocates after a kernel is learned.
 */
#ifndef DDP_TORCH_LAUNCH_H
#define DDP_TORCH_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"
#include "ddp_grad.h"
#include "ddp_kreg.h"
#include "ddp_port.h"

enum ddp_xt {
	DDP_XT_UNKNOWN = 0, /* not learned yet                                */
	DDP_XT_NONE,        /* not one of PyTorch's decodable kernels         */
	DDP_XT_OK,          /* decodable: launches are explicit               */
	DDP_XT_REFUSE,      /* PyTorch's, but its tensors cannot be bounded
			      * (an unknown struct layout, a kind not decoded) */
};

/* Learns once what k is (k->sync_torch_state, k->sync_torch). */
void ddp_torch_launch_learn(struct ddp_kfunc *k);

/* A growable argument buffer. */
struct ddp_xargs {
	struct ddp_grad_arg *v;
	size_t cap;
	uint32_t n;
	uint8_t grad_list; /* DDP_GRAD_NO_LIST or the gradient list          */
};

/*
 * Decodes launch c of k (k->sync_torch_state == DDP_XT_OK) into out.
 * Tensors outside the device memory libddp tracks are left out; `strict`
 * (a consumer: reader, neutral, optimizer) makes one an error instead.
 * Errors: DDP_ERR_INVALID (bytes inconsistent with the layout, a tensor
 * outside device memory), DDP_ERR_NOMEM; msg gets one line saying what.
 */
ddp_result ddp_torch_launch_args(const struct ddp_kfunc *k, const struct ddp_launch_call *c, int strict,
				 struct ddp_xargs *out, char *msg, size_t msgcap);

void ddp_xargs_free(struct ddp_xargs *x);

#endif /* DDP_TORCH_LAUNCH_H */
