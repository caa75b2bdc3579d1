#!/bin/bash
# SPDX-License-Identifier: MIT
#
# nccl_failures.sh - a rank that stops inside an NCCL collective, on the CPU
# device's NCCL stand-in, with DDP_OVERLAP unset (auto: on with NCCL, as
# users get it; the host threads never wait
# for a reduction: only the watchdog thread of runtime/coll/ddp_coll_async.c
# can notice):
#   - frozen (SIMNCCL_FAULT=stop:1:N: rank 1 raises SIGSTOP inside its N-th
#     collective, after its data went out; alive, so ddprun sees nothing):
#     rank 0's watchdog aborts NCCL after DDP_COLL_TIMEOUT=3 s without
#     progress and 2 s for the other ranks to answer through the store
#     (those whose own watch gives up answer; a stopped one cannot), one
#     line from the watchdog naming rank 1 (the rank's stop line then quotes
#     it with the step and the bucket), and the job stops non-zero well
#     before `timeout`;
#   - killed, on another "node" (two ddprun processes, --nnodes 2, so no
#     ddprun stops rank 0 when rank 1 dies; SIMNCCL_FAULT=kill:1:N): NCCL's
#     asynchronous error (ncclCommGetAsyncError: remote process exited),
#     seen by rank 0's watchdog (or its next enqueue), names rank 1, one
#     line, at once (node 0's
#     exit then takes up to DDP_COLL_TIMEOUT=8 s: rank 0 holds the store
#     until every rank left, and rank 1 never says so).
# Each must stop the job with a non-zero status -- never hang, never finish.
. "$(dirname "$0")/lib.sh"
need charlm
NL=$BUILD/cpudev/lib/nccl/libnccl.so.2
[ -e "$NL" ] || { echo "$NL is not built (nccl.h missing?)"; exit 77; }
unset DDP_NCCL_LIB
C=$BUILD/data/charlm.rec
unset DDP_OVERLAP
export DDP_BUCKET_MB=0.01 DDPRUN_BACKEND=nccl

# frozen rank: the watchdog's timeout
start=$(date +%s.%N)
SIMNCCL_FAULT=stop:1:50 DDP_COLL_TIMEOUT=3 timeout 60 "$DDPRUN" -n 2 --shard "$C" -- \
	"$BUILD/samples/charlm" --data "$C" --steps 30 --batch 4 >"$TMP/stop.out" 2>"$TMP/stop.err"
rc=$?
t=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
# the line names the rank that stopped answering (rank 1), never rank 0
n=$(grep -c '^\[rank 0\] libddp ERROR ddp_coll_async.c:[0-9]* async allreduce #[0-9]* made no progress for 3 s on rank 0: rank 1 stopped answering (stopped, dead, or never issued it); NCCL aborted' "$TMP/stop.err")
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" = 1 ] && grep -q 'fault injected: rank 1 raises signal 19' "$TMP/stop.err"; then
	ok "a rank frozen inside a collective: rank 0's watchdog stops the job in $t s (rc $rc): $(grep -m1 -o 'async allreduce #.*made no progress.*' "$TMP/stop.err" | cut -c1-110)"
else not_ok "frozen rank: rc $rc after $t s, $n watchdog line(s): $(grep -m2 -E 'libddp|ddprun:' "$TMP/stop.err" | tr '\n' ' ')"; fi

# killed rank on another node: NCCL's asynchronous error
export DDPRUN_SECRET=0123456789abcdef0123456789abcdef
for attempt in 1 2 3; do
	port=$((20000 + (RANDOM * 7 + $$) % 40000))
	common="--nnodes 2 --master-addr 127.0.0.1 --master-port $port -n 1"
	start=$(date +%s.%N)
	SIMNCCL_FAULT=kill:1:50 DDP_COLL_TIMEOUT=8 timeout 60 "$DDPRUN" $common --node-rank 0 -- \
		"$BUILD/samples/charlm" --data "$C" --steps 30 --batch 4 >"$TMP/n0.out" 2>"$TMP/n0.err" &
	p0=$!
	SIMNCCL_FAULT=kill:1:50 DDP_COLL_TIMEOUT=8 timeout 60 "$DDPRUN" $common --node-rank 1 -- \
		"$BUILD/samples/charlm" --data "$C" --steps 30 --batch 4 >"$TMP/n1.out" 2>"$TMP/n1.err" &
	p1=$!
	wait $p0; r0=$?
	t=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
	wait $p1; r1=$?
	grep -q 'cannot start the rendezvous store' "$TMP/n0.err" || break
done
# (whichever thread meets the error first reports it: the watchdog, or the
# next enqueue, to which the stand-in returns the communicator's error)
line=$(grep -m1 -o 'async allreduce #[0-9]* .*failed on rank 0: remote process exited or there was a network error: rank 1 (pid [0-9]*) exited during allreduce #50.*' "$TMP/n0.err")
n=$(grep -c '^\[rank 0\] libddp ERROR ddp_coll[a-z_]*.c:[0-9]* \(grouped \)\?async allreduce #[0-9]* .*failed on rank 0' "$TMP/n0.err")
if [ $r0 -ne 0 ] && [ $r0 -ne 124 ] && [ -n "$line" ] && [ "$n" = 1 ] && [ "$(echo "$t < 20" | bc)" = 1 ] &&
	grep -q 'rank 1 (pid [0-9]*) killed by signal SIGKILL' "$TMP/n1.err"; then
	ok "a rank killed inside a collective (other node): NCCL's async error stops rank 0 in $t s (rc $r0, $r1): ${line:0:150}"
else not_ok "killed rank: node 0 rc $r0 after $t s, node 1 rc $r1, $n line(s): $(grep -m2 -E 'libddp|ddprun:' "$TMP/n0.err" | tr '\n' ' ')"; fi
exit $FAILED
