/* SPDX-License-Identifier: MIT
 *
 * main.c - samples/torchlike: a CUDA Driver API program that does, at the
 * driver level, what a PyTorch training script does on a GPU: the same
 * kernels (PyTorch's real mangled names and argument layouts, kernels.cu),
 * the same allocator (alloc.c: caching / expandable segments /
 * cudaMallocAsync), backward on a second host thread, AccumulateGrad, and
 * the step sequences of torch.optim's foreach AdamW / Adam / SGD and of
 * clip_grad_norm_ (../shared/PYTORCH.md, section 3).
 *
 * Model (304 parameter tensors, 150 of them 16-element biases; --layers N
 * gives 2N+4):
 *   x: the K = 8 context bytes of a record as floats (tok/96 - 0.5)
 *   h1 = relu(W0 x + b0)                      W0 [16][8],  b0 [16]
 *   h_{l+1} = h_l + relu(W_l h_l + b_l)       W_l [16][16], b_l [16], l = 1..150
 *   logits = Wh h + bh                        Wh [96][16], bh [96]
 *   loss = mean cross-entropy(logits, the record's last byte)
 * Linear layers are cuBLASLt-style GEMMs with bias/ReLU epilogues forward
 * and dReLU/bias-gradient epilogues backward, residual adds and
 * AccumulateGrad's `grad += new` are PyTorch's add kernel.
 *
 * A step (--accum K micro-batches of --batch records):
 *   zero_grad        set_to_none: the gradients are freed (default);
 *                    --set-to-none 0: _foreach_zero_ over them (foreach,
 *                    fused), one fill per gradient (forloop)
 *   forward          activations allocated from the caching allocator;
 *                    --dtype bf16: autocast: each micro-batch casts the
 *                    input and every weight and bias to bf16 (converting
 *                    copies), bf16 GEMMs and residual adds, the logits cast
 *                    back to fp32 for the loss
 *   backward         on the autograd thread, same stream; activations freed
 *                    as they are consumed; the first gradient of a
 *                    parameter is the GEMM's output itself (AccumulateGrad
 *                    steals it), later ones are added (`grad += new`); bf16:
 *                    the GEMMs' bf16 weight/bias gradients are cast to fp32
 *                    (the casts' backward) before AccumulateGrad
 *   clip             --clip M > 0: _foreach_norm (LpNorm + lpnorm_cleanup),
 *                    torch.stack, vector_norm, max/(n+1e-6), clamp(max=1),
 *                    _foreach_mul_(grads, coef)
 *   step             --impl foreach: foreach AdamW/Adam (states created with
 *                    zeros_like in the first step), foreach SGD with
 *                    momentum (the first step clones the gradients);
 *                    --impl fused: device step counts, _foreach_add_(steps,
 *                    1), one FusedAdamMathFunctor launch (per 252 tensors);
 *                    fused SGD: one FusedSgdMathFunctor launch;
 *                    --impl forloop (foreach=False): torch.optim's
 *                    _single_tensor_adam / _single_tensor_sgd, elementwise
 *                    kernels per parameter
 *   GradScaler       --scaler 1: see below
 * stdout: one `step K loss V` line per step (the mean loss of its micro-
 * batches, read with a device-to-host copy as loss.item() does), and
 * `step K skipped (inf)` after it when GradScaler skipped the update.
 *
 * --scaler 1 (torch.amp.GradScaler(init_scale=65536, growth_factor=2,
 * backoff_factor=0.5, growth_interval=10); PyTorch's defaults but a
 * growth interval of 10 instead of 2000, so that the scale grows within a
 * run): the scale and growth tracker are created by the first
 * scaler.scale (fills); per micro-batch loss = loss_rows.mean() (a
 * reduce_kernel), / K under accumulation, times the scale (a mul kernel);
 * backward seeds 1, multiplies by the scale (MulBackward) and the loss's
 * backward reads that gradient.  With --clip the script calls
 * scaler.unscale_ before clipping.  unscale_: inv_scale =
 * scale.double().reciprocal().float() (two casting copies and a
 * reciprocal), found_inf = full(0.) (a fill), then
 * _amp_foreach_non_finite_check_and_unscale_ over the gradients.
 * scaler.step: foreach/forloop: unscale_ if not done, found_inf.item()
 * (a 4-byte device-to-host copy), the optimizer only when it is 0; fused
 * (_step_supports_amp_scaling): _check_inf_per_device if not unscaled
 * (the same unscale kernel with inv_scale 1), found_inf = 0 + found_inf,
 * grad_scale = scale * 1 (or none after unscale_), and the fused kernel
 * unscales the gradients itself and does nothing when found_inf is set;
 * then _foreach_sub_(steps, found_inf).  scaler.update():
 * amp_update_scale_cuda_kernel.
 *   Skipped steps.  In fp32 (and bf16, same exponent range) the scaled
 *   gradients of this model overflow only when scale x max|grad| passes
 *   3.4e38; the scale is at most 2^127 and max|grad| here is 0.15 to 3
 *   (batch 16) and up to 12 at batch 8, so an overflow decided by the
 *   scale would be within a factor 2 of the boundary and could differ
 *   between one process at 2B and each rank at B.  The sample therefore
 *   makes overflow a property of the data, like a corrupt record: at the
 *   steps of --inf-steps (default 5,6,19,34,50) the first input of the
 *   first record of the first micro-batch is +inf, so that forward and
 *   backward produce non-finite values on every rank and in the
 *   reference alike; --inf-steps none turns it off.
 *
 * --layout cuda12: the multi-tensor kernels with the 4 KB structs of
 * PyTorch's CUDA <= 12 builds (libtorchlike_cuda12.so; u8 block_to_tensor,
 * 320 blocks, 110/64/48/36/30 tensors per launch), so a foreach op over
 * the 304 tensors is several launches, split as multi_tensor_apply splits.
 *
 * Contract: knows nothing of ddprun.  Every CUDA call checked.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/sample.h"
#include "alloc.h"

extern const unsigned char samples_obj_torchlike_kernels_fatbin[];

enum { IN = 8, D = 16, V = 96, MAX_LAYERS = 150, MAX_PARAMS = 2 * MAX_LAYERS + 4 };
static int LAYERS = MAX_LAYERS;  /* --layers: residual blocks (default 150: 304 tensors) */
static int NPARAMS = MAX_PARAMS;
/* PyTorch launches its multi-tensor kernels with 512 threads per block
 * (kBlockSize).  On the CPU device every thread of a block receives its own
 * copy of the ~25 KB by-value metadata struct (a C++ call per thread), so
 * the sample uses 32: the kernels stride by blockDim.x, the results and
 * every argument byte are the same, only the launch's block size differs. */
enum { BLOCK = 128, MTA_BLOCK = 32, CHUNK = 65536 };

/* GradScaler's parameters (see the header) */
#define SCALER_INIT 65536.0f
#define SCALER_GROWTH 2.0
#define SCALER_BACKOFF 0.5
#define SCALER_INTERVAL 10

/* ---- kernels */
enum {
	K_ADD, K_FILL, K_ADD_SCALAR, K_SCALAR_DIV, K_MUL_SCALAR, K_ADD_EPS, K_LERP, K_ADDCMUL, K_SQRT, K_ZERO,
	K_DIV_SL, K_ADDCDIV_SL, K_LPNORM, K_CLEANUP, K_CLIP_MUL, K_ADD_ALPHA, K_CAT, K_VNORM,
	K_GEMM_FWD, K_GEMM_DGRAD, K_GEMM_WGRAD, K_XENT, K_CLAMP,
	/* GradScaler */
	K_FILL_INT, K_MUL, K_MEAN, K_AMP_UNSCALE, K_AMP_UPDATE, K_TO_DOUBLE, K_TO_FLOAT, K_RECIPROCAL, K_MUL_BY,
	K_LOSS_GRAD_SCALE,
	/* fused optimizers */
	K_FUSED_ADAM, K_FUSED_ADAMW, K_FUSED_SGD3, K_FUSED_SGD2, K_SUB_LIST,
	/* forloop optimizers */
	K_EW_MUL_SCALAR, K_EW_LERP, K_EW_ADDCMUL, K_EW_SQRT, K_EW_DIV_SCALAR, K_EW_ADDCDIV,
	/* autocast bf16 */
	K_TO_BF16, K_FROM_BF16, K_ADD_BF16, K_GEMM_FWD_BF16, K_GEMM_DGRAD_BF16, K_GEMM_WGRAD_BF16,
	NK
};
static CUfunction kf[NK];
static const struct sample_kernel kernels[] = {
	{&kf[K_ADD], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EELb0EEEviT0_T1_"},
	{&kf[K_FILL], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EELb0EEEviT0_T1_"},
	{&kf[K_ADD_SCALAR], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_21CUDAFunctorOnSelf_addIfEESt5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_SCALAR_DIV], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10DivFunctorIfEEEESt5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_MUL_SCALAR], "_ZN2at6native57_GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_"},
	{&kf[K_ADD_EPS], "_ZN2at6native57_GLOBAL__N__7e105b8f_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_"},
	{&kf[K_LERP], "_ZN2at6native52_GLOBAL__N__913c22e1_19_ForeachTernaryOp_cu_5285c63625multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_22TernaryOpScalarFunctorIfLi2ELi2ELi0EEEJNS0_11LerpFunctorIfEEfEEEvT_T0_DpT1_"},
	{&kf[K_ADDCMUL], "_ZN2at6native54_GLOBAL__N__ae7e1889_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_apply_kernelINS1_18TensorListMetadataILi3EEENS1_24PointwiseOpScalarFunctorIfLi3ELi3ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_"},
	{&kf[K_SQRT], "_ZN2at6native50_GLOBAL__N__637ba612_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_14UnaryOpFunctorIfLi2ELi1ELi1EEEJNS0_4SqrtIfEEEEEvT_T0_DpT1_"},
	{&kf[K_ZERO], "_ZN2at6native50_GLOBAL__N__637ba612_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_11ZeroFunctorIfLi1ELi1ELi0EEEJEEEvT_T0_DpT1_"},
	{&kf[K_DIV_SL], "_ZN2at6native61_GLOBAL__N__832b9cb6_28_ForeachBinaryOpScalarList_cu_dda10a6925multi_tensor_apply_kernelINS1_28TensorListScalarListMetadataIfLi1EEENS1_25BinaryOpScalarListFunctorIfLi1ELi1ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_"},
	{&kf[K_ADDCDIV_SL], "_ZN2at6native54_GLOBAL__N__ae7e1889_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_apply_kernelINS1_28TensorListScalarListMetadataIfLi3EEENS1_28PointwiseOpScalarListFunctorIfLi3ELi3ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_"},
	{&kf[K_LPNORM], "_ZN2at6native51_GLOBAL__N__99dedba0_18_ForeachReduceOp_cu_b83ec48c25multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS0_13LpNormFunctorIfLNS0_8NormTypeE2EfLi1ELi1ELi0EEEJPfPKlEEEvT_T0_DpT1_"},
	{&kf[K_CLEANUP], "_ZN2at6native14lpnorm_cleanupIfLNS0_8NormTypeE2EfLb1EfEEvPKT3_NS0_19TensorListAddressesEPKli"},
	{&kf[K_CLIP_MUL], "_ZN2at6native63_GLOBAL__N__d2244290_30_ForeachBinaryOpScalarTensor_cu_64fe0ca525multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_27BinaryOpScalarTensorFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEPffEEEvT_T0_DpT1_"},
	{&kf[K_ADD_ALPHA], "_ZN2at6native55_GLOBAL__N__f86471ef_22_ForeachBinaryOpList_cu_a911ec4325multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_24BinaryOpListAlphaFunctorIfLi2ELi2ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_"},
	{&kf[K_CAT], "_ZN2at6native40_GLOBAL__N__f1f992fe_8_Shape_cu_49f7391c26CatArrayBatchedCopy_contigINS1_10OpaqueTypeILj4EEEjLi1ELi128ELi1EEEvPT_NS1_25CatArrInputTensorMetadataIS5_T0_XT2_EXT3_EEENS1_16TensorSizeStrideIS8_Lj4EEEiS8_"},
	{&kf[K_VNORM], "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_10NormTwoOpsIfffLb0EEEjfLi4ELi4EEEEEvT1_"},
	{&kf[K_GEMM_FWD], "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize16x16x8_execute_kernel__5x_cublas"},
	{&kf[K_GEMM_DGRAD], "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize16x16x8_execute_kernel__5x_cublas"},
	{&kf[K_GEMM_WGRAD], "sm90_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize16x16x8_bgrad_execute_kernel__5x_cublas"},
	{&kf[K_XENT], "torchlike_cross_entropy_standin"},
	{&kf[K_CLAMP], "torchlike_clamp_max_standin"},
	{&kf[K_FILL_INT], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIiEESt5arrayIPcLm1EELb0EEEviT0_T1_"},
	{&kf[K_MUL], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm3EELb0EEEviT0_T1_"},
	{&kf[K_MEAN], "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_"},
	{&kf[K_AMP_UNSCALE], "_ZN2at6native46_GLOBAL__N__3be26839_13_AmpKernels_cu_3810c27325multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_14UnaryOpFunctorIfLi1ELi1ELi0EEEJZZZNS0_47_amp_foreach_non_finite_check_and_unscale_cuda_EN3c108ArrayRefINS_6TensorEEERS9_RKS9_ENKUlvE_clEvENKUlvE0_clEvEUlfE_EEEvT_T0_DpT1_"},
	{&kf[K_AMP_UPDATE], "_ZN2at6native28amp_update_scale_cuda_kernelEPfPiPKfddi"},
	{&kf[K_TO_DOUBLE], "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE4_clEvEUldE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_"},
	{&kf[K_TO_FLOAT], "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_T5_"},
	{&kf[K_RECIPROCAL], "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_22reciprocal_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE_clEvENKUlvE_clEvEUldE_St5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_MUL_BY], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_LOSS_GRAD_SCALE], "torchlike_loss_grad_scale_standin"},
	{&kf[K_FUSED_ADAM], "_ZN2at6native51_GLOBAL__N__b7f847be_18_fused_adam_impl_cu_454205f325multi_tensor_apply_kernelINS1_32FusedOptimizerTensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIfLi4ELNS0_9ADAM_MODEE0ELb0EEEJPKfdddddbS9_S9_EEEvT_T0_DpT1_"},
	{&kf[K_FUSED_ADAMW], "_ZN2at6native52_GLOBAL__N__1f580294_19_fused_adamw_impl_cu_8b44fa2325multi_tensor_apply_kernelINS1_32FusedOptimizerTensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIfLi4ELNS0_9ADAM_MODEE1ELb0EEEJPKfdddddbS9_S9_EEEvT_T0_DpT1_"},
	{&kf[K_FUSED_SGD3], "_ZN2at6native50_GLOBAL__N__169a4528_17_FusedSgdKernel_cu_a550329a25multi_tensor_apply_kernelINS1_18TensorListMetadataILi3EEENS1_19FusedSgdMathFunctorIfLi3EEEJddPfddbbbS7_S7_EEEvT_T0_DpT1_"},
	{&kf[K_FUSED_SGD2], "_ZN2at6native50_GLOBAL__N__169a4528_17_FusedSgdKernel_cu_a550329a25multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_19FusedSgdMathFunctorIfLi2EEEJddPfddbbbS7_S7_EEEvT_T0_DpT1_"},
	{&kf[K_SUB_LIST], "_ZN2at6native55_GLOBAL__N__f86471ef_22_ForeachBinaryOpList_cu_a911ec4325multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_24BinaryOpListAlphaFunctorIfLi2ELi2ELi0EEEJSt5minusIfEfEEEvT_T0_DpT1_"},
	{&kf[K_EW_MUL_SCALAR], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_EW_LERP], "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_45_GLOBAL__N__e59e3811_7_Lerp_cu_e5d96c45_5404918lerp_scalar_kernelERNS_18TensorIteratorBaseERKN3c106ScalarEENKUlvE0_clEvENKUlvE0_clEvEUlffE_St5arrayIPcLm3EELb0EEEviT0_T1_"},
	{&kf[K_EW_ADDCMUL], "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_19addcmul_cuda_kernelERNS_18TensorIteratorBaseERKN3c106ScalarEENKUlvE0_clEvENKUlvE5_clEvEUlfffE_St5arrayIPcLm4EELb0EEEviT0_T1_"},
	{&kf[K_EW_SQRT], "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16sqrt_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_EW_DIV_SCALAR], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_EW_ADDCDIV], "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_19addcdiv_cuda_kernelERNS_18TensorIteratorBaseERKN3c106ScalarEENKUlvE0_clEvENKUlvE5_clEvEUlfffE_St5arrayIPcLm4EELb0EEEviT0_T1_"},
	{&kf[K_TO_BF16], "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_27converting_copy_kernel_cudaIfN3c108BFloat16EEEvRNS_18TensorIteratorBaseEEUlfE_St5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_FROM_BF16], "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_27converting_copy_kernel_cudaIN3c108BFloat16EfEEvRNS_18TensorIteratorBaseEEUlS4_E_St5arrayIPcLm2EELb0EEEviT0_T1_"},
	{&kf[K_ADD_BF16], "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIN3c108BFloat16EEESt5arrayIPcLm3EELb0EEEviT0_T1_"},
	{&kf[K_GEMM_FWD_BF16], "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize16x16x8_execute_kernel__5x_cublas"},
	{&kf[K_GEMM_DGRAD_BF16], "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize16x16x8_execute_kernel__5x_cublas"},
	{&kf[K_GEMM_WGRAD_BF16], "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize16x16x8_bgrad_execute_kernel__5x_cublas"},
};

static CUstream stream;
static CUcontext ctx;

/* ---- multi-tensor metadata layouts (MultiTensorApply.cuh; kernels.cu
 * asserts the same sizes on the device side): the CUDA 13 configuration
 * (u16 block_to_tensor, 2240 blocks) or, with --layout cuda12, the 4 KB one
 * (u8, 320 blocks) */
static int layout_cuda12;
enum mta_kind { MTA_PLAIN, MTA_SCALARLIST, MTA_FUSED };
struct mta_layout {
	int depth, max_tensors, max_blocks, btt_bytes, has_start;
	enum mta_kind kind;
	size_t off_numel, off_scalars, off_steps, off_btt, off_btc, off_start, size;
};

static struct mta_layout layout_of(int depth, enum mta_kind kind)
{
	static const int tensors13[5] = {770, 448, 336, 252, 210}, tensors13_sl[5] = {672, 448, 336, 252, 210};
	static const int tensors12[5] = {110, 64, 48, 36, 30}, tensors12_sl[5] = {96, 64, 48, 36, 30};
	const int *t = layout_cuda12 ? tensors12 : tensors13, *tsl = layout_cuda12 ? tensors12_sl : tensors13_sl;
	struct mta_layout l = {0};
	l.depth = depth;
	l.kind = kind;
	l.max_blocks = layout_cuda12 ? 320 : 2240;
	l.btt_bytes = layout_cuda12 ? 1 : 2;
	l.max_tensors = kind == MTA_SCALARLIST ? tsl[depth - 1] : t[depth - 1];
	size_t off = 8u * depth * l.max_tensors;
	l.off_numel = off;
	off += 8u * l.max_tensors;
	if (kind == MTA_SCALARLIST) {
		l.off_scalars = off;
		off += 4u * l.max_tensors;
	}
	if (kind == MTA_FUSED) {
		l.off_steps = off;
		off += 8u * tsl[depth - 1];
	}
	l.off_btt = off;
	off += (size_t)l.btt_bytes * l.max_blocks;
	l.off_btc = off;
	off += 4u * l.max_blocks;
	l.has_start = kind != MTA_SCALARLIST;
	if (l.has_start) {
		l.off_start = off;
		off += 4;
	}
	l.size = (off + 7) / 8 * 8;
	return l;
}

/* A multi_tensor_apply call: lists[d][t] of ntensors tensors of numel[t]
 * elements; scalars[t] for scalar-list kernels, steps[t] (the step-count
 * tensors) for the fused optimizers; extra arguments after the metadata and
 * the (empty) functor. */
struct mta_call {
	CUfunction f;
	int depth;
	enum mta_kind kind;
	CUdeviceptr *lists[4];
	const size_t *numel;
	int ntensors;
	const float *scalars;
	const CUdeviceptr *steps;
	void *extra[10];
	int nextra;
};

/* The host copy of the struct: never cleared between launches, as in
 * PyTorch (slots past the live count keep older pointers). */
static unsigned char meta_buf[32768];
static unsigned long mta_launches; /* reported at exit */

static void mta_launch(const struct mta_call *c, unsigned blocks)
{
	static unsigned char functor;
	void *params[2 + 10];
	params[0] = meta_buf;
	params[1] = &functor;
	for (int i = 0; i < c->nextra; i++)
		params[2 + i] = c->extra[i];
	CK(cuLaunchKernel(c->f, blocks, 1, 1, MTA_BLOCK, 1, 1, 0, stream, params, NULL));
	mta_launches++;
}

/* Moves slot `from` of every per-tensor array to slot 0 (a tensor whose
 * chunks continue in the next launch). */
static void mta_carry(const struct mta_layout *l, int from)
{
	memmove(meta_buf + l->off_numel, meta_buf + l->off_numel + 8 * from, 8);
	if (l->kind == MTA_SCALARLIST)
		memmove(meta_buf + l->off_scalars, meta_buf + l->off_scalars + 4 * from, 4);
	if (l->kind == MTA_FUSED)
		memmove(meta_buf + l->off_steps, meta_buf + l->off_steps + 8 * from, 8);
	for (int d = 0; d < l->depth; d++)
		memmove(meta_buf + 8 * ((size_t)d * l->max_tensors), meta_buf + 8 * ((size_t)d * l->max_tensors + from), 8);
}

/* PyTorch's multi_tensor_apply loop: tensors into slots, chunks into blocks;
 * a launch when the slots or the blocks are full (a tensor whose chunks do
 * not all fit continues in slot 0 of the next launch), and one at the end.
 * start_tensor_this_launch follows the plain version; the fused version
 * (multi_tensor_apply_for_fused_optimizer) never sets it (0). */
static void mta_apply(const struct mta_call *c)
{
	struct mta_layout l = layout_of(c->depth, c->kind);
	int loc_block = 0, loc_tensor = 0;
	int32_t start = 0;
	if (l.has_start)
		memcpy(meta_buf + l.off_start, &start, 4);
	for (int t = 0; t < c->ntensors; t++) {
		int64_t n = (int64_t)c->numel[t];
		if (n == 0)
			continue;
		memcpy(meta_buf + l.off_numel + 8 * loc_tensor, &n, 8);
		if (l.kind == MTA_SCALARLIST)
			memcpy(meta_buf + l.off_scalars + 4 * loc_tensor, &c->scalars[t], 4);
		if (l.kind == MTA_FUSED) {
			uint64_t a = c->steps[t];
			memcpy(meta_buf + l.off_steps + 8 * loc_tensor, &a, 8);
		}
		for (int d = 0; d < c->depth; d++) {
			uint64_t a = c->lists[d][t];
			memcpy(meta_buf + 8 * ((size_t)d * l.max_tensors + loc_tensor), &a, 8);
		}
		loc_tensor++;
		int64_t chunks = (n + CHUNK - 1) / CHUNK;
		for (int64_t ch = 0; ch < chunks; ch++) {
			uint16_t bt = (uint16_t)(loc_tensor - 1);
			int32_t bc = (int32_t)ch;
			if (l.btt_bytes == 1)
				meta_buf[l.off_btt + loc_block] = (unsigned char)bt;
			else
				memcpy(meta_buf + l.off_btt + 2 * loc_block, &bt, 2);
			memcpy(meta_buf + l.off_btc + 4 * loc_block, &bc, 4);
			loc_block++;
			int tensors_full = loc_tensor == l.max_tensors && ch == chunks - 1;
			int blocks_full = loc_block == l.max_blocks;
			if (tensors_full || blocks_full) {
				mta_launch(c, (unsigned)loc_block);
				loc_block = 0;
				if (ch == chunks - 1) {
					loc_tensor = 0;
					start = t + 1;
				} else {
					mta_carry(&l, loc_tensor - 1);
					loc_tensor = 1;
					start = t;
				}
				if (l.kind == MTA_PLAIN)
					memcpy(meta_buf + l.off_start, &start, 4);
			}
		}
	}
	if (loc_block)
		mta_launch(c, (unsigned)loc_block);
}

/* ---- elementwise kernels (std::array<char*, N> argument) */
static void ew_launch(CUfunction f, int n, const void *functor, CUdeviceptr *ptrs)
{
	int32_t cnt = n;
	void *params[3] = {&cnt, (void *)functor, ptrs};
	CK(cuLaunchKernel(f, sample_blocks(n, BLOCK), 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
}

static void add_into(CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, int n)
{
	float alpha = 1.0f;
	CUdeviceptr arr[3] = {out, a, b};
	ew_launch(kf[K_ADD], n, &alpha, arr);
}

/* out = a + alpha * b (tensor.add(other, alpha=...)) */
static void add_alpha(CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, float alpha, int n)
{
	CUdeviceptr arr[3] = {out, a, b};
	ew_launch(kf[K_ADD], n, &alpha, arr);
}

static void fill(CUdeviceptr out, float v, int n)
{
	CUdeviceptr arr[1] = {out};
	ew_launch(kf[K_FILL], n, &v, arr);
}

/* out = self + alpha * other, other a Python scalar (CUDAFunctorOnSelf_add) */
static void add_scalar(CUdeviceptr out, CUdeviceptr self, float other, int n)
{
	float on_self[2] = {other, 1.0f};
	CUdeviceptr arr[2] = {out, self};
	ew_launch(kf[K_ADD_SCALAR], n, on_self, arr);
}

/* out = a * x (x a Python scalar: AUnaryFunctor<MulFunctor>) */
static void mul_scalar(CUdeviceptr out, CUdeviceptr x, float a, int n)
{
	struct {
		unsigned char f;
		float a;
	} fn = {0, a};
	CUdeviceptr arr[2] = {out, x};
	ew_launch(kf[K_MUL_BY], n, &fn, arr);
}

/* The closure of a capturing GPU_LAMBDA as nvcc passes it: the captured
 * float, then the 8 bytes nvcc appends (zero). */
struct hd_closure_f {
	float v;
	uint32_t pad;
	uint64_t tail;
};

/* ---- bf16 casts (autocast) */
static void to_bf16(CUdeviceptr out, CUdeviceptr in, int n)
{
	unsigned char f = 0;
	CUdeviceptr arr[2] = {out, in};
	ew_launch(kf[K_TO_BF16], n, &f, arr);
}

static void from_bf16(CUdeviceptr out, CUdeviceptr in, int n)
{
	unsigned char f = 0;
	CUdeviceptr arr[2] = {out, in};
	ew_launch(kf[K_FROM_BF16], n, &f, arr);
}

/* ---- GEMMs (cuBLASLt-style, opaque by-value parameters) */
struct gemm_params {
	CUdeviceptr a, b, c, bias, bias_grad, aux;
	int m, n, k, epilogue;
	unsigned char reserved[192];
};
#define EPI_BIAS 1
#define EPI_RELU 2
#define EPI_DRELU 4
#define EPI_BGRAD 8

static int use_bf16; /* --dtype bf16 */

/* which: K_GEMM_FWD / DGRAD / WGRAD; the bf16 kernel under autocast */
static void gemm(int which, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr bias, CUdeviceptr bgrad,
		 CUdeviceptr aux, int m, int n, int k, int epi)
{
	struct gemm_params p;
	memset(&p, 0, sizeof p);
	p.a = a, p.b = b, p.c = c, p.bias = bias, p.bias_grad = bgrad, p.aux = aux;
	p.m = m, p.n = n, p.k = k, p.epilogue = epi;
	void *params[1] = {&p};
	long threads = which == K_GEMM_WGRAD ? (long)m * (n + 1) : (long)m * n;
	CUfunction f = kf[which];
	if (use_bf16)
		f = kf[which == K_GEMM_FWD ? K_GEMM_FWD_BF16 : which == K_GEMM_DGRAD ? K_GEMM_DGRAD_BF16 : K_GEMM_WGRAD_BF16];
	CK(cuLaunchKernel(f, sample_blocks(threads, BLOCK), 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
}

/* ---- parameters */
struct param {
	int rows, cols;     /* W: [rows][cols]; bias: rows x 1 */
	size_t n;
	CUdeviceptr w, grad, m, v, step;
	CUdeviceptr w16;    /* autocast's bf16 copy, during one forward/backward */
	int has_grad, has_state;
};
static struct param P[MAX_PARAMS];
/* parameter order (model.parameters()): W0 b0 W1 b1 ... W150 b150 Wh bh */
#define PW(l) (&P[2 * (l)])
#define PB(l) (&P[2 * (l) + 1])
#define PWH (&P[2 * (LAYERS + 1)])
#define PBH (&P[2 * (LAYERS + 1) + 1])
/* the weight as the GEMMs see it: fp32, or its bf16 cast */
#define WOF(p) (use_bf16 ? (p)->w16 : (p)->w)

/* AccumulateGrad: the first gradient becomes .grad (stolen), later ones
 * are added into it and the new tensor is freed.  Under autocast the
 * GEMM's gradient is bf16: the cast's backward makes the fp32 one first. */
static void accumulate(struct param *p, CUdeviceptr newg)
{
	if (use_bf16) {
		CUdeviceptr g32 = ta_alloc(p->n * 4);
		from_bf16(g32, newg, (int)p->n);
		ta_free(newg);
		newg = g32;
	}
	if (!p->has_grad) {
		p->grad = newg;
		p->has_grad = 1;
		return;
	}
	add_into(p->grad, p->grad, newg, (int)p->n);
	ta_free(newg);
}

/* ---- GradScaler state */
static int use_scaler;
static CUdeviceptr scaler_scale, scaler_tracker; /* float, int32: created by the first scaler.scale */

/* ---- forward / backward */
struct acts {
	int rows;
	CUdeviceptr x, target;          /* input [rows][IN], target int64 [rows] */
	CUdeviceptr a[MAX_LAYERS + 1];  /* a[0] = h1; a[l] = relu(W_l h_l + b_l)  */
	CUdeviceptr h[MAX_LAYERS + 2];      /* h[1] = a[0]; h[l+1] = h[l] + a[l]      */
	CUdeviceptr logits, dlogits, loss_rows;
	float scale;
};

/* autocast: F.linear casts its weight and bias to bf16 (converting copies) */
static void cast_layer(int l)
{
	if (!use_bf16)
		return;
	for (int i = 2 * l; i < 2 * l + 2; i++) {
		P[i].w16 = ta_alloc(P[i].n * 2);
		to_bf16(P[i].w16, P[i].w, (int)P[i].n);
	}
}

static void forward(struct acts *A)
{
	int r = A->rows;
	size_t es = use_bf16 ? 2 : 4;
	CUdeviceptr x = A->x;
	if (use_bf16) { /* autocast: the input, then each layer's weight and bias as it runs */
		x = ta_alloc((size_t)r * IN * 2);
		to_bf16(x, A->x, r * IN);
	}
	cast_layer(0);
	A->a[0] = ta_alloc((size_t)r * D * es);
	gemm(K_GEMM_FWD, x, WOF(PW(0)), A->a[0], WOF(PB(0)), 0, 0, r, D, IN, EPI_BIAS | EPI_RELU);
	if (use_bf16) {
		ta_free(A->x); /* the bf16 copy is what backward keeps */
		A->x = x;
	}
	A->h[1] = A->a[0];
	for (int l = 1; l <= LAYERS; l++) {
		cast_layer(l);
		A->a[l] = ta_alloc((size_t)r * D * es);
		gemm(K_GEMM_FWD, A->h[l], WOF(PW(l)), A->a[l], WOF(PB(l)), 0, 0, r, D, D, EPI_BIAS | EPI_RELU);
		A->h[l + 1] = ta_alloc((size_t)r * D * es);
		if (use_bf16) {
			float alpha = 1.0f;
			CUdeviceptr arr[3] = {A->h[l + 1], A->h[l], A->a[l]};
			ew_launch(kf[K_ADD_BF16], r * D, &alpha, arr);
		} else {
			add_into(A->h[l + 1], A->h[l], A->a[l], r * D);
		}
	}
	cast_layer(LAYERS + 1);
	A->logits = ta_alloc((size_t)r * V * es);
	gemm(K_GEMM_FWD, A->h[LAYERS + 1], WOF(PWH), A->logits, WOF(PBH), 0, 0, r, V, D, EPI_BIAS);
	if (use_bf16) { /* cross_entropy runs in fp32 under autocast */
		CUdeviceptr l32 = ta_alloc((size_t)r * V * 4);
		from_bf16(l32, A->logits, r * V);
		ta_free(A->logits);
		A->logits = l32;
	}
	A->loss_rows = ta_alloc((size_t)r * 4);
	A->dlogits = ta_alloc((size_t)r * V * 4);
	int rows = r, classes = V;
	void *params[7] = {&A->logits, &A->target, &A->loss_rows, &A->dlogits, &rows, &classes, &A->scale};
	CK(cuLaunchKernel(kf[K_XENT], sample_blocks(r, BLOCK), 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
	ta_free(A->logits);
}

/* the 1048-byte ReduceOp of reduce_kernel, this sample's contents */
struct reduce_op {
	unsigned char ops[8];
	CUdeviceptr src, dst;
	uint32_t numel;
	unsigned char reserved[1048 - 28];
};

static void reduce(int which, CUdeviceptr dst, CUdeviceptr src, int n)
{
	static struct reduce_op red;
	memset(&red, 0, sizeof red);
	red.src = src;
	red.dst = dst;
	red.numel = (uint32_t)n;
	void *rp[1] = {&red};
	CK(cuLaunchKernel(kf[which], 1, 1, 1, MTA_BLOCK, 1, 1, 0, stream, rp, NULL));
}

/* scaler.scale(loss [/ accum]): the 0-dim loss (mean of the rows), divided
 * by the accumulation count, times the scale (a new 0-dim tensor that
 * backward starts from; its value is not used further). */
static void scaler_scale_loss(CUdeviceptr loss_rows, int rows, int accum)
{
	if (!scaler_scale) { /* _lazy_init_scale_growth_tracker */
		scaler_scale = ta_alloc(4);
		fill(scaler_scale, SCALER_INIT, 1);
		scaler_tracker = ta_alloc(4);
		int zero = 0;
		CUdeviceptr arr[1] = {scaler_tracker};
		ew_launch(kf[K_FILL_INT], 1, &zero, arr);
	}
	CUdeviceptr loss = ta_alloc(4);
	reduce(K_MEAN, loss, loss_rows, rows);
	if (accum > 1) { /* loss / accum: a * (1/b), b a CPU scalar */
		CUdeviceptr q = ta_alloc(4);
		struct {
			unsigned char f;
			float b;
		} fn = {0, 1.0f / (float)accum};
		CUdeviceptr arr[2] = {q, loss};
		ew_launch(kf[K_EW_DIV_SCALAR], 1, &fn, arr);
		ta_free(loss);
		loss = q;
	}
	CUdeviceptr scaled = ta_alloc(4);
	unsigned char f = 0;
	CUdeviceptr arr[3] = {scaled, loss, scaler_scale};
	ew_launch(kf[K_MUL], 1, &f, arr);
	ta_free(loss);
	ta_free(scaled); /* backward's graph holds what it needs (the scale) */
}

/* loss.backward(): runs on the autograd thread. */
static void backward(struct acts *A)
{
	int r = A->rows;
	size_t es = use_bf16 ? 2 : 4;
	CUdeviceptr dW, db, dh, t, dnext, dl = A->dlogits;
	if (use_scaler) { /* seed 1, MulBackward: grad * scale, the loss's backward reads it */
		CUdeviceptr ones = ta_alloc(4), g = ta_alloc(4);
		fill(ones, 1.0f, 1);
		unsigned char f = 0;
		CUdeviceptr arr[3] = {g, ones, scaler_scale};
		ew_launch(kf[K_MUL], 1, &f, arr);
		ta_free(ones);
		int n = r * V;
		void *sp[3] = {&dl, &g, &n};
		CK(cuLaunchKernel(kf[K_LOSS_GRAD_SCALE], sample_blocks(n, BLOCK), 1, 1, BLOCK, 1, 1, 0, stream, sp, NULL));
		ta_free(g);
	}
	if (use_bf16) { /* backward of the logits' cast to fp32 */
		CUdeviceptr d16 = ta_alloc((size_t)r * V * 2);
		to_bf16(d16, dl, r * V);
		ta_free(dl);
		dl = d16;
	}
	/* head */
	dW = ta_alloc((size_t)V * D * es);
	db = ta_alloc((size_t)V * es);
	gemm(K_GEMM_WGRAD, dl, A->h[LAYERS + 1], dW, 0, db, 0, V, D, r, EPI_BGRAD);
	accumulate(PWH, dW);
	accumulate(PBH, db);
	dh = ta_alloc((size_t)r * D * es);
	gemm(K_GEMM_DGRAD, dl, WOF(PWH), dh, 0, 0, 0, r, D, V, 0);
	ta_free(dl);
	ta_free(A->h[LAYERS + 1]);
	/* blocks, last first: h_{l+1} = h_l + relu(z_l) */
	for (int l = LAYERS; l >= 1; l--) {
		dW = ta_alloc((size_t)D * D * es);
		db = ta_alloc((size_t)D * es);
		gemm(K_GEMM_WGRAD, dh, A->h[l], dW, 0, db, A->a[l], D, D, r, EPI_DRELU | EPI_BGRAD);
		accumulate(PW(l), dW);
		accumulate(PB(l), db);
		t = ta_alloc((size_t)r * D * es);
		gemm(K_GEMM_DGRAD, dh, WOF(PW(l)), t, 0, 0, A->a[l], r, D, D, EPI_DRELU);
		dnext = ta_alloc((size_t)r * D * es);
		if (use_bf16) {
			float alpha = 1.0f;
			CUdeviceptr arr[3] = {dnext, dh, t};
			ew_launch(kf[K_ADD_BF16], r * D, &alpha, arr);
		} else {
			add_into(dnext, dh, t, r * D);
		}
		ta_free(t);
		ta_free(dh);
		ta_free(A->a[l]);
		if (l > 1)
			ta_free(A->h[l]);
		dh = dnext;
	}
	/* first layer: h1 = relu(W0 x + b0) */
	dW = ta_alloc((size_t)D * IN * es);
	db = ta_alloc((size_t)D * es);
	gemm(K_GEMM_WGRAD, dh, A->x, dW, 0, db, A->a[0], D, IN, r, EPI_DRELU | EPI_BGRAD);
	accumulate(PW(0), dW);
	accumulate(PB(0), db);
	ta_free(dh);
	ta_free(A->a[0]);
	ta_free(A->x);
	ta_free(A->target);
	if (use_bf16) /* the casts autograd saved are released */
		for (int i = 0; i < NPARAMS; i++)
			ta_free(P[i].w16);
}

/* ---- the autograd thread */
static pthread_mutex_t bw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bw_cv = PTHREAD_COND_INITIALIZER;
static struct acts *bw_job;
static int bw_done, bw_quit;

static void *autograd_thread(void *arg)
{
	(void)arg;
	CK(cuCtxSetCurrent(ctx));
	pthread_mutex_lock(&bw_mu);
	for (;;) {
		while (!bw_job && !bw_quit)
			pthread_cond_wait(&bw_cv, &bw_mu);
		if (bw_quit)
			break;
		struct acts *a = bw_job;
		pthread_mutex_unlock(&bw_mu);
		backward(a);
		pthread_mutex_lock(&bw_mu);
		bw_job = NULL;
		bw_done = 1;
		pthread_cond_broadcast(&bw_cv);
	}
	pthread_mutex_unlock(&bw_mu);
	return NULL;
}

/* The main thread blocks in loss.backward() while the engine works. */
static void run_backward(struct acts *a)
{
	pthread_mutex_lock(&bw_mu);
	bw_job = a;
	bw_done = 0;
	pthread_cond_broadcast(&bw_cv);
	while (!bw_done)
		pthread_cond_wait(&bw_cv, &bw_mu);
	pthread_mutex_unlock(&bw_mu);
}

/* ---- lists */
static CUdeviceptr L_params[MAX_PARAMS], L_grads[MAX_PARAMS], L_m[MAX_PARAMS], L_v[MAX_PARAMS], L_tmp[MAX_PARAMS];
static CUdeviceptr L_steps[MAX_PARAMS], L_found[MAX_PARAMS];
static size_t L_numel[MAX_PARAMS], L_one[MAX_PARAMS];
static float L_scalars[MAX_PARAMS];

static void gather_lists(void)
{
	for (int i = 0; i < NPARAMS; i++) {
		L_params[i] = P[i].w;
		L_grads[i] = P[i].grad;
		L_m[i] = P[i].m;
		L_v[i] = P[i].v;
		L_steps[i] = P[i].step;
		L_numel[i] = P[i].n;
		L_one[i] = 1;
	}
}

/* ---- clip_grad_norm_(params, max_norm), foreach */
static CUdeviceptr *pinned_offsets;

static void clip_grad_norm(float max_norm)
{
	static CUdeviceptr norms[MAX_PARAMS];
	int n = NPARAMS;
	/* _foreach_norm: per-chunk partial sums, then one cleanup block per
	 * tensor, TensorListAddresses holding 3200 (CUDA 13) or 400 outputs */
	int per_cleanup = layout_cuda12 ? 400 : 3200;
	int64_t *off = (int64_t *)pinned_offsets;
	off[0] = 0;
	for (int i = 0; i < n; i++)
		off[i + 1] = off[i] + (int64_t)((L_numel[i] + CHUNK - 1) / CHUNK);
	CUdeviceptr d_off = ta_alloc((size_t)(n + 1) * 8);
	CK(cuMemcpyHtoDAsync(d_off, off, (size_t)(n + 1) * 8, stream));
	CUdeviceptr partial = ta_alloc((size_t)off[n] * 4);
	for (int i = 0; i < n; i++)
		norms[i] = ta_alloc(4);
	struct mta_call c = {kf[K_LPNORM], 1, MTA_PLAIN, {L_grads}, L_numel, n, NULL, NULL, {&partial, &d_off}, 2};
	mta_apply(&c);
	static unsigned char addrs[25600];
	for (int base = 0; base < n; base += per_cleanup) {
		int cnt = n - base < per_cleanup ? n - base : per_cleanup;
		memcpy(addrs, &norms[base], (size_t)cnt * 8);
		int toff = base;
		void *params[4] = {&partial, addrs, &d_off, &toff};
		CK(cuLaunchKernel(kf[K_CLEANUP], (unsigned)cnt, 1, 1, MTA_BLOCK, 1, 1, 0, stream, params, NULL));
	}
	ta_free(partial);
	ta_free(d_off);
	/* total_norm = vector_norm(stack(norms)) */
	CUdeviceptr stacked = ta_alloc((size_t)n * 4);
	static unsigned char cat_meta[2720];
	unsigned char os[32] = {0};
	for (int base = 0; base < n; base += 128) {
		int cnt = n - base < 128 ? n - base : 128;
		memset(cat_meta, 0, sizeof cat_meta);
		for (int i = 0; i < cnt; i++) {
			uint32_t offv = (uint32_t)(base + i), one = 1;
			memcpy(cat_meta + 8 * i, &norms[base + i], 8);
			memcpy(cat_meta + 1024 + 4 * i, &offv, 4);   /* offset    */
			memcpy(cat_meta + 1536 + 4 * i, &one, 4);    /* dimSize   */
			memcpy(cat_meta + 2048 + 4 * i, &one, 4);    /* nElements */
			cat_meta[2560 + i] = 1;                      /* isContiguous */
		}
		int concat_dim = 0;
		unsigned dim_stride = 1;
		void *params[5] = {&stacked, cat_meta, os, &concat_dim, &dim_stride};
		CK(cuLaunchKernel(kf[K_CAT], 1, (unsigned)cnt, 1, 128, 1, 1, 0, stream, params, NULL));
	}
	for (int i = 0; i < n; i++)
		ta_free(norms[i]);
	CUdeviceptr total = ta_alloc(4);
	reduce(K_VNORM, total, stacked, n);
	ta_free(stacked);
	/* clip_coef = max_norm / (total_norm + 1e-6); clamped to 1 */
	CUdeviceptr t1 = ta_alloc(4), coef = ta_alloc(4), clamped = ta_alloc(4);
	add_scalar(t1, total, 1e-6f, 1);
	struct {
		unsigned char f;
		float a;
	} aun = {0, max_norm};
	CUdeviceptr arr3[2] = {coef, t1};
	ew_launch(kf[K_SCALAR_DIV], 1, &aun, arr3);
	float one = 1.0f;
	int n1 = 1;
	void *cp[4] = {&clamped, &coef, &one, &n1};
	CK(cuLaunchKernel(kf[K_CLAMP], 1, 1, 1, BLOCK, 1, 1, 0, stream, cp, NULL));
	/* _foreach_mul_(grads, clip_coef_clamped) */
	static unsigned char op;
	float alpha = 1.0f;
	struct mta_call m = {kf[K_CLIP_MUL], 1, MTA_PLAIN, {L_grads}, L_numel, n, NULL, NULL, {&op, &clamped, &alpha}, 3};
	mta_apply(&m);
	ta_free(total);
	ta_free(t1);
	ta_free(coef);
	ta_free(clamped);
}

/* ---- optimizers */
enum { OPT_ADAMW, OPT_ADAM, OPT_SGD };
enum { IMPL_FOREACH, IMPL_FUSED, IMPL_FORLOOP };
static int opt_steps; /* optimizer.step() calls that updated (skipped steps do not count) */

/* _init_group of Adam/AdamW: exp_avg, exp_avg_sq = zeros_like(p); fused:
 * state["step"] = zeros((), float32, device) first */
static void adam_init_state(int fused)
{
	for (int i = 0; i < NPARAMS; i++) {
		if (fused) {
			P[i].step = ta_alloc(4);
			fill(P[i].step, 0.0f, 1);
		}
		P[i].m = ta_alloc(P[i].n * 4);
		fill(P[i].m, 0.0f, (int)P[i].n);
		P[i].v = ta_alloc(P[i].n * 4);
		fill(P[i].v, 0.0f, (int)P[i].n);
		P[i].has_state = 1;
	}
}

/* _multi_tensor_adam (foreach=True, capturable=False) */
static void adam_foreach(int adamw, int step, float lr, float b1, float b2, float eps, float wd)
{
	static unsigned char op;
	int n = NPARAMS;
	if (!P[0].has_state)
		adam_init_state(0);
	gather_lists();
	if (adamw && wd != 0) {
		float s = 1.0f - lr * wd;
		struct mta_call c = {kf[K_MUL_SCALAR], 1, MTA_PLAIN, {L_params}, L_numel, n, NULL, NULL, {&op, &s}, 2};
		mta_apply(&c);
	}
	float w = 1.0f - b1;
	struct mta_call lerp = {kf[K_LERP], 2, MTA_PLAIN, {L_m, L_grads}, L_numel, n, NULL, NULL, {&op, &w}, 2};
	mta_apply(&lerp);
	struct mta_call mul = {kf[K_MUL_SCALAR], 1, MTA_PLAIN, {L_v}, L_numel, n, NULL, NULL, {&op, &b2}, 2};
	mta_apply(&mul);
	float val = 1.0f - b2;
	struct mta_call acm = {kf[K_ADDCMUL], 3, MTA_PLAIN, {L_v, L_grads, L_grads}, L_numel, n, NULL, NULL, {&op, &val}, 2};
	mta_apply(&acm);
	double bc1 = 1.0 - pow(b1, step), bc2 = 1.0 - pow(b2, step);
	/* exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs): new tensors */
	for (int i = 0; i < n; i++)
		L_tmp[i] = ta_alloc(P[i].n * 4);
	struct mta_call sq = {kf[K_SQRT], 2, MTA_PLAIN, {L_v, L_tmp}, L_numel, n, NULL, NULL, {&op}, 1};
	mta_apply(&sq);
	for (int i = 0; i < n; i++)
		L_scalars[i] = (float)sqrt(bc2);
	struct mta_call dv = {kf[K_DIV_SL], 1, MTA_SCALARLIST, {L_tmp}, L_numel, n, L_scalars, NULL, {&op}, 1};
	mta_apply(&dv);
	struct mta_call ae = {kf[K_ADD_EPS], 1, MTA_PLAIN, {L_tmp}, L_numel, n, NULL, NULL, {&op, &eps}, 2};
	mta_apply(&ae);
	for (int i = 0; i < n; i++)
		L_scalars[i] = (float)(-(lr / bc1));
	struct mta_call acd = {kf[K_ADDCDIV_SL], 3, MTA_SCALARLIST, {L_params, L_m, L_tmp}, L_numel, n, L_scalars, NULL,
			       {&op}, 1};
	mta_apply(&acd);
	for (int i = 0; i < n; i++)
		ta_free(L_tmp[i]);
}

/* _single_tensor_adam (foreach=False, capturable=False; AdamW is Adam with
 * decoupled weight decay): per parameter, elementwise kernels */
static void adam_forloop(int adamw, int step, float lr, float b1, float b2, float eps, float wd)
{
	if (!P[0].has_state)
		adam_init_state(0);
	for (int i = 0; i < NPARAMS; i++) {
		struct param *p = &P[i];
		int n = (int)p->n;
		if (adamw && wd != 0) /* param.mul_(1 - lr * weight_decay) */
			mul_scalar(p->w, p->w, (float)(1.0 - (double)lr * wd), n);
		/* exp_avg.lerp_(grad, 1 - beta1) */
		struct hd_closure_f cl = {(float)(1.0 - (double)b1), 0, 0};
		CUdeviceptr a3[3] = {p->m, p->m, p->grad};
		ew_launch(kf[K_EW_LERP], n, &cl, a3);
		/* exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2) */
		mul_scalar(p->v, p->v, b2, n);
		cl.v = (float)(1.0 - (double)b2);
		CUdeviceptr a4[4] = {p->v, p->v, p->grad, p->grad};
		ew_launch(kf[K_EW_ADDCMUL], n, &cl, a4);
		double bc1 = 1.0 - pow(b1, step), bc2 = 1.0 - pow(b2, step);
		double step_size = lr / bc1, bc2_sqrt = sqrt(bc2);
		/* denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps) */
		CUdeviceptr t1 = ta_alloc(p->n * 4), t2 = ta_alloc(p->n * 4);
		unsigned char f = 0;
		CUdeviceptr s2[2] = {t1, p->v};
		ew_launch(kf[K_EW_SQRT], n, &f, s2);
		struct {
			unsigned char f;
			float b;
		} inv = {0, 1.0f / (float)bc2_sqrt}; /* a CPU-scalar divisor: a * (1/b) */
		CUdeviceptr d2[2] = {t2, t1};
		ew_launch(kf[K_EW_DIV_SCALAR], n, &inv, d2);
		ta_free(t1);
		add_scalar(t2, t2, eps, n);
		/* param.addcdiv_(exp_avg, denom, value=-step_size) */
		cl.v = (float)(-step_size);
		CUdeviceptr c4[4] = {p->w, p->w, p->m, t2};
		ew_launch(kf[K_EW_ADDCDIV], n, &cl, c4);
		ta_free(t2);
	}
}

/* _fused_adam / _fused_adamw: torch._foreach_add_(state_steps, 1), one
 * multi-tensor launch (per 252, or 36, tensors), and with found_inf
 * _foreach_sub_(state_steps, [found_inf] * n). */
static void adam_fused(int adamw, float lr, float b1, float b2, float eps, float wd, CUdeviceptr grad_scale,
		       CUdeviceptr found_inf)
{
	static unsigned char op;
	int n = NPARAMS;
	if (!P[0].has_state)
		adam_init_state(1);
	gather_lists();
	float one = 1.0f;
	struct mta_call inc = {kf[K_ADD_EPS], 1, MTA_PLAIN, {L_steps}, L_one, n, NULL, NULL, {&op, &one}, 2};
	mta_apply(&inc);
	CUdeviceptr lr_ptr = 0;
	double dlr = lr, db1 = b1, db2 = b2, dwd = adamw ? wd : 0.0, deps = eps;
	unsigned char maximize = 0;
	struct mta_call fa = {kf[adamw ? K_FUSED_ADAMW : K_FUSED_ADAM], 4, MTA_FUSED, {L_params, L_grads, L_m, L_v},
			      L_numel, n, NULL, L_steps,
			      {&lr_ptr, &dlr, &db1, &db2, &dwd, &deps, &maximize, &grad_scale, &found_inf}, 9};
	mta_apply(&fa);
	if (found_inf) {
		for (int i = 0; i < n; i++)
			L_found[i] = found_inf;
		float alpha = 1.0f;
		struct mta_call sub = {kf[K_SUB_LIST], 2, MTA_PLAIN, {L_steps, L_found}, L_one, n, NULL, NULL, {&op, &alpha}, 2};
		mta_apply(&sub);
	}
}

/* _multi_tensor_sgd (foreach=True) */
static void sgd_foreach(float lr, float momentum)
{
	static unsigned char op;
	int n = NPARAMS;
	gather_lists();
	if (momentum == 0) {
		float a = -lr;
		struct mta_call c = {kf[K_ADD_ALPHA], 2, MTA_PLAIN, {L_params, L_grads}, L_numel, n, NULL, NULL, {&op, &a}, 2};
		mta_apply(&c);
		return;
	}
	if (!P[0].has_state) { /* buf = torch.clone(grad).detach(): a device-to-device copy */
		for (int i = 0; i < n; i++) {
			P[i].m = ta_alloc(P[i].n * 4);
			CK(cuMemcpyDtoDAsync(P[i].m, P[i].grad, P[i].n * 4, stream));
			P[i].has_state = 1;
		}
		gather_lists();
	} else {
		struct mta_call mu = {kf[K_MUL_SCALAR], 1, MTA_PLAIN, {L_m}, L_numel, n, NULL, NULL, {&op, &momentum}, 2};
		mta_apply(&mu);
		float one = 1.0f;
		struct mta_call ad = {kf[K_ADD_ALPHA], 2, MTA_PLAIN, {L_m, L_grads}, L_numel, n, NULL, NULL, {&op, &one}, 2};
		mta_apply(&ad);
	}
	float a = -lr;
	struct mta_call up = {kf[K_ADD_ALPHA], 2, MTA_PLAIN, {L_params, L_m}, L_numel, n, NULL, NULL, {&op, &a}, 2};
	mta_apply(&up);
}

/* _single_tensor_sgd (foreach=False) */
static void sgd_forloop(float lr, float momentum)
{
	for (int i = 0; i < NPARAMS; i++) {
		struct param *p = &P[i];
		int n = (int)p->n;
		CUdeviceptr g = p->grad;
		if (momentum != 0) {
			if (!p->has_state) { /* buf = torch.clone(grad).detach() */
				p->m = ta_alloc(p->n * 4);
				CK(cuMemcpyDtoDAsync(p->m, p->grad, p->n * 4, stream));
				p->has_state = 1;
			} else { /* buf.mul_(momentum).add_(grad, alpha=1 - dampening) */
				mul_scalar(p->m, p->m, momentum, n);
				add_alpha(p->m, p->m, p->grad, 1.0f, n);
			}
			g = p->m;
		}
		add_alpha(p->w, p->w, g, -lr, n); /* param.add_(grad, alpha=-lr) */
	}
}

/* _fused_sgd: momentum buffers empty_like(grad) in the first step
 * (is_first_step: the kernel copies the gradient into them) */
static void sgd_fused(float lr, float momentum, CUdeviceptr grad_scale, CUdeviceptr found_inf)
{
	static unsigned char op;
	int n = NPARAMS, first = 0;
	if (momentum != 0 && !P[0].has_state) {
		for (int i = 0; i < n; i++) {
			P[i].m = ta_alloc(P[i].n * 4);
			P[i].has_state = 1;
		}
		first = 1;
	}
	gather_lists();
	double wd = 0, dm = momentum, dlr = lr, damp = 0;
	CUdeviceptr lr_ptr = 0;
	unsigned char nesterov = 0, maximize = 0, is_first = (unsigned char)first;
	struct mta_call c = {kf[momentum != 0 ? K_FUSED_SGD3 : K_FUSED_SGD2], momentum != 0 ? 3 : 2, MTA_PLAIN,
			     {L_params, L_grads, L_m}, L_numel, n, NULL, NULL,
			     {&wd, &dm, &lr_ptr, &dlr, &damp, &nesterov, &maximize, &is_first, &grad_scale, &found_inf}, 10};
	(void)op;
	mta_apply(&c);
}

static void zero_grad(int set_to_none, int impl)
{
	int n = NPARAMS;
	if (set_to_none) {
		for (int i = 0; i < n; i++)
			if (P[i].has_grad) {
				ta_free(P[i].grad);
				P[i].has_grad = 0;
			}
		return;
	}
	for (int i = 0; i < n; i++)
		if (!P[i].has_grad)
			return; /* nothing to zero before the first backward */
	if (impl == IMPL_FORLOOP) { /* p.grad.zero_() */
		for (int i = 0; i < n; i++)
			fill(P[i].grad, 0.0f, (int)P[i].n);
		return;
	}
	gather_lists();
	struct mta_call z = {kf[K_ZERO], 1, MTA_PLAIN, {L_grads}, L_numel, n, NULL, NULL, {NULL}, 0};
	mta_apply(&z);
}

/* ---- GradScaler */
enum { STAGE_READY, STAGE_UNSCALED };

/* _unscale_grads_(optimizer, inv_scale, found_inf): the AMP kernel over the
 * gradients (in place), setting found_inf */
static void amp_unscale(CUdeviceptr inv_scale, CUdeviceptr found_inf)
{
	gather_lists();
	struct mta_call c = {kf[K_AMP_UNSCALE], 1, MTA_PLAIN, {L_grads}, L_numel, NPARAMS, NULL, NULL, {NULL}, 1};
	struct {
		CUdeviceptr found_inf, inv_scale;
		uint64_t tail;
	} closure = {found_inf, inv_scale, 0};
	c.extra[0] = &closure;
	mta_apply(&c);
}

/* scaler.unscale_(optimizer): inv_scale = scale.double().reciprocal().float(),
 * found_inf = full((), 0.), _unscale_grads_ */
static CUdeviceptr scaler_unscale(void)
{
	CUdeviceptr d = ta_alloc(8), r = ta_alloc(8), inv = ta_alloc(4), found = ta_alloc(4);
	unsigned char f = 0, toc = 0;
	int32_t n = 1;
	struct {
		int8_t dtype;
		uint8_t pad[3];
		uint32_t size;
	} from_f = {6, {0}, 4}, to_d = {7, {0}, 8}, from_d = {7, {0}, 8}, to_f = {6, {0}, 4};
	CUdeviceptr a1[2] = {d, scaler_scale};
	void *p1[7] = {&n, &f, a1, &toc, &toc, &from_f, &to_d};
	CK(cuLaunchKernel(kf[K_TO_DOUBLE], 1, 1, 1, BLOCK, 1, 1, 0, stream, p1, NULL));
	CUdeviceptr a2[2] = {r, d};
	ew_launch(kf[K_RECIPROCAL], 1, &f, a2);
	ta_free(d);
	CUdeviceptr a3[2] = {inv, r};
	void *p3[7] = {&n, &f, a3, &toc, &toc, &from_d, &to_f};
	CK(cuLaunchKernel(kf[K_TO_FLOAT], 1, 1, 1, BLOCK, 1, 1, 0, stream, p3, NULL));
	ta_free(r);
	fill(found, 0.0f, 1);
	amp_unscale(inv, found);
	ta_free(inv);
	return found;
}

static void scaler_update(CUdeviceptr found_inf)
{
	double growth = SCALER_GROWTH, backoff = SCALER_BACKOFF;
	int interval = SCALER_INTERVAL;
	void *p[6] = {&scaler_scale, &scaler_tracker, &found_inf, &growth, &backoff, &interval};
	CK(cuLaunchKernel(kf[K_AMP_UPDATE], 1, 1, 1, 1, 1, 1, 0, stream, p, NULL));
}

/* --inf-steps: "none" or a comma-separated list of steps */
static int parse_inf_steps(const char *s, int *out, int max)
{
	int n = 0;
	if (!strcmp(s, "none"))
		return 0;
	for (const char *q = s; *q;) {
		char *end;
		long v = strtol(q, &end, 10);
		if (end == q || v < 1 || v > 1000000000 || (*end && *end != ',') || n == max)
			sample_die(2, "--inf-steps wants `none` or comma-separated step numbers, got '%s'", s);
		out[n++] = (int)v;
		q = *end ? end + 1 : end;
	}
	return n;
}

static void load_module_image(CUmodule *mod)
{
	const void *image = samples_obj_torchlike_kernels_fatbin;
	if (layout_cuda12) { /* the CUDA 12 build: libtorchlike_cuda12.so next to this program */
		char exe[4096], path[4200];
		ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (len <= 0)
			sample_die(1, "cannot find this program's path (/proc/self/exe)");
		exe[len] = 0;
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		snprintf(path, sizeof path, "%s/libtorchlike_cuda12.so", exe);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			sample_die(1, "--layout cuda12 needs %s: %s (make samples)", path, dlerror());
		image = dlsym(h, "samples_obj_torchlike_kernels_cuda12_fatbin");
		if (!image)
			sample_die(1, "%s has no samples_obj_torchlike_kernels_cuda12_fatbin; rebuild it (make samples)", path);
	}
	CK(cuModuleLoadData(mod, image));
}

#define USAGE "torchlike --data PATH [--steps N] [--batch B] [--lr X] [--seed S] [--save PATH] " \
	      "[--optim adamw|adam|sgd] [--impl foreach|fused|forloop] [--clip MAXNORM] [--scaler 0|1] " \
	      "[--inf-steps LIST|none] [--set-to-none 0|1] [--accum K] [--alloc caching|expandable|async] " \
	      "[--layout cuda13|cuda12] [--dtype fp32|bf16] [--momentum M] [--weight-decay W] [--layers N]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL, *inf_arg = "5,6,19,34,50";
	int steps = 60, batch = 16, accum = 1, optim = OPT_ADAMW, impl = IMPL_FOREACH, set_to_none = 1;
	int alloc_mode = 0, dtype = 0;
	float lr = 3e-3f, clip = 0, momentum = 0.9f, wd = 0.01f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 4096, NULL, 0},
		{"--accum", SAMPLE_OPT_INT, &accum, 1, 64, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 10, NULL, 0},
		{"--momentum", SAMPLE_OPT_FLOAT, &momentum, 0, 1, NULL, 0},
		{"--weight-decay", SAMPLE_OPT_FLOAT, &wd, 0, 1, NULL, 0},
		{"--clip", SAMPLE_OPT_FLOAT, &clip, 0, 1e6, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
		{"--optim", SAMPLE_OPT_CHOICE, &optim, 0, 0, "adamw|adam|sgd", 0},
		{"--impl", SAMPLE_OPT_CHOICE, &impl, 0, 0, "foreach|fused|forloop", 0},
		{"--scaler", SAMPLE_OPT_INT, &use_scaler, 0, 1, NULL, 0},
		{"--inf-steps", SAMPLE_OPT_STR, &inf_arg, 0, 0, NULL, 0},
		{"--set-to-none", SAMPLE_OPT_INT, &set_to_none, 0, 1, NULL, 0},
		{"--alloc", SAMPLE_OPT_CHOICE, &alloc_mode, 0, 0, "caching|expandable|async", 0},
		{"--layout", SAMPLE_OPT_CHOICE, &layout_cuda12, 0, 0, "cuda13|cuda12", 0},
		{"--dtype", SAMPLE_OPT_CHOICE, &dtype, 0, 0, "fp32|bf16", 0},
		{"--layers", SAMPLE_OPT_INT, &LAYERS, 1, MAX_LAYERS, NULL, 0},
	};
	sample_prog = "torchlike";
	sample_parse_args(argc, argv, opts, sizeof opts / sizeof *opts, USAGE);
	static int inf_steps[1024];
	int n_inf = use_scaler ? parse_inf_steps(inf_arg, inf_steps, 1024) : 0;
	use_bf16 = dtype == 1;
	NPARAMS = 2 * LAYERS + 4;

	struct sample_data data;
	sample_data_open(&data, data_path);
	if (data.context != IN)
		sample_die(1, "%s: records hold %u context bytes, torchlike needs %d (build/data/mlp.rec)",
			   data_path, data.context, IN);

	CUdevice dev;
	CUmodule mod;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	load_module_image(&mod);
	sample_get_kernels(mod, kernels, sizeof kernels / sizeof *kernels);
	ta_init((enum ta_mode)alloc_mode, stream);
	CK(cuMemAllocHost((void **)&pinned_offsets, (MAX_PARAMS + 1) * 8));
	float *h_found;
	CK(cuMemAllocHost((void **)&h_found, 4));

	/* parameters: torch.nn.Linear's init, U(-1/sqrt(in), 1/sqrt(in)) */
	struct sample_rng rng;
	sample_rng_init(&rng, seed, 0);
	size_t total = 0;
	for (int i = 0; i < NPARAMS; i++) {
		int layer = i / 2, is_bias = i % 2;
		int out = layer == LAYERS + 1 ? V : D, in = layer == 0 ? IN : D;
		P[i].rows = out;
		P[i].cols = is_bias ? 1 : in;
		P[i].n = (size_t)P[i].rows * P[i].cols;
		total += P[i].n;
	}
	float *host = malloc(total * 4);
	unsigned char *recs = malloc((size_t)batch * data.record_bytes);
	float *hx = malloc((size_t)batch * IN * 4), *hloss = malloc((size_t)batch * 4);
	int64_t *hy = malloc((size_t)batch * 8);
	if (!host || !recs || !hx || !hy || !hloss)
		sample_die(1, "out of host memory");
	for (int i = 0, o = 0; i < NPARAMS; i++) {
		int in = (i / 2) == 0 ? IN : D;
		float s = 1.0f / sqrtf((float)in);
		if (i / 2 >= 1 && i / 2 <= LAYERS)
			s *= 0.02f; /* residual blocks start near the identity (150 of them) */
		sample_rng_uniform(&rng, host + o, P[i].n, s);
		P[i].w = ta_alloc(P[i].n * 4);
		CK(cuMemcpyHtoD(P[i].w, host + o, P[i].n * 4));
		o += (int)P[i].n;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, autograd_thread, NULL))
		sample_die(1, "cannot start the autograd thread");

	double t0 = sample_now();
	int skipped_total = 0;
	for (int step = 1; step <= steps; step++) {
		int poison = 0;
		for (int i = 0; i < n_inf; i++)
			poison |= inf_steps[i] == step;
		zero_grad(set_to_none, impl);
		double loss = 0;
		for (int k = 0; k < accum; k++) {
			struct acts A;
			sample_data_read(&data, recs, (size_t)batch);
			for (int b = 0; b < batch; b++) {
				const unsigned char *r = recs + (size_t)b * data.record_bytes;
				for (int j = 0; j < IN; j++)
					hx[b * IN + j] = r[j] / 96.0f - 0.5f;
				hy[b] = r[IN];
			}
			if (poison && k == 0)
				hx[0] = INFINITY; /* a corrupt record (see --inf-steps) */
			A.rows = batch;
			A.scale = 1.0f / (float)(batch * accum);
			A.x = ta_alloc((size_t)batch * IN * 4);
			A.target = ta_alloc((size_t)batch * 8);
			CK(cuMemcpyHtoDAsync(A.x, hx, (size_t)batch * IN * 4, stream));
			CK(cuMemcpyHtoDAsync(A.target, hy, (size_t)batch * 8, stream));
			forward(&A);
			CUdeviceptr lr_rows = A.loss_rows;
			if (use_scaler)
				scaler_scale_loss(lr_rows, batch, accum);
			run_backward(&A);
			CK(cuMemcpyDtoHAsync(hloss, lr_rows, (size_t)batch * 4, stream));
			CK(cuStreamSynchronize(stream));
			ta_free(lr_rows);
			for (int b = 0; b < batch; b++)
				loss += hloss[b];
		}
		int stage = STAGE_READY, skipped = 0;
		CUdeviceptr found_inf = 0;
		if (use_scaler && clip > 0) { /* scaler.unscale_(opt) before clipping */
			found_inf = scaler_unscale();
			stage = STAGE_UNSCALED;
		}
		if (clip > 0) {
			gather_lists();
			clip_grad_norm(clip);
		}
		float eff_wd = optim == OPT_ADAMW ? wd : 0.0f;
		if (use_scaler && impl == IMPL_FUSED) {
			/* scaler.step with _step_supports_amp_scaling */
			if (stage == STAGE_READY) { /* _check_inf_per_device: inv_scale 1 */
				CUdeviceptr one = ta_alloc(4);
				fill(one, 1.0f, 1);
				found_inf = ta_alloc(4);
				fill(found_inf, 0.0f, 1);
				amp_unscale(one, found_inf);
				ta_free(one);
			}
			CUdeviceptr found_sum = ta_alloc(4), grad_scale = 0;
			add_scalar(found_sum, found_inf, 0.0f, 1); /* sum([found_inf]) = 0 + found_inf */
			if (stage == STAGE_READY) { /* optimizer.grad_scale = scale * 1 */
				grad_scale = ta_alloc(4);
				mul_scalar(grad_scale, scaler_scale, 1.0f, 1);
			}
			if (optim == OPT_SGD)
				sgd_fused(lr, momentum, grad_scale, found_sum);
			else
				adam_fused(optim == OPT_ADAMW, lr, 0.9f, 0.999f, 1e-8f, eff_wd, grad_scale, found_sum);
			ta_free(found_sum);
			if (grad_scale)
				ta_free(grad_scale);
			scaler_update(found_inf);
			/* the script's log line: found_inf read after the step */
			CK(cuMemcpyDtoHAsync(h_found, found_inf, 4, stream));
			CK(cuStreamSynchronize(stream));
			skipped = *h_found != 0;
		} else {
			if (use_scaler) {
				if (stage == STAGE_READY)
					found_inf = scaler_unscale();
				/* _maybe_opt_step: found_inf.item() */
				CK(cuMemcpyDtoHAsync(h_found, found_inf, 4, stream));
				CK(cuStreamSynchronize(stream));
				skipped = *h_found != 0;
			}
			if (!skipped) {
				opt_steps++;
				if (optim == OPT_SGD) {
					if (impl == IMPL_FUSED)
						sgd_fused(lr, momentum, 0, 0);
					else if (impl == IMPL_FORLOOP)
						sgd_forloop(lr, momentum);
					else
						sgd_foreach(lr, momentum);
				} else if (impl == IMPL_FUSED) {
					adam_fused(optim == OPT_ADAMW, lr, 0.9f, 0.999f, 1e-8f, eff_wd, 0, 0);
				} else if (impl == IMPL_FORLOOP) {
					adam_forloop(optim == OPT_ADAMW, opt_steps, lr, 0.9f, 0.999f, 1e-8f, eff_wd);
				} else {
					adam_foreach(optim == OPT_ADAMW, opt_steps, lr, 0.9f, 0.999f, 1e-8f, eff_wd);
				}
			}
			if (use_scaler)
				scaler_update(found_inf);
		}
		if (found_inf)
			ta_free(found_inf);
		if (isnan(loss))
			printf("step %d loss nan\n", step);
		else
			printf("step %d loss %.6f\n", step, loss / (batch * accum));
		if (skipped) {
			printf("step %d skipped (inf)\n", step);
			skipped_total++;
		}
		fflush(stdout);
	}
	CK(cuStreamSynchronize(stream));
	double t1 = sample_now();

	pthread_mutex_lock(&bw_mu);
	bw_quit = 1;
	pthread_cond_broadcast(&bw_cv);
	pthread_mutex_unlock(&bw_mu);
	pthread_join(th, NULL);

	if (save_path) {
		for (int i = 0, o = 0; i < NPARAMS; i++) {
			CK(cuMemcpyDtoH(host + o, P[i].w, P[i].n * 4));
			o += (int)P[i].n;
		}
		sample_save(save_path, host, total);
	}
	struct ta_stats st;
	ta_stats(&st);
	fprintf(stderr, "torchlike: %d parameter tensors, %zu segments/pages, %zu bytes reserved, %zu live blocks\n",
		NPARAMS, st.segments, st.reserved_bytes, st.live_blocks);
	fprintf(stderr, "torchlike: %lu multi-tensor launches (%s layout)\n", mta_launches,
		layout_cuda12 ? "CUDA 12" : "CUDA 13");
	if (use_scaler)
		fprintf(stderr, "torchlike: GradScaler skipped %d of %d steps\n", skipped_total, steps);
	sample_report(dev, steps, t1 - t0);
	sample_data_close(&data);
	sample_rng_close(&rng);
	free(host);
	free(recs);
	free(hx);
	free(hy);
	free(hloss);
	return 0;
}
