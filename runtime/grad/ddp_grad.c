/* SPDX-License-Identifier: MIT
 *
 * ddp_grad.c - the step and gradient tracker (see ddp_grad.h for the rules).
 *
 * Data: an array of buffer records (each malloc'd once, so pointers handed
 * to callbacks stay valid) and an open-addressing hash from allocation base
 * to record index.  A record whose allocation id no longer matches the
 * launch's (the address was freed and reused) is reset before use.
 *
 * Contract: the caller serialises every call (ddp_sync.c holds a mutex).
 * Allocation happens only when a new buffer or kernel is learned.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_grad.h"
#include "ddp_log.h"

#define GRAD_MIN_BYTES 64        /* a G allocation is larger than this     */
#define GRAD_MAX_ARGS 512

struct ddp_grad {
	struct ddp_grad_ops ops;
	enum ddp_dtype override;         /* DDP_GRAD_DTYPE, or UNKNOWN           */
	struct ddp_grad_buf **bufs;      /* records, in creation order           */
	size_t nbufs, cap;
	int64_t *hash;                   /* index+1 per slot, 0 = empty          */
	size_t hmask;
	uint32_t ngrad_order, nparam_order;
	int in_update;                   /* inside a step's optimizer launches   */
	uint64_t steps;                  /* steps begun                          */
	uint64_t steps_done;             /* steps ended                          */
	uint64_t reductions;
	char err[512];
};

const char *const ddp_grad_opt_builtin[] = {
	"adam", "sgd", "momentum", "lamb", "lion", "adagrad", "rmsprop", "adadelta",
	"multi_tensor_apply", "fused_adam", "fusedadam", "optimizer", NULL,
};
const char *const ddp_grad_reader_builtin[] = {
	"unscale", "non_finite", "nonfinite", "found_inf", "inf_check", "check_inf",
	"grad_norm", "global_norm", "clip_grad", "lpnorm", "l2norm", NULL,
};

static ddp_result fail(struct ddp_grad *g, ddp_result rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static ddp_result fail(struct ddp_grad *g, ddp_result rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->err, sizeof g->err, fmt, ap);
	va_end(ap);
	return rc;
}

static int ci_contains(const char *hay, const char *needle, size_t nlen)
{
	if (!nlen)
		return 0;
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < nlen && hay[i] &&
		       tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == nlen)
			return 1;
	}
	return 0;
}

/* Does name contain one of the comma-separated words of list? */
static int list_matches(const char *name, const char *list)
{
	while (list && *list) {
		const char *end = strchr(list, ',');
		size_t n = end ? (size_t)(end - list) : strlen(list);
		while (n && isspace((unsigned char)*list)) {
			list++;
			n--;
		}
		while (n && isspace((unsigned char)list[n - 1]))
			n--;
		if (ci_contains(name, list, n))
			return 1;
		list = end ? end + 1 : NULL;
	}
	return 0;
}

int ddp_grad_name_matches(const char *name, const char *const *builtin, const char *setting)
{
	if (!name)
		return 0;
	int replace = setting && *setting && *setting != '+';
	if (!replace)
		for (size_t i = 0; builtin[i]; i++)
			if (ci_contains(name, builtin[i], strlen(builtin[i])))
				return 1;
	if (setting && *setting)
		return list_matches(name, *setting == '+' ? setting + 1 : setting);
	return 0;
}

enum ddp_grad_kclass ddp_grad_classify(const char *name, const char *opt_setting,
				       const char *reader_setting)
{
	if (ddp_grad_name_matches(name, ddp_grad_reader_builtin, reader_setting))
		return DDP_GK_READER;
	if (ddp_grad_name_matches(name, ddp_grad_opt_builtin, opt_setting))
		return DDP_GK_OPT;
	return DDP_GK_OTHER;
}

/* ---- the buffer table */

static size_t hash_base(uint64_t b)
{
	b ^= b >> 33;
	b *= 0xff51afd7ed558ccdULL;
	b ^= b >> 33;
	return (size_t)b;
}

static int64_t *hash_slot(const struct ddp_grad *g, uint64_t base)
{
	for (size_t i = hash_base(base) & g->hmask;; i = (i + 1) & g->hmask) {
		int64_t v = g->hash[i];
		if (!v || g->bufs[v - 1]->base == base)
			return &g->hash[i];
	}
}

static struct ddp_grad_buf *buf_find(const struct ddp_grad *g, uint64_t base, uint32_t alloc_id)
{
	int64_t v = *hash_slot(g, base);
	if (!v)
		return NULL;
	struct ddp_grad_buf *b = g->bufs[v - 1];
	if (b->alloc_id != alloc_id) {
		/* the address was freed and reused: a different buffer now */
		uint64_t base0 = b->base;
		memset(b, 0, sizeof *b);
		b->base = base0;
		b->alloc_id = alloc_id;
	}
	return b;
}

static ddp_result hash_grow(struct ddp_grad *g)
{
	size_t n = (g->hmask + 1) * 2;
	int64_t *h = calloc(n, sizeof *h);
	if (!h)
		return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	free(g->hash);
	g->hash = h;
	g->hmask = n - 1;
	for (size_t i = 0; i < g->nbufs; i++)
		*hash_slot(g, g->bufs[i]->base) = (int64_t)i + 1;
	return DDP_OK;
}

static struct ddp_grad_buf *buf_get(struct ddp_grad *g, const struct ddp_grad_arg *a)
{
	struct ddp_grad_buf *b = buf_find(g, a->base, a->alloc_id);
	if (b) {
		b->size = a->size;
		return b;
	}
	if ((g->nbufs + 1) * 2 > g->hmask + 1 && hash_grow(g) != DDP_OK)
		return NULL;
	if (g->nbufs == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 64;
		struct ddp_grad_buf **nb = realloc(g->bufs, nc * sizeof *nb);
		if (!nb)
			return NULL;
		g->bufs = nb;
		g->cap = nc;
	}
	if (!(b = calloc(1, sizeof *b)))
		return NULL;
	b->base = a->base;
	b->size = a->size;
	b->alloc_id = a->alloc_id;
	g->bufs[g->nbufs++] = b;
	*hash_slot(g, a->base) = (int64_t)g->nbufs;
	return b;
}

ddp_result ddp_grad_new(const struct ddp_grad_ops *ops, enum ddp_dtype dtype_override,
			struct ddp_grad **out)
{
	if (dtype_override != DDP_DT_UNKNOWN && !ddp_dtype_reducible(dtype_override))
		return DDP_ERR_INVALID;
	struct ddp_grad *g = calloc(1, sizeof *g);
	if (!g)
		return DDP_ERR_NOMEM;
	g->ops = *ops;
	g->override = dtype_override;
	g->hmask = 255;
	if (!(g->hash = calloc(g->hmask + 1, sizeof *g->hash))) {
		free(g);
		return DDP_ERR_NOMEM;
	}
	*out = g;
	return DDP_OK;
}

void ddp_grad_free(struct ddp_grad *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nbufs; i++)
		free(g->bufs[i]);
	free(g->bufs);
	free(g->hash);
	free(g);
}

/* The record of a buffer whose allocation is gone: it stays in the table
 * (its base keeps its hash slot) as nothing. */
static void buf_reset(struct ddp_grad_buf *b)
{
	uint64_t base = b->base;
	memset(b, 0, sizeof *b);
	b->base = base;
}

void ddp_grad_forget(struct ddp_grad *g, uint64_t base)
{
	int64_t v = *hash_slot(g, base);
	if (v)
		buf_reset(g->bufs[v - 1]);
}

size_t ddp_grad_nbufs(const struct ddp_grad *g) { return g->nbufs; }
struct ddp_grad_buf *ddp_grad_buf_at(struct ddp_grad *g, size_t i) { return i < g->nbufs ? g->bufs[i] : NULL; }
uint64_t ddp_grad_steps(const struct ddp_grad *g) { return g->steps; }
uint64_t ddp_grad_reductions(const struct ddp_grad *g) { return g->reductions; }
const char *ddp_grad_last_error(const struct ddp_grad *g) { return g->err; }

int ddp_grad_active(const struct ddp_grad *g)
{
	return g->ngrad_order > 0 || g->in_update;
}

/* ---- actions */

static int cmp_order(const void *a, const void *b)
{
	const struct ddp_grad_buf *x = *(struct ddp_grad_buf *const *)a;
	const struct ddp_grad_buf *y = *(struct ddp_grad_buf *const *)b;
	return (x->order > y->order) - (x->order < y->order);
}

/* Averages every dirty G, in order of first appearance. */
static ddp_result reduce_dirty(struct ddp_grad *g, void *stream)
{
	struct ddp_grad_buf **list = malloc((g->nbufs ? g->nbufs : 1) * sizeof *list);
	size_t n = 0;
	ddp_result rc = DDP_OK;

	if (!list)
		return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
	for (size_t i = 0; i < g->nbufs; i++) {
		struct ddp_grad_buf *b = g->bufs[i];
		if (b->role != DDP_GR_GRAD || !b->dirty)
			continue;
		/* freed since it was written: nothing to average (the address
		 * may belong to another allocation by now) */
		if (g->ops.alive && !g->ops.alive(g->ops.ctx, b)) {
			DDP_DEBUG(GRAD, "gradient %s at 0x%llx was freed: forgotten", b->label,
				  (unsigned long long)b->base);
			buf_reset(b);
			continue;
		}
		list[n++] = b;
	}
	if (n) {
		qsort(list, n, sizeof *list, cmp_order);
		rc = g->ops.allreduce(g->ops.ctx, list, n, stream);
		if (rc == DDP_OK) {
			for (size_t i = 0; i < n; i++)
				list[i]->dirty = 0;
			g->reductions++;
		} else if (!g->err[0]) {
			fail(g, rc, "gradient allreduce failed");
		}
	}
	free(list);
	return rc;
}

static ddp_result end_update(struct ddp_grad *g)
{
	if (!g->in_update)
		return DDP_OK;
	g->in_update = 0;
	g->steps_done++;
	if (g->steps_done == 1 && g->ngrad_order == 0)
		return fail(g, DDP_ERR_UNSUPPORTED,
			    "libddp: the first optimizer step ran but no gradient buffer was found among the optimizer's "
			    "arguments; gradients cannot be averaged (see docs/gradient-sync.md: DDP_OPT_KERNELS, "
			    "DDP_GRAD_READER_KERNELS, DDP_GRAD_DTYPE)");
	if (g->steps_done == 1)
		for (size_t i = 0; i < g->nbufs; i++) {
			struct ddp_grad_buf *b = g->bufs[i];
			if (b->role == DDP_GR_GRAD && b->from_reader && !b->confirmed)
				DDP_WARN("%s (%llu bytes) was averaged as a gradient at a reader launch but no "
					 "optimizer launch read it in step 1; it stays a gradient",
					 b->label, (unsigned long long)b->size);
		}
	if (g->ops.step_end)
		return g->ops.step_end(g->ops.ctx, g->steps);
	return DDP_OK;
}

static void set_label(struct ddp_grad_buf *b, const struct ddp_grad_launch *L,
		      const struct ddp_grad_arg *a)
{
	if (b->label[0])
		return;
	if (a->in_struct)
		snprintf(b->label, sizeof b->label, "%.40s:%u.%u", L->kname ? L->kname : "?",
			 a->param, a->word);
	else
		snprintf(b->label, sizeof b->label, "%.40s:%u", L->kname ? L->kname : "?", a->param);
}

/* The element type of a gradient passed as a: the override, else the
 * pointee's type, else the kernel's template type; a type the collectives
 * cannot average counts as unknown (DDP_DT_UNKNOWN). */
static enum ddp_dtype grad_dtype(const struct ddp_grad *g, const struct ddp_grad_launch *L,
				 const struct ddp_grad_arg *a)
{
	if (g->override != DDP_DT_UNKNOWN)
		return g->override;
	if (!a->in_struct && ddp_dtype_reducible((enum ddp_dtype)a->dtype))
		return (enum ddp_dtype)a->dtype;
	if (ddp_dtype_reducible((enum ddp_dtype)L->template_dtype))
		return (enum ddp_dtype)L->template_dtype;
	return DDP_DT_UNKNOWN;
}

/* Makes b a gradient (learned now). */
static ddp_result make_grad(struct ddp_grad *g, const struct ddp_grad_launch *L,
			    const struct ddp_grad_arg *a, struct ddp_grad_buf *b, int from_reader)
{
	enum ddp_dtype t = grad_dtype(g, L, a);
	size_t es = ddp_dtype_size(t);
	if (!es)
		return fail(g, DDP_ERR_UNSUPPORTED,
			    "libddp: cannot tell the element type of the gradient passed as parameter %u of kernel %s "
			    "(allocation of %llu bytes); set DDP_GRAD_DTYPE=f32|f16|bf16 (never reduced as guessed bytes)",
			    a->param, L->kname ? L->kname : "?", (unsigned long long)a->size);
	b->role = DDP_GR_GRAD;
	b->dtype = (uint8_t)t;
	b->count = a->size / es;
	b->dirty = 1;
	b->from_reader = (uint8_t)from_reader;
	b->confirmed = (uint8_t)!from_reader;
	b->order = g->ngrad_order++;
	set_label(b, L, a);
	DDP_INFO(GRAD, "gradient #%u: %s, %llu bytes at 0x%llx, %s x %llu (learned at %s launch)", b->order,
		 b->label, (unsigned long long)b->size, (unsigned long long)b->base,
		 ddp_dtype_name(t), (unsigned long long)b->count, from_reader ? "a reader" : "an optimizer");
	return DDP_OK;
}

static void make_param(struct ddp_grad *g, const struct ddp_grad_launch *L,
		       const struct ddp_grad_arg *a, struct ddp_grad_buf *b)
{
	if (b->role == DDP_GR_GRAD)
		DDP_WARN("%s was taken for a gradient at a reader launch but %s writes it: "
			 "treating it as a parameter from now on", b->label, L->kname ? L->kname : "?");
	b->role = DDP_GR_PARAM;
	b->dirty = 0;
	b->order = g->nparam_order++;
	b->label[0] = '\0';
	set_label(b, L, a);
	DDP_DEBUG(GRAD, "parameter/state #%u: %s, %llu bytes at 0x%llx", b->order, b->label,
		  (unsigned long long)b->size, (unsigned long long)b->base);
}

/* Does an allocation of `size` bytes with gradient dtype t pair with a
 * parameter of the same element count (fp32 master or same type)? */
static int pairs_with_param(const struct ddp_grad *g, const struct ddp_grad_launch *L,
			    const struct ddp_grad_arg *a, const uint8_t *is_param)
{
	enum ddp_dtype t = grad_dtype(g, L, a);
	size_t es = ddp_dtype_size(t);
	uint64_t count = es ? a->size / es : 0;
	for (uint32_t i = 0; i < L->nargs; i++) {
		if (!is_param[i])
			continue;
		uint64_t ps = L->args[i].size;
		/* unknown dtype: same bytes, or half (f16/bf16 against fp32 master
		 * weights); make_grad then refuses with the setting to use */
		if (es ? (ps == count * 4 || ps == count * 2) : (ps == a->size || ps == 2 * a->size))
			return 1;
	}
	return 0;
}

/* Runs the launch once on snapshots of its buffers to see what it writes,
 * then puts every buffer back.  changed[i] = 1 for args whose allocation
 * changed. */
static ddp_result calibrate(struct ddp_grad *g, const struct ddp_grad_launch *L, uint8_t *changed)
{
	void **before = calloc(L->nargs, sizeof *before);
	void *after = NULL;
	uint64_t maxsz = 0;
	ddp_result rc = DDP_OK;

	if (!before)
		return fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
	for (uint32_t i = 0; i < L->nargs; i++) {
		int dup = 0;
		for (uint32_t j = 0; j < i; j++)
			dup |= L->args[j].base == L->args[i].base;
		if (dup)
			continue;
		if (L->args[i].size > maxsz)
			maxsz = L->args[i].size;
		if (!(before[i] = malloc(L->args[i].size))) {
			rc = fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
			goto out_free;
		}
		DDP_CHECK_GOTO(g->ops.read(g->ops.ctx, L->args[i].base, before[i], L->args[i].size, L->stream),
			       rc, out_free);
	}
	if (!(after = malloc(maxsz ? maxsz : 1))) {
		rc = fail(g, DDP_ERR_NOMEM, "out of memory (calibration)");
		goto out_free;
	}
	DDP_CHECK_GOTO(g->ops.relaunch(g->ops.ctx, L->launch_ctx), rc, out_free);
	for (uint32_t i = 0; i < L->nargs; i++) {
		if (!before[i])
			continue;
		DDP_CHECK_GOTO(g->ops.read(g->ops.ctx, L->args[i].base, after, L->args[i].size, L->stream),
			       rc, out_free);
		if (memcmp(before[i], after, L->args[i].size) != 0) {
			for (uint32_t j = i; j < L->nargs; j++)
				if (L->args[j].base == L->args[i].base)
					changed[j] = 1;
			DDP_CHECK_GOTO(g->ops.write(g->ops.ctx, L->args[i].base, before[i], L->args[i].size,
						    L->stream), rc, out_free);
		}
	}
	DDP_INFO(GRAD, "calibrated %s: ran its first launch on copies to see which buffers it writes",
		 L->kname ? L->kname : "?");
out_free:
	free(after);
	for (uint32_t i = 0; i < L->nargs; i++)
		free(before[i]);
	free(before);
	if (rc != DDP_OK && !g->err[0])
		fail(g, rc, "libddp: calibration of %s failed (%s)", L->kname ? L->kname : "?", ddp_strerror(rc));
	return rc;
}

static ddp_result on_other(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	DDP_CHECK(end_update(g));
	if (!g->ngrad_order)
		return DDP_OK;
	if (L->truncated) {
		/* arguments beyond the decoder's capacity may write gradients: take
		 * every gradient as written (re-averaging an average is a no-op) */
		for (size_t i = 0; i < g->nbufs; i++)
			if (g->bufs[i]->role == DDP_GR_GRAD)
				g->bufs[i]->dirty = 1;
		return DDP_OK;
	}
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (a->access == DDP_GA_READ)
			continue;
		struct ddp_grad_buf *b = buf_find(g, a->base, a->alloc_id);
		if (b && b->role == DDP_GR_GRAD)
			b->dirty = 1;
	}
	return DDP_OK;
}

static ddp_result on_reader(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	int need = 0;
	DDP_CHECK(end_update(g));
	for (uint32_t i = 0; i < L->nargs; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		struct ddp_grad_buf *b = buf_find(g, a->base, a->alloc_id);
		if (b && b->role == DDP_GR_GRAD) {
			need |= b->dirty;
			continue;
		}
		/* before the first step ends: the reader reveals the gradients */
		if (g->steps_done == 0 && a->size > GRAD_MIN_BYTES && (!b || b->role == DDP_GR_NONE)) {
			if (!(b = buf_get(g, a)))
				return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
			DDP_CHECK(make_grad(g, L, a, b, 1));
			need = 1;
		}
	}
	return need ? reduce_dirty(g, L->stream) : DDP_OK;
}

static ddp_result on_optimizer(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	uint8_t is_param[GRAD_MAX_ARGS] = { 0 }, is_grad[GRAD_MAX_ARGS] = { 0 };
	uint8_t changed[GRAD_MAX_ARGS] = { 0 };
	uint32_t n = L->nargs < GRAD_MAX_ARGS ? L->nargs : GRAD_MAX_ARGS;
	int need_cal = 0;
	ddp_result rc;

	if (!g->in_update) {
		g->in_update = 1;
		g->steps++;
		if (g->ops.step_begin)
			DDP_CHECK(g->ops.step_begin(g->ops.ctx, g->steps));
	}
	/* what is known already, what the signature says, what needs calibration */
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		struct ddp_grad_buf *b = buf_find(g, a->base, a->alloc_id);
		if (b && b->role == DDP_GR_OTHER)
			continue;
		if (b && b->role == DDP_GR_PARAM)
			is_param[i] = 1;
		else if (b && b->role == DDP_GR_GRAD && b->confirmed)
			is_grad[i] = 1;
		else if (!a->in_struct && a->access == DDP_GA_WRITE)
			is_param[i] = 1;
		else if (a->in_struct || a->access == DDP_GA_UNKNOWN)
			need_cal = 1;
	}
	if (need_cal) {
		/* untyped or in-struct buffers never seen: calibrate this launch */
		if (!g->ops.relaunch)
			return fail(g, DDP_ERR_UNSUPPORTED, "libddp: %s passes untyped buffers and cannot be calibrated",
				    L->kname ? L->kname : "?");
		DDP_CHECK(calibrate(g, L, changed));
		for (uint32_t i = 0; i < n; i++) {
			const struct ddp_grad_arg *a = &L->args[i];
			if (!is_param[i] && !is_grad[i] && (a->in_struct || a->access == DDP_GA_UNKNOWN) && changed[i])
				is_param[i] = 1;
		}
	}
	/* gradients: read-only, large, paired with a parameter */
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (is_param[i] || is_grad[i] || a->size <= GRAD_MIN_BYTES)
			continue;
		if (a->access == DDP_GA_READ || a->in_struct || a->access == DDP_GA_UNKNOWN) {
			if (pairs_with_param(g, L, a, is_param))
				is_grad[i] = 1;
		}
	}
	/* learn, and collect first-time parameters for the broadcast */
	struct ddp_grad_buf *bc[GRAD_MAX_ARGS];
	size_t nbc = 0;
	int need = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct ddp_grad_arg *a = &L->args[i];
		if (!is_param[i] && !is_grad[i]) {
			/* an untyped buffer judged neither: remember, so that it is
			 * not calibrated again */
			if ((a->in_struct || a->access == DDP_GA_UNKNOWN) && need_cal) {
				struct ddp_grad_buf *b = buf_get(g, a);
				if (!b)
					return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
				if (b->role == DDP_GR_NONE)
					b->role = DDP_GR_OTHER;
			}
			continue;
		}
		struct ddp_grad_buf *b = buf_get(g, a);
		if (!b)
			return fail(g, DDP_ERR_NOMEM, "out of memory (gradient tracker)");
		if (is_param[i]) {
			if (b->role != DDP_GR_PARAM)
				make_param(g, L, a, b);
			if (!b->bcast_done) {
				int dup = 0;
				for (size_t j = 0; j < nbc; j++)
					dup |= bc[j] == b;
				if (!dup)
					bc[nbc++] = b;
			}
		} else {
			if (b->role != DDP_GR_GRAD)
				DDP_CHECK(make_grad(g, L, a, b, 0));
			b->confirmed = 1;
			need |= b->dirty;
		}
	}
	if (nbc) {
		qsort(bc, nbc, sizeof *bc, cmp_order);
		rc = g->ops.broadcast(g->ops.ctx, bc, nbc, L->stream);
		if (rc != DDP_OK)
			return g->err[0] ? rc : fail(g, rc, "parameter broadcast failed");
		for (size_t j = 0; j < nbc; j++)
			bc[j]->bcast_done = 1;
	}
	return need ? reduce_dirty(g, L->stream) : DDP_OK;
}

ddp_result ddp_grad_launch(struct ddp_grad *g, const struct ddp_grad_launch *L)
{
	if (L->truncated && L->kclass != DDP_GK_OTHER)
		return fail(g, DDP_ERR_UNSUPPORTED,
			    "libddp: %s kernel %s passes more buffers than libddp can decode (%u beyond the first "
			    "%u); its gradients and parameters cannot all be seen, so they cannot be averaged",
			    L->kclass == DDP_GK_OPT ? "optimizer" : "gradient-reader", L->kname ? L->kname : "?",
			    L->truncated, L->nargs);
	switch (L->kclass) {
	case DDP_GK_OPT:
		return on_optimizer(g, L);
	case DDP_GK_READER:
		return on_reader(g, L);
	default:
		return on_other(g, L);
	}
}

/* ---- signatures */

#define SIG_FNV_INIT 0xcbf29ce484222325ULL

static uint64_t sig_fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

size_t ddp_grad_signature(char *out, size_t cap, struct ddp_grad_buf *const *bufs, size_t n, int grads,
			  uint64_t *hash)
{
	/* room kept for the tail " ...+K more fnv=<16 hex>" */
	const size_t tail = 64;
	char item[160];
	size_t o = 0, skipped = 0;
	uint64_t h = SIG_FNV_INIT;

	if (!out || cap < 2 * tail) {
		if (out && cap)
			out[0] = '\0';
		return 0;
	}
	int k = snprintf(item, sizeof item, "n=%zu", n);
	h = sig_fnv(h, item, (size_t)k);
	memcpy(out, item, (size_t)k + 1);
	o = (size_t)k;
	for (size_t i = 0; i < n; i++) {
		if (grads)
			k = snprintf(item, sizeof item, " %s %s count=%llu;", bufs[i]->label,
				     ddp_dtype_name((enum ddp_dtype)bufs[i]->dtype), (unsigned long long)bufs[i]->count);
		else
			k = snprintf(item, sizeof item, " %s bytes=%llu;", bufs[i]->label,
				     (unsigned long long)bufs[i]->size);
		size_t len = (size_t)k < sizeof item ? (size_t)k : sizeof item - 1;
		h = sig_fnv(h, item, len);
		if (!skipped && o + len + tail < cap) {
			memcpy(out + o, item, len + 1);
			o += len;
		} else {
			skipped++;
		}
	}
	if (skipped)
		o += (size_t)snprintf(out + o, cap - o, " ...+%zu more fnv=%016llx", skipped, (unsigned long long)h);
	if (hash)
		*hash = h;
	return o;
}

ddp_result ddp_grad_finish(struct ddp_grad *g)
{
	return end_update(g);
}
