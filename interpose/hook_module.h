/* SPDX-License-Identifier: MIT
 *
 * hook_module.h - set-up of the module hooks' driver helpers, and the
 * actions the KREG_* after-columns of hooks.def name (hook_module.c).
 *
 * Contract: hook_module_init once, inside library init, after the driver
 * symbols are resolved.  The actions run in the generated hook bodies after
 * a successful call, on the calling thread; a NULL handle or name is
 * ignored.
 */
#ifndef DDP_HOOK_MODULE_H
#define DDP_HOOK_MODULE_H

#include "ddp_err.h"

struct hook_frame;

ddp_result hook_module_init(void) __attribute__((visibility("hidden")));

/* A module (is_library 0) or library (1) was loaded from a file / image. */
void hook_module_loaded_file(const void *handle, int is_library, const char *path)
	__attribute__((visibility("hidden")));
void hook_module_loaded_image(const void *handle, int is_library, const void *image)
	__attribute__((visibility("hidden")));
/* ... and unloaded (its records stay, marked). */
void hook_module_unloaded(const void *handle) __attribute__((visibility("hidden")));
/* fn is kernel `name` of module/library `handle` (f->kname: its name). */
void hook_module_kernel(struct hook_frame *f, const void *fn, const void *handle, const char *name)
	__attribute__((visibility("hidden")));
/* fn (a CUfunction) is the CUkernel `kernel`. */
void hook_module_alias(struct hook_frame *f, const void *fn, const void *kernel)
	__attribute__((visibility("hidden")));

#endif /* DDP_HOOK_MODULE_H */
