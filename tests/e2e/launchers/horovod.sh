#!/bin/bash
# SPDX-License-Identifier: MIT
#
# horovod.sh - ranks started as `horovodrun --gloo -np N` starts them
# (HOROVOD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE, the gloo rendezvous variables,
# nothing else a launcher sets): libddp recognises them (issue 14, 7: they
# used to train alone, silently), rank 0 hosts the store on DDP_STORE_PORT,
# and 2 ranks equal one process at 2x the batch.  Without a port, every rank
# stops with one line naming DDP_STORE_PORT and horovodrun.
. "$(dirname "$0")/lib.sh"
need
S=40
HVD_PORT=$(free_port)   # horovodrun's own rendezvous (HTTP); never ours

ref b16 --steps $S --batch 16
P=$(free_port)
run_ranks hv2 horovod 2 DDP_SYNC=on DDP_LOG=info DDP_STORE_PORT=$P -- --steps $S --batch 8
equiv "horovodrun -np 2" hv2 b16 2
if grep -q "not started by ddprun (horovod): rank 0 hosts the store on 127.0.0.1:$P (port from DDP_STORE_PORT)" "$TMP/hv2.0.err"; then
	ok "horovodrun: HOROVOD_RANK/SIZE recognised; the store is on DDP_STORE_PORT ($P)"
else
	not_ok "horovodrun: $(grep -m 1 'store\|ERROR' "$TMP/hv2.0.err")"
fi
no_warnings "horovodrun -np 2" hv2 2

# DDP_SYNC=auto (the default) too: a launched rank never trains alone
ref b24 --steps $S --batch 24
P=$(free_port)
run_ranks hv3 horovod 3 DDP_STORE_PORT=$P -- --steps $S --batch 8
equiv "horovodrun -np 3 (DDP_SYNC=auto)" hv3 b24 3

# no port: one line naming DDP_STORE_PORT, never training alone
run_ranks hvn horovod 2 DDP_SYNC=on -- --steps 5 --batch 8
if [ "${RCS[0]}" != 0 ] && grep -q "libddp: rank 0: horovodrun names no port for the store that rank 0 hosts; export DDP_STORE_PORT" "$TMP/hvn.0.err"; then
	ok "horovodrun without a port: rank 0 stops, naming DDP_STORE_PORT"
else
	not_ok "horovodrun without a port: exit ${RCS[*]}: $(grep -m 1 'libddp' "$TMP/hvn.0.err")"
fi
exit $FAILED
