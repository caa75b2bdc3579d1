#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# failures.sh - exit codes and failure reports (launcher/supervise.c): the
# first failing rank is named with its code or signal and its last stderr
# lines; the others are stopped; a program that cannot run gives 127/126.
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err

"$DDPRUN" -n 3 "$PROG" exit -1 0 >"$out" 2>"$err"
check "all ranks exit 0 -> 0" [ $? = 0 ]

t0=$(now_ms)
"$DDPRUN" -n 3 "$PROG" exit 1 3 >"$out" 2>"$err"
rc=$? t=$(($(now_ms) - t0))
check "rank 1 exits 3 -> ddprun exits 3" [ $rc = 3 ]
check "names rank 1, its pid and the code" has "$err" '^ddprun: rank 1 \(pid [0-9]+\) exited with code 3$'
check "reports only the first failure" [ "$(grep -Ec '^ddprun: rank .* (exited|killed)' "$err")" = 1 ]
tail_part=$(sed -n '/^ddprun: last lines of rank 1.s stderr:$/,$p' "$err")
check "last 10 stderr lines shown (3..12, not 1..2)" \
	[ "$(echo "$tail_part" | grep -c '^    \[rank 1\] failing line')" = 10 ] && \
	echo "$tail_part" | grep -q 'failing line 12$' && ! echo "$tail_part" | grep -q 'failing line 2$'
check "the waiting ranks were stopped quickly (${t} ms)" [ $t -lt 5000 ]

"$DDPRUN" -n 2 "$PROG" signal 0 9 >"$out" 2>"$err"
check "rank killed by SIGKILL -> 137" [ $? = 137 ]
check "names SIGKILL" has "$err" '^ddprun: rank 0 \(pid [0-9]+\) killed by signal SIGKILL$'
"$DDPRUN" -n 2 "$PROG" signal 1 11 >"$out" 2>"$err"
check "rank killed by SIGSEGV -> 139" [ $? = 139 ]
check "names SIGSEGV" has "$err" '^ddprun: rank 1 \(pid [0-9]+\) killed by signal SIGSEGV$'

# a rank that ignores SIGTERM is SIGKILLed after the grace period
DDPRUN_GRACE=0.5 "$DDPRUN" -n 2 sh -c 'if [ "$RANK" = 1 ]; then sleep 0.3; exit 4; fi; trap "" TERM; while :; do sleep 0.1; done' >"$out" 2>"$err"
check "SIGTERM-ignoring rank killed after DDPRUN_GRACE; code of the first failure" [ $? = 4 ]
check "says SIGKILL is sent" has "$err" '^ddprun: 1 rank still running after 0.5 s; sending SIGKILL$'

t0=$(now_ms)
"$DDPRUN" -n 2 ./no/such/program >"$out" 2>"$err"
rc=$? t=$(($(now_ms) - t0))
check "missing program -> 127" [ $rc = 127 ]
check "missing program: one clear line" [ "$(grep -v 'CPU device' "$err")" = "ddprun: cannot run './no/such/program': No such file or directory" ]
check "missing program: fast (${t} ms)" [ $t -lt 2000 ]
"$DDPRUN" -n 2 no-such-program-in-path-xyz >"$out" 2>"$err"
check "program not in PATH -> 127" [ $? = 127 ]
printf '#!/bin/sh\necho hi\n' >"$TMP/noexec"
chmod 644 "$TMP/noexec"
"$DDPRUN" -n 2 "$TMP/noexec" >"$out" 2>"$err"
check "not executable -> 126" [ $? = 126 ]
check "not executable: message" [ "$(grep -v 'CPU device' "$err")" = "ddprun: cannot run '$TMP/noexec': Permission denied" ]
check "nothing ran" [ ! -s "$out" ]
finish
