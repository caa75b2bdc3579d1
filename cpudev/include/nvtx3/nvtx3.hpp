/* SPDX-License-Identifier: MIT
 *
 * nvtx3/nvtx3.hpp (CPU device shim) - the C++ interface (scoped ranges, marks, domains, attributes): no-ops, as in
 * nvtx3/nvToolsExt.h here (NVTX is annotation for profilers).
 *
 * Contract: header only.
 */
#ifndef SIM_NVTX3_HPP
#define SIM_NVTX3_HPP
#include "nvToolsExt.h"
namespace nvtx3 {
inline namespace v1 {
struct domain {
	struct global {};
	template <class D = global> static domain const &get() { static domain d; return d; }
};
struct rgb { rgb(uint8_t, uint8_t, uint8_t) {} };
struct argb { argb(uint8_t, uint8_t, uint8_t, uint8_t) {} };
struct color { template <class... A> color(A &&...) {} };
struct category { template <class... A> explicit category(A &&...) {} };
struct message { template <class... A> message(A &&...) {} };
struct payload { template <class... A> explicit payload(A &&...) {} };
template <class D = domain::global> struct registered_string_in {
	template <class... A> registered_string_in(A &&...) {}
	template <class... A> static registered_string_in const &get() { static registered_string_in s; return s; }
};
using registered_string = registered_string_in<>;
template <class D = domain::global> struct named_category_in {
	template <class... A> named_category_in(A &&...) {}
	template <class... A> static named_category_in const &get() { static named_category_in c; return c; }
};
using named_category = named_category_in<>;
struct event_attributes { template <class... A> explicit event_attributes(A &&...) {} };
template <class D = domain::global> struct scoped_range_in {
	template <class... A> explicit scoped_range_in(A &&...) {}
	scoped_range_in(scoped_range_in const &) = delete;
	scoped_range_in &operator=(scoped_range_in const &) = delete;
};
using scoped_range = scoped_range_in<>;
template <class D = domain::global> struct unique_range_in {
	template <class... A> explicit unique_range_in(A &&...) {}
};
using unique_range = unique_range_in<>;
struct range_handle { range_handle() = default; };
template <class D = domain::global, class... A> inline range_handle start_range_in(A &&...) { return {}; }
template <class... A> inline range_handle start_range(A &&...) { return {}; }
template <class D = domain::global> inline void end_range_in(range_handle) {}
inline void end_range(range_handle) {}
template <class D = domain::global, class... A> inline void mark_in(A &&...) {}
template <class... A> inline void mark(A &&...) {}
} /* namespace v1 */
} /* namespace nvtx3 */
#define NVTX3_FUNC_RANGE_IN(D) ::nvtx3::scoped_range_in<D> const sim_nvtx3_range_ { __func__ }
#define NVTX3_FUNC_RANGE() ::nvtx3::scoped_range const sim_nvtx3_range_ { __func__ }
#define NVTX3_V1_FUNC_RANGE_IN(D) NVTX3_FUNC_RANGE_IN(D)
#define NVTX3_V1_FUNC_RANGE() NVTX3_FUNC_RANGE()
#endif /* SIM_NVTX3_HPP */
