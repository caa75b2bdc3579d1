#!/bin/bash
# SPDX-License-Identifier: MIT
#
# charlm.sh - gradient synchronisation on samples/charlm: ONE flat gradient
# allocation, global-norm clipping on the device (a gradient reader), then
# AdamW once per tensor on sub-ranges; and --amp, where the unscale/inf-check
# reader decides on the host whether to skip the step.
#
# The gradients must be averaged BEFORE the norm (else the ranks clip with
# different norms) and before the unscale (else one rank skips while the
# other waits in a collective).
. "$(dirname "$0")/lib.sh"
need charlm
D=$BUILD/data/charlm.rec
S=60

# clipping is active in this configuration: --clip 0.5 changes the result
# (at --clip 1.0 it would not be: the norm stays below 1)
ref clip charlm --data "$D" --steps $S --batch 8 --clip 0.5
ref noclip charlm --data "$D" --steps $S --batch 8 --clip 1e30
out=$(python3 "$HERE/relerr.py" "$TMP/clip.ref.bin" "$TMP/noclip.ref.bin" 1e-4)
if [ $? -eq 1 ]; then ok "clipping is active with --clip 0.5 (the gradient norm exceeds it; vs no clipping: $out)"
else not_ok "clipping not active: --clip 0.5 vs 1e30 $out"; fi

# (DDP_BUCKET_MB=25: the whole flat buffer one bucket; auto would cut this
# small model into several, overlap.sh covers that)
DDP_BUCKET_MB=25 DDP_TRACE=$TMP/clip.trace DDPRUN_VERBOSE=1 ddp clip 2 charlm "$D" --data "$D" --steps $S --batch 4 --clip 0.5
equiv clip 2 1e-5
# where: the flat gradient is a candidate at the norm kernel (a reader),
# averaged there; AdamW's five sub-range launches confirm five gradient
# ranges (adjacent: one collective of the whole 47744 bytes per step)
if grep -q 'candidate global_grad_norm:0: 47744 bytes at +0 .*read by reader global_grad_norm' "$TMP/clip.logs/latest/rank0.log"; then
	ok "clip: the flat gradient buffer is found at global_grad_norm, before AdamW"
else not_ok "clip: gradient not learned at the norm kernel"; fi
n=$(grep -c 'gradient #[0-9]*: adamw_update:1+[0-9]*, [0-9]* bytes .*revealed by reader global_grad_norm' "$TMP/clip.logs/latest/rank0.log")
if [ "$n" -eq 5 ]; then ok "clip: AdamW's 5 sub-range launches confirm 5 gradient ranges"
else not_ok "clip: $n gradient ranges confirmed, expected 5"; fi
n=$(syncq clip 0 "sum(1 for s in range(1, $S + 1) if ps[s]['collectives'] == 1 and ps[s]['bytes'] == 47744)")
if [ "$n" = $S ]; then ok "clip: one collective of the whole flat buffer (adjacent ranges: one span) per step ($n in $S steps)"
else not_ok "clip: $n steps with one collective of the flat buffer in $S steps"; fi

# mixed precision with overflow: the rank's gradients are N times those of
# the reference per element (its mean is over B, not N*B), so the reference
# runs with N times the loss scale: the same elements overflow at the same
# steps.  Every rank and the reference must skip exactly the same steps.
ref amp charlm --data "$D" --steps $S --batch 8 --amp --loss-scale 2e9
DDPRUN_VERBOSE=1 ddp amp 2 charlm "$D" --data "$D" --steps $S --batch 4 --amp --loss-scale 1e9
equiv amp 2 1e-5
skips() { awk '$1 == "step" && $5 == "skipped" { printf "%s ", $2 }'; }
s_ref=$(skips <"$TMP/amp.ref.out")
s0=$(rank_lines amp 0 | skips)
s1=$(rank_lines amp 1 | skips)
if [ -n "$s0" ] && [ "$s0" = "$s1" ] && [ "$s0" = "$s_ref" ]; then
	ok "amp: steps ${s0}skipped on both ranks and in the reference"
else not_ok "amp: skipped steps rank 0 '$s0', rank 1 '$s1', reference '$s_ref'"; fi
n0=$(rank_lines amp 0 | grep -c '^step')
n1=$(rank_lines amp 1 | grep -c '^step')
if [ "$n0" -eq $S ] && [ "$n1" -eq $S ]; then ok "amp: no deadlock, both ranks ran $S steps"
else not_ok "amp: ranks ran $n0 and $n1 steps of $S"; fi
if grep -q 'candidate amp_unscale_grads:0: 47744 bytes at +0 .*read by reader amp_unscale_grads' "$TMP/amp.logs/latest/rank0.log"; then
	ok "amp: the gradients are averaged before amp_unscale_grads (the inf check)"
else not_ok "amp: gradient not learned at the unscale kernel"; fi
exit $FAILED
