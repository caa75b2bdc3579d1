#!/bin/bash
# SPDX-License-Identifier: MIT
#
# fused_update.sh - issue 33: trainers whose update is fused into the
# compute kernel, with no gradient buffer at all, stop at step 1 under
# `ddprun -n 2` with exit 1 and one line naming the fused update, before any
# output file is written; a one-process run of each is unchanged; `ddprun
# inspect` says "fused update" and lists no input array as a gradient or a
# parameter.  Programs (tests/e2e/progs, runtime API, nvcc):
#   w2v_cbow    word2vec CBOW with negative sampling: cbow_kernel reads a
#               batch of sentences and adds into syn0/syn1neg in place with
#               atomicAdd; --mode step (one launch per batch) and --mode all
#               (the whole training in one launch); --shard of the corpus
#   mf_hogwild  Hogwild matrix factorisation: sgd_update (named like an
#               optimizer) rewrites the factors and biases in place from the
#               ratings (const float *) and the CSR index arrays (const int
#               *); constant ratings with --shard, varied ratings split per
#               rank (each rank its own file)
# Before (issue 33's figures): cbow --mode all exited 0 as "an evaluation
# program" with ranks apart; --mode step trained to the end; mf with
# constant ratings exited 0 with rank 1's data discarded; mf with varied
# ratings stopped after the whole loop blaming "a clip scale".
# Negative control: DDP_DEBUG_NO_FUSED=1 (the rule off): no line names a
# fused update.
. "$(dirname "$0")/lib.sh"
P=$BUILD/tests/e2e/progs
for p in w2v_cbow mf_hogwild; do
	[ -x "$P/$p" ] && [ -e "$P/$p.kern.so" ] || { echo "$P/$p is not built (make all)"; exit 77; }
done
[ -e "$BUILD/cpudev/lib/libcuda.so.1" ] && [ -x "$DDPRUN" ] || { echo "the CPU device or ddprun is not built"; exit 77; }
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
P=$(cd "$P" && pwd) D=$(cd "$(dirname "$DDPRUN")" && pwd)/ddprun CPU=$(cd "$BUILD/cpudev/lib" && pwd)
cd "$TMP" || exit 1
python3 - <<'PY'
import random, struct
random.seed(33)
open('corpus.bin', 'wb').write(struct.pack('<512i', *[random.randrange(64) for _ in range(512)]))
def ratings(name, n, value):
    with open(name, 'wb') as f:
        for _ in range(n):
            f.write(struct.pack('<iif', random.randrange(48), random.randrange(40), value()))
ratings('const.bin', 600, lambda: 4.0)
ratings('varied.bin', 600, lambda: float(random.randint(1, 5)))
# a per-rank split of the varied ratings (each rank its own file)
d = open('varied.bin', 'rb').read()
open('varied.0.bin', 'wb').write(d[:300 * 12])
open('varied.1.bin', 'wb').write(d[300 * 12:])
PY

# case NAME PROG SHARD(- for none) IN ARGS...: IN may hold $RANK
case_() {
	local name=$1 prog=$2 shard=$3 in=$4 rc
	shift 4
	local extra="$*"
	# one process, plain and under ddprun -n 1: the same bytes
	LD_LIBRARY_PATH="$CPU" timeout 60 "$P/$prog" "${in//\$RANK/0}" "$name.plain.bin" $extra >"$name.plain.out" 2>&1 ||
		not_ok "$name: the plain run failed: $(tail -1 "$name.plain.out")"
	timeout 60 "$D" -n 1 -- "$P/$prog" "${in//\$RANK/0}" "$name.n1.bin" $extra >"$name.n1.out" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && [ -s "$name.plain.bin" ] && cmp -s "$name.plain.bin" "$name.n1.bin"; then
		ok "$name: ddprun -n 1 writes the plain run's bytes"
	else not_ok "$name: ddprun -n 1 (exit $rc) differs from the plain run: $(tail -1 "$name.n1.out")"; fi
	# two ranks: stopped at step 1, exit 1, naming the fused update, no file
	local sh=()
	[ "$shard" != - ] && sh=(--shard "$shard")
	env $ENVX timeout 60 "$D" -n 2 --all-ranks-write "${sh[@]}" -- \
		sh -c 'exec "$0" '"$in"' "'"$name"'.$RANK.bin" '"$extra" "$P/$prog" >"$name.out" 2>"$name.err"
	rc=$?
	if [ $rc -eq 1 ]; then ok "$name: -n 2 exits 1"; else not_ok "$name: -n 2 exits $rc"; fi
	local k=${prog/w2v_cbow/cbow_kernel}
	k=${k/mf_hogwild/sgd_update}
	if grep -qE "libddp: fused update at step 1: kernel $k rewrites its argument [0-9]+ \(f32 state, [0-9]+ bytes at \+0 of allocation #[0-9]+, copied from the host\) in place from input data .*reads no gradient" "$name.err"; then
		ok "$name: one line names the fused update ($k, the allocation, why no gradient)"
	else not_ok "$name: no line names the fused update: $(grep -m1 'libddp' "$name.err" | cut -c1-300)"; fi
	if ! ls "$name".[01].bin >/dev/null 2>&1; then ok "$name: no output file written"
	else not_ok "$name: output written: $(ls "$name".[01].bin | tr '\n' ' ')"; fi
}

ENVX=
case_ cbow_step w2v_cbow corpus.bin:record=32:mode=block corpus.bin --mode step
case_ cbow_all w2v_cbow corpus.bin:record=32:mode=block corpus.bin --mode all
case_ mf_const mf_hogwild const.bin:record=12:mode=block const.bin
case_ mf_varied mf_hogwild - 'varied.$RANK.bin'

# negative control: without the rule no line names a fused update (the
# checks above would fail)
ENVX=DDP_DEBUG_NO_FUSED=1
(case_ ctl_cbow_all w2v_cbow corpus.bin:record=32:mode=block corpus.bin --mode all) >ctl.txt
if grep -q "^not ok - ctl_cbow_all: no line names the fused update" ctl.txt; then
	ok "control DDP_DEBUG_NO_FUSED=1: the fused-update check fails ($(grep -c '^not ok' ctl.txt) checks fail)"
else not_ok "control DDP_DEBUG_NO_FUSED=1: the check still passed: $(tr '\n' ' ' <ctl.txt)"; fi

# ddprun inspect: "fused update", and no input array as gradient or parameter
insp() { # NAME PROG KERNEL ARGS...
	local name=$1 prog=$2 k=$3 rows
	shift 3
	LD_LIBRARY_PATH= timeout 60 "$D" inspect --steps 2 "$P/$prog" "$@" >"$name.ins" 2>"$name.ierr"
	if grep -qE "^  fused update: kernel $k rewrites #[0-9]+ " "$name.ins"; then ok "$name: inspect says \"fused update\""
	else not_ok "$name: inspect does not say \"fused update\": $(tail -2 "$name.ierr" | tr '\n' ' ')"; fi
	rows=$(awk '/^## (Parameters|Gradients)/ { s = 1; next } /^## / { s = 0 } s && /^  #/' "$name.ins")
	if [ -z "$rows" ] && grep -q "^## Gradients" "$name.ins"; then ok "$name: inspect lists no gradient and no parameter"
	else not_ok "$name: inspect lists roles: $(echo "$rows" | tr '\n' ' ')"; fi
}
insp cbow_insp w2v_cbow cbow_kernel corpus.bin cbow_insp.bin --mode step
insp mf_insp mf_hogwild sgd_update varied.bin mf_insp.bin
exit $FAILED
