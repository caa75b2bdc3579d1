#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mlp.sh - gradient synchronisation on samples/mlp (one allocation per
# tensor, SGD with momentum launched once per tensor): -n 2 and -n 3 equal
# one process at N x batch; --accum 4 reduces once per optimizer step;
# --init urandom ends bit-identical and trains; DDP_SYNC=off (negative
# control) fails the same comparison.
. "$(dirname "$0")/lib.sh"
need mlp
D=$BUILD/data/mlp.rec
S=60

ref mlp2 mlp --data "$D" --steps $S --batch 16
ddp mlp2 2 mlp "$D" --data "$D" --steps $S --batch 8
equiv mlp2 2 1e-5

ref mlp3 mlp --data "$D" --steps $S --batch 24
ddp mlp3 3 mlp "$D" --data "$D" --steps $S --batch 8
equiv mlp3 3 1e-5

# accumulation: 4 micro-batches per step, one reduction per optimizer step,
# not 4: with overlap (the default) one collective of the 5 gradients (64128
# bytes) per step, enqueued early from step 3 (after the last micro-step's
# last write), none reduced again (rank0.sync.json); DDP_OVERLAP=off: one
# synchronous 5-buffer allreduce per step (the log's allreduce lines)
ref acc mlp --data "$D" --steps 30 --batch 8 --accum 4
# (DDP_BUCKET_MB=25: the whole model one bucket; auto would make one bucket
# per range of this small model, overlap.sh covers that)
DDP_BUCKET_MB=25 DDP_TRACE=$TMP/acc.trace ddp acc 2 mlp "$D" --data "$D" --steps 30 --batch 4 --accum 4
equiv acc 2 1e-5
r=$(syncq acc 0 '(sum(1 for s in range(2, 31) if ps[s]["collectives"] == 1 and ps[s]["bytes"] == 64128), j["early_reductions"], j["rereductions"])')
if [ "$r" = "(29, 28, 0)" ]; then ok "accum: one 5-range collective per optimizer step (29 of steps 2-30), early from step 3 (28), none again"
else not_ok "accum: (steps with one 5-range collective, early, re-reductions) = $r, expected (29, 28, 0)"; fi
DDP_OVERLAP=off DDPRUN_VERBOSE=1 ddp accoff 2 mlp "$D" --data "$D" --steps 30 --batch 4 --accum 4
cp "$TMP/acc.ref.bin" "$TMP/accoff.ref.bin"
equiv accoff 2 1e-5
n=$(grep -c 'allreduce-avg of 5 gradient buffers' "$TMP/accoff.logs/latest/rank0.log")
if [ "$n" -eq 29 ]; then ok "accum, DDP_OVERLAP=off: one synchronous 5-buffer reduction per step from step 2 (29 in 30 steps)"
else not_ok "accum, DDP_OVERLAP=off: $n 5-buffer reductions in 30 steps, expected 29"; fi

# negative control: without synchronisation the same comparison fails
DDP_SYNC=off ddp off 2 mlp "$D" --data "$D" --steps $S --batch 8
out=$(python3 "$HERE/relerr.py" "$TMP/off.0.bin" "$TMP/mlp2.ref.bin" 1e-5)
rc=$?
if [ $rc -eq 1 ]; then ok "negative control: DDP_SYNC=off fails the equivalence ($out > 1e-5)"
else not_ok "negative control: DDP_SYNC=off passed or broke the comparison ($out, rc $rc)"; fi
if identical off 2; then not_ok "negative control: unsynchronised ranks are identical"
else ok "negative control: unsynchronised ranks differ"; fi

# unseeded initialisation: the ranks start from rank 0's parameters
ref seeded mlp --data "$D" --steps 300 --batch 16
ddp urandom 2 mlp "$D" --data "$D" --steps 300 --batch 8 --init urandom
if identical urandom 2; then ok "urandom: both ranks bit-identical"; else not_ok "urandom: ranks differ"; fi
ratio() { awk '$1 == "step" { l[++n] = $4 } END { for (i = 1; i <= 20; i++) { a += l[i]; b += l[n - 20 + i] }; printf "%.3f", b / a }'; }
ru=$(rank_lines urandom 0 | ratio)
rs=$(ratio <"$TMP/seeded.ref.out")
if awk -v u="$ru" -v s="$rs" 'BEGIN { exit !(u < 0.7 && u < s + 0.1) }'; then
	ok "urandom: loss falls like the seeded run (last-20/first-20 $ru, seeded $rs)"
else not_ok "urandom: loss ratio $ru (seeded run $rs)"; fi
if cmp -s "$TMP/urandom.0.bin" "$TMP/seeded.ref.bin"; then not_ok "urandom: equals the seeded run"
else ok "urandom: differs from the seeded run (really unseeded)"; fi
exit $FAILED
