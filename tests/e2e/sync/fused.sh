#!/bin/bash
# SPDX-License-Identifier: MIT
#
# fused.sh - gradient synchronisation on samples/fused: bf16 gradients, fp32
# master weights, ONE multi_tensor_apply launch per step with every pointer
# inside a 2904-byte by-value struct (found by calibration on the first
# launch; the dtype from FusedAdamFunctor<__nv_bfloat16>).  Tolerance 1e-2
# (bf16 gradients are rounded once per rank before the average).
. "$(dirname "$0")/lib.sh"
need fused
D=$BUILD/data/mlp.rec
S=60

ref fused fused --data "$D" --steps $S --batch 32
DDPRUN_VERBOSE=1 ddp fused 2 fused "$D" --data "$D" --steps $S --batch 16
equiv fused 2 1e-2
n=$(grep -c 'gradient #[0-9]*: multi_tensor_apply_kernel:0\.[0-9]*, [0-9]* bytes at 0x[0-9a-f]* (+0 of allocation #[0-9]*, [0-9]* bytes), bf16 .*unchanged by the calibration run' "$TMP/fused.logs/latest/rank0.log")
if [ "$n" -eq 5 ]; then ok "fused: 5 bf16 gradients found inside the by-value struct"
else not_ok "fused: $n bf16 gradients found in the struct, expected 5"; fi

ref fused3 fused --data "$D" --steps 30 --batch 48
ddp fused3 3 fused "$D" --data "$D" --steps 30 --batch 16
equiv fused3 3 1e-2
exit $FAILED
