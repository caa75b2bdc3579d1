/* SPDX-License-Identifier: MIT
 *
 * ddp_inspect.c - the inspector's records and report (see ddp_inspect.h).
 *
 * Contract: insp_lock guards every record; records hang off the kernel
 * records (ddp_kfunc.user) and live until exit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_alloc.h"
#include "ddp_port.h"
#include "ddp_inspect.h"
#include "ddp_kreg.h"
#include "ddp_log.h"
#include "ddp_sig.h"

struct insp_use {
	uint32_t alloc_id;
	uint64_t base, size;
	uint8_t kind;
	uint32_t reads, writes, unknown, in_struct;
};

struct insp_kernel {
	size_t n, cap;
	struct insp_use *use;
};

static pthread_mutex_t insp_lock = PTHREAD_MUTEX_INITIALIZER;
static char insp_path[4096];
static int insp_on;
static long insp_steps_max;
static long insp_steps;
static int last_was_opt;
static int insp_written;
static int insp_tracker;        /* the gradient tracker counts the steps */
static long insp_tracker_steps; /* steps it ended (atomic)               */

void ddp_inspect_use_tracker(void)
{
	__atomic_store_n(&insp_tracker, 1, __ATOMIC_RELEASE);
}

void ddp_inspect_tracker_steps(long steps)
{
	__atomic_store_n(&insp_tracker_steps, steps, __ATOMIC_RELEASE);
}

ddp_result ddp_inspect_init(const char *path, long steps)
{
	if (!path || !*path)
		return DDP_OK;
	snprintf(insp_path, sizeof insp_path, "%s", path);
	insp_steps_max = steps;
	__atomic_store_n(&insp_on, 1, __ATOMIC_RELEASE);
	return DDP_OK;
}

int ddp_inspect_enabled(void)
{
	return __atomic_load_n(&insp_on, __ATOMIC_ACQUIRE);
}

static struct insp_use *use_of(struct insp_kernel *ik, const struct ddp_alloc_ent *a)
{
	for (size_t i = 0; i < ik->n; i++)
		if (ik->use[i].alloc_id == a->id)
			return &ik->use[i];
	if (ik->n == ik->cap) {
		size_t cap = ik->cap ? ik->cap * 2 : 8;
		struct insp_use *u = realloc(ik->use, cap * sizeof *u);
		if (!u)
			return NULL;
		ik->use = u;
		ik->cap = cap;
	}
	struct insp_use *u = &ik->use[ik->n++];
	memset(u, 0, sizeof *u);
	u->alloc_id = a->id;
	u->base = a->base;
	u->size = a->size;
	u->kind = a->kind;
	return u;
}

void ddp_inspect_launch(const struct ddp_launch *L)
{
	struct ddp_kfunc *k = (struct ddp_kfunc *)L->k;
	int stop = 0;

	pthread_mutex_lock(&insp_lock);
	struct insp_kernel *ik = k->user;
	if (!ik)
		ik = k->user = calloc(1, sizeof *ik);
	for (uint32_t i = 0; ik && i < L->nargs; i++) {
		const struct ddp_launch_arg *a = &L->args[i];
		struct insp_use *u = use_of(ik, &a->alloc);
		if (!u)
			break;
		if (a->in_struct)
			u->in_struct++;
		if (a->access == DDP_ACC_READ)
			u->reads++;
		else if (a->access == DDP_ACC_WRITE)
			u->writes++;
		else
			u->unknown++;
	}
	/* the tracker's steps (ended ones: the launch after the last one
	 * stops); without it, an optimizer step ends at the first other kernel
	 * after optimizer ones (a guess by name: a data-flow update per layer
	 * would count a step per layer) */
	if (__atomic_load_n(&insp_tracker, __ATOMIC_ACQUIRE)) {
		insp_steps = __atomic_load_n(&insp_tracker_steps, __ATOMIC_ACQUIRE);
		if (insp_steps_max && insp_steps >= insp_steps_max)
			stop = 1;
	} else if (last_was_opt && !k->optimizer) {
		insp_steps++;
		if (insp_steps_max && insp_steps >= insp_steps_max)
			stop = 1;
	}
	last_was_opt = k->optimizer;
	pthread_mutex_unlock(&insp_lock);
	if (stop) {
		DDP_INFO(INIT, "inspection: %ld optimizer steps seen; writing %s and stopping", insp_steps,
			 insp_path);
		ddp_inspect_write();
		exit(0);
	}
}

static int cmp_kernels(const void *a, const void *b)
{
	const struct ddp_kfunc *x = *(struct ddp_kfunc *const *)a, *y = *(struct ddp_kfunc *const *)b;
	uint64_t lx = __atomic_load_n(&x->launches, __ATOMIC_RELAXED);
	uint64_t ly = __atomic_load_n(&y->launches, __ATOMIC_RELAXED);
	return lx < ly ? 1 : lx > ly ? -1 : (x->id > y->id) - (x->id < y->id);
}

struct buf_row {
	uint32_t id;
	uint64_t base, size;
	uint8_t kind;
	uint32_t opt_r, opt_w, opt_u, other_w, other_r;
};

static int cmp_rows(const void *a, const void *b)
{
	const struct buf_row *x = a, *y = b;
	return x->size < y->size ? 1 : x->size > y->size ? -1 : (x->id > y->id) - (x->id < y->id);
}

static struct buf_row *row_of(struct buf_row **rows, size_t *n, size_t *cap, uint32_t id)
{
	for (size_t i = 0; i < *n; i++)
		if ((*rows)[i].id == id)
			return &(*rows)[i];
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct buf_row *r = realloc(*rows, c * sizeof *r);
		if (!r)
			return NULL;
		*rows = r;
		*cap = c;
	}
	struct buf_row *r = &(*rows)[(*n)++];
	memset(r, 0, sizeof *r);
	r->id = id;
	return r;
}

void ddp_inspect_write(void)
{
	struct ddp_kfunc **ks = NULL;
	struct buf_row *rows = NULL;
	size_t nk = 0, nrows = 0, caprows = 0;
	FILE *f;

	if (!ddp_inspect_enabled() || __atomic_exchange_n(&insp_written, 1, __ATOMIC_ACQ_REL))
		return;
	f = DDP_SYS(fopen64)(insp_path, "w");
	if (!f) {
		DDP_ERROR("DDP_INSPECT=%s: cannot write the file: %s", insp_path, strerror(errno));
		return;
	}
	pthread_mutex_lock(&insp_lock);
	for (struct ddp_kfunc *k = ddp_kreg_first(); k; k = k->next)
		nk++;
	ks = calloc(nk ? nk : 1, sizeof *ks);
	nk = 0;
	for (struct ddp_kfunc *k = ddp_kreg_first(); ks && k; k = k->next)
		ks[nk++] = k;
	if (ks)
		qsort(ks, nk, sizeof *ks, cmp_kernels);

	uint64_t total = 0;
	for (size_t i = 0; i < nk; i++)
		total += ks[i]->launches;
	fprintf(f, "# ddprun inspect report\n");
	fprintf(f, "kernels: %zu, launches: %llu, optimizer steps seen: %ld\n\n", nk,
		(unsigned long long)total, insp_steps);
	fprintf(f, "## Kernels by launch count\n");
	fprintf(f, "%10s  %-9s %s\n", "launches", "role", "kernel");
	for (size_t i = 0; i < nk; i++)
		fprintf(f, "%10llu  %-9s %s\n", (unsigned long long)ks[i]->launches,
			ks[i]->optimizer   ? "optimizer"
			: ks[i]->untracked ? "nccl"
					   : "-",
			ks[i]->demangled);

	/* buffers: every allocation a kernel touched, and the live ones */
	for (size_t i = 0; i < nk; i++) {
		struct insp_kernel *ik = ks[i]->user;
		for (size_t j = 0; ik && j < ik->n; j++) {
			const struct insp_use *u = &ik->use[j];
			struct buf_row *r = row_of(&rows, &nrows, &caprows, u->alloc_id);
			if (!r)
				break;
			r->base = u->base;
			r->size = u->size;
			r->kind = u->kind;
			if (ks[i]->optimizer) {
				r->opt_r += u->reads;
				r->opt_w += u->writes;
				r->opt_u += u->unknown;
			} else {
				r->other_w += u->writes;
				r->other_r += u->reads;
			}
		}
	}
	struct ddp_alloc_stats as;
	ddp_alloc_stats(&as);
	size_t nlive = ddp_alloc_snapshot(NULL, 0);
	struct ddp_alloc_ent *live = calloc(nlive ? nlive : 1, sizeof *live);
	if (live) {
		nlive = ddp_alloc_snapshot(live, nlive);
		for (size_t i = 0; i < nlive; i++) {
			struct buf_row *r = row_of(&rows, &nrows, &caprows, live[i].id);
			if (!r)
				break;
			r->base = live[i].base;
			r->size = live[i].size;
			r->kind = live[i].kind;
		}
	}
	if (rows)
		qsort(rows, nrows, sizeof *rows, cmp_rows);
	fprintf(f, "\n## Allocations by size (%llu made, peak %llu bytes)\n",
		(unsigned long long)as.total_allocs, (unsigned long long)as.peak_bytes);
	fprintf(f, "%8s  %12s  %-8s %s\n", "buffer", "bytes", "kind", "address");
	for (size_t i = 0; i < nrows; i++)
		fprintf(f, "%8s#%u  %12llu  %-8s 0x%llx\n", "", rows[i].id, (unsigned long long)rows[i].size,
			ddp_alloc_kind_name(rows[i].kind), (unsigned long long)rows[i].base);

	fprintf(f, "\n## Buffer access by kernel (from const-ness; ? = unknown)\n");
	for (size_t i = 0; i < nk; i++) {
		struct insp_kernel *ik = ks[i]->user;
		if (!ik || !ik->n)
			continue;
		fprintf(f, "%s\n ", ks[i]->demangled);
		for (size_t j = 0; j < ik->n; j++) {
			const struct insp_use *u = &ik->use[j];
			fprintf(f, " #%u:%s%s%s%s", u->alloc_id, u->reads ? "r" : "", u->writes ? "w" : "",
				u->unknown ? "?" : "", u->in_struct ? "(struct)" : "");
		}
		fputc('\n', f);
	}

	fprintf(f, "\n## Optimizer kernels (by name)\n");
	int any = 0;
	for (size_t i = 0; i < nk; i++)
		if (ks[i]->optimizer) {
			fprintf(f, "  %s (%llu launches)\n", ks[i]->demangled,
				(unsigned long long)ks[i]->launches);
			any = 1;
		}
	if (!any)
		fprintf(f, "  none recognised by name (an update written with generic kernels is found from the "
			   "data flow: see \"Roles\" below)\n");
	pthread_mutex_unlock(&insp_lock);
	fclose(f);
	free(ks);
	free(rows);
	free(live);
}
