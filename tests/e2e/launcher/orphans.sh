#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# orphans.sh - no process of the job outlives ddprun: grandchildren that left
# the rank's process group (setsid) and ignore SIGTERM are killed too, after
# a failure and after a clean exit.
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err
marker=ddprun-orphan-$$-$RANDOM

t0=$(now_ms)
"$DDPRUN" -n 2 "$PROG" orphan "$marker-a" >"$out" 2>"$err"
rc=$? t=$(($(now_ms) - t0))
check "rank 1 exits 5 -> 5" [ $rc = 5 ]
check "failure teardown within 5 s (${t} ms)" [ $t -lt 5000 ]
sleep 0.2
left=$(pgrep -f "$marker-a" | wc -l)
check "no grandchild left after a failure" [ "$left" = 0 ]

"$DDPRUN" -n 2 "$PROG" orphan "$marker-b" -1 >"$out" 2>"$err"
rc=$?
check "clean exit with daemons left behind -> 0" [ $rc = 0 ]
sleep 0.2
check "no grandchild left after a clean exit" [ "$(pgrep -f "$marker-b" | wc -l)" = 0 ]
# ddprun itself SIGKILLed: the ranks die by their parent-death signal, and
# what they started -- forked children in their process group, setsid'd
# grandchildren that ignore SIGTERM -- goes too (the guardian, guard.c)
slp=299.$RANDOM$RANDOM   # a sleep only this test runs
"$DDPRUN" -n 2 sh -c 'sleep $1 & "$0" orphan "$2" -2; wait' "$PROG" "$slp" "$marker-c" >"$out" 2>"$err" &
pid=$!
for i in $(seq 50); do [ "$(pgrep -f "$marker-c|sleep $slp" | wc -l)" -ge 6 ] && break; sleep 0.1; done
before=$(pgrep -f "$marker-c|sleep $slp" | wc -l)
kill -KILL $pid
wait $pid 2>/dev/null
sleep 2
check "SIGKILL of ddprun: there were descendants to kill ($before)" [ "$before" -ge 6 ]
check "SIGKILL of ddprun: 0 descendants after 2 s" [ "$(pgrep -f "$marker-c|sleep $slp" | wc -l)" = 0 ]
for p in $(pgrep -f "sleep $slp"); do kill -KILL "$p" 2>/dev/null; done

# clean up after a failed check, by pid
for pid in $(pgrep -f "$marker"); do kill -KILL "$pid" 2>/dev/null; done
finish
