/* SPDX-License-Identifier: MIT
 *
 * ddp_store_table.c - the rendezvous store's data (ddp_store_server_int.h).
 *
 * Keys live in a chained hash table (struct kv, FNV-1a hashes, power-of-two
 * buckets doubled when there are more keys than buckets; a failed growth
 * leaves a working, slower table).  Barriers are a list; a name exists only
 * while the barrier is incomplete.  Progress counters are an array indexed
 * by rank, grown on a rank's first HEARTBEAT.  What the protocol does with
 * them is ddp_store_core.c's business.
 *
 * Contract: only the server thread touches keys and barriers.  progress_lock
 * guards the progress array, which store_progress_read reads from any
 * thread.  Running out of memory is reported (DDP_ERR_NOMEM / NULL) with
 * the data unchanged, never logged here.
 */
#include <stdlib.h>
#include <string.h>
#include "ddp_hash.h"
#include "ddp_store_server_int.h"

/* ---- key-value table ------------------------------------------------------ */

static uint64_t key_hash(const char *key)
{
	return ddp_fnv1a_str(DDP_FNV1A_INIT, key);
}

static struct kv **kv_slot(struct ddp_store_server *s, const char *key, uint64_t h)
{
	struct kv **p = &s->buckets[h & (s->nbuckets - 1)];
	while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
		p = &(*p)->next;
	return p;
}

struct kv *store_kv_find(struct ddp_store_server *s, const char *key)
{
	return *kv_slot(s, key, key_hash(key));
}

static ddp_result kv_grow(struct ddp_store_server *s)
{
	size_t n = s->nbuckets * 2;
	struct kv **b = calloc(n, sizeof *b);
	if (!b)
		return DDP_ERR_NOMEM;
	for (size_t i = 0; i < s->nbuckets; i++) {
		for (struct kv *e = s->buckets[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
	return DDP_OK;
}

ddp_result store_kv_set(struct ddp_store_server *s, const char *key, const void *val, size_t len)
{
	uint64_t h = key_hash(key);
	struct kv **p = kv_slot(s, key, h);
	uint8_t *copy = NULL;
	size_t klen = strlen(key), old = *p ? klen + (*p)->val_len : 0;

	if (s->data_bytes - old + klen + len > s->max_data)
		return DDP_ERR_INVALID;
	if (len) {
		copy = malloc(len);
		if (!copy)
			return DDP_ERR_NOMEM;
		memcpy(copy, val, len);
	}
	if (*p) {
		free((*p)->val);
		(*p)->val = copy;
		(*p)->val_len = len;
		s->data_bytes = s->data_bytes - old + klen + len;
		return DDP_OK;
	}
	struct kv *e = calloc(1, sizeof *e);
	char *k = strdup(key);
	if (!e || !k) {
		free(e);
		free(k);
		free(copy);
		return DDP_ERR_NOMEM;
	}
	e->hash = h;
	e->key = k;
	e->val = copy;
	e->val_len = len;
	*p = e;
	s->data_bytes += klen + len;
	if (++s->nkeys > s->nbuckets)
		(void)kv_grow(s); /* a full table still works, only slower */
	return DDP_OK;
}

static void kv_entry_free(struct kv *e)
{
	free(e->key);
	free(e->val);
	free(e);
}

void store_kv_del(struct ddp_store_server *s, const char *key)
{
	struct kv **p = kv_slot(s, key, key_hash(key));
	struct kv *e = *p;
	if (!e)
		return;
	*p = e->next;
	s->data_bytes -= strlen(e->key) + e->val_len;
	kv_entry_free(e);
	s->nkeys--;
}

static void kv_free_all(struct ddp_store_server *s)
{
	for (size_t i = 0; s->buckets && i < s->nbuckets; i++) {
		for (struct kv *e = s->buckets[i], *next; e; e = next) {
			next = e->next;
			kv_entry_free(e);
		}
	}
	free(s->buckets);
	s->buckets = NULL;
	s->nkeys = 0;
	s->data_bytes = 0;
}

/* ---- barriers --------------------------------------------------------------- */

struct barrier *store_barrier_find(struct ddp_store_server *s, const char *name)
{
	struct barrier *b = s->barriers;
	while (b && strcmp(b->name, name) != 0)
		b = b->next;
	return b;
}

struct barrier *store_barrier_new(struct ddp_store_server *s, const char *name, uint32_t world)
{
	struct barrier *b = calloc(1, sizeof *b);
	if (!b || !(b->name = strdup(name))) {
		free(b);
		return NULL;
	}
	b->world = world;
	b->next = s->barriers;
	s->barriers = b;
	return b;
}

void store_barrier_free(struct ddp_store_server *s, struct barrier *b)
{
	struct barrier **p = &s->barriers;
	while (*p != b)
		p = &(*p)->next;
	*p = b->next;
	free(b->name);
	free(b);
}

/* ---- progress counters ------------------------------------------------------ */

ddp_result store_progress_post(struct ddp_store_server *s, int rank, uint64_t counter, double now)
{
	pthread_mutex_lock(&s->progress_lock);
	if ((size_t)rank >= s->nprogress) {
		size_t n = (size_t)rank + 1;
		if (n < 2 * s->nprogress)
			n = 2 * s->nprogress;
		struct progress *p = realloc(s->progress, n * sizeof *p);
		if (!p) {
			pthread_mutex_unlock(&s->progress_lock);
			return DDP_ERR_NOMEM;
		}
		memset(p + s->nprogress, 0, (n - s->nprogress) * sizeof *p);
		s->progress = p;
		s->nprogress = n;
	}
	struct progress *p = &s->progress[rank];
	if (!p->seen || p->counter != counter) {
		p->counter = counter;
		p->changed = now;
		p->seen = 1;
	}
	pthread_mutex_unlock(&s->progress_lock);
	return DDP_OK;
}

int store_progress_read(struct ddp_store_server *s, int rank, uint64_t *counter, double *changed)
{
	int seen = 0;

	pthread_mutex_lock(&s->progress_lock);
	if ((size_t)rank < s->nprogress && s->progress[rank].seen) {
		*counter = s->progress[rank].counter;
		*changed = s->progress[rank].changed;
		seen = 1;
	}
	pthread_mutex_unlock(&s->progress_lock);
	return seen;
}

/* ---- lifetime ----------------------------------------------------------------- */

ddp_result store_table_init(struct ddp_store_server *s)
{
	s->nbuckets = 64;
	s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
	if (!s->buckets)
		return DDP_ERR_NOMEM;
	pthread_mutex_init(&s->progress_lock, NULL);
	return DDP_OK;
}

void store_table_free(struct ddp_store_server *s)
{
	kv_free_all(s);
	while (s->barriers)
		store_barrier_free(s, s->barriers);
	free(s->progress);
	pthread_mutex_destroy(&s->progress_lock);
}
