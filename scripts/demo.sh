#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# demo.sh - what `make demo` runs after building everything: builds the data
# sets, then trains samples/charlm (a small character language model: flat
# parameter buffer, global-norm clipping, AdamW per tensor) as a 2-rank
# data-parallel job with `ddprun -n 2`, input sharded by stride.  Ranks run on
# the real GPU when ddprun finds one, else on the CPU device (cpudev).
# Shows the per-rank loss lines, the exit summary, and where the trace is.
#
# Environment: BUILD (default build), STEPS (default 200), NPROC (default 2).
set -euo pipefail
BUILD=${BUILD:-build}
STEPS=${STEPS:-200}
NPROC=${NPROC:-2}
cd "$(dirname "$0")/.."

make --no-print-directory BUILD="$BUILD" "$BUILD/bin/ddprun" "$BUILD/lib/libddp.so" \
	"$BUILD/data/charlm.rec" "$BUILD/samples/charlm" "$BUILD/samples/charlm.kern.so" \
	"$BUILD/cpudev/lib/libcuda.so.1" >/dev/null

out=$BUILD/demo
rm -rf "$out"
mkdir -p "$out"
cmd=("$BUILD/bin/ddprun" -n "$NPROC" --shard "$BUILD/data/charlm.rec" --trace "$out/trace"
	--log-dir "$out/logs" -v --
	"$BUILD/samples/charlm" --data "$BUILD/data/charlm.rec" --steps "$STEPS" --batch 8
	--save "$out/charlm.bin")
echo "demo: $NPROC ranks train samples/charlm (character LM, AdamW, global-norm clipping);"
echo "demo: each rank reads every ${NPROC}th record of $BUILD/data/charlm.rec (--shard, stride)"
echo "demo: ${cmd[*]}"
echo
# Loss lines of every rank as they come; the library's info lines go to the
# log files (and are summarised below).
"${cmd[@]}" 2>"$out/stderr.txt"
echo
echo "demo: exit summary of each rank (full tables: $out/stderr.txt, $out/logs/latest/rank<k>.log):"
grep -E 'sync summary|summary: [0-9]+ hooked calls|summary: allocations|summary: copies' "$out/stderr.txt" |
	sed 's/libddp INFO [a-z_]*\.c:[0-9]* //; s/^/  /' || true
echo
awk '$1 == "step" { l[$2] = $4 } END {
	printf "demo: rank 0 loss by step:"
	for (k = 1; k <= '"$STEPS"'; k = (k == 1 ? 25 : k + 25)) if (k in l) printf " %d:%s", k, l[k]
	printf "\n" }' "$out/logs/latest/rank0.log"
echo "demo: final parameters (rank 0) in $out/charlm.bin; rank logs in $out/logs/"
echo "demo: traces in $out/trace/ (open rank0.trace.json in https://ui.perfetto.dev);"
echo "demo: merge them with: $BUILD/bin/ddprun report $out/trace"
