/* SPDX-License-Identifier: MIT
 *
 * assert.h (CPU device shim) - the C library's assert.h, then assert()
 * routed to sim_assert_fail (sim_kernel.h): a failed assert in a kernel stops
 * the launch with its message, as a device assert fails the kernel on a GPU.
 * NDEBUG keeps the library's no-op.  Like <assert.h>, may be included again.
 *
 * Contract: only for kernel libraries, where sim_kernel.h is force-included.
 */
#include_next <assert.h>
#if defined(__cplusplus) && !defined(NDEBUG)
#undef assert
#define assert(e) (static_cast<bool>(e) ? void(0) : ::sim_assert_fail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__))
#endif
