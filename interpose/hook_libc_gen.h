/* SPDX-License-Identifier: MIT
 *
 * hook_libc_gen.h - expands the rows of hook_libc.def that belong to one
 * file: the exported prototype of every row of the area, and the body of
 * every FWD row.  Include it at the END of the area's file (the bodies call
 * its static helpers), after defining exactly one of
 *   HOOK_LIBC_AREA_FILE, HOOK_LIBC_AREA_STAT, HOOK_LIBC_AREA_STDIO,
 *   HOOK_LIBC_AREA_WRITE, HOOK_LIBC_AREA_NET.
 *
 * Contract: generated code only; no state.
 */
#ifdef HOOK_LIBC_AREA_FILE
#define HOOK_LIBC_IN_FILE(...) __VA_ARGS__
#else
#define HOOK_LIBC_IN_FILE(...)
#endif
#ifdef HOOK_LIBC_AREA_STAT
#define HOOK_LIBC_IN_STAT(...) __VA_ARGS__
#else
#define HOOK_LIBC_IN_STAT(...)
#endif
#ifdef HOOK_LIBC_AREA_STDIO
#define HOOK_LIBC_IN_STDIO(...) __VA_ARGS__
#else
#define HOOK_LIBC_IN_STDIO(...)
#endif
#ifdef HOOK_LIBC_AREA_WRITE
#define HOOK_LIBC_IN_WRITE(...) __VA_ARGS__
#else
#define HOOK_LIBC_IN_WRITE(...)
#endif
#ifdef HOOK_LIBC_AREA_NET
#define HOOK_LIBC_IN_NET(...) __VA_ARGS__
#else
#define HOOK_LIBC_IN_NET(...)
#endif

#define FWD(...) \
	{ \
		return __VA_ARGS__; \
	}
#define OWN ;
#define HOOK_LIBC(area, ret, name, params, body) HOOK_LIBC_IN_##area(DDP_EXPORT ret name params body)
#include "hook_libc.def"
#undef HOOK_LIBC
#undef FWD
#undef OWN
#undef HOOK_LIBC_IN_FILE
#undef HOOK_LIBC_IN_STAT
#undef HOOK_LIBC_IN_STDIO
#undef HOOK_LIBC_IN_WRITE
#undef HOOK_LIBC_IN_NET
