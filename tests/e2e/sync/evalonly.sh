#!/bin/bash
# SPDX-License-Identifier: MIT
#
# evalonly.sh - issue 19 / session 7 task B: an evaluation program under
# `ddprun -n 2 --shard` (tests/e2e/progs/evalonly.c: load trained weights
# from a file, forward over the rank's share of the input rows, write the
# predictions to a file at the end; no optimizer) that stages its rows on
# the device before its first launch (EVAL_STAGE=1) exits 0 with one line
# saying no update ran and nothing was averaged.  The evidence: no launch of
# the whole stream wrote memory that an earlier launch had read first
# (ddp_cycle_rewrote_any), and nothing wrote device memory without a kernel
# after the first launch (ddp_sync_device_written).  Checked against
# python3's own arithmetic: each rank's predictions are those of its rows.
# The same program copying each batch to the device (the usual loop) gets no
# such evidence: a batch copied over memory the last forward read looks
# exactly like weights updated on the host and copied back (EVAL_HOSTUPD=1,
# a control that does that), so it stops at its predictions file, naming
# the copies, as before -- never an exit 0 of ranks that may have trained
# apart.
# Controls (the staged program, evidence absent, the stops stay):
#   EVAL_NUDGE=1          a hidden update (a kernel rewrites the weights the
#                         forward read after each batch): stopped, non-zero
#   DDP_DEBUG_NO_CYCLES=1 no launch stream kept, so no evidence: stopped at
#                         the predictions file, non-zero (as before)
# (tests/e2e/sync/never_late.sh's hidden updates are the other control.)
. "$(dirname "$0")/lib.sh"
P=$BUILD/tests/e2e/progs/evalonly
[ -x "$P" ] && [ -e "$P.kern.so" ] || { echo "$P is not built (make all)"; exit 77; }
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
P=$(cd "$(dirname "$P")" && pwd)/evalonly D=$(cd "$(dirname "$DDPRUN")" && pwd)/ddprun
cd "$TMP" || exit 1
python3 - <<'PY'
import random, struct
random.seed(19)
IN, OUT, ROWS = 16, 4, 100
w = [random.uniform(-1, 1) for _ in range(OUT * IN + OUT)]
x = [random.uniform(-1, 1) for _ in range(ROWS * IN)]
open('w.bin', 'wb').write(struct.pack('<%df' % len(w), *w))
open('data.bin', 'wb').write(struct.pack('<%df' % len(x), *x))
w = struct.unpack('<%df' % len(w), struct.pack('<%df' % len(w), *w))
x = struct.unpack('<%df' % len(x), struct.pack('<%df' % len(x), *x))
with open('expect.txt', 'w') as f:
    for r in range(ROWS):
        y = [w[OUT * IN + o] + sum(w[o * IN + j] * x[r * IN + j] for j in range(IN)) for o in range(OUT)]
        f.write('%d %d\n' % (r, max(range(OUT), key=lambda o: y[o])))
PY
run() { # NAME [ENV...]
	local name=$1
	shift
	env "$@" timeout 120 "$D" -n 2 --all-ranks-write --shard data.bin:record=64:mode=stride -- \
		sh -c 'exec "$0" w.bin data.bin "pred.'"$name"'.$RANK.txt" 8' "$P" >"$name.out" 2>"$name.err"
}
line='libddp: no update ran and nothing was averaged: none of the [0-9]+ kernel launches of rank 0 rewrote memory that an earlier launch had read \(an evaluation or inference program\); each rank computed on its own inputs'

run eval EVAL_STAGE=1
rc=$?
if [ $rc -eq 0 ]; then ok "evaluation under -n 2: exit 0"
else not_ok "evaluation under -n 2: exit $rc: $(grep -m2 'libddp' eval.err | tr '\n' ' ')"; fi
n=$(grep -cE "$line" eval.err)
if [ "$n" = 1 ]; then ok "evaluation: one line says no update ran and nothing was averaged"
else not_ok "evaluation: $n such lines: $(grep -m1 libddp eval.err)"; fi
# rank r's row k is row r + 2k of the file (stride): its predictions against python's
good=1
for r in 0 1; do
	awk -v r=$r '{ print r + 2 * $1, $2 }' "pred.eval.$r.txt" 2>/dev/null >"got.$r.txt"
	awk -v r=$r '$1 % 2 == r' expect.txt >"want.$r.txt"
	if [ -s "got.$r.txt" ] && cmp -s "got.$r.txt" "want.$r.txt"; then
		ok "evaluation: rank $r's $(wc -l <"got.$r.txt") predictions are those of its rows (python3's arithmetic)"
	else
		not_ok "evaluation: rank $r's predictions differ from python3's for its rows"
		good=0
	fi
done
[ "$(cat got.0.txt got.1.txt 2>/dev/null | wc -l)" = 100 ] && ok "evaluation: the ranks predicted all 100 rows between them" ||
	not_ok "evaluation: the ranks predicted $(cat got.0.txt got.1.txt 2>/dev/null | wc -l) rows of 100"
if grep -q 'averaged no gradient\|no update of its parameters was found' eval.err; then
	not_ok "evaluation: a stop line was printed: $(grep -m1 'averaged no gradient\|no update of its' eval.err)"
else ok "evaluation: no stop line"; fi

# the usual loop (a batch copied to the device each time): no evidence
run perbatch
rc=$?
if [ $rc -ne 0 ] && ! grep -qE "$line" perbatch.err &&
	grep -q 'libddp: the program opens .*pred.perbatch.[01].txt for writing after .* wrote device memory [0-9]* times without a kernel' perbatch.err &&
	[ ! -e pred.perbatch.0.txt ] && [ ! -e pred.perbatch.1.txt ]; then
	ok "batches copied each time: no evaluation evidence, stopped before the predictions file naming the copies, exit $rc"
else not_ok "batches copied each time: exit $rc: $(grep -m1 libddp perbatch.err)"; fi
# control: an update made on the host (the weights copied out, changed, copied back)
run hostupd EVAL_STAGE=1 EVAL_HOSTUPD=1
rc=$?
if [ $rc -ne 0 ] && ! grep -qE "$line" hostupd.err && [ ! -e pred.hostupd.0.txt ] && [ ! -e pred.hostupd.1.txt ]; then
	ok "control EVAL_HOSTUPD=1 (an update on the host): stopped, exit $rc, no 'no update ran' line"
else not_ok "control EVAL_HOSTUPD=1: exit $rc: $(grep -m1 libddp hostupd.err)"; fi

# control: a hidden update (the weights rewritten after each batch)
run nudge EVAL_STAGE=1 EVAL_NUDGE=1
rc=$?
# (staged, each batch's pointers differ: no period, so the stop is at the
# predictions file rather than within 3 steps)
if [ $rc -ne 0 ] && ! grep -qE "$line" nudge.err && [ ! -e pred.nudge.0.txt ] && [ ! -e pred.nudge.1.txt ] &&
	grep -q 'no update of the parameters was found in the first 3 steps\|libddp: the program opens .*pred.nudge.[01].txt for writing' nudge.err; then
	ok "control EVAL_NUDGE=1 (a hidden update): stopped before the predictions file, exit $rc, no 'no update ran' line"
else not_ok "control EVAL_NUDGE=1: exit $rc: $(grep -m1 libddp nudge.err)"; fi
# control: no launch stream, no evidence: stopped at the predictions file
run nocyc EVAL_STAGE=1 DDP_DEBUG_NO_CYCLES=1
rc=$?
if [ $rc -ne 0 ] && ! grep -qE "$line" nocyc.err && grep -q 'libddp: the program opens .*pred.nocyc.[01].txt for writing after' nocyc.err &&
	[ ! -e pred.nocyc.0.txt ] && [ ! -e pred.nocyc.1.txt ]; then
	ok "control DDP_DEBUG_NO_CYCLES=1 (no evidence): stopped before the predictions file was written, exit $rc"
else not_ok "control DDP_DEBUG_NO_CYCLES=1: exit $rc: $(grep -m1 libddp nocyc.err)"; fi
[ $FAILED = 0 ]
