/* SPDX-License-Identifier: MIT
 *
 * hook_libc.c - libddp's filling of the port's libc table (ddp_libc_,
 * runtime/port/ddp_port.h) from runtime/port/ddp_libc.def.
 *
 * libddp.so exports open, read, fopen, ... (the file hooks), and LD_PRELOAD
 * puts them first, so a plain call from inside the library would come back
 * to them.  Every row is resolved with dlvsym(RTLD_NEXT, symbol, version)
 * (then the architecture's base version): the next definition after
 * libddp.so, which is libc's.  This file defines ddp_libc_, so the linker
 * never takes runtime/port/ddp_port_libc.c (the plain-libc filling) into the
 * library.  The file hooks forward through the same table (REAL in
 * hook_file.c), and so does the runtime's own I/O, whatever thread calls it.
 *
 * Contract: hook_libc_resolve is idempotent, safe from any thread and from
 * inside a hook (dlvsym does not call the hooked functions); a call that
 * re-enters it while the same thread resolves returns at once (the caller's
 * pointer may still be NULL then: the file hooks pass through).
 */
#include <dlfcn.h>
#include <stddef.h>
#include "ddp_port.h"
#include "hook_file.h"

struct ddp_libc ddp_libc_;

static const struct {
	const char *name, *version;
	size_t slot;
} real_table[] = {
#define DDP_LIBC(ret, field, sym, ver, params) { sym, ver, offsetof(struct ddp_libc, field) },
#include "ddp_libc.def"
#undef DDP_LIBC
};

void hook_libc_resolve(void)
{
	static int resolved;
	static __thread int resolving;

	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE) || resolving)
		return;
	resolving = 1;
	for (size_t i = 0; i < sizeof real_table / sizeof real_table[0]; i++) {
		void *p = dlvsym(RTLD_NEXT, real_table[i].name, real_table[i].version);

		if (!p)
			p = dlvsym(RTLD_NEXT, real_table[i].name, DDP_GLIBC_BASE);
		__atomic_store_n((void **)((char *)&ddp_libc_ + real_table[i].slot), p, __ATOMIC_RELEASE);
	}
	resolving = 0;
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}
