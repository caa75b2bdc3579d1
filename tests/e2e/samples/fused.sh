#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fused.sh - samples/fused on the CPU device: the loss falls with the
# single-launch multi-tensor Adam and bf16 gradients, the save file has the
# documented size, seeds are reproducible.
. "$(dirname "$0")/lib.bash"
need_sample fused
P=$BUILD/samples/fused
DATA=$BUILD/data/mlp.rec
SAVE_BYTES=$(((96 * 16 + 64 * 128 + 64 + 96 * 64 + 96) * 4))

run() {
	local name=$1
	shift
	"$P" --data "$DATA" --save "$TMP/$name.bin" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ echo "# $name: exit $?: $(tail -n 3 "$TMP/$name.err")"; return 1; }
}

run a --steps 300 --seed 5 && check "300 steps: one well-formed line per step" steps_ok "$TMP/a.out" 300
check "300 steps: the loss falls" falls "$TMP/a.out"
check "--save writes $SAVE_BYTES bytes" size_is "$TMP/a.bin" $SAVE_BYTES
run b --steps 300 --seed 5
check "same seed: bit-identical parameters and losses" \
	eval 'cmp -s "$TMP/a.bin" "$TMP/b.bin" && cmp -s "$TMP/a.out" "$TMP/b.out"'
run c --steps 300 --seed 6
check "different seed: different parameters" eval '! cmp -s "$TMP/a.bin" "$TMP/c.bin"'
# every tensor moved: the single launch reached all five
run z --steps 0 --seed 5
check "one fused launch updates every tensor (E, W1, b1, W2, b2)" python3 - "$TMP/z.bin" "$TMP/a.bin" <<'PY'
import struct, sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
sizes = [96 * 16, 64 * 128, 64, 96 * 64, 96]
off = 0
for n in sizes:
    x = a[off * 4:(off + n) * 4]; y = b[off * 4:(off + n) * 4]
    assert x != y, "tensor at %d unchanged" % off
    off += n
PY
check "unknown option: exit 2, one line" one_line_error 2 "fused: unknown option" "$P" --data "$DATA" --bogus
finish
