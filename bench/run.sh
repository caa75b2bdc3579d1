#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/run.sh - what libddp's hooks cost per kernel launch, and per tracked
# allocation.  Figures (median of 5 runs of M launches each):
#   null driver (bench/nulldrv.c: every call returns at once): the hooks' own
#     cost, without LD_PRELOAD, with it (logging off: DDP_LOG=warn), and at
#     DDP_LOG=info;
#   the CPU device (build/cpudev/lib), for scale (its launch enqueues work);
#   RSS per 1000 live tracked allocations (null driver);
#   sync on (gradient synchronisation, `ddprun -n 2 --backend host`, null
#     driver through DDP_CUDA_LIB): ns per launch of a non-optimizer kernel
#     (`forward`, three pointer arguments, after two training steps), with one
#     and with two launching threads (each thread's CPU time, so that other
#     jobs on the machine do not count), against the same program without
#     libddp and under ddprun with DDP_SYNC=off (launch_rate sync).
# Usage: BUILD=build bench/run.sh [M]   (after `make all`)
set -eu
B=${BUILD:-build}
M=${1:-2000000}
LR=$B/bench/launch_rate
LIB=$B/lib/libddp.so
for f in "$LR" "$LIB" "$B/bench/nulldrv/libcuda.so.1" "$B/bin/ddprun"; do
	[ -e "$f" ] || { echo "bench/run.sh: $f is not built; run make all" >&2; exit 1; }
done
unset DDP_TRACE DDP_INSPECT
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
rate() { # label, env..., -- command
	for _ in 1 2 3 4 5; do "$@" | awk '/ns_per_launch/ { print $2 }'; done | median
}
nd=$B/bench/nulldrv
base=$(LD_LIBRARY_PATH=$nd rate "$LR" launches "$M")
off=$(LD_LIBRARY_PATH=$nd LD_PRELOAD=$LIB DDP_LOG=warn rate "$LR" launches "$M")
info=$(LD_LIBRARY_PATH=$nd LD_PRELOAD=$LIB DDP_LOG=info rate "$LR" launches "$M" 2>/dev/null)
echo "null driver, $M launches: ${base} ns/launch without libddp"
echo "  with libddp, logging off (DDP_LOG=warn): ${off} ns/launch, added $(awk -v a="$off" -v b="$base" 'BEGIN { printf "%.1f", a - b }') ns"
echo "  with libddp, DDP_LOG=info:               ${info} ns/launch, added $(awk -v a="$info" -v b="$base" 'BEGIN { printf "%.1f", a - b }') ns"
if [ -e "$B/cpudev/lib/libcuda.so.1" ] && [ -e "$B/tests/e2e/interpose/progs/kernels.fatbin" ]; then
	fb=$B/tests/e2e/interpose/progs/kernels.fatbin
	export SIMCUDA_KERNELS=$B/tests/e2e/interpose/progs/kernels.kern.so
	ms=$((M / 20))
	sbase=$(LD_LIBRARY_PATH=$B/cpudev/lib rate "$LR" launches "$ms" "$fb")
	soff=$(LD_LIBRARY_PATH=$B/cpudev/lib LD_PRELOAD=$LIB rate "$LR" launches "$ms" "$fb")
	echo "CPU device, $ms launches: ${sbase} ns/launch without libddp, ${soff} with (its own cost dominates)"
fi
a0=$(LD_LIBRARY_PATH=$nd "$LR" allocs 200000 | awk '{ print $2 }')
a1=$(LD_LIBRARY_PATH=$nd LD_PRELOAD=$LIB "$LR" allocs 200000 | awk '{ print $2 }')
echo "memory per tracked allocation: $(awk -v a="$a1" -v b="$a0" 'BEGIN { printf "%.1f", (a - b) * 1024 / 1000 }') bytes (RSS, 200000 live allocations)"

# sync on: rank 0 times, rank 1 waits (launch_rate sync), so two threads have
# two cores
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
srate() { # threads, ddprun|plain, env...
	local t=$1 how=$2
	shift 2
	for _ in 1 2 3 4 5; do
		rm -f "$T/timed"
		if [ "$how" = plain ]; then
			env LD_LIBRARY_PATH="$nd" "$@" "$LR" sync "$M" "$t" "$T"
		else
			env DDP_CUDA_LIB="$(cd "$nd" && pwd)/libcuda.so.1" LD_LIBRARY_PATH="$nd" "$@" "$B/bin/ddprun" -n 2 --backend host \
				"$LR" sync "$M" "$t" "$T" 2>/dev/null
		fi | awk '/ns_per_launch/ { print $NF }'
	done | median
}
for t in 1 2; do
	sb=$(srate "$t" plain)
	soff=$(srate "$t" ddprun DDP_SYNC=off)
	son=$(srate "$t" ddprun)
	echo "sync, null driver, $M launches of forward() from $t thread(s), ns per launch per thread:"
	echo "  without libddp ${sb}; ddprun -n 2 DDP_SYNC=off ${soff} (added $(awk -v a="$soff" -v b="$sb" 'BEGIN { printf "%.1f", a - b }')); sync on ${son} (added $(awk -v a="$son" -v b="$sb" 'BEGIN { printf "%.1f", a - b }'))"
done
