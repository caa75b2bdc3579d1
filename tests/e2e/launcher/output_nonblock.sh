#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# output_nonblock.sh - ddprun's stdout and stderr may be non-blocking (an
# O_NONBLOCK set on a shared pipe by whoever started it; Node, some CI
# runners).  When the reader is slow the pipe fills and write(2) says EAGAIN:
# ddprun must wait for room, not drop the rest of the job's output
# (launcher/output.c write_all).
. "$(dirname "$0")/lib.sh"

N=20000
LEN=100
python3 - "$DDPRUN" "$PROG" $N $LEN >"$TMP/py" 2>&1 <<'PY'
import fcntl, os, subprocess, sys, time
ddprun, prog, n, ln = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
r, w = os.pipe()
er, ew = os.pipe()
for fd in (w, ew):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
p = subprocess.Popen([ddprun, "-n", "2", prog, "spam", str(n), str(ln)], stdout=w, stderr=ew)
os.close(w)
os.close(ew)
time.sleep(1.0)  # a slow reader: the 64 KiB pipe fills long before this
out = bytearray()
while True:
    b = os.read(r, 1 << 16)
    if not b:
        break
    out += b
err = bytearray()
while True:
    b = os.read(er, 1 << 16)
    if not b:
        break
    err += b
rc = p.wait()
lines = out.decode(errors="replace").split("\n")
counts = [sum(1 for l in lines if l.startswith("[rank %d] %d " % (k, k)) and len(l) == 9 + ln)
          for k in (0, 1)]
tails = sum(1 for l in lines if l.endswith("tail-without-newline"))
print("rc=%d counts=%d,%d tails=%d errlines=%d" % (rc, counts[0], counts[1], tails,
      err.count(b"stderr line")))
PY
cat "$TMP/py" | sed 's/^/# /'
check "non-blocking stdout: the job exits 0" has "$TMP/py" '^rc=0 '
check "non-blocking stdout, slow reader: all $N lines of each rank arrive whole" \
	has "$TMP/py" " counts=$N,$N tails=2 "
check "non-blocking stderr: the stderr lines arrive" has "$TMP/py" ' errlines=6$'
finish
