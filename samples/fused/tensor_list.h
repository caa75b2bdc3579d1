/* SPDX-License-Identifier: MIT
 *
 * tensor_list.h - the by-value argument of samples/fused's multi-tensor
 * optimizer kernel, shared by the host code (C) and the kernel (C++).
 *
 * Modelled on PyTorch's TensorListMetadata (ATen/native/cuda/
 * MultiTensorApply.cuh): for depth 4 (param, grad, exp_avg, exp_avg_sq) up to
 * 36 tensors and 320 blocks per launch; block b works on chunk
 * block_to_chunk[b] (MTA_CHUNK_SIZE elements) of tensor block_to_tensor[b].
 * The struct travels in the kernel's parameter area (2904 bytes).
 *
 * Contract: plain data, identical layout in C and C++ (checked by the
 * static assertions on both sides).
 */
#ifndef SAMPLES_FUSED_TENSOR_LIST_H
#define SAMPLES_FUSED_TENSOR_LIST_H

#define MTA_DEPTH 4
#define MTA_MAX_TENSORS 36
#define MTA_MAX_BLOCKS 320
#define MTA_CHUNK_SIZE 2048
#define MTA_BLOCK_THREADS 256
#define MTA_STRUCT_BYTES 2904

/* The C view of TensorListMetadata<4> (see kernels.cu). */
struct tensor_list_metadata4 {
	void *addresses[MTA_DEPTH][MTA_MAX_TENSORS]; /* [0] param f32, [1] grad bf16,
							[2] exp_avg f32, [3] exp_avg_sq f32 */
	int sizes[MTA_MAX_TENSORS];                  /* elements of each tensor          */
	unsigned char block_to_tensor[MTA_MAX_BLOCKS];
	int block_to_chunk[MTA_MAX_BLOCKS];
	int start_tensor_this_launch;
};

#endif /* SAMPLES_FUSED_TENSOR_LIST_H */
