#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# report_check.py TRACEDIR REPORT.json - checks `ddprun report --json`'s run
# section against the ranks' own files, computed here independently:
# step events of rank<k>.trace.json (cat "step", args.step, dur in us) ->
# steps, median and p90 step time (nearest rank) over steps 3+, steps/s,
# skew (a rank's step end after the earliest rank's end of the same step);
# rank<k>.sync.json per_step -> exposed communication (comm - hidden),
# hash_checks, check_ms and final_check.  Prints "ok"/"not ok" lines; exit 1
# on any difference.
import json, math, os, sys

tdir, rpath = sys.argv[1], sys.argv[2]
rep = json.load(open(rpath))["run"]
bad = 0


def near(a, b, what):
    global bad
    if a is None or b is None:
        good = a is None and b is None
    else:
        good = abs(a - b) <= 1e-6 * max(1.0, abs(b))
    print(("ok - " if good else "not ok - ") + "%s: report %s, trace %s" % (what, a, b))
    bad |= not good


def quantile(v, q):
    v = sorted(v)
    if not v:
        return None
    k = math.ceil(q * len(v))
    return v[k - 1 if k else 0]


def steps_of(k):
    t = json.load(open(os.path.join(tdir, "rank%d.trace.json" % k)))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    return {e["args"]["step"]: (e["ts"], e["dur"]) for e in ev if e.get("cat") == "step"}


ranks = [r["rank"] for r in rep["ranks"]]
steps = {k: steps_of(k) for k in ranks}
first = 3 if all(max(s) >= 3 for s in steps.values() if s) else 1
near(rep["first_step"], first, "first step of the figures")
for r in rep["ranks"]:
    k = r["rank"]
    st = steps[k]
    used = [s for s in sorted(st) if s >= first]
    durs = [st[s][1] / 1e3 for s in used]
    near(r["steps"], len(st), "rank %d steps" % k)
    near(r["steps_in_figures"], len(used), "rank %d steps in the figures" % k)
    near(r["step_ms_median"], quantile(durs, 0.5), "rank %d median step time" % k)
    near(r["step_ms_p90"], quantile(durs, 0.9), "rank %d p90 step time" % k)
    near(r["steps_per_s"], len(durs) / (sum(durs) / 1e3), "rank %d steps/s" % k)
    skews = []
    for s in used:
        ends = [steps[q][s][0] + steps[q][s][1] for q in ranks if s in steps[q]]
        if len(ends) == len(ranks) and len(ranks) > 1:
            skews.append((st[s][0] + st[s][1] - min(ends)) / 1e3)
    near(r["skew_ms_median"], quantile(skews, 0.5), "rank %d median skew" % k)
    near(r["skew_ms_max"], max(skews) if skews else None, "rank %d max skew" % k)
    sy = json.load(open(os.path.join(tdir, "rank%d.sync.json" % k)))
    ex = [p["comm_ms"] - p["comm_hidden_ms"] for p in sy["per_step"] if p["step"] >= first]
    near(r["exposed_comm_ms_median"], quantile(ex, 0.5), "rank %d exposed communication" % k)
    near(r["checks"], sy["hash_checks"], "rank %d compares" % k)
    near(r["check_ms"], sy["check_ms"], "rank %d time in checks" % k)
    good = r["final_check"] == sy["final_check"]
    print(("ok - " if good else "not ok - ") + "rank %d final compare %s" % (k, r["final_check"]))
    bad |= not good
    per = {p["step"]: p["ms"] for p in r["per_step"]}
    near(len(per), len(st), "rank %d per-step entries" % k)
    for s in st:
        near(per.get(s), st[s][1] / 1e3, "rank %d step %d time" % (k, s))
sys.exit(1 if bad else 0)
