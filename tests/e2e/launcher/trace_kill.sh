#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# trace_kill.sh - traces survive the failures they are needed for (issue 14,
# 6): a real trainer (samples/mlp on the CPU device, with libddp) runs under
# `ddprun -n 2 --trace DIR`;
#   - rank 1 is SIGKILLed mid-run: both ranks' traces load (python3 json),
#     rank 1's reaches to within 2 s of its death, and `ddprun report DIR`
#     works and says rank 1's trace was cut;
#   - ddprun gets Ctrl-C (SIGINT): the same;
#   - a trace cut in the middle of an event (disk full, a copy stopped
#     early): the report keeps its whole events and says where it was cut;
#   - negative control: a job that ends normally has complete traces and the
#     report calls nothing cut; there the report shows the sync numbers per
#     step, cuts long kernel names from the right, names threads, and the
#     trace's module events carry demangled names (issue 14, 8).
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
export DDPRUN_GRACE=0.5
MLP=$build_dir/samples/mlp DATA=$build_dir/data/mlp.rec
for f in "$build_dir/lib/libddp.so" "$build_dir/cpudev/lib/libcuda.so.1" "$MLP" "$DATA"; do
	[ -e "$f" ] || { echo "$f is not built (make all): the trainer runs need it"; exit 77; }
done
out=$TMP/out err=$TMP/err
mono() { python3 -c 'import time; print(time.monotonic())'; }

# loads DIR/rankK.trace.json; prints "EVENTS LAST_END_S COMPLETE"
load() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
end = max((e["ts"] + e.get("dur", 0)) for e in ev) / 1e6 if ev else 0
print(len(ev), end, (d.get("otherData") or {}).get("ddprun") == "complete")
PY
}

# rank_pid DDPRUN_PID K: the pid of local rank K
rank_pid() {
	local p
	for p in $(ps -o pid= --ppid "$1"); do
		tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx "RANK=$2" && { echo $p; return; }
	done
}

for how in SIGKILL SIGINT; do
	dir=$TMP/tr-$how
	: >"$out"
	"$DDPRUN" -n 2 --trace "$dir" "$MLP" --data "$DATA" --steps 1000000 --batch 8 >"$out" 2>"$err" &
	pid=$!
	if ! wait_for "$out" '^\[rank 1\] step [0-9]+' 1 30; then
		notok "$how: the job never trained"; kill -KILL $pid; continue
	fi
	sleep 2.5 # past the first flushes
	if [ $how = SIGKILL ]; then
		r1=$(rank_pid $pid 1)
		t_kill=$(mono)
		kill -KILL "$r1"
	else
		t_kill=$(mono)
		kill -INT $pid
	fi
	wait $pid
	rc=$?
	check "$how: the job stopped (exit $rc)" [ $rc != 0 ]
	for k in 0 1; do
		if res=$(load "$dir/rank$k.trace.json" 2>&1); then
			set -- $res
			ok "$how: rank $k's trace loads ($1 events, complete: $3)"
			check "$how: rank $k's trace reaches its last second (last event ends $(python3 -c "print(round($t_kill - $2, 2))") s before the kill)" \
				python3 -c "import sys; sys.exit(not (0 < $1 and $t_kill - $2 < 2.0))"
		else
			notok "$how: rank $k's trace loads"; echo "$res" | tail -n 2 | sed 's/^/# /'
		fi
	done
	if "$DDPRUN" report "$dir" >"$TMP/rep" 2>"$TMP/rep.err"; then
		ok "$how: ddprun report works"
	else
		notok "$how: ddprun report works"; sed 's/^/# /' "$TMP/rep.err"
	fi
	check "$how: the report says rank 1's trace was cut" has "$TMP/rep" "^  rank 1's trace was cut: the rank stopped before closing it"
	check "$how: the combined timeline loads" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/combined.trace.json"
done

# a trace cut in the middle of an event
dir=$TMP/tr-SIGKILL cutdir=$TMP/cut
mkdir -p "$cutdir"
head -c 200000 "$dir/rank1.trace.json" >"$cutdir/rank1.trace.json"
"$DDPRUN" report "$cutdir" >"$TMP/rep" 2>"$TMP/rep.err"
check "cut mid-event: report works (exit $?)" [ $? = 0 ]
check "cut mid-event: the report says where" has "$TMP/rep" "^  rank 1's trace was cut: it ends in the middle of an event .*from byte [0-9]+"
check "cut mid-event: the timeline keeps the whole events" \
	python3 -c "import json,sys; sys.exit(len(json.load(open(sys.argv[1]))['traceEvents']) < 100)" "$cutdir/combined.trace.json"

# negative control: a job that ends normally
dir=$TMP/tr-ok
"$DDPRUN" -n 2 --trace "$dir" "$MLP" --data "$DATA" --steps 5 --batch 8 >"$out" 2>"$err"
check "normal end: exit 0" [ $? = 0 ]
res=$(load "$dir/rank1.trace.json") && set -- $res
check "normal end: rank 1's trace is marked complete" [ "${3:-}" = True ]
"$DDPRUN" report "$dir" >"$TMP/rep" 2>&1
check "normal end: the report calls nothing cut" hasnt "$TMP/rep" "was cut|no summary"
check "normal end: the report shows the sync numbers per step" has "$TMP/rep" "^per step: bytes reduced"
check "normal end: long kernel names are cut from the right (the function name kept)" \
	has "$TMP/rep" "^sgd_momentum_update\(float\*, float const\*,\.\.\. +[0-9]+ +[0-9]+$"
check "normal end: the report names each rank's threads" has "$TMP/rep" "^rank 1: .*mlp \(tid [0-9]+, [0-9]+ events\)"
check "normal end: each rank's communication row has its collectives (docs/overlap.md)" \
	has "$TMP/rep" "^rank 1: communication \(tid 900001, [1-9][0-9]* events\)"
check "normal end: module events carry demangled names" python3 - "$dir/rank0.trace.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "module"]
names = [e["name"] for e in ev] + [e["args"].get("kernel", "") for e in ev]
sys.exit(not ev or any(n.startswith("_Z") for n in names) or
         "sgd_momentum_update(float*, float const*, float*, float, float, int)" not in names)
PY
finish
