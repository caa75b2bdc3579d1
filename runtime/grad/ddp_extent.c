/* SPDX-License-Identifier: MIT
 *
 * ddp_extent.c - a launch's pointer extents from its integer arguments and
 * its grid (the count rule, and the union over a grid-strided launch's
 * instances).  Contract and rules: ddp_extent.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_dtype.h"
#include "ddp_extent.h"
#include "ddp_grad.h"
#include "ddp_log.h"

#define DDP_EXTENT_MAX_ARGS 256

/* Does pointer p hold, in its own elements, some integer argument of the
 * launch above one?  One that holds none (a scalar, a flag, a per-block
 * partial sum smaller than every count) is indexed otherwise: it does not
 * vote on the count.  Its size is no reason: a 32-byte bias holding its 8
 * elements votes like any tensor. */
static int holds_a_count(const struct ddp_extent_ptr *p, const uint64_t *ints, uint32_t nints)
{
	for (uint32_t c = 0; c < nints; c++)
		if (ints[c] > 1 && ints[c] <= p->room / p->esize)
			return 1;
	return 0;
}

/* Does `elems` elements fit every voting pointer (typed, holding some
 * count)?  *any: some pointer voted. */
static int fits_all(const struct ddp_extent_ptr *p, uint32_t np, const uint64_t *ints, uint32_t nints,
		    uint64_t elems, int *any)
{
	*any = 0;
	for (uint32_t j = 0; j < np; j++) {
		if (!p[j].esize || !holds_a_count(&p[j], ints, nints))
			continue;
		*any = 1;
		if (elems > p[j].room / p[j].esize)
			return 0;
	}
	return 1;
}

/* (instances - 1) * s + n, or 0 on overflow */
static uint64_t union_elems(uint64_t instances, uint64_t s, uint64_t n)
{
	uint64_t span;
	if (__builtin_mul_overflow(instances - 1, s, &span) || __builtin_add_overflow(span, n, &span))
		return 0;
	return span;
}

struct ddp_extent_result ddp_extent_bound(const uint64_t *ints, uint32_t nints, const unsigned grid[3],
					  struct ddp_extent_ptr *p, uint32_t np)
{
	struct ddp_extent_result r = { DDP_EXTENT_NONE, 0, 0, 1 };
	uint64_t gy = grid ? grid[1] : 1, gz = grid ? grid[2] : 1;
	int any;

	for (uint32_t j = 0; j < np; j++) {
		p[j].ext = 0;
		p[j].bounded = DDP_GB_NONE;
	}
	/* the count: the largest that fits every voting pointer */
	for (uint32_t c = 0; c < nints; c++)
		if (ints[c] > r.count && fits_all(p, np, ints, nints, ints[c], &any) && any)
			r.count = ints[c];
	if (!r.count)
		return r;
	uint64_t elems = r.count;
	r.rule = DDP_EXTENT_COUNT;
	if (gy > 1 || gz > 1) {
		r.instances = gy * gz;
		r.rule = DDP_EXTENT_GRID_UNKNOWN;
		if (gy > 1 && gz > 1)
			return r;
		/* the stride: another argument of the count's value (the
		 * instances tile [ptr, ptr + I * n)); its union must fit */
		int seen = 0;
		for (uint32_t c = 0; c < nints; c++)
			seen += ints[c] == r.count;
		uint64_t u = union_elems(r.instances, r.count, r.count);
		if (seen < 2 || !u || !fits_all(p, np, ints, nints, u, &any))
			return r;
		r.stride = r.count;
		elems = union_elems(r.instances, r.stride, r.count);
		r.rule = DDP_EXTENT_GRID;
	}
	for (uint32_t j = 0; j < np; j++) {
		if (!p[j].esize || elems > p[j].room / p[j].esize)
			continue;
		p[j].ext = elems * p[j].esize;
		p[j].bounded = DDP_GB_COUNT;
	}
	return r;
}

const char *ddp_extent_rule_name(enum ddp_extent_rule r)
{
	switch (r) {
	case DDP_EXTENT_NONE: return "none";
	case DDP_EXTENT_COUNT: return "count";
	case DDP_EXTENT_GRID: return "grid-strided";
	case DDP_EXTENT_GRID_UNKNOWN: return "grid without a known stride";
	}
	return "?";
}

/* ---- measured extents (ddp_extent.h: "Measured") */

/* NONE: never measured; UNCHANGED: measured, changed nothing from its
 * pointer (a read-only argument passed non-const); COUNT_OK: changed bytes,
 * none beyond the count; then the rules of the arguments */
enum {
	RULE_NONE,
	RULE_UNCHANGED,
	RULE_COUNT_OK,
	RULE_ONE,
	RULE_PRODUCT,
	RULE_2D
};

struct rule {
	uint32_t kid;
	uint16_t param;
	uint8_t form;    /* RULE_*                                    */
	uint8_t a, b, c; /* integer argument positions                */
};

#define RULES_MAX 512
static struct rule rules[RULES_MAX];
static uint32_t nrules;

void ddp_extent_reset(void)
{
	nrules = 0;
}

static struct rule *rule_find(uint32_t kid, uint16_t param, int create)
{
	for (uint32_t i = 0; i < nrules; i++)
		if (rules[i].kid == kid && rules[i].param == param)
			return &rules[i];
	if (!create || nrules == RULES_MAX)
		return NULL;
	struct rule *r = &rules[nrules++];
	memset(r, 0, sizeof *r);
	r->kid = kid;
	r->param = param;
	return r;
}

/* The rule's value for these arguments, in elements (0: cannot be told). */
static uint64_t rule_eval(const struct rule *r, const uint64_t *ints, uint32_t nints)
{
	uint64_t v;
	if (r->a >= nints || r->b >= nints || r->c >= nints)
		return 0;
	switch (r->form) {
	case RULE_ONE: return ints[r->a];
	case RULE_PRODUCT: return __builtin_mul_overflow(ints[r->a], ints[r->b], &v) ? 0 : v;
	case RULE_2D:
		if (!ints[r->a] || __builtin_mul_overflow(ints[r->a] - 1, ints[r->b], &v) ||
		    __builtin_add_overflow(v, ints[r->c], &v))
			return 0;
		return v;
	}
	return 0;
}

static const char *rule_text(const struct rule *r, char *buf, size_t cap)
{
	switch (r->form) {
	case RULE_ONE: snprintf(buf, cap, "integer argument #%u", r->a); break;
	case RULE_PRODUCT: snprintf(buf, cap, "integer arguments #%u x #%u", r->a, r->b); break;
	case RULE_2D: snprintf(buf, cap, "(integer argument #%u - 1) x #%u + #%u", r->a, r->b, r->c); break;
	default: snprintf(buf, cap, "its count"); break;
	}
	return buf;
}

/* A rule of the integer arguments whose value is m elements: one argument,
 * a product of two, (a - 1) * b + c (rows x ld of a 2-D block).  0: none. */
static int rule_fit(struct rule *r, const uint64_t *ints, uint32_t nints, uint64_t m)
{
	static const uint8_t forms[] = { RULE_ONE, RULE_PRODUCT, RULE_2D };
	uint32_t n = nints < 16 ? nints : 16;
	for (size_t f = 0; f < sizeof forms; f++)
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t b = 0; b < (forms[f] == RULE_ONE ? 1 : n); b++)
				for (uint32_t c = 0; c < (forms[f] == RULE_2D ? n : 1); c++) {
					struct rule t = *r;
					t.form = forms[f];
					t.a = (uint8_t)a;
					t.b = (uint8_t)b;
					t.c = (uint8_t)c;
					if (rule_eval(&t, ints, nints) == m) {
						*r = t;
						return 1;
					}
				}
	return 0;
}

static int measurable(const struct ddp_grad_arg *a)
{
	return !a->in_struct && a->bounded == DDP_GB_COUNT && ddp_dtype_size((enum ddp_dtype)a->dtype) &&
	       a->ext;
}

static int alone_in_alloc(const struct ddp_grad_arg *a, uint32_t n, uint32_t i)
{
	for (uint32_t j = 0; j < n; j++)
		if (j != i && a[j].base == a[i].base && a[j].ptr != a[i].ptr)
			return 0;
	return 1;
}

/* Runs the launch on copies of its allocations and puts them back:
 * end[i] = one past the last byte it changed at or after argument i's
 * pointer, in bytes from the pointer (0: unchanged); before_ptr[i] set
 * when it changed bytes of i's allocation before the pointer. */
static ddp_result probe(const struct ddp_grad_arg *a, uint32_t n, const struct ddp_extent_probe *p,
			uint64_t *end, uint8_t *before_ptr)
{
	void **snap = calloc(n ? n : 1, sizeof *snap);
	unsigned char *after = NULL;
	uint64_t maxsz = 1;
	ddp_result rc = DDP_OK;

	if (!snap)
		return DDP_ERR_NOMEM;
	if (p->drain)
		DDP_CHECK_GOTO(p->drain(p->ctx), rc, out);
	for (uint32_t i = 0; i < n; i++) {
		int dup = 0;
		for (uint32_t j = 0; j < i; j++)
			dup |= a[j].base == a[i].base;
		if (dup)
			continue;
		if (a[i].size > maxsz)
			maxsz = a[i].size;
		if (!(snap[i] = malloc(a[i].size ? a[i].size : 1))) {
			rc = DDP_ERR_NOMEM;
			goto out;
		}
		DDP_CHECK_GOTO(p->read(p->ctx, a[i].base, snap[i], a[i].size, p->stream), rc, out);
	}
	if (!(after = malloc(maxsz))) {
		rc = DDP_ERR_NOMEM;
		goto out;
	}
	DDP_CHECK_GOTO(p->relaunch(p->ctx, p->launch_ctx), rc, out);
	for (uint32_t i = 0; i < n; i++) {
		if (!snap[i])
			continue;
		DDP_CHECK_GOTO(p->read(p->ctx, a[i].base, after, a[i].size, p->stream), rc, out);
		const unsigned char *b0 = snap[i];
		for (uint32_t j = i; j < n; j++) {
			if (a[j].base != a[i].base)
				continue;
			uint64_t off = a[j].ptr - a[j].base;
			for (uint64_t k = 0; k < off; k++)
				if (b0[k] != after[k]) {
					before_ptr[j] = 1;
					break;
				}
			for (uint64_t k = a[i].size; k > off; k--)
				if (b0[k - 1] != after[k - 1]) {
					end[j] = k - off;
					break;
				}
		}
		DDP_CHECK_GOTO(p->write(p->ctx, a[i].base, snap[i], a[i].size, p->stream), rc, out);
	}
out:
	free(after);
	for (uint32_t i = 0; i < n; i++)
		free(snap[i]);
	free(snap);
	return rc;
}

ddp_result ddp_extent_measured(uint32_t kid, const char *kname, const uint64_t *ints, uint32_t nints,
			       struct ddp_grad_arg *a, uint32_t n, int measure,
			       const struct ddp_extent_probe *p, char *msg, size_t cap)
{
	static uint64_t end[DDP_EXTENT_MAX_ARGS], count[DDP_EXTENT_MAX_ARGS];
	static uint8_t before_ptr[DDP_EXTENT_MAX_ARGS], learned[DDP_EXTENT_MAX_ARGS];
	char rt[96];
	int any = 0;
	ddp_result rc;

	if (n > DDP_EXTENT_MAX_ARGS)
		n = DDP_EXTENT_MAX_ARGS;
	for (uint32_t i = 0; i < n; i++) {
		size_t es = ddp_dtype_size((enum ddp_dtype)a[i].dtype);
		count[i] = measurable(&a[i]) ? a[i].ext / es : 0;
		any |= count[i] != 0;
		end[i] = 0;
		before_ptr[i] = 0;
		learned[i] = 0;
	}
	if (!any)
		return DDP_OK;
	/* an argument never measured is measured now, whatever the step */
	for (uint32_t i = 0; i < n && !measure; i++)
		if (count[i] && a[i].access != DDP_GA_READ && alone_in_alloc(a, n, i) &&
		    !rule_find(kid, a[i].param, 0))
			measure = 1;
	if (measure) {
		if ((rc = probe(a, n, p, end, before_ptr)) != DDP_OK) {
			snprintf(msg, cap, "libddp: measuring the extents of %s failed (%s)", kname,
				 ddp_strerror(rc));
			return rc;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		/* a const pointer is read-only by its signature: it takes a
		 * written one's extent below, whatever else changes its bytes */
		if (!count[i] || a[i].access == DDP_GA_READ || !alone_in_alloc(a, n, i))
			continue;
		size_t es = ddp_dtype_size((enum ddp_dtype)a[i].dtype);
		uint64_t room = (a[i].size - (a[i].ptr - a[i].base)) / es;
		struct rule *r = rule_find(kid, a[i].param, measure);
		uint64_t m = (end[i] + es - 1) / es, v = 0;
		if (measure && before_ptr[i]) {
			snprintf(msg, cap,
				 "libddp: optimizer kernel %s wrote bytes before its argument %u's address in the "
				 "calibration run: the extent of what it updates cannot be known, so its gradients cannot "
				 "be found and the job stops",
				 kname, a[i].param);
			return DDP_ERR_UNSUPPORTED;
		}
		if (!r) {
			snprintf(msg, cap,
				 "libddp: optimizer kernel %s: more than %d optimizer arguments to measure; the "
				 "extent of argument %u cannot be checked, so the job stops",
				 kname, RULES_MAX, a[i].param);
			return DDP_ERR_UNSUPPORTED;
		}
		if (measure && r->form > RULE_COUNT_OK && (v = rule_eval(r, ints, nints)) < m) {
			snprintf(msg, cap,
				 "libddp: optimizer kernel %s changed %" PRIu64 " elements from its argument %u, "
				 "where the rule learned in an earlier calibration run (%s) gives %" PRIu64
				 ": the extent "
				 "of what it updates is not known, so its gradients cannot be bounded and the job stops",
				 kname, m, a[i].param, rule_text(r, rt, sizeof rt), v);
			return DDP_ERR_UNSUPPORTED;
		}
		if (measure && m > count[i] && r->form <= RULE_COUNT_OK) {
			if (!rule_fit(r, ints, nints, m)) {
				snprintf(msg, cap,
					 "libddp: optimizer kernel %s changed %" PRIu64
					 " elements from its argument "
					 "%u, more than its count argument (%" PRIu64
					 ") says, and no rule of its integer "
					 "arguments gives that extent: its gradients cannot be bounded, so the job stops",
					 kname, m, a[i].param, count[i]);
				return DDP_ERR_UNSUPPORTED;
			}
			DDP_INFO(GRAD,
				 "%s argument %u: changed %" PRIu64
				 " elements where its count argument says %" PRIu64
				 "; its extent is %s (measured, checked at each calibration launch)",
				 kname, a[i].param, m, count[i], rule_text(r, rt, sizeof rt));
		} else if (measure && r->form <= RULE_UNCHANGED) {
			/* the count stands (checked at each calibration launch) */
			r->form = m ? RULE_COUNT_OK : RULE_UNCHANGED;
		}
		if (r->form <= RULE_COUNT_OK) {
			/* the count stands: nothing beyond it changed (nothing
			 * at all for a pointer the launch only reads, passed
			 * non-const: it may still take a rule below) */
			a[i].bounded = DDP_GB_MEASURED;
			learned[i] = r->form == RULE_COUNT_OK;
			continue;
		}
		v = rule_eval(r, ints, nints);
		if (!v || v > room) {
			snprintf(msg, cap,
				 "libddp: optimizer kernel %s argument %u: its measured extent (%s = %" PRIu64
				 " elements) does not fit its allocation (%" PRIu64
				 " left): its gradients cannot be "
				 "bounded, so the job stops",
				 kname, a[i].param, rule_text(r, rt, sizeof rt), v, room);
			return DDP_ERR_UNSUPPORTED;
		}
		a[i].ext = v * es;
		a[i].bounded = DDP_GB_MEASURED;
		learned[i] = 1;
	}
	/* read-only (or unchanged) pointers with a measured written one's count
	 * take its extent in their own element size (one with a rule first) */
	for (uint32_t j = 0; j < n; j++) {
		if (!count[j] || learned[j] || (measure && end[j] && a[j].access != DDP_GA_READ))
			continue;
		uint32_t best = n;
		for (uint32_t i = 0; i < n; i++)
			if (i != j && a[i].bounded == DDP_GB_MEASURED && a[i].access != DDP_GA_READ &&
			    count[i] == count[j] && (best == n || (learned[i] && !learned[best])))
				best = i;
		if (best == n)
			continue;
		size_t ei = ddp_dtype_size((enum ddp_dtype)a[best].dtype),
		       ej = ddp_dtype_size((enum ddp_dtype)a[j].dtype);
		uint64_t v = a[best].ext / ei;
		if (v > (a[j].size - (a[j].ptr - a[j].base)) / ej)
			continue;
		a[j].ext = v * ej;
		a[j].bounded = DDP_GB_MEASURED;
	}
	return DDP_OK;
}
