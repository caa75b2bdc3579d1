/* SPDX-License-Identifier: MIT
 *
 * ddp_export.h - marks the few symbols libddp.so exports.
 *
 * libddp.so is built with -fvisibility=hidden and --exclude-libs,ALL: only
 * the hooked cu* entry points, dlsym and the file hooks (interpose/
 * hook_file*.c, hook_write*.c) are visible to the program.  Mark such a
 * definition DDP_EXPORT.
 *
 * Contract: header only.
 */
#ifndef DDP_EXPORT_H
#define DDP_EXPORT_H

#define DDP_EXPORT __attribute__((visibility("default")))

#endif /* DDP_EXPORT_H */
