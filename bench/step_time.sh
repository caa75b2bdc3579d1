#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# step_time.sh - step time of each sample on the CPU device: one plain
# process vs `ddprun -n 1` vs `ddprun -n 2` (each rank with the same batch,
# so -n 2 trains on twice the examples per step).  Prints a markdown table
# for docs/gradient-sync.md.  Timings come from the samples' own
# "ran N steps ... in S s" line (wall time of the training loop, after
# start-up).  On the CPU device this measures the library's and the host
# collectives' overhead, not GPU behaviour.
#
# Usage: BUILD=build bench/step_time.sh [STEPS] [REPEATS]
set -euo pipefail
BUILD=${BUILD:-build}
STEPS=${1:-200}
REPEATS=${2:-3}
cd "$(dirname "$0")/.."
make --no-print-directory BUILD="$BUILD" samples "$BUILD/bin/ddprun" "$BUILD/lib/libddp.so" >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# secs_of FILE: the training-loop seconds a sample printed (max over ranks)
secs_of() { sed -n 's/.* ran [0-9]* steps .* in \([0-9.]*\) s$/\1/p' "$1" | sort -g | tail -n 1; }

# best of REPEATS runs of "$@" (seconds)
best() {
	local b="" s
	for _ in $(seq "$REPEATS"); do
		"$@" >"$tmp/out" 2>&1 || { echo "bench: failed: $*" >&2; tail -n 5 "$tmp/out" >&2; exit 1; }
		s=$(secs_of "$tmp/out")
		if [ -z "$b" ] || awk -v a="$s" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$s; fi
	done
	echo "$b"
}

echo "| sample | batch/rank | plain ms/step | ddprun -n 1 ms/step | ddprun -n 2 ms/step | -n 1 overhead | -n 2 examples/s vs plain |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for s in mlp charlm fused; do
	data=$BUILD/data/mlp.rec
	[ "$s" = charlm ] && data=$BUILD/data/charlm.rec
	B=16
	args=(--data "$data" --steps "$STEPS" --batch "$B")
	plain=$(best env LD_LIBRARY_PATH="$BUILD/cpudev/lib" "$BUILD/samples/$s" "${args[@]}")
	n1=$(best "$BUILD/bin/ddprun" -n 1 --shard "$data" -- "$BUILD/samples/$s" "${args[@]}")
	n2=$(best "$BUILD/bin/ddprun" -n 2 --shard "$data" -- "$BUILD/samples/$s" "${args[@]}")
	awk -v s="$s" -v b="$B" -v p="$plain" -v a="$n1" -v c="$n2" -v n="$STEPS" 'BEGIN {
		printf "| %s | %d | %.2f | %.2f | %.2f | %+.0f%% | %.2fx |\n", s, b, 1000 * p / n, 1000 * a / n,
			1000 * c / n, 100 * (a - p) / p, (2 * b / (c / n)) / (b / (p / n)) }'
done
echo
echo "(STEPS=$STEPS, best of $REPEATS; $(nproc) cores; $(date -u +%Y-%m-%d))"
