#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/torchlike_cost.sh - what gradient synchronisation costs a
# PyTorch-shaped program (samples/torchlike, 304 tensors, AdamW + clip) on
# the CPU device: wall time of STEPS steps at batch 8 per rank for one
# process without ddprun, `ddprun -n 2` with DDP_SYNC=off (two processes
# sharing the machine, nothing averaged) and `ddprun -n 2` with sync on, per
# allocator mode; REPS rounds interleaved so load falls on all alike;
# prints the medians in seconds and sync on / sync off.
# Usage: bench/torchlike_cost.sh [STEPS [REPS [BUILD]]]  (default 40 5 build)
set -eu
S=${1:-40}
R=${2:-5}
B=${3:-build}
D=$B/data/mlp.rec
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-tlc.XXXXXX")
trap 'rm -rf "$T"' EXIT
prog=(--data "$D" --steps "$S" --batch 8 --optim adamw --clip 1.0)
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for alloc in caching expandable async; do
	for r in $(seq "$R"); do
		LD_LIBRARY_PATH="$B/cpudev/lib" secs "$B/samples/torchlike" "${prog[@]}" --alloc "$alloc" >>"$T/plain.$alloc"
		DDP_SYNC=off secs "$B/bin/ddprun" -n 2 --shard "$D" -- "$B/samples/torchlike" "${prog[@]}" \
			--alloc "$alloc" >>"$T/off.$alloc"
		secs "$B/bin/ddprun" -n 2 --shard "$D" -- "$B/samples/torchlike" "${prog[@]}" --alloc "$alloc" \
			>>"$T/on.$alloc"
	done
	p=$(med <"$T/plain.$alloc")
	off=$(med <"$T/off.$alloc")
	on=$(med <"$T/on.$alloc")
	printf '%-10s plain %6.2f s   -n 2 sync off %6.2f s   -n 2 sync on %6.2f s   on/off %.2f\n' \
		"$alloc" "$p" "$off" "$on" "$(echo "$on / $off" | bc -l)"
done
