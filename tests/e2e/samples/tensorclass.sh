#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tensorclass.sh - samples/tensorclass (a C++ Matrix-class trainer over
# five .cu files) on the CPU device, single process:
#   - its kernel library was built by ddp-cpu-kernels from all five files:
#     the kernels of matrix.cu, rng.cu and model.cu are in it, the host
#     constructor of allocator.cu is not;
#   - the run with its own first-fit pool and the run with cudaMallocAsync
#     on the default memory pool print the same losses and checksum, bit for
#     bit (their allocation reports show which allocator ran);
#   - both equal an independent Python reference (tensorclass_ref.py, doubles):
#     every step's loss within 1e-4 relative, the checksum within 1e-5;
#     the loss falls;
#   - negative control: the reference with one missed update (b1) does not
#     match.
. "$(dirname "$0")/lib.bash"
need_sample tensorclass
command -v python3 >/dev/null || { echo "python3 is needed"; exit 77; }
P=$BUILD/samples/tensorclass
DATA=$BUILD/data/mlp.rec
CONF=samples/tensorclass/tensorclass.conf
STEPS=20

syms=$(nm "$P.kern.so" | awk '{print $3}')
ok=0
for k in _Z10add_kernelPKfS0_Pfm _Z13matmul_kernelPKfS0_Pfiii _Z14uniform_kernelPfmjf _Z19softmax_xent_kernelPKfS0_PfS1_iii; do
	grep -qx "$k" <<<"$syms" || { echo "# $k is not in $P.kern.so"; ok=1; }
done
grep -q alloc_from_env <<<"$syms" && { echo "# the host constructor is in the kernel library"; ok=1; }
check "ddp-cpu-kernels built the kernels of all five files, without the host constructor" [ $ok -eq 0 ]

for mode in pool async; do
	TC_ALLOC_REPORT=1 "$P" --data "$DATA" --config "$CONF" --alloc $mode --steps $STEPS \
		>"$TMP/$mode.out" 2>"$TMP/$mode.err" || echo "# $mode: exit $?: $(tail -n 3 "$TMP/$mode.err")"
	sed 's/^/# /' "$TMP/$mode.err"
done
ok=0
[ "$(grep -c '^step ' "$TMP/pool.out")" -eq $STEPS ] || ok=1
grep -q '^tensorclass: pool: .* allocations' "$TMP/pool.err" || ok=1
grep -q '^tensorclass: cudaMallocAsync: .* allocations, .* frees, reserved [1-9]' "$TMP/async.err" || ok=1
cmp -s "$TMP/pool.out" "$TMP/async.out" || { diff "$TMP/pool.out" "$TMP/async.out" | head -5 | sed 's/^/# /'; ok=1; }
check "the pool run and the cudaMallocAsync run print the same $STEPS losses and checksum, bit for bit" [ $ok -eq 0 ]
check "the loss falls (mean of the last 5 steps < 0.95 x the first 5)" \
	awk -v r="$(loss_ratio "$TMP/pool.out" 5)" 'BEGIN { exit !(r + 0 < 0.95) }'

# compare FILE REF: every loss within 1e-4 relative, checksum within 1e-5
compare() {
	awk 'NR == FNR { a[FNR] = $0; next } {
		split(a[FNR], x, " "); n++
		if ($1 == "step") { if ($4 - x[4] > 1e-4 * x[4] || x[4] - $4 > 1e-4 * x[4]) bad++ }
		else if ($1 == "checksum") { if ($2 - x[2] > 1e-5 || x[2] - $2 > 1e-5) bad++ }
		else if ($0 != a[FNR]) bad++
	} END { exit !(bad == 0 && n == FNR && n > 0) }' "$1" "$2"
}
python3 "$(dirname "$0")/tensorclass_ref.py" "$DATA" $STEPS 16 0.5 1234 ok >"$TMP/ref.out"
python3 "$(dirname "$0")/tensorclass_ref.py" "$DATA" $STEPS 16 0.5 1234 broken >"$TMP/broken.out"
tail -n 3 "$TMP/ref.out" | sed 's/^/# reference: /'
tail -n 2 "$TMP/pool.out" | sed 's/^/# program:   /'
check "both runs equal the independent Python reference (losses 1e-4 relative, checksum 1e-5)" \
	compare "$TMP/pool.out" "$TMP/ref.out"
if compare "$TMP/pool.out" "$TMP/broken.out"; then
	not_ok "negative control: a reference that misses one update does not match"
else
	ok "negative control: a reference that misses one update does not match"
fi
exit $FAILED
