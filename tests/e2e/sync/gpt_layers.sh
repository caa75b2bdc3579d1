#!/bin/bash
# SPDX-License-Identifier: MIT
#
# gpt_layers.sh - samples/gpt --update layers: the optimizer written as the
# bf16 build of a hand-written CUDA C GPT-2 trainer (llm.c's train_gpt2.cu)
# writes it: bf16 parameters and gradients in one allocation each, fp32
# master weights, per tensor KIND one adamw_kernel3 launch covering every
# layer (grid.y = layers, element i of layer l at offset + l * stride + i,
# every pointer non-const, bf16 parameters by stochastic rounding), the
# master weights cast from the bf16 parameters at step 1 (strided
# copy_and_cast_kernel), and per-tensor-kind squared norms (grid.y = layers,
# stride arguments) accumulated for clipping.
#   - ddprun -n 2 --shard gpt.bin:mode=block with batch B equals one process
#     at 2B on the union of the ranks' batches (blockref.py), relative L2
#     <= 1e-2 over 30 steps (bf16), ranks bit-identical, no setting;
#   - every step after the first reduces exactly the gradient bytes (60160:
#     every tensor kind's union over the layers, not one layer's count);
#   - negative control: DDP_SYNC=off fails the same comparison.
# Before the grid-strided extents (ddp_extent.c) the same run stopped at
# step 2: each launch's extent was one layer's count, so layer 1 of the
# 12 layer kinds was never a gradient and the clip scale differed between
# ranks ("the scalar arguments of kernel adamw_kernel3 ... differ").
. "$(dirname "$0")/lib.sh"
need gpt
D=$BUILD/data/gpt.bin
[ -e "$D" ] || { echo "$D is not built (make all)"; exit 77; }
S=30
B=2
T=16
n=2

python3 "$HERE/blockref.py" "$D" "$TMP/ref.bin" $n $S $((B * (T + 1))) || not_ok "blockref.py failed"
ref layers gpt --update layers --data "$TMP/ref.bin" --steps $S --batch $((n * B))
DDPRUN_TRACE=$TMP/layers.trace ddp layers $n gpt "$D:mode=block" --update layers --data "$D" --steps $S --batch $B
rc=$?
[ $rc -eq 0 ] || not_ok "layers: ddprun -n $n exited $rc: $(tail -2 "$TMP/layers.ddp.err" | tr '\n' ' ')"
equiv layers $n 1e-2
bytes_ok layers $n 60160

# negative control: without synchronisation the same comparison fails
DDP_SYNC=off ddp off $n gpt "$D:mode=block" --update layers --data "$D" --steps $S --batch $B
out=$(python3 "$HERE/relerr.py" "$TMP/off.0.bin" "$TMP/layers.ref.bin" 1e-2)
rc=$?
if [ $rc -eq 1 ]; then ok "negative control: DDP_SYNC=off fails the equivalence ($out > 1e-2)"
else not_ok "negative control: DDP_SYNC=off passed or broke the comparison ($out, rc $rc)"; fi
exit $FAILED
