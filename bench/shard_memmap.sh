#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# shard_memmap.sh [MB] [ITERS]: np.memmap construction under --shard against
# the same program without it, in the same run (docs/sharding.md records
# the figures).  A headerless uint16 token file of MB megabytes (default
# 400, nanoGPT's train.bin) is read by bench/shard_memmap.py under
# `ddprun -n 2` twice: without --shard, and with --shard FILE:record=2:mode=block.
# Each rank prints the median np.memmap() time and the median batch time.
# BUILD selects the build (another build's ddprun measures another libddp).
set -u
BUILD=${BUILD:-build}
root=$(pwd)
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
mb=${1:-400} iters=${2:-200}
PY=
for p in python3 "$HOME/.cache/ddprun/torch-2.15.0/bin/python3"; do
	if "$p" -c 'import numpy' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "no python with numpy"; exit 77; }
tmp=$(mktemp -d /tmp/ddp_bench_memmap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$PY" -c "import numpy as np; np.arange($mb * 524288, dtype=np.uint32).astype(np.uint16).tofile('$tmp/train.bin')"
echo "# $mb MB token file, $iters batches per rank, ddprun -n 2 (median per rank)"
for mode in plain shard; do
	args=()
	[ $mode = shard ] && args=(--shard "$tmp/train.bin:record=2:mode=block")
	"$build/bin/ddprun" -n 2 "${args[@]}" "$PY" "$root/bench/shard_memmap.py" "$tmp/train.bin" "$iters" 2>/dev/null |
		sed "s/^/$mode /"
done
