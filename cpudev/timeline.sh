#!/bin/bash
# SPDX-License-Identifier: MIT
#
# timeline.sh - the CPU device's execution timeline (SIMCUDA_TIMELINE=DIR,
# sim_timeline.c): test_launch's kernels and copies appear, one line each
# as "<stream> <start> <end> <cpu> <what>" with start <= end, under the
# kernels' names; unset, no file is written (the negative control); a
# directory that cannot be written is one line and the program still runs.
set -u
BUILD=${BUILD:-build}
T=$BUILD/cpudev/test_launch
[ -e "$T" ] || { echo "$T is not built (make all)"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-timeline.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }

mkdir "$TMP/on" "$TMP/off"
SIMCUDA_TIMELINE=$TMP/on "$T" >"$TMP/out" 2>/dev/null || not_ok "test_launch failed with SIMCUDA_TIMELINE set"
F=$(ls "$TMP"/on/simcuda.*.timeline 2>/dev/null | head -1)
if [ -n "$F" ] && python3 - "$F" <<'PY'
import sys
kinds = {"copy", "host function", "event record", "event wait", "stream wait", "pool free"}
kernels, copies = set(), 0
for line in open(sys.argv[1]):
    stream, t0, t1, cpu, what = line.rstrip("\n").split(" ", 4)
    assert int(stream) >= 0 and float(t0) <= float(t1) and float(cpu) >= 0, line
    if what == "copy":
        copies += 1
    elif what not in kinds:
        kernels.add(what)
assert copies > 0 and len(kernels) >= 3, (copies, kernels)
PY
then ok "timeline: kernels under their names and copies, start <= end, CPU time >= 0"
else not_ok "timeline: missing or malformed ($F)"; fi

TA=$(realpath "$T")
(cd "$TMP/off" && env -u SIMCUDA_TIMELINE "$TA" >/dev/null 2>&1)
if [ -z "$(ls "$TMP/off")" ]; then ok "unset: no timeline written (not even in the working directory)"
else not_ok "unset: a timeline was written"; fi

SIMCUDA_TIMELINE=$TMP/missing/dir "$T" >"$TMP/out2" 2>"$TMP/err2"
rc=$?
n=$(grep -c "SIMCUDA_TIMELINE: cannot write" "$TMP/err2")
if [ "$rc" = 0 ] && [ "$n" = 1 ]; then ok "an unwritable directory: one line, the program runs"
else not_ok "unwritable directory: rc $rc, $n lines"; fi
exit $FAILED
