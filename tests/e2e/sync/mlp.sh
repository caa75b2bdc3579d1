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

# accumulation: 4 micro-batches per step, one reduction per step (the rank's
# log at info level counts the allreduce lines)
ref acc mlp --data "$D" --steps 30 --batch 8 --accum 4
DDPRUN_VERBOSE=1 ddp acc 2 mlp "$D" --data "$D" --steps 30 --batch 4 --accum 4
equiv acc 2 1e-5
n=$(grep -c 'allreduce-avg of 5 gradient buffers' "$TMP/acc.logs/latest/rank0.log")
if [ "$n" -eq 29 ]; then ok "accum: one 5-buffer reduction per step from step 2 (29 in 30 steps)"
else not_ok "accum: $n 5-buffer reductions in 30 steps, expected 29"; fi

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
