/* SPDX-License-Identifier: MIT
 *
 * cg_reduce.cu - cooperative groups as trainers use them: a warp per row
 * (tiled_partition<32>, meta_group_rank/size) with cg::reduce over
 * plus/greater/less, tiles of 16, 8, 4 and 2 threads (shfl, shfl_down,
 * shfl_up, shfl_xor, reduce, inclusive_scan, exclusive_scan, sync,
 * ballot), a two-stage block reduction with raw __shfl_xor_sync and
 * __shfl_down_sync, and a float4 shuffle.  Integer results are compared
 * exactly with host references; float sums with a tolerance.
 */
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>

#include "check.cuh"

namespace cg = cooperative_groups;

__global__ void row_stats(const float *x, float *sum, float *mx, float *mn, int rows, int cols)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
	if (row >= rows)
		return;
	float s = 0.0f, hi = -INFINITY, lo = INFINITY;
	for (int i = warp.thread_rank(); i < cols; i += warp.size()) {
		float v = x[row * cols + i];
		s += v;
		hi = fmaxf(hi, v);
		lo = fminf(lo, v);
	}
	s = cg::reduce(warp, s, cg::plus<float>());
	hi = cg::reduce(warp, hi, cg::greater<float>());
	lo = cg::reduce(warp, lo, cg::less<float>());
	if (warp.thread_rank() == 0) {
		sum[row] = s;
		mx[row] = hi;
		mn[row] = lo;
	}
}

/* 8 results per thread for tiles of N threads. */
template <int N> __global__ void tile_ops(const int *in, int *out)
{
	auto block = cg::this_thread_block();
	cg::thread_block_tile<N> t = cg::tiled_partition<N>(block);
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	int v = in[g];
	int *o = out + 8 * g;
	o[0] = cg::reduce(t, v, cg::plus<int>());
	o[1] = t.shfl_down(v, 1);
	o[2] = t.shfl_up(v, 1);
	o[3] = t.shfl_xor(v, N / 2);
	o[4] = t.shfl(v, N - 1);
	t.sync();
	o[5] = cg::inclusive_scan(t, v);
	o[6] = cg::exclusive_scan(t, v, cg::plus<int>());
	o[7] = (int)t.meta_group_rank() * 1000 + (int)t.meta_group_size() * 10 + (int)t.thread_rank() % 10 +
	       (t.ballot(v % 2) == 0 ? 0 : 0);
}

__device__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* Block sum: each warp reduces, warp sums meet in shared memory, warp 0
 * reduces them with __shfl_down_sync. */
__global__ void block_sum(const float *x, float *out, int n)
{
	__shared__ float part[32];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = i < n ? x[i] : 0.0f;
	v = warp_sum(v);
	int lane = threadIdx.x % warpSize, w = threadIdx.x / warpSize;
	if (lane == 0)
		part[w] = v;
	__syncthreads();
	if (w == 0) {
		v = lane < (int)(blockDim.x / warpSize) ? part[lane] : 0.0f;
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_down_sync(0xffffffffu, v, o);
		if (lane == 0)
			out[blockIdx.x] = v;
	}
}

__global__ void shuffle_float4(float4 *io)
{
	auto warp = cg::tiled_partition<32>(cg::this_thread_block());
	float4 v = io[threadIdx.x];
	io[threadIdx.x] = warp.shfl(v, 31 - (int)warp.thread_rank());
}

template <int N> static void check_tiles(int blocks, int threads)
{
	int total = blocks * threads;
	std::vector<int> in(total), out(8 * total);
	for (int i = 0; i < total; i++)
		in[i] = (i * 37 + 11) % 101 - 50;
	int *din, *dout;
	CK(cudaMalloc(&din, total * sizeof(int)));
	CK(cudaMalloc(&dout, 8 * total * sizeof(int)));
	CK(cudaMemcpy(din, in.data(), total * sizeof(int), cudaMemcpyHostToDevice));
	tile_ops<N><<<blocks, threads>>>(din, dout);
	CK(cudaGetLastError());
	CK(cudaMemcpy(out.data(), dout, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
	int bad[8] = {0};
	for (int g = 0; g < total; g++) {
		int t = g % threads, r = t % N, base = g - r;
		int sum = 0, inc = 0;
		for (int k = 0; k < N; k++)
			sum += in[base + k];
		for (int k = 0; k <= r; k++)
			inc += in[base + k];
		int want[8] = {sum,
			       r + 1 < N ? in[g + 1] : in[g],
			       r >= 1 ? in[g - 1] : in[g],
			       in[base + (r ^ (N / 2))],
			       in[base + N - 1],
			       inc,
			       inc - in[g],
			       (t / N) * 1000 + ((threads + N - 1) / N) * 10 + r % 10};
		for (int c = 0; c < 8; c++)
			bad[c] += out[8 * g + c] != want[c];
	}
	const char *what[8] = {"reduce(plus)", "shfl_down", "shfl_up", "shfl_xor", "shfl", "inclusive_scan",
			       "exclusive_scan", "meta_group_rank/size, thread_rank"};
	for (int c = 0; c < 8; c++) {
		char name[160];
		snprintf(name, sizeof(name), "tile<%d> in blocks of %d: %s", N, threads, what[c]);
		expect(name, bad[c] == 0);
	}
	CK(cudaFree(din));
	CK(cudaFree(dout));
}

int main()
{
	const int rows = 37, cols = 300;
	std::vector<float> x(rows * cols);
	for (int i = 0; i < rows * cols; i++)
		x[i] = (float)((i * 7919) % 1000) / 250.0f - 2.0f;
	float *dx, *ds, *dmx, *dmn;
	CK(cudaMalloc(&dx, x.size() * sizeof(float)));
	CK(cudaMalloc(&ds, rows * sizeof(float)));
	CK(cudaMalloc(&dmx, rows * sizeof(float)));
	CK(cudaMalloc(&dmn, rows * sizeof(float)));
	CK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
	const int warps_per_block = 4;
	row_stats<<<(rows + warps_per_block - 1) / warps_per_block, 32 * warps_per_block>>>(dx, ds, dmx, dmn, rows, cols);
	std::vector<float> s(rows), mx(rows), mn(rows);
	CK(cudaMemcpy(s.data(), ds, rows * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(mx.data(), dmx, rows * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(mn.data(), dmn, rows * sizeof(float), cudaMemcpyDeviceToHost));
	int bad_s = 0, bad_m = 0;
	for (int r = 0; r < rows; r++) {
		double rs = 0;
		float rmx = -INFINITY, rmn = INFINITY;
		for (int c = 0; c < cols; c++) {
			float v = x[r * cols + c];
			rs += v;
			rmx = fmaxf(rmx, v);
			rmn = fminf(rmn, v);
		}
		bad_s += fabs(s[r] - rs) > 1e-3;
		bad_m += mx[r] != rmx || mn[r] != rmn;
	}
	expect("warp per row: cg::reduce plus equals the host's sums", bad_s == 0);
	expect("warp per row: cg::reduce greater/less equal the host's max/min", bad_m == 0);

	check_tiles<32>(3, 96);
	check_tiles<16>(2, 64);
	check_tiles<8>(2, 64);
	check_tiles<4>(1, 32);
	check_tiles<2>(1, 32);

	const int n = 5000, threads = 256, blocks = (n + threads - 1) / threads;
	std::vector<float> v(n), bs(blocks);
	for (int i = 0; i < n; i++)
		v[i] = (float)(i % 13) - 6.0f;
	float *dv, *dbs;
	CK(cudaMalloc(&dv, n * sizeof(float)));
	CK(cudaMalloc(&dbs, blocks * sizeof(float)));
	CK(cudaMemcpy(dv, v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	block_sum<<<blocks, threads>>>(dv, dbs, n);
	CK(cudaMemcpy(bs.data(), dbs, blocks * sizeof(float), cudaMemcpyDeviceToHost));
	int bad = 0;
	for (int b = 0; b < blocks; b++) {
		float r = 0;
		for (int i = b * threads; i < (b + 1) * threads && i < n; i++)
			r += v[i];
		bad += bs[b] != r; /* small integers: exact in any order */
	}
	expect("block sum with __shfl_xor_sync and __shfl_down_sync", bad == 0);

	std::vector<float4> f4(32);
	for (int i = 0; i < 32; i++)
		f4[i] = make_float4(i, i + 0.5f, -i, 2.0f * i);
	float4 *df4;
	CK(cudaMalloc(&df4, 32 * sizeof(float4)));
	CK(cudaMemcpy(df4, f4.data(), 32 * sizeof(float4), cudaMemcpyHostToDevice));
	shuffle_float4<<<1, 32>>>(df4);
	std::vector<float4> r4(32);
	CK(cudaMemcpy(r4.data(), df4, 32 * sizeof(float4), cudaMemcpyDeviceToHost));
	bad = 0;
	for (int i = 0; i < 32; i++)
		bad += r4[i].x != f4[31 - i].x || r4[i].y != f4[31 - i].y || r4[i].z != f4[31 - i].z ||
		       r4[i].w != f4[31 - i].w;
	expect("tile shfl of a 16-byte float4", bad == 0);
	return cpuk_failures ? 1 : 0;
}
