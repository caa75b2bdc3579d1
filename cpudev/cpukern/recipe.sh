#!/bin/bash
# SPDX-License-Identifier: MIT
#
# recipe.sh - the three commands of docs/cpu-device.md ("Your own trainer,
# data-parallel, without a GPU"), end to end, on cpudev/cpukern/recipe: a
# small trainer written as a user writes one (two .cu files and an include
# folder, runtime API), built by nvcc for a GPU (make), copied into a fresh
# folder as the user's program.  In that folder:
#   1. ddp-cpu-kernels -I include -o ./train.kern.so train.cu kernels.cu
#   2. LD_LIBRARY_PATH=build/cpudev/lib ./train --steps 20 --save plain.bin:
#      the loss falls and the parameters equal an independent
#      double-precision reference of the same model (reference.py, 1e-4);
#   3. ddprun --device cpu -n 2 ./train --steps 20 --save ddp.bin: both
#      ranks read the whole file, so rank 0 ends bit-identical to the plain
#      run, and rank 1's save (in .ddprun/rank1/run-*/..., kept with
#      DDP_WRITE_KEEP=1) too;
#   and the data-parallel form: ddprun --device cpu -n 2 --shard
#   train.bin:record=36:mode=stride at --batch 8 equals the plain run at --batch 16
#   (relerr <= 1e-5), ranks bit-identical; negative control: DDP_SYNC=off
#   fails that comparison.
# Rank 1's save goes to its private overlay (the folder is under /tmp, which
# libddp protects too); DDP_WRITE_KEEP=1 keeps the overlay after the run,
# where the test compares it.
#
# Known defect (reported as skip, with the numbers, only in its exact
# form): libddp takes no allocation of 64 bytes or less for a gradient
# (runtime/grad/ddp_grad.c GRAD_MIN_BYTES, docs/gradient-sync.md), so this
# model's b1, w2 (16 floats) and b2 (1 float) gradients are never averaged
# and the ranks drift apart silently; only W1's 512 of the 644 gradient
# bytes are reduced per step.  The gradient rules are being rewritten
# (issue 11); once all 644 bytes are reduced the equivalence is asserted.
set -u
BUILD=${BUILD:-build}
ROOT=$(pwd)
SRC=$ROOT/cpudev/cpukern/recipe
PROG=$ROOT/$BUILD/cpudev/cpukern/recipe/train
RELERR=$ROOT/tests/e2e/sync/relerr.py
for f in "$PROG" "$ROOT/$BUILD/bin/ddp-cpu-kernels" "$ROOT/$BUILD/bin/ddprun" "$ROOT/$BUILD/lib/libddp.so" \
	"$ROOT/$BUILD/cpudev/lib/libcuda.so.1"; do
	[ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }
done
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ddp-recipe.XXXXXX")
[ -n "${KEEP:-}" ] && echo "# kept $W" || trap 'rm -rf "$W"' EXIT
FAILED=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }
show() { sed 's/^/#   /' "$1" | tail -n "${2:-8}"; }

cd "$W" || exit 1
cp "$PROG" ./train
cp -r "$SRC/include" "$SRC/train.cu" "$SRC/kernels.cu" .
python3 "$SRC/reference.py" make-data train.bin 512

# 1. the kernel library, next to the program
if "$ROOT/$BUILD/bin/ddp-cpu-kernels" -I include -o ./train.kern.so train.cu kernels.cu >k.out 2>&1 &&
	[ -s train.kern.so ]; then
	ok "1. ddp-cpu-kernels -I include -o ./train.kern.so train.cu kernels.cu"
else
	not_ok "1. ddp-cpu-kernels failed"; show k.out
fi

# 2. a plain run on the CPU device
LD_LIBRARY_PATH=$ROOT/$BUILD/cpudev/lib timeout 120 ./train --steps 20 --save plain.bin >plain.out 2>plain.err
rc=$?
l1=$(sed -n 's/^step 1 loss //p' plain.out)
l20=$(sed -n 's/^step 20 loss //p' plain.out)
if [ $rc -eq 0 ] && awk -v a="$l1" -v b="$l20" 'BEGIN { exit !(a > 0 && b > 0 && b < 0.7 * a) }'; then
	ok "2. plain run on the CPU device: loss falls ($l1 -> $l20)"
else
	not_ok "2. plain run: rc $rc, loss $l1 -> $l20"; show plain.err
fi
python3 "$SRC/reference.py" train train.bin 20 16 0.05 ref.bin
out=$(python3 "$RELERR" plain.bin ref.bin 1e-4)
if [ $? -eq 0 ]; then ok "2. plain run equals the double-precision reference ($out <= 1e-4)"
else not_ok "2. plain run differs from the reference ($out)"; fi

# 3. two data-parallel ranks, each on its own CPU device
DDP_WRITE_KEEP=1 timeout 180 "$ROOT/$BUILD/bin/ddprun" --device cpu -n 2 ./train --steps 20 --save ddp.bin \
	>ddp.out 2>ddp.err
rc=$?
side=$(find .ddprun -path '*rank1*' -name ddp.bin 2>/dev/null | head -1)
if [ $rc -eq 0 ] && cmp -s ddp.bin plain.bin && [ -n "$side" ] && cmp -s "$side" plain.bin &&
	[ "$(grep -c '^\[rank [01]\] step 20 loss' ddp.out)" -eq 2 ]; then
	ok "3. ddprun --device cpu -n 2 ./train: both ranks trained, rank 0's and rank 1's saves equal the plain run"
else
	not_ok "3. ddprun --device cpu -n 2: rc $rc, rank 1's save '${side}'"; show ddp.err; show ddp.out 4
fi

# the data-parallel form: each rank its half of the records
shard() { # NAME [ENV...]: -n 2 --shard at batch 8, saves NAME.bin (rank 0) and NAME's rank 1 copy
	local name=$1
	shift
	env DDP_WRITE_KEEP=1 DDP_LOG=info "$@" timeout 180 "$ROOT/$BUILD/bin/ddprun" --device cpu -n 2 --log-dir "logs.$name" \
		--shard train.bin:record=36:mode=stride ./train --steps 20 --batch 8 --save "$name.bin" >"$name.out" 2>"$name.err"
}
shard sharded
rc=$?
side=$(find logs.sharded -path '*rank1*' -name sharded.bin 2>/dev/null | head -1)
# bytes libddp averaged per step, from rank 0's sync summary; the model's
# gradients are 128 + 16 + 16 + 1 floats = 644 bytes
per_step=$(sed -n 's/^\[rank 0\] .*sync summary: .*per step \([0-9]*\) bytes.*/\1/p' sharded.err)
out=$(python3 "$RELERR" sharded.bin plain.bin 1e-5)
eq=$?
if [ $rc -eq 0 ] && [ $eq -eq 0 ] && [ "$per_step" = 644 ]; then
	ok "ddprun -n 2 --shard train.bin:record=36:mode=stride at batch 8 equals the plain run at batch 16 ($out <= 1e-5)"
	if [ -n "$side" ] && cmp -s "$side" sharded.bin; then ok "sharded: both ranks bit-identical"
	else not_ok "sharded: rank 1's parameters ('$side') differ from rank 0's"; fi
elif [ $rc -eq 0 ] && [ $eq -eq 1 ] && [ "$per_step" = 512 ] && [ -n "$side" ] && ! cmp -s "$side" sharded.bin; then
	echo "skip - sharded -n 2 equivalence: known defect, libddp averages $per_step of the 644 gradient bytes per step (gradients of 64 bytes or less are never averaged: GRAD_MIN_BYTES, issue 11), so the ranks drift apart silently ($out > 1e-5)"
else
	not_ok "ddprun -n 2 --shard at batch 8 vs the plain run at batch 16: rc $rc, $out, ${per_step:-no} bytes averaged per step (want 644)"
	show sharded.err
fi
if [ "$(grep -c 'step 1 loss' sharded.out)" -eq 2 ] &&
	[ "$(sed -n 's/^\[rank 0\] step 1 loss //p' sharded.out)" != "$(sed -n 's/^\[rank 1\] step 1 loss //p' sharded.out)" ]; then
	ok "sharded: the ranks saw different records (different step-1 losses)"
else not_ok "sharded: the ranks' step-1 losses are the same or missing"; show sharded.out 4; fi

shard off DDP_SYNC=off
out=$(python3 "$RELERR" off.bin plain.bin 1e-5)
if [ $? -eq 1 ]; then ok "negative control: DDP_SYNC=off fails the comparison ($out > 1e-5)"
else not_ok "negative control: DDP_SYNC=off passed or broke the comparison ($out)"; show off.err; fi
exit $FAILED
