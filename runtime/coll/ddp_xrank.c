/* SPDX-License-Identifier: MIT
 *
 * ddp_xrank.c - the one cross-rank compare (ddp_xrank.h documents the
 * API, the modes, the keys and their cost).
 *
 * The verdict of DDP_XR_JUDGE (little-endian fields):
 *   'O'                                          every rank posted the same
 *   'D' u32 q  u64 at  u32 len0  u32 lenq  u32 nranks  ranks  val0  valq
 *                                                rank q (first) differs
 *   'T' u32 q  u32 nranks  ranks                 rank q (first) never posted
 *
 * Contract: as ddp_xrank.h's: no state, one thread per store connection.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ddp_store.h"
#include "ddp_xrank.h"

static const char *const check_names[DDP_XR_NCHECKS] = {
	[DDP_XR_SIG] = "sig",
	[DDP_XR_PARAMS] = "params",
	[DDP_XR_INV] = "inv",
	[DDP_XR_FINAL] = "final",
	[DDP_XR_INPUT] = "input",
};

const char *ddp_xr_check_name(enum ddp_xr_check check)
{
	return (unsigned)check < DDP_XR_NCHECKS ? check_names[check] : "?";
}

void ddp_xr_key(enum ddp_xr_check check, uint64_t scope, uint64_t round, int rank, char *buf, size_t cap)
{
	if (rank < 0)
		snprintf(buf, cap, "xr/%s/%" PRIu64 "/%" PRIu64 "/v", ddp_xr_check_name(check), scope, round);
	else
		snprintf(buf, cap, "xr/%s/%" PRIu64 "/%" PRIu64 "/%d", ddp_xr_check_name(check), scope, round,
			 rank);
}

void ddp_xr_diff_free(struct ddp_xr_diff *d)
{
	free(d->val[0]);
	free(d->val[1]);
	d->val[0] = d->val[1] = NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Appends ",r" (or "r") to a rank list, with "..." once the list is full. */
static void rank_list_add(char *list, size_t len, int r)
{
	size_t n = strlen(list);
	if (n + 16 >= len) {
		if (n + 4 < len && (n < 3 || strcmp(list + n - 3, "...") != 0))
			strcat(list, "...");
		return;
	}
	snprintf(list + n, len - n, "%s%d", n ? "," : "", r);
}

static void *dup_bytes(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);
	if (q && n)
		memcpy(q, p, n);
	return q;
}

/* The first byte at which a[0..na) and b[0..nb) differ; SIZE_MAX if equal. */
static size_t first_diff(const void *a, size_t na, const void *b, size_t nb)
{
	size_t n = na < nb ? na : nb;
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return i;
	return na == nb ? SIZE_MAX : n;
}

/* Records a difference: this side's value (rank a) and theirs (rank b). */
static enum ddp_xr_result set_diff(struct ddp_xr_diff *d, int a, const void *va, size_t na, int b,
				   const void *vb, size_t nb, size_t at)
{
	d->rank[0] = a;
	d->rank[1] = b;
	d->len[0] = na;
	d->len[1] = nb;
	d->at = at;
	d->val[0] = dup_bytes(va, na);
	d->val[1] = dup_bytes(vb, nb);
	if (!d->val[0] || !d->val[1]) {
		d->rc = DDP_ERR_NOMEM;
		return DDP_XR_ERROR;
	}
	return DDP_XR_DIFF;
}

static void drop(const struct ddp_xrank *x, struct ddp_xr_diff *d, enum ddp_xr_check check, uint64_t scope,
		 uint64_t round, int rank)
{
	char key[96];
	if (round == DDP_XR_NOROUND)
		return;
	ddp_xr_key(check, scope, round, rank, key, sizeof key);
	ddp_store_delete(x->store, key); /* a key left behind costs memory only */
	d->requests++;
}

static enum ddp_xr_result compare_all(const struct ddp_xrank *x, enum ddp_xr_check check, uint64_t scope,
				      uint64_t round, const void *mine, size_t len, double wait_s,
				      struct ddp_xr_diff *d)
{
	char key[96];
	for (int r = 0; r < x->world; r++) {
		void *val = NULL;
		size_t n = 0;
		if (r == x->rank)
			continue;
		ddp_xr_key(check, scope, round, r, key, sizeof key);
		ddp_result rc = ddp_store_get(x->store, key, &val, &n, wait_s > 0 ? wait_s : 0);
		d->requests++;
		if (rc != DDP_OK) {
			if (wait_s <= 0)
				continue; /* not there yet: it compares with ours */
			d->rank[0] = x->rank;
			d->rank[1] = r;
			d->rc = rc;
			rank_list_add(d->ranks, sizeof d->ranks, r);
			return rc == DDP_ERR_TIMEOUT ? DDP_XR_MISSING : DDP_XR_ERROR;
		}
		d->compared++;
		size_t at = first_diff(mine, len, val, n);
		if (at != SIZE_MAX) {
			enum ddp_xr_result res = set_diff(d, x->rank, mine, len, r, val, n, at);
			free(val);
			return res;
		}
		free(val);
	}
	return DDP_XR_SAME;
}

/* Rank 0: reads every rank's value and builds the verdict (malloc'd). */
static ddp_result judge(const struct ddp_xrank *x, enum ddp_xr_check check, uint64_t scope, uint64_t round,
			const void *mine, size_t len, double wait_s, struct ddp_xr_diff *d,
			unsigned char **out, size_t *outlen)
{
	double deadline = now_s() + (wait_s > 0 ? wait_s : 0);
	char missing[128] = "", differ[128] = "";
	int first_missing = -1, q = -1;
	void *qval = NULL;
	size_t qlen = 0, at = 0;
	for (int r = 1; r < x->world; r++) {
		char key[96];
		void *val = NULL;
		size_t n = 0;
		ddp_xr_key(check, scope, round, r, key, sizeof key);
		double left = deadline - now_s();
		ddp_result rc = ddp_store_get(x->store, key, &val, &n, missing[0] || left < 0 ? 0 : left);
		d->requests++;
		if (rc == DDP_ERR_TIMEOUT) {
			rank_list_add(missing, sizeof missing, r);
			if (first_missing < 0)
				first_missing = r;
			continue;
		}
		if (rc != DDP_OK) {
			free(qval);
			return rc;
		}
		d->compared++;
		size_t a = first_diff(mine, len, val, n);
		if (a != SIZE_MAX) {
			rank_list_add(differ, sizeof differ, r);
			if (q < 0) {
				q = r;
				qval = val;
				qlen = n;
				at = a;
				continue;
			}
		}
		free(val);
	}
	unsigned char *v;
	if (first_missing >= 0) {
		size_t nr = strlen(missing);
		if (!(v = malloc(9 + nr)))
			goto nomem;
		v[0] = 'T';
		ddp_store_put_u32(v + 1, (uint32_t)first_missing);
		ddp_store_put_u32(v + 5, (uint32_t)nr);
		memcpy(v + 9, missing, nr);
		*outlen = 9 + nr;
	} else if (q >= 0) {
		size_t nr = strlen(differ);
		if (!(v = malloc(25 + nr + len + qlen)))
			goto nomem;
		v[0] = 'D';
		ddp_store_put_u32(v + 1, (uint32_t)q);
		ddp_store_put_u64(v + 5, (uint64_t)at);
		ddp_store_put_u32(v + 13, (uint32_t)len);
		ddp_store_put_u32(v + 17, (uint32_t)qlen);
		ddp_store_put_u32(v + 21, (uint32_t)nr);
		memcpy(v + 25, differ, nr);
		if (len)
			memcpy(v + 25 + nr, mine, len);
		if (qlen)
			memcpy(v + 25 + nr + len, qval, qlen);
		*outlen = 25 + nr + len + qlen;
	} else {
		if (!(v = malloc(1)))
			goto nomem;
		v[0] = 'O';
		*outlen = 1;
	}
	free(qval);
	*out = v;
	return DDP_OK;
nomem:
	free(qval);
	return DDP_ERR_NOMEM;
}

/* Every rank: what a verdict says, into d. */
static enum ddp_xr_result read_verdict(const unsigned char *v, size_t n, struct ddp_xr_diff *d)
{
	if (n == 1 && v[0] == 'O')
		return DDP_XR_SAME;
	if (n >= 9 && v[0] == 'T') {
		uint32_t nr = ddp_store_get_u32(v + 5);
		if ((size_t)nr > n - 9)
			goto bad;
		d->rank[0] = 0;
		d->rank[1] = (int)ddp_store_get_u32(v + 1);
		d->rc = DDP_ERR_TIMEOUT;
		snprintf(d->ranks, sizeof d->ranks, "%.*s", (int)nr, (const char *)v + 9);
		return DDP_XR_MISSING;
	}
	if (n >= 25 && v[0] == 'D') {
		uint64_t len0 = ddp_store_get_u32(v + 13), lenq = ddp_store_get_u32(v + 17);
		uint64_t nr = ddp_store_get_u32(v + 21);
		if (nr + len0 + lenq != (uint64_t)(n - 25))
			goto bad;
		snprintf(d->ranks, sizeof d->ranks, "%.*s", (int)nr, (const char *)v + 25);
		return set_diff(d, 0, v + 25 + nr, (size_t)len0, (int)ddp_store_get_u32(v + 1),
				v + 25 + nr + len0, (size_t)lenq, (size_t)ddp_store_get_u64(v + 5));
	}
bad:
	d->rc = DDP_ERR_INTERNAL;
	return DDP_XR_ERROR;
}

enum ddp_xr_result ddp_xrank_compare(const struct ddp_xrank *x, enum ddp_xr_check check, uint64_t scope,
				     uint64_t round, const void *mine, size_t len, enum ddp_xr_mode mode,
				     double wait_s, uint64_t forget, struct ddp_xr_diff *d)
{
	char key[96];
	enum ddp_xr_result res;
	memset(d, 0, sizeof *d);
	d->rank[0] = x->rank;
	if ((unsigned)check >= DDP_XR_NCHECKS || (!mine && len)) {
		d->rc = DDP_ERR_INVALID;
		return DDP_XR_ERROR;
	}
	if (x->world <= 1)
		return DDP_XR_SAME;
	if (!x->store) {
		d->rc = DDP_ERR_INVALID;
		return DDP_XR_ERROR;
	}
	if (mode == DDP_XR_JUDGE && x->rank == 0) {
		unsigned char *v = NULL;
		size_t n = 0;
		d->rc = judge(x, check, scope, round, mine, len, wait_s, d, &v, &n);
		if (d->rc != DDP_OK)
			return DDP_XR_ERROR;
		ddp_xr_key(check, scope, round, -1, key, sizeof key);
		d->rc = ddp_store_set(x->store, key, v, n);
		d->requests++;
		if (d->rc != DDP_OK) {
			free(v);
			return DDP_XR_ERROR;
		}
		drop(x, d, check, scope, forget, -1);
		res = read_verdict(v, n, d);
		free(v);
		return res;
	}
	/* post ours */
	ddp_xr_key(check, scope, round, x->rank, key, sizeof key);
	d->rc = ddp_store_set(x->store, key, mine, len);
	d->requests++;
	if (d->rc != DDP_OK)
		return DDP_XR_ERROR;
	drop(x, d, check, scope, forget, x->rank);
	if (mode == DDP_XR_ALL)
		return compare_all(x, check, scope, round, mine, len, wait_s, d);
	/* JUDGE, not rank 0: rank 0's verdict */
	void *v = NULL;
	size_t n = 0;
	ddp_xr_key(check, scope, round, -1, key, sizeof key);
	d->rc = ddp_store_get(x->store, key, &v, &n, (wait_s > 0 ? wait_s : 0) + 5);
	d->requests++;
	if (d->rc != DDP_OK) {
		d->rank[1] = 0; /* rank 0 gave no verdict */
		snprintf(d->ranks, sizeof d->ranks, "0");
		return d->rc == DDP_ERR_TIMEOUT ? DDP_XR_MISSING : DDP_XR_ERROR;
	}
	d->compared = 1;
	res = read_verdict(v, n, d);
	free(v);
	return res;
}
