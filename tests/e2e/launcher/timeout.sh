#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# timeout.sh - --timeout SEC: a rank whose store heartbeat counter stops
# while the others go on is named and the job stopped (exit 124); ranks that
# keep progressing are left alone.  The ranks post heartbeats with the store
# client of runtime/store/ddp_store.h directly (rankprog heartbeat).
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err

t0=$(now_ms)
"$DDPRUN" -n 3 --timeout 1 "$PROG" heartbeat 2 0.2 >"$out" 2>"$err"
rc=$? t=$(($(now_ms) - t0))
check "stuck rank: exit 124" [ $rc = 124 ]
check "names the stuck rank" has "$err" '^ddprun: rank 2 made no progress for 1 s; stopping the job$'
check "only one rank named" [ "$(grep -c 'made no progress' "$err")" = 1 ]
check "stopped after about 1 s (${t} ms), before the ranks would end (3 s)" [ $t -ge 1000 -a $t -lt 2900 ]

"$DDPRUN" -n 3 --timeout 1 "$PROG" heartbeat -1 >"$out" 2>"$err"
check "all ranks progressing: exit 0" [ $? = 0 ]
check "all ranks progressing: nobody named" hasnt "$err" 'made no progress'

"$DDPRUN" -n 3 --timeout 1 sh -c '[ "$RANK" = 2 ] && exec sleep 5; exec "$0" heartbeat -1' "$PROG" >"$out" 2>"$err"
rc=$?
check "a rank that never posts while the others progress: exit 124" [ $rc = 124 ]
check "a rank that never posts: it is the one named" has "$err" '^ddprun: rank 2 made no progress for 1 s; stopping the job$'

"$DDPRUN" -n 2 --timeout 1 sh -c 'sleep 1.5' >"$out" 2>"$err"
check "no rank posts heartbeats: nobody is timed out" [ $? = 0 ]
finish
