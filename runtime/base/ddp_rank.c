/* SPDX-License-Identifier: MIT
 *
 * ddp_rank.c - who this process is in the job (implements ddp_rank.h).
 *
 * The launcher is recognised by the variables it sets, first match wins:
 *   ddprun / torchrun  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
 *                      (torchrun when TORCHELASTIC_RUN_ID is also set and
 *                      DDP_STORE_ADDR is not: ddprun sets both)
 *   Open MPI           OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE
 *   PMI (MPICH, Intel) PMI_RANK, PMI_SIZE (+ MPI_LOCALRANKID/MPI_LOCALNRANKS)
 *   Horovod            HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_RANK,
 *                      HOROVOD_LOCAL_SIZE (horovodrun --gloo; under mpirun
 *                      Open MPI's variables come first and agree)
 *   Slurm (srun)       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, and
 *                      SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE
 *                      ("2(x3),1": entry SLURM_NODEID of the expanded list)
 * Slurm comes last: mpirun, mpiexec or torchrun inside a Slurm allocation
 * start their ranks with the allocation's (or their daemon's) SLURM_PROCID
 * and SLURM_NTASKS still in the environment, which then do not describe the
 * rank.
 * A missing local rank or local size falls back to rank / world size (one
 * node).  MASTER_ADDR and MASTER_PORT are read for every source, except that
 * under ddprun (DDP_STORE_ADDR set) the store is DDP_STORE_ADDR and
 * DDP_STORE_PORT: MASTER_ADDR/MASTER_PORT are then the program's own.
 *
 * Contract: ddp_rank_init may be called more than once (the CUDA half and the
 * file hooks of libddp.so both call it); each call parses the environment
 * again and publishes the result only when it is valid, so readers never see
 * a half-written or invalid record.  It does not allocate.  Callers make
 * the first call before they start threads that read ddp_rank_get().
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_log.h"
#include "ddp_rank.h"

static struct ddp_rank_info rank_info = {
	.rank = 0,
	.world_size = 1,
	.local_rank = 0,
	.local_world_size = 1,
	.source = "none",
	.master_addr = NULL,
	.master_port = 0,
};

/* Parses a decimal integer in [lo, hi]; one error line naming var if bad. */
static ddp_result parse_int(const char *var, const char *v, long lo, long hi, int *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi) {
		DDP_ERROR("%s='%s' is not an integer in [%ld, %ld]; fix or unset it", var, v, lo, hi);
		return DDP_ERR_INVALID;
	}
	*out = (int)x;
	return DDP_OK;
}

/* Reads variable var (if set and non-empty) into *out; *found tells. */
static ddp_result read_int(const char *var, long lo, long hi, int *out, int *found)
{
	const char *v = getenv(var);

	*found = 0;
	if (!v || !*v)
		return DDP_OK;
	*found = 1;
	return parse_int(var, v, lo, hi, out);
}

/* Slurm's SLURM_TASKS_PER_NODE is a compressed list "2(x3),1": returns the
 * entry for node index `node`. */
static ddp_result parse_slurm_tasks_per_node(const char *v, int node, int *out)
{
	const char *p = v;
	int index = 0;

	while (*p) {
		char *end;
		long n, rep = 1;

		errno = 0;
		n = strtol(p, &end, 10);
		if (errno || end == p || n < 1 || n > INT_MAX)
			goto bad;
		p = end;
		if (*p == '(') {
			if (p[1] != 'x')
				goto bad;
			rep = strtol(p + 2, &end, 10);
			if (end == p + 2 || *end != ')' || rep < 1 || rep > INT_MAX)
				goto bad;
			p = end + 1;
		}
		if (node < index + rep) {
			*out = (int)n;
			return DDP_OK;
		}
		index += (int)rep;
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
bad:
	DDP_ERROR("SLURM_TASKS_PER_NODE='%s' does not name a task count for node %d; "
		  "set SLURM_NTASKS_PER_NODE",
		  v, node);
	return DDP_ERR_INVALID;
}

/* Fills r->local_world_size from Slurm's variables. */
static ddp_result slurm_local_size(struct ddp_rank_info *r)
{
	int found, node = 0;
	const char *v;

	DDP_CHECK(read_int("SLURM_NTASKS_PER_NODE", 1, INT_MAX, &r->local_world_size, &found));
	if (found)
		return DDP_OK;
	v = getenv("SLURM_TASKS_PER_NODE");
	if (!v || !*v)
		return DDP_OK;
	DDP_CHECK(read_int("SLURM_NODEID", 0, INT_MAX, &node, &found));
	return parse_slurm_tasks_per_node(v, node, &r->local_world_size);
}

struct rank_source {
	const char *name;                                  /* ddp_rank_info.source                  */
	const char *rank, *size, *local_rank, *local_size; /* variables   */
};

static const struct rank_source sources[] = {
	{ "ddprun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE" },
	{ "ompi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
	  "OMPI_COMM_WORLD_LOCAL_SIZE" },
	{ "pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS" },
	{ "horovod", "HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE" },
	{ "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL }, /* last: see above */
};

ddp_result ddp_rank_init(void)
{
	struct ddp_rank_info r = {
		.rank = 0,
		.world_size = 1,
		.local_rank = 0,
		.local_world_size = 1,
		.source = "none",
		.master_addr = NULL,
		.master_port = 0,
	};
	const struct rank_source *s = NULL;
	int found_rank, found_size, found;
	const char *v;

	for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
		if (getenv(sources[i].rank) || getenv(sources[i].size)) {
			s = &sources[i];
			break;
		}
	}
	if (s) {
		DDP_CHECK(read_int(s->rank, 0, INT_MAX - 1, &r.rank, &found_rank));
		DDP_CHECK(read_int(s->size, 1, INT_MAX, &r.world_size, &found_size));
		if (!found_rank || !found_size) {
			DDP_ERROR("%s is set but %s is not; a launcher sets both",
				  found_rank ? s->rank : s->size, found_rank ? s->size : s->rank);
			return DDP_ERR_INVALID;
		}
		if (r.rank >= r.world_size) {
			DDP_ERROR("%s=%d is not below %s=%d", s->rank, r.rank, s->size, r.world_size);
			return DDP_ERR_INVALID;
		}
		r.source = s->name;
		/* ddprun sets torchrun's TORCHELASTIC_* too, and DDP_STORE_ADDR */
		if (s == &sources[0] && getenv("TORCHELASTIC_RUN_ID") && !getenv("DDP_STORE_ADDR"))
			r.source = "torchrun";
		r.local_rank = r.rank;
		r.local_world_size = r.world_size;
		DDP_CHECK(read_int(s->local_rank, 0, INT_MAX - 1, &r.local_rank, &found));
		if (s->local_size)
			DDP_CHECK(read_int(s->local_size, 1, INT_MAX, &r.local_world_size, &found));
		else
			DDP_CHECK(slurm_local_size(&r));
		if (r.local_rank >= r.local_world_size) {
			DDP_ERROR("%s=%d is not below the local world size %d (%s)", s->local_rank,
				  r.local_rank, r.local_world_size,
				  s->local_size ? s->local_size : "SLURM_NTASKS_PER_NODE");
			return DDP_ERR_INVALID;
		}
	}
	/* ddprun names its store DDP_STORE_ADDR/DDP_STORE_PORT and leaves
	 * MASTER_ADDR/MASTER_PORT to the program; RANK/WORLD_SIZE set by hand
	 * with MASTER_ADDR/MASTER_PORT still name a store there */
	v = getenv("DDP_STORE_ADDR");
	if (strcmp(r.source, "ddprun") == 0 && v && *v) {
		r.master_addr = v;
		DDP_CHECK(read_int("DDP_STORE_PORT", 0, 65535, &r.master_port, &found));
	} else {
		v = getenv("MASTER_ADDR");
		r.master_addr = (v && *v) ? v : NULL;
		DDP_CHECK(read_int("MASTER_PORT", 0, 65535, &r.master_port, &found));
	}
	rank_info = r;
	return DDP_OK;
}

const struct ddp_rank_info *ddp_rank_get(void)
{
	return &rank_info;
}
