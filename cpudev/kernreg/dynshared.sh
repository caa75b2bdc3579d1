#!/bin/sh
# SPDX-License-Identifier: MIT
# dynshared.sh OBJ SIZE: assembly defining every undefined thread-local symbol
# of OBJ (the `extern __shared__` arrays, which sim_kernel.h turns into
# `extern thread_local`) as a SIZE-byte, 64-aligned .tbss object, and each
# such variable's C++ initialisation hook (_ZTH..., which g++ may call
# unconditionally from template code) as a function that does nothing.
# An undefined TLS symbol named sim_* is the kernel runtime's, not shared
# memory (a .cu compiled with an old sim_kernel.h): defining it here would
# give the library a private copy the scheduler never writes, so refuse.
set -e
readelf -sW "$1" | awk -v size="$2" -v obj="$1" '
$4 == "TLS" && $7 == "UND" && $8 ~ /^sim_/ {
	print "dynshared.sh: " obj ": undefined thread-local " $8 " is a runtime symbol, not extern __shared__ memory; rebuild with the current sim_kernel.h" > "/dev/stderr"
	exit 1
}
$4 == "TLS" && $7 == "UND" {
	printf ".section .tbss,\"awT\",@nobits\n.globl %s\n.type %s, @object\n.balign 64\n%s:\n.zero %d\n.size %s, %d\n", $8, $8, $8, size, $8, size
}
$5 == "WEAK" && $7 == "UND" && $8 ~ /^_ZTH/ {
	printf ".text\n.globl %s\n.type %s, @function\n%s:\nret\n.size %s, .-%s\n", $8, $8, $8, $8, $8
}
END { print ".section .note.GNU-stack,\"\",@progbits" }'
