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
#   sim_gen.sh faults CC CUDA_INC API_DEF FAULTS_DEF > sim_faults.inc
#       for every SIM_FN symbol of sim_api.def, its prototype from cuda.h:
#       SIM_FAULT_FN(symbol, (params), (args)), from which sim_entry.c makes
#       the exported function (fault check, then the hand-written body);
#       SIM_FAULT_NONE(symbol) for a symbol FAULTS_DEF marks SIM_FAULT_OWN
#       (its body counts its own calls).  A symbol whose prototype cuda.h
#       lacks (or whose parameter names cannot be read) fails, naming it.
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
faults)
	cc=$2 inc=$3 def=$4 fdef=$5
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# every prototype of cuda.h as the driver sees it: NAME|PARAMS
	printf '#include <cuda.h>\n#include <cudaProfiler.h>\n' | $cc -E -P -D__CUDA_API_VERSION_INTERNAL -I"$inc" -x c - | tr '\n' ' ' | tr ';' '\n' |
		sed -E 's/__attribute__ *\(\([^()]*(\([^()]*\))?[^()]*\)\)//g' |
		sed -nE 's/.*CUresult +(cu[A-Za-z0-9_]+) *\((.*)\) *$/\1|\2/p' > "$tmp/protos"
	printf '%s\n' '#define SIM_FN(b, s, v) SIMNAME s' '#define SIM_STREAM(...)' "#include \"$def\"" |
		$cc -E -P -x c - | grep -oE 'SIMNAME [A-Za-z0-9_]+' | sed 's/SIMNAME //' | sort -u > "$tmp/syms"
	sed -nE 's/^SIM_FAULT_OWN\(([A-Za-z0-9_]+)\).*/\1/p' "$fdef" > "$tmp/own"
	awk -F'|' -v protos="$tmp/protos" -v own="$tmp/own" -v fdef="$fdef" '
	BEGIN {
		while ((getline l < protos) > 0) {
			split(l, f, "|")
			if (!(f[1] in proto)) proto[f[1]] = f[2]
		}
		while ((getline l < own) > 0) is_own[l] = 1
	}
	function trim(x) { sub(/^[ \t]+/, "", x); sub(/[ \t]+$/, "", x); gsub(/[ \t]+/, " ", x); return x }
	# the names of a parameter list, "" when one cannot be read
	function arg_names(ps,    n, i, c, depth, cur, parts, out, p, m) {
		n = 0; depth = 0; cur = ""
		for (i = 1; i <= length(ps); i++) {
			c = substr(ps, i, 1)
			if (c == "(") depth++
			if (c == ")") depth--
			if (c == "," && depth == 0) { parts[++n] = cur; cur = ""; continue }
			cur = cur c
		}
		parts[++n] = cur
		if (n == 1 && trim(parts[1]) == "void") return "()"
		out = ""
		for (i = 1; i <= n; i++) {
			p = trim(parts[i])
			if (match(p, /\( *\* *[A-Za-z_][A-Za-z0-9_]* *\)/)) {
				m = substr(p, RSTART, RLENGTH); gsub(/[ ()*]/, "", m)
			} else {
				sub(/ *\[[^]]*\]$/, "", p)
				if (!match(p, /[A-Za-z_][A-Za-z0-9_]*$/) || RSTART == 1) return ""
				m = substr(p, RSTART, RLENGTH)
			}
			out = out (i > 1 ? ", " : "") m
		}
		return "(" out ")"
	}
	{
		s = $0
		if (s in is_own) { print "SIM_FAULT_NONE(" s ")"; next }
		a = s in proto ? arg_names(proto[s]) : ""
		if (a == "") {
			printf "sim_gen.sh: %s: %s; mark it SIM_FAULT_OWN in %s (its body then checks DDP_SIM_FAIL itself)\n",
				s, s in proto ? "cannot read the parameter names of its prototype" : "cuda.h declares no such function",
				fdef > "/dev/stderr"
			bad = 1
			next
		}
		printf "SIM_FAULT_FN(%s, (%s), %s)\n", s, trim(proto[s]), a
	}
	END { exit bad }' "$tmp/syms"
	;;
*)
	echo "usage: $0 errors CUDA_H | unsupported CC CUDA_INC API_DEF | faults CC CUDA_INC API_DEF FAULTS_DEF" >&2
	exit 2
	;;
esac
