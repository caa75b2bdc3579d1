#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# early_exit.sh - issue 31: a rank that ends before the first collective
# (a bad argument, the program's own assert) ends the job at once, named,
# while the other rank has not reached a collective yet.  Before, its libddp
# created the communicator at exit (ddp_overlap_finish) and waited there
# for every other rank, so ddprun only learned of the exit when the others
# came (DDP_COLL_TIMEOUT, 300 s, when they never did).  The program is
# tests/e2e/progs/steptrainer.c: rank 1 runs 0 steps (CUDA initialised,
# memory allocated, no collective) and exits; rank 0 starts 6 s late.
. "$(dirname "$0")/lib.sh"
need_steptrainer
export DDPRUN_GRACE=0.5 DDP_COLL_TIMEOUT=30
err=$TMP/err
# run CODE: rank 1 exits with CODE after 0 steps; prints the job's time in ms
run() {
	local t0 rc
	t0=$(now_ms)
	timeout 60 "$DDPRUN" -n 2 -- sh -c '[ "$RANK" = 1 ] && { "$0" 0; exit $1; }; sleep 6; exec "$0" 12' \
		"$T" "$1" >/dev/null 2>"$err"
	rc=$?
	echo "$rc $(($(now_ms) - t0))"
}

read -r rc t < <(run 3)
check "rank 1 exits 3 before the first collective: the job exits 3 (got $rc)" [ "$rc" = 3 ]
check "exit 3: the job ends in < 2 s, not when rank 0 comes (${t} ms)" [ "$t" -lt 2000 ]
check "exit 3: rank 1 is named" has "$err" '^ddprun: rank 1 \(pid [0-9]+\) exited with code 3$'
check "exit 3: libddp created no communicator at exit" hasnt "$err" 'communicator|DDP_COLL_TIMEOUT'
if [ $failures != 0 ]; then sed 's/^/# /' "$err" | tail -n 8; fi

# exit 0 early: left alone until rank 0 needs it, then named at once
read -r rc t < <(run 0)
check "rank 1 exits 0 early: the job fails, exit 1 (got $rc)" [ "$rc" = 1 ]
check "exit 0: named when rank 0 reaches its first collective, < 2 s after (${t} ms)" [ "$t" -lt 8000 ]
check "exit 0: rank 1 named as the rank that left" \
	has "$err" '^ddprun: rank 1 \(pid [0-9]+\) exited with code 0 while the others still need it'
finish
