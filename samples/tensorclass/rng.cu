// SPDX-License-Identifier: MIT
//
// rng.cu - weights initialised on the device by a counter-based hash
// generator (the idea of Philox/curand's counter mode, with a small
// integer hash): element i of stream s under seed k draws
//   u = hash(i + hash(k ^ (s * 0x9e3779b9)))
// and becomes ((u >> 8) * 2^-24 * 2 - 1) * scale, in [-scale, scale).  The
// same seed gives the same weights whatever the launch shape.
#include "tensorclass.cuh"

__host__ __device__ inline unsigned hash_u32(unsigned x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

__global__ void uniform_kernel(float *out, size_t n, unsigned key, float scale)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		unsigned u = hash_u32((unsigned)i + key);
		float unit = (float)(u >> 8) * (1.0f / 16777216.0f);
		out[i] = (unit * 2.0f - 1.0f) * scale;
	}
}

Matrix random_uniform(int rows, int cols, unsigned seed, unsigned stream_id, float scale)
{
	Matrix m(rows, cols);
	unsigned key = hash_u32(seed ^ (stream_id * 0x9e3779b9U));
	uniform_kernel<<<(unsigned)((m.size() + 127) / 128), 128, 0, tc_stream()>>>(m.data(), m.size(), key, scale);
	LAUNCH_CHECK();
	return m;
}
