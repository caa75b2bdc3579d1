#!/bin/sh
# SPDX-License-Identifier: MIT
#
# errors.sh - ddp-cpu-kernels as a user meets it: an unsupported construct
# (inline PTX, a toolkit header without a CPU-device version, grid sync, a
# runtime function it does not declare, the same below a launch whose
# arguments span lines with NULL, a global initialiser calling the runtime)
# fails with exit status 1 and exactly ONE line naming FILE:LINE and the
# construct; host constructors are left out, not refused; CXX may be several words; run from another
# directory it writes <stem>.kern.so there, and the library exports only
# the kernels and sim_kernel_table (host code and helpers dropped/hidden).
set -u
BUILD=${BUILD:-build}
root=$(pwd)
tool=$root/$BUILD/bin/ddp-cpu-kernels
case $BUILD in /*) tool=$BUILD/bin/ddp-cpu-kernels ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
	if [ "$2" -eq 0 ]; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi
}

bad() { # bad NAME KEYWORD
	src=cpudev/cpukern/bad/$1.cu
	line=$(grep -n 'ERROR-LINE' "$src" | cut -d: -f1)
	(cd "$tmp" && "$tool" -o "$tmp/$1.kern.so" "$root/$src") >"$tmp/out" 2>"$tmp/err"
	rc=$?
	n=$(wc -l <"$tmp/err")
	sed 's/^/# /' "$tmp/err"
	ok=0
	[ "$rc" -eq 1 ] || ok=1
	[ "$n" -eq 1 ] || ok=1
	grep -q "^ddp-cpu-kernels: .*$1\.cu:$line: .*$2" "$tmp/err" || ok=1
	[ ! -e "$tmp/$1.kern.so" ] || ok=1
	check "$1: one line naming $1.cu:$line and '$2', exit 1, no library" $ok
}

bad bad_asm 'inline assembly'
bad bad_header '<mma.h> is a CUDA toolkit header'
bad bad_grid 'grid_group::sync()'
bad bad_undeclared 'cudaGraphAddEmptyNode'
bad bad_after_null 'cudaGraphAddEmptyNode'
bad bad_global_init 'the kernel library needs cudaMalloc'

# Host constructors (__attribute__((constructor)), [[gnu::constructor]]) are
# left out with the host code they reach: the library builds, holds the
# kernel, and has no constructor of the program's (nor cudaMalloc's need).
(cd "$tmp" && "$tool" -o "$tmp/host_ctor.kern.so" "$root/cpudev/cpukern/host_ctor.cu") >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
ok=$rc
if [ -f "$tmp/host_ctor.kern.so" ]; then
	nm "$tmp/host_ctor.kern.so" | grep -q '_Z5twicePfi' || ok=1
	nm "$tmp/host_ctor.kern.so" | grep -q 'host_setup\|report' && ok=1
else
	ok=1
fi
check "host constructors are left out of the kernel library, the kernel is in" $ok

# CXX of several words, as users set it (CXX="ccache g++"): split as a shell would.
(cd "$tmp" && CXX="env g++" "$tool" -o "$tmp/words.kern.so" "$root/cpudev/cpukern/templ_ns.cu") >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
check "CXX='env g++' (a command of two words) builds the library" $([ "$rc" -eq 0 ] && [ -s "$tmp/words.kern.so" ]; echo $?)

# From another directory, default output name, only kernels exported.
(cd "$tmp" && "$tool" "$root/cpudev/cpukern/templ_ns.cu") >"$tmp/out" 2>&1
rc=$?
check "from another directory: writes templ_ns.kern.so there" $([ "$rc" -eq 0 ] && [ -f "$tmp/templ_ns.kern.so" ]; echo $?)
if [ -f "$tmp/templ_ns.kern.so" ]; then
	nm -D --defined-only "$tmp/templ_ns.kern.so" | awk '{print $3}' | sort >"$tmp/exported"
	sed 's/^/# exported: /' "$tmp/exported"
	ok=0
	grep -qx sim_kernel_table "$tmp/exported" || ok=1
	grep -qx c_iota "$tmp/exported" || ok=1
	grep -q '^_ZN2ml3ops3mapIfNS0_6AffineELi1EEEvPKT_PS3_T0_i$' "$tmp/exported" || ok=1
	# nothing else: no main, no launchers, no helpers
	others=$(grep -v -x -e sim_kernel_table -e c_iota -e '_ZN2ml3ops.*' "$tmp/exported" | wc -l)
	[ "$others" -eq 0 ] || ok=1
	grep -q 'main\|launch_map\|run_map_case' "$tmp/exported" && ok=1
	check "the library exports the kernels and sim_kernel_table only" $ok
	ok=0
	nm "$tmp/templ_ns.kern.so" | grep -q ' T main$\| t main$' && ok=1
	check "host code (main) is dropped at link" $ok
fi
[ "$fails" -eq 0 ]
