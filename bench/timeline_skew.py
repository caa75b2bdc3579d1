#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""timeline_skew.py - how far apart the ranks' devices ran, from the CPU
device's execution timelines (SIMCUDA_TIMELINE=DIR, cpudev/sim_timeline.c).

    SIMCUDA_TIMELINE=/tmp/tl ddprun -n 2 --trace /tmp/tr ... ./trainer
    bench/timeline_skew.py /tmp/tl STEP_KERNEL [/tmp/tr ...]

Every rank runs the same kernels in the same order; a step starts at each
launch of STEP_KERNEL (a kernel launched once per step, e.g.
encoder_forward_kernel for samples/gpt).  Per step and rank: the kernels'
CPU time (what the work cost the worker thread) and wall time (CPU time
plus time waiting for a core); then the mean and largest difference of the
ranks' CPU times.  Equal work at equal speed gives equal CPU times: a
difference is the machine running one rank slower (another tenant, a
shared core), which the collectives then show as one rank waiting.

With the runs' trace directories (`timeline_skew.py TL1 STEP_KERNEL TR1
[TL2 TR2 ...]`: each run's timeline and --trace directory), the steps 3+
of all runs are binned by that spread, and each bin gets the share of the
communication hidden behind backward (comm_hidden_ms / comm_ms of every
rank's rank<k>.sync.json, summed): what overlap achieves when the ranks
run at equal speed, apart from the machine's skew.
"""
import json
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


def rank_steps(tdir, step_kernel):
    files = sorted(glob.glob(os.path.join(tdir, "simcuda.*.timeline")), key=lambda p: int(p.split(".")[-2]))
    if len(files) < 2:
        sys.exit("timeline_skew.py: fewer than 2 timelines in %s (run with SIMCUDA_TIMELINE=DIR)" % tdir)
    ranks = []
    for f in files:
        items = load(f)
        names = {w for _, _, _, _, w in items}
        # a mangled name matches too: the timeline has the symbol
        match = [n for n in names if n == step_kernel or step_kernel in n]
        if len(match) != 1:
            sys.exit("timeline_skew.py: %d kernels in %s match %r" % (len(match), f, step_kernel))
        ranks.append(steps(items, match[0]))
    return ranks


def binned(pairs, step_kernel):
    rows = []
    for tdir, trace in pairs:
        ranks = rank_steps(tdir, step_kernel)
        per = []
        for f in sorted(glob.glob(os.path.join(trace, "rank*.sync.json"))):
            per.append({s["step"]: s for s in json.load(open(f))["per_step"]})
        if not per:
            sys.exit("timeline_skew.py: no rank<k>.sync.json in %s (run with --trace DIR)" % trace)
        n = min(len(r) for r in ranks)
        for st in range(3, n + 1):
            if not all(st in p for p in per):
                continue
            cpus = [r[st - 1][0] * 1e3 for r in ranks]
            rows.append((max(cpus) - min(cpus), sum(p[st]["comm_ms"] for p in per),
                         sum(p[st]["comm_hidden_ms"] for p in per)))
    if not rows:
        sys.exit("timeline_skew.py: no step 3+ in both the timelines and the sync files")
    print("%d steps 3+ of %d run(s): hidden %.0f%% of the communication" %
          (len(rows), len(pairs), 100 * sum(r[2] for r in rows) / max(1e-9, sum(r[1] for r in rows))))
    for lo, hi in ((0, 5), (5, 10), (10, 20), (20, float("inf"))):
        sel = [r for r in rows if lo <= r[0] < hi]
        if sel:
            print("  ranks' cpu spread %s ms: %3d steps, hidden %.0f%%" %
                  ("%d-%d" % (lo, hi) if hi != float("inf") else ">= %d" % lo, len(sel),
                   100 * sum(r[2] for r in sel) / max(1e-9, sum(r[1] for r in sel))))


def main():
    if len(sys.argv) < 3 or (len(sys.argv) > 3 and len(sys.argv) % 2):
        sys.exit("usage: timeline_skew.py TIMELINE_DIR STEP_KERNEL [TRACE_DIR [TIMELINE_DIR TRACE_DIR]...]")
    if len(sys.argv) > 3:
        extra = sys.argv[3:]
        pairs = [(sys.argv[1], extra[0])] + [(extra[i], extra[i + 1]) for i in range(1, len(extra) - 1, 2)]
        return binned(pairs, sys.argv[2])
    ranks = rank_steps(sys.argv[1], sys.argv[2])
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
