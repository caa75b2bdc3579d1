/* SPDX-License-Identifier: MIT
 *
 * sim_launch.c - cuLaunchKernel and cuLaunchKernelEx: check the launch,
 * marshal the arguments by the cubin's parameter layout, queue the launch on
 * the stream; the stream's worker runs the grid (sim_exec_launch).
 *
 * Arguments come either as kernelParams (one pointer per parameter) or as
 * extra = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
 * &size, CU_LAUNCH_PARAM_END } (one buffer in the cubin's layout).  Either
 * way every byte is copied at launch time into the work item, since the
 * program may reuse its buffers as soon as the call returns; the kernel gets
 * args[i] pointing at parameter i inside that copy.
 *
 * In trace mode (sim_trace.c) a kernel without host code is checked and
 * queued like any other and does nothing when it runs.
 *
 * A kernel that fails (a trap, an invalid launch found by the scheduler)
 * makes CUDA_ERROR_LAUNCH_FAILED sticky: every later call fails with it, as
 * after a fault on a GPU.  Launches queued after that are skipped.
 *
 * Contract: any thread may call; the launch path allocates one block per
 * launch and takes only the stream's queue locks.
 */
#include "sim_internal.h"
#include "ddp_fatbin.h"
#include "sim_exec.h"

#include <stdlib.h>
#include <string.h>

#pragma weak sim_exec_launch

#define SIM_ARG_ALIGN 64u

struct sim_launch_work {
	struct sim_work w;
	const struct sim_kernel_entry *host;
	struct sim_dim3 grid, block;
	unsigned shmem;
	uint32_t nparams;
	void **args;        /* nparams pointers into buf                    */
	unsigned char *buf; /* the parameter area, SIM_ARG_ALIGN-aligned    */
};

static CUresult sim_launch_run(struct sim_work *w)
{
	struct sim_launch_work *lw = (struct sim_launch_work *)w;
	if (atomic_load(&sim_sticky) || !lw->host)
		return CUDA_SUCCESS; /* the context is dead: skip, stay sticky; or trace mode */
	if (!sim_exec_launch) {
		sim_msg("kernel %s: the kernel-execution half is not built into this libcuda.so.1",
			lw->host->mangled);
		return CUDA_ERROR_LAUNCH_FAILED;
	}
	if (sim_exec_launch(lw->host, lw->grid, lw->block, lw->shmem, (void *const *)lw->args) != 0)
		return CUDA_ERROR_LAUNCH_FAILED;
	return CUDA_SUCCESS;
}

static void sim_launch_release(struct sim_work *w)
{
	free(w);
}

/* Reads extra[] into *buf / *size; CUDA_ERROR_INVALID_VALUE when malformed. */
static CUresult sim_parse_extra(void **extra, const void **buf, size_t *size)
{
	const size_t *psize = NULL;
	*buf = NULL;
	for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			*buf = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			psize = extra[i + 1];
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (!*buf || !psize)
		return CUDA_ERROR_INVALID_VALUE;
	*size = *psize;
	return CUDA_SUCCESS;
}

CUresult sim_launch_kernel(enum sim_ds ds, CUfunction hf, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			   unsigned by, unsigned bz, unsigned shmem, CUstream hs, void **params, void **extra)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(hs, ds, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUfunc_st *f = sim_func_get(hf);
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!gx || !gy || !gz || !bx || !by || !bz || gx > 2147483647u || gy > 65535 || gz > 65535 ||
	    bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > SIM_MAX_BLOCK_THREADS) {
		SIM_VERBOSE("launch of %s refused: grid %ux%ux%u, block %ux%ux%u", f->info->name, gx, gy, gz, bx, by, bz);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (shmem > (unsigned)f->max_dyn_shared) {
		SIM_VERBOSE("launch of %s refused: %u bytes of dynamic shared memory, the function allows %d "
			    "(cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES)", f->info->name, shmem, f->max_dyn_shared);
		return CUDA_ERROR_INVALID_VALUE;
	}

	const struct ddp_kernel_info *k = f->info;
	size_t need = 0; /* end of the last parameter */
	for (uint32_t i = 0; i < k->nparams; i++)
		if ((size_t)k->params[i].offset + k->params[i].size > need)
			need = (size_t)k->params[i].offset + k->params[i].size;
	size_t area = need > k->param_bytes ? need : k->param_bytes;

	const void *xbuf = NULL;
	size_t xsize = 0;
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (extra) {
		rc = sim_parse_extra(extra, &xbuf, &xsize);
		if (rc != CUDA_SUCCESS)
			return rc;
		/* A buffer shorter than the parameters is accepted, as the
		 * driver does: NCCL passes the 176 bytes it filled of its
		 * 4096-byte ncclDevKernelArgsStorage.  The rest reads as zero
		 * here (undefined on a GPU). */
		if (xsize < need)
			SIM_VERBOSE("cuLaunchKernel %s: argument buffer of %zu bytes, parameters end at %zu: the rest is zero",
				    k->name, xsize, need);
	} else if (!params && k->nparams) {
		return CUDA_ERROR_INVALID_VALUE;
	}

	size_t head = (sizeof(struct sim_launch_work) + k->nparams * sizeof(void *) + SIM_ARG_ALIGN - 1) /
		      SIM_ARG_ALIGN * SIM_ARG_ALIGN;
	struct sim_launch_work *lw = NULL;
	if (posix_memalign((void **)&lw, SIM_ARG_ALIGN, head + (area ? area : 1)) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(lw, 0, head);
	lw->w.run = sim_launch_run;
	lw->w.what = k->name;
	lw->w.release = sim_launch_release;
	lw->host = f->host;
	lw->grid = (struct sim_dim3){ gx, gy, gz };
	lw->block = (struct sim_dim3){ bx, by, bz };
	lw->shmem = shmem;
	lw->nparams = k->nparams;
	lw->args = (void **)(lw + 1);
	lw->buf = (unsigned char *)lw + head;
	memset(lw->buf, 0, area);
	if (xbuf)
		memcpy(lw->buf, xbuf, xsize < area ? xsize : area);
	for (uint32_t i = 0; i < k->nparams; i++) {
		lw->args[i] = lw->buf + k->params[i].offset;
		if (!xbuf) {
			if (!params[i]) {
				free(lw);
				return CUDA_ERROR_INVALID_VALUE;
			}
			memcpy(lw->args[i], params[i], k->params[i].size);
		}
	}
	if (!lw->host)
		sim_trace_launch_skipped(); /* trace mode: checked, queued, does nothing */
	return sim_stream_enqueue(s, &lw->w, NULL);
}

CUresult sim_launch_kernel_ex(enum sim_ds ds, const CUlaunchConfig *config, CUfunction f, void **params,
			      void **extra)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < config->numAttrs; i++) {
		switch (config->attrs[i].id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
			break; /* performance hints: nothing to do on the CPU */
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
			/* Thread block clusters (NCCL launches its kernels in
			 * clusters on sm_90): the grid must tile into clusters of
			 * at most 8 blocks (the portable size), as the driver
			 * checks.  Blocks run as without clusters: a kernel using
			 * cluster features (distributed shared memory, cluster
			 * barriers) cannot be built for the CPU device
			 * (sim_kernel.h has none), so none that runs here needs
			 * them; in trace mode the launch is skipped anyway. */
			const CUlaunchAttributeValue *v = &config->attrs[i].value;
			unsigned cx = v->clusterDim.x, cy = v->clusterDim.y, cz = v->clusterDim.z;
			if (!cx || !cy || !cz || (unsigned long long)cx * cy * cz > 8 || config->gridDimX % cx ||
			    config->gridDimY % cy || config->gridDimZ % cz)
				return CUDA_ERROR_INVALID_CLUSTER_SIZE;
			break;
		}
		default:
			sim_msg("cuLaunchKernelEx: launch attribute %d is not supported by the CPU device",
				(int)config->attrs[i].id);
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	return sim_launch_kernel(ds, f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
				 config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
				 params, extra);
}
