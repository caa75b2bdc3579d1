/* SPDX-License-Identifier: MIT
 *
 * ddp_torch_args.h - decoders for PyTorch's kernel argument structs: which
 * byte ranges a launch of one of PyTorch's multi-tensor or elementwise
 * kernels reads and writes, with their element types.
 *
 * Two steps.  Once per kernel, ddp_torch_kernel_info reads the demangled name
 * and the parameter sizes and says what the kernel is:
 *
 *   multi_tensor_apply_kernel<Meta, Functor, Args...>(Meta, Functor, Args...)
 *     Meta = TensorListMetadata<depth>             (depth 1-4)
 *            TensorListScalarListMetadata<S, depth> (S the scalar type)
 *            FusedOptimizerTensorListMetadata<depth>
 *     The struct layout is chosen by parameter 0's size: the 4 KB layout of
 *     CUDA <= 12 builds (110/64/48/36/30 tensors, 320 blocks, u8
 *     block_to_tensor) or the CUDA 13 one (770/448/336/252/210 tensors,
 *     2240 blocks, u16 block_to_tensor).  A size that fits neither is
 *     DDP_ERR_INVALID: the caller refuses the launch rather than guess.
 *   lpnorm_cleanup<T, norm, out_t, ...>(const acc*, TensorListAddresses, ...)
 *   lpmax_cleanup<T>(const T*, TensorListAddresses, int)
 *     TensorListAddresses: 400 (4 KB) or 3200 (CUDA 13) addresses; the first
 *     gridDim.x are live, each the 1-element output of one tensor's norm.
 *   vectorized_elementwise_kernel<vec, F, std::array<char*, N>>(int n, F, array)
 *   unrolled_elementwise_kernel<F, std::array<char*, N>, ..., LoadWithoutCast,
 *     StoreWithoutCast>(int n, F, array, ...)
 *     N contiguous operands of n elements: array[0] written, the rest read.
 *   reduce_kernel<nt, vt, ReduceOp<scalar_t, ops_t, unsigned int, out_t,
 *     vt0, ivs>>(ReduceOp)  (Reduce.cuh: sum, mean, norms, max/min, ...)
 *     One by-value ReduceOp: ops, ident, ReduceConfig config, the input's
 *     and the output's OffsetCalculator (25 dims: IntDivider<u32> sizes,
 *     u32 byte strides), src, dst[2], acc_buf, cta_buf, semaphores,
 *     base_idx, accumulate, final_output, noutputs.  The input's
 *     calculator spans the reduced dims (num_inputs elements per output),
 *     the output's the kept ones (num_outputs; strides of the output and
 *     of the input).  The members after the calculators sit at fixed
 *     offsets from the struct's end; the config's offset depends on
 *     sizeof(ops_t) and arg_t, so the decoder places it where the two
 *     calculators' live IntDividers are valid (divisor, and the magic m1
 *     and shift IntDivider<u32>(d) computes; entries past dims are not
 *     written) and their sizes multiply to the config's num_inputs and
 *     num_outputs; exactly one of the two possible places must fit, else
 *     the launch is DDP_ERR_INVALID.  Ranges: list 0 = dst[0], written
 *     (read too with `accumulate`), extent = the output calculator's
 *     largest byte offset + sizeof(out_t); list 1 = src, read, extent from
 *     both calculators' input strides; list 2 = acc_buf / cta_buf /
 *     semaphores when not NULL, written, size unknown (bytes 0: to their
 *     allocation's end).  Only noutputs 1 with final_output is decoded
 *     (two outputs of different types, or partial results in acc_buf:
 *     DDP_ERR_INVALID); complex or unknown element types are not PyTorch
 *     kernels to this decoder
 *     (DDP_ERR_UNSUPPORTED, kind NONE: the generic decoder).
 *
 * Read/write per list of a multi-tensor kernel: the generic foreach
 * functors are Functor<T, depth, r_args_depth, res_arg_index>: lists
 * 0..r_args_depth-1 are read and list res_arg_index is written.  Special
 * functors: LpNormFunctor / LpMaxFunctor read list 0 (they write their
 * extra output argument); ZeroFunctor writes list 0; CopyFunctor<dst_t,
 * src_t, ...> reads list 0 (src_t) and writes list 1 (dst_t); fused
 * Adam/AdamW (FusedAdamMathFunctor<T, depth, mode, amsgrad>), fused SGD
 * (FusedSgdMathFunctor<T, depth>) and fused Adagrad: list 0 parameters
 * (read-write), list 1 gradients (read; also written when the launch's
 * grad_scale pointer is not NULL: they write the unscaled gradients back),
 * the other lists state (read-write); a fused struct's state_steps are
 * 1-element f32 tensors, read (list DDP_TLIST_STEPS).  The AMP unscale
 * (UnaryOpFunctor<T,1,1,0> + the _amp_foreach_non_finite_check_and_unscale
 * lambda) reads and writes list 0 by the generic rule.  The element type T
 * is the functor's first template argument (CopyFunctor: per list).  Mixed
 * precision fused Adam (FusedAdamMathFunctorMP) is not decoded yet
 * (DDP_ERR_UNSUPPORTED from ddp_torch_kernel_info with kind set).
 *
 * Then, per launch, ddp_torch_decode turns the launch's argument bytes into
 * ranges: the live tensor count is block_to_tensor[gridDim.x - 1] + 1 (slots
 * past it are never read: PyTorch does not clear them), every live tensor
 * gives one range per list, extent numel x sizeof(T).  No fixed cap: the
 * caller passes a buffer and gets the number of ranges needed back
 * (ddp_trange_vec grows one).
 *
 * Contract: pure functions of their inputs (the argument bytes are outside
 * input: every count, index and size is checked against the layout before
 * use; bad bytes give DDP_ERR_INVALID, never a read outside the struct).
 * No allocation except in ddp_trange_vec_decode when its buffer grows.
 * Thread-safe.
 */
#ifndef DDP_TORCH_ARGS_H
#define DDP_TORCH_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_dtype.h"
#include "ddp_err.h"

enum ddp_torch_kind {
	DDP_TK_NONE = 0,   /* not one of PyTorch's decodable kernels        */
	DDP_TK_TLM,        /* TensorListMetadata<depth>                     */
	DDP_TK_SCALARLIST, /* TensorListScalarListMetadata<S, depth>        */
	DDP_TK_FUSED,      /* FusedOptimizerTensorListMetadata<depth>       */
	DDP_TK_ADDRS,      /* lpnorm_cleanup / lpmax_cleanup's TensorListAddresses */
	DDP_TK_ELEMWISE,   /* vectorized / unrolled elementwise kernel      */
	DDP_TK_REDUCE,     /* reduce_kernel<nt, vt, ReduceOp<...>>          */
};

enum ddp_torch_layout {
	DDP_TL_UNKNOWN = 0,
	DDP_TL_4K,     /* CUDA <= 12 builds: 4 KB parameter limit        */
	DDP_TL_CUDA13, /* CUDA 13 builds: ~25 KB structs                 */
};

enum ddp_torch_functor {
	DDP_TF_GENERIC = 0, /* Functor<T, depth, r_args_depth, res_arg_index> */
	DDP_TF_LPNORM,      /* LpNormFunctor, LpMaxFunctor                    */
	DDP_TF_ZERO,
	DDP_TF_COPY,
	DDP_TF_AMP_UNSCALE, /* UnaryOpFunctor + AMP unscale lambda            */
	DDP_TF_FUSED_ADAM,
	DDP_TF_FUSED_SGD,
	DDP_TF_FUSED_ADAGRAD,
	DDP_TF_FUSED_ADAM_MP,
	DDP_TF_CLEANUP, /* lpnorm_cleanup / lpmax_cleanup                 */
	DDP_TF_ELEMWISE,
	DDP_TF_REDUCE,
};

#define DDP_TROLE_READ 1
#define DDP_TROLE_WRITE 2

#define DDP_TLIST_MAX 5      /* lists of a metadata struct             */
#define DDP_TLIST_STEPS 0xf0 /* a fused struct's state_steps           */

/* What a kernel is, computed once. */
struct ddp_torch_kernel {
	uint8_t kind;                        /* enum ddp_torch_kind                 */
	uint8_t layout;                      /* enum ddp_torch_layout               */
	uint8_t functor;                     /* enum ddp_torch_functor              */
	uint8_t depth;                       /* lists                               */
	uint8_t r_args_depth, res_arg_index; /* generic functors                 */
	uint8_t btt_size;                    /* bytes of a block_to_tensor entry    */
	uint8_t has_start;                   /* start_tensor_this_launch present    */
	uint8_t role[DDP_TLIST_MAX];         /* per list: DDP_TROLE_* mask          */
	uint8_t dtype[DDP_TLIST_MAX];        /* per list: enum ddp_dtype            */
	uint8_t esize[DDP_TLIST_MAX];        /* per list: bytes per element         */
	uint8_t grad_list_scaled;            /* fused: list written when grad_scale != NULL (0xff none) */
	uint32_t grad_scale_param;           /* fused: parameter index of grad_scale (0 none) */
	uint32_t struct_param;               /* the struct / pointer array parameter */
	uint32_t count_param;                /* elementwise: the int n parameter     */
	uint32_t max_tensors, max_blocks;    /* slots of the struct                 */
	uint32_t off_numel, off_scalars, off_steps, off_btt, off_btc, off_start;
	uint32_t struct_size; /* bytes of the struct parameter       */
};

/* One byte range a launch touches. */
struct ddp_trange {
	uint64_t addr;
	uint64_t bytes; /* numel x element size (0 when the size is unknown) */
	uint64_t numel;
	uint32_t tensor; /* index among the launch's live tensors           */
	uint8_t list;    /* list index, or DDP_TLIST_STEPS                   */
	uint8_t role;    /* DDP_TROLE_* mask                                  */
	uint8_t dtype;   /* enum ddp_dtype (UNKNOWN for complex and others)   */
	uint8_t esize;   /* bytes per element                                 */
};

/*
 * Recognises kernel `demangled` with nparams parameters of sizes
 * param_size[].  DDP_OK: *out describes it.  DDP_ERR_UNSUPPORTED: not a
 * kernel these decoders know (out->kind DDP_TK_NONE), or a known kind not
 * decoded yet (out->kind set).  DDP_ERR_INVALID: a PyTorch struct kernel
 * whose parameter sizes fit no known layout (the caller must refuse it:
 * its tensors cannot be bounded).
 */
ddp_result ddp_torch_kernel_info(const char *demangled, const uint32_t *param_size, uint32_t nparams,
				 struct ddp_torch_kernel *out /* OUT */);

/* The struct size of a metadata kind in a layout (0 when unknown): for
 * tests and for the parameter-size check.  scalar_esize/scalar_align: the
 * scalar list's element (SCALARLIST only). */
uint32_t ddp_torch_struct_size(enum ddp_torch_kind kind, enum ddp_torch_layout layout, int depth,
			       int scalar_esize, int scalar_align);

/*
 * Decodes one launch.  param[i] points at parameter i's bytes (as
 * kernelParams); only the struct parameter (struct_size bytes), the count
 * parameter (4 bytes) and the grad_scale parameter (8 bytes) are read.
 * grid_x is the launch's gridDim.x.  Writes at most cap ranges to out and
 * the number needed to *n.  DDP_ERR_INVALID when the bytes are
 * inconsistent with the layout (grid larger than the struct's blocks, a
 * live count beyond its slots, numel <= 0, a NULL address, a range that
 * wraps); out is then meaningless.
 */
ddp_result ddp_torch_decode(const struct ddp_torch_kernel *tk, const void *const *param, unsigned grid_x,
			    struct ddp_trange *out, size_t cap, size_t *n /* OUT */);

/* A growable range buffer: grows (and only then allocates) until the
 * launch's ranges fit. */
struct ddp_trange_vec {
	struct ddp_trange *v;
	size_t n, cap;
};
ddp_result ddp_trange_vec_decode(struct ddp_trange_vec *vec, const struct ddp_torch_kernel *tk,
				 const void *const *param, unsigned grid_x);
void ddp_trange_vec_free(struct ddp_trange_vec *vec);

const char *ddp_torch_kind_name(enum ddp_torch_kind k);

#endif /* DDP_TORCH_ARGS_H */
