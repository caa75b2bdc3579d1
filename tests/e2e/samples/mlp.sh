#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mlp.sh - samples/mlp on the CPU device: the loss falls over 300 steps, the
# save file has the documented size, seeds are reproducible, gradient
# accumulation is the mean (--accum 2 --batch 8 == --batch 16), --init
# urandom, and bad command lines / data files fail with one line.
. "$(dirname "$0")/lib.bash"
need_sample mlp
P=$BUILD/samples/mlp
DATA=$BUILD/data/mlp.rec
# E 96x16 + W1 64x128 + b1 64 + W2 96x64 + b2 96 floats
SAVE_BYTES=$(((96 * 16 + 64 * 128 + 64 + 96 * 64 + 96) * 4))

run() { # run NAME ARGS...: train, stdout to $TMP/NAME.out, save to $TMP/NAME.bin
	local name=$1
	shift
	"$P" --data "$DATA" --save "$TMP/$name.bin" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ echo "# $name: exit $?: $(tail -n 3 "$TMP/$name.err")"; return 1; }
}

run a --steps 300 --seed 7 && check "300 steps: one well-formed line per step" steps_ok "$TMP/a.out" 300
check "300 steps: the loss falls" falls "$TMP/a.out"
check "--save writes $SAVE_BYTES bytes" size_is "$TMP/a.bin" $SAVE_BYTES
run b --steps 300 --seed 7
check "same seed: bit-identical parameters and losses" \
	eval 'cmp -s "$TMP/a.bin" "$TMP/b.bin" && cmp -s "$TMP/a.out" "$TMP/b.out"'
run c --steps 300 --seed 8
check "different seed: different parameters" eval '! cmp -s "$TMP/a.bin" "$TMP/c.bin"'

# accumulation: 2 micro-batches of 8 == one batch of 16, same records each step
run acc --steps 60 --batch 8 --accum 2 && run big --steps 60 --batch 16
err=$(param_relerr "$TMP/acc.bin" "$TMP/big.bin")
echo "# --accum 2 --batch 8 vs --batch 16: relative L2 error $err"
check "--accum 2 --batch 8 ends equal to --batch 16 (rel. error <= 1e-5)" le "$err" 1e-5
run small --steps 60 --batch 8
err=$(param_relerr "$TMP/small.bin" "$TMP/big.bin")
check "--batch 8 alone is far from --batch 16 (rel. error $err > 1e-3)" eval '! le "$err" 1e-3'

run u1 --steps 300 --init urandom && run u2 --steps 300 --init urandom
l1=$(losses "$TMP/u1.out" | head -n 1)
l2=$(losses "$TMP/u2.out" | head -n 1)
echo "# --init urandom: first losses $l1 and $l2"
check "--init urandom twice: different initial losses" test "$l1" != "$l2"
check "--init urandom: the loss falls" falls "$TMP/u1.out"

# wrapping: a file of 8 records read with --batch 16 gives records 0..7 twice
# per step, the same mean gradient as --batch 8 on those 8 records
"$BUILD/bin/ddp-mkdata" --kind mlp --max-records 8 --out "$TMP/eight.rec" 2>/dev/null
"$P" --data "$TMP/eight.rec" --steps 20 --batch 16 --save "$TMP/w16.bin" >/dev/null 2>&1 &&
	"$P" --data "$TMP/eight.rec" --steps 20 --batch 8 --save "$TMP/w8.bin" >/dev/null 2>&1
err=$(param_relerr "$TMP/w16.bin" "$TMP/w8.bin")
echo "# 8-record file, --batch 16 vs --batch 8: relative L2 error $err"
check "reading wraps at the end of the file (8 records, batch 16 == batch 8)" le "$err" 1e-5

check "unknown option: exit 2, one line" one_line_error 2 "mlp: unknown option '--bogus'" "$P" --data "$DATA" --bogus
check "missing --data: exit 2, one line" one_line_error 2 "mlp: missing option --data" "$P" --steps 3
check "bad --batch: exit 2, one line" one_line_error 2 "mlp: option --batch" "$P" --data "$DATA" --batch 0
check "bad --init: exit 2, one line" one_line_error 2 "mlp: option --init" "$P" --data "$DATA" --init clock
check "--lr without a value: exit 2, one line" one_line_error 2 "mlp: option --lr needs a value" "$P" --data "$DATA" --lr
printf 'NOTDDPRECxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' >"$TMP/bad.rec"
check "bad data file: exit 1, one line" one_line_error 1 "mlp: $TMP/bad.rec is not a DDPREC01" "$P" --data "$TMP/bad.rec"
head -c 1000 "$DATA" >"$TMP/short.rec"
check "truncated data file: exit 1, one line" one_line_error 1 "mlp: $TMP/short.rec: size" "$P" --data "$TMP/short.rec"
check "missing data file: exit 1, one line" one_line_error 1 "mlp: cannot open data file" "$P" --data "$TMP/none.rec"
python3 -c '
import sys
h = b"DDPREC01" + (64).to_bytes(4, "little") + (9).to_bytes(4, "little") + (2).to_bytes(8, "little")
h += (96).to_bytes(4, "little") + (8).to_bytes(4, "little") + bytes(32)
open(sys.argv[1], "wb").write(h + bytes(range(1, 10)) + bytes([1, 2, 3, 200, 5, 6, 7, 8, 9]))' "$TMP/tok.rec"
check "token out of range: exit 1, one line" one_line_error 1 "mlp: $TMP/tok.rec: token 200 out of range" "$P" --data "$TMP/tok.rec" --batch 2
# a failing CUDA call names itself and the source line (the CPU device's fault table)
DDP_SIM_FAIL=cuMemAlloc_v2:3 "$P" --data "$DATA" --steps 1 >/dev/null 2>"$TMP/fail.err"
rc=$?
echo "# DDP_SIM_FAIL=cuMemAlloc_v2:3: exit $rc: $(cat "$TMP/fail.err")"
check "failing cuMemAlloc: exit 1, one line naming the call and the source line" \
	eval '[ $rc = 1 ] && [ "$(wc -l <"$TMP/fail.err")" = 1 ] &&
		grep -q "^mlp: cuMemAlloc failed: CUDA_ERROR_[A-Z_]* (samples/mlp/main.c:[0-9]*)$" "$TMP/fail.err"'
finish
