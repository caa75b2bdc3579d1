#!/bin/sh
# SPDX-License-Identifier: MIT
#
# sim_gen.sh - generates the CPU device's tables from the toolkit's cuda.h,
# so they follow the installed CUDA version (called by cpudev/module.mk).
#
#   sim_gen.sh errors CUDA_H > sim_errors.inc
#       SIM_ERR(CUDA_ERROR_X, "first sentence of its documentation") for every
#       CUresult value cuda.h defines.
#   sim_gen.sh unsupported CC CUDA_INC API_DEF > sim_unsupported.inc
#       SIM_UNSUP(name) for every entry point cuda.h declares (default, _v2,
#       _ptsz/_ptds and legacy names) that sim_api.def does not implement.
set -eu
export LC_ALL=C
case "$1" in
errors)
	awk '
	/typedef enum cudaError_enum/ { on = 1; next }
	on && /} CUresult;/ { exit }
	on && /\/\*\*/ { doc = ""; indoc = 1; next }
	on && indoc && /\*\// { indoc = 0; next }
	on && indoc { line = $0; sub(/^[ \t]*\*[ \t]?/, "", line); doc = doc " " line; next }
	on && match($0, /^[ \t]*CUDA_[A-Z0-9_]+[ \t]*=/) {
		name = $0; sub(/^[ \t]*/, "", name); sub(/[ \t]*=.*/, "", name)
		s = doc; gsub(/::/, "", s); gsub(/\\/, "", s); gsub(/"/, "\\\"", s)
		sub(/^[ \t]+/, "", s); gsub(/[ \t]+/, " ", s)
		if (match(s, /\. /)) s = substr(s, 1, RSTART)
		printf "SIM_ERR(%s, \"%s\")\n", name, s
		doc = ""
	}' "$2"
	;;
unsupported)
	cc=$2 inc=$3 def=$4
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for d in "" "-D__CUDA_API_VERSION_INTERNAL" "-DCUDA_API_PER_THREAD_DEFAULT_STREAM"; do
		echo '#include <cuda.h>' | $cc -E $d -I"$inc" -x c - | tr '\n' ' ' |
			grep -oE 'CUresult +cu[A-Za-z0-9_]+ *\(' | sed -E 's/CUresult +//; s/ *\(//'
	done | sort -u > "$tmp/all"
	printf '%s\n' '#define SIM_FN(b, s, v) SIMNAME s' \
		'#define SIM_STREAM(b, s, v, p, pv, ...) SIMNAME s SIMNAME p' "#include \"$def\"" |
		$cc -E -P -x c - | grep -oE 'SIMNAME [A-Za-z0-9_]+' | sed 's/SIMNAME //' | sort -u > "$tmp/impl"
	comm -23 "$tmp/all" "$tmp/impl" | sed 's/.*/SIM_UNSUP(&)/'
	;;
*)
	echo "usage: $0 errors CUDA_H | unsupported CC CUDA_INC API_DEF" >&2
	exit 2
	;;
esac
