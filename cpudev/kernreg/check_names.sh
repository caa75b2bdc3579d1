#!/bin/sh
# SPDX-License-Identifier: MIT
# check_names.sh KERNREG FATBIN LIB.kern.so: every kernel of FATBIN (nvcc's
# mangled names) must be a symbol LIB defines, i.e. g++ mangled it alike.
set -e
defined=$(mktemp)
trap 'rm -f "$defined"' EXIT
nm -D --defined-only "$3" | awk '{print $3}' | sort > "$defined"
missing=$("$1" --list "$2" | sort | comm -23 - "$defined")
if [ -n "$missing" ]; then
	echo "simcuda: $3 does not define these kernels of $2 (g++ mangles them differently, or they are static):" >&2
	echo "$missing" | sed 's/^/    /' >&2
	exit 1
fi
