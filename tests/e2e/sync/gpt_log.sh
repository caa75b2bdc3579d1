#!/bin/bash
# SPDX-License-Identifier: MIT
#
# gpt_log.sh - start-up is not late: samples/gpt --update layers --log
# main.log, a trainer of llm.c's shape (bf16, one flat parameter buffer,
# grid-strided AdamW) that, as llm.c does, computes a validation loss after
# its start-up (the parameters cast, a forward pass and the classifier: 31
# launches, the batch copied in after the first) and only then opens its log
# for writing in the working folder, writing one line to it every step.
#   - ddprun -n 2 --shard gpt.bin:mode=block with batch B equals one process
#     at 2B (blockref.py), relative L2 <= 1e-2 (bf16), ranks bit-identical,
#     no setting; the log has its start-up line and one line a step;
#   - negative control: DDP_SYNC=off fails the same comparison.
# Until 2026-12-03 the output gate stopped this job before its first step
# ("opens .../main.log for writing after 31 kernel launches, and no update
# of its parameters was found"): the start-up forward's GEMM passes its
# fresh output as its C matrix (read, beta 0), and the next GEMM writing
# those bytes looked like a rewrite of loop-carried state, and the two
# batch copies after the first launch like an update made on the host.
# Bytes nothing wrote hold no state, and a copy into bytes no launch read
# rewrites none (ddp_cycle_host_write; docs/gradient-sync.md, "How ddprun
# stops").  That the gate still stops a checkpoint written after an update
# it cannot find: generic.sh (--optimizer fused) and never_late.sh.
. "$(dirname "$0")/lib.sh"
need gpt
D=$BUILD/data/gpt.bin
[ -e "$D" ] || { echo "$D is not built (make all)"; exit 77; }
S=10
B=2
n=2
OUTD=$(cd "$BUILD" && pwd)/gpt-log.$$
trap 'rm -rf "$TMP" "$OUTD"' EXIT

python3 "$HERE/blockref.py" "$D" "$TMP/ref.bin" $n $S $((B * 17)) || not_ok "blockref.py failed"
ref log gpt --update layers --data "$TMP/ref.bin" --steps $S --batch $((n * B)) --log "$TMP/ref.log"

# run NAME: ddprun -n 2 in a working folder of its own (its logs outputs,
# main.RANK.log: every rank writes in place, as the parameters it saves)
run() {
	local name=$1
	rm -rf "$OUTD"
	mkdir -p "$OUTD"
	(cd "$OUTD" && timeout 180 "$OLDPWD/$DDPRUN" -n $n --all-ranks-write --shard "$OLDPWD/$D:mode=block" -- \
		sh -c 'exec "$0" "$@" --save "'"$TMP/$name"'.$RANK.bin" --log main.$RANK.log' \
		"$OLDPWD/$BUILD/samples/gpt" --update layers --data "$OLDPWD/$D" --steps $S --batch $B \
		>"$TMP/$name.ddp.out" 2>"$TMP/$name.ddp.err")
}

run log
rc=$?
[ $rc -eq 0 ] || not_ok "log: ddprun -n $n exited $rc: $(grep -m1 'libddp:' "$TMP/log.ddp.err" | cut -c1-400)"
equiv log $n 1e-2
for r in 0 1; do
	lines=$(wc -l <"$OUTD/main.$r.log" 2>/dev/null)
	if [ "${lines:-0}" -eq $((S + 1)) ] && head -1 "$OUTD/main.$r.log" | grep -q '^s:0 tel:'; then
		ok "log: main.$r.log holds the start-up line and $S step lines"
	else not_ok "log: main.$r.log has ${lines:-no} lines (want $((S + 1)))"; fi
done

# negative control: without synchronisation the same comparison fails
DDP_SYNC=off run off
out=$(python3 "$HERE/relerr.py" "$TMP/off.0.bin" "$TMP/log.ref.bin" 1e-2)
rc=$?
if [ $rc -eq 1 ]; then ok "negative control: DDP_SYNC=off fails the equivalence ($out > 1e-2)"
else not_ok "negative control: DDP_SYNC=off passed or broke the comparison ($out, rc $rc)"; fi
exit $FAILED
