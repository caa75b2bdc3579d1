#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# waits.py TRACE.json: libddp's host waits (trace events of cat "wait",
# runtime/base/ddp_waits.c) by the optimizer step they fell in (the
# "optimizer step" events span the steps).  Prints
#   "<waits in plain steps> <waits in verification steps> <steps> <plain steps with waits>"
# Verification steps: 1, 2, 3 and the powers of ten (the invariant check),
# plus every DDP_CHECK-th when given as argv[2].  Waits before step 1's end
# count as step 1's, those after the last step (exit) as verification.
import json, sys
evs = json.load(open(sys.argv[1]))["traceEvents"]
every = int(sys.argv[2]) if len(sys.argv) > 2 else 0
steps = sorted((e["ts"], e["ts"] + e["dur"], e["args"]["step"]) for e in evs
               if e.get("cat") == "step" and e.get("name") == "optimizer step")
def verif(s):
    if s <= 3 or (every and s % every == 0):
        return True
    while s % 10 == 0:
        s //= 10
    return s == 1
plain = verif_n = 0
bad = {}
for e in evs:
    if e.get("cat") != "wait":
        continue
    t = e["ts"]
    st = next((s for lo, hi, s in steps if t <= hi), None)
    if st is None or verif(st):
        verif_n += 1
    else:
        plain += 1
        bad[st] = bad.get(st, 0) + 1
print(plain, verif_n, len(steps), ",".join("%d:%d" % kv for kv in sorted(bad.items())) or "-")
