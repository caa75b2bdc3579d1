/* SPDX-License-Identifier: MIT
 *
 * hook_port.h - filling the runtime's port from the real driver
 * (hook_port.c; the libc half is hook_libc.c).
 *
 * Contract: hook_port_fill once, inside start-up, after hook_resolve_all.
 */
#ifndef DDP_HOOK_PORT_H
#define DDP_HOOK_PORT_H

void hook_port_fill(void) __attribute__((visibility("hidden")));

#endif /* DDP_HOOK_PORT_H */
