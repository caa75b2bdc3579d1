#!/bin/bash
# SPDX-License-Identifier: MIT
#
# failures.sh - the error paths of ranks started without ddprun: a missing or
# short DDP_STORE_SECRET (every rank stops at once, non-zero, with one line
# saying how to make one), rank 0's port taken (one line naming
# DDP_STORE_PORT), ranks on several nodes without MASTER_ADDR, mpirun
# without a port, DDP_SYNC=off (no secret, no store: the ranks train
# alone), and the store's life at exit: rank 0 waits for a rank that starts
# late, and gives up after DDP_COLL_TIMEOUT for one that never comes.
. "$(dirname "$0")/lib.sh"
need
TR_PORT=$(free_port pair)
hold_port "$TR_PORT" || { not_ok "failures: cannot play torchrun's store"; exit 1; }

# stopped WHAT NAME N PATTERN: every rank exited non-zero within 10 s, and
# each one's stderr has PATTERN (grep -E)
stopped() {
	local what=$1 name=$2 n=$3 pat=$4 r bad=""
	for r in $(seq 0 $((n - 1))); do
		[ "${RCS[$r]}" -ne 0 ] && [ "${RCS[$r]}" -ne 124 ] || bad="$bad rank $r exited ${RCS[$r]};"
		grep -qE "$pat" "$TMP/$name.$r.err" || bad="$bad rank $r said: $(grep -m 1 'ERROR' "$TMP/$name.$r.err");"
	done
	if awk -v s="$SECS" 'BEGIN { exit !(s > 10) }'; then bad="$bad took $SECS s;"; fi
	if [ -z "$bad" ]; then ok "$what: every rank stops non-zero within $SECS s with the message"
	else not_ok "$what:$bad"; fi
}

# no secret: torchrun (DDP_SYNC=auto) and srun (DDP_SYNC=on)
run_ranks nosec torchrun 2 DDP_STORE_SECRET= DDP_LOG=info -- --steps 20 --batch 8
stopped "torchrun without DDP_STORE_SECRET" nosec 2 \
	'libddp: rank [01]: DDP_STORE_SECRET is not set; .*export DDP_STORE_SECRET=\$\(head -c 16 /dev/urandom'
slurm_job_for_free_port
run_ranks nosec_sl slurm 3 DDP_SYNC=on DDP_STORE_SECRET= DDP_LOG=info -- --steps 20 --batch 8
stopped "srun without DDP_STORE_SECRET" nosec_sl 3 'DDP_STORE_SECRET is not set'
if grep -q "store: listening" "$TMP"/nosec*.0.err; then not_ok "no secret: rank 0 still started a store"
else ok "no secret: no store was started"; fi
run_ranks short torchrun 2 DDP_STORE_SECRET=abc -- --steps 20 --batch 8
stopped "torchrun with a 3-character secret" short 2 'DDP_STORE_SECRET is too short'

# a rank with another secret: it stops at once naming DDP_STORE_SECRET; rank
# 0's store logs the refusal, without either secret (rank 0 runs 0 steps and
# waits DDP_COLL_TIMEOUT=3 s at exit for the rank that never joined)
RANK_PIDS=(); RCS=()
start_rank wrong torchrun 0 2 DDP_COLL_TIMEOUT=3 -- --steps 0 --batch 8
START_DELAY=0.5 start_rank wrong torchrun 1 2 DDP_STORE_SECRET=ffffffffffffffffffffffffffffffff -- --steps 0 --batch 8
for p in "${RANK_PIDS[@]}"; do wait "$p"; RCS+=($?); done
if [ "${RCS[1]}" -ne 0 ] && [ "${RCS[1]}" -ne 124 ] && [ "${RCS[0]}" -eq 0 ] &&
   grep -q "rank 1 cannot connect to the store that rank 0 hosts at 127.0.0.1:$((TR_PORT + 1)) .*every rank needs the same DDP_STORE_SECRET" "$TMP/wrong.1.err" &&
   grep -q "store: refused a connection from 127.0.0.1:[0-9]*: bad secret" "$TMP/wrong.0.err" &&
   ! grep -q "$SECRET\|ffffffffffffffff" "$TMP/wrong.0.err" "$TMP/wrong.1.err"; then
	ok "another secret: that rank stops naming DDP_STORE_SECRET, rank 0 logs the refusal, no secret logged"
else
	not_ok "another secret: exit ${RCS[*]}: $(grep -h -m 1 'ERROR\|refused' "$TMP"/wrong.*.err | tr '\n' ' ')"
fi

# rank 0's port is taken (mpirun with DDP_STORE_PORT): one clear line; the
# other ranks are not started (a real launcher stops them when rank 0 fails)
BUSY=$(free_port)
hold_port "$BUSY"
RANK_PIDS=(); RCS=()
t0=$(date +%s%N)
start_rank busy ompi 0 2 DDP_SYNC=on DDP_STORE_PORT=$BUSY -- --steps 20 --batch 8
wait "${RANK_PIDS[0]}"; rc=$?
SECS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
   grep -q "libddp: rank 0 cannot host the store on 127.0.0.1:$BUSY (port from DDP_STORE_PORT): Address already in use; export DDP_STORE_PORT=<a free port>" "$TMP/busy.0.err" &&
   awk -v s="$SECS" 'BEGIN { exit !(s < 10) }'; then
	ok "port taken: rank 0 stops (exit $rc, $SECS s) with one line naming DDP_STORE_PORT"
else
	not_ok "port taken: exit $rc after $SECS s: $(grep -m 2 ERROR "$TMP/busy.0.err" | tr '\n' ' ')"
fi
if grep -q -- "--master-port" "$TMP/busy.0.err"; then not_ok "port taken: the message names ddprun's --master-port"
else ok "port taken: no mention of ddprun's --master-port"; fi

# several nodes (2 tasks on each of 2) and no MASTER_ADDR: rank 0 and 1 of node 0
RANK_PIDS=(); RCS=()
t0=$(date +%s%N)
for r in 0 1; do
	start_rank multi slurm $r 4 DDP_SYNC=on SLURM_NTASKS=4 SLURM_NPROCS=4 SLURM_TASKS_PER_NODE='2(x2)' \
		SLURM_NNODES=2 SLURM_JOB_NUM_NODES=2 -- --steps 20 --batch 8
done
for p in "${RANK_PIDS[@]}"; do wait "$p"; RCS+=($?); done
SECS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
stopped "srun over 2 nodes without MASTER_ADDR" multi 2 \
	'span several nodes \(2 on this one\) and MASTER_ADDR is not set; export MASTER_ADDR=.*scontrol show hostnames'

# mpirun with neither DDP_STORE_PORT nor MASTER_PORT
run_ranks noport ompi 2 DDP_SYNC=on -- --steps 20 --batch 8
stopped "mpirun without DDP_STORE_PORT" noport 2 'mpirun names no port for the store .*export DDP_STORE_PORT='

# DDP_SYNC=off: no secret, no store, each rank trains alone on its shard
run_ranks off torchrun 2 DDP_SYNC=off DDP_STORE_SECRET= DDP_LOG=info -- --steps 20 --batch 8
if all_zero && ! grep -q "store" "$TMP/off.0.err" "$TMP/off.1.err" && [ -s "$TMP/off.1.bin" ] && ! identical off 2; then
	ok "DDP_SYNC=off: both ranks train alone (different parameters) without a secret or a store"
else
	not_ok "DDP_SYNC=off: exit ${RCS[*]}: $(grep -m 1 'store\|ERROR' "$TMP/off.0.err" "$TMP/off.1.err")"
fi

# exit: rank 1 starts 2 s after rank 0, and the program makes no collective
# (0 steps), so rank 0 is done at once: it keeps the store until rank 1 came
# and left, and rank 1 joins without a warning
RANK_PIDS=(); RCS=()
t0=$(date +%s%N)
start_rank late torchrun 0 2 DDP_LOG=info -- --steps 0 --batch 8
START_DELAY=2 start_rank late torchrun 1 2 -- --steps 0 --batch 8
wait "${RANK_PIDS[0]}"; RCS+=($?)
t1=$(date +%s%N)
wait "${RANK_PIDS[1]}"; RCS+=($?)
SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
if all_zero && awk -v s="$SECS" 'BEGIN { exit !(s >= 1.8) }' &&
   grep -q "every rank has left the store" "$TMP/late.0.err"; then
	ok "exit: rank 0 kept the store $SECS s for a rank that started 2 s late"
else
	not_ok "exit: rank 0 left after $SECS s (exit ${RCS[*]}); rank 1 said: $(grep -m 1 'ERROR\|WARN' "$TMP/late.1.err")"
fi
no_warnings "exit: late rank" late 2

# exit: rank 1 never comes; rank 0 gives up after DDP_COLL_TIMEOUT=2 s
RANK_PIDS=(); RCS=()
t0=$(date +%s%N)
start_rank never torchrun 0 2 DDP_COLL_TIMEOUT=2 -- --steps 0 --batch 8
wait "${RANK_PIDS[0]}"; rc=$?
SECS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
if [ $rc -eq 0 ] && awk -v s="$SECS" 'BEGIN { exit !(s >= 1.8 && s < 8) }' &&
   grep -q "rank 0 stops hosting the store after waiting 2 s (DDP_COLL_TIMEOUT): 1 of 2 ranks joined" "$TMP/never.0.err"; then
	ok "exit: rank 0 waits at most DDP_COLL_TIMEOUT ($SECS s) for a rank that never comes, and says so"
else
	not_ok "exit: rank 0 exit $rc after $SECS s: $(grep -m 1 'WARN\|ERROR' "$TMP/never.0.err")"
fi
exit $FAILED
