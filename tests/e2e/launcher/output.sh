#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# output.sh - prefixed whole lines under heavy concurrent output, stdout vs
# stderr, --log-dir files, --ranks-filter, --quiet (launcher/output.c).
. "$(dirname "$0")/lib.sh"

N=20000
LEN=100
out=$TMP/out err=$TMP/err
"$DDPRUN" -n 2 "$PROG" spam $N $LEN >"$out" 2>"$err"
check "spam run exits 0" [ $? = 0 ]
# every stdout line: a prefix and a whole line of its rank, in order per rank
awk -v n=$N -v len=$LEN '
	/^\[rank [01]\] tail-without-newline$/ { tails++; next }
	{
		if (match($0, /^\[rank [01]\] /) == 0) { bad++; next }
		r = substr($0, 7, 1); body = substr($0, RLENGTH + 1)
		if (length(body) != len) { bad++; next }
		split(body, f, " ")
		if (f[1] != r || f[2] + 0 != seen[r]) { bad++; next }
		fill = substr(body, length(f[1] " " f[2] " ") + 1)
		c = (r == 0) ? "a" : "b"
		gsub(c, "", fill)
		if (fill != "") { bad++; next }
		seen[r]++
	}
	END {
		if (bad || seen[0] != n || seen[1] != n || tails != 2) {
			printf "# bad=%d seen0=%d seen1=%d tails=%d\n", bad, seen[0], seen[1], tails
			exit 1
		}
	}' "$out"
check "2 ranks x $N lines of $LEN chars: every line whole, prefixed, in order" [ $? = 0 ]
check "a final line without newline is flushed as a line" [ "$(tail -c 1 "$out" | od -An -c | tr -d ' ')" = '\n' ]
check "stderr lines go to stderr with the prefix" [ "$(grep -Ec '^\[rank [01]\] stderr line [0-2] of rank [01]$' "$err")" = 6 ]
check "no stderr line on stdout" hasnt "$out" 'stderr line'

# --log-dir: raw lines per rank, terminal output kept
"$DDPRUN" -n 2 --log-dir "$TMP/logs" "$PROG" spam 500 40 >"$out" 2>"$err"
check "--log-dir run exits 0" [ $? = 0 ]
for k in 0 1; do
	f=$TMP/logs/latest/rank$k.log
	check "rank$k.log: 500 stdout + 3 stderr lines + tail, no prefix" \
		[ "$(grep -c "^$k [0-9]\{7\} " "$f")" = 500 -a "$(grep -c "^stderr line . of rank $k$" "$f")" = 3 \
		  -a "$(grep -c '^\[rank' "$f")" = 0 -a "$(grep -c '^tail-without-newline$' "$f")" = 1 ]
done
check "--log-dir keeps the terminal output" [ "$(grep -c '^\[rank [01]\] [01] ' "$out")" = 1000 ]

# --ranks-filter: terminal shows only rank 1; files get both
"$DDPRUN" -n 3 --ranks-filter 1 --log-dir "$TMP/logs2" "$PROG" spam 100 40 >"$out" 2>"$err"
check "--ranks-filter 1: only rank 1 on stdout" [ "$(grep -c '^\[rank 1\] ' "$out")" = 101 -a \
	"$(grep -vc '^\[rank 1\] ' "$out")" = 0 ]
check "--ranks-filter 1: only rank 1 on stderr" [ "$(grep -c '^\[rank' "$err")" = 3 ] && hasnt "$err" '^\[rank [02]\]'
check "--ranks-filter: log files of every rank" [ "$(cat "$TMP"/logs2/latest/rank[012].log | grep -c ' [0-9]\{7\} ')" = 300 ]
"$DDPRUN" -n 4 --ranks-filter 0,2-3 "$PROG" spam 10 40 >"$out" 2>"$err"
check "--ranks-filter 0,2-3" [ "$(sed 's/\].*//' "$out" | sort -u | tr '\n' ' ')" = "[rank 0 [rank 2 [rank 3 " ]

# --quiet: nothing of the ranks on the terminal; files still complete
"$DDPRUN" -n 2 --quiet --log-dir "$TMP/logs3" "$PROG" spam 100 40 >"$out" 2>"$err"
check "--quiet: no rank output on the terminal" [ ! -s "$out" ] && hasnt "$err" '^\[rank'
check "--quiet: log files complete" [ "$(cat "$TMP"/logs3/latest/rank*.log | grep -c ' [0-9]\{7\} ')" = 200 ]
# --tee is accepted with --log-dir (torchrun spelling)
"$DDPRUN" -n 1 --tee --log-dir "$TMP/logs4" "$PROG" spam 5 40 >"$out" 2>"$err"
check "--tee --log-dir: terminal and file" [ "$(grep -c ' [0-9]\{7\} ' "$out")" = 5 -a \
	"$(grep -c ' [0-9]\{7\} ' "$TMP/logs4/latest/rank0.log")" = 5 ]
finish
