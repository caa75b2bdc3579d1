/* SPDX-License-Identifier: MIT
 *
 * curand_xorwow_ref.h - the host reference for cuRAND's XORWOW device API
 * (curandState) in the cpudev/cpukern programs, independent of the CPU
 * device's curand_kernel.h: the seed scrambling and step as the toolkit's
 * curand_kernel.h defines them, the subsequence skip (2^67 steps each)
 * through the toolkit's own precomputed host matrices
 * (precalc_xorwow_matrix_host, curand_precalc.h), and an offset skip by
 * plain steps.
 *
 * Contract: header only, host code of the nvcc-built program.  In the
 * CPU device's build of the same file (__SIMCUDA__) the toolkit's tables
 * are absent; that build keeps only the kernels, so the reference is never
 * run there and its subsequence skip is left empty.
 */
#ifndef CPUK_CURAND_XORWOW_REF_H
#define CPUK_CURAND_XORWOW_REF_H
#include <curand_kernel.h>
#include <math.h>

struct xorwow_ref {
	unsigned int d, v[5];
};

static inline unsigned int xorwow_ref_next(struct xorwow_ref *s)
{
	unsigned int t = s->v[0] ^ (s->v[0] >> 2);
	for (int i = 0; i < 4; i++)
		s->v[i] = s->v[i + 1];
	s->v[4] = (s->v[4] ^ (s->v[4] << 4)) ^ (t ^ (t << 1));
	s->d += 362437u;
	return s->v[4] + s->d;
}

static inline void xorwow_ref_init(struct xorwow_ref *s, unsigned long long seed, unsigned long long seq,
				   unsigned long long offset)
{
	unsigned int t0 = 1099087573u * (((unsigned int)seed) ^ 0xaad26b49u);
	unsigned int t1 = 2591861531u * ((unsigned int)(seed >> 32) ^ 0xf7dcefddu);
	s->d = 6615241u + t1 + t0;
	s->v[0] = 123456789u + t0;
	s->v[1] = 362436069u ^ t0;
	s->v[2] = 521288629u + t1;
	s->v[3] = 88675123u ^ t1;
	s->v[4] = 5783321u + t0;
#ifndef __SIMCUDA__
	for (int m = 0; seq; seq >>= 2, m++) {
		for (unsigned int k = 0; k < (seq & 3); k++) {
			unsigned int r[5] = {0, 0, 0, 0, 0};
			for (int bit = 0; bit < 160; bit++)
				if ((s->v[bit / 32] >> (bit % 32)) & 1u)
					for (int w = 0; w < 5; w++)
						r[w] ^= precalc_xorwow_matrix_host[m][5 * bit + w];
			for (int w = 0; w < 5; w++)
				s->v[w] = r[w];
		}
	}
#else
	(void)seq;
#endif
	while (offset--)
		xorwow_ref_next(s);
}

static inline float xorwow_ref_uniform(unsigned int x)
{
	return x * 2.3283064e-10f + (2.3283064e-10f / 2.0f);
}

static inline double xorwow_ref_uniform_double(unsigned int x, unsigned int y)
{
	unsigned long long z = (unsigned long long)x ^ ((unsigned long long)y << 21);
	return z * 1.1102230246251565e-16 + (1.1102230246251565e-16 / 2.0);
}

/* Box-Muller as the toolkit's host path computes it: (first, second). */
static inline void xorwow_ref_normal2(unsigned int x, unsigned int y, float *a, float *b)
{
	float u = x * 2.3283064e-10f + (2.3283064e-10f / 2);
	float v = y * (2.3283064e-10f * 6.2831855f) + ((2.3283064e-10f * 6.2831855f) / 2);
	float s = sqrtf(-2.0f * logf(u));
	*a = sinf(v) * s;
	*b = cosf(v) * s;
}
#endif
