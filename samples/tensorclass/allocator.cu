// SPDX-License-Identifier: MIT
//
// allocator.cu - where every Matrix's device block comes from.
//
//   pool   (default) the program's own first-fit pool: one cudaMalloc'd
//          arena, a free list sorted by offset, blocks split on allocation
//          and coalesced on release.  Blocks are never given back to the
//          driver: a freed block is reused by the next op that fits.
//   async  cudaMallocAsync/cudaFreeAsync on the device's default memory
//          pool (cudaDeviceGetDefaultMemPool), its release threshold set to
//          "keep everything" (cudaMemPoolSetAttribute), as PyTorch does.
//
// Both are stream-ordered on the program's one stream: a block freed by
// the host is only reused by work queued after the work that used it.
// TC_ALLOC_REPORT=1 prints the allocator's counts at exit (registered by a
// host constructor, before main).
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include "tensorclass.cuh"

namespace {
constexpr size_t kAlign = 256;

struct Pool {
	char *arena = nullptr;
	size_t bytes = 0;
	std::map<size_t, size_t> free_blocks;   // offset -> size
	std::map<size_t, size_t> used_blocks;   // offset -> size
	size_t high = 0, in_use = 0;
};

AllocMode g_mode = AllocMode::Pool;
Pool g_pool;
cudaStream_t g_stream;
cudaMemPool_t g_mempool;
unsigned long long g_allocs, g_frees;
bool g_report;

void report()
{
	if (!g_report)
		return;
	if (g_mode == AllocMode::Pool) {
		std::fprintf(stderr, "tensorclass: pool: %llu allocations, %llu frees, high %zu of %zu bytes\n", g_allocs,
			     g_frees, g_pool.high, g_pool.bytes);
	} else {
		uint64_t reserved = 0, used_high = 0;
		cudaMemPoolGetAttribute(g_mempool, cudaMemPoolAttrReservedMemCurrent, &reserved);
		cudaMemPoolGetAttribute(g_mempool, cudaMemPoolAttrUsedMemHigh, &used_high);
		std::fprintf(stderr, "tensorclass: cudaMallocAsync: %llu allocations, %llu frees, reserved %llu, used high %llu\n",
			     g_allocs, g_frees, (unsigned long long)reserved, (unsigned long long)used_high);
	}
}
} // namespace

// Before main: the report switch from the environment, the report at exit.
__attribute__((constructor)) static void alloc_from_env()
{
	const char *r = std::getenv("TC_ALLOC_REPORT");
	g_report = r && std::strcmp(r, "1") == 0;
	std::atexit(report);
}

cudaStream_t tc_stream() { return g_stream; }

void alloc_init(AllocMode mode, size_t pool_bytes, cudaStream_t stream)
{
	g_mode = mode;
	g_stream = stream;
	if (mode == AllocMode::Pool) {
		void *p = nullptr;
		CUDA_CHECK(cudaMalloc(&p, pool_bytes));
		g_pool.arena = static_cast<char *>(p);
		g_pool.bytes = pool_bytes;
		g_pool.free_blocks[0] = pool_bytes;
	} else {
		int dev = 0;
		CUDA_CHECK(cudaGetDevice(&dev));
		CUDA_CHECK(cudaDeviceGetDefaultMemPool(&g_mempool, dev));
		uint64_t keep_all = UINT64_MAX;
		CUDA_CHECK(cudaMemPoolSetAttribute(g_mempool, cudaMemPoolAttrReleaseThreshold, &keep_all));
	}
}

void *alloc_get(size_t bytes)
{
	size_t n = (bytes + kAlign - 1) / kAlign * kAlign;
	g_allocs++;
	if (g_mode == AllocMode::Async) {
		void *p = nullptr;
		CUDA_CHECK(cudaMallocAsync(&p, n, g_stream));
		return p;
	}
	for (auto it = g_pool.free_blocks.begin(); it != g_pool.free_blocks.end(); ++it) {
		if (it->second < n)
			continue;
		size_t off = it->first, size = it->second;
		g_pool.free_blocks.erase(it);
		if (size > n)
			g_pool.free_blocks[off + n] = size - n;
		g_pool.used_blocks[off] = n;
		g_pool.in_use += n;
		if (g_pool.in_use > g_pool.high)
			g_pool.high = g_pool.in_use;
		return g_pool.arena + off;
	}
	std::fprintf(stderr, "tensorclass: the pool's %zu bytes are used up (%zu asked); raise pool_mb\n", g_pool.bytes, n);
	std::exit(1);
}

void alloc_put(void *p)
{
	if (!p)
		return;
	g_frees++;
	if (g_mode == AllocMode::Async) {
		CUDA_CHECK(cudaFreeAsync(p, g_stream));
		return;
	}
	size_t off = (size_t)(static_cast<char *>(p) - g_pool.arena);
	auto u = g_pool.used_blocks.find(off);
	if (u == g_pool.used_blocks.end()) {
		std::fprintf(stderr, "tensorclass: freeing %p, which the pool did not hand out\n", p);
		std::abort();
	}
	size_t size = u->second;
	g_pool.used_blocks.erase(u);
	g_pool.in_use -= size;
	auto next = g_pool.free_blocks.lower_bound(off);
	if (next != g_pool.free_blocks.end() && next->first == off + size) { // merge with the next
		size += next->second;
		next = g_pool.free_blocks.erase(next);
	}
	if (next != g_pool.free_blocks.begin()) { // merge with the previous
		auto prev = std::prev(next);
		if (prev->first + prev->second == off) {
			prev->second += size;
			return;
		}
	}
	g_pool.free_blocks[off] = size;
}
