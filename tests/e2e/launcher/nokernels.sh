#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# nokernels.sh - issue 31: a program whose kernels have no CPU
# implementation never exits 0 on the CPU device.  nokernels.py (beside
# this script) asks for steptrainer's gradient kernel, ignores the refusal,
# as CUDA programs that never check their launches do, and prints
# "loss 0.000000".  Before, it exited 0 (under ddprun too); now the CPU
# device ends the process with exit 1 and one line naming ddp-cpu-kernels.
# Control: SIMCUDA_UNKNOWN_KERNELS=skip (trace mode, asked for) exits 0.
. "$(dirname "$0")/lib.sh"
need_steptrainer
PY=$(dirname "$0")/nokernels.py FB=$T.fatbin K=_Z16steptrainer_gradPKfS0_Pfi
[ -e "$FB" ] || { echo "$FB is not built"; exit 77; }
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
out=$TMP/out err=$TMP/err

LD_LIBRARY_PATH=$build_dir/cpudev/lib python3 "$PY" "$FB" "$K" >"$out" 2>"$err"
rc=$?
check "alone: exit 1 (got $rc)" [ $rc = 1 ]
check "alone: one line names the kernel and ddp-cpu-kernels" \
	[ "$(grep -c "^simcuda: error: 1 kernel had no CPU implementation and ran nowhere (first: $K): .*ddp-cpu-kernels" "$err")" = 1 ]

timeout 60 "$DDPRUN" -n 2 -- python3 "$PY" "$FB" "$K" >"$out" 2>"$err"
rc=$?
check "under ddprun: the job fails with the rank's exit 1 (got $rc)" [ $rc = 1 ]
check "under ddprun: the failed rank's last line names ddp-cpu-kernels" has "$err" '^    \[rank [01]\] simcuda: error: .*ddp-cpu-kernels'
[ $failures = 0 ] || sed 's/^/# /' "$err" | tail -n 6

SIMCUDA_UNKNOWN_KERNELS=skip LD_LIBRARY_PATH=$build_dir/cpudev/lib python3 "$PY" "$FB" "$K" >"$out" 2>"$err"
check "control: trace mode asked for (SIMCUDA_UNKNOWN_KERNELS=skip) exits 0" [ $? = 0 ]
check "control: no error line in trace mode" hasnt "$err" 'simcuda: error'
finish
