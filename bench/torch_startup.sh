#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/torch_startup.sh - libddp's start-up cost on the real PyTorch wheel
# (torch 2.15.0, CPU device, trace mode): the time from starting ddprun to
# the end of the first training step (bench/torch_first_step.py prints the
# moment), plain (DDPRUN_NO_PRELOAD=1: the same launcher, CPU device and
# cuBLAS stand-ins, no libddp) and under libddp, for -n 1 and -n 2 (rank 0's
# moment), REPS rounds interleaved so load falls on all alike; prints the
# medians in seconds, what libddp adds and the goal (at most 10% or 0.5 s,
# whichever is larger), for the wall time and for rank 0's CPU time to the
# same moment (all its threads; far less sensitive to other work on a
# shared machine than the wall time).
# Usage: bench/torch_startup.sh [REPS [BUILD]]   (default 5 build; the wheel
# from tests/torch/run.sh's cache, ${DDPRUN_CACHE:-~/.cache/ddprun}/torch-2.15.0)
set -eu
R=${1:-5}
B=${2:-build}
VENV=${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0
[ -x "$VENV/bin/python3" ] || { echo "torch_startup: no $VENV: run make test-torch once to install it"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-tst.XXXXXX")
trap 'rm -rf "$T"' EXIT
first() { # N NO_PRELOAD TAG -> wall seconds to rank 0's first step end >> $T/TAG.N, its CPU seconds >> $T/TAG-cpu.N
	local t0 end
	t0=$(date +%s.%N)
	env PATH="$VENV/bin:$PATH" SIMCUDA_UNKNOWN_KERNELS=skip DDPRUN_NO_PRELOAD="$2" \
		"$B/bin/ddprun" -n "$1" --device cpu -- python3 bench/torch_first_step.py >"$T/out" 2>&1
	end=$(sed -n 's/^\[rank 0\] FIRST_STEP_END //p' "$T/out")
	[ -n "$end" ] || { echo "torch_startup: no first step (ddprun -n $1, DDPRUN_NO_PRELOAD=$2):"; tail -5 "$T/out"; exit 1; }
	echo "${end% *} - $t0" | bc >>"$T/$3.$1"
	echo "${end#* }" >>"$T/$3-cpu.$1"
}
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for r in $(seq "$R"); do
	for n in 1 2; do
		first "$n" 1 plain
		first "$n" 0 ddp
	done
done
for n in 1 2; do
	for kind in "wall|" "CPU |-cpu"; do
		IFS='|' read -r label sfx <<<"$kind"
		p=$(med <"$T/plain$sfx.$n")
		d=$(med <"$T/ddp$sfx.$n")
		add=$(echo "$d - $p" | bc -l)
		goal=$(echo "g = $p * 0.1; if (g < 0.5) g = 0.5; g" | bc -l)
		printf -- '-n %d %s  plain %6.2f s   libddp %6.2f s   adds %+.2f s (%+.1f%%)   goal <= %.2f s: %s\n' "$n" \
			"$label" "$p" "$d" "$add" "$(echo "100 * $add / $p" | bc -l)" "$goal" \
			"$(echo "$add <= $goal" | bc -l | sed 's/1/met/;s/0/NOT met/')"
	done
done
