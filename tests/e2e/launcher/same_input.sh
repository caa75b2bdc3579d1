#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# same_input.sh - issue 31: a job whose ranks all train on the same data
# says so.  At the end of step 2 the ranks compare a hash of the bytes they
# copied to the device (runtime/grad/ddp_sync_input.c): identical on every
# rank -> one warning naming --shard, an error with --require-shard.  A
# --shard spec no rank opened -> one ddprun warning at the end.  Before,
# nothing said either.  Programs: tests/e2e/progs/steptrainer.c
# (STEP_DATA_RANK=0: every rank reads rank 0's input; without it each
# rank's own) and samples/mlp (reads --data; --shard gives each rank its
# records).
. "$(dirname "$0")/lib.sh"
need_steptrainer
MLP=$build_dir/samples/mlp DATA=$build_dir/data/mlp.rec
for f in "$MLP" "$DATA"; do [ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }; done
out=$TMP/out err=$TMP/err
SAME='libddp: every rank copied the same input to the device'

STEP_DATA_RANK=0 timeout 60 "$DDPRUN" -n 2 -- "$T" 6 >"$out" 2>"$err"
check "same input: exit 0 (a warning)" [ $? = 0 ]
check "same input: one warning from rank 0 naming --shard" \
	[ "$(grep -c "^\[rank 0\] libddp WARN .*$SAME in step 2 (16384 bytes in 1 copy, identical on all 2 ranks).*ddprun --shard PATH" "$err")" = 1 -a "$(grep -c "$SAME" "$err")" = 1 ]

STEP_DATA_RANK=0 timeout 60 "$DDPRUN" -n 2 --require-shard -- "$T" 6 >"$out" 2>"$err"
check "--require-shard: the job fails, exit 1 (got $?)" [ $? = 1 ]
check "--require-shard: the error says why" has "$err" "libddp ERROR .*$SAME in step 2 .*\(--require-shard: stopping\)"
check "--require-shard: stopped at step 2, not trained on" hasnt "$out" '^\[rank [01]\] step 3$'

timeout 60 "$DDPRUN" -n 2 --require-shard -- "$T" 6 >"$out" 2>"$err"
check "control: each rank's own input, --require-shard: exit 0, nothing said" \
	sh -c '[ $0 = 0 ] && ! grep -q "same input" "$1"' $? "$err"

# samples/mlp: unsharded (the same records on both ranks), a --shard spec
# naming a copy the program never opens, the right spec
"$DDPRUN" -n 2 --all-ranks-write -- "$MLP" --data "$DATA" --steps 6 --batch 8 >"$out" 2>"$err"
check "mlp unsharded: the same-input warning" has "$err" "$SAME"
cp "$DATA" "$TMP/copy.rec"
"$DDPRUN" -n 2 --all-ranks-write --shard "$TMP/copy.rec" -- "$MLP" --data "$DATA" --steps 6 --batch 8 >"$out" 2>"$err"
check "mlp, --shard of a file it never opens: exit 0" [ $? = 0 ]
check "mlp, --shard of a file it never opens: ddprun's warning names the spec" \
	[ "$(grep -c "^ddprun: warning: --shard $TMP/copy.rec: no rank opened a file it names" "$err")" = 1 ]
check "mlp, --shard of a file it never opens: the same-input warning too" has "$err" "$SAME"
"$DDPRUN" -n 2 --all-ranks-write --shard "$DATA" -- "$MLP" --data "$DATA" --steps 6 --batch 8 >"$out" 2>"$err"
check "control: mlp with the right --shard: neither warning" \
	sh -c '! grep -q "same input\|no rank opened" "$0"' "$err"
[ $failures = 0 ] || sed 's/^/# /' "$err" | tail -n 5
finish
