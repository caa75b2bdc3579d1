#!/bin/sh
# SPDX-License-Identifier: MIT
#
# blas_gen.sh - the stub lists of the cuBLAS/cuBLASLt stand-ins, from the
# installed toolkit's headers (called by cpudev/cublas.mk):
#
#   blas_gen.sh blas|lt CC CUDA_INC IMPL.c... > X.inc
#       BLAS_UNSUP(name) for every non-inline function returning
#       cublasStatus_t that cublas_v2.h/cublas.h (blas: names not starting
#       with cublasLt) or cublasLt.h (lt: names starting with cublasLt)
#       declare, minus those the given sources define with SIMBLAS_EXPORT.
set -eu
export LC_ALL=C
which=$1 cc=$2 inc=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$which" in
blas) headers="cublas_v2.h cublas.h cublasXt.h" keep='^cublas' drop='^cublasLt' ;;
lt) headers="cublasLt.h" keep='^cublasLt' drop='^$' ;;
*) echo "usage: $0 blas|lt CC CUDA_INC IMPL.c..." >&2; exit 2 ;;
esac
for h in $headers; do
	echo "#include <$h>" | $cc -E -I"$inc" -x c - | tr '\n' ' ' |
		grep -oE '(inline +)?cublasStatus_t +cublas[A-Za-z0-9_]+ *\(' | grep -v '^inline' |
		sed -E 's/cublasStatus_t +//; s/ *\($//'
done | grep -E "$keep" | grep -vE "$drop" | sort -u > "$tmp/all"
[ -s "$tmp/all" ] || { echo "$0: no declarations found in $headers under $inc" >&2; exit 1; }
cat "$@" | grep -oE 'SIMBLAS_EXPORT [^(]*[ *](cublas[A-Za-z0-9_]+)\(' |
	sed -E 's/.*[ *](cublas[A-Za-z0-9_]+)\($/\1/' | sort -u > "$tmp/impl"
comm -23 "$tmp/all" "$tmp/impl" | sed 's/.*/BLAS_UNSUP(&)/'
