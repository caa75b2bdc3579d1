#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# torchlike.sh - samples/torchlike on the CPU device (one process, no
# ddprun): it trains (the loss falls) with AdamW foreach + clipping; the
# three allocator modes, set_to_none on/off and the autograd thread change
# nothing in the numbers (bit-identical parameters); clipping is applied
# when it should be and only then (a huge max norm gives the unclipped run's
# bits, a small one does not); Adam, SGD with and without momentum and
# gradient accumulation train; the options not implemented yet are refused.
. "$(dirname "$0")/lib.bash"
need_sample torchlike
P=$BUILD/samples/torchlike
DATA=$BUILD/data/mlp.rec
SAVE_BYTES=$(((16 * 8 + 16 + 150 * (16 * 16 + 16) + 96 * 16 + 96) * 4))

run() {
	local name=$1
	shift
	"$P" --data "$DATA" --save "$TMP/$name.bin" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		{ echo "# $name: exit $?: $(tail -n 3 "$TMP/$name.err")"; return 1; }
}
# falls_by FILE RATIO: last-20 mean loss below RATIO x the first-20 mean
falls_by() {
	local r
	r=$(loss_ratio "$1" 20)
	echo "# $1: last-20/first-20 loss ratio $r"
	awk -v r="$r" -v m="$2" 'BEGIN { exit !(r == r + 0 && r < m) }'
}
same() { cmp -s "$TMP/$1.bin" "$TMP/$2.bin"; }

run a --steps 60 --clip 1.0 && check "60 steps: one well-formed line per step" steps_ok "$TMP/a.out" 60
check "adamw foreach + clip: the loss falls" falls_by "$TMP/a.out" 0.85
check "--save writes all 304 tensors ($SAVE_BYTES bytes)" size_is "$TMP/a.bin" $SAVE_BYTES
check "304 parameter tensors reported" grep -q "^torchlike: 304 parameter tensors, 1 segments/pages" "$TMP/a.err"
run b --steps 15 --clip 1.0
run e --steps 15 --clip 1.0 --alloc expandable
check "expandable segments: bit-identical to the caching allocator" same b e
run y --steps 15 --clip 1.0 --alloc async
check "cudaMallocAsync: bit-identical to the caching allocator" same b y
check "cudaMallocAsync: one allocation per live tensor" grep -q "^torchlike: 304 parameter tensors, [0-9]* segments/pages" "$TMP/y.err"
run z --steps 15 --clip 1.0 --set-to-none 0
check "zero_grad(set_to_none=False) (_foreach_zero_): bit-identical" same b z
run n --steps 15
run h --steps 15 --clip 1e6
check "clip with a max norm never reached: the unclipped run's bits" same n h
check "clip at 1.0: a different result (clipping happened)" eval '! same n b'
run s --steps 60 --optim sgd --lr 0.05 && check "sgd + momentum foreach: the loss falls" falls_by "$TMP/s.out" 0.85
run s0 --steps 60 --optim sgd --lr 0.05 --momentum 0 && check "sgd foreach: the loss falls" falls_by "$TMP/s0.out" 0.85
run ad --steps 60 --optim adam && check "adam foreach: the loss falls" falls_by "$TMP/ad.out" 0.85
run k --steps 40 --accum 3 --clip 1.0 && check "--accum 3: the loss falls" falls_by "$TMP/k.out" 0.9
for o in "--scaler 1" "--impl fused" "--impl forloop" "--dtype bf16" "--layout cuda12"; do
	# shellcheck disable=SC2086
	check "$o: refused as not implemented yet" one_line_error 2 "torchlike: " "$P" --data "$DATA" $o
done
finish
