#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run.sh CASE - runs the CUDA runtime-API programs of cpudev/cudart.mk
# on the CPU device (from the repository root, BUILD set; run_tests.sh does
# both).  Prints "ok - NAME" / "not ok - NAME" lines.
#
#   static-plain, shared-plain   test_cudart_{static,shared}: its own cases
#   static-ddp, shared-ddp       the same under LD_PRELOAD=libddp.so with
#                                DDP_LOG=debug: its cases, and libddp's hook
#                                log must show the program's allocations
#                                (plain and managed), its kernels' launches
#                                with their buffers, the cuBLAS/cuBLASLt
#                                GEMMs as launches of kernels with typed
#                                signatures (inputs read, output written),
#                                and the exit summary
#   tiny                         tiny.cu (cudaMalloc, one <<<>>>, cudaMemcpy):
#                                with the kernel library ddp-cpu-kernels
#                                built next to it, the kernel really runs
#                                (h[i] + 1 copied back); a copy of the
#                                program without one: memory and copies
#                                work, the launch is refused naming the
#                                kernel; in trace mode it is skipped and the
#                                exit line says nothing real was computed;
#                                negative controls: cudart without its
#                                export tables fails, an unknown table UUID
#                                is NOT_FOUND (logged once)
#   nullfree                     nullfree.cu: cudaFree(0), cudaFreeAsync(0, s),
#                                cudaFreeHost(NULL), zero-byte copies answer
#                                cudaSuccess as documented (controls inside)
set -u
BUILD=${BUILD:-build}
T=$BUILD/cpudev/cudart
LD_LIBRARY_PATH=$BUILD/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # check NAME CONDITION-EXIT-STATUS [detail file]
	if [ "$2" -eq 0 ]; then
		echo "ok - $1"
	else
		echo "not ok - $1"
		fails=$((fails + 1))
		if [ $# -ge 3 ]; then sed 's/^/#   /' "$3" | tail -n 20; fi
	fi
}

has() { grep -q -- "$1" "$2"; }

case "$1" in
nullfree)
	exec "$T/nullfree"
	;;
static-plain | shared-plain)
	exec "$T/test_cudart_${1%-plain}"
	;;
static-ddp | shared-ddp)
	prog=$T/test_cudart_${1%-ddp}
	LD_PRELOAD=$BUILD/lib/libddp.so DDP_LOG=debug "$prog" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	grep -E '^(ok|not ok|#)' "$tmp/out" | sed "s/^ok - /ok - under libddp: /; s/^not ok - /not ok - under libddp: /"
	cat "$tmp/err" >&2
	check "under libddp: the program exits 0" "$rc" "$tmp/out"
	ok=0
	has 'libddp ready: rank 0 of 1' "$tmp/err" || ok=1
	check "libddp loaded and hooked the CPU device" $ok "$tmp/err"
	ok=0
	has 'cuMemAlloc_v2: 0x[0-9a-f]* + 40000 (plain)' "$tmp/err" || ok=1
	has 'cuMemAllocManaged: 0x[0-9a-f]* + 16384 (managed)' "$tmp/err" || ok=1
	check "libddp saw cudaMalloc and cudaMallocManaged as allocations" $ok "$tmp/err"
	ok=0
	has 'launch _Z5saxpyfPKfPfi: param 2 -> allocation #2 .* write' "$tmp/err" || ok=1
	has 'launch _Z11managed_addPii: param 0 -> allocation .* write' "$tmp/err" || ok=1
	has 'launch _Z8bf16_fmaPK13__nv_bfloat16S1_PS_i: param 2 -> allocation' "$tmp/err" || ok=1
	has 'launch _Z11row_sum_maxPKfPfS1_ii: param 1 -> allocation .* write' "$tmp/err" || ok=1
	check "libddp saw the <<<>>> launches and the buffers they write" $ok "$tmp/err"
	# The cuBLAS/cuBLASLt calls reach the driver as launches of the
	# stand-in's kernels, registered with typed signatures (as cuBLAS's own
	# on a GPU): A and B read, D written, the bias read.
	ok=0
	for sig in \
		'simblas::gemm<float, float>(int, int, int, int, float, float, float const\*, float const\*, float const\*, long, long, long, float const\*, long, long, long, float const\*, long, long, long, float\*, long, long, long): 24 params, typed' \
		'simblas::gemm<__nv_bfloat16, float>(int, int, int, int, float, float, float const\*, float const\*, __nv_bfloat16 const\*, long, long, long, __nv_bfloat16 const\*, long, long, long, float const\*, long, long, long, float\*, long, long, long): 24 params, typed' \
		'simblas::gemm_bias_gelu<float, float>(int, .*, float\*, long, long, long, float const\*, long, int, float\*, long, long, long): 31 params, typed'; do
		has "kernel void $sig" "$tmp/err" || { ok=1; echo "# not in libddp's log: kernel void $sig" >&2; }
	done
	has 'launch _ZN7simblas4gemmIffEE[A-Za-z0-9_]*: param 8 -> allocation .* read' "$tmp/err" || ok=1
	has 'launch _ZN7simblas4gemmIffEE[A-Za-z0-9_]*: param 20 -> allocation .* write' "$tmp/err" || ok=1
	has 'launch _ZN7simblas4gemmI13__nv_bfloat16fEE[A-Za-z0-9_]*: param 20 -> allocation .* write' "$tmp/err" || ok=1
	has 'launch _ZN7simblas14gemm_bias_geluIffEE[A-Za-z0-9_]*: param 20 -> allocation .* write' "$tmp/err" || ok=1
	has 'launch _ZN7simblas14gemm_bias_geluIffEE[A-Za-z0-9_]*: param 24 -> allocation .* read' "$tmp/err" || ok=1
	check "libddp saw cublasSgemm, cublasGemmEx and cublasLtMatmul (BIAS) as launches with typed signatures" \
		$ok "$tmp/err"
	ok=0
	has 'summary: .* 14 launches of 11 kernels' "$tmp/err" || ok=1
	check "libddp's exit summary counts 14 launches of 11 kernels (the program's 8, cuBLAS's 3)" $ok "$tmp/err"
	;;
tiny)
	# As the user runs it: tiny.kern.so (ddp-cpu-kernels) next to tiny.
	"$T/tiny" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err" >&2
	ok=$rc
	has '^launch: no error$' "$tmp/out" || ok=1
	has '^no error: h\[0\]=1 h\[255\]=256$' "$tmp/out" || ok=1
	check "tiny program with its ddp-cpu-kernels library: the kernel runs, h[i] + 1 comes back" $ok "$tmp/out"

	# The same program without a kernel library beside it.
	cp "$T/tiny" "$tmp/tiny"
	"$tmp/tiny" >"$tmp/out" 2>"$tmp/err"
	cat "$tmp/out" "$tmp/err" >&2
	ok=0
	has 'operation not supported' "$tmp/out" && ok=1
	has '^no error: h\[0\]=0 h\[255\]=255' "$tmp/out" || ok=1
	has 'no host implementation of kernel _Z7add_onePfi' "$tmp/err" || ok=1
	has '^launch: no error' "$tmp/out" && ok=1
	check "tiny program: cudaMalloc and cudaMemcpy work; its launch without host code is refused, naming the kernel" \
		$ok "$tmp/err"

	SIMCUDA_UNKNOWN_KERNELS=skip "$tmp/tiny" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err" >&2
	ok=$rc
	has '^launch: no error' "$tmp/out" || ok=1
	has 'trace mode: kernel _Z7add_onePfi has no host implementation' "$tmp/err" || ok=1
	has 'trace mode (SIMCUDA_UNKNOWN_KERNELS=skip): 1 launch of 1 kernel without host code were skipped; this run computed nothing real' "$tmp/err" || ok=1
	check "trace mode: the launch is skipped, named once, and the exit line says nothing real was computed" $ok "$tmp/err"

	# Negative control: the static cudart cannot start when the driver
	# refuses its runtime-interface table (the first table it needs).
	DDP_SIM_FAIL=cuGetExportTable:1 "$tmp/tiny" >"$tmp/out" 2>"$tmp/err"
	cat "$tmp/out" "$tmp/err" >&2
	ok=0
	has '^launch: no error' "$tmp/out" && ok=1
	has '^no error: ' "$tmp/out" && ok=1
	check "negative control: without the runtime-interface table, cudart fails (static cudart)" $ok "$tmp/out"
	DDP_SIM_FAIL=cuGetExportTable:1 "$T/test_cudart_shared" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	ok=0
	[ "$rc" -ne 0 ] || ok=1
	has '^ok - streams and events' "$tmp/out" && ok=1
	check "negative control: without the runtime-interface table, cudart fails (shared cudart)" $ok "$tmp/out"

	# An unknown UUID: NOT_FOUND, NULL table, logged once (verbose).
	cat >"$tmp/probe.c" <<'EOF'
#include <cuda.h>
#include <stdio.h>
int main(void)
{
	CUuuid id = {{ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }};
	const void *t = (const void *)&id;
	CUresult a = cuGetExportTable(&t, &id), b = cuGetExportTable(&t, &id);
	printf("%d %d %s\n", (int)a, (int)b, t ? "table" : "null");
	return 0;
}
EOF
	if ${CC:-cc} -I"$(dirname "$(dirname "$(command -v nvcc)")")/include" "$tmp/probe.c" -o "$tmp/probe" \
		-L"$BUILD/cpudev/lib" -lcuda 2>"$tmp/cc"; then
		SIMCUDA_VERBOSE=1 "$tmp/probe" >"$tmp/out" 2>"$tmp/err"
		cat "$tmp/out" "$tmp/err" >&2
		ok=0
		has '^500 500 null$' "$tmp/out" || ok=1
		[ "$(grep -c 'cuGetExportTable(01020304-0506-0708-090a-0b0c0d0e0f10): unknown table' "$tmp/err")" -eq 1 ] || ok=1
		check "unknown export table UUID: CUDA_ERROR_NOT_FOUND, NULL table, logged once" $ok "$tmp/err"
	else
		check "unknown export table UUID probe compiles" 1 "$tmp/cc"
	fi
	;;
*)
	echo "usage: $0 static-plain|static-ddp|shared-plain|shared-ddp|tiny|nullfree" >&2
	exit 2
	;;
esac
[ "$fails" -eq 0 ]
