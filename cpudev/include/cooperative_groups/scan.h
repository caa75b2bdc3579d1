/* SPDX-License-Identifier: MIT
 *
 * cooperative_groups/scan.h (CPU device shim) - inclusive_scan and
 * exclusive_scan over a tile (shfl_up steps); exclusive_scan gives lane 0 a
 * value-initialised T.
 *
 * Contract: header only; see cooperative_groups.h.
 */
#ifndef SIM_CG_SCAN_H
#define SIM_CG_SCAN_H
#include "reduce.h"

namespace cooperative_groups {
template <class Group, class T, class Op = plus<std::remove_cv_t<std::remove_reference_t<T>>>>
static inline std::remove_cv_t<std::remove_reference_t<T>> inclusive_scan(const Group &g, T &&value, Op op = Op())
{
	std::remove_cv_t<std::remove_reference_t<T>> v = value;
	unsigned r = g.thread_rank();
	for (unsigned d = 1; d < g.num_threads(); d <<= 1) {
		auto u = g.shfl_up(v, d);
		if (r >= d)
			v = op(u, v);
	}
	return v;
}
template <class Group, class T, class Op = plus<std::remove_cv_t<std::remove_reference_t<T>>>>
static inline std::remove_cv_t<std::remove_reference_t<T>> exclusive_scan(const Group &g, T &&value, Op op = Op())
{
	auto v = inclusive_scan(g, value, op);
	auto u = g.shfl_up(v, 1);
	return g.thread_rank() ? u : std::remove_cv_t<std::remove_reference_t<T>>();
}
} /* namespace cooperative_groups */
#endif /* SIM_CG_SCAN_H */
