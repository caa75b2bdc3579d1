#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# torchlike.sh - samples/torchlike on the CPU device (one process, no
# ddprun): it trains (the loss falls) with AdamW foreach + clipping; the
# three allocator modes, set_to_none on/off and the autograd thread change
# nothing in the numbers (bit-identical parameters); clipping is applied
# when it should be and only then (a huge max norm gives the unclipped run's
# bits, a small one does not); Adam, SGD with and without momentum and
# gradient accumulation train.
#
# The other implementations against foreach, which is the reference (the
# same math): --impl fused and --impl forloop end within 1e-6 of it for
# AdamW, Adam and SGD (and a different optimizer does not: the comparison
# can fail).  --layout cuda12 (the 4 KB structs) is bit-identical to cuda13
# and splits each multi-tensor op as multi_tensor_apply does (the launch
# count is exact: 8 ops a step, 37 launches for 304 tensors).  --scaler 1:
# the skipped steps are exactly the --inf-steps ones, a skipped step leaves
# the parameters bit-identical (foreach, fused), the parameters stay
# finite, and without inf steps it is bit-identical to --scaler 0 (the
# scale is a power of two) with and without clipping, for all three
# implementations.  --dtype bf16 trains, differs from fp32, and --accum 2
# --batch 8 equals --batch 16 within the bf16 tolerance 1e-2 while --batch
# 8 alone does not.
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

# ---- --impl fused / forloop against foreach (15 steps, no clip)
# within A B TOL: the parameters of run A within TOL of run B
within() {
	local r
	r=$(param_relerr "$TMP/$1.bin" "$TMP/$2.bin")
	echo "# $1 vs $2: relerr $r"
	le "$r" "$3"
}
beyond() { ! within "$@"; }
for o in adamw adam sgd; do
	extra=()
	[ $o = sgd ] && extra=(--lr 0.05)
	for i in foreach fused forloop; do
		run "$o.$i" --steps 15 --optim $o --impl $i "${extra[@]}"
	done
	check "$o: --impl fused ends within 1e-6 of foreach" within "$o.fused" "$o.foreach" 1e-6
	check "$o: --impl forloop ends within 1e-6 of foreach" within "$o.forloop" "$o.foreach" 1e-6
done
check "negative control: fused AdamW vs foreach Adam differ by more than 1e-6" beyond adamw.fused adam.foreach 1e-6
run fz --steps 15 --clip 1.0 --set-to-none 0 --impl fused
check "fused, clip, set_to_none=False (_foreach_zero_): within 1e-6 of foreach" within fz z 1e-6
run lz --steps 15 --clip 1.0 --set-to-none 0 --impl forloop
check "forloop, clip, set_to_none=False (a fill per gradient): within 1e-6 of foreach" within lz z 1e-6

# ---- --layout cuda12: the 4 KB structs, more launches, the same numbers
launches() { sed -n 's/^torchlike: \([0-9]*\) multi-tensor launches.*/\1/p' "$TMP/$1.err"; }
run c12 --steps 15 --clip 1.0 --layout cuda12
check "cuda12 layout (adamw foreach + clip): bit-identical to cuda13" same c12 b
run c12n --steps 15 --layout cuda12
check "cuda12: 8 foreach ops a step split into 37 launches (110/64/48/96 tensors per launch): $(launches n) -> $(launches c12n)" \
	eval '[ "$(launches n)" = 120 ] && [ "$(launches c12n)" = 555 ]'
run c12f --steps 15 --layout cuda12 --impl fused --optim sgd --lr 0.05
check "cuda12 fused SGD: bit-identical to cuda13" same c12f sgd.fused

# ---- --scaler 1 (GradScaler; overflow at the --inf-steps, default 5,6,19,34,50)
skips() { awk '$1 == "step" && $3 == "skipped" { printf "%s%s", s, $2; s = "," }' "$TMP/$1.out"; }
finite() { python3 -c 'import array, math, sys
a = array.array("f"); a.frombytes(open(sys.argv[1], "rb").read())
sys.exit(not all(math.isfinite(x) for x in a))' "$TMP/$1.bin"; }
run sc --steps 60 --scaler 1
check "scaler: skipped exactly steps 5,6,19,34,50 ($(skips sc))" eval '[ "$(skips sc)" = 5,6,19,34,50 ]'
check "scaler: parameters finite after 60 steps" finite sc
grep -v ' nan$' "$TMP/sc.out" >"$TMP/sc.finite.out"
check "scaler: the loss falls (finite steps)" falls_by "$TMP/sc.finite.out" 0.9
run scf --steps 20 --scaler 1 --impl fused
check "scaler, fused (unscale inside the kernel): skips $(skips scf)" eval '[ "$(skips scf)" = 5,6,19 ]'
run sce --steps 20 --scaler 1
check "scaler, fused: within 1e-6 of foreach" within scf sce 1e-6
for i in foreach fused; do
	for n in 4 5 6 7; do run "k$i$n" --steps $n --scaler 1 --impl $i; done
	check "scaler, $i: steps 5 and 6 leave the parameters bit-identical, step 7 moves them" \
		eval "same k${i}4 k${i}5 && same k${i}4 k${i}6 && ! same k${i}6 k${i}7"
done
for i in foreach fused forloop; do
	run "s0$i" --steps 15 --clip 1.0 --impl $i
	run "s1$i" --steps 15 --clip 1.0 --impl $i --scaler 1 --inf-steps none
	check "scaler without inf steps, clip, $i: bit-identical to --scaler 0" same "s1$i" "s0$i"
done
run s1nc --steps 15 --scaler 1 --inf-steps none --impl fused
run fu15 --steps 15 --impl fused
check "scaler without inf steps, fused, no clip (grad_scale in the kernel): bit-identical to --scaler 0" same s1nc fu15
check "--inf-steps rejects a bad list" one_line_error 2 "torchlike: " "$P" --data "$DATA" --scaler 1 --inf-steps 3,x

# ---- --dtype bf16 (autocast)
run bf --steps 40 --dtype bf16
check "bf16: the loss falls" falls_by "$TMP/bf.out" 0.9
run bf5 --steps 5 --dtype bf16
run f5 --steps 5
check "bf16 differs from fp32 (the casts happen)" beyond bf5 f5 1e-4
run bfa --steps 5 --dtype bf16 --batch 8 --accum 2
run bf8 --steps 5 --dtype bf16 --batch 8
check "bf16: --accum 2 --batch 8 within 1e-2 of --batch 16" within bfa bf5 1e-2
check "bf16: --batch 8 alone is not" beyond bf8 bf5 1e-2
finish
