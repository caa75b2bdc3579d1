/* SPDX-License-Identifier: MIT
 *
 * ddp_flow.c - the data-flow evidence of generic launches (ddp_flow.h).
 *
 * Contract: see ddp_flow.h.  The access history is a flat array searched
 * linearly: it lives for the first step only (a few hundred ranges for the
 * programs it serves).  The update table is an open-addressing set of
 * 64-bit launch identities.
 */
#include <stdlib.h>
#include <string.h>

#include "ddp_array.h"
#include "ddp_flow.h"

#define FLOW_HIST_MAX 16384

struct flow_range {
	uint32_t alloc_id;
	uint8_t read, written;
	uint64_t lo, hi;
	uint64_t first_read, last_write; /* launch numbers (history)       */
	uint64_t last_writer;            /* its launch identity (history)  */
};

struct flow_set {
	uint64_t *key; /* 0: empty                                           */
	uint8_t *kind;
	size_t mask, n;
};

struct ddp_flow {
	struct flow_range *hist;
	size_t nhist, chist;
	int hist_done;
	struct flow_set upd;
	uint32_t ncuts;
	struct flow_range *uw; /* written in this update phase            */
	size_t nuw, cuw;
};

ddp_result ddp_flow_new(struct ddp_flow **out)
{
	struct ddp_flow *f = calloc(1, sizeof *f);
	if (!f)
		return DDP_ERR_NOMEM;
	*out = f;
	return DDP_OK;
}

void ddp_flow_free(struct ddp_flow *f)
{
	if (!f)
		return;
	free(f->hist);
	free(f->upd.key);
	free(f->upd.kind);
	free(f->uw);
	free(f);
}

static ddp_result range_add(struct flow_range **v, size_t *n, size_t *cap, uint32_t alloc_id, uint64_t lo,
			    uint64_t hi, struct flow_range **out)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].alloc_id == alloc_id && (*v)[i].lo == lo && (*v)[i].hi == hi) {
			*out = &(*v)[i];
			return DDP_OK;
		}
	struct flow_range *nv = ddp_array_grow(*v, cap, *n + 1, sizeof *nv, 64);
	if (!nv)
		return DDP_ERR_NOMEM;
	*v = nv;
	struct flow_range *r = &(*v)[(*n)++];
	memset(r, 0, sizeof *r);
	r->alloc_id = alloc_id;
	r->lo = lo;
	r->hi = hi;
	*out = r;
	return DDP_OK;
}

ddp_result ddp_flow_note(struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi, int wrote,
			 uint64_t seq, uint64_t key)
{
	struct flow_range *r;
	if (f->hist_done)
		return DDP_OK;
	if (f->nhist >= FLOW_HIST_MAX) { /* no step found in that many ranges: stop learning */
		ddp_flow_history_done(f);
		return DDP_OK;
	}
	DDP_CHECK(range_add(&f->hist, &f->nhist, &f->chist, alloc_id, lo, hi, &r));
	if (wrote) {
		r->written = 1;
		r->last_write = seq;
		r->last_writer = key;
	} else {
		r->read = 1;
		if (!r->first_read)
			r->first_read = seq;
	}
	return DDP_OK;
}

uint64_t ddp_flow_last_write(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	uint64_t last = 0;
	for (size_t i = 0; i < f->nhist; i++) {
		const struct flow_range *r = &f->hist[i];
		if (r->written && r->alloc_id == alloc_id && r->lo < hi && lo < r->hi && r->last_write > last)
			last = r->last_write;
	}
	return last;
}

uint64_t ddp_flow_last_writer(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	uint64_t last = 0, key = 0;
	for (size_t i = 0; i < f->nhist; i++) {
		const struct flow_range *r = &f->hist[i];
		if (r->written && r->alloc_id == alloc_id && r->lo < hi && lo < r->hi && r->last_write > last) {
			last = r->last_write;
			key = r->last_writer;
		}
	}
	return key;
}

uint64_t ddp_flow_first_read(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	uint64_t first = 0;
	for (size_t i = 0; i < f->nhist; i++) {
		const struct flow_range *r = &f->hist[i];
		if (r->read && r->alloc_id == alloc_id && r->lo < hi && lo < r->hi &&
		    (!first || r->first_read < first))
			first = r->first_read;
	}
	return first;
}

void ddp_flow_history_done(struct ddp_flow *f)
{
	free(f->hist);
	f->hist = NULL;
	f->nhist = f->chist = 0;
	f->hist_done = 1;
}

static size_t set_slot(const struct flow_set *s, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ULL;
	size_t i = (size_t)(h >> 17) & s->mask;
	while (s->key[i] && s->key[i] != key)
		i = (i + 1) & s->mask;
	return i;
}

ddp_result ddp_flow_learn(struct ddp_flow *f, uint64_t key, enum ddp_flow_kind kind)
{
	struct flow_set *s = &f->upd;
	if (!key)
		key = 1;
	if (!s->key || (s->n + 1) * 2 > s->mask + 1) {
		size_t nsz = s->key ? (s->mask + 1) * 2 : 256;
		struct flow_set t = { calloc(nsz, sizeof *t.key), calloc(nsz, 1), nsz - 1, 0 };
		if (!t.key || !t.kind) {
			free(t.key);
			free(t.kind);
			return DDP_ERR_NOMEM;
		}
		for (size_t i = 0; s->key && i <= s->mask; i++)
			if (s->key[i]) {
				size_t j = set_slot(&t, s->key[i]);
				t.key[j] = s->key[i];
				t.kind[j] = s->kind[i];
				t.n++;
			}
		free(s->key);
		free(s->kind);
		*s = t;
	}
	size_t i = set_slot(s, key);
	if (!s->key[i]) {
		s->key[i] = key;
		s->n++;
	}
	if (kind > s->kind[i]) { /* a cut stays a cut */
		if (kind == DDP_FLOW_CUT)
			f->ncuts++;
		s->kind[i] = (uint8_t)kind;
	}
	return DDP_OK;
}

enum ddp_flow_kind ddp_flow_lookup(const struct ddp_flow *f, uint64_t key)
{
	const struct flow_set *s = &f->upd;
	if (!s->key)
		return DDP_FLOW_NONE;
	if (!key)
		key = 1;
	size_t i = set_slot(s, key);
	return s->key[i] ? (enum ddp_flow_kind)s->kind[i] : DDP_FLOW_NONE;
}

uint32_t ddp_flow_ncuts(const struct ddp_flow *f)
{
	return f->ncuts;
}

ddp_result ddp_flow_upd_write(struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	struct flow_range *r;
	DDP_CHECK(range_add(&f->uw, &f->nuw, &f->cuw, alloc_id, lo, hi, &r));
	r->written = 1;
	return DDP_OK;
}

int ddp_flow_upd_written(const struct ddp_flow *f, uint32_t alloc_id, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < f->nuw; i++) {
		const struct flow_range *r = &f->uw[i];
		if (r->alloc_id == alloc_id && r->lo < hi && lo < r->hi)
			return 1;
	}
	return 0;
}

void ddp_flow_upd_clear(struct ddp_flow *f)
{
	f->nuw = 0;
}
