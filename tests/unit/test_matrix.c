/* SPDX-License-Identifier: MIT
 *
 * test_matrix.c - the byte extent of a BLAS call's output matrix
 * (runtime/grad/ddp_matrix.c), against extents counted here element by
 * element: column- and row-major, padded leading dimensions, strided
 * batches (apart, touching, overlapping, stride 0); what cannot be told is
 * 0 (empty, ld below the line length, a negative stride, an unknown type,
 * 64-bit overflow).
 */
#define CHECK_MAIN
#include <library_types.h>
#include "check.h"
#include "ddp_matrix.h"

/* One past the highest element offset any (batch, line, element) touches,
 * in bytes: the reference, by enumeration. */
static uint64_t enumerate(int64_t inner, int64_t outer, int64_t ld, size_t es, int64_t batch, int64_t stride)
{
	uint64_t end = 0;
	for (int64_t b = 0; b < batch; b++)
		for (int64_t o = 0; o < outer; o++)
			for (int64_t i = 0; i < inner; i++) {
				uint64_t e = (uint64_t)(b * stride + o * ld + i + 1) * es;
				if (e > end)
					end = e;
			}
	return end;
}

TEST(matches_enumeration)
{
	static const int64_t shapes[][5] = {
		/* inner, outer, ld, batch, stride */
		{ 64, 256, 64, 1, 0 },     /* llm.c's fcw slice: C x 4C, contiguous */
		{ 3, 5, 8, 1, 0 },         /* padded leading dimension */
		{ 1, 1, 1, 1, 0 },
		{ 7, 1, 7, 1, 0 },         /* one line: ld does not count */
		{ 4, 6, 4, 3, 24 },        /* batches that touch */
		{ 4, 6, 5, 3, 40 },        /* batches apart, padded */
		{ 4, 6, 4, 3, 10 },        /* batches overlapping */
		{ 4, 6, 4, 5, 0 },         /* stride 0: the same matrix */
	};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (size_t es = 1; es <= 16; es *= 2) {
			const int64_t *x = shapes[s];
			CHECK_EQ_INT((long long)ddp_matrix_bytes(x[0], x[1], x[2], es, x[3], x[4]),
				     (long long)enumerate(x[0], x[1], x[2], es, x[3], x[4]));
		}
}

TEST(row_major_swaps_lines)
{
	/* a 3 x 5 row-major matrix with ld 8: 3 lines of 5, 8 apart */
	CHECK_EQ_INT((long long)ddp_matrix_bytes(5, 3, 8, 4, 1, 0), (long long)((2 * 8 + 5) * 4));
}

TEST(what_cannot_be_told_is_zero)
{
	CHECK_EQ_INT((long long)ddp_matrix_bytes(0, 5, 8, 4, 1, 0), 0);     /* empty */
	CHECK_EQ_INT((long long)ddp_matrix_bytes(5, 0, 8, 4, 1, 0), 0);
	CHECK_EQ_INT((long long)ddp_matrix_bytes(5, 3, 8, 4, 0, 0), 0);     /* no batch */
	CHECK_EQ_INT((long long)ddp_matrix_bytes(5, 3, 4, 4, 1, 0), 0);     /* ld < inner */
	CHECK_EQ_INT((long long)ddp_matrix_bytes(5, 3, 8, 4, 2, -40), 0);   /* negative stride */
	CHECK_EQ_INT((long long)ddp_matrix_bytes(5, 3, 8, 0, 1, 0), 0);     /* unknown type */
	CHECK_EQ_INT((long long)ddp_matrix_bytes(-1, 3, 8, 4, 1, 0), 0);
	CHECK_EQ_INT((long long)ddp_matrix_bytes(INT64_MAX / 2, 4, INT64_MAX / 2, 2, 1, 0), 0); /* overflow */
	CHECK_EQ_INT((long long)ddp_matrix_bytes(4, 4, 4, 4, INT64_MAX, INT64_MAX), 0);
}

TEST(cuda_types)
{
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(CUDA_R_32F), 4);
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(CUDA_R_16BF), 2);
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(CUDA_R_16F), 2);
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(CUDA_R_64F), 8);
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(CUDA_R_8F_E4M3), 1);
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(CUDA_C_64F), 16);
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(-1), 0);
	CHECK_EQ_INT((int)ddp_cuda_dtype_bytes(9999), 0);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
