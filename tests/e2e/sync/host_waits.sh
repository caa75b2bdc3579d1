#!/bin/bash
# SPDX-License-Identifier: MIT
#
# host_waits.sh - libddp never blocks the program's thread on the device in
# a step that is not a verification step (issue 23).  Every host wait libddp
# issues (cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize through
# the port's table) is counted and traced (runtime/base/ddp_waits.c);
# waits.py places each in its optimizer step:
#   - charlm under ddprun -n 2, DDP_OVERLAP unset (auto: the stream-ordered
#     path), host backend and NCCL stand-in: no wait in steps 4-9, 11, 12;
#     waits at the verification steps (the invariant check's copies: the
#     counter sees them) and the exit summary's line counts them all;
#   - negative control: DDP_OVERLAP=off (the host backend's synchronous
#     reductions wait per chunk) has waits in every plain step;
#   - world size 1: no collective runs (no sync.json, no collective in the
#     trace) and libddp waits on the device not once (the summary's count),
#     with the same parameters as a plain run, bit for bit.
. "$(dirname "$0")/lib.sh"
need charlm
C=$BUILD/data/charlm.rec
S=12
export DDP_BUCKET_MB=0.01

# wrun NAME N: charlm under ddprun -n N with a trace; rank 0's waits
wrun() {
	local name=$1 n=$2
	DDP_TRACE=$TMP/$name.trace DDP_LOG=info ddp "$name" "$n" charlm "$C" --data "$C" --steps $S --batch 4 ||
		not_ok "$name: ddprun exited $?: $(grep -m2 -E 'libddp|ddprun' "$TMP/$name.ddp.err" | tr '\n' ' ')"
	python3 "$HERE/waits.py" "$TMP/$name.trace/rank0.trace.json" 2>&1
}

for be in host nccl; do
	if [ $be = nccl ] && [ ! -e "$BUILD/cpudev/lib/nccl/libnccl.so.2" ]; then
		echo "# skipped: NCCL stand-in not built (nccl.h missing?)"; continue
	fi
	read -r plain verif steps where < <(DDPRUN_BACKEND=$be wrun w_$be 2)
	tot=$(grep -m1 -o 'host waits by libddp: [0-9]*' "$TMP/w_$be.ddp.err" | grep -o '[0-9]*$')
	if [ "$steps" = $S ] && [ "$plain" = 0 ] && [ "${verif:-0}" -gt 0 ] && [ "${tot:-0}" -ge "$verif" ]; then
		ok "$be backend, overlap auto: no host wait in the $((S - 4)) plain steps; $verif at verification steps and exit (summary: $tot)"
	else not_ok "$be backend, overlap auto: $plain host waits in plain steps ($where), $verif elsewhere, $steps steps, summary ${tot:-none}"; fi
done

# negative control: the synchronous host path waits in every step
read -r plain verif steps where < <(DDP_OVERLAP=off wrun w_off 2)
if [ "${plain:-0}" -ge $((S - 4)) ]; then ok "negative control: DDP_OVERLAP=off waits in plain steps ($plain: $where)"
else not_ok "negative control: DDP_OVERLAP=off shows $plain host waits in plain steps ($where): the count is blind"; fi

# world size 1: the tracker does not start (runtime/grad/ddp_sync.c), so
# no collective, no sync.json, and libddp waits on the device not once
ref one charlm --data "$C" --steps $S --batch 4
wrun w1 1 >/dev/null
tot=$(grep -m1 -o 'host waits by libddp: [0-9]*' "$TMP/w1.ddp.err" | grep -o '[0-9]*$')
nc=$(python3 -c 'import json,sys; print(sum(e.get("cat") in ("coll", "comm") for e in json.load(open(sys.argv[1]))["traceEvents"]))' \
	"$TMP/w1.trace/rank0.trace.json" 2>&1)
if [ "$tot" = 0 ] && [ "$nc" = 0 ] && [ ! -e "$TMP/w1.trace/rank0.sync.json" ] && cmp -s "$TMP/w1.0.bin" "$TMP/one.ref.bin"; then
	ok "world size 1: no collective (trace, no sync.json), 0 host waits by libddp (summary), parameters equal a plain run"
else not_ok "world size 1: ${tot:-no} host waits (summary), $nc collectives in the trace, sync.json $(ls "$TMP/w1.trace/rank0.sync.json" 2>&1), params $(cmp "$TMP/w1.0.bin" "$TMP/one.ref.bin" 2>&1 | head -1)"; fi
exit $FAILED
