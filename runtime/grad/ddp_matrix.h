/* SPDX-License-Identifier: MIT
 *
 * ddp_matrix.h - the bytes a dense matrix (or a strided batch of them)
 * spans, from the shape a BLAS call is given: what interpose/hook_blas.c
 * declares as a cuBLAS call's output (ddp_sync_libcall_enter).
 *
 * Contract: pure functions; 0 means "cannot be told" (the caller then
 * declares nothing, and the generic extent rule stays).
 */
#ifndef DDP_MATRIX_H
#define DDP_MATRIX_H

#include <stddef.h>
#include <stdint.h>

/* Bytes from the first element of `batch` matrices `stride` elements
 * apart, each of `outer` lines of `inner` elements with `ld` elements
 * between the starts of consecutive lines (column-major: inner = rows,
 * outer = columns; row-major the other way round), elements of es bytes:
 * ((outer - 1) * ld + inner + (batch - 1) * stride) * es.  0 when empty
 * (a dimension or batch <= 0), invalid (ld < inner, stride < 0, es 0) or
 * when it overflows 64 bits.  Overlapping batches (stride below one
 * matrix) still give an upper bound. */
uint64_t ddp_matrix_bytes(int64_t inner, int64_t outer, int64_t ld, size_t es, int64_t batch, int64_t stride);

/* Element size of a cudaDataType (library_types.h) value: 1 for the 8-bit
 * types, 2 for fp16/bf16, ... 16 for complex double; 0 for a type libddp
 * does not know (4-bit and 6-bit types, packed forms, a future value). */
size_t ddp_cuda_dtype_bytes(int cuda_data_type);

#endif /* DDP_MATRIX_H */
