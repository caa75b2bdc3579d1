#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# signals_torchrun.sh - signals as torchrun handles them (issue 31,
# launcher/supervise.c): SIGUSR1 and SIGUSR2 to ddprun reach every rank and
# the job goes on (Slurm's preempt-and-checkpoint sends SIGUSR1); SIGTERM
# reaches every rank and then the grace period (default 30 s like torchrun,
# DDPRUN_GRACE) lets a rank save a 5 s "emergency checkpoint" whole before
# any SIGKILL; ddprun prints its end line.  --signals-to-handle leaves a
# signal out: it then ends ddprun, and the job with it.
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err
# the rank: says each USR1/USR2; on SIGTERM writes ckpt.<rank> in 5 parts,
# 1 s apart, then renames it (a torn checkpoint is a .tmp or fewer parts)
cat >"$TMP/rank.sh" <<'EOS'
d=$1
trap 'echo "got USR1"' USR1
trap 'echo "got USR2"' USR2
trap 'i=0; : >"$d/ckpt.$RANK.tmp"; while [ $i -lt 5 ]; do echo "part $i" >>"$d/ckpt.$RANK.tmp"; sleep 1; i=$((i + 1)); done; mv "$d/ckpt.$RANK.tmp" "$d/ckpt.$RANK"; echo saved; exit 0' TERM
echo ready
while :; do sleep 0.1 & wait $!; done
EOS
"$DDPRUN" -n 2 sh "$TMP/rank.sh" "$TMP" >"$out" 2>"$err" &
pid=$!
if wait_for "$out" '^\[rank [01]\] ready$' 2 20; then
	kill -USR1 $pid
	wait_for "$out" '^\[rank [01]\] got USR1$' 2 10
	check "SIGUSR1 reaches both ranks" [ "$(grep -c '^\[rank [01]\] got USR1$' "$out")" = 2 ]
	kill -USR2 $pid
	wait_for "$out" '^\[rank [01]\] got USR2$' 2 10
	check "SIGUSR2 reaches both ranks" [ "$(grep -c '^\[rank [01]\] got USR2$' "$out")" = 2 ]
	check "ddprun says it passed SIGUSR1 on" has "$err" '^ddprun: got SIGUSR1; passed it to the 2 running ranks$'
	sleep 0.3
	check "after SIGUSR1/2 the job goes on" kill -0 $pid
	t0=$(now_ms)
	kill -TERM $pid
	wait $pid
	rc=$? t=$(($(now_ms) - t0))
	check "SIGTERM: exit 143 once the ranks saved (rc $rc, ${t} ms)" [ $rc = 143 -a $t -ge 4500 ]
	whole=0
	for r in 0 1; do
		[ -f "$TMP/ckpt.$r" ] && [ "$(grep -c '^part' "$TMP/ckpt.$r")" = 5 ] && [ ! -e "$TMP/ckpt.$r.tmp" ] && whole=$((whole + 1))
	done
	check "a 5 s emergency checkpoint on SIGTERM is saved whole on both ranks ($whole of 2)" [ $whole = 2 ]
	check "no rank was killed (SIGKILL) within the grace period" hasnt "$err" 'sending SIGKILL'
	check "the message names the grace period and DDPRUN_GRACE" \
		has "$err" '^ddprun: got SIGTERM; passing it to the ranks \(SIGKILL after 30\.0 s: DDPRUN_GRACE\)$'
	check "the end line" has "$err" '^ddprun: job failed after .*ddprun got SIGTERM \(exit 143\)$'
else
	notok "ranks did not start: $(tail -n 3 "$err")"
	kill -KILL $pid
fi

# a signal left out of --signals-to-handle is not passed on: it ends ddprun
# (its default action), and the guardian ends the ranks
: >"$out"
marker=ddprun-sigs-$$-$RANDOM
"$DDPRUN" -n 2 --signals-to-handle SIGTERM,SIGINT "$PROG" ignore "$marker" >"$out" 2>"$err" &
pid=$!
if wait_for "$out" '^\[rank [01]\] ready$' 2 20; then
	kill -USR1 $pid
	wait $pid
	rc=$?
	check "--signals-to-handle without SIGUSR1: SIGUSR1 ends ddprun (rc $rc)" [ $rc = 138 ]
	for i in $(seq 40); do [ -z "$(pgrep -f "$PROG ignore $marker")" ] && break; sleep 0.05; done
	check "... and the job" [ -z "$(pgrep -f "$PROG ignore $marker")" ]
else
	notok "--signals-to-handle: ranks did not start"
	kill -KILL $pid
fi
for p in $(pgrep -f "$PROG ignore $marker"); do kill -KILL "$p"; done
finish
