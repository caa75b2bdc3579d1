/* SPDX-License-Identifier: MIT
 *
 * cooperative_groups/reduce.h (CPU device shim) - cg::reduce over a tile
 * (a butterfly of shfl_xor: every lane gets the result) and the operators
 * plus, less (the smaller value), greater (the larger), bit_and, bit_or,
 * bit_xor.
 *
 * Contract: header only; see cooperative_groups.h.
 */
#ifndef SIM_CG_REDUCE_H
#define SIM_CG_REDUCE_H
#include "../cooperative_groups.h"

namespace cooperative_groups {
template <class T> struct plus { T operator()(const T &a, const T &b) const { return a + b; } };
template <class T> struct less { T operator()(const T &a, const T &b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(const T &a, const T &b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(const T &a, const T &b) const { return a & b; } };
template <class T> struct bit_or { T operator()(const T &a, const T &b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(const T &a, const T &b) const { return a ^ b; } };

template <class Group, class T, class Op>
static inline std::remove_cv_t<std::remove_reference_t<T>> reduce(const Group &g, T &&value, Op op)
{
	std::remove_cv_t<std::remove_reference_t<T>> v = value;
	for (unsigned o = g.num_threads() / 2; o; o >>= 1)
		v = op(v, g.shfl_xor(v, o));
	return v;
}
} /* namespace cooperative_groups */
#endif /* SIM_CG_REDUCE_H */
