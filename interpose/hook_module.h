/* SPDX-License-Identifier: MIT
 *
 * hook_module.h - set-up of the module hooks' driver helpers (hook_module.c).
 *
 * Contract: hook_module_init once, inside library init, after the driver
 * symbols are resolved.
 */
#ifndef DDP_HOOK_MODULE_H
#define DDP_HOOK_MODULE_H

#include "ddp_err.h"

ddp_result hook_module_init(void) __attribute__((visibility("hidden")));

#endif /* DDP_HOOK_MODULE_H */
