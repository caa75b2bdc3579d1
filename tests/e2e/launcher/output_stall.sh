#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# output_stall.sh - issue 21 case 9: forwarding output never blocks failure
# handling.  ddprun's stdout is a pipe nobody reads (`| less` not scrolled);
# the program (written for this test) writes 40 MB to stdout on every rank,
# then waits.  A rank
# SIGKILLed meanwhile is still named at once and the others stopped; SIGTERM
# to ddprun is acted on at once; output beyond 16 MiB is dropped with a
# count, said once, the log files keep everything; once the reader reads,
# what waited arrives and ddprun exits with the right code
# (launcher/output.c launch_term_write).
. "$(dirname "$0")/lib.sh"
export DDPRUN_GRACE=1
marker=ddprun-stall-$$-$RANDOM

# stall.py MODE: runs ddprun -n 2 with stdout a pipe read by nobody;
# MODE kill: rank 1 SIGKILLs itself after 1.5 s; MODE term: the test sends
# SIGTERM to ddprun after 1.5 s.  Prints when the failure was handled (the
# line on ddprun's stderr, a file), whether the ranks were gone then, and
# ddprun's exit code once the pipe is drained.
cat >"$TMP/stall.py" <<'PY'
import os, subprocess, sys, time
ddprun, mode, marker, errpath, logdir = sys.argv[1:6]
# every rank floods stdout; rank 1 of the kill test dies by SIGKILL after 1.5 s
flood = ('if [ "$RANK" = 1 ] && [ "%s" = kill ]; then (sleep 1.5; kill -KILL $$) & fi; '
         'yes "%s flood line of rank $RANK" | head -c 40000000; sleep 30' % (mode, marker))
r, w = os.pipe()
err = open(errpath, "wb")
p = subprocess.Popen([ddprun, "-n", "2", "--log-dir", logdir, "sh", "-c", flood],
                     stdout=w, stderr=err)
os.close(w)
t0 = time.time()
if mode == "term":
    time.sleep(1.5)
    p.send_signal(15)
    t0 = time.time()
def ranks_alive():
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in open("/proc/%s/cmdline" % pid, "rb").read() and int(pid) not in (p.pid, os.getpid()):
                    n += 1
            except OSError:
                pass
    return n
want = b"killed by signal SIGKILL" if mode == "kill" else b"got SIGTERM"
handled = None
while time.time() - t0 < 20:
    if want in open(errpath, "rb").read():
        handled = time.time() - t0
        break
    time.sleep(0.02)
# the others stopped while nobody has read a byte yet
gone = None
while handled is not None and time.time() - t0 < 20:
    if ranks_alive() == 0:
        gone = time.time() - t0
        break
    time.sleep(0.02)
exited_unread = p.poll() is not None
got = 0
while True:
    b = os.read(r, 1 << 20)
    if not b:
        break
    got += len(b)
rc = p.wait()
if mode == "kill":
    handled = (handled - 1.5) if handled is not None else None
    gone = (gone - 1.5) if gone is not None else None
print("handled=%s gone=%s rc=%d read=%d exited_unread=%d" % (
    "%.2f" % handled if handled is not None else "never",
    "%.2f" % gone if gone is not None else "never", rc, got, exited_unread))
PY

python3 "$TMP/stall.py" "$DDPRUN" kill "$marker" "$TMP/err" "$TMP/logs" >"$TMP/res" 2>&1
sed 's/^/# /' "$TMP/res"
read -r h g rc rd eu < <(sed -n 's/^handled=\([^ ]*\) gone=\([^ ]*\) rc=\([0-9]*\) read=\([0-9]*\) exited_unread=\([01]\)$/\1 \2 \3 \4 \5/p' "$TMP/res")
check "stalled stdout, rank 1 SIGKILLed: named within 1 s of its death (${h:-?} s)" \
	awk -v h="${h:-never}" 'BEGIN { exit !(h != "never" && h < 1.0) }'
check "stalled stdout: the other rank stopped within 2 s of the death (${g:-?} s)" \
	awk -v g="${g:-never}" 'BEGIN { exit !(g != "never" && g < 2.0) }'
check "stalled stdout: exit 137 once read (got ${rc:-?})" [ "${rc:-}" = 137 ]
check "stalled stdout: the message names rank 1" has "$TMP/err" '^ddprun: rank 1 \(pid [0-9]+\) killed by signal SIGKILL$'
check "stalled stdout: said once that output is dropped" \
	[ "$(grep -c '^ddprun: stdout is not being read (16 MiB wait for its reader); output to it is dropped and counted until it reads again (the log files keep all of it)$' "$TMP/err")" = 1 ]
check "stalled stdout: the count of dropped lines at the end, once" \
	[ "$(grep -cE '^ddprun: [1-9][0-9]* lines \([0-9]+ bytes\) of output to stdout were dropped because it was not read$' "$TMP/err")" = 1 ]
check "stalled stdout: what waited (16 MiB) arrives once read" [ "${rd:-0}" -ge 16000000 ]
logged=$(cat "$TMP"/logs/latest/rank0.log | wc -c)
check "stalled stdout: rank 0's log file has more than the terminal got ($logged > ${rd:-0} / 2)" [ "$logged" -gt $(( ${rd:-0} / 2 )) ]

python3 "$TMP/stall.py" "$DDPRUN" term "$marker" "$TMP/err" "$TMP/logs" >"$TMP/res" 2>&1
sed 's/^/# /' "$TMP/res"
read -r h g rc rd eu < <(sed -n 's/^handled=\([^ ]*\) gone=\([^ ]*\) rc=\([0-9]*\) read=\([0-9]*\) exited_unread=\([01]\)$/\1 \2 \3 \4 \5/p' "$TMP/res")
check "stalled stdout, SIGTERM to ddprun: acted on within 0.5 s (${h:-?} s)" \
	awk -v h="${h:-never}" 'BEGIN { exit !(h != "never" && h < 0.5) }'
check "stalled stdout, SIGTERM: the ranks gone within 1.5 s (${g:-?} s)" \
	awk -v g="${g:-never}" 'BEGIN { exit !(g != "never" && g < 1.5) }'
check "stalled stdout, SIGTERM: exit 143 (got ${rc:-?})" [ "${rc:-}" = 143 ]
check "stalled stdout, SIGTERM: said once" [ "$(grep -c '^ddprun: got SIGTERM' "$TMP/err")" = 1 ]
# the job is over, its output still waits for the reader: ddprun waits
# (`| less` shows the end once scrolled), but a signal ends that wait
python3 - "$DDPRUN" "$TMP/err" >"$TMP/res" 2>&1 <<'PY'
import os, subprocess, sys, time
ddprun, errpath = sys.argv[1:3]
r, w = os.pipe()
p = subprocess.Popen([ddprun, "-n", "1", "sh", "-c", "yes waiting-line | head -c 20000000"],
                     stdout=w, stderr=open(errpath, "wb"))
os.close(w)
t0 = time.time()
while b"job finished" not in open(errpath, "rb").read() and time.time() - t0 < 30:
    time.sleep(0.02)
time.sleep(0.5)
waiting = p.poll() is None
t1 = time.time()
p.send_signal(15)
rc = p.wait()
print("waiting=%d rc=%d t=%.2f" % (waiting, rc, time.time() - t1))
PY
sed 's/^/# /' "$TMP/res"
check "job over, output unread: ddprun waits for the reader" has "$TMP/res" '^waiting=1 '
check "job over, output unread: SIGTERM ends the wait at once, exit 0 (the job's)" \
	awk '/^waiting=/ { split($2, a, "="); split($3, b, "="); exit !(a[2] == 0 && b[2] < 1.0) }' "$TMP/res"
check "job over, output unread: what was left is counted" \
	has "$TMP/err" '^ddprun: [1-9][0-9]* lines \([0-9]+ bytes\) of output to stdout were dropped because it was not read$'
for p in $(pgrep -f "$marker"); do kill -KILL "$p" 2>/dev/null; done
finish
