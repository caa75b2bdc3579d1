#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/e2e/interpose/edges.sh - libddp.so must not change what a program
# sees, nor let a program's child spoil the rank's files:
#   fork_child_leaves_rank_files   a child forked after init makes driver
#                                  calls and exits through exit(): the trace
#                                  stays valid JSON with the parent's events
#                                  only, the summary is the parent's
#   dlsym_default_sees_local_scope dlsym(RTLD_DEFAULT) from a RTLD_LOCAL
#                                  library finds its dependencies' symbols as
#                                  without libddp; hooked names still hooked
# Skips (exit 77) when the CPU device or the programs are not built.
set -u
B=${BUILD:-build}
LIB=$B/lib/libddp.so
SIM=$B/cpudev/lib/libcuda.so.1
E=$B/tests/e2e/interpose/edges
for f in "$LIB" "$SIM" "$E/drv_fork" "$E/dlsym_scope" "$E/libscope_lib.so"; do
	[ -e "$f" ] || { echo "not built: $f (make all)"; exit 77; }
done
export LD_LIBRARY_PATH=$B/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset DDP_LOG DDP_TRACE DDP_INSPECT RANK WORLD_SIZE
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-ipe.XXXXXX")
trap 'rm -rf "$T"' EXIT
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; shift; for l in "$@"; do echo "# $l"; done; }

# ---- fork: with 64 events per thread buffer, the 80 before the fork leave
# formatted bytes in the trace FILE and events in the thread's buffer, both
# inherited by the child
LD_PRELOAD=$LIB DDP_TRACE="$T/tr" DDP_TRACE_BUFFER=64 "$E/drv_fork" 40 >"$T/f.out" 2>"$T/f.err"
rc=$?
ppid=$(sed -n 's/^parent //p' "$T/f.out")
if [ $rc -eq 0 ] && [ -n "$ppid" ] && [ ! -s "$T/f.err" ] && python3 - "$T/tr/rank0.trace.json" "$T/tr/rank0.summary.json" "$ppid" <<'PY'
import json, sys
tr = json.load(open(sys.argv[1]))            # one valid JSON document
ev = [e for e in tr["traceEvents"] if e.get("name") == "cuMemAlloc_v2"]
assert len(ev) == 80, "trace: %d cuMemAlloc_v2 events, want the parent's 80" % len(ev)
assert all(e["args"]["bytes"] == 256 for e in ev), "a child event (64 bytes) in the trace"
s = json.load(open(sys.argv[2]))
assert s["pid"] == int(sys.argv[3]), "summary pid %s, parent %s" % (s["pid"], sys.argv[3])
calls = {h["name"]: h["calls"] for h in s["hooks"]}
assert calls.get("cuMemAlloc_v2") == 80, calls
PY
then ok fork_child_leaves_rank_files
else bad fork_child_leaves_rank_files "rc=$rc parent=$ppid" "$(tail -3 "$T/f.err")" "$(tail -c 200 "$T/tr/rank0.trace.json" 2>&1)"; fi

# ---- dlsym(RTLD_DEFAULT) in the caller's scope
L=$(cd "$E" && pwd)/libscope_lib.so  # dlopen by path: no LD_LIBRARY_PATH search
"$E/dlsym_scope" "$L" >"$T/d0" 2>&1
LD_PRELOAD=$LIB "$E/dlsym_scope" "$L" >"$T/d1" 2>&1
exp0='scope_value found
cuScopeProbe found
hooked no'
exp1='scope_value found
cuScopeProbe found
hooked yes'
if [ "$(cat "$T/d0")" = "$exp0" ] && [ "$(cat "$T/d1")" = "$exp1" ]; then
	ok dlsym_default_sees_local_scope
else bad dlsym_default_sees_local_scope "without: $(tr '\n' ' ' <"$T/d0")" "with libddp: $(tr '\n' ' ' <"$T/d1")"; fi
exit 0
