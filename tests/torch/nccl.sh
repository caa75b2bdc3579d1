#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# nccl.sh - part of `make test-torch`: the real wheel's torch.distributed
# with backend "nccl" (NCCL 2.30 from the nvidia-nccl wheel) under
# `ddprun -n 2 --device cpu` in trace mode (SIMCUDA_UNKNOWN_KERNELS=skip):
# env:// rendezvous, ncclCommInitRank over two CPU devices (each rank its
# own PCI bus id and UUID, NVML's topology answers, host buffers through
# cuMem* VMM at host locations shared by POSIX fd between the two
# processes), one all_reduce whose NCCL kernel launch (cluster attribute,
# short argument buffer) is skipped, barrier, teardown.  Trace mode
# computes nothing, so values are not checked: the run proves the CPU
# device answers what NCCL asks, for stepping aside and the collectives'
# order.
#   - exit 0, both ranks report world size 2, NCCL says "Init COMPLETE"
#     with nranks 2, and the NCCL AllReduce kernel was skipped on both;
#   - negative control: the same run with cuThreadExchangeStreamCaptureMode
#     failing (DDP_SIM_FAIL; NCCL's host allocations need it) stops with
#     NCCL's "unhandled cuda error", not exit 0.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
VENV=${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0
"$VENV/bin/python3" -c 'import torch' 2>/dev/null || { echo "test-torch nccl: no wheel in $VENV (tests/torch/run.sh installs it)"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/test-torch-nccl.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
run() { # run NAME [ENV...]
	local name=$1
	shift
	env PATH="$VENV/bin:$PATH" SIMCUDA_UNKNOWN_KERNELS=skip DDP_CHECK_INVARIANT=0 NCCL_DEBUG=INFO "$@" \
		timeout 300 "$BUILD/bin/ddprun" -n 2 --device cpu -- python3 tests/torch/nccl_allreduce.py \
		>"$TMP/$name.out" 2>&1
}
check() { if [ "$2" -eq 0 ]; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); tail -n 20 "$TMP/$3.out" | sed 's/^/#   /'; fi; }

run plain
rc=$?
ok=$rc
for r in 0 1; do
	grep -q "rank $r of 2: all_reduce returned" "$TMP/plain.out" || ok=1
	grep -q "\[rank $r\] simcuda: trace mode: kernel _Z[0-9]*ncclDevKernel_AllReduce_Sum_f32" "$TMP/plain.out" || ok=1
done
[ "$(grep -c 'ncclCommInitRankConfig comm .* nranks 2 .* Init COMPLETE' "$TMP/plain.out")" -ge 2 ] || ok=1
check "init_process_group(\"nccl\") + all_reduce under ddprun -n 2 (trace mode): exit 0, NCCL kernels skipped" $ok plain

run no_capmode DDP_SIM_FAIL=cuThreadExchangeStreamCaptureMode:1+
rc=$?
ok=0
[ $rc -ne 0 ] && [ $rc -ne 124 ] || ok=1
grep -q 'unhandled cuda error' "$TMP/no_capmode.out" || ok=1
check "negative control: with cuThreadExchangeStreamCaptureMode failing NCCL's init fails (not exit 0)" $ok no_capmode
[ $fails -eq 0 ]
