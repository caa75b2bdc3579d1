/* SPDX-License-Identifier: MIT
 *
 * sim_vmm.c - the two allocators PyTorch uses besides cuMemAlloc: virtual
 * memory management (expandable segments) and stream-ordered pools
 * (backend:cudaMallocAsync).
 *
 * VMM.  cuMemAddressReserve takes an aligned range from the VMM quarter of
 * the device reservation (still PROT_NONE).  cuMemCreate makes "physical"
 * memory: a memfd of the size, charged against the device capacity.
 * cuMemMap maps the memfd MAP_SHARED|MAP_FIXED over the reserved range with
 * no access (as the driver: a new mapping is not accessible);
 * cuMemSetAccess gives access (mprotect) and enters the mapping into the
 * pointer table with its reservation's id, so a copy or a kernel argument
 * that straddles two adjacent mappings of one reservation is valid
 * (sim_mem_classify).  cuMemUnmap (whole mappings only, synchronising) puts
 * PROT_NONE anonymous pages back; the memfd is closed when the handle is
 * released and no mapping remains.  Granularity: 2 MiB, as on an H100.
 * Rules follow cuda.h: sizes and addresses multiples of the granularity,
 * offset 0, flags 0, mappings only on unmapped parts of one reservation,
 * CUDA_ERROR_INVALID_VALUE otherwise; a location other than device 0 is
 * CUDA_ERROR_INVALID_DEVICE.  cuMemAddressFree of a reservation that still
 * has mappings is refused (CUDA_ERROR_INVALID_VALUE) on the CPU device.
 *
 * Pools.  Each allocation of a pool is its own device allocation
 * (sim_mem_dev_alloc, owner recorded).  cuMemFreeAsync returns the block to
 * the pool when the stream reaches the free: the pointer leaves the table
 * and its pages lose access (a use after free faults), but stay committed;
 * a later allocation of the same page-rounded size reuses the block (same
 * address, old contents, as a real pool may).  When the pool then holds
 * more than its release threshold (default 0; PyTorch sets UINT64_MAX), free
 * blocks go back to the device at once (the driver trims at the next
 * synchronisation; earlier is allowed).  Attributes: release threshold,
 * the three reuse flags (stored), reserved/used current and high.
 *
 * Contract: any thread.  sim_vmm_mu guards handles, mappings and pools; it
 * is taken before sim_mem.c's lock, never the other way round; no lock is
 * held while waiting for streams.
 */
#include "sim_internal.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIM_VMM_GRAN (2ull << 20)
#define SIM_PAGE 4096u
#define SIM_MAGIC_POOL 0x504f4f4cu

static pthread_mutex_t sim_vmm_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- VMM */

struct sim_handle {
	struct sim_handle *next;
	size_t size;
	int fd;
	unsigned refs;            /* cuMemCreate's 1, + cuMemRetainAllocationHandle's, - cuMemRelease's */
	unsigned maps;
};

struct sim_map {
	struct sim_map *next;
	uintptr_t va;
	size_t size;
	struct sim_handle *h;
	unsigned long long res;   /* reservation id */
	int access;               /* 0 none, 1 read, 2 read-write */
	unsigned long long id;
};

struct sim_res {
	struct sim_res *next;
	uintptr_t base;
	size_t size;
	unsigned long long id;
};

static struct sim_handle *handles;
static struct sim_map *maps;
static struct sim_res *reservations;
static unsigned long long next_res_id = 1;

static struct sim_handle *handle_find(CUmemGenericAllocationHandle h)
{
	for (struct sim_handle *p = handles; p; p = p->next)
		if ((CUmemGenericAllocationHandle)(uintptr_t)p == h && p->refs)
			return p;
	return NULL;
}

static void handle_maybe_free(struct sim_handle *h)
{
	if (h->refs || h->maps)
		return;
	for (struct sim_handle **pp = &handles; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	close(h->fd);
	sim_mem_uncharge(h->size);
	free(h);
}

static struct sim_res *res_holding(uintptr_t p, size_t n)
{
	for (struct sim_res *r = reservations; r; r = r->next)
		if (p >= r->base && n <= r->size && p - r->base <= r->size - n)
			return r;
	return NULL;
}

/* A device location (device 0), or host memory (HOST, HOST_NUMA node 0,
 * HOST_NUMA_CURRENT: one NUMA node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID 0), which
 * NCCL maps for its host buffers; both are memfd pages here. */
static int prop_check(const CUmemAllocationProp *prop, CUresult *rc)
{
	int host = prop && (prop->location.type == CU_MEM_LOCATION_TYPE_HOST ||
			    prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT ||
			    (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && prop->location.id == 0));
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE && !host)) {
		*rc = CUDA_ERROR_INVALID_VALUE;
		return -1;
	}
	if (!host && (prop->location.id < 0 || prop->location.id >= SIM_DEVICE_COUNT)) {
		*rc = CUDA_ERROR_INVALID_DEVICE;
		return -1;
	}
	return 0;
}

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
						 CUmemAllocationGranularity_flags option)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	if (prop_check(prop, &rc))
		return rc;
	*granularity = SIM_VMM_GRAN;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
				       unsigned long long flags)
{
	CUresult rc = sim_check_init();
	(void)addr; /* a hint: the driver may ignore it, and so do we */
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ptr || size == 0 || flags != 0 || size % SIM_VMM_GRAN || (alignment & (alignment - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_res *r = calloc(1, sizeof *r);
	if (!r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t va = sim_mem_va_reserve(size, alignment > SIM_VMM_GRAN ? alignment : SIM_VMM_GRAN);
	if (!va) {
		free(r);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&sim_vmm_mu);
	r->base = va;
	r->size = size;
	r->id = next_res_id++;
	r->next = reservations;
	reservations = r;
	pthread_mutex_unlock(&sim_vmm_mu);
	*ptr = (CUdeviceptr)va;
	SIM_VERBOSE("cuMemAddressReserve %zu bytes at 0x%llx", size, (unsigned long long)va);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_res **pp = &reservations;
	while (*pp && !((*pp)->base == (uintptr_t)ptr && (*pp)->size == size))
		pp = &(*pp)->next;
	struct sim_res *r = *pp;
	rc = r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	for (struct sim_map *m = maps; r && m; m = m->next)
		if (m->res == r->id)
			rc = CUDA_ERROR_INVALID_VALUE; /* still mapped */
	if (rc == CUDA_SUCCESS) {
		*pp = r->next;
		sim_mem_va_release(r->base, r->size);
		free(r);
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return rc;
}

/* A new handle over fd (size bytes, already charged), published in the
 * handle list; fd < 0 (its creation failed) or no memory: the charge is
 * returned and CUDA_ERROR_OUT_OF_MEMORY. */
static CUresult handle_publish(int fd, size_t size, CUmemGenericAllocationHandle *handle)
{
	struct sim_handle *h = fd >= 0 ? calloc(1, sizeof *h) : NULL;
	if (!h) {
		if (fd >= 0)
			close(fd);
		sim_mem_uncharge(size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->size = size;
	h->fd = fd;
	h->refs = 1;
	pthread_mutex_lock(&sim_vmm_mu);
	h->next = handles;
	handles = h;
	pthread_mutex_unlock(&sim_vmm_mu);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			       unsigned long long flags)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!handle || size == 0 || size % SIM_VMM_GRAN || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop_check(prop, &rc))
		return rc;
	if (sim_mem_charge(size) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	int fd = memfd_create("simcuda-vmm", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, (off_t)size) != 0) {
		close(fd);
		fd = -1;
	}
	return handle_publish(fd, size, handle);
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_handle *h = handle_find(handle);
	if (h) {
		h->refs--;
		handle_maybe_free(h);
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The handle of the mapping holding addr (any address inside it), with one
 * more reference for the caller to cuMemRelease: NCCL frees its cuMem
 * buffers this way (retain, unmap, release twice). */
SIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t p = (uintptr_t)addr;
	rc = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_vmm_mu);
	for (struct sim_map *m = maps; m; m = m->next)
		if (p >= m->va && p - m->va < m->size) {
			m->h->refs++;
			*handle = (CUmemGenericAllocationHandle)(uintptr_t)m->h;
			rc = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&sim_vmm_mu);
	return rc;
}

/* POSIX file descriptors (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR): a
 * handle's memory is a memfd, so the exported handle is a duplicate of it
 * and another process (NCCL passes it over a Unix socket) that imports it
 * maps the same pages: shared memory between two ranks' CPU devices, as
 * between two GPUs' processes. */
SIM_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
						 CUmemAllocationHandleType handleType, unsigned long long flags)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!shareableHandle || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED; /* no fabric, no Win32 handles */
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_handle *h = handle_find(handle);
	int fd = h ? fcntl(h->fd, F_DUPFD_CLOEXEC, 0) : -1;
	pthread_mutex_unlock(&sim_vmm_mu);
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)shareableHandle = fd;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
						   CUmemAllocationHandleType shHandleType)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	/* the POSIX fd travels in the pointer's value, as cuda.h documents */
	int in = (int)(intptr_t)osHandle;
	struct stat st;
	if (in < 0 || fstat(in, &st) != 0 || st.st_size <= 0 || (size_t)st.st_size % SIM_VMM_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	size_t size = (size_t)st.st_size;
	if (sim_mem_charge(size) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return handle_publish(fcntl(in, F_DUPFD_CLOEXEC, 0), size, handle);
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
			    unsigned long long flags)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (size == 0 || size % SIM_VMM_GRAN || (uintptr_t)ptr % SIM_VMM_GRAN || offset != 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_handle *h = handle_find(handle);
	struct sim_res *r = res_holding((uintptr_t)ptr, size);
	struct sim_map *m = NULL;
	rc = CUDA_ERROR_INVALID_VALUE;
	if (!h || !r || size > h->size)
		goto out;
	for (struct sim_map *o = maps; o; o = o->next)
		if ((uintptr_t)ptr < o->va + o->size && o->va < (uintptr_t)ptr + size)
			goto out; /* only unmapped parts of a reservation */
	m = calloc(1, sizeof *m);
	rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (!m)
		goto out;
	if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0) == MAP_FAILED) {
		free(m);
		goto out;
	}
	m->va = (uintptr_t)ptr;
	m->size = size;
	m->h = h;
	m->res = r->id;
	m->id = sim_mem_next_id();
	m->next = maps;
	maps = m;
	h->maps++;
	rc = CUDA_SUCCESS;
out:
	pthread_mutex_unlock(&sim_vmm_mu);
	return rc;
}

/* The mappings that exactly tile [p, p+n), in address order, into out
 * (at most max); the count, or -1 when the range is not whole mappings. */
static int tile(uintptr_t p, size_t n, struct sim_map **out, int max)
{
	int k = 0;
	uintptr_t at = p;
	while (at < p + n) {
		struct sim_map *hit = NULL;
		for (struct sim_map *m = maps; m; m = m->next)
			if (m->va == at)
				hit = m;
		if (!hit || hit->size > p + n - at || k == max)
			return -1;
		out[k++] = hit;
		at += hit->size;
	}
	return k;
}

#define SIM_VMM_MAX_TILE 4096

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!desc || count == 0 || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	int access = -1;
	/* the device's and the host's access (NCCL's host buffers name the
	 * host too) are one mapping here: the most permissive one is taken */
	for (size_t i = 0; i < count; i++) {
		CUmemLocationType lt = desc[i].location.type;
		if (lt == CU_MEM_LOCATION_TYPE_DEVICE) {
			if (desc[i].location.id < 0 || desc[i].location.id >= SIM_DEVICE_COUNT)
				return CUDA_ERROR_INVALID_DEVICE;
		} else if (lt != CU_MEM_LOCATION_TYPE_HOST && lt != CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT &&
			   !(lt == CU_MEM_LOCATION_TYPE_HOST_NUMA && desc[i].location.id == 0)) {
			return CUDA_ERROR_INVALID_VALUE;
		}
		int a;
		switch (desc[i].flags) {
		case CU_MEM_ACCESS_FLAGS_PROT_NONE: a = 0; break;
		case CU_MEM_ACCESS_FLAGS_PROT_READ: a = 1; break;
		case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: a = 2; break;
		default: return CUDA_ERROR_INVALID_VALUE;
		}
		if (a > access)
			access = a;
	}
	static struct sim_map *t[SIM_VMM_MAX_TILE];
	struct CUctx_st *ctx = NULL;
	sim_check_ctx(&ctx);
	pthread_mutex_lock(&sim_vmm_mu);
	int k = tile((uintptr_t)ptr, size, t, SIM_VMM_MAX_TILE);
	rc = k < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	for (int i = 0; i < k; i++) {
		struct sim_map *m = t[i];
		int prot = access == 2 ? PROT_READ | PROT_WRITE : access == 1 ? PROT_READ : PROT_NONE;
		if (mprotect((void *)m->va, m->size, prot) != 0) {
			rc = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		if (m->access && !access)
			sim_mem_table_remove(m->va, NULL);
		else if (!m->access && access) {
			struct sim_range r = { m->va, m->size, SIM_PTR_DEVICE, m->id, ctx, 0, m->res, NULL };
			if (sim_mem_table_add(&r) != 0) {
				rc = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
		}
		m->access = access;
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return rc;
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	static struct sim_map *t[SIM_VMM_MAX_TILE];
	pthread_mutex_lock(&sim_vmm_mu);
	int k = tile((uintptr_t)ptr, size, t, SIM_VMM_MAX_TILE);
	pthread_mutex_unlock(&sim_vmm_mu);
	if (k < 0)
		return CUDA_ERROR_INVALID_VALUE;
	sim_sync_all(); /* synchronising, as the driver: work may still use it */
	pthread_mutex_lock(&sim_vmm_mu);
	k = tile((uintptr_t)ptr, size, t, SIM_VMM_MAX_TILE);
	for (int i = 0; i < k; i++) {
		struct sim_map *m = t[i];
		if (m->access)
			sim_mem_table_remove(m->va, NULL);
		mmap((void *)m->va, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
		for (struct sim_map **pp = &maps; *pp; pp = &(*pp)->next)
			if (*pp == m) {
				*pp = m->next;
				break;
			}
		m->h->maps--;
		handle_maybe_free(m->h);
		free(m);
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return k < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* ---- stream-ordered pools */

struct sim_block {
	struct sim_block *next;
	uintptr_t base;
	size_t len;             /* page-rounded */
};

struct sim_pool {
	uint32_t magic;
	int is_default;
	int destroyed;
	struct sim_pool *next;
	cuuint64_t threshold;
	int reuse[3];
	cuuint64_t reserved, reserved_high, used, used_high;
	unsigned long live;       /* allocations not yet freed */
	struct sim_block *free_blocks;
};

static struct sim_pool default_pool = { SIM_MAGIC_POOL, 1, 0, NULL, 0, { 1, 1, 1 }, 0, 0, 0, 0, 0, NULL };
static struct sim_pool *current_pool = &default_pool;
static struct sim_pool *pools = &default_pool;

static size_t page_round(size_t n)
{
	return (n + SIM_PAGE - 1) / SIM_PAGE * SIM_PAGE;
}

static struct sim_pool *pool_find(CUmemoryPool h)
{
	for (struct sim_pool *p = pools; p; p = p->next)
		if ((CUmemoryPool)p == h && p->magic == SIM_MAGIC_POOL && !p->destroyed)
			return p;
	return NULL;
}

/* Gives free blocks back to the device until reserved <= keep.  sim_vmm_mu held. */
static void pool_trim(struct sim_pool *p, cuuint64_t keep)
{
	while (p->reserved > keep && p->free_blocks) {
		struct sim_block *b = p->free_blocks;
		p->free_blocks = b->next;
		madvise((void *)b->base, b->len, MADV_DONTNEED);
		sim_mem_uncharge(b->len);
		p->reserved -= b->len;
		free(b);
	}
}

static void pool_unlink_if_done(struct sim_pool *p)
{
	if (!p->destroyed || p->live)
		return;
	pool_trim(p, 0);
	for (struct sim_pool **pp = &pools; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->magic = 0;
	free(p);
}

struct sim_pool *sim_pool_current(void)
{
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_pool *p = current_pool;
	pthread_mutex_unlock(&sim_vmm_mu);
	return p;
}

CUresult sim_pool_alloc(struct sim_pool *p, struct CUstream_st *s, size_t size, CUdeviceptr *out)
{
	size_t len = page_round(size);
	if (len < size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_block **bp = &p->free_blocks;
	while (*bp && (*bp)->len != len)
		bp = &(*bp)->next;
	struct sim_block *b = *bp;
	if (b) {
		/* reuse: same address, the pages get their access back */
		*bp = b->next;
		struct sim_range r = { b->base, size, SIM_PTR_DEVICE, sim_mem_next_id(), s->ctx, 0, 0, p };
		if (mprotect((void *)b->base, len, PROT_READ | PROT_WRITE) != 0 || sim_mem_table_add(&r) != 0) {
			b->next = p->free_blocks;
			p->free_blocks = b;
			pthread_mutex_unlock(&sim_vmm_mu);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		*out = (CUdeviceptr)b->base;
		free(b);
	} else {
		pthread_mutex_unlock(&sim_vmm_mu);
		CUresult rc = sim_mem_dev_alloc(s->ctx, size, p, out);
		if (rc != CUDA_SUCCESS)
			return rc;
		pthread_mutex_lock(&sim_vmm_mu);
		p->reserved += len;
		if (p->reserved > p->reserved_high)
			p->reserved_high = p->reserved;
	}
	p->used += len;
	if (p->used > p->used_high)
		p->used_high = p->used;
	p->live++;
	pthread_mutex_unlock(&sim_vmm_mu);
	return CUDA_SUCCESS;
}

void sim_pool_forget(struct sim_pool *p, const struct sim_range *r)
{
	size_t len = page_round(r->size);
	pthread_mutex_lock(&sim_vmm_mu);
	p->used -= len;
	p->reserved -= len;
	p->live--;
	pool_unlink_if_done(p);
	pthread_mutex_unlock(&sim_vmm_mu);
}

struct sim_pool_free_work {
	struct sim_work w;
	struct sim_pool *pool;     /* NULL: a plain allocation, released */
	uintptr_t base;
};

static CUresult sim_pool_free_run(struct sim_work *w)
{
	struct sim_pool_free_work *fw = (struct sim_pool_free_work *)w;
	struct sim_range r;
	if (!fw->pool) {
		sim_mem_dev_release(fw->base);
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&sim_vmm_mu);
	if (sim_mem_table_remove(fw->base, &r) == 0) {
		struct sim_pool *p = fw->pool;
		struct sim_block *b = calloc(1, sizeof *b);
		size_t len = page_round(r.size);
		mprotect((void *)fw->base, len, PROT_NONE);
		p->used -= len;
		p->live--;
		if (b) {
			b->base = fw->base;
			b->len = len;
			b->next = p->free_blocks;
			p->free_blocks = b;
		} else {
			sim_mem_uncharge(len);
			p->reserved -= len;
		}
		pool_trim(p, p->destroyed ? 0 : p->threshold);
		pool_unlink_if_done(p);
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return CUDA_SUCCESS;
}

CUresult sim_pool_free_async(struct CUstream_st *s, const struct sim_range *r)
{
	struct sim_pool_free_work *fw = calloc(1, sizeof(*fw));
	if (!fw)
		return CUDA_ERROR_OUT_OF_MEMORY;
	fw->w.run = sim_pool_free_run;
	fw->w.what = "pool free";
	fw->pool = r->pool;
	fw->base = r->base;
	return sim_stream_enqueue(s, &fw->w, NULL);
}

CUresult sim_mem_alloc_from_pool_async(enum sim_ds ds, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				       CUstream h)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_pool *p = pool_find(pool);
	pthread_mutex_unlock(&sim_vmm_mu);
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_pool_alloc(p, s, bytesize, dptr);
}

SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (props->location.id < 0 || props->location.id >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	struct sim_pool *p = calloc(1, sizeof *p);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->magic = SIM_MAGIC_POOL;
	p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
	pthread_mutex_lock(&sim_vmm_mu);
	p->next = pools;
	pools = p;
	pthread_mutex_unlock(&sim_vmm_mu);
	*pool = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_pool *p = pool_find(pool);
	rc = !p || p->is_default ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	if (rc == CUDA_SUCCESS) {
		/* outstanding allocations keep it until their free */
		if (current_pool == p)
			current_pool = &default_pool;
		p->destroyed = 1;
		pool_unlink_if_done(p);
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return rc;
}

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	*pool_out = (CUmemoryPool)&default_pool;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	*pool = (CUmemoryPool)sim_pool_current();
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_pool *p = pool_find(pool);
	if (p)
		current_pool = p;
	pthread_mutex_unlock(&sim_vmm_mu);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_pool *p = pool_find(pool);
	rc = p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (p) {
		switch (attr) {
		case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
			p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value != 0;
			break;
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
			p->threshold = *(cuuint64_t *)value;
			pool_trim(p, p->threshold);
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:   /* only a reset to 0 */
			if (*(cuuint64_t *)value != 0)
				rc = CUDA_ERROR_INVALID_VALUE;
			else
				p->reserved_high = p->reserved;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
			if (*(cuuint64_t *)value != 0)
				rc = CUDA_ERROR_INVALID_VALUE;
			else
				p->used_high = p->used;
			break;
		default: /* the CURRENT values are read-only */
			rc = CUDA_ERROR_INVALID_VALUE;
		}
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return rc;
}

SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_pool *p = pool_find(pool);
	rc = p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (p) {
		switch (attr) {
		case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
			*(int *)value = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
			break;
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->threshold; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
		case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
		default: rc = CUDA_ERROR_INVALID_VALUE;
		}
	}
	pthread_mutex_unlock(&sim_vmm_mu);
	return rc;
}

SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&sim_vmm_mu);
	struct sim_pool *p = pool_find(pool);
	if (p)
		pool_trim(p, minBytesToKeep);
	pthread_mutex_unlock(&sim_vmm_mu);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
