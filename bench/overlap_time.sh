#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# overlap_time.sh - step time of each sample under `ddprun -n 2` on the CPU
# device with the gradient reductions synchronous (DDP_OVERLAP=off), stream-
# ordered and early with the default 25 MiB buckets (one bucket for these
# small models: it can only start after the last backward write), and with
# 0.01 MiB buckets (several buckets, reduced while backward runs); plus,
# for the last, the collectives per step and the hidden share of the
# communication (rank 0's sync.json over steps 3+, as `ddprun report`
# prints it).  Markdown table for docs/overlap.md.  Best of REPEATS runs of
# the samples' own training-loop time.  The CPU device says nothing about
# GPU timings: its "communication" and "kernels" share the same two cores.
#
# Usage: BUILD=build bench/overlap_time.sh [STEPS] [REPEATS]
set -euo pipefail
BUILD=${BUILD:-build}
STEPS=${1:-200}
REPEATS=${2:-3}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
secs_of() { sed -n 's/.* ran [0-9]* steps .* in \([0-9.]*\) s\( (.*\)\{0,1\}$/\1/p' "$1" | sort -g | tail -n 1; }
# best ENV... -- ARGS: best of REPEATS ddprun -n 2 runs (seconds); the last
# run's trace stays in $tmp/trace
best() {
	local b="" s envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	for _ in $(seq "$REPEATS"); do
		rm -rf "$tmp/trace"
		env "${envs[@]}" DDP_TRACE="$tmp/trace" "$BUILD/bin/ddprun" -n 2 "$@" >"$tmp/out" 2>&1 ||
			{ echo "bench: failed: $*" >&2; tail -n 5 "$tmp/out" >&2; exit 1; }
		s=$(secs_of "$tmp/out")
		if [ -z "$b" ] || awk -v a="$s" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$s; fi
	done
	echo "$b"
}
figures() {
	python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
ps = [p for p in j["per_step"] if p["step"] >= 3 and "comm_ms" in p]
c = sum(p["comm_ms"] for p in ps); h = sum(p["comm_hidden_ms"] for p in ps)
print("%.1f %.0f%%" % (sum(p["collectives"] for p in ps) / len(ps), 100 * h / c if c else 0))' "$tmp/trace/rank0.sync.json"
}
echo "| sample | batch/rank | off ms/step | on, 25 MiB ms/step | on, 0.01 MiB ms/step | collectives/step (0.01) | hidden (0.01) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for s in mlp charlm fused cublas_mlp torchlike patterns gpt; do
	data=$BUILD/data/mlp.rec shard= B=16
	extra=()
	case $s in
	charlm) data=$BUILD/data/charlm.rec ;;
	patterns) extra=(--pattern 1) ;;
	gpt) data=$BUILD/data/gpt.bin shard=:mode=block B=4 ;;
	esac
	[ -x "$BUILD/samples/$s" ] || { echo "| $s | - | not built | | | | |"; continue; }
	args=(--shard "$data$shard" -- "$BUILD/samples/$s" --data "$data" "${extra[@]}" --steps "$STEPS" --batch "$B")
	off=$(best DDP_OVERLAP=off -- "${args[@]}")
	on=$(best DDP_OVERLAP=on -- "${args[@]}")
	small=$(best DDP_OVERLAP=on DDP_BUCKET_MB=0.01 -- "${args[@]}")
	read -r colls hid < <(figures)
	awk -v s="$s" -v b="$B" -v o="$off" -v a="$on" -v c="$small" -v n="$STEPS" -v k="$colls" -v h="$hid" 'BEGIN {
		printf "| %s | %d | %.2f | %.2f | %.2f | %s | %s |\n", s, b, 1000 * o / n, 1000 * a / n, 1000 * c / n, k, h }'
done
echo
echo "(STEPS=$STEPS, best of $REPEATS; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d))"
