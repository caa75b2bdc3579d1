#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""timeline_skew.py - how far apart the ranks' devices ran, from the CPU
device's execution timelines (SIMCUDA_TIMELINE=DIR, tests/simcuda/sim_timeline.c).

    SIMCUDA_TIMELINE=/tmp/tl ddprun -n 2 ... ./trainer
    bench/timeline_skew.py /tmp/tl STEP_KERNEL

Every rank runs the same kernels in the same order; a step starts at each
launch of STEP_KERNEL (a kernel launched once per step, e.g.
encoder_forward_kernel for samples/gpt).  Per step and rank: the kernels'
CPU time (what the work cost the worker thread) and wall time (CPU time
plus time waiting for a core); then the mean and largest difference of the
ranks' CPU times.  Equal work at equal speed gives equal CPU times: a
difference is the machine running one rank slower (another tenant, a
shared core), which the collectives then show as one rank waiting.
"""
import glob
import os
import sys


def load(path):
    items = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 4)
            if len(parts) == 5:
                items.append((int(parts[0]), float(parts[1]), float(parts[2]), float(parts[3]), parts[4]))
    return items


def steps(items, step_kernel):
    """[(cpu, wall)] per step: kernels from one STEP_KERNEL launch to the next."""
    out, cur = [], None
    for stream, t0, t1, cpu, what in items:
        if what == step_kernel:
            if cur:
                out.append(tuple(cur))
            cur = [0.0, 0.0]
        if cur is not None and what not in ("copy", "host function", "event record", "event wait",
                                            "stream wait", "pool free"):
            cur[0] += cpu
            cur[1] += t1 - t0
    if cur:
        out.append(tuple(cur))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: timeline_skew.py DIR STEP_KERNEL")
    files = sorted(glob.glob(os.path.join(sys.argv[1], "simcuda.*.timeline")),
                   key=lambda p: int(p.split(".")[-2]))
    if len(files) < 2:
        sys.exit("timeline_skew.py: fewer than 2 timelines in %s (run with SIMCUDA_TIMELINE=DIR)" % sys.argv[1])
    # a mangled name matches too: the timeline has the symbol
    ranks = []
    for f in files:
        items = load(f)
        names = {w for _, _, _, _, w in items}
        match = [n for n in names if n == sys.argv[2] or sys.argv[2] in n]
        if len(match) != 1:
            sys.exit("timeline_skew.py: %d kernels in %s match %r" % (len(match), f, sys.argv[2]))
        ranks.append(steps(items, match[0]))
    n = min(len(r) for r in ranks)
    print("step  " + "  ".join("rank%d cpu/wall ms" % i for i in range(len(ranks))) + "  cpu spread ms")
    spreads = []
    for s in range(n):
        cpus = [r[s][0] * 1e3 for r in ranks]
        spread = max(cpus) - min(cpus)
        spreads.append(spread)
        print("%4d  " % (s + 1) + "  ".join("%8.1f/%-8.1f" % (r[s][0] * 1e3, r[s][1] * 1e3) for r in ranks) +
              "  %6.1f" % spread)
    later = spreads[2:] or spreads
    print("steps 3+: mean cpu spread %.1f ms, largest %.1f ms, mean step cpu %.1f ms" %
          (sum(later) / len(later), max(later),
           sum(r[s][0] for r in ranks for s in range(2, n)) * 1e3 / max(1, len(ranks) * (n - 2))))


if __name__ == "__main__":
    main()
