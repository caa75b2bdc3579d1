#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# progress.sh - the usual hangs and early exits of a real trainer (samples/mlp
# on the CPU device, with libddp) under ddprun: --timeout names the rank whose
# training progress stopped, says where, and exits 124 within SEC s + one
# poll of the stall; a rank that exits 0 while the others wait for it in a
# collective stops the job within 2 s, naming that rank.  The faults come from
# tests/e2e/progs/hang_inject.c (preloaded before libddp): on rank 1, the
# 5th read of the data file spins, blocks in read(2), stops the process
# (SIGSTOP) or exits 0.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
export DDPRUN_GRACE=0.5
INJ=$build_dir/tests/e2e/progs/libhang_inject.so
MLP=$build_dir/samples/mlp DATA=$build_dir/data/mlp.rec
for f in "$build_dir/lib/libddp.so" "$build_dir/cpudev/lib/libcuda.so.1" "$MLP" "$DATA" "$INJ"; do
	[ -e "$f" ] || { echo "$f is not built (make all): the trainer runs need it"; exit 77; }
done
out=$TMP/out err=$TMP/err

# run_bg ARGS...: ddprun in the background; stdout/stderr to $out/$err
run_bg() {
	timeout 60 "$DDPRUN" "$@" >"$out" 2>"$err" &
	pid=$!
}

for mode in spin read stop; do
	LD_PRELOAD=$INJ HANG_RANK=1 HANG_MODE=$mode HANG_AFTER=5 \
		run_bg -n 2 --timeout 3 "$MLP" --data "$DATA" --steps 100000 --batch 8
	if ! wait_for "$err" "hang-inject: rank 1 $mode now" 1 30; then
		notok "$mode: the fault never happened"
		kill -KILL $pid
		continue
	fi
	# the stall's own moment (the injector's clock), not when this poll saw it
	t0=$(sed -n "s/.*hang-inject: rank 1 $mode now (at \([0-9]*\) ms).*/\1/p" "$err" | head -n 1)
	wait $pid
	rc=$? t=$(($(now_ms) - t0))
	check "$mode: exit 124 (got $rc)" [ $rc = 124 ]
	# (the stall falls at step 3 or 4: rank 0 waits in a gradient allreduce,
	# or in the exchange of step 3's invariant or parameter check,
	# docs/gradient-sync.md)
	check "$mode: rank 1 named, with where it stopped and who waits" \
		has "$err" "^ddprun: rank 1 made no progress for 3 s \(at step [0-9]+, [0-9]+ collectives done, not inside one; rank 0 waits in collective #[0-9]+ \((allreduce|invariant hash exchange|parameter hash exchange)\)\); stopping the job$"
	check "$mode: only rank 1 named" [ "$(grep -c 'made no progress' "$err")" = 1 ]
	# 3 s + one poll (0.25 s) after the stall, plus room for a loaded machine
	check "$mode: named ${t} ms after the stall (3000 + one poll)" [ $t -ge 2900 -a $t -lt 4500 ]
done

# a rank that hangs before its first CUDA call (before libddp exists in it)
run_bg -n 2 --timeout 3 sh -c '[ "$RANK" = 1 ] && exec sleep 30; exec "$@"' sh "$MLP" --data "$DATA" --steps 100000 --batch 8
t0=$(now_ms)
wait $pid
rc=$? t=$(($(now_ms) - t0))
check "before the first CUDA call: exit 124" [ $rc = 124 ]
check "before the first CUDA call: rank 1 named as such" \
	has "$err" '^ddprun: rank 1 made no progress for 3 s \(it never reached its first CUDA call; rank 0 waits in collective #1 \(broadcast\)\); stopping the job$'
check "before the first CUDA call: within 3 s + one poll of the start (${t} ms)" [ $t -lt 4500 ]

# a rank that exits 0 in the middle of training
LD_PRELOAD=$INJ HANG_RANK=1 HANG_MODE=exit0 HANG_AFTER=5 \
	run_bg -n 2 "$MLP" --data "$DATA" --steps 100000 --batch 8
wait_for "$err" "hang-inject: rank 1 exit0 now" 1 30
t0=$(now_ms)
wait $pid
rc=$? t=$(($(now_ms) - t0))
check "exit 0 mid-training: the job fails (exit 1, got $rc)" [ $rc = 1 ]
check "exit 0 mid-training: the rank that left is named" \
	has "$err" '^ddprun: rank 1 \(pid [0-9]+\) exited with code 0 while the others still need it: rank 0 waits in collective #[0-9]+ \((allreduce|invariant hash exchange|parameter hash exchange)( of step [0-9]+\); rank 1 ended at step [0-9]+, its last collective #[0-9]+ \([a-z ]+ of step [0-9]+\): the ranks ran different numbers of optimizer steps \(a rank skipped or added a step, or ended early)?\); stopping the job$'
check "exit 0 mid-training: stopped within 2 s (${t} ms)" [ $t -lt 2000 ]
check "exit 0 mid-training: no bystander named" hasnt "$err" 'rank 0 \(pid [0-9]+\) (exited|killed)'

# the same, with ddprun held (SIGSTOP by the leaving rank, which then
# _exits 0) until rank 0 has failed on the dead peer too (an allreduce of
# step 7: past the invariant checks of steps 1-3, which would wait for
# ddprun's store): ddprun then sees both exits at once.  A failed
# collective is not "done" on the status board, and the board numbers
# asynchronous ops in the same sequence as the others, so rank 1 is still
# the one named (before, rank 0 was: a load-dependent flake of the case
# above, made certain here).
LD_PRELOAD=$INJ HANG_RANK=1 HANG_MODE=exit0-stop-parent HANG_AFTER=8 \
	run_bg -n 2 "$MLP" --data "$DATA" --steps 100000 --batch 8
# (rank 1's stderr line waits in ddprun's pipe: watch the process table)
ddp=
for _ in $(seq 100); do ddp=$(pgrep -P $pid | head -1); [ -n "$ddp" ] && break; sleep 0.1; done
zombies() { ps --ppid "$ddp" -o stat= | grep -c '^Z'; }
for _ in $(seq 300); do [ "$(zombies)" -ge 2 ] && break; sleep 0.1; done
check "held ddprun: both ranks exited while ddprun was stopped" \
	[ "$(zombies)" -ge 2 -a "$(ps -o stat= -p "$ddp" | cut -c1)" = T ]
kill -CONT "$ddp"
wait $pid
rc=$?
check "held ddprun: the job fails (exit 1, got $rc)" [ $rc = 1 ]
check "held ddprun: the rank that left is named" \
	has "$err" '^ddprun: rank 1 \(pid [0-9]+\) exited with code 0 while the others still need it: rank 0 waits in collective #[0-9]+ \((allreduce|invariant hash exchange|parameter hash exchange)( of step [0-9]+\); rank 1 ended at step [0-9]+, its last collective #[0-9]+ \([a-z ]+ of step [0-9]+\): the ranks ran different numbers of optimizer steps \(a rank skipped or added a step, or ended early)?\); stopping the job$'
check "held ddprun: no bystander named" hasnt "$err" 'rank 0 \(pid [0-9]+\) (exited|killed)'

# a rank that exits 0 before the first rendezvous
run_bg -n 3 sh -c '[ "$RANK" = 2 ] && exit 0; exec "$@"' sh "$MLP" --data "$DATA" --steps 100000 --batch 8
t0=$(now_ms)
wait $pid
rc=$? t=$(($(now_ms) - t0))
check "exit 0 before the rendezvous: exit 1 (got $rc)" [ $rc = 1 ]
check "exit 0 before the rendezvous: rank 2 named" \
	has "$err" '^ddprun: rank 2 \(pid [0-9]+\) exited with code 0 while the others still need it: rank [01] waits in collective #1 '
check "exit 0 before the rendezvous: stopped within 2 s (${t} ms)" [ $t -lt 2000 ]

# negative control: a healthy job with --timeout, and ranks that end at
# different times outside any collective, are left alone
"$DDPRUN" -n 2 --timeout 3 "$MLP" --data "$DATA" --steps 20 --batch 8 >"$out" 2>"$err"
check "healthy job with --timeout 3: exit 0" [ $? = 0 ]
check "healthy job: nobody named" hasnt "$err" 'made no progress|still need it'
"$DDPRUN" -n 2 sh -c '"$@"; [ "$RANK" = 0 ] && sleep 1; exit 0' sh "$MLP" --data "$DATA" --steps 10 --batch 8 >"$out" 2>"$err"
check "rank 0 works on after rank 1 finished (outside collectives): exit 0" [ $? = 0 ]
finish
