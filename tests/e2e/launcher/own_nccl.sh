#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# own_nccl.sh - a program that is already data-parallel (it runs NCCL
# collectives of its own, as a PyTorch DDP script does) is detected and
# ddprun's gradient synchronisation steps aside with one line (issue 14, 7).
# samples/mlp on the CPU device, each rank reading its shard, with
# tests/e2e/progs/own_nccl.c preloaded: at the 3rd data read it launches a
# kernel named like NCCL's.  Then the ranks' parameters must differ at the
# end (nobody averages them any more) where the same job without the shim
# (the negative control) ends with identical parameters.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
OWN=$build_dir/tests/e2e/progs/libown_nccl.so
MLP=$build_dir/samples/mlp DATA=$build_dir/data/mlp.rec
for f in "$build_dir/lib/libddp.so" "$build_dir/cpudev/lib/libcuda.so.1" "$MLP" "$DATA" "$OWN" "$OWN.kern.so"; do
	[ -e "$f" ] || { echo "$f is not built (make all): the trainer runs need it"; exit 77; }
done
out=$TMP/out err=$TMP/err
# run NAME [VAR=VALUE...]: a 2-rank job, each rank saving its parameters
run() {
	local name=$1
	shift
	env "$@" "$DDPRUN" -n 2 --all-ranks-write --shard "$DATA" sh -c 'exec "$0" "$@" --save "$SAVE.$RANK"' \
		"$MLP" --data "$DATA" --steps 12 --batch 8 >"$out" 2>"$err"
}

export SAVE=$TMP/own
run own LD_PRELOAD=$OWN OWN_NCCL_AFTER=3
rc=$?
check "own NCCL: the job exits 0 (got $rc)" [ $rc = 0 ]
check "own NCCL: the shim launched on both ranks" [ "$(grep -c '^\[rank [01]\] own-nccl: rank [01] launched$' "$err")" = 2 ]
check "own NCCL: one line says ddprun's sync steps aside" \
	[ "$(grep -c "libddp: rank 0: the program is already data-parallel (it launched NCCL kernel ncclDevKernel_AllReduce_Sum_f32_RING_LL of its own); ddprun's gradient synchronisation steps aside" "$err")" = 1 ]
check "own NCCL: ddprun's end line says the program synchronised itself" \
	has "$err" '^ddprun: job finished .*, the program synchronised itself \(libddp stood aside\) \(exit 0\)$'
check "own NCCL: no other warning or error" [ "$(grep -Ec 'WARN|ERROR' "$err")" = 1 ]
check "own NCCL: the ranks' parameters are no longer averaged (they differ)" \
	sh -c '[ -s "$1.0" ] && [ -s "$1.1" ] && ! cmp -s "$1.0" "$1.1"' sh "$SAVE"
if [ $failures != 0 ]; then sed 's/^/# /' "$err" | tail -n 8; fi

export SAVE=$TMP/plain
run plain
check "negative control: without the shim the job exits 0" [ $? = 0 ]
check "negative control: nothing steps aside" hasnt "$err" 'steps aside'
check "negative control: the ranks' parameters are identical" \
	sh -c '[ -s "$1.0" ] && cmp -s "$1.0" "$1.1"' sh "$SAVE"
finish
