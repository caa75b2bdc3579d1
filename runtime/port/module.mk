# SPDX-License-Identifier: MIT
#
# runtime/port/: the runtime's one door outward: the real driver and libc entry
# points (ddp_port.h).  ddp_port_libc.o is the plain-libc filling, never taken
# into libddp.so (interpose/hook_libc.c defines ddp_libc_ there).
$(eval $(call ddp_module,port,$(wildcard runtime/port/*.c)))
