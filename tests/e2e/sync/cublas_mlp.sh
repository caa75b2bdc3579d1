#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cublas_mlp.sh - gradient synchronisation on samples/cublas_mlp, a cudart +
# cuBLAS trainer (runtime API, <<<>>> launches, cublasSgemm/cublasGemmEx on
# the CPU device's stand-ins), built through the static cudart
# (cublas_mlp_static, nvcc's default) and the shared one (cublas_mlp):
#   - plain: both builds run and end bit-identical, and equal samples/mlp
#     (the same model through the Driver API and hand-written GEMMs) within
#     1e-5;
#   - ddprun -n 2 and -n 3 with stride sharding equal one process at N x
#     batch (1e-5), all ranks bit-identical, for both builds;
#   - negative control: DDP_SYNC=off fails the same comparison.
. "$(dirname "$0")/lib.sh"
need mlp cublas_mlp cublas_mlp_static
for f in "$BUILD/cpudev/lib/libcublas.so.13" "$BUILD/cpudev/lib/libcublasLt.so.13"; do
	[ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }
done
D=$BUILD/data/mlp.rec
S=60

# plain runs: static and shared cudart agree bit for bit, and with samples/mlp
ref static cublas_mlp_static --data "$D" --steps $S --batch 16
ref shared cublas_mlp --data "$D" --steps $S --batch 16
ref drvmlp mlp --data "$D" --steps $S --batch 16
if [ -s "$TMP/static.ref.bin" ] && cmp -s "$TMP/static.ref.bin" "$TMP/shared.ref.bin"; then
	ok "plain: static and shared cudart builds end bit-identical"
else not_ok "plain: static and shared cudart builds differ (or did not run)"; fi
out=$(python3 "$HERE/relerr.py" "$TMP/static.ref.bin" "$TMP/drvmlp.ref.bin" 1e-5)
if [ $? -eq 0 ]; then ok "plain: cublas_mlp equals samples/mlp ($out <= 1e-5)"
else not_ok "plain: cublas_mlp differs from samples/mlp ($out)"; fi
l1=$(sed -n 's/^step 1 loss //p' "$TMP/static.ref.out")
lN=$(sed -n "s/^step $S loss //p" "$TMP/static.ref.out")
if awk -v a="$l1" -v b="$lN" 'BEGIN { exit !(a > 0 && b > 0 && b < a) }'; then
	ok "plain: loss falls ($l1 -> $lN)"
else not_ok "plain: loss does not fall ($l1 -> $lN)"; fi

for prog in cublas_mlp_static cublas_mlp; do
	ref "$prog.2" "$prog" --data "$D" --steps $S --batch 16
	ddp "$prog.2" 2 "$prog" "$D" --data "$D" --steps $S --batch 8
	equiv "$prog.2" 2 1e-5

	ref "$prog.3" "$prog" --data "$D" --steps $S --batch 24
	ddp "$prog.3" 3 "$prog" "$D" --data "$D" --steps $S --batch 8
	equiv "$prog.3" 3 1e-5
done

# negative control: without synchronisation the same comparison fails
DDP_SYNC=off ddp off 2 cublas_mlp_static "$D" --data "$D" --steps $S --batch 8
out=$(python3 "$HERE/relerr.py" "$TMP/off.0.bin" "$TMP/cublas_mlp_static.2.ref.bin" 1e-5)
rc=$?
if [ $rc -eq 1 ]; then ok "negative control: DDP_SYNC=off fails the equivalence ($out > 1e-5)"
else not_ok "negative control: DDP_SYNC=off passed or broke the comparison ($out, rc $rc)"; fi
if identical off 2; then not_ok "negative control: unsynchronised ranks are identical"
else ok "negative control: unsynchronised ranks differ"; fi
exit $FAILED
