#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# overlap_gpt.sh - issue 13's figure: the share of gpt's gradient
# communication hidden behind backward under `ddprun -n 2` on the CPU device
# (comm_hidden_ms / comm_ms over steps 3+, per rank, as `ddprun report`
# prints it), for each setting given, runs interleaved so that the machine's
# load falls on all alike; then, per setting, every step binned by how
# differently the machine ran the two ranks (bench/timeline_skew.py over
# the CPU device's timelines).  samples/gpt, 30 steps, batch 4, 0.005 MiB
# buckets unless a setting says otherwise.
#
# Usage: BUILD=build bench/overlap_gpt.sh RUNS [SETTING...]
#   a SETTING is a comma-separated list of VAR=VALUE ("-" for none), e.g.
#   bench/overlap_gpt.sh 8 - DDP_OVERLAP_SLICES=0
set -euo pipefail
BUILD=${BUILD:-build}
RUNS=${1:?usage: overlap_gpt.sh RUNS [SETTING...]}
shift
[ $# -gt 0 ] || set -- -
cd "$(dirname "$0")/.."
D=$BUILD/data/gpt.bin
for f in "$BUILD/bin/ddprun" "$BUILD/samples/gpt" "$D"; do
	[ -e "$f" ] || { echo "overlap_gpt.sh: $f is not built (make all)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$RUNS"); do
	s=0
	for setting in "$@"; do
		s=$((s + 1))
		o=$tmp/$s.$i
		mkdir -p "$o/tl"
		envs=(DDP_BUCKET_MB=0.005) # a setting's own value comes later and wins
		if [ "$setting" != - ]; then
			IFS=, read -r -a more <<<"$setting"
			envs+=("${more[@]}")
		fi
		env "${envs[@]}" SIMCUDA_TIMELINE="$o/tl" "$BUILD/bin/ddprun" -n 2 --trace "$o" --shard "$D:mode=block" -- \
			"$BUILD/samples/gpt" --data "$D" --steps 30 --batch 4 >"$o/out" 2>"$o/err" ||
			{ echo "overlap_gpt.sh: run $i of '$setting' failed: $(tail -1 "$o/err")" >&2; exit 1; }
		h=$("$BUILD/bin/ddprun" report "$o" | sed -n 's/^hidden % *\([0-9.]*%\) *\([0-9.]*%\)$/\1 \2/p')
		printf '%-28s run %2d: hidden %% (rank 0 / rank 1) %s\n' "$setting" "$i" "$h"
	done
done
echo "# hidden share of both ranks' communication, steps 3+ of every run, binned by the ranks' CPU-time spread:"
s=0
for setting in "$@"; do
	s=$((s + 1))
	args=()
	for i in $(seq "$RUNS"); do args+=("$tmp/$s.$i/tl" "$tmp/$s.$i"); done
	echo "## $setting"
	python3 bench/timeline_skew.py "${args[0]}" encoder_forward_kernel "${args[1]}" "${args[@]:2}"
done
