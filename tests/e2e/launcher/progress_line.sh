#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# progress_line.sh - what ddprun says about a running job (issue 14, 8): a
# progress line at most every DDPRUN_PROGRESS seconds (default 10) on its
# stderr with steps/s, each rank's step and the share of time in
# collectives, also with --quiet; one end-of-job line, for a job that
# finishes and for one that fails.  samples/mlp on the CPU device.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
export DDPRUN_GRACE=0.5
MLP=$build_dir/samples/mlp DATA=$build_dir/data/mlp.rec
for f in "$build_dir/lib/libddp.so" "$build_dir/cpudev/lib/libcuda.so.1" "$MLP" "$DATA"; do
	[ -e "$f" ] || { echo "$f is not built (make all): the trainer runs need it"; exit 77; }
done
out=$TMP/out err=$TMP/err
line='^ddprun: progress after [0-9]+ s: [0-9]+\.[0-9] steps/s; step rank0 [0-9]+, rank1 [0-9]+; [0-9]+% of the time in collectives$'

# every second (DDPRUN_PROGRESS=1), until 3 lines came
DDPRUN_PROGRESS=1 "$DDPRUN" -n 2 "$MLP" --data "$DATA" --steps 10000000 --batch 8 >"$out" 2>"$err" &
pid=$!
t0=$(now_ms)
wait_for "$err" "$line" 3 30
t=$(($(now_ms) - t0))
kill -TERM $pid
wait $pid
n=$(grep -Ec "$line" "$err")
check "progress lines come (3 within ${t} ms)" [ "$n" -ge 3 ]
check "at most one per interval ($n lines in ${t} ms)" [ "$n" -le $((t / 1000 + 1)) ]
check "they show training: steps/s above 0 and a step above 0" \
	has "$err" '^ddprun: progress after [0-9]+ s: [0-9]*[1-9][0-9]*\.[0-9] steps/s; step rank0 [1-9]'
check "the end-of-job line says why it stopped" \
	has "$err" '^ddprun: job failed after [0-9.]+ s: 2 ranks, [0-9.]+ steps, [0-9]+% of the time in collectives, [0-9.]+ (bytes|KiB|MiB) of gradients averaged per rank; ddprun got SIGTERM \(exit 143\)$'
[ $failures = 0 ] || sed 's/^/# /' "$err" | tail -n 5

# --quiet hides the ranks' output, not the progress line
DDPRUN_PROGRESS=1 "$DDPRUN" -n 2 --quiet "$MLP" --data "$DATA" --steps 10000000 --batch 8 >"$out" 2>"$err" &
pid=$!
sleep 2.5
kill -TERM $pid
wait $pid
check "--quiet: the progress line still comes" has "$err" '^ddprun: progress after [0-9]+ s: '
check "--quiet: no rank output" hasnt "$err" '^\[rank'

# the default interval (10 s): a short job prints none, and one end line
"$DDPRUN" -n 2 "$MLP" --data "$DATA" --steps 20 --batch 8 >"$out" 2>"$err"
check "a 20-step job: exit 0" [ $? = 0 ]
check "default interval: no progress line in a short job" hasnt "$err" '^ddprun: progress'
check "one end-of-job line" [ "$(grep -c '^ddprun: job ' "$err")" = 1 ]
check "it says the job finished, with steps and collectives" \
	has "$err" '^ddprun: job finished after [0-9.]+ s: 2 ranks, 20 steps, [0-9]+% of the time in collectives, [0-9.]+ (bytes|KiB|MiB) of gradients averaged per rank \(exit 0\)$'
check "no --log-dir, no --trace: no line about them" hasnt "$err" '^ddprun: (logs|traces): '
"$DDPRUN" -n 2 --log-dir "$TMP/ld" --trace "$TMP/tr" "$MLP" --data "$DATA" --steps 3 --batch 8 >"$out" 2>"$err"
check "the end says where logs and traces went" \
	has "$err" "^ddprun: logs: $TMP/ld/run-[0-9-]+/rank<k>\\.log; traces: $TMP/tr \\(ddprun report $TMP/tr\\)\$"

# a failed job: the end line names the rank
"$DDPRUN" -n 2 "$PROG" exit 1 3 >"$out" 2>"$err"
check "a failed job: exit 3" [ $? = 3 ]
check "a failed job: the end line names the rank" \
	has "$err" '^ddprun: job failed after [0-9.]+ s: 2 ranks(, nothing synchronised \(no CUDA program joined the job\))?; rank 1 exited with code 3 \(exit 3\)$'
finish
