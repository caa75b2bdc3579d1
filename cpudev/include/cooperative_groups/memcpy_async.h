/* SPDX-License-Identifier: MIT
 *
 * cooperative_groups/memcpy_async.h (CPU device shim) - memcpy_async(group,
 * dst, src, bytes) copies at once (each thread of the group a strided share
 * of the bytes); wait(group) / wait_prior<N>(group) are the group's barrier,
 * after which every thread sees the whole copy, as on a GPU.
 *
 * Contract: header only; see cooperative_groups.h.
 */
#ifndef SIM_CG_MEMCPY_ASYNC_H
#define SIM_CG_MEMCPY_ASYNC_H
#include "../cooperative_groups.h"

namespace cooperative_groups {
template <class Group>
static inline void memcpy_async(const Group &g, void *dst, const void *src, size_t bytes)
{
	unsigned char *d = static_cast<unsigned char *>(dst);
	const unsigned char *s = static_cast<const unsigned char *>(src);
	for (size_t i = g.thread_rank(); i < bytes; i += g.num_threads())
		d[i] = s[i];
}
template <class Group> static inline void wait(const Group &g) { g.sync(); }
template <unsigned N, class Group> static inline void wait_prior(const Group &g) { g.sync(); }
} /* namespace cooperative_groups */
#endif /* SIM_CG_MEMCPY_ASYNC_H */
