/* SPDX-License-Identifier: MIT
 *
 * cooperative_groups.h (CPU device shim) - the part of CUDA's cooperative
 * groups that trainers use, on the CPU device's scheduler:
 *
 *   thread_block this_thread_block();    sync, thread_rank, size/num_threads,
 *                                        group_index, thread_index, group_dim
 *   thread_block_tile<N> tiled_partition<N>(block or tile), N = 1..32, power of 2:
 *       sync, thread_rank, size/num_threads, meta_group_rank, meta_group_size,
 *       shfl, shfl_down, shfl_up, shfl_xor (any trivially copyable type),
 *       any, all, ballot
 *   thread_group tiled_partition(parent, n)   (n = 1..32, power of 2)
 *   grid_group this_grid();              thread_rank, size, block_rank, num_blocks
 *   cooperative_groups::sync(g)
 *   <cooperative_groups/reduce.h>: reduce(tile, v, plus/less/greater/bit_*)
 *   <cooperative_groups/scan.h>: inclusive_scan, exclusive_scan
 *   <cooperative_groups/memcpy_async.h>: memcpy_async + wait (synchronous)
 *
 * Tiles sit inside one warp, and their collective operations are the warp
 * functions of sim_kernel.h: an exchange through the block's warp slots
 * between two warp barriers of the scheduler (sim_exec.c), which release a
 * warp when all its live lanes have arrived.  So, as on a GPU, every lane
 * of a warp must reach a tile's collective (tiles of 16, 8 ... of one warp
 * call it together, as convergent code does).  Not emulated (compile-time
 * error naming the construct): grid_group::sync (cooperative launches),
 * coalesced_threads(), tiles over 32 threads, cluster groups.
 *
 * Contract: header only, after sim_kernel.h (force-included).
 */
#ifndef SIM_COOPERATIVE_GROUPS_H
#define SIM_COOPERATIVE_GROUPS_H

#include <type_traits>

namespace cooperative_groups {

namespace sim_detail {
static inline unsigned block_rank()
{
	return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }
template <class T> struct always_false : std::false_type {};

/* Lane-level collectives of a segment of `width` lanes of the warp. */
template <class T> static inline T shfl(T v, unsigned src, unsigned width)
{
	unsigned lane = __lane_id(), base = lane / width * width;
	return sim_shfl_from(v, base + src % width);
}
template <class T> static inline T shfl_down(T v, unsigned d, unsigned width)
{
	unsigned lane = __lane_id(), base = lane / width * width;
	return sim_shfl_from(v, lane + d < base + width ? lane + d : lane);
}
template <class T> static inline T shfl_up(T v, unsigned d, unsigned width)
{
	unsigned lane = __lane_id(), base = lane / width * width;
	return sim_shfl_from(v, lane >= base + d ? lane - d : lane);
}
template <class T> static inline T shfl_xor(T v, unsigned m, unsigned width)
{
	unsigned lane = __lane_id(), base = lane / width * width, src = lane ^ m;
	return sim_shfl_from(v, src >= base && src < base + width ? src : lane);
}
static inline unsigned ballot(int p, unsigned width)
{
	unsigned lane = __lane_id(), base = lane / width * width;
	unsigned bits = (unsigned)sim_warp_vote(p);
	unsigned mask = width == 32 ? 0xffffffffu : ((1u << width) - 1u);
	return (bits >> base) & mask;
}
} /* namespace sim_detail */

class thread_block {
public:
	static void sync() { __syncthreads(); }
	static unsigned thread_rank() { return sim_detail::block_rank(); }
	static unsigned size() { return sim_detail::block_size(); }
	static unsigned num_threads() { return sim_detail::block_size(); }
	static dim3 group_index() { return dim3(blockIdx); }
	static dim3 thread_index() { return dim3(threadIdx); }
	static dim3 group_dim() { return dim3(blockDim); }
	static dim3 dim_threads() { return dim3(blockDim); }
};
static inline thread_block this_thread_block() { return thread_block(); }

/* A tile of n threads (n = 1..32, a power of two) as a run-time value. */
class thread_group {
protected:
	unsigned n_, meta_rank_, meta_size_;
public:
	thread_group(unsigned n, unsigned meta_rank, unsigned meta_size) : n_(n), meta_rank_(meta_rank), meta_size_(meta_size) {}
	void sync() const { __syncwarp(); }
	unsigned thread_rank() const { return sim_detail::block_rank() % n_; }
	unsigned size() const { return n_; }
	unsigned num_threads() const { return n_; }
	unsigned meta_group_rank() const { return meta_rank_; }
	unsigned meta_group_size() const { return meta_size_; }
};

template <unsigned N, class Parent = void> class thread_block_tile;

template <unsigned N> class thread_block_tile<N, void> {
	static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
		      "simcuda: thread_block_tile<N>: the CPU device emulates tiles of 1, 2, 4, 8, 16 or 32 threads");
protected:
	unsigned meta_rank_, meta_size_;
public:
	thread_block_tile(unsigned meta_rank, unsigned meta_size) : meta_rank_(meta_rank), meta_size_(meta_size) {}
	operator thread_group() const { return thread_group(N, meta_rank_, meta_size_); }
	void sync() const { __syncwarp(); }
	unsigned thread_rank() const { return sim_detail::block_rank() % N; }
	static constexpr unsigned size() { return N; }
	static constexpr unsigned num_threads() { return N; }
	unsigned meta_group_rank() const { return meta_rank_; }
	unsigned meta_group_size() const { return meta_size_; }
	template <class T> T shfl(T v, int src) const { return sim_detail::shfl(v, (unsigned)src, N); }
	template <class T> T shfl_down(T v, unsigned d) const { return sim_detail::shfl_down(v, d, N); }
	template <class T> T shfl_up(T v, unsigned d) const { return sim_detail::shfl_up(v, d, N); }
	template <class T> T shfl_xor(T v, unsigned m) const { return sim_detail::shfl_xor(v, m, N); }
	int any(int p) const { return sim_detail::ballot(p, N) != 0; }
	int all(int p) const { return sim_detail::ballot(p, N) == (N == 32 ? 0xffffffffu : ((1u << N) - 1u)); }
	unsigned ballot(int p) const { return sim_detail::ballot(p, N); }
	template <class T = void> unsigned match_any(...) const
	{
		static_assert(sim_detail::always_false<T>::value, "simcuda: thread_block_tile::match_any/match_all are not emulated");
		return 0;
	}
};
/* tiled_partition<N>(parent) has type thread_block_tile<N, Parent>, which
 * converts to thread_block_tile<N>. */
template <unsigned N, class Parent> class thread_block_tile : public thread_block_tile<N, void> {
public:
	using thread_block_tile<N, void>::thread_block_tile;
};

template <unsigned N> static inline thread_block_tile<N, thread_block> tiled_partition(const thread_block &)
{
	unsigned r = sim_detail::block_rank(), n = sim_detail::block_size();
	return thread_block_tile<N, thread_block>(r / N, (n + N - 1) / N);
}
template <unsigned N, unsigned M, class P>
static inline thread_block_tile<N, thread_block_tile<M, P>> tiled_partition(const thread_block_tile<M, P> &t)
{
	static_assert(N <= M, "simcuda: tiled_partition<N>(tile<M>) needs N <= M");
	return thread_block_tile<N, thread_block_tile<M, P>>(t.thread_rank() / N, M / N);
}
static inline thread_group tiled_partition(const thread_block &, unsigned n)
{
	if (!n || n > 32 || (n & (n - 1)))
		sim_trap("cooperative_groups::tiled_partition(block, n): the CPU device emulates n = 1, 2, 4, 8, 16 or 32");
	return thread_group(n, sim_detail::block_rank() / n, (sim_detail::block_size() + n - 1) / n);
}
template <unsigned M, class P> static inline thread_group tiled_partition(const thread_block_tile<M, P> &t, unsigned n)
{
	if (!n || n > M || (n & (n - 1)))
		sim_trap("cooperative_groups::tiled_partition(tile, n): n must be a power of two not over the tile's size");
	return thread_group(n, t.thread_rank() / n, M / n);
}

class grid_group {
public:
	static unsigned long long thread_rank()
	{
		unsigned long long b = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
		return b * sim_detail::block_size() + sim_detail::block_rank();
	}
	static unsigned long long size() { return num_blocks() * sim_detail::block_size(); }
	static unsigned long long num_threads() { return size(); }
	static unsigned long long block_rank()
	{
		return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
	}
	static unsigned long long num_blocks() { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
	static dim3 group_dim() { return dim3(gridDim); }
	static dim3 dim_blocks() { return dim3(gridDim); }
	static dim3 block_index() { return dim3(blockIdx); }
	static bool is_valid() { return false; }
	template <class T = void> void sync() const
	{
		static_assert(sim_detail::always_false<T>::value,
			      "simcuda: grid_group::sync() needs a cooperative launch, which the CPU device does not emulate");
	}
};
static inline grid_group this_grid() { return grid_group(); }

template <class T = void> static inline void coalesced_threads()
{
	static_assert(sim_detail::always_false<T>::value, "simcuda: cooperative_groups::coalesced_threads() is not emulated");
}

template <class G> static inline void sync(const G &g) { g.sync(); }
template <class G> static inline auto thread_rank(const G &g) { return g.thread_rank(); }
template <class G> static inline auto group_size(const G &g) { return g.num_threads(); }

} /* namespace cooperative_groups */

#endif /* SIM_COOPERATIVE_GROUPS_H */
