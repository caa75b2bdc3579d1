#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# n1_vs_plain.sh - steps per second of a launch-bound sample under
# `ddprun -n 1` against the plain program, on the CPU device (issue 23:
# >= 0.98 x plain).  Runs alternate (plain, -n 1, plain, -n 1, ...), so a
# machine shared with other work slows both alike; the figure is the median
# of the per-pair ratios, with the medians of each side.  Timings come from
# the sample's own "ran N steps ... in S s" line (the training loop, after
# start-up).  mlp at batch 1 is launch-bound: its kernels are tiny, so the
# step time is the launches' and the library's per-step cost.
#
# Usage: BUILD=build bench/n1_vs_plain.sh [SAMPLE] [STEPS] [PAIRS] [BATCH]
set -euo pipefail
BUILD=${BUILD:-build}
S=${1:-mlp}
STEPS=${2:-2000}
PAIRS=${3:-9}
B=${4:-1}
cd "$(dirname "$0")/.."
for f in "$BUILD/samples/$S" "$BUILD/bin/ddprun" "$BUILD/lib/libddp.so" "$BUILD/cpudev/lib/libcuda.so.1"; do
	[ -e "$f" ] || { echo "n1_vs_plain: $f is not built (make build-all)" >&2; exit 2; }
done
data=$BUILD/data/mlp.rec
[ "$S" = charlm ] && data=$BUILD/data/charlm.rec
args=(--data "$data" --steps "$STEPS" --batch "$B")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

secs() {
	"$@" >"$tmp/out" 2>&1 || { echo "n1_vs_plain: failed: $*" >&2; tail -n 5 "$tmp/out" >&2; exit 1; }
	sed -n 's/.* ran [0-9]* steps .* in \([0-9.]*\) s$/\1/p' "$tmp/out" | sort -g | tail -n 1
}

for i in $(seq "$PAIRS"); do
	p=$(secs env LD_LIBRARY_PATH="$BUILD/cpudev/lib" "$BUILD/samples/$S" "${args[@]}")
	n=$(secs "$BUILD/bin/ddprun" -n 1 -- "$BUILD/samples/$S" "${args[@]}")
	echo "$p $n"
done | awk -v s="$S" -v st="$STEPS" -v b="$B" '
	function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	{ k++; p[k] = st / $1; n[k] = st / $2; r[k] = $1 / $2 }
	END { printf "%s batch %d, %d steps, %d interleaved pairs: plain %.0f steps/s, ddprun -n 1 %.0f steps/s (medians); -n 1 / plain = %.3f (median of pair ratios)\n",
		s, b, st, k, med(p, k), med(n, k), med(r, k) }'
