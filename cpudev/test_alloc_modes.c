/* SPDX-License-Identifier: MIT
 *
 * test_alloc_modes.c - the CPU device's allocators beyond cuMemAlloc, as
 * PyTorch's three allocator modes use them (cpudev/sim_vmm.c):
 * virtual memory management (expandable segments: reserve, create, map,
 * set access, unmap, release; copies across adjacent mappings) and
 * stream-ordered pools (cudaMallocAsync: default and created pools,
 * attributes, reuse, trimming), each with the driver's error codes.
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define CU_OK(x) CHECK_EQ_INT((x), CUDA_SUCCESS)
#define MiB (1ull << 20)

static CUcontext ctx;

static void setup(void)
{
	if (ctx)
		return;
	CUdevice dev;
	REQUIRE(cuInit(0) == CUDA_SUCCESS);
	REQUIRE(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
	REQUIRE(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
	REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

static CUmemAllocationProp dev_prop(int id)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = id;
	return p;
}

static CUmemAccessDesc rw(void)
{
	CUmemAccessDesc a;
	memset(&a, 0, sizeof a);
	a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = 0;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return a;
}

TEST(vmm_granularity_and_attribute)
{
	setup();
	int v = 0;
	CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
	CHECK_EQ_INT(v, 1);
	size_t g = 0;
	CUmemAllocationProp p = dev_prop(0);
	CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CHECK_EQ_INT(g, 2 * MiB);
	CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	CHECK_EQ_INT(g, 2 * MiB);
	CHECK_EQ_INT(cuMemGetAllocationGranularity(NULL, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemGetAllocationGranularity(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_VALUE);
	CUmemAllocationProp bad = dev_prop(3);
	CHECK_EQ_INT(cuMemGetAllocationGranularity(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_DEVICE);
}

/* PyTorch's expandable segments: one big reservation, a 2 MiB page mapped
 * at a time, a tensor straddling two pages. */
TEST(vmm_expandable_segment_straddling_pages)
{
	setup();
	CUdeviceptr va;
	CUmemAllocationProp p = dev_prop(0);
	CUmemAccessDesc a = rw();
	CU_OK(cuMemAddressReserve(&va, 64 * MiB, 0, 0, 0));
	CHECK_EQ_INT(va % (2 * MiB), 0);
	CUmemGenericAllocationHandle h[2];
	for (int i = 0; i < 2; i++) {
		CU_OK(cuMemCreate(&h[i], 2 * MiB, &p, 0));
		CU_OK(cuMemMap(va + i * 2 * MiB, 2 * MiB, 0, h[i], 0));
	}
	/* mapped but not yet accessible: copies fail */
	char buf[64] = "x";
	CHECK_EQ_INT(cuMemcpyHtoD(va, buf, 16), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemSetAccess(va, 4 * MiB, &a, 1));
	/* a 1 MiB tensor at 1.5 MiB straddles the two mappings */
	static float host[MiB / 4], back[MiB / 4];
	for (size_t i = 0; i < MiB / 4; i++)
		host[i] = (float)i;
	CUdeviceptr t = va + 3 * MiB / 2;
	CU_OK(cuMemcpyHtoD(t, host, MiB));
	memset(back, 0, sizeof back);
	CU_OK(cuMemcpyDtoH(back, t, MiB));
	CHECK(memcmp(host, back, MiB) == 0);
	/* the pointer table reports each mapping as its own range */
	CUdeviceptr base;
	size_t size;
	CU_OK(cuMemGetAddressRange(&base, &size, t));
	CHECK_EQ_INT(base, va);
	CHECK_EQ_INT(size, 2 * MiB);
	/* past the mapped part of the reservation: refused */
	CHECK_EQ_INT(cuMemcpyHtoD(va + 4 * MiB - 8, buf, 16), CUDA_ERROR_INVALID_VALUE);
	/* a VMM mapping is not cuMemFree's */
	CHECK_EQ_INT(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);
	/* handles released while mapped: memory lives until the unmap */
	CU_OK(cuMemRelease(h[0]));
	CU_OK(cuMemRelease(h[1]));
	CHECK_EQ_INT(cuMemRelease(h[1]), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemcpyDtoH(back, t, 16));
	CHECK(back[3] == host[3]);
	/* unmapping a sub-range of a mapping is refused; whole mappings work */
	CHECK_EQ_INT(cuMemUnmap(va, MiB), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAddressFree(va, 64 * MiB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
	CU_OK(cuMemUnmap(va, 4 * MiB));
	CHECK_EQ_INT(cuMemcpyDtoH(back, t, 16), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemGetAddressRange(&base, &size, t), CUDA_ERROR_NOT_FOUND);
	CU_OK(cuMemAddressFree(va, 64 * MiB));
	CHECK_EQ_INT(cuMemAddressFree(va, 64 * MiB), CUDA_ERROR_INVALID_VALUE);
}

TEST(vmm_error_codes)
{
	setup();
	CUdeviceptr va;
	CUmemAllocationProp p = dev_prop(0);
	CUmemGenericAllocationHandle h, h2;
	CHECK_EQ_INT(cuMemAddressReserve(&va, MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);       /* not a granule */
	CHECK_EQ_INT(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 1), CUDA_ERROR_INVALID_VALUE);   /* flags */
	CHECK_EQ_INT(cuMemAddressReserve(NULL, 2 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemCreate(&h, MiB, &p, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemCreate(&h, 2 * MiB, &p, 1), CUDA_ERROR_INVALID_VALUE);
	CUmemAllocationProp other = dev_prop(1);
	CHECK_EQ_INT(cuMemCreate(&h, 2 * MiB, &other, 0), CUDA_ERROR_INVALID_DEVICE);
	size_t free0, free1, total;
	CU_OK(cuMemGetInfo(&free0, &total));
	CU_OK(cuMemCreate(&h, 4 * MiB, &p, 0));
	CU_OK(cuMemGetInfo(&free1, &total));
	CHECK_EQ_INT(free0 - free1, 4 * MiB);                  /* charged at create */
	CU_OK(cuMemAddressReserve(&va, 8 * MiB, 4 * MiB, 0, 0));
	CHECK_EQ_INT(va % (4 * MiB), 0);
	CHECK_EQ_INT(cuMemMap(va, 4 * MiB, 2 * MiB, h, 0), CUDA_ERROR_INVALID_VALUE);   /* offset must be 0 */
	CHECK_EQ_INT(cuMemMap(va, 4 * MiB, 0, h, 1), CUDA_ERROR_INVALID_VALUE);         /* flags */
	CHECK_EQ_INT(cuMemMap(va + MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);   /* unaligned */
	CHECK_EQ_INT(cuMemMap(va, 8 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);         /* larger than the handle */
	CHECK_EQ_INT(cuMemMap(va + 6 * MiB, 4 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* past the reservation */
	CHECK_EQ_INT(cuMemMap(va, 2 * MiB, 0, (CUmemGenericAllocationHandle)12345, 0), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemMap(va, 4 * MiB, 0, h, 0));
	CU_OK(cuMemCreate(&h2, 2 * MiB, &p, 0));
	CHECK_EQ_INT(cuMemMap(va + 2 * MiB, 2 * MiB, 0, h2, 0), CUDA_ERROR_INVALID_VALUE); /* already mapped */
	CUmemAccessDesc a = rw();
	CHECK_EQ_INT(cuMemSetAccess(va, 8 * MiB, &a, 1), CUDA_ERROR_INVALID_VALUE);     /* not all mapped */
	CHECK_EQ_INT(cuMemSetAccess(va, 4 * MiB, &a, 0), CUDA_ERROR_INVALID_VALUE);
	a.location.id = 2;
	CHECK_EQ_INT(cuMemSetAccess(va, 4 * MiB, &a, 1), CUDA_ERROR_INVALID_DEVICE);
	a = rw();
	CU_OK(cuMemSetAccess(va, 4 * MiB, &a, 1));
	CU_OK(cuMemsetD32(va, 7, MiB));
	CU_OK(cuMemUnmap(va, 4 * MiB));
	CU_OK(cuMemRelease(h));
	CU_OK(cuMemRelease(h2));
	CU_OK(cuMemGetInfo(&free1, &total));
	CHECK_EQ_INT(free1, free0);                            /* everything given back */
	/* remapping the same range starts with no access again */
	CU_OK(cuMemCreate(&h, 2 * MiB, &p, 0));
	CU_OK(cuMemMap(va, 2 * MiB, 0, h, 0));
	CHECK_EQ_INT(cuMemsetD32(va, 1, 4), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemUnmap(va, 2 * MiB));
	CU_OK(cuMemRelease(h));
	CU_OK(cuMemAddressFree(va, 8 * MiB));
	CHECK_EQ_INT(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
}

/* What NCCL asks of VMM: host-located memory (its host buffers) with host
 * and device access, the handle retained from an address (its frees), and
 * a POSIX fd export imported again and mapped at a second address (its
 * cross-process buffers): both addresses see the same bytes. */
TEST(vmm_host_location_retain_and_fd_export)
{
	setup();
	int numa = -1;
	CU_OK(cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0));
	CHECK_EQ_INT(numa, 0);
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	p.location.id = numa;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	size_t g;
	CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CUmemGenericAllocationHandle h, again, imported;
	CU_OK(cuMemCreate(&h, g, &p, 0));
	CUdeviceptr va, vb;
	CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
	CU_OK(cuMemAddressReserve(&vb, g, 0, 0, 0));
	CU_OK(cuMemMap(va, g, 0, h, 0));
	CUmemAccessDesc a[2];
	memset(a, 0, sizeof a);
	a[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	a[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	a[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CU_OK(cuMemSetAccess(va, g, a, 2));
	CU_OK(cuMemsetD32(va, 0x12345678, 16));
	/* retained from an interior address: the same handle, one more reference */
	CU_OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 100)));
	CHECK(again == h);
	CHECK_EQ_INT(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)vb), CUDA_ERROR_INVALID_VALUE);
	/* export as a POSIX fd, import, map at vb: the same pages */
	int fd = -1;
	CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	CHECK(fd >= 0);
	CHECK_EQ_INT(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_NOT_SUPPORTED);
	CU_OK(cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
	close(fd);
	CU_OK(cuMemMap(vb, g, 0, imported, 0));
	CU_OK(cuMemSetAccess(vb, g, a, 1));
	unsigned int word = 0;
	CU_OK(cuMemcpyDtoH(&word, vb + 60, 4));
	CHECK(word == 0x12345678u);
	CU_OK(cuMemsetD32(vb, 0x0badf00d, 1));
	CU_OK(cuMemcpyDtoH(&word, va, 4));
	CHECK(word == 0x0badf00du);
	/* unmap, then both references of h and the imported one go */
	CU_OK(cuMemUnmap(va, g));
	CU_OK(cuMemUnmap(vb, g));
	CU_OK(cuMemRelease(h));
	CU_OK(cuMemRelease(h));
	CHECK_EQ_INT(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE); /* control: no reference left */
	CU_OK(cuMemRelease(imported));
	CU_OK(cuMemAddressFree(va, g));
	CU_OK(cuMemAddressFree(vb, g));
	CHECK_EQ_INT(cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)-1,
						    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), CUDA_ERROR_INVALID_VALUE);
}

static cuuint64_t attr(CUmemoryPool p, CUmemPool_attribute a)
{
	cuuint64_t v = 0;
	CHECK_EQ_INT(cuMemPoolGetAttribute(p, a, &v), CUDA_SUCCESS);
	return v;
}

/* PyTorch's cudaMallocAsync backend: the default pool with the release
 * threshold at UINT64_MAX, one allocation per tensor, frees in stream
 * order, blocks reused. */
TEST(pool_default_reuse_and_threshold)
{
	setup();
	CUmemoryPool pool, cur;
	CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
	CU_OK(cuDeviceGetMemPool(&cur, 0));
	CHECK(pool == cur);
	CHECK_EQ_INT(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);  /* the default pool stays */
	cuuint64_t max = UINT64_MAX;
	CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
	CHECK(attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == UINT64_MAX);
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr a, b, c;
	CU_OK(cuMemAllocAsync(&a, 1000, s));
	CU_OK(cuMemAllocAsync(&b, 5000, s));
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096 + 8192);
	CU_OK(cuMemsetD8Async(a, 9, 1000, s));
	CU_OK(cuMemFreeAsync(a, s));
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 8192);
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4096 + 8192);
	/* the freed pointer is gone from the table... */
	unsigned char x;
	CHECK_EQ_INT(cuMemcpyDtoH(&x, a, 1), CUDA_ERROR_INVALID_VALUE);
	/* ...and its block comes back for a request of the same size */
	CU_OK(cuMemAllocAsync(&c, 900, s));
	CHECK(c == a);
	CU_OK(cuMemcpyDtoHAsync(&x, c, 1, s));
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(x, 9);                                         /* old contents, as a real pool */
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 4096 + 8192);
	cuuint64_t zero = 0, one = 1;
	CHECK_EQ_INT(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFreeAsync(b, s));
	CU_OK(cuMemFreeAsync(c, s));
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4096 + 8192);
	CU_OK(cuMemPoolTrimTo(pool, 0));
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
	CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));
	/* threshold 0: a free gives the memory back at once */
	CU_OK(cuMemAllocAsync(&a, 100, s));
	CU_OK(cuMemFreeAsync(a, s));
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
	CU_OK(cuStreamDestroy(s));
}

TEST(pool_created_current_and_errors)
{
	setup();
	CUmemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CUmemoryPool p, def, cur;
	CU_OK(cuMemPoolCreate(&p, &props));
	CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
	CHECK(p != def);
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr d, e;
	CU_OK(cuMemAllocFromPoolAsync(&d, 300, p, s));
	CHECK_EQ_INT(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096);
	CU_OK(cuDeviceSetMemPool(0, p));
	CU_OK(cuDeviceGetMemPool(&cur, 0));
	CHECK(cur == p);
	CU_OK(cuMemAllocAsync(&e, 10, s));                    /* from the current pool */
	CHECK_EQ_INT(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 8192);
	/* cuMemFree of a pool allocation: synchronous, accounted */
	CU_OK(cuMemFree(e));
	CHECK_EQ_INT(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096);
	/* destroying the current pool makes the default current again; the
	 * outstanding allocation keeps it alive until its free */
	CU_OK(cuMemPoolDestroy(p));
	CU_OK(cuDeviceGetMemPool(&cur, 0));
	CHECK(cur == def);
	CHECK_EQ_INT(cuMemAllocFromPoolAsync(&e, 10, p, s), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemPoolDestroy(p), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemsetD8Async(d, 1, 300, s));
	CU_OK(cuMemFreeAsync(d, s));
	CU_OK(cuStreamSynchronize(s));
	CHECK_EQ_INT(cuMemFreeAsync(d, s), CUDA_ERROR_INVALID_VALUE);  /* double free */
	/* bad arguments */
	CHECK_EQ_INT(cuMemAllocFromPoolAsync(&e, 0, def, s), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuMemAllocFromPoolAsync(NULL, 8, def, s), CUDA_ERROR_INVALID_VALUE);
	props.location.id = 5;
	CHECK_EQ_INT(cuMemPoolCreate(&p, &props), CUDA_ERROR_INVALID_DEVICE);
	props.location.id = 0;
	props.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
	CHECK_EQ_INT(cuMemPoolCreate(&p, &props), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuDeviceGetDefaultMemPool(&p, 3), CUDA_ERROR_INVALID_DEVICE);
	CHECK_EQ_INT(cuMemPoolGetAttribute(def, (CUmemPool_attribute)99, &props), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuStreamDestroy(s));
}

/* The entry points are reachable the way cudart reaches them. */
TEST(allocators_through_get_proc_address)
{
	setup();
	static const char *const names[] = {
		"cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemUnmap", "cuMemRelease",
		"cuMemGetAllocationGranularity", "cuMemAddressFree", "cuMemAllocFromPoolAsync", "cuMemPoolCreate",
		"cuMemPoolSetAttribute", "cuDeviceGetDefaultMemPool", "cuMemPoolTrimTo",
	};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		void *fn = NULL;
		CUdriverProcAddressQueryResult st;
		CHECK_EQ_INT(cuGetProcAddress_v2(names[i], &fn, 12080, 0, &st), CUDA_SUCCESS);
		if (!fn || st != CU_GET_PROC_ADDRESS_SUCCESS)
			CHECK_FAIL_("%s not found", names[i]);
	}
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
