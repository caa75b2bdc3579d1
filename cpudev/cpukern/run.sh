#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run.sh PROGRAM - runs one cpudev/cpukern program on the CPU device (from
# the repository root, BUILD set): built by nvcc, kernels from the
# <program>.kern.so that ddp-cpu-kernels built next to it.  The program
# prints its own ok/not ok lines (results against host references); this
# adds the checks that need its output: rt_basic's device printf and its
# failed assert's message.  SIMCUDA_THREAD_ORDER comes from the caller.
set -u
BUILD=${BUILD:-build}
T=$BUILD/cpudev/cpukern
LD_LIBRARY_PATH=$BUILD/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$T/$1.kern.so" ] || { echo "not ok - $T/$1.kern.so is missing"; exit 1; }
"$T/$1" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
sed 's/^/# stderr: /' "$tmp/err"
fails=0
if [ "$1" = rt_basic ]; then
	if grep -q '^hello from the device: tag 42, 32 threads$' "$tmp/out"; then
		echo "ok - printf in a kernel"
	else
		echo "not ok - printf in a kernel"; fails=1
	fi
	if grep -q "rt_basic.cu:[0-9]*: .*must_be_positive.*assertion \`\*v > 0' failed" "$tmp/err"; then
		echo "ok - a failed assert names its file, line, kernel and expression"
	else
		echo "not ok - a failed assert names its file, line, kernel and expression"; fails=1
	fi
fi
[ "$rc" -eq 0 ] && [ "$fails" -eq 0 ]
