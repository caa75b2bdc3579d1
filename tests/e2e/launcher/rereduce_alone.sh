#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rereduce_alone.sh - issue 19 / session 7 task A: with early reductions on
# (DDP_OVERLAP unset: auto, on), a rank that writes a gradient again after
# its early reduction re-reduces it at the consumer.  Right when every rank
# does it (averaging is linear); when one rank alone does it, its
# collective pairs with the others' NEXT one (rank 1's step 5 re-reduction
# meets rank 0's step 6 early reduction: same bucket, same count, so
# neither the one-time signature check nor the host descriptor's kind and
# count could tell) and the weights mix across steps.  Every overlapped
# collective now carries its step and phase (ddp_coll_set_tag): the host
# backend compares them in its descriptor barrier, NCCL (here the CPU
# device's stand-in) through a grouped max-allreduce of one double per rank.
# The program: tests/e2e/progs/steptrainer.c, STEP_FAULT=slow (the rank
# launches its gradient kernel again and again in step 5).
#   - rank 1 alone: stops DURING the run (no rank prints its final weights)
#     with one line naming the step, phase and range of each rank;
#   - negative control DDP_DEBUG_NO_COLL_TAGS=1: the same run is caught
#     only by the final compare at exit (the ranks' weights differ);
#   - every rank alike (STEP_FAULT_RANK=-1): the re-reduction happens on
#     every rank and the job trains equal to DDP_OVERLAP=off, exit 0.
. "$(dirname "$0")/lib.sh"
need_steptrainer
export DDPRUN_GRACE=0.5 DDP_COLL_TIMEOUT=20 STEP_SLOW=1
out=$TMP/out err=$TMP/err
backends="host"
[ -e "$NL" ] && backends="host nccl"
[ -e "$NL" ] || echo "# no NCCL stand-in at $NL: host backend only"
w0() { sed -n "s/^\[rank $1\] done w0=//p" "$out"; }
for be in $backends; do
	export DDPRUN_BACKEND=$be DDP_NCCL_LIB=$NL
	n="$be, rank 1 re-reduces alone"
	t0=$(now_ms)
	STEP_FAULT=slow timeout 60 "$DDPRUN" -n 2 "$T" 8 >"$out" 2>"$err"
	rc=$? t=$(($(now_ms) - t0))
	check "$n: exit 1 (got $rc)" [ $rc = 1 ]
	check "$n: stopped during the run (no rank printed its final weights)" hasnt "$out" 'done w0='
	check "$n: one line names the collective, both ranks' steps, phases and the range" \
		has "$err" "the ranks' gradient collectives no longer pair up: at (async allreduce|collective) #[0-9]+ rank (1 is in step 5's re-reduction at the consumer \(steptrainer_sgd_update:1\) (while|but) rank 0 (is )?in step 6's early reduction( \(steptrainer_sgd_update:1\))?|0 is in step 6's early reduction \(steptrainer_sgd_update:1\) but rank 1 in step 5's re-reduction at the consumer);"
	check "$n: says why" has "$err" 'one rank reduced gradient bytes the others did not .*stopped before their gradients mix'
	check "$n: not left to the final compare" hasnt "$err" 'the ranks diverged'
	check "$n: within 10 s (${t} ms; the slow step alone is 1 s)" [ $t -lt 10000 ]
	# negative control: no tags -> the collectives pair wrongly, the run
	# goes to its end and only the final compare catches it
	n="$be, DDP_DEBUG_NO_COLL_TAGS=1 (control)"
	DDP_DEBUG_NO_COLL_TAGS=1 STEP_FAULT=slow timeout 60 "$DDPRUN" -n 2 "$T" 8 >"$out" 2>"$err"
	rc=$?
	check "$n: nothing said of pairing" hasnt "$err" 'no longer pair up'
	check "$n: the run reached its end (rank 0 printed its weights)" has "$out" '^\[rank 0\] done w0='
	check "$n: the weights differ ($(w0 0) vs $(w0 1))" [ "$(w0 0)" != "$(w0 1)" ]
	check "$n: caught only by the final compare, exit non-zero (got $rc)" \
		eval "[ $rc != 0 ] && grep -q 'libddp: the ranks diverged: at the end of training, after step 8, steptrainer_sgd_update:0' '$err'"
	# every rank re-reduces alike: right, and equal to the synchronous path
	n="$be, every rank re-reduces"
	STEP_FAULT=slow STEP_FAULT_RANK=-1 DDP_OVERLAP=off timeout 60 "$DDPRUN" -n 2 "$T" 8 >"$out" 2>"$err"
	ref=$(w0 0)
	DDP_LOG=info STEP_FAULT=slow STEP_FAULT_RANK=-1 DDP_OVERLAP=on timeout 60 "$DDPRUN" -n 2 "$T" 8 >"$out" 2>"$err"
	rc=$?
	check "$n: exit 0 (got $rc)" [ $rc = 0 ]
	check "$n: both ranks re-reduced at step 5" \
		[ "$(grep -cE "^\[rank [01]\] libddp INFO .*step 5: gradient steptrainer_sgd_update:1 was written again after its early reduction .*reduced again$" "$err")" = 2 ]
	check "$n: ranks identical and equal to DDP_OVERLAP=off ($(w0 0), $(w0 1), off: ${ref:-none})" \
		eval "[ -n '$ref' ] && [ '$(w0 0)' = '$ref' ] && [ '$(w0 1)' = '$ref' ]"
	check "$n: nothing said of pairing" hasnt "$err" 'no longer pair up'
done
finish
