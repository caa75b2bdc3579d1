/* SPDX-License-Identifier: MIT
 *
 * ddp_fused.c - input data, and updates fused into the compute kernel
 * (ddp_fused.h).
 *
 * Contract: see ddp_fused.h.  The host-set bytes are one flat array of
 * disjoint runs {allocation, lo, hi}, unsorted: a copy adds (merging the
 * runs it touches), a kernel's write cuts (splitting a run it falls
 * inside).  Before the first update step there are a handful (the tables,
 * the data, a batch buffer), so a linear scan is the whole index.
 */
#include <stdlib.h>
#include <string.h>

#include "ddp_array.h"
#include "ddp_dtype.h"
#include "ddp_fused.h"

struct fu_run {
	uint64_t lo, hi;
	uint32_t alloc_id;
};

struct ddp_fused {
	struct fu_run *run;
	size_t n, cap;
	int gave_up; /* too many runs, or no memory: nothing is host-set */
};

ddp_result ddp_fused_new(struct ddp_fused **out)
{
	struct ddp_fused *f = calloc(1, sizeof *f);
	if (!f)
		return DDP_ERR_NOMEM;
	*out = f;
	return DDP_OK;
}

void ddp_fused_free(struct ddp_fused *f)
{
	if (!f)
		return;
	free(f->run);
	free(f);
}

static void give_up(struct ddp_fused *f)
{
	free(f->run);
	f->run = NULL;
	f->n = f->cap = 0;
	f->gave_up = 1;
}

static int push(struct ddp_fused *f, uint32_t a, uint64_t lo, uint64_t hi)
{
	if (f->n >= DDP_FUSED_MAX_RANGES)
		return -1;
	struct fu_run *r = ddp_array_grow(f->run, &f->cap, f->n + 1, sizeof *r, 16);
	if (!r)
		return -1;
	f->run = r;
	f->run[f->n++] = (struct fu_run){ lo, hi, a };
	return 0;
}

/* Removes [lo, hi) of allocation a from the runs (a kernel may write it). */
static void cut(struct ddp_fused *f, uint32_t a, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < f->n && !f->gave_up;) {
		struct fu_run *r = &f->run[i];
		if (r->alloc_id != a || r->hi <= lo || hi <= r->lo) {
			i++;
			continue;
		}
		struct fu_run was = *r;
		if (was.lo < lo && hi < was.hi) { /* inside: split in two */
			r->hi = lo;
			if (push(f, a, hi, was.hi))
				give_up(f);
			return;
		}
		if (was.lo < lo) {
			r->hi = lo;
			i++;
		} else if (hi < was.hi) {
			r->lo = hi;
			i++;
		} else {
			f->run[i] = f->run[--f->n]; /* all of it: look at the one moved here */
		}
	}
}

void ddp_fused_host_copy(struct ddp_fused *f, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	if (!f || f->gave_up || lo >= hi)
		return;
	/* merge with every run it touches, then add the union */
	for (size_t i = 0; i < f->n;) {
		struct fu_run *r = &f->run[i];
		if (r->alloc_id == alloc_id && r->lo <= hi && lo <= r->hi) {
			lo = r->lo < lo ? r->lo : lo;
			hi = r->hi > hi ? r->hi : hi;
			f->run[i] = f->run[--f->n];
			continue;
		}
		i++;
	}
	if (push(f, alloc_id, lo, hi))
		give_up(f);
}

int ddp_fused_host_set(const struct ddp_fused *f, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	if (!f || f->gave_up || lo >= hi)
		return 0;
	/* the runs are disjoint: covered when their overlaps add up */
	uint64_t got = 0;
	for (size_t i = 0; i < f->n; i++) {
		const struct fu_run *r = &f->run[i];
		if (r->alloc_id != alloc_id || r->hi <= lo || hi <= r->lo)
			continue;
		got += (r->hi < hi ? r->hi : hi) - (r->lo > lo ? r->lo : lo);
	}
	return got == hi - lo;
}

void ddp_fused_arg_range(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi)
{
	uint64_t end = a->base + a->size;
	uint64_t p = a->ptr && a->ptr >= a->base && a->ptr < end ? a->ptr : a->base;
	*lo = p;
	*hi = end;
	if ((a->bounded == DDP_GB_EXACT || a->bounded == DDP_GB_MEASURED) && a->ext && a->ext <= end - p)
		*hi = p + a->ext;
}

static int is_float(uint8_t dt)
{
	return dt == DDP_DT_F32 || dt == DDP_DT_F64 || dt == DDP_DT_F16 || dt == DDP_DT_BF16;
}

static uint64_t elems(const struct ddp_grad_arg *a)
{
	uint64_t lo, hi;
	size_t es = ddp_dtype_size((enum ddp_dtype)a->dtype);
	ddp_fused_arg_range(a, &lo, &hi);
	return es ? (hi - lo) / es : 0;
}

/* The launch's judgement (ddp_fused.h, rules 1-3). */
static int judge(const struct ddp_fused *f, const struct ddp_grad_launch *L, struct ddp_fused_report *rep)
{
	const struct ddp_grad_arg *state = NULL, *data = NULL;
	uint32_t ninputs = 0;
	if (L->truncated)
		return 0;
	for (uint32_t i = 0; i < L->nargs && !state; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		uint64_t lo, hi;
		ddp_fused_arg_range(a, &lo, &hi);
		if (a->access != DDP_GA_READ && a->access != DDP_GA_UNKNOWN && !a->in_struct && is_float(a->dtype) &&
		    ddp_fused_host_set(f, a->alloc_id, lo, hi))
			state = a;
	}
	if (!state)
		return 0;
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (a->access != DDP_GA_READ && a->access != DDP_GA_UNKNOWN)
			continue;
		/* (3) a read-only float range shaped like a range the launch
		 * writes is a gradient, however it was made */
		uint64_t n = is_float(a->dtype) ? elems(a) : 0;
		for (uint32_t j = 0; n && j < L->nargs; j++) {
			const struct ddp_grad_arg *w = &L->args[j];
			if (w->access == DDP_GA_WRITE && w->alloc_id != a->alloc_id && elems(w) == n)
				return 0;
		}
		uint64_t lo, hi;
		ddp_fused_arg_range(a, &lo, &hi);
		int written_too = 0; /* its allocation is one the launch writes */
		for (uint32_t j = 0; j < L->nargs; j++)
			written_too |= L->args[j].access != DDP_GA_READ && L->args[j].alloc_id == a->alloc_id;
		if (a->access == DDP_GA_READ && !a->in_struct && !written_too &&
		    ddp_fused_host_set(f, a->alloc_id, lo, hi)) {
			ninputs++;
			if (!data)
				data = a;
		}
	}
	if (!data)
		return 0;
	uint64_t slo, shi, dlo, dhi;
	ddp_fused_arg_range(state, &slo, &shi);
	ddp_fused_arg_range(data, &dlo, &dhi);
	*rep = (struct ddp_fused_report){
		.kname = L->kname ? L->kname : "?",
		.state_param = state->param,
		.state_alloc = state->alloc_id,
		.state_off = slo - state->base,
		.state_bytes = shi - slo,
		.state_dtype = state->dtype,
		.data_param = data->param,
		.data_alloc = data->alloc_id,
		.data_off = dlo - data->base,
		.data_bytes = dhi - dlo,
		.data_dtype = data->dtype,
		.ninputs = ninputs,
	};
	return 1;
}

int ddp_fused_launch(struct ddp_fused *f, const struct ddp_grad_launch *L, struct ddp_fused_report *rep)
{
	if (!f || f->gave_up || !f->n)
		return 0;
	int fused = judge(f, L, rep);
	/* what the launch may write is no longer what the host copied (a
	 * truncated launch writes where nothing here sees: nothing stays) */
	if (L->truncated) {
		f->n = 0;
		return fused;
	}
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (a->access == DDP_GA_READ && !a->in_struct)
			continue;
		uint64_t lo, hi;
		ddp_fused_arg_range(a, &lo, &hi); /* its exact extent, else to the allocation's end */
		cut(f, a->alloc_id, lo, hi);
	}
	return fused;
}
