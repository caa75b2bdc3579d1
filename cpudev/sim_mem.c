/* SPDX-License-Identifier: MIT
 *
 * sim_mem.c - device memory, pinned host memory and the table that tells
 * every pointer's kind (cuPointerGetAttribute, copy validation, the
 * interposer's tests).
 *
 * Device memory lives in its own address range: one large PROT_NONE,
 * MAP_NORESERVE reservation (asked for at a fixed high hint, away from
 * malloc's heap and mmap area), from which allocations are committed page by
 * page with mprotect.  Each allocation starts on a page, is followed by at
 * least one guard page, and freed ranges go back to PROT_NONE (and
 * MADV_DONTNEED) and are not handed out again until the bump pointer has gone
 * round the whole reservation: overruns and use-after-free fault instead of
 * silently reading other data.  The reported capacity is SIM_DEVICE_MEM;
 * allocations beyond it fail with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Pinned host memory (cuMemAllocHost, cuMemHostAlloc) is ordinary mmap'd
 * memory recorded in the same table with kind SIM_PTR_HOST_PINNED; its device
 * pointer is its host address (unified addressing).
 *
 * Managed memory (cuMemAllocManaged) is device memory flagged
 * SIM_RANGE_MANAGED: the host may use the same address (the CPU device's
 * memory is host memory), copies accept it on either side, and
 * cuMemAdvise / cuMemPrefetchAsync check their range and do nothing.  The
 * storage of __device__/__constant__ variables (kernel-library globals,
 * sim_module.c) is recorded as device memory flagged SIM_RANGE_GLOBAL: it
 * lies outside the reservation and is never freed.
 *
 * Contract: any thread may call.  sim_mem_mu guards the table, the bump
 * pointer and the usage counter; no copy or kernel runs under it.
 */
#include "sim_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIM_RESERVE_HINT ((uintptr_t)0x200000000000ull) /* 32 TiB */
#define SIM_PAGE 4096u

static pthread_mutex_t sim_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t sim_mem_once = PTHREAD_ONCE_INIT;
static uintptr_t sim_dev_lo, sim_dev_hi;   /* the reservation             */
static uintptr_t sim_dev_next;             /* bump pointer (sim_mem_mu)   */
static uintptr_t sim_plain_hi;             /* cuMemAlloc below, VMM above */
static uintptr_t sim_va_next;              /* VMM bump pointer (sim_mem_mu) */
struct sim_va { uintptr_t base; size_t size; };
static struct sim_va *sim_va;              /* live VMM reservations       */
static size_t sim_nva, sim_capva;
static size_t sim_dev_used;                /* committed bytes (sim_mem_mu) */
static struct sim_range *sim_tab;          /* sorted by base (sim_mem_mu) */
static size_t sim_ntab, sim_captab;
static unsigned long long sim_next_buffer_id = 1;

static void sim_mem_reserve(void)
{
	static const size_t sizes[] = { 1ull << 40, 1ull << 37, 1ull << 35 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p = mmap((void *)SIM_RESERVE_HINT, sizes[i], PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED) {
			sim_dev_lo = (uintptr_t)p;
			sim_dev_hi = sim_dev_lo + sizes[i];
			sim_dev_next = sim_dev_lo;
			/* the upper quarter holds VMM address reservations */
			sim_plain_hi = sim_dev_lo + sizes[i] / 4 * 3;
			sim_va_next = sim_plain_hi;
			return;
		}
	}
	sim_msg("cannot reserve an address range for device memory: %s", strerror(errno));
}

int sim_mem_in_device_range(uintptr_t p)
{
	pthread_once(&sim_mem_once, sim_mem_reserve);
	return p >= sim_dev_lo && p < sim_dev_hi;
}

static size_t sim_round(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/* Index of the last entry with base <= p, or (size_t)-1.  sim_mem_mu held. */
static size_t sim_tab_floor(uintptr_t p)
{
	size_t lo = 0, hi = sim_ntab;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sim_tab[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : (size_t)-1;
}

static int sim_tab_insert(const struct sim_range *r)
{
	if (sim_ntab == sim_captab) {
		size_t cap = sim_captab ? sim_captab * 2 : 256;
		struct sim_range *t = realloc(sim_tab, cap * sizeof(*t));
		if (!t)
			return -1;
		sim_tab = t;
		sim_captab = cap;
	}
	size_t i = sim_tab_floor(r->base) + 1;
	memmove(&sim_tab[i + 1], &sim_tab[i], (sim_ntab - i) * sizeof(*sim_tab));
	sim_tab[i] = *r;
	sim_ntab++;
	return 0;
}

enum sim_ptr_kind sim_mem_classify(uintptr_t p, size_t n, struct sim_range *r)
{
	int in_dev = sim_mem_in_device_range(p);
	enum sim_ptr_kind k = in_dev ? SIM_PTR_BAD : SIM_PTR_NONE;
	pthread_mutex_lock(&sim_mem_mu);
	size_t i = sim_tab_floor(p);
	if (i != (size_t)-1) {
		const struct sim_range *e = &sim_tab[i];
		size_t len = e->size ? e->size : 1;
		if (p - e->base < len) {
			if (n <= len - (p - e->base)) {
				k = e->kind;
				if (r)
					*r = *e;
			} else {
				/* starts inside, runs past the end: fine only across
				 * adjacent mappings of one VMM reservation */
				k = SIM_PTR_BAD;
				uintptr_t end = e->base + len;
				size_t j = i + 1;
				while (e->res && j < sim_ntab && sim_tab[j].base == end && sim_tab[j].res == e->res &&
				       sim_tab[j].kind == e->kind) {
					end += sim_tab[j].size;
					if (p + n <= end) {
						k = e->kind;
						if (r)
							*r = *e;
						break;
					}
					j++;
				}
			}
		}
	}
	pthread_mutex_unlock(&sim_mem_mu);
	if (k == SIM_PTR_NONE && n && sim_mem_in_device_range(p + n - 1))
		k = SIM_PTR_BAD;
	return k;
}

/* Finds room for len bytes (+ a guard page) in the reservation.  Locked. */
static uintptr_t sim_dev_place(size_t len)
{
	size_t need = len + SIM_PAGE;
	if (sim_dev_next + need <= sim_plain_hi && sim_dev_next + need > sim_dev_next) {
		uintptr_t a = sim_dev_next;
		sim_dev_next += need;
		return a;
	}
	/* Wrapped: first fit between live device allocations. */
	uintptr_t prev_end = sim_dev_lo;
	for (size_t i = 0; i <= sim_ntab; i++) {
		uintptr_t next = sim_plain_hi;
		if (i < sim_ntab) {
			if (sim_tab[i].kind != SIM_PTR_DEVICE || sim_tab[i].base >= sim_plain_hi ||
			    (sim_tab[i].flags & SIM_RANGE_GLOBAL))
				continue;
			next = sim_tab[i].base;
		}
		if (next >= prev_end && next - prev_end >= need)
			return prev_end;
		if (i < sim_ntab)
			prev_end = sim_tab[i].base + sim_round(sim_tab[i].size, SIM_PAGE) + SIM_PAGE;
	}
	return 0;
}

static CUresult sim_dev_alloc(struct CUctx_st *ctx, size_t size, unsigned flags, struct sim_pool *pool,
			      CUdeviceptr *out)
{
	pthread_once(&sim_mem_once, sim_mem_reserve);
	if (!sim_dev_lo)
		return CUDA_ERROR_OUT_OF_MEMORY;
	size_t len = sim_round(size, SIM_PAGE);
	if (len < size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_mem_mu);
	uintptr_t a = 0;
	if (len > SIM_DEVICE_MEM - sim_dev_used || !(a = sim_dev_place(len))) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (mprotect((void *)a, len, PROT_READ | PROT_WRITE) != 0) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		struct sim_range r = { a, size, SIM_PTR_DEVICE, sim_next_buffer_id++, ctx, flags, 0, pool };
		if (sim_tab_insert(&r) != 0) {
			mprotect((void *)a, len, PROT_NONE);
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			sim_dev_used += len;
			*out = (CUdeviceptr)a;
		}
	}
	pthread_mutex_unlock(&sim_mem_mu);
	if (rc == CUDA_SUCCESS)
		SIM_VERBOSE("cuMemAlloc %zu bytes at 0x%llx", size, (unsigned long long)*out);
	return rc;
}

/* Removes the allocation starting exactly at base of the given kind; gives
 * its pages back.  CUDA_ERROR_INVALID_VALUE when there is none. */
static CUresult sim_release(uintptr_t base, enum sim_ptr_kind kind)
{
	pthread_mutex_lock(&sim_mem_mu);
	size_t i = sim_tab_floor(base);
	if (i == (size_t)-1 || sim_tab[i].base != base || sim_tab[i].kind != kind ||
	    (sim_tab[i].flags & SIM_RANGE_GLOBAL)) {
		pthread_mutex_unlock(&sim_mem_mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	size_t len = sim_round(sim_tab[i].size, SIM_PAGE);
	memmove(&sim_tab[i], &sim_tab[i + 1], (sim_ntab - i - 1) * sizeof(*sim_tab));
	sim_ntab--;
	if (kind == SIM_PTR_DEVICE) {
		madvise((void *)base, len, MADV_DONTNEED);
		mprotect((void *)base, len, PROT_NONE);
		sim_dev_used -= len;
	} else {
		munmap((void *)base, len);
	}
	pthread_mutex_unlock(&sim_mem_mu);
	return CUDA_SUCCESS;
}

/* ---- device memory */

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_dev_alloc(c, bytesize, 0, NULL, dptr);
}

SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	return sim_dev_alloc(c, bytesize, SIM_RANGE_MANAGED, NULL, dptr);
}

/* The range must lie inside one managed allocation. */
static CUresult sim_managed_range(CUdeviceptr p, size_t n)
{
	struct sim_range r;
	if (!p || n == 0 || sim_mem_classify((uintptr_t)p, n, &r) != SIM_PTR_DEVICE || !(r.flags & SIM_RANGE_MANAGED))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

int sim_prefetch_dev_ok(CUdevice dev)
{
	return dev == CU_DEVICE_CPU || (dev >= 0 && dev < SIM_DEVICE_COUNT);
}

int sim_prefetch_loc_ok(CUmemLocation loc)
{
	switch (loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE: return loc.id >= 0 && loc.id < SIM_DEVICE_COUNT;
	case CU_MEM_LOCATION_TYPE_HOST: return 1;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA: return loc.id == 0;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return 1;
	default: return 0;
	}
}

/* Advice is a hint about placement, which does not exist here. */
static CUresult sim_advise(CUdeviceptr p, size_t n, CUmem_advise advice, int target_ok)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY || !target_ok)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_managed_range(p, n);
}

SIM_EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
	return sim_advise(devPtr, count, advice, sim_prefetch_dev_ok(device));
}

SIM_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
	return sim_advise(devPtr, count, advice, sim_prefetch_loc_ok(location));
}

/* Prefetching moves nothing here: the call checks its arguments and the
 * stream, as the driver does, and returns. */
CUresult sim_mem_prefetch(enum sim_ds ds, CUdeviceptr p, size_t n, int dst_ok, unsigned flags, CUstream h)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dst_ok || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_managed_range(p, n);
}

CUresult sim_mem_register_global(uintptr_t p, size_t n, struct CUctx_st *ctx)
{
	if (!p || n == 0 || sim_mem_in_device_range(p))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	pthread_mutex_lock(&sim_mem_mu);
	size_t i = sim_tab_floor(p + n - 1);
	if (i != (size_t)-1 && sim_tab[i].base == p && sim_tab[i].size == n && (sim_tab[i].flags & SIM_RANGE_GLOBAL)) {
		/* already recorded */
	} else if (i != (size_t)-1 && sim_tab[i].base + (sim_tab[i].size ? sim_tab[i].size : 1) > p) {
		rc = CUDA_ERROR_INVALID_VALUE; /* overlaps another range */
	} else {
		struct sim_range r = { p, n, SIM_PTR_DEVICE, sim_next_buffer_id++, ctx, SIM_RANGE_GLOBAL, 0, NULL };
		if (sim_tab_insert(&r) != 0)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&sim_mem_mu);
	return rc;
}

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
				       unsigned int ElementSizeBytes)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	size_t pitch = sim_round(WidthInBytes, 512);
	if (Height > SIZE_MAX / pitch)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sim_dev_alloc(c, pitch * Height, 0, NULL, dptr);
	if (rc == CUDA_SUCCESS)
		*pPitch = pitch;
	return rc;
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* cudart passes cudaFree(0) ("no operation is performed", its documented
	 * way to create the context) straight down: the driver answers success. */
	if (dptr == 0)
		return CUDA_SUCCESS;
	struct sim_range r;
	/* VMM mappings are released with cuMemUnmap/cuMemRelease, not here */
	if (sim_mem_classify((uintptr_t)dptr, 1, &r) != SIM_PTR_DEVICE || r.res || (r.flags & SIM_RANGE_GLOBAL))
		return CUDA_ERROR_INVALID_VALUE;
	/* Like the driver, freeing waits for work that may still use it. */
	sim_sync_all();
	rc = sim_release((uintptr_t)dptr, SIM_PTR_DEVICE);
	if (rc == CUDA_SUCCESS && r.pool)
		sim_pool_forget(r.pool, &r);
	return rc;
}

CUresult sim_mem_alloc_async(enum sim_ds ds, CUdeviceptr *dptr, size_t bytesize, CUstream h)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* from the device's current pool (sim_vmm.c) */
	return sim_pool_alloc(sim_pool_current(), s, bytesize, dptr);
}

CUresult sim_mem_free_async(enum sim_ds ds, CUdeviceptr dptr, CUstream h)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* as cuMemFree(0): nothing to free (cudaFreeAsync(nullptr, s), NCCL's
	 * and allocators' teardown) */
	if (dptr == 0)
		return CUDA_SUCCESS;
	struct sim_range r;
	if (sim_mem_classify((uintptr_t)dptr, 1, &r) != SIM_PTR_DEVICE || r.base != (uintptr_t)dptr || r.res ||
	    (r.flags & SIM_RANGE_GLOBAL))
		return CUDA_ERROR_INVALID_VALUE;
	return sim_pool_free_async(s, &r);
}

/* ---- for the allocators of sim_vmm.c */

CUresult sim_mem_dev_alloc(struct CUctx_st *ctx, size_t size, struct sim_pool *pool, CUdeviceptr *out)
{
	return sim_dev_alloc(ctx, size, 0, pool, out);
}

CUresult sim_mem_dev_release(uintptr_t base)
{
	return sim_release(base, SIM_PTR_DEVICE);
}

unsigned long long sim_mem_next_id(void)
{
	pthread_mutex_lock(&sim_mem_mu);
	unsigned long long id = sim_next_buffer_id++;
	pthread_mutex_unlock(&sim_mem_mu);
	return id;
}

uintptr_t sim_mem_va_reserve(size_t size, size_t align)
{
	pthread_once(&sim_mem_once, sim_mem_reserve);
	if (!sim_dev_lo || !size || (align & (align - 1)))
		return 0;
	if (align < SIM_PAGE)
		align = SIM_PAGE;
	uintptr_t a = 0;
	pthread_mutex_lock(&sim_mem_mu);
	if (sim_nva == sim_capva) {
		size_t cap = sim_capva ? 2 * sim_capva : 16;
		struct sim_va *v = realloc(sim_va, cap * sizeof *v);
		if (!v)
			goto out;
		sim_va = v;
		sim_capva = cap;
	}
	/* bump first, then first fit between live reservations (sorted) */
	uintptr_t cand = sim_round(sim_va_next, align);
	if (cand < sim_va_next || cand + size < cand || cand + size > sim_dev_hi) {
		cand = sim_round(sim_plain_hi, align);
		for (size_t i = 0; i <= sim_nva; i++) {
			uintptr_t lim = i < sim_nva ? sim_va[i].base : sim_dev_hi;
			if (cand + size >= cand && cand + size <= lim)
				break;
			if (i == sim_nva) {
				cand = 0;
				break;
			}
			cand = sim_round(sim_va[i].base + sim_va[i].size, align);
		}
		if (!cand)
			goto out;
	} else {
		sim_va_next = cand + size;
	}
	size_t i = 0;
	while (i < sim_nva && sim_va[i].base < cand)
		i++;
	memmove(&sim_va[i + 1], &sim_va[i], (sim_nva - i) * sizeof *sim_va);
	sim_va[i] = (struct sim_va){ cand, size };
	sim_nva++;
	a = cand;
out:
	pthread_mutex_unlock(&sim_mem_mu);
	return a;
}

void sim_mem_va_release(uintptr_t base, size_t size)
{
	pthread_mutex_lock(&sim_mem_mu);
	for (size_t i = 0; i < sim_nva; i++)
		if (sim_va[i].base == base && sim_va[i].size == size) {
			memmove(&sim_va[i], &sim_va[i + 1], (sim_nva - i - 1) * sizeof *sim_va);
			sim_nva--;
			break;
		}
	pthread_mutex_unlock(&sim_mem_mu);
}

int sim_mem_charge(size_t bytes)
{
	int rc = -1;
	pthread_mutex_lock(&sim_mem_mu);
	if (bytes <= SIM_DEVICE_MEM - sim_dev_used) {
		sim_dev_used += bytes;
		rc = 0;
	}
	pthread_mutex_unlock(&sim_mem_mu);
	return rc;
}

void sim_mem_uncharge(size_t bytes)
{
	pthread_mutex_lock(&sim_mem_mu);
	sim_dev_used -= bytes;
	pthread_mutex_unlock(&sim_mem_mu);
}

int sim_mem_table_add(const struct sim_range *r)
{
	pthread_mutex_lock(&sim_mem_mu);
	int rc = sim_tab_insert(r);
	pthread_mutex_unlock(&sim_mem_mu);
	return rc;
}

int sim_mem_table_remove(uintptr_t base, struct sim_range *out)
{
	int rc = -1;
	pthread_mutex_lock(&sim_mem_mu);
	size_t i = sim_tab_floor(base);
	if (i != (size_t)-1 && sim_tab[i].base == base) {
		if (out)
			*out = sim_tab[i];
		memmove(&sim_tab[i], &sim_tab[i + 1], (sim_ntab - i - 1) * sizeof(*sim_tab));
		sim_ntab--;
		rc = 0;
	}
	pthread_mutex_unlock(&sim_mem_mu);
	return rc;
}

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_mem_mu);
	*free_bytes = SIM_DEVICE_MEM - sim_dev_used;
	pthread_mutex_unlock(&sim_mem_mu);
	*total = SIM_DEVICE_MEM;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	struct sim_range r;
	enum sim_ptr_kind k = sim_mem_classify((uintptr_t)dptr, 1, &r);
	if (k != SIM_PTR_DEVICE && k != SIM_PTR_HOST_PINNED)
		return CUDA_ERROR_NOT_FOUND;
	if (pbase)
		*pbase = (CUdeviceptr)r.base;
	if (psize)
		*psize = r.size;
	return CUDA_SUCCESS;
}

/* ---- pinned host memory */

static CUresult sim_host_alloc(void **pp, size_t size)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pp || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	size_t len = sim_round(size, SIM_PAGE);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&sim_mem_mu);
	struct sim_range r = { (uintptr_t)p, size, SIM_PTR_HOST_PINNED, sim_next_buffer_id++, c, 0, 0, NULL };
	int bad = sim_tab_insert(&r);
	pthread_mutex_unlock(&sim_mem_mu);
	if (bad) {
		munmap(p, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return sim_host_alloc(pp, bytesize);
}

SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
		return CUDA_ERROR_INVALID_VALUE;
	return sim_host_alloc(pp, bytesize);
}

SIM_EXPORT CUresult cuMemFreeHost(void *p)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!p) /* as free(NULL) and cuMemFree(0): cudaFreeHost(NULL) passes it down */
		return CUDA_SUCCESS;
	if (sim_mem_classify((uintptr_t)p, 1, NULL) != SIM_PTR_HOST_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	sim_sync_all();
	return sim_release((uintptr_t)p, SIM_PTR_HOST_PINNED);
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pdptr || Flags != 0 || sim_mem_classify((uintptr_t)p, 1, NULL) != SIM_PTR_HOST_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

/* ---- pointer attributes */

/* Writes one attribute of r (kind k) for ptr into data.  strict: the
 * cuPointerGetAttribute rules (errors for unknown pointers); otherwise the
 * cuPointerGetAttributes rules (zero values). */
static CUresult sim_attr(CUpointer_attribute a, void *data, enum sim_ptr_kind k, const struct sim_range *r,
			 CUdeviceptr ptr, int strict)
{
	int known = k == SIM_PTR_DEVICE || k == SIM_PTR_HOST_PINNED;
	if (strict && !known)
		return CUDA_ERROR_INVALID_VALUE;
	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = known ? r->ctx : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = !known ? 0 : k == SIM_PTR_DEVICE ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = known ? ptr : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
		int host = k == SIM_PTR_HOST_PINNED || (known && (r->flags & SIM_RANGE_MANAGED));
		if (strict && !host)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = host ? (void *)(uintptr_t)ptr : NULL;
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(bool *)data = known && (r->flags & SIM_RANGE_MANAGED);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(bool *)data = known;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = known ? 0 : -2;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = known ? r->id : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = known ? (CUdeviceptr)r->base : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = known ? r->size : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(bool *)data = false;
		return CUDA_SUCCESS;
	/* what NCCL's buffer registration asks: cuMemAlloc memory can be
	 * shared with cuIpcGetMemHandle, pool and VMM memory cannot */
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		*(bool *)data = k == SIM_PTR_DEVICE && !r->res && !r->pool && !(r->flags & SIM_RANGE_MANAGED);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned int *)data = known ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		*(bool *)data = false; /* no NIC can reach host memory posing as a GPU's */
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = known ? (CUmemoryPool)r->pool : NULL;
		return CUDA_SUCCESS;
	default:
		return strict ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	}
}

SIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_range r = { 0 };
	enum sim_ptr_kind k = sim_mem_classify((uintptr_t)ptr, 1, &r);
	return sim_attr(attribute, data, k, &r, ptr, 1);
}

SIM_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
					   void **data, CUdeviceptr ptr)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (numAttributes == 0 || !attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_range r = { 0 };
	enum sim_ptr_kind k = sim_mem_classify((uintptr_t)ptr, 1, &r);
	for (unsigned i = 0; i < numAttributes; i++) {
		if (!data[i])
			return CUDA_ERROR_INVALID_VALUE;
		rc = sim_attr(attributes[i], data[i], k, &r, ptr, 0);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}
