#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# charlm.sh - samples/charlm on the CPU device: the loss falls, the save
# file has the documented size, seeds are reproducible, clipping is real,
# and --amp with an overflowing loss scale skips exactly the steps it must.
. "$(dirname "$0")/lib.bash"
need_sample charlm
P=$BUILD/samples/charlm
DATA=$BUILD/data/charlm.rec
# E 96x16 + W1 64x64 + b1 64 + W2 96x64 + b2 96 floats
SAVE_BYTES=$(((96 * 16 + 64 * 64 + 64 + 96 * 64 + 96) * 4))

run() {
	local name=$1
	shift
	"$P" --data "$DATA" --save "$TMP/$name.bin" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ echo "# $name: exit $?: $(tail -n 3 "$TMP/$name.err")"; return 1; }
}

run a --steps 300 --seed 3 && check "300 steps: one well-formed line per step" steps_ok "$TMP/a.out" 300
check "300 steps: the loss falls" falls "$TMP/a.out"
check "--save writes $SAVE_BYTES bytes" size_is "$TMP/a.bin" $SAVE_BYTES
run b --steps 300 --seed 3
check "same seed: bit-identical parameters and losses" \
	eval 'cmp -s "$TMP/a.bin" "$TMP/b.bin" && cmp -s "$TMP/a.out" "$TMP/b.out"'
run c --steps 300 --seed 4
check "different seed: different parameters" eval '! cmp -s "$TMP/a.bin" "$TMP/c.bin"'

# clipping: a tiny max norm changes the result; a huge one equals no clipping
run clip_small --steps 20 --clip 1e-3 && run clip_big --steps 20 --clip 1e9 && run clip_big2 --steps 20 --clip 1e30
check "--clip 1e-3 differs from --clip 1e9" eval '! cmp -s "$TMP/clip_small.bin" "$TMP/clip_big.bin"'
check "--clip 1e9 equals --clip 1e30 (no clipping either way)" cmp -s "$TMP/clip_big.bin" "$TMP/clip_big2.bin"

# --amp: the scaled gradient of the logits passes through the fp16 range
# (max 65504).  With --batch 4 (128 positions) and scale S, the target's
# gradient is about S/128, so S = 1e9 overflows until S has been halved 7
# times (1e9/2^7/128 = 61035 < 65504): steps 1..7 are skipped, no others
# before step 200, and training goes on.
run amp --steps 300 --amp --loss-scale 1e9 --batch 4 && check "--amp: one well-formed line per step" steps_ok "$TMP/amp.out" 300
skipped=$(awk '$5 == "skipped" { printf "%s ", $2 }' "$TMP/amp.out")
echo "# --amp --loss-scale 1e9: skipped steps: $skipped"
check "--amp --loss-scale 1e9: steps 1..7 skipped, then none before step 200" \
	eval '[ "$(awk '\''$5 == "skipped" && $2 < 200 { printf "%s ", $2 }'\'' "$TMP/amp.out")" = "1 2 3 4 5 6 7 " ]'
check "--amp: the loss still falls" falls "$TMP/amp.out"
run amp2 --steps 300 --amp --loss-scale 1e9 --batch 4
check "--amp: deterministic (same skips, same parameters)" \
	eval 'cmp -s "$TMP/amp.out" "$TMP/amp2.out" && cmp -s "$TMP/amp.bin" "$TMP/amp2.bin"'
run amp_ok --steps 20 --amp --batch 4
check "--amp with the default scale: no step skipped" eval '! grep -q skipped "$TMP/amp_ok.out"'
run noamp --steps 20 --batch 4
err=$(param_relerr "$TMP/amp_ok.bin" "$TMP/noamp.bin")
echo "# --amp (scale 65536) vs fp32 after 20 steps: relative L2 error $err"
check "--amp with a safe scale trains like fp32 (rel. error <= 1e-6)" le "$err" 1e-6

check "unknown option: exit 2, one line" one_line_error 2 "charlm: unknown option" "$P" --data "$DATA" --bogus
check "bad --clip: exit 2, one line" one_line_error 2 "charlm: option --clip" "$P" --data "$DATA" --clip 0
check "--amp with a value: exit 2, one line" one_line_error 2 "charlm: option --amp takes no value" "$P" --data "$DATA" --amp=1
check "mlp data for charlm: runs (context from the header)" "$P" --data "$BUILD/data/mlp.rec" --steps 2 --batch 2 --save "$TMP/x.bin" >/dev/null 2>&1
finish
