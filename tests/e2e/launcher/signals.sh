#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# signals.sh - SIGINT, SIGTERM and SIGHUP to ddprun reach every rank; a
# second SIGINT kills ranks that ignore the first (launcher/supervise.c).
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err
marker=ddprun-sig-$$-$RANDOM

for sig in INT TERM; do
	: >"$out"
	"$DDPRUN" -n 2 "$PROG" trap >"$out" 2>"$err" &
	pid=$!
	if ! wait_for "$out" '^\[rank [01]\] ready$' 2 20; then
		notok "SIG$sig: ranks did not start"
		sed 's/^/# /' "$err" | tail -n 5
		kill -KILL $pid
		continue
	fi
	kill -$sig $pid
	wait $pid
	rc=$?
	want=$((128 + $(kill -l $sig)))
	check "SIG$sig reaches both ranks" [ "$(grep -c "^\[rank [01]\] got SIG$sig$" "$out")" = 2 ]
	check "SIG$sig: ddprun exits $want" [ $rc = $want ]
	check "SIG$sig: ddprun says it passed it on" has "$err" "^ddprun: (interrupted|got) \(?SIG$sig"
	check "SIG$sig: no rank reported as failed" hasnt "$err" 'exited with code|killed by signal'
done

# a rank that ignores SIGINT and SIGTERM: the second SIGINT kills it at once
: >"$out"   # no "ready" of the previous run may match
"$DDPRUN" -n 2 "$PROG" ignore "$marker" >"$out" 2>"$err" &
pid=$!
if wait_for "$out" '^\[rank [01]\] ready$' 2 20; then
	kill -INT $pid
	sleep 0.5
	check "first SIGINT: ranks that ignore it keep running" kill -0 $pid
	t0=$(now_ms)
	kill -INT $pid
	wait $pid
	rc=$? t=$(($(now_ms) - t0))
	check "second SIGINT: ddprun exits 130" [ $rc = 130 ]
	check "second SIGINT: at once (${t} ms)" [ $t -lt 1500 ]
	check "second SIGINT: says so" has "$err" '^ddprun: second SIGINT; killing the ranks$'
	sleep 0.1
	check "second SIGINT: no rank left" [ "$(pgrep -f "$PROG ignore $marker" | wc -l)" = 0 ]
else
	notok "ignore: ranks did not start"
	sed 's/^/# /' "$err" | tail -n 5
	kill -KILL $pid
fi
for p in $(pgrep -f "$PROG ignore $marker"); do kill -KILL "$p"; done

# one SIGINT, ranks that ignore it: SIGTERM after the grace period, then
# SIGKILL after another
: >"$out"   # no "ready" of the previous run may match
DDPRUN_GRACE=0.5 "$DDPRUN" -n 2 "$PROG" ignore "$marker" >"$out" 2>"$err" &
pid=$!
if wait_for "$out" '^\[rank [01]\] ready$' 2 20; then
	t0=$(now_ms)
	kill -INT $pid
	wait $pid
	rc=$? t=$(($(now_ms) - t0))
	check "one SIGINT + ignoring ranks: exit 130 after SIGTERM and SIGKILL (${t} ms)" [ $rc = 130 -a $t -ge 900 -a $t -lt 3000 ]
	check "one SIGINT: escalates to SIGTERM" has "$err" '^ddprun: 2 ranks still running after SIGINT; sending SIGTERM \(SIGKILL after 0.5 s: DDPRUN_GRACE\)$'
	check "one SIGINT: then SIGKILL" has "$err" '^ddprun: 2 ranks still running after 0.5 s; sending SIGKILL$'
	sleep 0.1
	check "one SIGINT: no rank left" [ "$(pgrep -f "$PROG ignore $marker" | wc -l)" = 0 ]
else
	notok "ignore (one INT): ranks did not start"
	kill -KILL $pid
fi
for p in $(pgrep -f "$PROG ignore $marker"); do kill -KILL "$p"; done

# SIGTERM to ddprun with ranks that ignore it: SIGKILL after the grace period
: >"$out"   # no "ready" of the previous run may match
DDPRUN_GRACE=0.5 "$DDPRUN" -n 2 "$PROG" ignore "$marker" >"$out" 2>"$err" &
pid=$!
if wait_for "$out" '^\[rank [01]\] ready$' 2 20; then
	t0=$(now_ms)
	kill -TERM $pid
	wait $pid
	rc=$? t=$(($(now_ms) - t0))
	check "SIGTERM + ignoring ranks: exit 143 after the grace period (${t} ms)" [ $rc = 143 -a $t -lt 3000 ]
else
	notok "ignore (TERM): ranks did not start"
	sed 's/^/# /' "$err" | tail -n 5
	kill -KILL $pid
fi
for p in $(pgrep -f "$PROG ignore $marker"); do kill -KILL "$p"; done
finish
