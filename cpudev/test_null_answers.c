/* SPDX-License-Identifier: MIT
 *
 * test_null_answers.c - the driver's answers to NULL pointers and zero sizes,
 * one case per entry point, each against what CUDA documents (quoted in
 * the case) or, where the driver API page is silent, against what the
 * runtime above it documents and passes straight down:
 *
 *   cudaFree: "If devPtr is 0, no operation is performed" (CUDA Runtime API,
 *   cudaFree); cudart 13 calls cuMemFree_v2(0) for it, cudaFreeAsync(0, s)
 *   calls cuMemFreeAsync(0, s), cudaFreeHost(NULL) calls cuMemFreeHost(NULL):
 *   programs (cudaFree(0) to create the context, allocators' and NCCL's
 *   teardown) rely on all three answering CUDA_SUCCESS on a real GPU.
 *   cuMemAlloc: "If bytesize is 0, cuMemAlloc() returns
 *   CUDA_ERROR_INVALID_VALUE"; cuMemAllocManaged likewise.
 *   cuMemGetAddressRange: "Both parameters pbase and psize are optional. If
 *   one of them is NULL, it is ignored".
 *   cuCtxGetCurrent: "If no context is bound to the calling CPU thread then
 *   *pctx is set to NULL and CUDA_SUCCESS is returned".
 *   Copies and memsets of zero bytes: nothing to do, CUDA_SUCCESS, even with
 *   NULL addresses (what cudaMemcpy(d, h, 0, ...) of an empty tensor does).
 *
 * Negative controls in each case: a non-NULL pointer that is not the
 * entry point's kind is still refused, so a "return success for anything"
 * driver fails this test.
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define CU_OK(x) CHECK_EQ_INT((x), CUDA_SUCCESS)

static CUcontext ctx;

static void setup(void)
{
	CUdevice dev;
	REQUIRE(cuInit(0) == CUDA_SUCCESS);
	REQUIRE(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
	if (!ctx)
		REQUIRE(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
	REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

TEST(cuMemFree_of_0_is_a_no_op)
{
	setup();
	CU_OK(cuMemFree(0));
	CUdeviceptr p;
	CU_OK(cuMemAlloc(&p, 64));
	CU_OK(cuMemFree(0));
	CU_OK(cuMemsetD8(p, 7, 64)); /* p is still allocated */
	CU_OK(cuMemFree(p));
	CHECK_EQ_INT(cuMemFree(p), CUDA_ERROR_INVALID_VALUE); /* control: a stale pointer is refused */
}

TEST(cuMemFreeAsync_of_0_is_a_no_op)
{
	setup();
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cuMemFreeAsync(0, s));
	CU_OK(cuMemFreeAsync(0, NULL));
	CUdeviceptr p;
	CU_OK(cuMemAllocAsync(&p, 256, s));
	CU_OK(cuMemFreeAsync(p, s));
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE); /* control: freed twice */
	/* a bad stream is still a bad stream, NULL pointer or not */
	CU_OK(cuStreamDestroy(s));
	CHECK(cuMemFreeAsync(0, s) != CUDA_SUCCESS);
}

TEST(cuMemFreeHost_of_NULL_is_a_no_op)
{
	setup();
	CU_OK(cuMemFreeHost(NULL));
	char on_stack[16];
	CHECK_EQ_INT(cuMemFreeHost(on_stack), CUDA_ERROR_INVALID_VALUE); /* control: not pinned memory */
	void *h;
	CU_OK(cuMemHostAlloc(&h, 64, CU_MEMHOSTALLOC_PORTABLE));
	CU_OK(cuMemFreeHost(h));
}

TEST(cuMemAlloc_of_0_bytes_is_invalid_value)
{
	setup();
	CUdeviceptr p = 1;
	CHECK_EQ_INT(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
}

TEST(cuMemGetAddressRange_ignores_NULL_outputs)
{
	setup();
	CUdeviceptr p, base = 0;
	size_t size = 0;
	CU_OK(cuMemAlloc(&p, 100));
	CU_OK(cuMemGetAddressRange(NULL, NULL, p + 10));
	CU_OK(cuMemGetAddressRange(&base, NULL, p + 10));
	CHECK(base == p);
	CU_OK(cuMemGetAddressRange(NULL, &size, p + 10));
	CHECK(size == 100);
	CU_OK(cuMemFree(p));
	CHECK(cuMemGetAddressRange(&base, &size, p) != CUDA_SUCCESS); /* control: freed */
}

static void *no_ctx_thread(void *arg)
{
	CUcontext *out = arg;
	*out = (CUcontext)(uintptr_t)1;
	if (cuCtxGetCurrent(out) != CUDA_SUCCESS)
		*out = (CUcontext)(uintptr_t)2;
	return NULL;
}

TEST(cuCtxGetCurrent_without_a_context_answers_NULL)
{
	setup();
	CUcontext got;
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, no_ctx_thread, &got) == 0);
	pthread_join(t, NULL);
	CHECK(got == NULL);
	CUcontext here = NULL;
	CU_OK(cuCtxGetCurrent(&here)); /* control: this thread has one */
	CHECK(here == ctx);
}

TEST(zero_byte_copies_and_sets_succeed_and_touch_nothing)
{
	setup();
	CUdeviceptr d;
	CU_OK(cuMemAlloc(&d, 16));
	CU_OK(cuMemsetD8(d, 0xab, 16));
	unsigned char h[16];
	memset(h, 0x11, sizeof(h));
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cuMemcpyHtoD(d, h, 0));
	CU_OK(cuMemcpyHtoD(d, NULL, 0));
	CU_OK(cuMemcpyDtoH(h, d, 0));
	CU_OK(cuMemcpyDtoH(NULL, d, 0));
	CU_OK(cuMemcpyDtoD(d, d + 8, 0));
	CU_OK(cuMemcpy(d, 0, 0));
	CU_OK(cuMemcpyHtoDAsync(d, NULL, 0, s));
	CU_OK(cuMemcpyDtoHAsync(NULL, d, 0, s));
	CU_OK(cuMemcpyDtoDAsync(0, d, 0, s));
	CU_OK(cuMemcpyAsync(0, 0, 0, s));
	CU_OK(cuMemsetD8(d, 0, 0));
	CU_OK(cuMemsetD16(0, 0, 0));
	CU_OK(cuMemsetD32(d, 0, 0));
	CU_OK(cuMemsetD8Async(0, 0, 0, s));
	CU_OK(cuMemsetD16Async(d, 0, 0, s));
	CU_OK(cuMemsetD32Async(0, 0, 0, s));
	CU_OK(cuStreamSynchronize(s));
	CU_OK(cuMemcpyDtoH(h, d, 16));
	for (int i = 0; i < 16; i++)
		CHECK(h[i] == 0xab);
	/* control: one byte to NULL is refused */
	CHECK_EQ_INT(cuMemcpyHtoD(0, h, 1), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemsetD8(0, 0, 1), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuStreamDestroy(s));
	CU_OK(cuMemFree(d));
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
