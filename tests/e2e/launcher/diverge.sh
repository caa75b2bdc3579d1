#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# diverge.sh - issue 21 case 8: ranks that reach different collectives (one
# in an allreduce, the other in the invariant hash exchange) can never meet;
# ddprun sees it on the status board (each collective's number and kind) and
# stops the job with one line naming both ranks, their steps and
# collectives, on the host backend and on the CPU device's NCCL stand-in,
# with and without overlap: within 2 s (each board shows the lowest
# collective its rank is inside, overlapped allreduces in flight included).
# Before, the job hung until DDP_COLL_TIMEOUT.  A rank that skips a whole
# step is named when it ends a step early (the same kind of collective under
# different numbers, belonging to different steps).
# The program (tests/e2e/progs/steptrainer.c, written for these tests) is a
# minimal trainer; rank 1 runs with DDP_CHECK=4, so it alone exchanges
# parameter hashes after step 4 while rank 0 goes on to step 5's allreduce.
. "$(dirname "$0")/lib.sh"
need_steptrainer
export DDPRUN_GRACE=0.5 DDP_COLL_TIMEOUT=30   # a hang would last 30 s
out=$TMP/out err=$TMP/err
backends="host"
[ -e "$NL" ] && backends="host nccl"
for be in $backends; do
	for ov in off on; do
		t0=$(now_ms)
		DDPRUN_BACKEND=$be DDP_OVERLAP=$ov timeout 60 "$DDPRUN" -n 2 \
			sh -c '[ "$RANK" = 1 ] && export DDP_CHECK=4; exec "$0" 12' "$T" >"$out" 2>"$err"
		rc=$? t=$(($(now_ms) - t0))
		n="$be, overlap $ov"
		check "$n: exit 1 (got $rc)" [ $rc = 1 ]
		check "$n: one line names both ranks, their steps and collectives" \
			[ "$(grep -cE '^ddprun: the ranks reached different collectives and can never meet: rank 0 \(step 5\) waits in collective #[0-9]+ \(allreduce\) and rank 1 \(step 4\) in collective #[0-9]+ \(invariant hash exchange\), each for (1.5|10.0) s or more; .*stopping the job$' "$err")" = 1 ]
		check "$n: the end line says why" has "$err" '; the ranks reached different collectives \(exit 1\)$'
		check "$n: no rank blamed for exiting" hasnt "$err" 'exited with code|killed by signal'
		# 1.5 s settling + one poll after the divergence, which comes within
		# a fraction of a second of the start here; each board shows the
		# lowest collective its rank is inside, so the overlapped allreduce
		# still in flight on NCCL is seen too (it took 10 s before)
		check "$n: proved after 1.5 s (not the 10 s of an unproved case)" has "$err" 'each for 1\.5 s or more'
		check "$n: stopped within 3 s of the start (${t} ms; a hang: 30 s)" [ $t -lt 3000 ]
	done
	# control: the same program, every rank alike: no false alarm
	DDPRUN_BACKEND=$be DDP_OVERLAP=on DDP_CHECK=4 timeout 60 "$DDPRUN" -n 2 "$T" 12 >"$out" 2>"$err"
	rc=$?
	check "$be, control (every rank DDP_CHECK=4): exit 0 (got $rc)" [ $rc = 0 ]
	check "$be, control: nothing said of collectives" hasnt "$err" 'different collectives'
	check "$be, control: both ranks end with the same weights" \
		[ "$(sed -n 's/^\[rank [01]\] done //p' "$out" | sort -u | wc -l)" = 1 ]
	# a rank that skips a whole step (STEP_FAULT=skip: no kernels in step 3)
	# runs every collective paired with the other's next step's: nothing
	# differs until it ends one step early, while the other waits in its
	# last allreduce.  The same kind under different numbers, with the
	# steps they belong to on the board: named as a divergence at once.
	for ov in off on; do
		n="$be, overlap $ov, rank 1 skips step 3"
		t0=$(now_ms)
		DDPRUN_BACKEND=$be DDP_OVERLAP=$ov STEP_FAULT=skip STEP_FAULT_AT=3 timeout 60 "$DDPRUN" -n 2 \
			"$T" 12 >"$out" 2>"$err"
		rc=$? t=$(($(now_ms) - t0))
		check "$n: exit 1 (got $rc)" [ $rc = 1 ]
		check "$n: one line names the divergence, both ranks' steps and collectives" \
			[ "$(grep -cE '^ddprun: rank 1 \(pid [0-9]+\) exited with code 0 while the others still need it: rank 0 waits in collective #[0-9]+ \(allreduce of step 12\); rank 1 ended at step 11, its last collective #[0-9]+ \(allreduce of step 11\): the ranks ran different numbers of optimizer steps \(a rank skipped or added a step, or ended early\); stopping the job$' "$err")" = 1 ]
		check "$n: the end line says why" has "$err" '; rank 1 ran fewer optimizer steps than the others \(exit 1\)$'
		check "$n: no other rank blamed" hasnt "$err" 'rank 0 \(pid|exited with code [1-9]|killed by signal'
		check "$n: stopped within 2 s of the start (${t} ms)" [ $t -lt 2000 ]
		# negative control: no rank skips: exit 0, no such line
		DDPRUN_BACKEND=$be DDP_OVERLAP=$ov timeout 60 "$DDPRUN" -n 2 "$T" 12 >"$out" 2>"$err"
		rc=$?
		check "$be, overlap $ov, control (no skip): exit 0 (got $rc)" [ $rc = 0 ]
		check "$be, overlap $ov, control: no divergence line" hasnt "$err" 'different numbers|different collectives|still need'
		# rank 1 skips only the LAST step's optimizer launch, the value
		# checks off (no final compare): no collective is left to show it
		# and both ranks exit 0; ddprun compares the steps they ended at
		DDPRUN_BACKEND=$be DDP_OVERLAP=$ov DDP_CHECK_INVARIANT=0 STEP_FAULT=noopt STEP_FAULT_AT=12 timeout 60 \
			"$DDPRUN" -n 2 "$T" 12 >"$out" 2>"$err"
		rc=$?
		check "$be, overlap $ov, rank 1 skips the last update, checks off: exit 1 (got $rc)" [ $rc = 1 ]
		check "$be, overlap $ov, rank 1 skips the last update: named" \
			grep -q 'ddprun: the ranks ended at different steps: rank 1 ended at optimizer step 11 and rank 0 at step 12\|rank 1 ran fewer optimizer steps than the others' "$err"
		# rank 1 skips only step 3's optimizer launch (backward runs): with
		# overlap its allreduce of step 3 meets rank 0's hash exchange
		# (different kinds); without, the same as a skipped step
		DDPRUN_BACKEND=$be DDP_OVERLAP=$ov STEP_FAULT=noopt STEP_FAULT_AT=3 timeout 60 "$DDPRUN" -n 2 \
			"$T" 12 >"$out" 2>"$err"
		rc=$?
		check "$be, overlap $ov, rank 1 skips step 3's optimizer launch: exit 1 (got $rc)" [ $rc = 1 ]
		check "$be, overlap $ov, optimizer launch skipped: named as a divergence" \
			[ "$(grep -cE '^ddprun: (the ranks reached different collectives and can never meet: |rank 1 .*: the ranks ran different numbers of optimizer steps)' "$err")" = 1 ]
	done
done
finish
