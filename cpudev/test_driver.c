/* SPDX-License-Identifier: MIT
 *
 * test_driver.c - the CPU device's driver half through the real cuda.h API:
 * initialisation and contexts, memory and its error codes, copies, streams
 * (really asynchronous, ordered by events and by the legacy-stream rules),
 * events, cuGetProcAddress, error names, unimplemented entry points.
 *
 * Asynchrony is shown deterministically with a "gate": a host function
 * queued on a stream (cuLaunchHostFunc) that blocks its worker until the test
 * opens it, so everything queued behind it is provably not done yet.
 *
 * Linked against build/cpudev/lib/libcuda.so.1; not an ASan unit test (threads).
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define CU_OK(x) CHECK_EQ_INT((x), CUDA_SUCCESS)

/* ---- the gate */

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
	int passed;   /* how many waiters got through */
};
#define GATE_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 }

static void gate_wait(void *p)
{
	struct gate *g = p;
	pthread_mutex_lock(&g->mu);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	g->passed++;
	pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

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

/* ---- must run first: nothing initialised yet */

TEST(calls_before_cuInit_fail)
{
	int n = -1;
	CUdeviceptr p;
	CHECK_EQ_INT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	CHECK_EQ_INT(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
	CHECK_EQ_INT(cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED);
	int v = 0;
	CU_OK(cuDriverGetVersion(&v)); /* allowed before cuInit */
	CHECK_EQ_INT(v, 13000);
	CHECK_EQ_INT(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

static void *no_ctx_thread(void *arg)
{
	CUresult *out = arg;
	CUdeviceptr p;
	CUstream s;
	CUcontext c = (CUcontext)1;
	out[0] = cuMemAlloc(&p, 64);
	out[1] = cuStreamCreate(&s, 0);
	out[2] = cuCtxGetCurrent(&c);
	out[3] = c == NULL ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
	out[4] = cuCtxSynchronize();
	return NULL;
}

TEST(no_current_context_is_invalid_context)
{
	REQUIRE(cuInit(0) == CUDA_SUCCESS);
	CUresult r[5];
	pthread_t t;
	pthread_create(&t, NULL, no_ctx_thread, r);
	pthread_join(t, NULL);
	CHECK_EQ_INT(r[0], CUDA_ERROR_INVALID_CONTEXT);
	CHECK_EQ_INT(r[1], CUDA_ERROR_INVALID_CONTEXT);
	CHECK_EQ_INT(r[2], CUDA_SUCCESS);
	CHECK_EQ_INT(r[3], CUDA_SUCCESS);
	CHECK_EQ_INT(r[4], CUDA_ERROR_INVALID_CONTEXT);
}

TEST(device_queries)
{
	setup();
	int n = 0, v = 0, major = 0, minor = 0;
	CU_OK(cuDeviceGetCount(&n));
	CHECK_EQ_INT(n, 1);
	CUdevice d;
	CHECK_EQ_INT(cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
	char name[128] = "";
	CU_OK(cuDeviceGetName(name, sizeof(name), 0));
	CHECK(strstr(name, "simcuda") != NULL);
	CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	CU_OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
	CHECK_EQ_INT(major * 10 + minor, 90);
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
	CHECK_EQ_INT(v, 32);
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0));
	CHECK_EQ_INT(v, 1024);
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	CHECK_EQ_INT(v, 132); /* H100-like: programs size grids from it */
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0));
	CHECK_EQ_INT(v, 2048);
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
	CHECK_EQ_INT(v, 1);
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
	CHECK_EQ_INT(v, 1);
	CHECK_EQ_INT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3), CUDA_ERROR_INVALID_DEVICE);
	size_t total = 0;
	CU_OK(cuDeviceTotalMem(&total, 0));
	CHECK_EQ_INT(total, 16ull << 30);
	CUuuid u1, u2;
	CU_OK(cuDeviceGetUuid(&u1, 0));
	CU_OK(cuDeviceGetUuid(&u2, 0));
	CHECK(memcmp(&u1, &u2, sizeof(u1)) == 0);
}

TEST(primary_and_created_contexts)
{
	setup();
	unsigned flags = 99;
	int active = 0;
	CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	CHECK_EQ_INT(active, 1);
	CUcontext cur = NULL, mine = NULL, popped = NULL;
	CU_OK(cuCtxGetCurrent(&cur));
	CHECK(cur == ctx);
	CU_OK(cuCtxCreate(&mine, NULL, 0, 0)); /* cuCtxCreate_v4 */
	CU_OK(cuCtxGetCurrent(&cur));
	CHECK(cur == mine && mine != ctx);
	CUdevice d = -1;
	CU_OK(cuCtxGetDevice(&d));
	CHECK_EQ_INT(d, 0);
	CU_OK(cuCtxPopCurrent(&popped));
	CHECK(popped == mine);
	CU_OK(cuCtxGetCurrent(&cur));
	CHECK(cur == ctx);
	CU_OK(cuCtxPushCurrent(mine));
	CUdeviceptr p;
	CU_OK(cuMemAlloc(&p, 100));
	CU_OK(cuMemFree(p));
	CU_OK(cuCtxDestroy(mine));
	CU_OK(cuCtxGetCurrent(&cur));
	CHECK(cur == ctx);
	CHECK_EQ_INT(cuCtxPushCurrent(mine), CUDA_ERROR_INVALID_CONTEXT);
	CHECK_EQ_INT(cuCtxDestroy(mine), CUDA_ERROR_INVALID_CONTEXT);
}

/* ---- memory */

TEST(memory_error_codes)
{
	setup();
	CUdeviceptr p = 0, base = 0;
	size_t size = 0;
	CU_OK(cuMemAlloc(&p, 1000));
	CHECK(p != 0);
	CU_OK(cuMemGetAddressRange(&base, &size, p + 500));
	CHECK(base == p);
	CHECK_EQ_INT(size, 1000);
	CHECK_EQ_INT(cuMemFree(p + 8), CUDA_ERROR_INVALID_VALUE); /* interior pointer */
	char *host = malloc(64);
	CHECK_EQ_INT(cuMemFree((CUdeviceptr)(uintptr_t)host), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)host), CUDA_ERROR_NOT_FOUND);
	free(host);
	CU_OK(cuMemFree(p));
	CHECK_EQ_INT(cuMemFree(p), CUDA_ERROR_INVALID_VALUE); /* freed twice */
	CHECK_EQ_INT(cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
	CHECK_EQ_INT(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAlloc(NULL, 8), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAlloc(&p, 64ull << 30), CUDA_ERROR_OUT_OF_MEMORY); /* over the 16 GiB */
}

TEST(mem_get_info_tracks_allocations)
{
	setup();
	size_t free0, total, free1, free2;
	CU_OK(cuMemGetInfo(&free0, &total));
	CHECK_EQ_INT(total, 16ull << 30);
	CUdeviceptr p;
	CU_OK(cuMemAlloc(&p, 10 << 20));
	CU_OK(cuMemGetInfo(&free1, &total));
	CHECK(free0 - free1 >= (10u << 20));
	CU_OK(cuMemFree(p));
	CU_OK(cuMemGetInfo(&free2, &total));
	CHECK_EQ_INT(free2, free0);
}

TEST(device_range_disjoint_from_malloc)
{
	setup();
	enum { N = 16 };
	CUdeviceptr d[N];
	void *h[N];
	for (int i = 0; i < N; i++) {
		CU_OK(cuMemAlloc(&d[i], (size_t)1 << (10 + i))); /* 1 KiB .. 32 MiB */
		h[i] = malloc((size_t)1 << (10 + i));             /* heap and mmap'd */
		REQUIRE(h[i] != NULL);
	}
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++) {
			uintptr_t a = (uintptr_t)h[j], alen = (size_t)1 << (10 + j);
			uintptr_t b = (uintptr_t)d[i], blen = (size_t)1 << (10 + i);
			CHECK(a + alen <= b || b + blen <= a);
		}
		unsigned type = 0;
		CHECK_EQ_INT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
						   (CUdeviceptr)(uintptr_t)h[i]), CUDA_ERROR_INVALID_VALUE);
		CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d[i]));
		CHECK_EQ_INT(type, CU_MEMORYTYPE_DEVICE);
	}
	for (int i = 0; i < N; i++) {
		CU_OK(cuMemFree(d[i]));
		free(h[i]);
	}
}

TEST(pointer_attributes)
{
	setup();
	CUdeviceptr p, start = 0;
	size_t size = 0;
	CUcontext c = NULL;
	int ordinal = -1;
	CU_OK(cuMemAlloc(&p, 4096 + 10));
	CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 4100));
	CU_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 4100));
	CU_OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p));
	CHECK(start == p);
	CHECK_EQ_INT(size, 4106);
	CHECK(c == ctx);
	CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
	CHECK_EQ_INT(ordinal, 0);
	void *hp = (void *)1;
	CHECK_EQ_INT(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, p), CUDA_ERROR_INVALID_VALUE);

	/* cuPointerGetAttributes: no error for unknown pointers, zero values */
	unsigned type = 77;
	CUdeviceptr dp = 5;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER };
	void *data[] = { &type, &dp };
	int x;
	CU_OK(cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)(uintptr_t)&x));
	CHECK_EQ_INT(type, 0);
	CHECK(dp == 0);
	CU_OK(cuPointerGetAttributes(2, attrs, data, p + 1));
	CHECK_EQ_INT(type, CU_MEMORYTYPE_DEVICE);
	CHECK(dp == p + 1);

	/* pinned host memory: a host pointer with a device address */
	void *pinned = NULL;
	CU_OK(cuMemAllocHost(&pinned, 256));
	CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)pinned));
	CHECK_EQ_INT(type, CU_MEMORYTYPE_HOST);
	CUdeviceptr mapped = 0;
	CU_OK(cuMemHostGetDevicePointer(&mapped, pinned, 0));
	CHECK(mapped == (CUdeviceptr)(uintptr_t)pinned);
	memset(pinned, 0x5a, 256);
	CU_OK(cuMemcpyHtoD(p, pinned, 256));
	unsigned char back[256];
	CU_OK(cuMemcpyDtoH(back, p, 256));
	CHECK(back[0] == 0x5a && back[255] == 0x5a);
	CHECK_EQ_INT(cuMemFree((CUdeviceptr)(uintptr_t)pinned), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFreeHost(pinned));
	CHECK_EQ_INT(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(p));
}

TEST(managed_memory)
{
	setup();
	CUdeviceptr m, p;
	CHECK_EQ_INT(cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAllocManaged(&m, 64, 0), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemAllocManaged(&m, 1000, CU_MEM_ATTACH_GLOBAL));
	CU_OK(cuMemAlloc(&p, 1000));
	/* host and device use the same address */
	int *h = (int *)(uintptr_t)m;
	for (int i = 0; i < 250; i++)
		h[i] = i;
	int back[250];
	CU_OK(cuMemcpyDtoH(back, m, sizeof(back)));
	CHECK_EQ_INT(back[249], 249);
	CU_OK(cuMemcpyHtoD(p, h, sizeof(back))); /* managed memory as the host side */
	CU_OK(cuMemcpyDtoH(back, p, sizeof(back)));
	CHECK_EQ_INT(back[17], 17);
	bool managed = false;
	void *hp = NULL;
	CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m + 8));
	CHECK(managed);
	CU_OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, m));
	CHECK(hp == h);
	CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
	CHECK(!managed);
	/* advice and prefetch: managed ranges only */
	CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, bad = { CU_MEM_LOCATION_TYPE_DEVICE, 3 };
	CU_OK(cuMemAdvise(m, 1000, CU_MEM_ADVISE_SET_READ_MOSTLY, loc));
	CHECK_EQ_INT(cuMemAdvise(p, 1000, CU_MEM_ADVISE_SET_READ_MOSTLY, loc), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAdvise(m, 2000, CU_MEM_ADVISE_SET_READ_MOSTLY, loc), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAdvise(m, 1000, CU_MEM_ADVISE_SET_READ_MOSTLY, bad), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemPrefetchAsync(m, 1000, loc, 0, 0));
	loc.type = CU_MEM_LOCATION_TYPE_HOST;
	CU_OK(cuMemPrefetchAsync(m, 1000, loc, 0, 0));
	CHECK_EQ_INT(cuMemPrefetchAsync(p, 1000, loc, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(m));
	CU_OK(cuMemFree(p));
	CHECK_EQ_INT(cuMemFree(m), CUDA_ERROR_INVALID_VALUE);
}

TEST(alloc_pitch)
{
	setup();
	CUdeviceptr p;
	size_t pitch = 0;
	CU_OK(cuMemAllocPitch(&p, &pitch, 1000, 3, 4));
	CHECK(pitch >= 1000 && pitch % 256 == 0);
	CU_OK(cuMemsetD8(p + 2 * pitch, 1, 1000)); /* the last row is inside */
	CHECK_EQ_INT(cuMemAllocPitch(&p, &pitch, 1000, 3, 3), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(p));
}

/* ---- copies and sets */

TEST(copies_round_trip_and_sets)
{
	setup();
	enum { N = 1000 };
	uint32_t src[N], dst[N];
	for (int i = 0; i < N; i++)
		src[i] = (uint32_t)i * 2654435761u;
	CUdeviceptr a, b;
	CU_OK(cuMemAlloc(&a, sizeof(src)));
	CU_OK(cuMemAlloc(&b, sizeof(src)));
	CU_OK(cuMemcpyHtoD(a, src, sizeof(src)));
	CU_OK(cuMemcpyDtoD(b, a, sizeof(src)));
	memset(dst, 0, sizeof(dst));
	CU_OK(cuMemcpyDtoH(dst, b, sizeof(dst)));
	CHECK(memcmp(src, dst, sizeof(src)) == 0);
	CU_OK(cuMemcpy((CUdeviceptr)(uintptr_t)dst, a + 4, 8)); /* unified: device -> host */
	CHECK(dst[0] == src[1] && dst[1] == src[2]);

	CU_OK(cuMemsetD32(a, 0xdeadbeef, N));
	CU_OK(cuMemsetD16(b, 0x1234, 2 * N));
	CU_OK(cuMemsetD8(b, 0xab, 3)); /* first three bytes */
	CU_OK(cuMemcpyDtoH(dst, a, sizeof(dst)));
	CHECK(dst[0] == 0xdeadbeef && dst[N - 1] == 0xdeadbeef);
	unsigned char bytes[6];
	CU_OK(cuMemcpyDtoH(bytes, b, sizeof(bytes)));
	static const unsigned char want[6] = { 0xab, 0xab, 0xab, 0x12, 0x34, 0x12 };
	CHECK(memcmp(bytes, want, 6) == 0);
	CHECK_EQ_INT(cuMemsetD32(a + 2, 0, 1), CUDA_ERROR_INVALID_VALUE); /* misaligned */
	CU_OK(cuMemFree(a));
	CU_OK(cuMemFree(b));
}

TEST(copy_outside_allocations_fails)
{
	setup();
	CUdeviceptr a;
	char host[64] = { 0 };
	CU_OK(cuMemAlloc(&a, 32));
	CHECK_EQ_INT(cuMemcpyHtoD(a, host, 33), CUDA_ERROR_INVALID_VALUE);        /* past the end */
	CHECK_EQ_INT(cuMemcpyHtoD(a + 16, host, 17), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)host, host + 32, 8), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemcpyDtoH(host, (CUdeviceptr)(uintptr_t)(host + 8), 8), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemcpyDtoH((void *)(uintptr_t)a, a, 8), CUDA_ERROR_INVALID_VALUE); /* dst is device */
	CHECK_EQ_INT(cuMemcpyDtoD(a, (CUdeviceptr)(uintptr_t)host, 8), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemsetD8(a, 0, 33), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(a));
	CHECK_EQ_INT(cuMemcpyHtoD(a, host, 8), CUDA_ERROR_INVALID_VALUE); /* freed */
	CHECK_EQ_INT(cuMemcpy(a, (CUdeviceptr)(uintptr_t)host, 8), CUDA_ERROR_INVALID_VALUE);
}

/* ---- streams and events */

TEST(async_copy_runs_after_the_call_returns)
{
	setup();
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr d;
	uint32_t host[256], back[256];
	CU_OK(cuMemAlloc(&d, sizeof(host)));
	for (int i = 0; i < 256; i++)
		host[i] = 1;
	struct gate g = GATE_INIT;
	CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
	CU_OK(cuMemcpyHtoDAsync(d, host, sizeof(host), s));
	CHECK_EQ_INT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	/* The copy has not run: it must see what the host buffer holds when
	 * it runs, not when it was issued. */
	for (int i = 0; i < 256; i++)
		host[i] = 2;
	gate_open(&g);
	CU_OK(cuStreamSynchronize(s));
	CU_OK(cuStreamQuery(s));
	CU_OK(cuMemcpyDtoH(back, d, sizeof(back)));
	CHECK_EQ_INT(back[0], 2);
	CHECK_EQ_INT(back[255], 2);
	CU_OK(cuMemFree(d));
	CU_OK(cuStreamDestroy(s));
	CHECK_EQ_INT(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
}

TEST(async_copy_behind_a_busy_stream)
{
	/* No gate: a chain of big memsets keeps the worker busy. */
	setup();
	CUstream s;
	CU_OK(cuStreamCreate(&s, 0));
	CUdeviceptr big, d;
	size_t n = 32u << 20;
	CU_OK(cuMemAlloc(&big, n));
	CU_OK(cuMemAlloc(&d, 64));
	for (int i = 0; i < 32; i++) /* about 1 GiB of memset: many milliseconds */
		CU_OK(cuMemsetD8Async(big, (unsigned char)i, n, s));
	char msg[64] = "written by the async copy";
	CU_OK(cuMemcpyHtoDAsync(d, msg, sizeof(msg), s));
	CUresult q = cuStreamQuery(s);
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(q, CUDA_ERROR_NOT_READY);
	char back[64] = "";
	CU_OK(cuMemcpyDtoH(back, d, sizeof(back)));
	CHECK_EQ_STR(back, "written by the async copy");
	unsigned char last = 0;
	CU_OK(cuMemcpyDtoH(&last, big + n - 1, 1));
	CHECK_EQ_INT(last, 31);
	CU_OK(cuMemFree(big));
	CU_OK(cuMemFree(d));
	CU_OK(cuStreamDestroy(s));
}

TEST(stream_wait_event_orders_streams)
{
	setup();
	CUstream a, b, c;
	CUevent e;
	CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
	CU_OK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
	CU_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
	CUdeviceptr src, dst_b, dst_c;
	CU_OK(cuMemAlloc(&src, 4096));
	CU_OK(cuMemAlloc(&dst_b, 4096));
	CU_OK(cuMemAlloc(&dst_c, 4096));
	CU_OK(cuMemsetD32(src, 0, 1024));
	CU_OK(cuEventQuery(e)); /* never recorded: complete */

	struct gate g = GATE_INIT;
	CU_OK(cuLaunchHostFunc(a, gate_wait, &g));
	CU_OK(cuMemsetD32Async(src, 7, 1024, a));
	CU_OK(cuEventRecord(e, a));
	CU_OK(cuStreamWaitEvent(b, e, 0));
	CU_OK(cuMemcpyDtoDAsync(dst_b, src, 4096, b));
	/* c does not wait: it copies what src holds now (zeros), at once. */
	CU_OK(cuMemcpyDtoDAsync(dst_c, src, 4096, c));
	CU_OK(cuStreamSynchronize(c));
	CHECK_EQ_INT(cuEventQuery(e), CUDA_ERROR_NOT_READY);
	CHECK_EQ_INT(cuStreamQuery(b), CUDA_ERROR_NOT_READY);
	gate_open(&g);
	CU_OK(cuStreamSynchronize(b));
	CU_OK(cuEventQuery(e));
	uint32_t vb[1024], vc[1024];
	CU_OK(cuMemcpyDtoH(vb, dst_b, sizeof(vb)));
	CU_OK(cuMemcpyDtoH(vc, dst_c, sizeof(vc)));
	CHECK_EQ_INT(vb[0], 7);
	CHECK_EQ_INT(vb[1023], 7);
	CHECK_EQ_INT(vc[0], 0);
	CHECK_EQ_INT(vc[1023], 0);
	CU_OK(cuEventDestroy(e));
	CHECK_EQ_INT(cuEventDestroy(e), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cuStreamDestroy(a));
	CU_OK(cuStreamDestroy(b));
	CU_OK(cuStreamDestroy(c));
	CU_OK(cuMemFree(src));
	CU_OK(cuMemFree(dst_b));
	CU_OK(cuMemFree(dst_c));
}

TEST(event_query_elapsed_and_synchronize)
{
	setup();
	CUstream s;
	CUevent start, end, notime;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CU_OK(cuEventCreate(&end, CU_EVENT_BLOCKING_SYNC));
	CU_OK(cuEventCreate(&notime, CU_EVENT_DISABLE_TIMING));
	float ms = -1;
	CHECK_EQ_INT(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
	struct gate g = GATE_INIT;
	CU_OK(cuEventRecord(start, s));
	CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
	CU_OK(cuEventRecord(end, s));
	CU_OK(cuEventRecord(notime, s));
	CHECK_EQ_INT(cuEventQuery(end), CUDA_ERROR_NOT_READY);
	CHECK_EQ_INT(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY);
	gate_open(&g);
	CU_OK(cuEventSynchronize(end));
	CU_OK(cuEventQuery(end));
	CU_OK(cuEventElapsedTime(&ms, start, end));
	CHECK(ms >= 0.0f);
	CHECK_EQ_INT(cuEventSynchronize(notime), CUDA_SUCCESS);
	CHECK_EQ_INT(cuEventElapsedTime(&ms, start, notime), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cuEventDestroy(start));
	CU_OK(cuEventDestroy(end));
	CU_OK(cuEventDestroy(notime));
	CU_OK(cuStreamDestroy(s));
}

TEST(legacy_stream_waits_for_blocking_streams)
{
	setup();
	CUstream blocking, nonblocking;
	CU_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
	CU_OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
	CUdeviceptr d;
	CU_OK(cuMemAlloc(&d, 64));

	/* Work on the legacy stream waits for a busy blocking stream. */
	struct gate g1 = GATE_INIT;
	CU_OK(cuLaunchHostFunc(blocking, gate_wait, &g1));
	CU_OK(cuMemsetD8Async(d, 1, 64, NULL));
	usleep(20000); /* time enough for the memset, were it not held back */
	CHECK_EQ_INT(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
	gate_open(&g1);
	CU_OK(cuStreamSynchronize(NULL));

	/* ... but not for a busy non-blocking stream. */
	struct gate g2 = GATE_INIT;
	CU_OK(cuLaunchHostFunc(nonblocking, gate_wait, &g2));
	CU_OK(cuMemsetD8Async(d, 2, 64, CU_STREAM_LEGACY));
	CU_OK(cuStreamSynchronize(CU_STREAM_LEGACY));
	CHECK_EQ_INT(cuStreamQuery(nonblocking), CUDA_ERROR_NOT_READY);
	gate_open(&g2);
	CU_OK(cuStreamSynchronize(nonblocking));

	/* Work on a blocking stream waits for the busy legacy stream. */
	struct gate g3 = GATE_INIT;
	CU_OK(cuLaunchHostFunc(NULL, gate_wait, &g3));
	CU_OK(cuMemsetD8Async(d, 3, 64, blocking));
	CU_OK(cuMemsetD8Async(d, 4, 1, nonblocking));
	CU_OK(cuStreamSynchronize(nonblocking));
	usleep(20000);
	CHECK_EQ_INT(cuStreamQuery(blocking), CUDA_ERROR_NOT_READY);
	gate_open(&g3);
	CU_OK(cuStreamSynchronize(blocking));
	unsigned char v[2];
	CU_OK(cuMemcpyDtoH(v, d, 2));
	CHECK_EQ_INT(v[0], 3);
	CHECK_EQ_INT(v[1], 3);
	CU_OK(cuStreamDestroy(blocking));
	CU_OK(cuStreamDestroy(nonblocking));
	CU_OK(cuMemFree(d));
}

typedef CUresult (*launch_host_fn)(CUstream, CUhostFn, void *);
typedef CUresult (*stream_query_fn)(CUstream);

TEST(per_thread_default_stream_is_its_own_stream)
{
	setup();
	launch_host_fn host_pt = NULL;
	stream_query_fn query_pt = NULL;
	CUdriverProcAddressQueryResult st;
	CU_OK(cuGetProcAddress("cuLaunchHostFunc", (void **)&host_pt, 13000,
			       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
	CU_OK(cuGetProcAddress("cuStreamQuery", (void **)&query_pt, 13000,
			       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
	REQUIRE(host_pt && query_pt);
	struct gate g = GATE_INIT;
	CU_OK(host_pt(NULL, gate_wait, &g)); /* handle 0 = this thread's stream */
	CHECK_EQ_INT(query_pt(NULL), CUDA_ERROR_NOT_READY);
	CHECK_EQ_INT(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
	CU_OK(cuStreamQuery(CU_STREAM_LEGACY)); /* nothing queued there */
	gate_open(&g);
	CU_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
	CU_OK(query_pt(NULL));
}

TEST(stream_ordered_alloc_and_free)
{
	setup();
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr d;
	uint32_t back[16];
	CU_OK(cuMemAllocAsync(&d, sizeof(back), s));
	CU_OK(cuMemsetD32Async(d, 42, 16, s));
	CU_OK(cuMemcpyDtoHAsync(back, d, sizeof(back), s));
	CU_OK(cuMemFreeAsync(d, s));
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(back[0], 42);
	CHECK_EQ_INT(back[15], 42);
	CHECK_EQ_INT(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuStreamDestroy(s));
}

TEST(stream_queries_and_bad_handles)
{
	setup();
	CUstream s;
	unsigned flags = 9;
	int prio = 9, lo = 9, hi = 9;
	CU_OK(cuCtxGetStreamPriorityRange(&lo, &hi));
	CU_OK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, hi));
	CU_OK(cuStreamGetFlags(s, &flags));
	CHECK_EQ_INT(flags, CU_STREAM_NON_BLOCKING);
	CU_OK(cuStreamGetPriority(s, &prio));
	CHECK_EQ_INT(prio, hi);
	CUcontext c = NULL;
	CU_OK(cuStreamGetCtx(s, &c));
	CHECK(c == ctx);
	CHECK_EQ_INT(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuStreamDestroy(s));
	CHECK_EQ_INT(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
	CHECK_EQ_INT(cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
}

struct worker_arg {
	int id;
	int failures;
};

/* Destroyed streams cost no memory per stream ever created (their structs
 * are reused under a new generation), yet stale handles still fail cleanly,
 * also once their struct serves another stream.  Before, every destroyed
 * stream kept its ~176-byte struct: 1000 streams grew the heap ~176 KB. */
TEST(destroyed_streams_are_recycled_and_stale_handles_fail)
{
	setup();
	CUstream first, s;
	CU_OK(cuStreamCreate(&first, 0));
	CU_OK(cuStreamDestroy(first));
	CU_OK(cuStreamCreate(&s, 0));                   /* most likely first's struct */
	CHECK(s != first);
	CHECK_EQ_INT(cuStreamQuery(first), CUDA_ERROR_INVALID_HANDLE);
	CHECK_EQ_INT(cuStreamSynchronize(first), CUDA_ERROR_INVALID_HANDLE);
	CHECK_EQ_INT(cuStreamDestroy(first), CUDA_ERROR_INVALID_HANDLE);
	unsigned long long id_first = 0, id_s = 0;
	CHECK_EQ_INT(cuStreamGetId(first, &id_first), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cuStreamGetId(s, &id_s));
	CHECK(id_s != 0);
	/* s is intact: work queued on it runs. */
	CUdeviceptr d;
	uint32_t v = 0;
	CU_OK(cuMemAlloc(&d, sizeof(v)));
	CU_OK(cuMemsetD32Async(d, 0xabcd, 1, s));
	CU_OK(cuStreamSynchronize(s));
	CU_OK(cuMemcpyDtoH(&v, d, sizeof(v)));
	CHECK_EQ_INT(v, 0xabcd);
	CU_OK(cuStreamDestroy(s));
	CU_OK(cuMemFree(d));

	/* 1000 create/destroy cycles: the heap in use must not grow with the
	 * count (mallinfo2: bytes in use by malloc; thread stacks are mmapped
	 * and cached by glibc). */
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cuStreamDestroy(s));
	size_t before = mallinfo2().uordblks;
	CUstream seen[3] = {0, 0, 0};
	for (int i = 0; i < 1000; i++) {
		CU_OK(cuStreamCreate(&s, (unsigned)i & CU_STREAM_NON_BLOCKING));
		if (i < 3)
			seen[i] = s;
		CU_OK(cuStreamDestroy(s));
	}
	size_t after = mallinfo2().uordblks;
	printf("# heap in use: %zu before, %zu after 1000 streams\n", before, after);
	CHECK(after < before + 16 * 1024);
	CHECK(seen[0] != seen[1] && seen[1] != seen[2] && seen[0] != seen[2]);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(cuStreamQuery(seen[i]), CUDA_ERROR_INVALID_HANDLE);
}

static void *alloc_worker(void *p)
{
	struct worker_arg *w = p;
	cuCtxSetCurrent(ctx);
	CUstream s;
	if (cuStreamCreate(&s, 0) != CUDA_SUCCESS) {
		w->failures++;
		return NULL;
	}
	for (int i = 0; i < 100; i++) {
		CUdeviceptr d;
		uint32_t v = 0;
		size_t n = 1024 + (size_t)((w->id * 7 + i) % 13) * 512;
		if (cuMemAlloc(&d, n) != CUDA_SUCCESS ||
		    cuMemsetD32Async(d, (unsigned)(w->id * 1000 + i), n / 4, s) != CUDA_SUCCESS ||
		    cuMemcpyDtoHAsync(&v, d + n - 4, 4, s) != CUDA_SUCCESS ||
		    cuStreamSynchronize(s) != CUDA_SUCCESS || v != (uint32_t)(w->id * 1000 + i) ||
		    cuMemFree(d) != CUDA_SUCCESS)
			w->failures++;
	}
	cuStreamDestroy(s);
	return NULL;
}

TEST(many_threads_at_once)
{
	setup();
	enum { T = 4 };
	pthread_t t[T];
	struct worker_arg w[T];
	for (int i = 0; i < T; i++) {
		w[i] = (struct worker_arg){ i + 1, 0 };
		pthread_create(&t[i], NULL, alloc_worker, &w[i]);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ_INT(w[i].failures, 0);
	}
}

/* ---- cuGetProcAddress and the exports */

static void *sym(const char *name)
{
	static void *h;
	if (!h)
		h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	return h ? dlsym(h, name) : NULL;
}

static void *proc(const char *name, int version, int flags, CUdriverProcAddressQueryResult *st, CUresult *rc)
{
	void *p = (void *)1;
	*rc = cuGetProcAddress(name, &p, version, (cuuint64_t)flags, st);
	return p;
}

TEST(get_proc_address_flavours_and_versions)
{
	CUdriverProcAddressQueryResult st = 99;
	CUresult rc;
	REQUIRE(sym("cuMemAlloc_v2") != NULL);
	CHECK(proc("cuMemAlloc", 13000, 0, &st, &rc) == sym("cuMemAlloc_v2"));
	CHECK_EQ_INT(rc, CUDA_SUCCESS);
	CHECK_EQ_INT(st, CU_GET_PROC_ADDRESS_SUCCESS);
	CHECK(proc("cuMemAlloc", 13000, 2, &st, &rc) == sym("cuMemAlloc_v2")); /* no per-thread flavour */

	static const char *const pt[][3] = {
		{ "cuMemcpyAsync", "cuMemcpyAsync", "cuMemcpyAsync_ptsz" },
		{ "cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel_ptsz" },
		{ "cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds" },
		{ "cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz" },
		{ "cuStreamSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz" },
		{ "cuEventRecord", "cuEventRecord", "cuEventRecord_ptsz" },
		{ "cuMemsetD32", "cuMemsetD32_v2", "cuMemsetD32_v2_ptds" },
	};
	for (size_t i = 0; i < sizeof(pt) / sizeof(pt[0]); i++) {
		void *legacy = proc(pt[i][0], 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st, &rc);
		void *dflt = proc(pt[i][0], 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st, &rc);
		void *perthread = proc(pt[i][0], 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st, &rc);
		CHECK_EQ_INT(st, CU_GET_PROC_ADDRESS_SUCCESS);
		CHECK(legacy != NULL && legacy == sym(pt[i][1]));
		CHECK(dflt == legacy);
		CHECK(perthread != NULL && perthread == sym(pt[i][2]));
		CHECK(perthread != legacy);
	}

	CHECK(proc("cuCtxCreate", 3020, 0, &st, &rc) == sym("cuCtxCreate_v2"));
	CHECK(proc("cuCtxCreate", 11040, 0, &st, &rc) == sym("cuCtxCreate_v3"));
	CHECK(proc("cuCtxCreate", 13000, 0, &st, &rc) == sym("cuCtxCreate_v4"));
	CHECK(proc("cuGetProcAddress", 12000, 0, &st, &rc) == sym("cuGetProcAddress_v2"));
	CHECK(proc("cuGetProcAddress", 11030, 0, &st, &rc) == sym("cuGetProcAddress"));

	CHECK(proc("cuMemAlloc", 2000, 0, &st, &rc) == NULL);
	CHECK_EQ_INT(rc, CUDA_ERROR_NOT_FOUND);
	CHECK_EQ_INT(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	CHECK(proc("cuNoSuchFunction", 13000, 0, &st, &rc) == NULL);
	CHECK_EQ_INT(rc, CUDA_ERROR_NOT_FOUND);
	CHECK_EQ_INT(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	proc("cuMemAlloc", 13000, 7, &st, &rc);
	CHECK_EQ_INT(rc, CUDA_ERROR_INVALID_VALUE);
}

TEST(unimplemented_entry_points_fail)
{
	setup();
	CUdriverProcAddressQueryResult st;
	CUresult rc;
	typedef CUresult (*graph_create_fn)(CUgraph *, unsigned int);
	graph_create_fn f = (graph_create_fn)proc("cuGraphCreate", 13000, 0, &st, &rc);
	CHECK_EQ_INT(rc, CUDA_SUCCESS);
	REQUIRE(f != NULL);
	CUgraph g;
	CHECK_EQ_INT(f(&g, 0), CUDA_ERROR_NOT_SUPPORTED);
	graph_create_fn d = (graph_create_fn)sym("cuGraphCreate");
	REQUIRE(d != NULL);
	CHECK_EQ_INT(d(&g, 0), CUDA_ERROR_NOT_SUPPORTED);
	/* (VMM is implemented now, cpudev/test_alloc_modes.c; arrays are not) */
	CUarray arr;
	CUDA_ARRAY_DESCRIPTOR ad;
	memset(&ad, 0, sizeof(ad));
	ad.Width = 16;
	ad.Height = 1;
	ad.Format = CU_AD_FORMAT_FLOAT;
	ad.NumChannels = 1;
	CHECK_EQ_INT(cuArrayCreate(&arr, &ad), CUDA_ERROR_NOT_SUPPORTED);
	/* Stream capture: refused, and nothing is captured (the stream still
	 * runs work at once). */
	CUstream s;
	CU_OK(cuStreamCreate(&s, 0));
	CHECK_EQ_INT(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_NOT_SUPPORTED);
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CU_OK(cuStreamIsCapturing(s, &cs));
	CHECK_EQ_INT(cs, CU_STREAM_CAPTURE_STATUS_NONE);
	CHECK_EQ_INT(cuStreamEndCapture(s, &g), CUDA_ERROR_NOT_SUPPORTED);
	CU_OK(cuStreamDestroy(s));
}

TEST(error_names_and_strings)
{
	const char *s = NULL;
	CU_OK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
	CHECK_EQ_STR(s, "CUDA_ERROR_INVALID_VALUE");
	CU_OK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
	CHECK_EQ_STR(s, "invalid argument");
	CU_OK(cuGetErrorName(CUDA_ERROR_LAUNCH_FAILED, &s));
	CHECK_EQ_STR(s, "CUDA_ERROR_LAUNCH_FAILED");
	CU_OK(cuGetErrorName(CUDA_SUCCESS, &s));
	CHECK_EQ_STR(s, "CUDA_SUCCESS");
	CU_OK(cuGetErrorName(CUDA_ERROR_STUB_LIBRARY, &s));
	CHECK_EQ_STR(s, "CUDA_ERROR_STUB_LIBRARY");
	int named = 0;
	for (int code = 0; code < 1100; code++) {
		const char *n = NULL, *t = NULL;
		if (cuGetErrorName((CUresult)code, &n) != CUDA_SUCCESS) {
			CHECK(n == NULL);
			continue;
		}
		named++;
		CHECK(strncmp(n, "CUDA_", 5) == 0);
		CHECK_EQ_INT(cuGetErrorString((CUresult)code, &t), CUDA_SUCCESS);
		CHECK(t != NULL && t[0] != 0);
	}
	CHECK(named > 90);
	s = (const char *)1;
	CHECK_EQ_INT(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	CHECK(s == NULL);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
