#!/bin/bash
# SPDX-License-Identifier: MIT
#
# under_libddp.sh - the cuBLAS/cuBLASLt stand-ins under LD_PRELOAD=libddp.so:
# test_blas passes unchanged, and libddp saw the GEMMs as launches of the
# stand-in's kernels with their typed signatures (const inputs, non-const
# outputs), through the driver the library resolved with cuGetProcAddress -
# as it would see cuBLAS's own launches on a GPU.
set -u
BUILD=${BUILD:-build}
T=$BUILD/cpudev/run-test_blas.sh
LIB=$BUILD/lib/libddp.so
for f in "$T" "$LIB"; do [ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }; done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-blas.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }

LD_PRELOAD=$(realpath "$LIB") DDP_TRACE=$TMP "$T" >"$TMP/out" 2>"$TMP/err"
rc=$?
n=$(grep -c '^ok - ' "$TMP/out")
if [ $rc -eq 0 ] && ! grep -q '^not ok' "$TMP/out" && [ "$n" -ge 9 ]; then
	ok "test_blas passes under libddp ($n cases)"
else
	not_ok "test_blas under libddp: rc $rc, $(grep -c '^not ok' "$TMP/out") failed; $(tail -2 "$TMP/err" | tr '\n' ' ')"
fi
S=$TMP/rank0.summary.json
for sig in \
	'simblas::gemm<float, float>(int, int, int, int, float, float, float const*, float const*, float const*, long, long, long, float const*, long, long, long, float const*, long, long, long, float*, long, long, long)' \
	'simblas::gemm_bias_gelu<__nv_bfloat16, __nv_bfloat16>(int, int, int, int, float, float, float const*, float const*, __nv_bfloat16 const*, long, long, long, __nv_bfloat16 const*, long, long, long, __nv_bfloat16 const*, long, long, long, __nv_bfloat16*, long, long, long, __nv_bfloat16 const*, long, int, __nv_bfloat16*, long, long, long)' \
	'simblas::gemm_dgelu<__half, float>(int, int, int, int, float, float, float const*, float const*, __half const*, long, long, long, __half const*, long, long, long, float const*, long, long, long, float*, long, long, long, float const*, long, long, long)' \
	'simblas::bias_grad_from_b<float, float>(int, int, int, float const*, long, long, long, float*, long)'; do
	if grep -qF "$sig" "$S" 2>/dev/null; then ok "libddp saw ${sig%%(*}"
	else not_ok "libddp's summary does not name $sig"; fi
done
exit $FAILED
