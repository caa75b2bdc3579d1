/* SPDX-License-Identifier: MIT
 *
 * curand_kernel.h (CPU device shim) - cuRAND's device API for its default
 * generator, XORWOW (curandState = curandStateXORWOW_t), as host code that
 * gives the numbers the toolkit's device code gives:
 *
 *   curand_init(seed, subsequence, offset, &state)   the toolkit's seed
 *       scrambling, then subsequence * 2^67 + offset steps skipped;
 *   curand, curand_uniform, curand_uniform_double, curand_normal,
 *   curand_normal_double, curand_log_normal(_double), skipahead,
 *   skipahead_sequence.
 *
 * The state has the toolkit's layout.  The skips are the generator's
 * 160-bit linear step raised to powers of two (GF(2) matrices), computed
 * once per process on first use (about 400 KiB, a few milliseconds) where
 * the toolkit reads precomputed tables.  curand() and curand_uniform() are
 * bit for bit the toolkit's; the normal forms use the host's logf, sqrtf,
 * sinf and cosf as the toolkit's host path does (a GPU's __sincosf differs
 * in the last bits).  The other generators (Philox, MRG32k3a, MTGP32,
 * Sobol) are not declared: using one fails to compile naming it.
 *
 * Contract: header only; the tables are a function-local static (thread-safe
 * first use), read-only afterwards.
 */
#ifndef SIM_CURAND_KERNEL_H
#define SIM_CURAND_KERNEL_H
#include <curand.h>
#include <cmath>
#include <cstring>

struct curandStateXORWOW {
	unsigned int d, v[5];
	int boxmuller_flag;
	int boxmuller_flag_double;
	float boxmuller_extra;
	double boxmuller_extra_double;
};
typedef struct curandStateXORWOW curandStateXORWOW_t;
typedef struct curandStateXORWOW curandState_t;
typedef struct curandStateXORWOW curandState;

#define EXTRA_FLAG_NORMAL 0x00000001
#define EXTRA_FLAG_LOG_NORMAL 0x00000002
#define CURAND_2POW32_INV (2.3283064e-10f)
#define CURAND_2POW32_INV_DOUBLE (2.3283064365386963e-10)
#define CURAND_2POW53_INV_DOUBLE (1.1102230246251565e-16)
#define CURAND_2POW32_INV_2PI (2.3283064e-10f * 6.2831855f)
#define CURAND_PI_DOUBLE (3.1415926535897932)

namespace sim_curand {

/* Row i: the image of state bit i (word i / 32, bit i % 32) under the matrix. */
struct mat {
	unsigned int row[160][5];
};

/* The linear part of one XORWOW step (v only; d advances by a constant). */
static inline void step_v(unsigned int v[5])
{
	unsigned int t = v[0] ^ (v[0] >> 2);
	v[0] = v[1];
	v[1] = v[2];
	v[2] = v[3];
	v[3] = v[4];
	v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

static inline void matvec(const unsigned int in[5], const mat &m, unsigned int out[5])
{
	unsigned int r[5] = {0, 0, 0, 0, 0};
	for (int i = 0; i < 160; i++)
		if ((in[i / 32] >> (i % 32)) & 1u)
			for (int w = 0; w < 5; w++)
				r[w] ^= m.row[i][w];
	memcpy(out, r, sizeof(r));
}

/* pow2[i] = step^(2^i) for i < 64 (offsets); seq[i] = step^(2^(67+i))
 * (subsequences, 2^67 steps apart). */
struct tables {
	mat pow2[64];
	mat seq[64];
};

static inline void square(const mat &a, mat &out)
{
	for (int i = 0; i < 160; i++)
		matvec(a.row[i], a, out.row[i]);
}

static inline tables *build()
{
	tables *t = new tables;
	mat cur, next;
	for (int i = 0; i < 160; i++) {
		unsigned int v[5] = {0, 0, 0, 0, 0};
		v[i / 32] = 1u << (i % 32);
		step_v(v);
		memcpy(cur.row[i], v, sizeof(v));
	}
	for (int k = 0; k < 67 + 64; k++) {
		if (k < 64)
			t->pow2[k] = cur;
		if (k >= 67)
			t->seq[k - 67] = cur;
		square(cur, next);
		cur = next;
	}
	return t;
}

static inline const tables &get()
{
	static const tables *t = build();
	return *t;
}
} /* namespace sim_curand */

static inline __device__ void skipahead(unsigned long long n, curandStateXORWOW_t *state)
{
	const sim_curand::tables &t = sim_curand::get();
	for (int i = 0; i < 64; i++)
		if ((n >> i) & 1ull)
			sim_curand::matvec(state->v, t.pow2[i], state->v);
	state->d += 362437u * (unsigned int)n;
}

static inline __device__ void skipahead_sequence(unsigned long long n, curandStateXORWOW_t *state)
{
	const sim_curand::tables &t = sim_curand::get();
	for (int i = 0; i < 64; i++)
		if ((n >> i) & 1ull)
			sim_curand::matvec(state->v, t.seq[i], state->v);
	/* d moves by 362437 * 2^67 * n: a multiple of 2^32 */
}

static inline __device__ void curand_init(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
					  curandStateXORWOW_t *state)
{
	unsigned int s0 = ((unsigned int)seed) ^ 0xaad26b49u;
	unsigned int s1 = (unsigned int)(seed >> 32) ^ 0xf7dcefddu;
	unsigned int t0 = 1099087573u * s0;
	unsigned int t1 = 2591861531u * s1;
	state->d = 6615241u + t1 + t0;
	state->v[0] = 123456789u + t0;
	state->v[1] = 362436069u ^ t0;
	state->v[2] = 521288629u + t1;
	state->v[3] = 88675123u ^ t1;
	state->v[4] = 5783321u + t0;
	skipahead_sequence(subsequence, state);
	skipahead(offset, state);
	state->boxmuller_flag = 0;
	state->boxmuller_flag_double = 0;
	state->boxmuller_extra = 0.f;
	state->boxmuller_extra_double = 0.;
}

static inline __device__ unsigned int curand(curandStateXORWOW_t *state)
{
	sim_curand::step_v(state->v);
	state->d += 362437u;
	return state->v[4] + state->d;
}

static inline __device__ float _curand_uniform(unsigned int x)
{
	return x * CURAND_2POW32_INV + (CURAND_2POW32_INV / 2.0f);
}

static inline __device__ double _curand_uniform_double_hq(unsigned int x, unsigned int y)
{
	unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << (53 - 32));
	return z * CURAND_2POW53_INV_DOUBLE + (CURAND_2POW53_INV_DOUBLE / 2.0);
}

static inline __device__ float curand_uniform(curandStateXORWOW_t *state)
{
	return _curand_uniform(curand(state));
}

static inline __device__ double curand_uniform_double(curandStateXORWOW_t *state)
{
	unsigned int x = curand(state);
	unsigned int y = curand(state);
	return _curand_uniform_double_hq(x, y);
}

static inline __device__ float2 _curand_box_muller(unsigned int x, unsigned int y)
{
	float2 r;
	float u = x * CURAND_2POW32_INV + (CURAND_2POW32_INV / 2);
	float v = y * CURAND_2POW32_INV_2PI + (CURAND_2POW32_INV_2PI / 2);
	float s = sqrtf(-2.0f * logf(u));
	r.x = sinf(v) * s;
	r.y = cosf(v) * s;
	return r;
}

static inline __device__ double2 _curand_box_muller_double(unsigned int x0, unsigned int x1, unsigned int y0,
							   unsigned int y1)
{
	double2 r;
	unsigned long long zx = (unsigned long long)x0 ^ ((unsigned long long)x1 << (53 - 32));
	double u = zx * CURAND_2POW53_INV_DOUBLE + (CURAND_2POW53_INV_DOUBLE / 2.0);
	unsigned long long zy = (unsigned long long)y0 ^ ((unsigned long long)y1 << (53 - 32));
	double v = zy * (CURAND_2POW53_INV_DOUBLE * 2.0) + CURAND_2POW53_INV_DOUBLE;
	double s = sqrt(-2.0 * log(u));
	r.x = sin(v * CURAND_PI_DOUBLE) * s;
	r.y = cos(v * CURAND_PI_DOUBLE) * s;
	return r;
}

static inline __device__ float curand_normal(curandStateXORWOW_t *state)
{
	if (state->boxmuller_flag != EXTRA_FLAG_NORMAL) {
		unsigned int x = curand(state);
		unsigned int y = curand(state);
		float2 v = _curand_box_muller(x, y);
		state->boxmuller_extra = v.y;
		state->boxmuller_flag = EXTRA_FLAG_NORMAL;
		return v.x;
	}
	state->boxmuller_flag = 0;
	return state->boxmuller_extra;
}

static inline __device__ double curand_normal_double(curandStateXORWOW_t *state)
{
	if (state->boxmuller_flag_double != EXTRA_FLAG_NORMAL) {
		unsigned int x0 = curand(state), x1 = curand(state), y0 = curand(state), y1 = curand(state);
		double2 v = _curand_box_muller_double(x0, x1, y0, y1);
		state->boxmuller_extra_double = v.y;
		state->boxmuller_flag_double = EXTRA_FLAG_NORMAL;
		return v.x;
	}
	state->boxmuller_flag_double = 0;
	return state->boxmuller_extra_double;
}

static inline __device__ float curand_log_normal(curandStateXORWOW_t *state, float mean, float stddev)
{
	if (state->boxmuller_flag != EXTRA_FLAG_LOG_NORMAL) {
		unsigned int x = curand(state);
		unsigned int y = curand(state);
		float2 v = _curand_box_muller(x, y);
		state->boxmuller_extra = expf(mean + (stddev * v.y));
		state->boxmuller_flag = EXTRA_FLAG_LOG_NORMAL;
		return expf(mean + (stddev * v.x));
	}
	state->boxmuller_flag = 0;
	return state->boxmuller_extra;
}

static inline __device__ double curand_log_normal_double(curandStateXORWOW_t *state, double mean, double stddev)
{
	if (state->boxmuller_flag_double != EXTRA_FLAG_LOG_NORMAL) {
		unsigned int x0 = curand(state), x1 = curand(state), y0 = curand(state), y1 = curand(state);
		double2 v = _curand_box_muller_double(x0, x1, y0, y1);
		state->boxmuller_extra_double = exp(mean + (stddev * v.y));
		state->boxmuller_flag_double = EXTRA_FLAG_LOG_NORMAL;
		return exp(mean + (stddev * v.x));
	}
	state->boxmuller_flag_double = 0;
	return state->boxmuller_extra_double;
}
#endif /* SIM_CURAND_KERNEL_H */
