#!/bin/bash
# SPDX-License-Identifier: MIT
#
# torchrun.sh - ranks started as `torchrun --no-python env LD_PRELOAD=...
# ./trainer` starts them (RANK, WORLD_SIZE, LOCAL_*, GROUP_RANK, MASTER_ADDR,
# MASTER_PORT, TORCHELASTIC_RUN_ID), with a dummy listener on MASTER_PORT
# playing torchrun's own TCPStore: rank 0's libddp hosts the store on
# MASTER_PORT + 1 and the ranks train as one model (2 and 3 ranks equal one
# process at 2x / 3x the batch, bit-identical ranks); torchrun's store is
# never contacted.
. "$(dirname "$0")/lib.sh"
need
S=60
TR_PORT=$(free_port pair)
hold_port "$TR_PORT" || { not_ok "torchrun: cannot play torchrun's store"; exit 1; }

ref b16 --steps $S --batch 16
run_ranks tr2 torchrun 2 DDP_LOG=info -- --steps $S --batch 8
equiv "torchrun -n 2" tr2 b16 2
if grep -q "rank 0 hosts the store on 127.0.0.1:$((TR_PORT + 1)) (port from MASTER_PORT+1" "$TMP/tr2.0.err"; then
	ok "torchrun: rank 0 hosts the store on loopback at MASTER_PORT+1 ($((TR_PORT + 1)))"
else
	not_ok "torchrun: rank 0 did not say it hosts the store on 127.0.0.1:$((TR_PORT + 1)): $(grep -m 1 'store' "$TMP/tr2.0.err")"
fi
if grep -q "store 127.0.0.1:$((TR_PORT + 1)) (hosted by rank 0)" "$TMP/tr2.1.err"; then
	ok "torchrun: rank 1 joined rank 0's store"
else
	not_ok "torchrun: rank 1 did not join 127.0.0.1:$((TR_PORT + 1)): $(grep -m 1 'store' "$TMP/tr2.1.err")"
fi
if grep -q "every rank has left the store" "$TMP/tr2.0.err"; then
	ok "torchrun: rank 0 kept the store until every rank had left"
else
	not_ok "torchrun: rank 0 did not wait for the ranks to leave"
fi
no_warnings "torchrun -n 2" tr2 2
if grep -q accepted "$TMP/hold.$TR_PORT"; then
	not_ok "torchrun: something connected to torchrun's own store on MASTER_PORT"
else
	ok "torchrun: torchrun's own store (MASTER_PORT) was left alone"
fi
# the secret never appears in any log, also at info level
if grep -q "$SECRET" "$TMP"/tr2.*.err "$TMP"/tr2.*.out; then not_ok "torchrun: the secret was logged"
else ok "torchrun: the secret is in no log line"; fi

ref b24 --steps $S --batch 24
run_ranks tr3 torchrun 3 -- --steps $S --batch 8
equiv "torchrun -n 3" tr3 b24 3
no_warnings "torchrun -n 3" tr3 3

# torchrun's c10d rendezvous gives MASTER_ADDR as rank 0's host name: on one
# node the store is on loopback whatever MASTER_ADDR says
run_ranks fqdn torchrun 2 MASTER_ADDR=rank0-host.invalid -- --steps 20 --batch 8
if all_zero && identical fqdn 2; then ok "torchrun: one node needs no resolvable MASTER_ADDR (loopback)"
else not_ok "torchrun: MASTER_ADDR=rank0-host.invalid on one node: exit ${RCS[*]}: $(grep -m 1 ERROR "$TMP/fqdn.0.err")"; fi

# two nodes of one rank each (LOCAL_WORLD_SIZE=1): rank 0 binds all
# interfaces and rank 1 reaches it through MASTER_ADDR.  No training (the
# host backend of the CPU device works within one node): 0 steps.
RANK_PIDS=(); RCS=()
for r in 0 1; do
	start_rank nodes torchrun $r 2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 GROUP_RANK=$r GROUP_WORLD_SIZE=2 \
		DDP_LOG=info -- --steps 0 --batch 8
done
for p in "${RANK_PIDS[@]}"; do wait "$p"; RCS+=($?); done
if all_zero && grep -q "rank 0 hosts the store on 0.0.0.0:$((TR_PORT + 1))" "$TMP/nodes.0.err" &&
   grep -q "store 127.0.0.1:$((TR_PORT + 1)) (hosted by rank 0)" "$TMP/nodes.1.err"; then
	ok "torchrun over 2 nodes: rank 0 binds all interfaces, rank 1 joins through MASTER_ADDR"
else
	not_ok "torchrun over 2 nodes: exit ${RCS[*]}: $(grep -h -m 1 'store \|ERROR' "$TMP"/nodes.*.err | tr '\n' ' ')"
fi

# negative control: the same launch with DDP_SYNC=off fails the comparison
run_ranks off torchrun 2 DDP_SYNC=off -- --steps $S --batch 8
out=$(python3 "$RELERR" "$TMP/off.0.bin" "$TMP/b16.ref.bin" 1e-5)
if [ $? -eq 1 ] && ! identical off 2; then
	ok "torchrun: negative control, DDP_SYNC=off ranks differ from each other and from the reference ($out)"
else
	not_ok "torchrun: negative control passed the comparison ($out)"
fi
exit $FAILED
