#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/launch_ab.sh - the sync-on launch cost of one or more builds, runs
# interleaved so that the load of a shared machine falls on all of them
# alike: for each build, 1 and 2 launching threads, `launch_rate sync` (see
# bench/run.sh) without libddp, under `ddprun -n 2 --backend host` with
# DDP_SYNC=off, and with sync on; REPS rounds; prints per build and thread
# count the median ns per launch without libddp and the medians added by
# libddp (off, on) with the spread of "on".
# Usage: bench/launch_ab.sh M REPS BUILD...   (e.g. 4000000 15 build /tmp/old/build;
# each BUILD needs lib/libddp.so, bin/ddprun, bench/launch_rate, bench/nulldrv)
set -eu
[ $# -ge 3 ] || { echo "usage: bench/launch_ab.sh M REPS BUILD..." >&2; exit 2; }
M=$1
R=$2
shift 2
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-ab.XXXXXX")
trap 'rm -rf "$T"' EXIT
one() { # build threads plain|ddp env...
	local B=$1 t=$2 how=$3 nd LR
	shift 3
	nd=$B/bench/nulldrv
	LR=$B/bench/launch_rate
	rm -f "$T/timed"
	if [ "$how" = plain ]; then
		env LD_LIBRARY_PATH="$nd" "$@" "$LR" sync "$M" "$t" "$T"
	else
		env DDP_CUDA_LIB="$(cd "$nd" && pwd)/libcuda.so.1" LD_LIBRARY_PATH="$nd" "$@" "$B/bin/ddprun" -n 2 \
			--backend host "$LR" sync "$M" "$t" "$T" 2>/dev/null
	fi | awk '/ns_per_launch/ { print $NF }'
}
for _ in $(seq "$R"); do
	for B in "$@"; do
		for t in 1 2; do
			echo "$B $t plain $(one "$B" "$t" plain)"
			echo "$B $t off $(one "$B" "$t" ddp DDP_SYNC=off)"
			echo "$B $t on $(one "$B" "$t" ddp)"
		done
	done
done >"$T/raw"
python3 - "$T/raw" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, t, m, v = line.split()
    d[(b, int(t), m)].append(float(v))
for b in dict.fromkeys(k[0] for k in d):
    for t in (1, 2):
        p = statistics.median(d[(b, t, "plain")])
        o = statistics.median(d[(b, t, "off")])
        on = d[(b, t, "on")]
        print("%s, %d thread(s): without libddp %.2f ns; added: sync off %.1f, sync on %.1f (runs %.1f to %.1f)"
              % (b, t, p, o - p, statistics.median(on) - p, min(on) - p, max(on) - p))
PY
