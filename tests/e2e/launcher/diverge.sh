#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# diverge.sh - issue 21 case 8: ranks that reach different collectives (one
# in an allreduce, the other in the invariant hash exchange) can never meet;
# ddprun sees it on the status board (each collective's number and kind) and
# stops the job with one line naming both ranks, their steps and
# collectives, on the host backend and on the CPU device's NCCL stand-in,
# with and without overlap: within 2 s when the board proves it (the same
# number, or the rank further on finished the other's), else after 10 s.  Before, the job hung until DDP_COLL_TIMEOUT.
# The program (tests/e2e/progs/steptrainer.c, written for these tests) is a
# minimal trainer; rank 1 runs with DDP_CHECK=4, so it alone exchanges
# parameter hashes after step 4 while rank 0 goes on to step 5's allreduce.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
T=$build_dir/tests/e2e/progs/steptrainer NL=$build_dir/cpudev/lib/nccl/libnccl.so.2
for f in "$build_dir/lib/libddp.so" "$T" "$T.kern.so"; do
	[ -e "$f" ] || { echo "$f is not built"; exit 77; }
done
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
		# a fraction of a second of the start here; 10 s where the rank
		# further on may still have the other's collective in flight (NCCL
		# with overlap: rank 0's allreduce #15 is still running when its
		# board shows #17)
		lim=3000
		grep -q 'each for 10.0 s' "$err" && lim=12500
		check "$n: stopped within $((lim / 1000)) s of the start (${t} ms; a hang: 30 s)" [ $t -lt $lim ]
	done
	# control: the same program, every rank alike: no false alarm
	DDPRUN_BACKEND=$be DDP_OVERLAP=on DDP_CHECK=4 timeout 60 "$DDPRUN" -n 2 "$T" 12 >"$out" 2>"$err"
	rc=$?
	check "$be, control (every rank DDP_CHECK=4): exit 0 (got $rc)" [ $rc = 0 ]
	check "$be, control: nothing said of collectives" hasnt "$err" 'different collectives'
	check "$be, control: both ranks end with the same weights" \
		[ "$(sed -n 's/^\[rank [01]\] done //p' "$out" | sort -u | wc -l)" = 1 ]
done
# a rank that skips a step and so ends one step early: named as the rank
# that left while the other still needed it (not a divergence)
STEP_FAULT=skip timeout 60 "$DDPRUN" -n 2 "$T" 12 >"$out" 2>"$err"
rc=$?
check "skipped step: exit 1 (got $rc)" [ $rc = 1 ]
check "skipped step: rank 1 named as the one that left" \
	has "$err" '^ddprun: rank 1 \(pid [0-9]+\) exited with code 0 while the others still need it: rank 0 waits in collective #[0-9]+ \(allreduce\); stopping the job$'
finish
