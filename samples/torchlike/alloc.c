/* SPDX-License-Identifier: MIT
 *
 * alloc.c - PyTorch's caching allocator rules for samples/torchlike (see
 * alloc.h).
 *
 * Data: blocks of a segment form a doubly linked list in address order;
 * free blocks of a pool are on an unsorted list searched for the best fit
 * (smallest block that fits, lowest address on ties); live blocks are found
 * by address through an open-addressing hash.
 *
 * Contract: single caller at a time (alloc.h); every driver call checked.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/sample.h"
#include "alloc.h"

#define KB 1024ull
#define MB (1024ull * 1024ull)
#define MIN_BLOCK 512ull          /* kMinBlockSize: rounding                */
#define SMALL_SIZE (1 * MB)       /* kSmallSize: the small pool's limit     */
#define SMALL_BUFFER (2 * MB)     /* kSmallBuffer: a small segment          */
#define LARGE_BUFFER (20 * MB)    /* kLargeBuffer: a large segment          */
#define MIN_LARGE_ALLOC (10 * MB) /* kMinLargeAlloc                         */
#define ROUND_LARGE (2 * MB)      /* kRoundLarge                            */
#define EXPANDABLE_VA (4096 * MB) /* address space reserved per pool        */

enum { SMALL, LARGE, NPOOLS };

struct block {
	CUdeviceptr addr;
	size_t size;
	int pool;
	int allocated;
	struct block *prev, *next;   /* neighbours in the segment           */
	struct block *free_next;     /* the pool's free list                */
};

struct expandable {
	CUdeviceptr base;            /* the reservation                     */
	size_t mapped;               /* bytes mapped from base              */
	size_t page;
	struct block *last;          /* the block at the mapped end         */
};

static enum ta_mode mode;
static CUstream stream;
static struct block *free_list[NPOOLS];
static struct expandable exp_seg[NPOOLS];
static struct ta_stats stats;

/* ---- live blocks by address */
static struct block **live;
static size_t live_cap;          /* power of two */
static struct block tombstone;

static size_t hash_addr(CUdeviceptr a)
{
	uint64_t x = (uint64_t)a;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (size_t)x;
}

static void live_put(struct block *b);

static void live_grow(void)
{
	struct block **old = live;
	size_t oc = live_cap;
	live_cap = live_cap ? live_cap * 2 : 4096;
	live = calloc(live_cap, sizeof *live);
	if (!live)
		sample_die(1, "out of host memory");
	for (size_t i = 0; i < oc; i++)
		if (old[i] && old[i] != &tombstone)
			live_put(old[i]);
	free(old);
}

static void live_put(struct block *b)
{
	if ((stats.live_blocks + 1) * 2 > live_cap)
		live_grow();
	for (size_t i = hash_addr(b->addr) & (live_cap - 1);; i = (i + 1) & (live_cap - 1))
		if (!live[i] || live[i] == &tombstone) {
			live[i] = b;
			return;
		}
}

static struct block *live_take(CUdeviceptr a)
{
	if (!live_cap)
		return NULL;
	for (size_t i = hash_addr(a) & (live_cap - 1);; i = (i + 1) & (live_cap - 1)) {
		if (!live[i])
			return NULL;
		if (live[i] != &tombstone && live[i]->addr == a) {
			struct block *b = live[i];
			live[i] = &tombstone;
			return b;
		}
	}
}

/* ---- pools */

static size_t round_size(size_t n)
{
	return n < MIN_BLOCK ? MIN_BLOCK : (n + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
}

static size_t segment_size(size_t size)
{
	if (size <= SMALL_SIZE)
		return SMALL_BUFFER;
	if (size < MIN_LARGE_ALLOC)
		return LARGE_BUFFER;
	return (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

static void free_push(struct block *b)
{
	b->free_next = free_list[b->pool];
	free_list[b->pool] = b;
}

static void free_remove(struct block *b)
{
	for (struct block **pp = &free_list[b->pool]; *pp; pp = &(*pp)->free_next)
		if (*pp == b) {
			*pp = b->free_next;
			return;
		}
}

static struct block *best_fit(int pool, size_t size)
{
	struct block *best = NULL;
	for (struct block *b = free_list[pool]; b; b = b->free_next)
		if (b->size >= size &&
		    (!best || b->size < best->size || (b->size == best->size && b->addr < best->addr)))
			best = b;
	return best;
}

static struct block *new_block(CUdeviceptr addr, size_t size, int pool)
{
	struct block *b = calloc(1, sizeof *b);
	if (!b)
		sample_die(1, "out of host memory");
	b->addr = addr;
	b->size = size;
	b->pool = pool;
	return b;
}

/* A new cuMemAlloc segment of the pool, as one free block. */
static void grow_caching(int pool, size_t size)
{
	size_t seg = segment_size(size);
	CUdeviceptr p;
	CK(cuMemAlloc(&p, seg));
	stats.segments++;
	stats.reserved_bytes += seg;
	free_push(new_block(p, seg, pool));
}

/* Maps pages at the end of the pool's expandable segment until a free block
 * of at least size bytes sits at its end. */
static void grow_expandable(int pool, size_t size)
{
	struct expandable *e = &exp_seg[pool];
	if (!e->base) {
		CUmemAllocationProp prop;
		memset(&prop, 0, sizeof prop);
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = 0;
		size_t gran;
		CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
		e->page = pool == SMALL ? SMALL_BUFFER : LARGE_BUFFER;
		if (e->page % gran)
			sample_die(1, "allocation granularity %zu does not divide %zu", gran, e->page);
		CK(cuMemAddressReserve(&e->base, EXPANDABLE_VA, 0, 0, 0));
	}
	size_t have = e->last && !e->last->allocated ? e->last->size : 0;
	while (have < size) {
		if (e->mapped + e->page > EXPANDABLE_VA)
			sample_die(1, "expandable segment full (%llu MiB)", (unsigned long long)(EXPANDABLE_VA / MB));
		CUmemAllocationProp prop;
		memset(&prop, 0, sizeof prop);
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = 0;
		CUmemGenericAllocationHandle h;
		CUmemAccessDesc acc;
		memset(&acc, 0, sizeof acc);
		acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		acc.location.id = 0;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		CUdeviceptr at = e->base + e->mapped;
		CK(cuMemCreate(&h, e->page, &prop, 0));
		CK(cuMemMap(at, e->page, 0, h, 0));
		CK(cuMemSetAccess(at, e->page, &acc, 1));
		CK(cuMemRelease(h)); /* the mapping keeps the memory */
		e->mapped += e->page;
		stats.segments++;
		stats.reserved_bytes += e->page;
		if (e->last && !e->last->allocated) {
			e->last->size += e->page;
		} else {
			struct block *b = new_block(at, e->page, pool);
			b->prev = e->last;
			if (e->last)
				e->last->next = b;
			e->last = b;
			free_push(b);
		}
		have = e->last->size;
	}
}

void ta_init(enum ta_mode m, CUstream s)
{
	mode = m;
	stream = s;
	if (mode == TA_ASYNC) {
		CUmemoryPool pool;
		cuuint64_t max = UINT64_MAX;
		CK(cuDeviceGetDefaultMemPool(&pool, 0));
		CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
	}
}

CUdeviceptr ta_alloc(size_t bytes)
{
	if (mode == TA_ASYNC) {
		CUdeviceptr p;
		CK(cuMemAllocAsync(&p, bytes ? bytes : 1, stream));
		struct block *b = new_block(p, bytes, SMALL);
		b->allocated = 1;
		live_put(b);
		stats.live_blocks++;
		stats.segments++;
		stats.allocated_bytes += bytes;
		stats.reserved_bytes += bytes;
		return p;
	}
	size_t size = round_size(bytes);
	int pool = size <= SMALL_SIZE ? SMALL : LARGE;
	struct block *b = best_fit(pool, size);
	if (!b) {
		if (mode == TA_EXPANDABLE)
			grow_expandable(pool, size);
		else
			grow_caching(pool, size);
		b = best_fit(pool, size);
		if (!b)
			sample_die(1, "allocator: no block of %zu bytes after growing", size);
	}
	free_remove(b);
	size_t rest = b->size - size;
	if (pool == SMALL ? rest >= MIN_BLOCK : rest > SMALL_SIZE) {
		struct block *r = new_block(b->addr + size, rest, pool);
		r->prev = b;
		r->next = b->next;
		if (b->next)
			b->next->prev = r;
		b->next = r;
		b->size = size;
		if (mode == TA_EXPANDABLE && exp_seg[pool].last == b)
			exp_seg[pool].last = r;
		free_push(r);
	}
	b->allocated = 1;
	live_put(b);
	stats.live_blocks++;
	stats.allocated_bytes += b->size;
	return b->addr;
}

/* Merges b's free neighbour n (which follows b) into b. */
static void merge_next(struct block *b)
{
	struct block *n = b->next;
	free_remove(n);
	b->size += n->size;
	b->next = n->next;
	if (n->next)
		n->next->prev = b;
	if (mode == TA_EXPANDABLE && exp_seg[b->pool].last == n)
		exp_seg[b->pool].last = b;
	free(n);
}

void ta_free(CUdeviceptr p)
{
	struct block *b = live_take(p);
	if (!b)
		sample_die(1, "allocator: free of an unknown pointer 0x%llx", (unsigned long long)p);
	stats.live_blocks--;
	stats.allocated_bytes -= b->size;
	if (mode == TA_ASYNC) {
		CK(cuMemFreeAsync(p, stream));
		stats.segments--;
		stats.reserved_bytes -= b->size;
		free(b);
		return;
	}
	b->allocated = 0;
	if (b->next && !b->next->allocated)
		merge_next(b);
	if (b->prev && !b->prev->allocated) {
		struct block *pv = b->prev;
		free_remove(pv);
		free_push(b); /* so that merge_next can take it off the list */
		merge_next(pv);
		free_push(pv);
		return;
	}
	free_push(b);
}

void ta_stats(struct ta_stats *out)
{
	*out = stats;
}
