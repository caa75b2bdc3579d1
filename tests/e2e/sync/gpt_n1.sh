#!/bin/bash
# SPDX-License-Identifier: MIT
#
# gpt_n1.sh - samples/gpt (llm.c-style: runtime API, cuBLASLt, bf16, one
# flat parameter and gradient allocation, non-const AdamW per tensor) under
# ddprun, what holds with today's gradient rules:
#   - ddprun -n 1 ends with the same parameters as a plain run, bit for bit,
#     and prints the same step lines;
#   - ddprun -n 2 --shard gpt.bin:mode=block: the first step's loss of the
#     two ranks averages to the loss of one process at 2 x batch on the
#     union of their first batches (blockref.py, an independent block
#     split): each rank read its own slice of the token shard through
#     fopen/fseek/fread.  Only step 1 is compared: it comes before any
#     gradient is exchanged.
# The -n 2 training equivalence is tests/e2e/sync/gpt.sh (not in TESTS
# until the gradient-evidence rules land, issue 11).
. "$(dirname "$0")/lib.sh"
need gpt
D=$BUILD/data/gpt.bin
[ -e "$D" ] || { echo "$D is not built (make all)"; exit 77; }
S=20

ref plain gpt --data "$D" --steps $S --batch 4
mkdir -p "$TMP/n1.logs"
timeout 180 "$DDPRUN" -n 1 --log-dir "$TMP/n1.logs" -- "$BUILD/samples/gpt" --data "$D" --steps $S --batch 4 \
	--save "$TMP/n1.bin" >"$TMP/n1.ddp.out" 2>"$TMP/n1.err"
rc=$?
if [ $rc -eq 0 ] && [ -s "$TMP/plain.ref.bin" ] && cmp -s "$TMP/n1.bin" "$TMP/plain.ref.bin"; then
	ok "-n 1: the same parameters as a plain run, bit for bit"
else not_ok "-n 1: exit $rc, parameters differ from the plain run or are missing: $(tail -2 "$TMP/n1.err" | tr '\n' ' ')"; fi
if [ "$(rank_lines n1 0 | md5sum)" = "$(md5sum <"$TMP/plain.ref.out")" ] && [ -s "$TMP/plain.ref.out" ]; then
	ok "-n 1: the same $S step lines as the plain run"
else not_ok "-n 1: the step lines differ from the plain run"; fi

# step 1 under -n 2 with block sharding: 2 rows of 17 tokens per rank
python3 "$HERE/blockref.py" "$D" "$TMP/ref2.bin" 2 1 34 || not_ok "blockref.py failed"
ref split gpt --data "$TMP/ref2.bin" --steps 1 --batch 4
ddp split 2 gpt "$D:mode=block" --data "$D" --steps 1 --batch 2
lr=$(sed -n 's/^step 1 loss //p' "$TMP/split.ref.out")
l0=$(rank_lines split 0 | sed -n 's/^step 1 loss //p')
l1=$(rank_lines split 1 | sed -n 's/^step 1 loss //p')
if awk -v r="$lr" -v a="$l0" -v b="$l1" 'BEGIN { d = (a + b) / 2 - r; exit !(r > 0 && a > 0 && b > 0 && a != b && d < 2e-6 && d > -2e-6) }'; then
	ok "-n 2 block shard: step-1 losses $l0 and $l1 average to the one-process loss $lr"
else not_ok "-n 2 block shard: step-1 losses '$l0' and '$l1' do not average to '$lr'; ddprun said: $(tail -2 "$TMP/split.ddp.err" | tr '\n' ' ')"; fi
exit $FAILED
