#!/bin/bash
# SPDX-License-Identifier: MIT
#
# nccl.sh - the NCCL backend end to end on the CPU device, through its NCCL
# stand-in (build/cpudev/lib/nccl/libnccl.so.2, docs/cpu-device.md "NCCL"):
# `ddprun -n 2 --backend nccl` (ddprun points DDP_NCCL_LIB at the stand-in on
# the CPU device) with DDP_OVERLAP=auto (the default: on with NCCL), on (collectives enqueued on the
# communication stream, the watchdog thread) and off (synchronous NCCL
# calls on the program's stream):
#   - charlm (0.01 MiB buckets: 5 per step), gpt (llm.c layout, bf16, block
#     shards) and torchlike (PyTorch's launches, 304 tensors) equal one
#     process at 2 x batch, all ranks bit-identical;
#   - the collectives really went through NCCL: the stand-in's own count of
#     allreduces (SIMNCCL_STATS) equals libddp's collectives per step summed
#     (sync.json), on both ranks; 5 per step with overlap on (charlm);
#   - auto's fallback: with the trial communication stream refused
#     (DDP_SIM_FAIL=cuStreamCreateWithPriority:1), one warning line per
#     rank, synchronous reductions, still equal to the reference;
#   - negative control: the stand-in leaving rank 1's contribution out of
#     every sum (SIMNCCL_FAULT=drop:1) fails the same comparison, although
#     the ranks stay identical;
#   - samples/mlp makes its own context (cuCtxCreate): refused with one line,
#     as on a GPU (NCCL works in the primary context).
# The failure paths (a rank stopped or killed inside a collective) are
# nccl_failures.sh.
. "$(dirname "$0")/lib.sh"
need charlm gpt torchlike
NL=$BUILD/cpudev/lib/nccl/libnccl.so.2
[ -e "$NL" ] || { echo "$NL is not built (nccl.h missing?)"; exit 77; }
unset DDP_NCCL_LIB
C=$BUILD/data/charlm.rec
G=$BUILD/data/gpt.bin
M=$BUILD/data/mlp.rec
S=12

# nrun NAME OVERLAP SAMPLE DATA ARGS...: ddp with --backend nccl, a trace and the stand-in's counts
nrun() {
	local name=$1 ov=$2
	shift 2
	mkdir -p "$TMP/$name.stats"
	DDPRUN_BACKEND=nccl DDP_OVERLAP=$ov SIMNCCL_STATS=$TMP/$name.stats DDP_TRACE=$TMP/$name.trace ddp "$name" 2 "$@"
	local rc=$?
	[ $rc -eq 0 ] || not_ok "$name: ddprun exited $rc: $(grep -m2 -E 'libddp|ddprun' "$TMP/$name.ddp.err" | tr '\n' ' ')"
}

# counted NAME: libddp used NCCL, and the stand-in ran as many allreduce
# launches (a single ncclAllReduce, or a group of them: one bucket) as
# libddp's per-step collectives add up to, on both ranks
counted() {
	local name=$1 r sim lib bad=
	for r in 0 1; do
		sim=$(awk '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1); print v["launches"] - v["broadcast"] }' \
			"$TMP/$name.stats"/simnccl.$r.* 2>/dev/null)
		lib=$(syncq "$name" $r 'sum(ps[s]["collectives"] for s in ps)')
		[ -n "$sim" ] && [ "$sim" = "$lib" ] && [ "$sim" -gt 0 ] || bad="$bad rank $r: stand-in ${sim:-none}, libddp $lib;"
	done
	grep -q 'misuse 0$' "$TMP/$name.stats"/simnccl.0.* || bad="$bad calls on a dead communicator: $(cat "$TMP/$name.stats"/simnccl.0.*);"
	if [ -z "$bad" ]; then ok "$name: $sim allreduce launches through the NCCL stand-in on each rank = libddp's collectives"
	else not_ok "$name: collective counts:$bad"; fi
}

export DDP_BUCKET_MB=0.01
ref ch charlm --data "$C" --steps $S --batch 8 --clip 0.5
for ov in auto on off; do
	nrun ch_$ov $ov charlm "$C" --data "$C" --steps $S --batch 4 --clip 0.5
	cp "$TMP/ch.ref.bin" "$TMP/ch_$ov.ref.bin"
	equiv ch_$ov 2 1e-5
	counted ch_$ov
done
r=$(syncq ch_on 0 '(j["overlap"], sorted(set(ps[s]["collectives"] for s in ps if s >= 2)), j["early_reductions"] > 0)')
if [ "$r" = "('on', [5], True)" ]; then ok "charlm, overlap on: 5 collectives per step (its 5 buckets), reduced early on the communication stream"
else not_ok "charlm, overlap on: (overlap, collectives per step, early) = $r"; fi
r=$(syncq ch_auto 0 '(j["overlap"], sorted(set(ps[s]["collectives"] for s in ps if s >= 2)), j["early_reductions"] > 0)')
if [ "$r" = "('on', [5], True)" ]; then ok "charlm, DDP_OVERLAP=auto (the default) with NCCL: stream-ordered, 5 buckets per step, reduced early"
else not_ok "charlm, DDP_OVERLAP=auto with NCCL: (overlap, collectives per step, early) = $r, want on"; fi

# auto's fallback: the driver refuses the trial communication stream
DDP_SIM_FAIL=cuStreamCreateWithPriority:1 nrun fb auto charlm "$C" --data "$C" --steps $S --batch 4 --clip 0.5
cp "$TMP/ch.ref.bin" "$TMP/fb.ref.bin"
equiv fb 2 1e-5
n=$(grep -c 'libddp.*DDP_OVERLAP=auto: synchronous nccl reductions at the consumer, not overlapped with backward: a communication stream cannot be made (cuStreamCreateWithPriority: CUDA error [0-9]*)' "$TMP/fb.ddp.err")
r=$(syncq fb 0 '(j["overlap"], j["early_reductions"])')
if [ "$n" = 2 ] && [ "$r" = "('off', 0)" ]; then ok "DDP_OVERLAP=auto, no communication stream: one line per rank, synchronous NCCL"
else not_ok "auto's fallback: $n warning line(s) (want 2), (overlap, early) = $r: $(grep -m2 libddp "$TMP/fb.ddp.err" | tr '\n' ' ')"; fi

r=$(syncq ch_off 0 '(j["overlap"], j["early_reductions"])')
if [ "$r" = "('off', 0)" ]; then ok "charlm, overlap off: synchronous NCCL calls"
else not_ok "charlm, overlap off: (overlap, early reductions) = $r"; fi

# negative control: a reduction that leaves rank 1 out
SIMNCCL_FAULT=drop:1 nrun drop on charlm "$C" --data "$C" --steps $S --batch 4 --clip 0.5
out=$(python3 "$HERE/relerr.py" "$TMP/drop.0.bin" "$TMP/ch.ref.bin" 1e-5)
if [ $? -eq 1 ] && identical drop 2; then ok "negative control: rank 1 left out of the sums fails the equivalence ($out > 1e-5), ranks identical"
else not_ok "negative control: SIMNCCL_FAULT=drop:1 passed the comparison or broke the run ($out)"; fi

# gpt: block shards, the reference on the union of the ranks' batches
B=2 T=16
python3 "$HERE/blockref.py" "$G" "$TMP/gref.bin" 2 $S $((B * (T + 1))) || not_ok "blockref.py failed"
ref gpt gpt --data "$TMP/gref.bin" --steps $S --batch $((2 * B))
export DDP_BUCKET_MB=0.005
for ov in on off; do
	nrun gpt_$ov $ov gpt "$G:mode=block" --data "$G" --steps $S --batch $B
	cp "$TMP/gpt.ref.bin" "$TMP/gpt_$ov.ref.bin"
	equiv gpt_$ov 2 1e-2
	counted gpt_$ov
done

# torchlike: AdamW, clipping, the caching allocator
export DDP_BUCKET_MB=0.05
ref tl torchlike --data "$M" --steps $S --batch 16 --optim adamw --clip 1.0 --alloc caching
for ov in on off; do
	nrun tl_$ov $ov torchlike "$M" --data "$M" --steps $S --batch 8 --optim adamw --clip 1.0 --alloc caching
	cp "$TMP/tl.ref.bin" "$TMP/tl_$ov.ref.bin"
	equiv tl_$ov 2 1e-5
	counted tl_$ov
done
g=$(sed -n 's/.* groups \([0-9]*\) .*/\1/p' "$TMP/tl_on.stats"/simnccl.0.*)
if [ "${g:-0}" -gt 0 ] 2>/dev/null; then ok "torchlike, overlap on: $g buckets of several tensors went as NCCL groups"
else not_ok "torchlike, overlap on: no NCCL group ($(cat "$TMP/tl_on.stats"/simnccl.0.*))"; fi
# overlap off: the 304 gradients (170304 bytes), not adjacent in the
# caching allocator's segment, go through the same bucket planner as the
# early reductions: 4 buckets of at most 0.05 MiB, each one NCCL group, per
# step -- not 304 collectives
pc=$(syncq tl_off 0 'sorted(set(ps[s]["collectives"] for s in ps))')
if [ "$pc" = "[4]" ]; then ok "torchlike, overlap off: 4 NCCL groups (buckets of 0.05 MiB) per step for 304 gradients"
else not_ok "torchlike, overlap off: collectives per step $pc, want [4]"; fi

# mlp creates its own context: refused with one line, as on a GPU
timeout 60 "$DDPRUN" -n 2 --backend nccl --shard "$M" -- "$BUILD/samples/mlp" --data "$M" --steps 3 \
	>"$TMP/mlp.out" 2>"$TMP/mlp.err"
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'the program made its own CUDA context (cuCtxCreate): NCCL works in the device.s primary context and cannot reach its buffers; use --backend host' "$TMP/mlp.err"; then
	ok "mlp (cuCtxCreate) with --backend nccl: refused with one line (rc $rc)"
else not_ok "mlp with --backend nccl: rc $rc: $(grep -m1 libddp "$TMP/mlp.err")"; fi
exit $FAILED
