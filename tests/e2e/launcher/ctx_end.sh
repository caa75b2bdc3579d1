#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ctx_end.sh - issue 19 / session 7 task C: a program that ends its CUDA
# context without freeing its parameters still gets the final compare
# (every parameter and optimizer-state range hashed across ranks): it runs
# just before the context goes (hooks.def's CTX_GOING on cuCtxDestroy, the
# last cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxReset; interpose/
# hook_mem.c), where before only an info line said "final check skipped"
# after cuCtxDestroy.  The program: tests/e2e/progs/steptrainer.c with
# STEP_END=destroy (its own context, cuCtxCreate/cuCtxDestroy), reset,
# release (the primary context) and exit (nothing: the compare at exit).
# Control: DDP_DEBUG_PERTURB_RANK=1 (rank 1 changes one byte of its
# parameter after the last step): every ending must then exit non-zero
# naming the parameter; without it, exit 0 and the compare said identical.
. "$(dirname "$0")/lib.sh"
need_steptrainer
export DDPRUN_GRACE=0.5 DDP_COLL_TIMEOUT=20
out=$TMP/out err=$TMP/err
run() { # BACKEND END [env...]
	local be=$1 end=$2
	shift 2
	env DDPRUN_BACKEND=$be DDP_NCCL_LIB=$NL STEP_END=$end DDP_LOG=debug DDP_LOG_SUBSYS=grad "$@" \
		timeout 60 "$DDPRUN" -n 2 "$T" 6 >"$out" 2>"$err"
}
cases="host:destroy host:reset host:release host:exit"
[ -e "$NL" ] && cases="$cases nccl:reset nccl:release"
for c in $cases; do
	be=${c%%:*} end=${c#*:}
	case $end in
	destroy) fn=cuCtxDestroy ;;
	reset) fn=cuDevicePrimaryCtxReset ;;
	release) fn=cuDevicePrimaryCtxRelease ;;
	*) fn= ;;
	esac
	n="$be, STEP_END=$end"
	run "$be" "$end"
	rc=$?
	check "$n: exit 0 (got $rc)" [ $rc = 0 ]
	check "$n: both ranks trained to the end, alike" \
		[ "$(sed -n 's/^\[rank [01]\] done //p' "$out" | sort -u | wc -l)" = 1 ]
	check "$n: the final compare ran on both ranks and found them identical" \
		[ "$(grep -cE '^\[rank [01]\] libddp INFO .*final check after step 6: 1 parameter and state ranges identical' "$err")" = 2 ]
	check "$n: nothing skipped" hasnt "$err" 'final check skipped'
	if [ -n "$fn" ]; then
		check "$n: the compare ran before $fn (both ranks)" \
			[ "$(grep -cE "^\[rank [01]\] libddp DEBUG .*$fn: the parameters' context goes; the final compare runs first" "$err")" = 2 ]
	fi
	n="$be, STEP_END=$end, DDP_DEBUG_PERTURB_RANK=1 (control)"
	run "$be" "$end" DDP_DEBUG_PERTURB_RANK=1
	rc=$?
	check "$n: exit non-zero (got $rc)" [ $rc != 0 ]
	check "$n: the parameter named" \
		has "$err" 'libddp: the ranks diverged: at the end of training, after step 6, steptrainer_sgd_update:0 \(parameter or optimizer state'
done
finish
