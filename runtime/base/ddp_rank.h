/* SPDX-License-Identifier: MIT
 *
 * ddp_rank.h - who this process is in the job.
 *
 * Read from the environment of whichever launcher started the process, first
 * match wins: ddprun/torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/
 * LOCAL_SIZE), PMI (PMI_RANK, PMI_SIZE), then Slurm (SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE) last, because mpirun
 * inside an sbatch allocation leaves stale SLURM_* variables behind.  No
 * launcher: rank 0 of 1.
 *
 * Contract: ddp_rank_init may be called more than once (the CUDA hooks and
 * the file hooks both do; call it after the program started, not in a
 * constructor): each call re-parses and publishes only a valid result.
 * ddp_rank_get returns the last published info and is safe from any thread.
 */
#ifndef DDP_RANK_H
#define DDP_RANK_H

#include "ddp_err.h"

struct ddp_rank_info {
	int rank;                /* global rank, 0..world_size-1            */
	int world_size;          /* number of ranks in the job               */
	int local_rank;          /* rank on this node                        */
	int local_world_size;    /* ranks on this node                       */
	const char *source;      /* "ddprun", "torchrun", "slurm", "ompi", "pmi", "none" */
	const char *master_addr; /* store host (may be NULL)              */
	int master_port;         /* store port (0 when unknown)             */
};

/* Parses the environment; DDP_ERR_INVALID (one error line naming the variable)
 * on a malformed or inconsistent value, e.g. RANK >= WORLD_SIZE. */
ddp_result ddp_rank_init(void);

/* The parsed info (rank 0 of 1 before ddp_rank_init or without a launcher). */
const struct ddp_rank_info *ddp_rank_get(void);

#endif /* DDP_RANK_H */
