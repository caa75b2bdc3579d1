#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# stall_default.sh - issue 21 case 11: without --timeout, a rank that stops
# making progress (a busy loop outside any collective) while another waits
# for it in a collective is named after half of DDP_COLL_TIMEOUT, before the
# waiter's own collective timeout would fail it and make it look like the
# culprit, exit 1 ("rank 0 exited with code 1" after 300 s before); the end line's
# share of time in collectives counts the wait.  A rank that is slow but
# keeps launching kernels is left alone.  The program is
# tests/e2e/progs/steptrainer.c (written for these tests): rank 1 spins, or
# slows down, at step 5.
. "$(dirname "$0")/lib.sh"
need_steptrainer
export DDPRUN_GRACE=0.5 DDP_COLL_TIMEOUT=8   # the default watch: 4 s
out=$TMP/out err=$TMP/err

STEP_FAULT=spin timeout 60 "$DDPRUN" -n 2 "$T" 12 >"$out" 2>"$err" &
pid=$!
if wait_for "$err" '^\[rank 1\] fault: rank 1 spin at step 5$' 1 30; then
	t0=$(now_ms)
	wait $pid
	rc=$? t=$(($(now_ms) - t0))
	check "spinning rank, no --timeout: exit 1 (got $rc; 124 is --timeout's)" [ $rc = 1 ]
	check "spinning rank: rank 1 named, with where it stopped and who waits" \
		has "$err" '^ddprun: rank 1 made no progress for 4 s \(at step 4, [0-9]+ collectives done, not inside one; rank 0 waits in collective #[0-9]+ \(allreduce\)\); stopping the job \(no --timeout: the default, half of DDP_COLL_TIMEOUT, after which the waiting ranks would fail\)$'
	check "spinning rank: the victim is not blamed" hasnt "$err" 'rank 0 \(pid [0-9]+\) (exited|killed)|libddp ERROR.*rank 0'
	# (measured from when this script saw the fault line: up to a poll late on a loaded machine)
	check "spinning rank: named 4 s after the stall, before the victim's 8 s (${t} ms)" [ $t -ge 2500 -a $t -lt 6500 ]
	share=$(sed -n 's/^ddprun: job failed after .* \([0-9]*\)% of the time in collectives.*/\1/p' "$err")
	check "spinning rank: the end line counts rank 0's wait (${share:-?}% in collectives, not 0%)" \
		[ "${share:-0}" -ge 25 ]
	check "spinning rank: the end line says why" has "$err" '; a rank made no progress while the others waited for it \(exit 1\)$'
else
	notok "spin: the fault never happened"
	sed 's/^/# /' "$err" | tail -n 5
	kill -KILL $pid
fi

# control: slow but progressing (a kernel every 0.25 s for 6 s > 4 s): nobody named.
# DDP_OVERLAP=off: the slow rank launches its gradient kernel again and
# again, and with early reductions (the default) it re-reduces the
# re-written gradient alone (below)
STEP_FAULT=slow STEP_SLOW=6 DDP_OVERLAP=off timeout 60 "$DDPRUN" -n 2 "$T" 8 >"$out" 2>"$err"
rc=$?
check "slow rank: exit 0 (got $rc)" [ $rc = 0 ]
check "slow rank: nobody named" hasnt "$err" 'made no progress'
check "slow rank: both ranks done" [ "$(grep -c '^\[rank [01]\] done ' "$out")" = 2 ]
check "slow rank: the ranks end identical" [ "$(grep '^\[rank 0\] done ' "$out" | cut -d' ' -f3)" = \
	"$(grep '^\[rank 1\] done ' "$out" | cut -d' ' -f3)" ]
# the same with early reductions: rank 1 re-reduces its re-written gradient
# alone and its collective would pair with rank 0's next one; the
# collectives' step tags stop both at that collective (rereduce_alone.sh
# has the messages, NCCL and the negative control); nobody is named stalled
STEP_FAULT=slow STEP_SLOW=6 timeout 60 "$DDPRUN" -n 2 "$T" 8 >"$out" 2>"$err"
rc=$?
check "slow rank, early reductions: the exit is non-zero (got $rc)" [ $rc != 0 ]
check "slow rank, early reductions: stopped at the collective that pairs wrongly" \
	grep -q "the ranks' gradient collectives no longer pair up: at collective #[0-9]* rank 1 is in step 5's re-reduction" "$err"
check "slow rank, early reductions: nobody named stalled" hasnt "$err" 'made no progress'

# --timeout still wins: named after its own SEC, without the default's note
STEP_FAULT=spin timeout 60 "$DDPRUN" -n 2 --timeout 2 "$T" 12 >"$out" 2>"$err"
rc=$?
check "--timeout 2: exit 124 (got $rc)" [ $rc = 124 ]
check "--timeout 2: named after 2 s, no note of the default" \
	has "$err" '^ddprun: rank 1 made no progress for 2 s \(.*\); stopping the job$'
finish
