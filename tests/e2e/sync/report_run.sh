#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# report_run.sh - `ddprun report`'s run sections (launcher/report_run.c) on a
# real traced job (mlp -n 2, 12 steps): step time (median, p90), steps/s,
# skew between ranks, exposed communication per step, the checks' count,
# time and verdict, checked number for number by report_check.py against
# the ranks' own trace step events and sync.json; the text report shows
# them in human units and says the verdict; --html writes a self-contained
# page (no http(s) reference) that headless chromium renders with one point
# per step per rank (skipped with a reason without chromium).  Control: a
# job whose final compare fails (DDP_DEBUG_PERTURB_RANK=1) gets the verdict
# FAILED, and a doctored step duration fails report_check.py.
. "$(dirname "$0")/lib.sh"
need mlp
D=$TMP/tr
run() {
	rm -rf "$D"
	timeout 120 "$DDPRUN" -n 2 --trace "$D" "$BUILD/samples/mlp" --data "$BUILD/data/mlp.rec" --steps 12 \
		>"$TMP/job.out" 2>"$TMP/job.err"
}
run
[ $? = 0 ] && ok "traced job: exit 0" || not_ok "traced job: exit $? ($(tail -1 "$TMP/job.err"))"
"$DDPRUN" report --json "$D" >"$TMP/r.json" 2>"$TMP/r.err"
[ $? = 0 ] && ok "report --json: exit 0" || not_ok "report --json: $(tail -1 "$TMP/r.err")"
python3 "$HERE/report_check.py" "$D" "$TMP/r.json" >"$TMP/check.out"
[ $? = 0 ] && ok "report --json equals the traces' own numbers ($(grep -c '^ok' "$TMP/check.out") checks)" ||
	not_ok "report --json differs from the traces: $(grep '^not ok' "$TMP/check.out" | head -3)"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["run"]["verdict_ok"] and set(r["tables"])=={"calls","kernels","memory","sync"} else 1)' "$TMP/r.json" &&
	ok "report --json: verdict passed, the four tables" || not_ok "report --json: verdict or tables wrong"
"$DDPRUN" report --html "$TMP/page.html" "$D" >"$TMP/r.txt" 2>&1
grep -Eq '^step time, median +[0-9.]+ (us|ms|s) +[0-9.]+ (us|ms|s)$' "$TMP/r.txt" &&
	grep -q '^steps/s ' "$TMP/r.txt" && grep -q '^skew: step ends after the first rank, median' "$TMP/r.txt" &&
	grep -q '^exposed communication per step, median' "$TMP/r.txt" && grep -Eq '^allreduce [0-9.]+ [KMG]?i?B-' "$TMP/r.txt" &&
	grep -q '^verdict: passed: ' "$TMP/r.txt" &&
	ok "text report: step time in units, steps/s, skew, exposed comm, bandwidth, verdict" ||
	not_ok "text report lacks a run row: $(grep -A12 '^Steps' "$TMP/r.txt" | head -12)"
# the page: self-contained, and rendered by a browser
if grep -Eq '(src|href)=|https?://[a-z]' <(sed 's#http://www.w3.org/2000/svg##' "$TMP/page.html"); then
	not_ok "page refers to something outside itself"
else
	ok "page is self-contained"
fi
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$BROWSER" ]; then
	timeout 60 "$BROWSER" --headless=new --no-sandbox --disable-gpu --dump-dom "file://$TMP/page.html" \
		>"$TMP/dom.html" 2>/dev/null
	python3 - "$D" "$TMP/dom.html" <<'PY'
import json, re, sys
d, dom = sys.argv[1], open(sys.argv[2]).read()
want = {}
for k in (0, 1):
    t = json.load(open("%s/rank%d.trace.json" % (d, k)))
    for e in (t["traceEvents"] if isinstance(t, dict) else t):
        if e.get("cat") == "step":
            want[(k, e["args"]["step"])] = e["dur"] / 1e3
step_svg = re.search(r'<svg id="chart-step".*?</svg>', dom, re.S)
pts = re.findall(r'<circle class="pt"[^>]*data-rank="(\d+)" data-step="(\d+)" data-v="([^"]+)"', step_svg.group(0) if step_svg else "")
got = {(int(a), int(b)): float(v) for a, b, v in pts}
ok = 'data-rendered="1"' in dom and len(pts) == len(want) and all(abs(got.get(k, -1) - v) < 1e-9 * max(1, v) for k, v in want.items())
print("%s - page rendered in headless chromium: %d step points for %d trace step events" % ("ok" if ok else "not ok", len(pts), len(want)))
sys.exit(0 if ok else 1)
PY
	[ $? = 0 ] || FAILED=1
else
	echo "skip - page not rendered: chromium is not installed (apt-get install chromium)"
fi
# controls: a doctored step fails the independent check; a failed final
# compare is the verdict
python3 - "$D/rank1.trace.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); ev = t["traceEvents"] if isinstance(t, dict) else t
for e in ev:
    if e.get("cat") == "step" and e["args"]["step"] == 5:
        e["dur"] *= 1.5
json.dump(t, open(sys.argv[1], "w"))
PY
python3 "$HERE/report_check.py" "$D" "$TMP/r.json" >/dev/null &&
	not_ok "control: a doctored step time passed the check" || ok "control: a doctored step time fails the check"
rm -rf "$D"
DDP_DEBUG_PERTURB_RANK=1 timeout 120 "$DDPRUN" -n 2 --trace "$D" "$BUILD/samples/mlp" --data "$BUILD/data/mlp.rec" \
	--steps 12 >/dev/null 2>&1
# (a rank killed while writing its sync.json leaves it cut: the report then
# stops naming the file, which says as much)
"$DDPRUN" report "$D" >"$TMP/div.out" 2>&1
if grep -q '^verdict: FAILED' "$TMP/div.out" || grep -q 'sync\.json is not valid JSON .*was the run cut short' "$TMP/div.out"; then
	ok "control: a diverged job's verdict is FAILED (or its cut file is named)"
else
	not_ok "control: diverged job: $(grep -m1 'verdict\|ddprun' "$TMP/div.out")"
fi
exit $FAILED
