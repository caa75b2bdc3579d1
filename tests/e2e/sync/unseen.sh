#!/bin/bash
# SPDX-License-Identifier: MIT
#
# unseen.sh - compare all loop-carried state: samples/generic --hidden 4
# (a tiny layer: its bias b1 is 4 floats, 16 bytes, updated by the same
# axpy as every weight) with DDP_DEBUG_UNSEEN_BYTES=16, a debug setting
# under which the data flow never makes that 16-byte gradient (as a rule
# that misses one would: until 2026-12-03 pointers into allocations of 64
# bytes or less had no extent, and the biases were never averaged, exit 0).
# The bias is then never averaged and no rule names it a parameter; what
# catches it is that the parameter check and the final compare hash every
# range the update's launches wrote (ddp_grad_update_written), not only the
# ranges a rule named:
#   - the parameter check stops the job at step 1, exit != 0, naming the
#     launch and argument (axpy_kernel:3), the bytes (16), the offset and
#     the allocation;
#   - negative control: with the checks off (DDP_CHECK_INVARIANT=0) it exits
#     0 with ranks that differ;
#   - control: the same run without the setting exits 0, ranks identical.
. "$(dirname "$0")/lib.sh"
need generic
D=$BUILD/data/mlp.rec
S=6
run() {
	local name=$1
	shift
	ddp "$name" 2 generic "$D" --data "$D" --steps $S --batch 8 --optimizer sgd --lr 0.05 --hidden 4 "$@"
}
named() { grep -q "axpy_kernel:3+0 (update-written) (parameter or optimizer state, 16 bytes at +0 of allocation #[0-9]*) differs" "$TMP/$1.ddp.err"; }

DDP_DEBUG_UNSEEN_BYTES=16 run unseen
rc=$?
if [ $rc -ne 0 ] && named unseen && grep -q 'parameter check: parameters diverged at step 1' "$TMP/unseen.ddp.err"; then
	ok "an unaveraged 16-byte parameter no rule named stops the job at step 1 (exit $rc), named"
else not_ok "unseen: exit $rc: $(grep -m1 'libddp: ' "$TMP/unseen.ddp.err" | cut -c1-300)"; fi

# negative control: with the checks off (DDP_CHECK_INVARIANT=0: no checked
# step, no final compare) the same run is the silent failure of #28: exit 0
# with the ranks' biases different
DDP_CHECK_INVARIANT=0 DDP_DEBUG_UNSEEN_BYTES=16 run nocheck
rc=$?
if [ $rc -eq 0 ] && [ -s "$TMP/nocheck.0.bin" ] && ! identical nocheck 2; then
	ok "negative control: with the checks off it exits 0 with ranks that differ (what the compare stops)"
else not_ok "negative control: exit $rc, ranks $(identical nocheck 2 && echo identical || echo differ)"; fi

run clean
rc=$?
if [ $rc -eq 0 ] && identical clean 2; then ok "control: without the setting it exits 0, ranks identical"
else not_ok "control: exit $rc, ranks $(identical clean 2 && echo identical || echo differ)"; fi
exit $FAILED
