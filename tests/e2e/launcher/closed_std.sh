#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# closed_std.sh - ddprun started with standard input, output and error
# closed (cron, daemons, `prog <&- >&-`): the guardian's pipe and the status
# board must not land on fd 0/1/2, where the ranks' /dev/null stdin would
# replace them (the guardian then took ddprun for dead and SIGKILLed the job
# at start, exit 137, with no message and empty logs).  launcher/main.c
# reserve_std_fds.  The program (written for this test) writes one line on
# stdout and one on stderr per rank, then waits a moment.
. "$(dirname "$0")/lib.sh"
err=$TMP/err
prog='echo "out of rank $RANK"; echo "err of rank $RANK" >&2; sleep 0.5; echo "done $RANK"'

# stdin and stdout closed, stderr kept: messages and logs intact
"$DDPRUN" -n 2 --log-dir "$TMP/logs1" sh -c "$prog" <&- >&- 2>"$err"
rc=$?
check "stdin+stdout closed: exit 0 (got $rc)" [ $rc = 0 ]
check "stdin+stdout closed: ddprun's end line on stderr" has "$err" '^ddprun: job finished after [0-9.]+ s: 2 ranks \(exit 0\)$'
for k in 0 1; do
	check "stdin+stdout closed: rank $k's log has its lines" \
		sh -c "grep -qx 'out of rank $k' '$TMP/logs1/latest/rank$k.log' && grep -qx 'err of rank $k' '$TMP/logs1/latest/rank$k.log' && grep -qx 'done $k' '$TMP/logs1/latest/rank$k.log'"
done
check "stdin+stdout closed: the ranks' stderr lines reach ddprun's stderr" \
	[ "$(grep -c '^\[rank [01]\] err of rank [01]$' "$err")" = 2 ]

# all three closed: the job still runs to the end and logs everything
"$DDPRUN" -n 2 --log-dir "$TMP/logs2" sh -c "$prog" <&- >&- 2>&-
rc=$?
check "all three closed: exit 0 (got $rc)" [ $rc = 0 ]
for k in 0 1; do
	check "all three closed: rank $k's log is complete" \
		[ "$(grep -c -e "^out of rank $k\$" -e "^err of rank $k\$" -e "^done $k\$" "$TMP/logs2/latest/rank$k.log")" = 3 ]
done

# stdin closed only: stdout lines arrive, a failing rank is still named
"$DDPRUN" -n 2 sh -c "$prog; [ \$RANK = 1 ] && exit 3; exit 0" <&- >"$TMP/out" 2>"$err"
rc=$?
check "stdin closed: the failing rank's code (3, got $rc)" [ $rc = 3 ]
check "stdin closed: rank 1 named" has "$err" '^ddprun: rank 1 \(pid [0-9]+\) exited with code 3$'
# (rank 1's own lines: rank 0 may be stopped before its "done" once rank 1 has failed)
check "stdin closed: stdout lines arrive" [ "$(grep -c -e '^\[rank 1\] out of rank 1$' -e '^\[rank 1\] done 1$' "$TMP/out")" = 2 ]

# where ddprun's fd 0 points while the job runs: /dev/null, not a pipe of its own
"$DDPRUN" -n 1 sh -c 'ls -l /proc/$PPID/fd/0; sleep 0.2' <&- >"$TMP/out" 2>"$err"
check "stdin closed: ddprun's fd 0 is /dev/null" has "$TMP/out" '-> /dev/null$'
finish
