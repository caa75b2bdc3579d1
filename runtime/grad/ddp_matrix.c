/* SPDX-License-Identifier: MIT
 *
 * ddp_matrix.c - matrix extents for the cuBLAS output declarations
 * (ddp_matrix.h).
 */
#include "ddp_matrix.h"

#include <library_types.h>

uint64_t ddp_matrix_bytes(int64_t inner, int64_t outer, int64_t ld, size_t es, int64_t batch, int64_t stride)
{
	uint64_t span, skip;

	if (inner <= 0 || outer <= 0 || batch <= 0 || ld < inner || stride < 0 || !es)
		return 0;
	if (__builtin_mul_overflow((uint64_t)(outer - 1), (uint64_t)ld, &span) ||
	    __builtin_add_overflow(span, (uint64_t)inner, &span) ||
	    __builtin_mul_overflow((uint64_t)(batch - 1), (uint64_t)stride, &skip) ||
	    __builtin_add_overflow(span, skip, &span) || __builtin_mul_overflow(span, (uint64_t)es, &span))
		return 0;
	return span;
}

size_t ddp_cuda_dtype_bytes(int cuda_data_type)
{
	switch ((cudaDataType)cuda_data_type) {
	case CUDA_R_8I:
	case CUDA_R_8U:
	case CUDA_R_8F_E4M3:
	case CUDA_R_8F_E5M2: return 1;
	case CUDA_R_16F:
	case CUDA_R_16BF:
	case CUDA_C_8I:
	case CUDA_C_8U: return 2;
	case CUDA_R_32F:
	case CUDA_R_32I:
	case CUDA_R_32U:
	case CUDA_C_16F:
	case CUDA_C_16BF: return 4;
	case CUDA_R_64F:
	case CUDA_R_64I:
	case CUDA_C_32F: return 8;
	case CUDA_C_64F: return 16;
	default: return 0;
	}
}
