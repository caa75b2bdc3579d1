/* SPDX-License-Identifier: MIT
 *
 * sim_copy.c - cuMemcpy* and cuMemset*, synchronous and asynchronous.
 *
 * Every copy or set is checked when it is issued: the device side of a copy
 * must lie wholly inside one device allocation (or inside pinned host memory,
 * which has a device address under unified addressing), the host side must
 * not touch the device range; anything else is CUDA_ERROR_INVALID_VALUE, as
 * with the driver.  The work itself is an item on the stream (the default
 * stream of the call's flavour for the synchronous forms), so it is ordered
 * with kernels and other copies; the synchronous forms then wait for it.
 * (Stronger than the driver, whose DtoD copies and memsets return early:
 * harmless for correct programs.)
 *
 * Contract: any thread may call; the bytes move on the stream's worker
 * without any lock held.  Asynchronous copies read the host buffer when they
 * run, not when issued, exactly like the real thing.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

static int sim_dev_side(enum sim_ptr_kind k)
{
	return k == SIM_PTR_DEVICE || k == SIM_PTR_HOST_PINNED;
}

/* Managed memory is host memory too. */
static int sim_host_side(enum sim_ptr_kind k, const struct sim_range *r)
{
	return k == SIM_PTR_NONE || k == SIM_PTR_HOST_PINNED || (k == SIM_PTR_DEVICE && (r->flags & SIM_RANGE_MANAGED));
}

static CUresult sim_copy_check(CUdeviceptr dst, CUdeviceptr src, size_t n, enum sim_copy_dir dir)
{
	struct sim_range rd = { 0 }, rs = { 0 };
	enum sim_ptr_kind kd = sim_mem_classify((uintptr_t)dst, n, &rd);
	enum sim_ptr_kind ks = sim_mem_classify((uintptr_t)src, n, &rs);
	int ok;
	switch (dir) {
	case SIM_COPY_HTOD: ok = sim_dev_side(kd) && sim_host_side(ks, &rs); break;
	case SIM_COPY_DTOH: ok = sim_host_side(kd, &rd) && sim_dev_side(ks); break;
	case SIM_COPY_DTOD: ok = sim_dev_side(kd) && sim_dev_side(ks); break;
	default: ok = kd != SIM_PTR_BAD && ks != SIM_PTR_BAD; break;
	}
	if (!ok || !dst || !src) {
		SIM_VERBOSE("copy of %zu bytes 0x%llx -> 0x%llx refused: not %s memory", n,
			    (unsigned long long)src, (unsigned long long)dst,
			    dir == SIM_COPY_HTOD ? "host -> device" : dir == SIM_COPY_DTOH ? "device -> host"
				: dir == SIM_COPY_DTOD ? "device -> device" : "valid");
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

struct sim_copy_work {
	struct sim_work w;
	void *dst;
	const void *src;
	size_t n;
	unsigned elem;     /* set: 1, 2 or 4; copy: 0 */
	unsigned value;
};

static CUresult sim_copy_run(struct sim_work *w)
{
	struct sim_copy_work *cw = (struct sim_copy_work *)w;
	if (cw->elem == 0) {
		memmove(cw->dst, cw->src, cw->n);
	} else if (cw->elem == 1) {
		memset(cw->dst, (int)(cw->value & 0xff), cw->n);
	} else if (cw->elem == 2) {
		uint16_t *p = cw->dst, v = (uint16_t)cw->value;
		for (size_t i = 0; i < cw->n; i++)
			p[i] = v;
	} else {
		uint32_t *p = cw->dst, v = cw->value;
		for (size_t i = 0; i < cw->n; i++)
			p[i] = v;
	}
	return CUDA_SUCCESS;
}

/* Queues the work on the resolved stream; when sync, waits for it. */
static CUresult sim_issue(enum sim_ds ds, CUstream h, struct sim_copy_work *cw, int sync)
{
	struct CUstream_st *s;
	CUresult rc = sim_stream_resolve(h, ds, &s);
	if (rc != CUDA_SUCCESS) {
		free(cw);
		return rc;
	}
	cw->w.run = sim_copy_run;
	cw->w.what = "copy";
	uint64_t seq;
	rc = sim_stream_enqueue(s, &cw->w, &seq);
	if (rc != CUDA_SUCCESS || !sync)
		return rc;
	return sim_stream_wait_seq(s, seq);
}

static CUresult sim_copy_issue(enum sim_ds ds, CUdeviceptr dst, CUdeviceptr src, size_t n, enum sim_copy_dir dir,
			       CUstream h, int sync)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (n == 0)
		return CUDA_SUCCESS;
	rc = sim_copy_check(dst, src, n, dir);
	if (rc != CUDA_SUCCESS)
		return rc;
	struct sim_copy_work *cw = calloc(1, sizeof(*cw));
	if (!cw)
		return CUDA_ERROR_OUT_OF_MEMORY;
	cw->dst = (void *)(uintptr_t)dst;
	cw->src = (const void *)(uintptr_t)src;
	cw->n = n;
	return sim_issue(ds, h, cw, sync);
}

CUresult sim_copy_sync(enum sim_ds ds, CUdeviceptr dst, CUdeviceptr src, size_t n, enum sim_copy_dir dir)
{
	return sim_copy_issue(ds, dst, src, n, dir, NULL, 1);
}

CUresult sim_copy_async(enum sim_ds ds, CUdeviceptr dst, CUdeviceptr src, size_t n, enum sim_copy_dir dir,
			CUstream s)
{
	return sim_copy_issue(ds, dst, src, n, dir, s, 0);
}

static CUresult sim_set_issue(enum sim_ds ds, CUdeviceptr dst, unsigned v, unsigned elem, size_t n, CUstream h,
			      int sync)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (n == 0)
		return CUDA_SUCCESS;
	if ((uintptr_t)dst % elem != 0 || n > SIZE_MAX / elem ||
	    !sim_dev_side(sim_mem_classify((uintptr_t)dst, n * elem, NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	struct sim_copy_work *cw = calloc(1, sizeof(*cw));
	if (!cw)
		return CUDA_ERROR_OUT_OF_MEMORY;
	cw->dst = (void *)(uintptr_t)dst;
	cw->n = n;
	cw->elem = elem;
	cw->value = v;
	return sim_issue(ds, h, cw, sync);
}

CUresult sim_set_sync(enum sim_ds ds, CUdeviceptr dst, unsigned v, unsigned elem, size_t n)
{
	return sim_set_issue(ds, dst, v, elem, n, NULL, 1);
}

CUresult sim_set_async(enum sim_ds ds, CUdeviceptr dst, unsigned v, unsigned elem, size_t n, CUstream s)
{
	return sim_set_issue(ds, dst, v, elem, n, s, 0);
}
