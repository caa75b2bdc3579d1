/* SPDX-License-Identifier: MIT
 *
 * test_grad.c - the step and gradient tracker (runtime/grad/ddp_grad.c) on
 * synthetic launch sequences: "device" buffers are host arrays, the
 * callbacks record what the tracker asked for (allreduce / broadcast lists
 * by label, relaunches) in a log string, and the expectations are written
 * by hand from the rules in ddp_grad.h.
 */
#define CHECK_MAIN
#include "check.h"
#include "ddp_grad.h"

#define N 64 /* floats per tensor */

static char evlog[8192];
static int relaunches;
static void (*relaunch_fn)(void);

static void logf_(const char *s)
{
	strncat(evlog, s, sizeof evlog - strlen(evlog) - 1);
}

static void log_list(const char *kind, struct ddp_grad_buf *const *b, size_t n)
{
	logf_(kind);
	logf_("[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			logf_(",");
		logf_(b[i]->label);
	}
	logf_("]");
}

static ddp_result m_allreduce(void *ctx, struct ddp_grad_buf *const *b, size_t n, void *s)
{
	(void)ctx, (void)s;
	log_list("AR", b, n);
	return DDP_OK;
}

static ddp_result m_broadcast(void *ctx, struct ddp_grad_buf *const *b, size_t n, void *s)
{
	(void)ctx, (void)s;
	log_list("BC", b, n);
	return DDP_OK;
}

static ddp_result m_read(void *ctx, uint64_t dev, void *host, size_t bytes, void *s)
{
	(void)ctx, (void)s;
	memcpy(host, (void *)(uintptr_t)dev, bytes);
	return DDP_OK;
}

static ddp_result m_write(void *ctx, uint64_t dev, const void *host, size_t bytes, void *s)
{
	(void)ctx, (void)s;
	memcpy((void *)(uintptr_t)dev, host, bytes);
	return DDP_OK;
}

static ddp_result m_relaunch(void *ctx, void *lctx)
{
	(void)ctx, (void)lctx;
	relaunches++;
	if (relaunch_fn)
		relaunch_fn();
	return DDP_OK;
}

static ddp_result m_step_end(void *ctx, uint64_t step)
{
	char b[32];
	(void)ctx;
	snprintf(b, sizeof b, "|E%llu|", (unsigned long long)step);
	logf_(b);
	return DDP_OK;
}

static const struct ddp_grad_ops ops = {
	.read = m_read,
	.write = m_write,
	.relaunch = m_relaunch,
};

/* The host executor (ddp_plan.h): a plan as the event log -- AR[ranges],
 * BC[ranges], |E<step>|, and copies and reads where a test asks for them. */
static ddp_result (*exec_copy)(void *ctx, uint64_t dst, uint64_t src, uint64_t bytes, void *st);
static ddp_result (*exec_reads)(void *ctx, const struct ddp_grad_launch *Lc, uint64_t step,
				const struct ddp_grad_read *r, size_t n);

static ddp_result host_exec(const struct ddp_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct ddp_plan_item *it = &p->items[i];
		struct ddp_grad_buf *const *b = p->bufs + it->first;
		ddp_result rc = DDP_OK;
		switch (it->kind) {
		case DDP_PLAN_STEP_END: rc = m_step_end(NULL, it->step); break;
		case DDP_PLAN_BROADCAST: rc = m_broadcast(NULL, b, it->n, p->stream); break;
		case DDP_PLAN_REDUCE: rc = m_allreduce(NULL, b, it->n, p->stream); break;
		case DDP_PLAN_COPY:
			if (exec_copy)
				rc = exec_copy(NULL, it->lo, it->hi, it->bytes, p->stream);
			break;
		case DDP_PLAN_READS:
			if (exec_reads)
				rc = exec_reads(NULL, p->L, it->step, p->reads + it->first, it->n);
			break;
		default: break;
		}
		if (rc != DDP_OK)
			return rc;
	}
	return DDP_OK;
}

/* ddp_grad_launch, then its plan carried out */
static ddp_result launch(struct ddp_grad *g, const struct ddp_grad_launch *l)
{
	const struct ddp_plan *p = NULL;
	ddp_result rc = ddp_grad_launch(g, l, &p);
	REQUIRE(p != NULL);
	if (rc == DDP_OK)
		rc = host_exec(p);
	return rc;
}

static struct ddp_grad *fresh(enum ddp_dtype ov)
{
	struct ddp_grad *g = NULL;
	evlog[0] = '\0';
	relaunches = 0;
	relaunch_fn = NULL;
	exec_copy = NULL;
	exec_reads = NULL;
	REQUIRE(ddp_grad_new(&ops, ov, &g) == DDP_OK);
	return g;
}

/* argument helpers */
static struct ddp_grad_arg A(const void *p, size_t bytes, uint32_t id, int param, int access, int dtype)
{
	struct ddp_grad_arg a = { .base = (uint64_t)(uintptr_t)p, .size = bytes, .alloc_id = id,
				  .param = (uint16_t)param, .access = (uint8_t)access, .dtype = (uint8_t)dtype };
	return a;
}

/* a sub-range [off, off + bytes) of the allocation [p, p + alloc) */
static struct ddp_grad_arg R_(const void *p, size_t alloc, size_t off, size_t bytes, uint32_t id, int param,
			      int access, int dtype)
{
	struct ddp_grad_arg a = A(p, alloc, id, param, access, dtype);
	a.ptr = a.base + off;
	a.ext = bytes;
	a.bounded = 1;
	return a;
}

static struct ddp_grad_arg S(const void *p, size_t bytes, uint32_t id, int word)
{
	struct ddp_grad_arg a = { .base = (uint64_t)(uintptr_t)p, .size = bytes, .alloc_id = id,
				  .word = (uint16_t)word, .access = DDP_GA_UNKNOWN, .in_struct = 1,
				  .dtype = DDP_DT_UNKNOWN };
	return a;
}

/* const-correct as ddp_sync.c decides it: a typed const pointer */
static int has_const(const struct ddp_grad_arg *args, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!args[i].in_struct && args[i].access == DDP_GA_READ)
			return 1;
	return 0;
}

static ddp_result L(struct ddp_grad *g, const char *name, int cls, const struct ddp_grad_arg *args, uint32_t n)
{
	struct ddp_grad_launch l = { .kname = name, .kclass = (uint8_t)cls, .nargs = n, .args = args,
				     .const_correct = (uint8_t)has_const(args, n) };
	return launch(g, &l);
}

#define W DDP_GA_WRITE
#define R DDP_GA_READ
#define F32 DDP_DT_F32

static float p0[N], g0[N], m0[N], p1[N], g1[N], m1[N], act[N];

/* backward: one launch writing both gradients (and reading activations) */
static void backward(struct ddp_grad *g)
{
	struct ddp_grad_arg b[] = { A(act, sizeof act, 9, 0, R, F32), A(g0, sizeof g0, 2, 1, W, F32),
				    A(g1, sizeof g1, 5, 2, W, F32) };
	CHECK_EQ_INT(L(g, "backward", DDP_GK_OTHER, b, 3), DDP_OK);
}

static void sgd(struct ddp_grad *g, int t)
{
	float *p = t ? p1 : p0, *gr = t ? g1 : g0, *m = t ? m1 : m0;
	uint32_t id = t ? 4 : 1;
	struct ddp_grad_arg a[] = { A(p, sizeof p0, id, 0, W, F32), A(gr, sizeof g0, id + 1, 1, R, F32),
				    A(m, sizeof m0, id + 2, 2, W, F32) };
	CHECK_EQ_INT(L(g, "sgd", DDP_GK_OPT, a, 3), DDP_OK);
}

TEST(per_tensor_sgd_learns_then_reduces_once_per_step)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	backward(g);
	CHECK_EQ_STR(evlog, "");               /* nothing known yet: nothing to do */
	sgd(g, 0);
	sgd(g, 1);
	/* step 1: each tensor's parameter+state broadcast, then its gradient */
	CHECK_EQ_STR(evlog, "BC[sgd:0,sgd:2]AR[sgd:1]BC[sgd:0,sgd:2]AR[sgd:1]");
	evlog[0] = '\0';
	backward(g);
	sgd(g, 0);
	sgd(g, 1);
	/* step 2: all dirty gradients together, at the first optimizer launch */
	CHECK_EQ_STR(evlog, "|E1|AR[sgd:1,sgd:1]");
	CHECK_EQ_INT(ddp_grad_steps(g), 2);
	CHECK_EQ_INT(ddp_grad_reductions(g), 3);
	ddp_grad_free(g);
}

/* The plan a launch returns (ddp_plan.h): its actions, in the order they
 * must run, before the launch; nothing is done by the tracker itself. */
static const char *plan_kinds(struct ddp_grad *g, const char *name, int cls, const struct ddp_grad_arg *args,
			      uint32_t n)
{
	static char out[256];
	const struct ddp_plan *p = NULL;
	struct ddp_grad_launch l = { .kname = name, .kclass = (uint8_t)cls, .nargs = n, .args = args,
				     .const_correct = (uint8_t)has_const(args, n) };
	out[0] = '\0';
	REQUIRE(ddp_grad_launch(g, &l, &p) == DDP_OK && p);
	for (size_t i = 0; i < p->n; i++) {
		char b[48];
		snprintf(b, sizeof b, "%s%s:%zu", i ? " " : "", ddp_plan_kind_name((enum ddp_plan_kind)p->items[i].kind),
			 p->items[i].kind == DDP_PLAN_STEP_BEGIN || p->items[i].kind == DDP_PLAN_STEP_END
				 ? (size_t)p->items[i].step
				 : p->items[i].n);
		strncat(out, b, sizeof out - strlen(out) - 1);
	}
	return out;
}

TEST(the_plan_orders_every_action_of_a_launch)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg bw[] = { A(act, sizeof act, 9, 0, R, F32), A(g0, sizeof g0, 2, 1, W, F32),
				     A(g1, sizeof g1, 5, 2, W, F32) };
	struct ddp_grad_arg o0[] = { A(p0, sizeof p0, 1, 0, W, F32), A(g0, sizeof g0, 2, 1, R, F32),
				     A(m0, sizeof m0, 3, 2, W, F32) };
	CHECK_EQ_STR(plan_kinds(g, "backward", DDP_GK_OTHER, bw, 3), "");
	/* step 1: the step begins, parameter and state broadcast before their
	 * first update, the gradient averaged, then what the update reads */
	CHECK_EQ_STR(plan_kinds(g, "sgd", DDP_GK_OPT, o0, 3), "step-begin:1 broadcast:2 reduce:1 reads:3");
	/* the next backward: its writes of both gradients, then the step ends */
	CHECK_EQ_STR(plan_kinds(g, "backward", DDP_GK_OTHER, bw, 3), "written:1 step-end:1");
	/* step 2: nothing broadcast again */
	CHECK_EQ_STR(plan_kinds(g, "sgd", DDP_GK_OPT, o0, 3), "step-begin:2 reduce:1 reads:3");
	CHECK_EQ_STR(evlog, ""); /* the tracker itself did nothing */
	/* the allocations that hold a parameter or state range (the final
	 * compare runs before the first of them is freed) */
	CHECK(ddp_grad_alloc_holds_state(g, (uint64_t)(uintptr_t)p0, 1));
	CHECK(ddp_grad_alloc_holds_state(g, (uint64_t)(uintptr_t)m0, 1));
	CHECK(!ddp_grad_alloc_holds_state(g, (uint64_t)(uintptr_t)g0, 1));
	CHECK(!ddp_grad_alloc_holds_state(g, (uint64_t)(uintptr_t)act, 1));
	/* a failing launch returns an empty plan */
	const struct ddp_plan *p = NULL;
	struct ddp_grad_launch bad = { .kname = "opt", .kclass = DDP_GK_OPT, .nargs = 1, .args = o0, .truncated = 3 };
	CHECK_EQ_INT(ddp_grad_launch(g, &bad, &p), DDP_ERR_UNSUPPORTED);
	CHECK(p && p->n == 0);
	ddp_grad_free(g);
}

TEST(accumulation_reduces_once_per_optimizer_step)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	backward(g);
	sgd(g, 0);
	sgd(g, 1);
	evlog[0] = '\0';
	for (int micro = 0; micro < 4; micro++)
		backward(g);
	sgd(g, 0);
	sgd(g, 1);
	CHECK_EQ_STR(evlog, "|E1|AR[sgd:1,sgd:1]");
	/* a launch that only READS the gradients does not dirty them, and
	 * does not end the update phase either: the step ends when the next
	 * backward writes a gradient */
	evlog[0] = '\0';
	struct ddp_grad_arg rd[] = { A(g0, sizeof g0, 2, 0, R, F32) };
	CHECK_EQ_INT(L(g, "peek", DDP_GK_OTHER, rd, 1), DDP_OK);
	sgd(g, 0);
	CHECK_EQ_STR(evlog, "");
	backward(g);
	CHECK_EQ_STR(evlog, "|E2|");
	ddp_grad_free(g);
}

TEST(order_is_first_appearance_not_address)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	/* tensor 1 first: its gradient gets order 0 although g0 < g1 or not */
	backward(g);
	sgd(g, 1);
	sgd(g, 0);
	evlog[0] = '\0';
	backward(g);
	sgd(g, 1);
	size_t n = ddp_grad_nbufs(g);
	int seen = 0;
	for (size_t i = 0; i < n; i++) {
		struct ddp_grad_buf *b = ddp_grad_buf_at(g, i);
		if (b->role == DDP_GR_GRAD && b->base == (uintptr_t)g1)
			{ CHECK_EQ_INT(b->order, 0); seen++; }
		if (b->role == DDP_GR_GRAD && b->base == (uintptr_t)g0)
			{ CHECK_EQ_INT(b->order, 1); seen++; }
	}
	CHECK_EQ_INT(seen, 2);
	ddp_grad_free(g);
}

/* charlm: flat buffers, a norm reader, AdamW per tensor on sub-ranges */
static float P[4 * N], G[4 * N], M[4 * N], V[4 * N], norm1;

static void charlm_step(struct ddp_grad *g, int amp, int skip)
{
	struct ddp_grad_arg bw[] = { A(act, sizeof act, 9, 0, R, F32), A(G, sizeof G, 12, 1, W, F32) };
	CHECK_EQ_INT(L(g, "linear_backward_weight", DDP_GK_OTHER, bw, 2), DDP_OK);
	if (amp) {
		int flag;
		struct ddp_grad_arg us[] = { A(G, sizeof G, 12, 0, W, F32), A(&flag, 4, 14, 3, W, DDP_DT_UNKNOWN) };
		CHECK_EQ_INT(L(g, "amp_unscale_grads", DDP_GK_READER, us, 2), DDP_OK);
		if (skip)
			return;
	}
	struct ddp_grad_arg nm[] = { A(G, sizeof G, 12, 0, R, F32), A(&norm1, 4, 15, 2, W, F32) };
	CHECK_EQ_INT(L(g, "global_grad_norm", DDP_GK_READER, nm, 2), DDP_OK);
	for (int t = 0; t < 4; t++) {
		/* sub-ranges of the flat buffers, bounded by the launch's count */
		size_t off = (size_t)t * N * 4, b = N * 4;
		struct ddp_grad_arg up[] = { R_(P, sizeof P, off, b, 11, 0, W, F32), R_(G, sizeof G, off, b, 12, 1, R, F32),
					     R_(M, sizeof M, off, b, 13, 2, W, F32), R_(V, sizeof V, off, b, 16, 3, W, F32),
					     A(&norm1, 4, 15, 4, R, F32) };
		CHECK_EQ_INT(L(g, "adamw_update", DDP_GK_OPT, up, 5), DDP_OK);
	}
}

TEST(flat_buffer_reduced_before_the_norm_reader)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	charlm_step(g, 0, 0);
	/* the whole flat gradient is a candidate, averaged at the norm; the
	 * scalar norm is no gradient; each tensor's parameter and moment ranges
	 * are broadcast once before their first update */
	CHECK_EQ_STR(evlog, "AR[global_grad_norm:0]"
			    "BC[adamw_update:0+0,adamw_update:2+0,adamw_update:3+0]"
			    "BC[adamw_update:0+256,adamw_update:2+256,adamw_update:3+256]"
			    "BC[adamw_update:0+512,adamw_update:2+512,adamw_update:3+512]"
			    "BC[adamw_update:0+768,adamw_update:2+768,adamw_update:3+768]");
	/* the candidate became four gradient ranges (AdamW read them) */
	size_t ng = 0;
	for (size_t i = 0; i < ddp_grad_nbufs(g); i++)
		ng += ddp_grad_buf_at(g, i)->role == DDP_GR_GRAD;
	CHECK_EQ_INT(ng, 4);
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), sizeof G);
	evlog[0] = '\0';
	charlm_step(g, 0, 0);
	charlm_step(g, 0, 0);
	/* one reduction of the four ranges (the executor merges adjacent ones into one segment) */
	CHECK_EQ_STR(evlog, "|E1|AR[adamw_update:1+0,adamw_update:1+256,adamw_update:1+512,adamw_update:1+768]"
		     "|E2|AR[adamw_update:1+0,adamw_update:1+256,adamw_update:1+512,adamw_update:1+768]");
	CHECK_EQ_INT(ddp_grad_steps(g), 3);
	ddp_grad_free(g);
}

TEST(amp_skipped_steps_reduce_once_at_the_unscale)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	charlm_step(g, 1, 1);                 /* step skipped: no optimizer */
	CHECK_EQ_STR(evlog, "AR[amp_unscale_grads:0]");
	charlm_step(g, 1, 1);                 /* skipped again */
	charlm_step(g, 1, 0);                 /* applied */
	CHECK_EQ_STR(evlog, "AR[amp_unscale_grads:0]AR[amp_unscale_grads:0]AR[amp_unscale_grads:0]"
			    "BC[adamw_update:0+0,adamw_update:2+0,adamw_update:3+0]"
			    "BC[adamw_update:0+256,adamw_update:2+256,adamw_update:3+256]"
			    "BC[adamw_update:0+512,adamw_update:2+512,adamw_update:3+512]"
			    "BC[adamw_update:0+768,adamw_update:2+768,adamw_update:3+768]");
	CHECK_EQ_INT(ddp_grad_steps(g), 1);   /* skipped steps are no steps */
	CHECK_EQ_INT(ddp_grad_reductions(g), 3);
	ddp_grad_free(g);
}

/* fused: pointers inside a by-value struct, bf16 gradients, calibration */
static float fp[N], fm[N];
static uint16_t fg[N];

static void fused_kernel(void)
{
	for (int i = 0; i < N; i++) {
		fm[i] += 1.0f;
		fp[i] -= 0.5f;
	}
}

TEST(struct_pointers_calibrated_and_restored)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	relaunch_fn = fused_kernel;
	for (int i = 0; i < N; i++)
		fp[i] = 1.0f, fm[i] = 0.0f, fg[i] = 0x3f80;
	struct ddp_grad_arg bw[] = { A(fg, sizeof fg, 22, 2, W, DDP_DT_BF16) };
	struct ddp_grad_arg op[] = { S(fp, sizeof fp, 21, 0), S(fg, sizeof fg, 22, 36), S(fm, sizeof fm, 23, 72) };
	struct ddp_grad_launch l = { .kname = "multi_tensor_apply_kernel", .kid = 7, .kclass = DDP_GK_OPT,
				     .template_dtype = DDP_DT_BF16, .nargs = 3, .args = op };
	CHECK_EQ_INT(L(g, "backward_bf16", DDP_GK_OTHER, bw, 1), DDP_OK);
	CHECK_EQ_INT(launch(g, &l), DDP_OK);
	CHECK_EQ_INT(relaunches, 1);
	/* what the calibration launch changed is back as it was */
	CHECK(fp[0] == 1.0f && fp[N - 1] == 1.0f && fm[0] == 0.0f && fm[N - 1] == 0.0f);
	CHECK_EQ_STR(evlog, "BC[multi_tensor_apply_kernel:0.0,multi_tensor_apply_kernel:0.72]"
			    "AR[multi_tensor_apply_kernel:0.36]");
	struct ddp_grad_buf *gb = NULL;
	for (size_t i = 0; i < ddp_grad_nbufs(g); i++)
		if (ddp_grad_buf_at(g, i)->role == DDP_GR_GRAD)
			gb = ddp_grad_buf_at(g, i);
	REQUIRE(gb);
	CHECK_EQ_INT(gb->dtype, DDP_DT_BF16);
	CHECK_EQ_INT(gb->count, N);
	/* the next step: no calibration, one reduction */
	evlog[0] = '\0';
	CHECK_EQ_INT(L(g, "backward_bf16", DDP_GK_OTHER, bw, 1), DDP_OK);
	CHECK_EQ_INT(launch(g, &l), DDP_OK);
	CHECK_EQ_INT(relaunches, 1);
	CHECK_EQ_STR(evlog, "|E1|AR[multi_tensor_apply_kernel:0.36]");
	ddp_grad_free(g);
}

TEST(unknown_dtype_refused_override_accepted)
{
	struct ddp_grad_arg op[] = { S(fp, sizeof fp, 21, 0), S(fg, sizeof fg, 22, 36), S(fm, sizeof fm, 23, 72) };
	struct ddp_grad_launch l = { .kname = "extern_c_adam", .kid = 8, .kclass = DDP_GK_OPT, .nargs = 3, .args = op };
	struct ddp_grad *g;
	/* no template dtype, no signature: refuse, naming kernel and setting;
	 * f64 (a type the collectives cannot average) is refused alike */
	static const enum ddp_dtype tmpl[] = { DDP_DT_UNKNOWN, DDP_DT_F64 };
	for (size_t t = 0; t < sizeof tmpl / sizeof tmpl[0]; t++) {
		g = fresh(DDP_DT_UNKNOWN);
		relaunch_fn = fused_kernel;
		for (int i = 0; i < N; i++)
			fp[i] = 1.0f, fm[i] = 0.0f;
		l.template_dtype = (uint8_t)tmpl[t];
		CHECK_EQ_INT(launch(g, &l), DDP_ERR_UNSUPPORTED);
		CHECK(strstr(ddp_grad_last_error(g), "extern_c_adam") != NULL);
		CHECK(strstr(ddp_grad_last_error(g), "DDP_GRAD_DTYPE") != NULL);
		CHECK(strstr(evlog, "AR") == NULL);   /* nothing reduced as guessed bytes */
		ddp_grad_free(g);
	}

	l.template_dtype = DDP_DT_UNKNOWN;
	g = fresh(DDP_DT_BF16);
	relaunch_fn = fused_kernel;
	CHECK_EQ_INT(launch(g, &l), DDP_OK);
	CHECK(strstr(evlog, "AR[extern_c_adam:0.36]") != NULL);
	ddp_grad_free(g);

	/* an override must be reducible */
	g = NULL;
	CHECK_EQ_INT(ddp_grad_new(&ops, DDP_DT_F64, &g), DDP_ERR_INVALID);
	CHECK(g == NULL);
}

TEST(small_and_unpaired_read_only_buffers_are_not_gradients)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	float lr_dev[4], table[N / 2];
	struct ddp_grad_arg a[] = { A(p0, sizeof p0, 1, 0, W, F32), A(g0, sizeof g0, 2, 1, R, F32),
				    A(lr_dev, sizeof lr_dev, 30, 2, R, F32), A(table, sizeof table, 31, 3, R, F32) };
	backward(g);
	CHECK_EQ_INT(L(g, "sgd", DDP_GK_OPT, a, 4), DDP_OK);
	/* 16-byte lr: too small; 64-float table: pairs with no parameter */
	CHECK_EQ_STR(evlog, "BC[sgd:0]AR[sgd:1]");
	ddp_grad_free(g);
}

TEST(a_step_without_any_gradient_is_an_error)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg a[] = { A(p0, sizeof p0, 1, 0, W, F32), A(m0, sizeof m0, 3, 1, W, F32) };
	CHECK_EQ_INT(L(g, "weird_opt", DDP_GK_OPT, a, 2), DDP_OK);
	CHECK_EQ_INT(L(g, "forward", DDP_GK_OTHER, a, 1), DDP_ERR_UNSUPPORTED);
	CHECK(strstr(ddp_grad_last_error(g), "no gradient buffer was found") != NULL);
	ddp_grad_free(g);
}

TEST(freed_and_reused_address_is_a_new_buffer)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	backward(g);
	sgd(g, 0);
	/* g0's address now belongs to another allocation (id 99): not a
	 * gradient any more, a write to it dirties nothing */
	evlog[0] = '\0';
	struct ddp_grad_arg w[] = { A(g0, sizeof g0, 99, 0, W, F32) };
	CHECK_EQ_INT(L(g, "other_use", DDP_GK_OTHER, w, 1), DDP_OK);
	struct ddp_grad_arg rd[] = { A(g0, sizeof g0, 99, 0, R, F32), A(&norm1, 4, 15, 1, W, F32) };
	CHECK_EQ_INT(L(g, "global_grad_norm", DDP_GK_READER, rd, 2), DDP_OK);
	CHECK_EQ_STR(evlog, "|E1|");
	ddp_grad_free(g);
}

TEST(kernel_classes_by_name_and_settings)
{
	CHECK_EQ_INT(ddp_grad_classify("sgd_momentum_update(float*, float const*)", NULL, NULL), DDP_GK_OPT);
	CHECK_EQ_INT(ddp_grad_classify("adamw_update", NULL, NULL), DDP_GK_OPT);
	CHECK_EQ_INT(ddp_grad_classify("void multi_tensor_apply_kernel<TensorListMetadata<4>, "
				       "FusedAdamFunctor<__nv_bfloat16>>", NULL, NULL), DDP_GK_OPT);
	CHECK_EQ_INT(ddp_grad_classify("global_grad_norm", NULL, NULL), DDP_GK_READER);
	CHECK_EQ_INT(ddp_grad_classify("amp_unscale_grads", NULL, NULL), DDP_GK_READER);
	CHECK_EQ_INT(ddp_grad_classify("multi_tensor_apply_kernel<TensorListMetadata<1>, LpNormFunctor<float>>",
				       NULL, NULL), DDP_GK_READER);   /* reader wins */
	CHECK_EQ_INT(ddp_grad_classify("linear_forward", NULL, NULL), DDP_GK_OTHER);
	CHECK_EQ_INT(ddp_grad_classify("my_step_kernel", "+my_step, other", NULL), DDP_GK_OPT);
	CHECK_EQ_INT(ddp_grad_classify("sgd_update", "+my_step", NULL), DDP_GK_OPT);     /* added */
	CHECK_EQ_INT(ddp_grad_classify("sgd_update", "my_step", NULL), DDP_GK_OTHER);    /* replaced */
	CHECK_EQ_INT(ddp_grad_classify("My_Step_kernel", " my_step ", NULL), DDP_GK_OPT); /* case, spaces */
	CHECK_EQ_INT(ddp_grad_classify("global_grad_norm", NULL, "nothing_like_it"), DDP_GK_OTHER);
	CHECK_EQ_INT(ddp_grad_classify("check_scale", NULL, "+check_scale"), DDP_GK_READER);
	/* a closure type is no optimizer: PyTorch's tanh forward, as the first
	 * GPU run's log named it (it was taken for LAMB: "lamb" in "lambda") */
	CHECK_EQ_INT(ddp_grad_classify("void at::native::vectorized_elementwise_kernel<4, "
				       "at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::"
				       "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
				       "std::array<char*, 2ul> >(int, at::native::tanh_kernel_cuda(at::"
				       "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::"
				       "operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)", NULL, NULL),
		     DDP_GK_OTHER);
	CHECK_EQ_INT(ddp_grad_classify("LAMBDA_fwd", NULL, "+lamb"), DDP_GK_OTHER);
	CHECK_EQ_INT(ddp_grad_classify("lamb_update_kernel", NULL, NULL), DDP_GK_OPT);
	CHECK_EQ_INT(ddp_grad_classify("void f<{lambda(float)#1}>(lamb_state*)", NULL, NULL), DDP_GK_OPT);
	/* neutral only inside a multi-tensor kernel, and there it wins over the
	 * optimizer pattern "multi_tensor_apply"; a plain ZeroFunctor is a fill */
	CHECK_EQ_INT(ddp_grad_classify("void multi_tensor_apply_kernel<TensorListMetadata<1>, ZeroFunctor<float, 1, 1, "
				       "0>>(TensorListMetadata<1>, ZeroFunctor<float, 1, 1, 0>)", NULL, NULL),
		     DDP_GK_NEUTRAL);
	CHECK_EQ_INT(ddp_grad_classify("void multi_tensor_apply_kernel<TensorListMetadata<1>, "
				       "BinaryOpScalarTensorFunctor<float, 1, 1, 0>>", NULL, "+zzz"),
		     DDP_GK_NEUTRAL);
	CHECK_EQ_INT(ddp_grad_classify("void vectorized_elementwise_kernel<4, ZeroFunctor<float>>", NULL, NULL),
		     DDP_GK_OTHER);
	CHECK_EQ_INT(ddp_grad_classify(NULL, "+x", "+y"), DDP_GK_OTHER);
	/* the iteration boundary (scaler.update()), a mark beside the class */
	CHECK_EQ_INT(ddp_grad_is_boundary("void at::native::amp_update_scale_cuda_kernel(float*, int*, float const*, "
					  "double, double, int)"), 1);
	CHECK_EQ_INT(ddp_grad_is_boundary("adamw_update"), 0);
	CHECK_EQ_INT(ddp_grad_is_boundary(NULL), 0);
	CHECK_EQ_INT(ddp_dtype_parse("bf16"), DDP_DT_BF16);
	CHECK_EQ_INT(ddp_dtype_parse("FP16"), DDP_DT_F16);
	CHECK_EQ_INT(ddp_dtype_parse("int8"), DDP_DT_UNKNOWN);
}

/* A model with many tensors: the signature of one reduction over 1000
 * gradients must stay within what ddp_check_signature accepts (16 KiB with
 * its kind), and still differ when any buffer differs. */
TEST(signature_of_many_buffers_is_bounded_and_complete)
{
	enum { NB = 1000 };
	static struct ddp_grad_buf bufs[NB];
	static struct ddp_grad_buf *list[NB];
	static char s1[8192], s2[8192];
	uint64_t h1 = 0, h2 = 0;
	for (int i = 0; i < NB; i++) {
		memset(&bufs[i], 0, sizeof bufs[i]);
		snprintf(bufs[i].label, sizeof bufs[i].label, "multi_tensor_apply_kernel:0.%d", i % 110);
		bufs[i].dtype = DDP_DT_F32;
		bufs[i].count = 589824 + (uint64_t)i;
		bufs[i].size = bufs[i].count * 4;
		list[i] = &bufs[i];
	}
	/* a few buffers: the whole text, exactly */
	size_t n = ddp_grad_signature(s1, sizeof s1, list, 2, 1, &h1);
	CHECK_EQ_STR(s1, "n=2 multi_tensor_apply_kernel:0.0 f32 count=589824; multi_tensor_apply_kernel:0.1 f32 "
			 "count=589825;");
	CHECK_EQ_INT(n, strlen(s1));
	ddp_grad_signature(s2, sizeof s2, list, 2, 0, NULL);
	CHECK_EQ_STR(s2, "n=2 multi_tensor_apply_kernel:0.0 bytes=2359296; multi_tensor_apply_kernel:0.1 "
			 "bytes=2359300;");
	/* 1000 buffers (~50 KB described): bounded, with the hash of the whole */
	n = ddp_grad_signature(s1, sizeof s1, list, NB, 1, &h1);
	CHECK(n < sizeof s1);
	CHECK_EQ_INT(n, strlen(s1));
	CHECK(strlen("allreduce") + n + 3 <= 16 * 1024);
	CHECK(strstr(s1, " more fnv=") != NULL);
	CHECK(strncmp(s1, "n=1000 multi_tensor_apply_kernel:0.0 f32 count=589824;", 54) == 0);
	/* the last buffer differs: beyond the kept text, but the text differs */
	bufs[NB - 1].count++;
	ddp_grad_signature(s2, sizeof s2, list, NB, 1, &h2);
	CHECK(h1 != h2);
	CHECK(strcmp(s1, s2) != 0);
	/* a small cap still gives a terminated, bounded text */
	char small[128];
	n = ddp_grad_signature(small, sizeof small, list, NB, 1, NULL);
	CHECK(n < sizeof small);
	CHECK_EQ_INT(n, strlen(small));
}

/* The decoder holds a bounded number of arguments: an optimizer launch with
 * more must stop the job (its gradients cannot all be seen), and any other
 * launch with more must count as writing every gradient. */
TEST(truncated_argument_lists)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	backward(g);
	sgd(g, 0);
	sgd(g, 1);
	/* step 2: a backward launch whose argument list was cut before the
	 * gradients: they must still be taken as written */
	evlog[0] = '\0';
	struct ddp_grad_arg bw[] = { A(act, sizeof act, 9, 0, R, F32) };
	struct ddp_grad_launch l = { .kname = "huge_backward", .kid = 3, .kclass = DDP_GK_OTHER, .nargs = 1, .args = bw,
				     .truncated = 40 };
	CHECK_EQ_INT(launch(g, &l), DDP_OK);
	sgd(g, 0);
	CHECK_EQ_STR(evlog, "|E1|AR[sgd:1,sgd:1]");
	/* an optimizer launch with a cut argument list: an error naming it */
	float p2[N], g2[N];
	struct ddp_grad_arg op[] = { A(p2, sizeof p2, 40, 0, W, F32), A(g2, sizeof g2, 41, 1, R, F32) };
	struct ddp_grad_launch lo = { .kname = "huge_adam", .kid = 4, .kclass = DDP_GK_OPT, .nargs = 2, .args = op,
				      .truncated = 300 };
	CHECK_EQ_INT(launch(g, &lo), DDP_ERR_UNSUPPORTED);
	CHECK(strstr(ddp_grad_last_error(g), "huge_adam") != NULL);
	CHECK(strstr(ddp_grad_last_error(g), "more buffers than libddp can decode") != NULL);
	lo.kclass = DDP_GK_READER;
	CHECK_EQ_INT(launch(g, &lo), DDP_ERR_UNSUPPORTED);
	ddp_grad_free(g);
}

/* A gradient freed after it was written (and before the reduction point)
 * must not be reduced: its memory may be gone or belong to another buffer. */
static uint64_t dead_base;

static int m_alive(void *ctx, const struct ddp_grad_buf *b)
{
	(void)ctx;
	return b->base != dead_base;
}

TEST(freed_gradient_is_not_reduced)
{
	struct ddp_grad_ops o = ops;
	struct ddp_grad *g = NULL;
	o.alive = m_alive;
	evlog[0] = '\0';
	dead_base = 0;
	REQUIRE(ddp_grad_new(&o, DDP_DT_UNKNOWN, &g) == DDP_OK);
	backward(g);
	sgd(g, 0);
	sgd(g, 1);
	evlog[0] = '\0';
	backward(g);            /* both dirty */
	dead_base = (uintptr_t)g0; /* ... then g0 is freed */
	sgd(g, 1);
	CHECK_EQ_STR(evlog, "|E1|AR[sgd:1]");
	size_t grads = 0;
	for (size_t i = 0; i < ddp_grad_nbufs(g); i++)
		grads += ddp_grad_buf_at(g, i)->role == DDP_GR_GRAD;
	CHECK_EQ_INT(grads, 1);
	dead_base = 0;
	ddp_grad_free(g);
}

/* ---- the trainer patterns of samples/patterns, on the tracker alone */

static float fP[4 * N], fG[4 * N], fM[4 * N], fV[4 * N], acts[8 * N];
static uint16_t hP[4 * N], hG[4 * N];
static int pat_calibrations;

/* an AdamW that changes p, m, v over the whole flat buffers */
static void adamw_all(void)
{
	pat_calibrations++;
	for (int i = 0; i < 4 * N; i++)
		fP[i] -= 0.25f, fM[i] += 1.0f, fV[i] += 2.0f;
}

static size_t count_role(struct ddp_grad *g, int role)
{
	size_t n = 0;
	for (size_t i = 0; i < ddp_grad_nbufs(g); i++)
		n += ddp_grad_buf_at(g, i)->role == role;
	return n;
}

static void flat_backward(struct ddp_grad *g)
{
	struct ddp_grad_arg bw[] = { A(acts, sizeof acts, 40, 0, R, F32), A(fG, sizeof fG, 42, 1, W, F32) };
	CHECK_EQ_INT(L(g, "linear_backward_weight", DDP_GK_OTHER, bw, 2), DDP_OK);
}

/* 1: every pointer non-const: the signature says nothing, calibration does */
TEST(pattern1_nonconst_adamw_is_calibrated)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	relaunch_fn = adamw_all;
	pat_calibrations = 0;
	struct ddp_grad_arg up[] = { A(fP, sizeof fP, 41, 0, W, F32), A(fG, sizeof fG, 42, 1, W, F32),
				     A(fM, sizeof fM, 43, 2, W, F32), A(fV, sizeof fV, 44, 3, W, F32) };
	for (int step = 0; step < 2; step++) {
		flat_backward(g);
		CHECK_EQ_INT(L(g, "adamw_kernel2", DDP_GK_OPT, up, 4), DDP_OK);
	}
	CHECK_EQ_STR(evlog, "BC[adamw_kernel2:0,adamw_kernel2:2,adamw_kernel2:3]AR[adamw_kernel2:1]"
			    "|E1|AR[adamw_kernel2:1]");
	CHECK_EQ_INT(pat_calibrations, 1);            /* once: the ranges are known after */
	CHECK(fP[0] == 0.0f && fM[0] == 0.0f);        /* the calibration run was undone */
	CHECK_EQ_INT(count_role(g, DDP_GR_GRAD), 1);
	ddp_grad_free(g);
}

/* 2: a const-correct reader writes its partial sums into a slice of the
 * activation allocation: that slice is its output, never a gradient */
TEST(pattern2_reader_output_slice_is_no_gradient)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	for (int step = 0; step < 2; step++) {
		flat_backward(g);
		struct ddp_grad_arg sq[] = { R_(acts, sizeof acts, 4 * N * 4, 4 * N * 4, 40, 0, W, F32),
					     A(fG, sizeof fG, 42, 1, R, F32) };
		CHECK_EQ_INT(L(g, "global_norm_squared", DDP_GK_READER, sq, 2), DDP_OK);
		struct ddp_grad_arg up[] = { A(fP, sizeof fP, 41, 0, W, F32), A(fG, sizeof fG, 42, 1, R, F32),
					     A(fM, sizeof fM, 43, 2, W, F32), A(fV, sizeof fV, 44, 3, W, F32) };
		CHECK_EQ_INT(L(g, "adamw_clipped", DDP_GK_OPT, up, 4), DDP_OK);
	}
	CHECK_EQ_STR(evlog, "AR[global_norm_squared:1]BC[adamw_clipped:0,adamw_clipped:2,adamw_clipped:3]"
			    "|E1|AR[adamw_clipped:1]");
	CHECK_EQ_INT(count_role(g, DDP_GR_GRAD), 1);
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), sizeof fG);
	ddp_grad_free(g);
}

/* 3: the reader reveals the gradient; the optimizer passes it non-const
 * next to a const pointer: calibration settles the conflict, per range */
static int cur_tensor;
static void adamw_ranges(void)
{
	pat_calibrations++;
	for (int i = cur_tensor * N; i < (cur_tensor + 1) * N; i++)
		fP[i] -= 0.25f, fM[i] += 1.0f;
}

TEST(pattern3_reader_found_gradient_passed_nonconst)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	relaunch_fn = adamw_ranges;
	pat_calibrations = 0;
	for (int step = 0; step < 3; step++) {
		flat_backward(g);
		struct ddp_grad_arg nm[] = { A(fG, sizeof fG, 42, 0, R, F32), A(&norm1, 4, 15, 2, W, F32) };
		CHECK_EQ_INT(L(g, "grad_norm", DDP_GK_READER, nm, 2), DDP_OK);
		for (int t = 0; t < 4; t++) {
			size_t off = (size_t)t * N * 4, b = N * 4;
			cur_tensor = t;
			struct ddp_grad_arg up[] = { R_(fP, sizeof fP, off, b, 41, 0, W, F32),
						     R_(fG, sizeof fG, off, b, 42, 1, W, F32),
						     R_(fM, sizeof fM, off, b, 43, 2, W, F32), A(&norm1, 4, 15, 3, R, F32) };
			CHECK_EQ_INT(L(g, "adamw_update", DDP_GK_OPT, up, 4), DDP_OK);
		}
		if (step == 0)
			evlog[0] = '\0';
	}
	/* still a gradient from step 2 on, averaged once per step at the norm */
	CHECK_EQ_STR(evlog, "|E1|AR[adamw_update:1+0,adamw_update:1+256,adamw_update:1+512,adamw_update:1+768]"
		     "|E2|AR[adamw_update:1+0,adamw_update:1+256,adamw_update:1+512,adamw_update:1+768]");
	CHECK_EQ_INT(pat_calibrations, 4);       /* step 1, one per tensor range */
	CHECK_EQ_INT(count_role(g, DDP_GR_GRAD), 4);
	CHECK_EQ_INT(count_role(g, DDP_GR_PARAM), 8);
	ddp_grad_free(g);
}

/* 4: a bf16 cast of each tensor's updated master weights between the
 * per-tensor optimizer launches: one step, not four */
TEST(pattern4_cast_between_updates_stays_in_the_step)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	for (int step = 0; step < 3; step++) {
		flat_backward(g);
		for (int t = 0; t < 4; t++) {
			size_t off = (size_t)t * N * 4, b = N * 4;
			struct ddp_grad_arg up[] = { R_(fP, sizeof fP, off, b, 41, 0, W, F32),
						     R_(fG, sizeof fG, off, b, 42, 1, R, F32),
						     R_(fM, sizeof fM, off, b, 43, 2, W, F32) };
			CHECK_EQ_INT(L(g, "adamw_master", DDP_GK_OPT, up, 3), DDP_OK);
			struct ddp_grad_arg cast[] = { R_(hP, sizeof hP, (size_t)t * N * 2, N * 2, 45, 0, W, DDP_DT_BF16),
						       R_(fP, sizeof fP, off, b, 41, 1, R, F32) };
			CHECK_EQ_INT(L(g, "copy_and_cast_kernel", DDP_GK_OTHER, cast, 2), DDP_OK);
		}
		/* the next forward reads the bf16 copy, writes activations */
		struct ddp_grad_arg fw[] = { A(hP, sizeof hP, 45, 0, R, DDP_DT_BF16), A(acts, sizeof acts, 40, 1, W, F32) };
		CHECK_EQ_INT(L(g, "linear_forward_bf16", DDP_GK_OTHER, fw, 2), DDP_OK);
	}
	CHECK_EQ_INT(ddp_grad_steps(g), 3);
	CHECK(strstr(evlog, "|E1|") && strstr(evlog, "|E2|") && !strstr(evlog, "|E3|"));
	ddp_grad_free(g);
}

/* 5: sub-ranges of flat buffers, bf16 params + fp32 master + bf16 grads:
 * the pairing is per range; each range is broadcast once */
static struct ddp_grad_read last_reads[16];
static size_t nlast_reads;
static ddp_result m_opt_reads(void *ctx, const struct ddp_grad_launch *Lc, uint64_t step,
			      const struct ddp_grad_read *r, size_t n)
{
	(void)ctx, (void)Lc, (void)step;
	nlast_reads = n < 16 ? n : 16;
	memcpy(last_reads, r, nlast_reads * sizeof *r);
	return DDP_OK;
}

TEST(pattern5_bf16_subranges_pair_per_range)
{
	struct ddp_grad_ops o = ops;
	struct ddp_grad *g = NULL;
	exec_reads = m_opt_reads;
	evlog[0] = '\0';
	REQUIRE(ddp_grad_new(&o, DDP_DT_UNKNOWN, &g) == DDP_OK);
	/* tensors of 64 elements at element offsets 0, 128, 192 (padding after
	 * the first): only the used ranges are gradients */
	static const size_t off[] = { 0, 128, 192 };
	for (int step = 0; step < 2; step++) {
		struct ddp_grad_arg bw[] = { A(acts, sizeof acts, 40, 0, R, F32), A(hG, sizeof hG, 46, 1, W, DDP_DT_BF16) };
		CHECK_EQ_INT(L(g, "linear_backward_weight_bf16", DDP_GK_OTHER, bw, 2), DDP_OK);
		for (int t = 0; t < 3; t++) {
			for (int again = 0; again < 2; again++) { /* the same range twice: broadcast once */
				struct ddp_grad_arg up[] = {
					R_(hP, sizeof hP, off[t] * 2, N * 2, 45, 0, W, DDP_DT_BF16),
					R_(fP, sizeof fP, off[t] * 4, N * 4, 41, 1, W, F32),
					R_(hG, sizeof hG, off[t] * 2, N * 2, 46, 2, R, DDP_DT_BF16),
					R_(fM, sizeof fM, off[t] * 4, N * 4, 43, 3, W, F32),
				};
				CHECK_EQ_INT(L(g, "adamw_kernel3", DDP_GK_OPT, up, 4), DDP_OK);
			}
		}
		if (step == 0) {
			CHECK_EQ_STR(evlog, "BC[adamw_kernel3:0+0,adamw_kernel3:1+0,adamw_kernel3:3+0]AR[adamw_kernel3:2+0]"
					    "BC[adamw_kernel3:0+256,adamw_kernel3:1+512,adamw_kernel3:3+512]AR[adamw_kernel3:2+256]"
					    "BC[adamw_kernel3:0+384,adamw_kernel3:1+768,adamw_kernel3:3+768]AR[adamw_kernel3:2+384]");
			evlog[0] = '\0';
		}
	}
	/* step 2: the last two ranges are adjacent (one collective), the first
	 * is followed by padding (its own) */
	CHECK_EQ_STR(evlog, "|E1|AR[adamw_kernel3:2+0,adamw_kernel3:2+256,adamw_kernel3:2+384]");
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), 3 * N * 2);
	struct ddp_grad_buf *gb = NULL;
	for (size_t i = 0; i < ddp_grad_nbufs(g); i++)
		if (ddp_grad_buf_at(g, i)->role == DDP_GR_GRAD)
			gb = ddp_grad_buf_at(g, i);
	REQUIRE(gb);
	CHECK_EQ_INT(gb->dtype, DDP_DT_BF16);
	CHECK_EQ_INT(gb->count, N);
	/* what the last launch read, for the invariant check: its four ranges */
	CHECK_EQ_INT(nlast_reads, 4);
	CHECK(last_reads[2].ptr == (uintptr_t)hG + 192 * 2 && last_reads[2].bytes == N * 2);
	CHECK_EQ_INT(last_reads[2].role, DDP_GR_GRAD);
	ddp_grad_free(g);
}

/* a reader's candidate that no optimizer reads is dropped after step 1 */
TEST(unconfirmed_candidate_is_dropped)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	static float scratch[2 * N];
	for (int step = 0; step < 2; step++) {
		flat_backward(g);
		struct ddp_grad_arg nm[] = { A(fG, sizeof fG, 42, 0, R, F32), A(scratch, sizeof scratch, 47, 1, R, F32),
					     A(&norm1, 4, 15, 2, W, F32) };
		CHECK_EQ_INT(L(g, "grad_norm", DDP_GK_READER, nm, 3), DDP_OK);
		struct ddp_grad_arg up[] = { A(fP, sizeof fP, 41, 0, W, F32), A(fG, sizeof fG, 42, 1, R, F32) };
		CHECK_EQ_INT(L(g, "sgd_update", DDP_GK_OPT, up, 2), DDP_OK);
	}
	/* step 1 averages both candidates at the reader; step 2 only the gradient */
	CHECK_EQ_STR(evlog, "AR[grad_norm:0,grad_norm:1]BC[sgd_update:0]|E1|AR[sgd_update:1]");
	CHECK_EQ_INT(count_role(g, DDP_GR_CAND), 0);
	ddp_grad_free(g);
}


/* ---- explicit launches (PyTorch's decoded kernels): gradients as roles */

#define CHECK_STR_CONTAINS(hay, needle) do { \
	if (!strstr((hay), (needle))) \
		CHECK_FAIL_("'%s' not in '%.300s'", (needle), (hay)); \
} while (0)

static float seg[4096]; /* one caching-allocator segment: every tensor a range of it */
#define SEG_ID 77

/* tensor [off, off + n) floats of seg in list `list` (index t) */
static struct ddp_grad_arg X(size_t off, size_t n, int list, int t, int access)
{
	struct ddp_grad_arg a = R_(seg, sizeof seg, off * 4, n * 4, SEG_ID, list, access, F32);
	a.in_struct = 1;
	a.word = (uint16_t)t;
	a.tlist = (uint8_t)list;
	return a;
}

static ddp_result XL(struct ddp_grad *g, const char *name, int cls, int grad_list, int boundary, uint32_t kid,
		     const struct ddp_grad_arg *args, uint32_t n)
{
	struct ddp_grad_launch l = { .kname = name, .kid = kid, .kclass = (uint8_t)cls, .nargs = n, .args = args,
				     .explicit_ranges = 1, .grad_list = (uint8_t)grad_list,
				     .boundary = (uint8_t)boundary };
	return launch(g, &l);
}

#define NL DDP_GRAD_NO_LIST
#define RW (DDP_GA_READ | DDP_GA_WRITE)

/* foreach AdamW's first two ops: mul_(params) (opens the phase), then
 * lerp_(exp_avgs, grads): params at 0 and 64, states at 128 and 192 */
static void x_adamw(struct ddp_grad *g, size_t g0off, size_t g1off)
{
	struct ddp_grad_arg mul[] = { X(0, 16, 0, 0, RW), X(64, 16, 0, 1, RW) };
	CHECK_EQ_INT(XL(g, "mul", DDP_GK_OPT, NL, 0, 1, mul, 2), DDP_OK);
	struct ddp_grad_arg lerp[] = { X(128, 16, 0, 0, RW), X(192, 16, 0, 1, RW), X(g0off, 16, 1, 0, R),
				       X(g1off, 16, 1, 1, R) };
	CHECK_EQ_INT(XL(g, "lerp", DDP_GK_OPT, NL, 0, 2, lerp, 4), DDP_OK);
}

static void x_write(struct ddp_grad *g, size_t off)
{
	struct ddp_grad_arg w[] = { X(off, 16, 0, 0, DDP_GA_WRITE), X(1024, 16, 1, 0, R) };
	CHECK_EQ_INT(XL(g, "add", DDP_GK_OTHER, NL, 0, 9, w, 2), DDP_OK);
}

TEST(explicit_gradients_are_roles_not_addresses)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	x_write(g, 256);
	x_write(g, 320);
	x_adamw(g, 256, 320);
	CHECK_STR_CONTAINS(evlog, "AR[lerp:1.0+1024,lerp:1.1+1280]");
	CHECK_STR_CONTAINS(evlog, "BC[mul:0.0+0,mul:0.1+256]");
	/* step 2: set_to_none, the new gradients elsewhere; 256 now holds an
	 * activation (written, read by nobody as a gradient) */
	evlog[0] = '\0';
	x_write(g, 256);
	x_write(g, 512);
	x_write(g, 576);
	x_adamw(g, 512, 576);
	CHECK_STR_CONTAINS(evlog, "|E1|");
	CHECK_STR_CONTAINS(evlog, "AR[lerp:1.0+2048,lerp:1.1+2304]");
	CHECK(!strstr(evlog, "+1024"));
	CHECK(!strstr(evlog, "BC["));
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), 2 * 16 * 4);
	ddp_grad_free(g);
}

TEST(explicit_unseen_writes_are_averaged_each_step)
{
	/* the GEMMs that write the gradients are invisible (TMA
	 * descriptors): nothing marks them dirty, the step does */
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	x_adamw(g, 256, 320);
	CHECK_STR_CONTAINS(evlog, "AR[lerp:1.0+1024,lerp:1.1+1280]");
	evlog[0] = '\0';
	x_adamw(g, 256, 320); /* mul_ on the same params again: the next step */
	CHECK_STR_CONTAINS(evlog, "|E1|");
	CHECK_STR_CONTAINS(evlog, "AR[lerp:1.0+1024,lerp:1.1+1280]");
	ddp_grad_free(g);
}

static void x_unscale(struct ddp_grad *g)
{
	struct ddp_grad_arg u[] = { X(256, 16, 0, 0, RW), X(320, 16, 0, 1, RW) };
	CHECK_EQ_INT(XL(g, "unscale", DDP_GK_READER, 0, 0, 3, u, 2), DDP_OK);
}

static void x_scaler_update(struct ddp_grad *g)
{
	struct ddp_grad_arg a[] = { A(act, sizeof act, 9, 0, W, F32) };
	struct ddp_grad_launch l = { .kname = "amp_update_scale", .kid = 4, .kclass = DDP_GK_OTHER, .nargs = 1,
				     .args = a, .boundary = 1 };
	CHECK_EQ_INT(launch(g, &l), DDP_OK);
}

TEST(explicit_skipped_step_ends_at_the_scaler_update)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	x_unscale(g); /* inf: no optimizer */
	CHECK_STR_CONTAINS(evlog, "AR[unscale:0.0+1024,unscale:0.1+1280]");
	x_scaler_update(g);
	evlog[0] = '\0';
	x_unscale(g); /* the next iteration's gradients, written unseen */
	CHECK_STR_CONTAINS(evlog, "AR[unscale:0.0+1024,unscale:0.1+1280]");
	evlog[0] = '\0';
	x_adamw(g, 256, 320); /* averaged at the unscale: not again */
	CHECK(!strstr(evlog, "AR["));
	ddp_grad_free(g);
	/* without the boundary, the unscale naming its gradients again is the
	 * next iteration too (explicit_reader_again_is_the_next_iteration) */
	g = fresh(DDP_DT_UNKNOWN);
	x_unscale(g);
	evlog[0] = '\0';
	x_unscale(g);
	CHECK_STR_CONTAINS(evlog, "AR[unscale:0.0+1024,unscale:0.1+1280]");
	ddp_grad_free(g);
}

TEST(explicit_neutral_consumer_is_no_step)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg norm[] = { X(256, 16, 0, 0, R), X(320, 16, 0, 1, R) };
	CHECK_EQ_INT(XL(g, "lpnorm", DDP_GK_READER, 0, 0, 5, norm, 2), DDP_OK);
	CHECK_STR_CONTAINS(evlog, "AR[lpnorm:0.0+1024,lpnorm:0.1+1280]");
	evlog[0] = '\0';
	struct ddp_grad_arg clip[] = { X(256, 16, 0, 0, RW), X(320, 16, 0, 1, RW) };
	CHECK_EQ_INT(XL(g, "clip_mul", DDP_GK_NEUTRAL, NL, 0, 6, clip, 2), DDP_OK);
	CHECK_EQ_INT(ddp_grad_steps(g), 0);
	CHECK(!strstr(evlog, "AR[") && !strstr(evlog, "BC["));
	x_adamw(g, 256, 320); /* the clipped gradients stay averaged */
	CHECK(!strstr(evlog, "AR["));
	CHECK_EQ_INT(ddp_grad_steps(g), 1);
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), 2 * 16 * 4);
	ddp_grad_free(g);
}

TEST(explicit_state_written_this_step_is_no_gradient)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	x_adamw(g, 256, 320);
	evlog[0] = '\0';
	/* sqrt(exp_avgs) out of place: list 0 read (written by lerp_ this
	 * phase: state, not gradients), list 1 written only: no broadcast */
	struct ddp_grad_arg sq[] = { X(128, 16, 0, 0, R), X(192, 16, 0, 1, R), X(640, 16, 1, 0, W),
				     X(704, 16, 1, 1, W) };
	CHECK_EQ_INT(XL(g, "sqrt", DDP_GK_OPT, NL, 0, 7, sq, 4), DDP_OK);
	CHECK(!strstr(evlog, "AR[") && !strstr(evlog, "BC["));
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), 2 * 16 * 4);
	ddp_grad_free(g);
}


/* foreach Adam with weight decay: grads = _foreach_add(grads, params,
 * alpha=wd) reads the parameters read-only beside the gradients, before
 * any op of the update wrote either; then lerp_(exp_avgs, grads) and the
 * parameters' addcdiv_.  Params at 0 and 64, exp_avgs at 128 and 192,
 * gradients at 256 and 320, the sums at 448 and 512. */
static void x_adam_wd(struct ddp_grad *g)
{
	struct ddp_grad_arg add[] = { X(256, 16, 0, 0, R), X(320, 16, 0, 1, R), X(0, 16, 1, 0, R),
				      X(64, 16, 1, 1, R),  X(448, 16, 2, 0, W), X(512, 16, 2, 1, W) };
	CHECK_EQ_INT(XL(g, "add", DDP_GK_OPT, NL, 0, 11, add, 6), DDP_OK);
	struct ddp_grad_arg lerp[] = { X(128, 16, 0, 0, RW), X(192, 16, 0, 1, RW), X(448, 16, 1, 0, R),
				       X(512, 16, 1, 1, R) };
	CHECK_EQ_INT(XL(g, "lerp", DDP_GK_OPT, NL, 0, 2, lerp, 4), DDP_OK);
	struct ddp_grad_arg upd[] = { X(0, 16, 0, 0, RW), X(64, 16, 0, 1, RW), X(128, 16, 1, 0, R),
				      X(192, 16, 1, 1, R) };
	CHECK_EQ_INT(XL(g, "addcdiv", DDP_GK_OPT, NL, 0, 12, upd, 4), DDP_OK);
}

TEST(explicit_parameters_read_beside_gradients_are_no_gradients)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	for (int step = 1; step <= 3; step++) {
	evlog[0] = '\0';
		x_write(g, 256); /* backward: the gradients */
		x_write(g, 320);
		x_adam_wd(g);
		/* only the gradients are averaged, every step */
		CHECK_STR_CONTAINS(evlog, "AR[add:0.0+1024,add:0.1+1280]");
		CHECK(!strstr(evlog, "add:1."));
		/* parameters and state broadcast once, before their first update */
		if (step == 1)
			CHECK_STR_CONTAINS(evlog, "BC[addcdiv:0.0+0,addcdiv:0.1+256]");
		else
			CHECK(!strstr(evlog, "BC["));
	}
	CHECK_EQ_INT(ddp_grad_steps(g), 3);
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), 2 * 16 * 4);
	ddp_grad_free(g);
	/* no list written in step 1 (the gradients' writers unseen): no
	 * evidence, both lists averaged as before (extra bytes, never fewer) */
	g = fresh(DDP_DT_UNKNOWN);
	evlog[0] = '\0';
	x_adam_wd(g);
	CHECK_STR_CONTAINS(evlog, "add:1.0+0");
	CHECK_STR_CONTAINS(evlog, "add:0.0+1024");
	ddp_grad_free(g);
}


static ddp_result m_copy(void *ctx, uint64_t dst, uint64_t src, uint64_t bytes, void *st)
{
	char b[64];
	(void)ctx, (void)st;
	snprintf(b, sizeof b, "CP[+%llu<-+%llu:%llu]", (unsigned long long)(dst - (uint64_t)(uintptr_t)seg),
		 (unsigned long long)(src - (uint64_t)(uintptr_t)seg), (unsigned long long)bytes);
	logf_(b);
	return DDP_OK;
}

/* foreach SGD with momentum: step 1 is bufs = clone(grads) (device copies),
 * add_(params, bufs); later steps mul_(bufs), add_(bufs, grads),
 * add_(params, bufs).  Params at 0 and 64, momentum at 128 and 192,
 * gradients at 256 and 320 (floats). */
static void x_sgd_momentum(struct ddp_grad *g, int step, int copies_known)
{
	x_write(g, 256); /* backward */
	x_write(g, 320);
	struct ddp_grad_arg upd[] = { X(0, 16, 0, 0, RW), X(64, 16, 0, 1, RW), X(128, 16, 1, 0, R),
				      X(192, 16, 1, 1, R) };
	if (step == 1) {
		uint64_t b = (uint64_t)(uintptr_t)seg;
		if (copies_known) {
			ddp_grad_copied(g, b + 128 * 4, b, sizeof seg, SEG_ID, b + 256 * 4, b, sizeof seg, SEG_ID, 64);
			ddp_grad_copied(g, b + 192 * 4, b, sizeof seg, SEG_ID, b + 320 * 4, b, sizeof seg, SEG_ID, 64);
		}
		CHECK_EQ_INT(XL(g, "add", DDP_GK_OPT, NL, 0, 21, upd, 4), DDP_OK);
		return;
	}
	struct ddp_grad_arg mul[] = { X(128, 16, 0, 0, RW), X(192, 16, 0, 1, RW) };
	CHECK_EQ_INT(XL(g, "mul", DDP_GK_OPT, NL, 0, 22, mul, 2), DDP_OK);
	struct ddp_grad_arg mom[] = { X(128, 16, 0, 0, RW), X(192, 16, 0, 1, RW), X(256, 16, 1, 0, R),
				      X(320, 16, 1, 1, R) };
	CHECK_EQ_INT(XL(g, "add", DDP_GK_OPT, NL, 0, 23, mom, 4), DDP_OK);
	CHECK_EQ_INT(XL(g, "add", DDP_GK_OPT, NL, 0, 21, upd, 4), DDP_OK);
}

TEST(explicit_clone_of_gradients_is_averaged_at_its_source)
{
	struct ddp_grad_ops o = ops;
	exec_copy = m_copy;
	struct ddp_grad *g = NULL;
	evlog[0] = '\0';
	REQUIRE(ddp_grad_new(&o, DDP_DT_UNKNOWN, &g) == DDP_OK);
	x_sgd_momentum(g, 1, 1);
	/* the gradients averaged, then the clones made again from them; the
	 * parameters broadcast, the clones (momentum) not */
	CHECK_STR_CONTAINS(evlog, "AR[add:1.0+1024,add:1.1+1280]CP[+512<-+1024:64]CP[+768<-+1280:64]");
	CHECK_STR_CONTAINS(evlog, "BC[add:0.0+0,add:0.1+256]");
	CHECK(!strstr(evlog, "+512,") && !strstr(evlog, "BC[add:1."));
	for (int step = 2; step <= 3; step++) {
		evlog[0] = '\0';
		x_sgd_momentum(g, step, 1);
		CHECK_STR_CONTAINS(evlog, "AR[add:1.0+1024,add:1.1+1280]");
		CHECK(!strstr(evlog, "BC[") && !strstr(evlog, "CP["));
	}
	CHECK_EQ_INT(ddp_grad_steps(g), 3);
	ddp_grad_free(g);
	/* control: the copies unknown (as before): the clones are averaged in
	 * step 1 instead of the gradients, and broadcast again in step 2 */
	g = fresh(DDP_DT_UNKNOWN);
	x_sgd_momentum(g, 1, 0);
	CHECK_STR_CONTAINS(evlog, "AR[add:1.0+512,add:1.1+768]");
	evlog[0] = '\0';
	x_sgd_momentum(g, 2, 0);
	CHECK_STR_CONTAINS(evlog, "BC[mul:0.0+512,mul:0.1+768]");
	ddp_grad_free(g);
}


TEST(explicit_reader_again_is_the_next_iteration)
{
	/* foreach=False optimizers are not recognised: only the norm's reader
	 * names the gradients, once per iteration; written unseen each time */
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg norm[] = { X(256, 16, 0, 0, R), X(320, 16, 0, 1, R) };
	CHECK_EQ_INT(XL(g, "lpnorm", DDP_GK_READER, 0, 0, 5, norm, 2), DDP_OK);
	CHECK_STR_CONTAINS(evlog, "AR[lpnorm:0.0+1024,lpnorm:0.1+1280]");
	evlog[0] = '\0';
	CHECK_EQ_INT(XL(g, "lpnorm", DDP_GK_READER, 0, 0, 5, norm, 2), DDP_OK);
	CHECK_STR_CONTAINS(evlog, "AR[lpnorm:0.0+1024,lpnorm:0.1+1280]");
	ddp_grad_free(g);
	/* a tensor multi_tensor_apply split across two launches of one kernel
	 * (the last of the first, carried into the second): the same iteration */
	g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg l1[] = { X(256, 16, 0, 0, R), X(320, 16, 0, 1, R) };
	struct ddp_grad_arg l2[] = { X(320, 16, 0, 0, R), X(384, 16, 0, 1, R) };
	CHECK_EQ_INT(XL(g, "lpnorm", DDP_GK_READER, 0, 0, 5, l1, 2), DDP_OK);
	evlog[0] = '\0';
	CHECK_EQ_INT(XL(g, "lpnorm", DDP_GK_READER, 0, 0, 5, l2, 2), DDP_OK);
	CHECK_STR_CONTAINS(evlog, "AR[lpnorm:0.1+1536]");
	CHECK(!strstr(evlog, "+1280"));
	ddp_grad_free(g);
}


TEST(unbounded_gradient_in_a_tensor_segment_is_refused)
{
	/* an old-style optimizer kernel (no element count) reading a buffer of
	 * PyTorch's caching-allocator segment: averaged whole it would take
	 * every other tensor of the segment with it */
	static float big[4096];
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg norm[] = { X(256, 16, 0, 0, R) };
	CHECK_EQ_INT(XL(g, "lpnorm", DDP_GK_READER, 0, 0, 5, norm, 1), DDP_OK);
	struct ddp_grad_arg opt[] = { A(big, sizeof big, 99, 0, W, F32), A(seg, sizeof seg, SEG_ID, 1, R, F32) };
	CHECK_EQ_INT(L(g, "my_adam", DDP_GK_OPT, opt, 2), DDP_ERR_UNSUPPORTED);
	CHECK(strstr(ddp_grad_last_error(g), "PyTorch's tensors") != NULL);
	ddp_grad_free(g);
	/* negative control: the same launch on an allocation of its own */
	static float own[4096];
	g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg opt2[] = { A(big, sizeof big, 99, 0, W, F32), A(own, sizeof own, 98, 1, R, F32) };
	CHECK_EQ_INT(L(g, "my_adam", DDP_GK_OPT, opt2, 2), DDP_OK);
	ddp_grad_free(g);
}

/* darknet-like generic kernels (ddp_flow.h): no kernel named like an
 * optimizer; the update is found from the data flow */
static float fw0[N], fdw0[N], fw1[N], fdw1[N], fm0[N], fv0[N], fact[2 * N];

static void flow_fwd_bwd(struct ddp_grad *g)
{
	struct ddp_grad_arg f[] = { A(fw0, sizeof fw0, 31, 0, R, F32), A(fw1, sizeof fw1, 33, 1, R, F32),
				    A(fact, sizeof fact, 39, 2, W, F32) };
	CHECK_EQ_INT(L(g, "gemm_nt", DDP_GK_OTHER, f, 3), DDP_OK);
	struct ddp_grad_arg b[] = { A(fact, sizeof fact, 39, 0, R, F32), A(fdw0, sizeof fdw0, 32, 1, W, F32),
				    A(fdw1, sizeof fdw1, 34, 2, W, F32) };
	CHECK_EQ_INT(L(g, "gemm_tn", DDP_GK_OTHER, b, 3), DDP_OK);
}

/* axpy(n, a, X, Y): Y += a X, whole allocations bounded by n */
static void flow_axpy(struct ddp_grad *g, float *x, uint32_t xid, float *y, uint32_t yid)
{
	struct ddp_grad_arg a[] = { R_(x, sizeof fw0, 0, sizeof fw0, xid, 2, R, F32),
				    R_(y, sizeof fw0, 0, sizeof fw0, yid, 3, W, F32) };
	CHECK_EQ_INT(L(g, "axpy", DDP_GK_OTHER, a, 2), DDP_OK);
}

static void flow_scal(struct ddp_grad *g, float *x, uint32_t xid)
{
	struct ddp_grad_arg a[] = { R_(x, sizeof fw0, 0, sizeof fw0, xid, 2, W, F32) };
	CHECK_EQ_INT(L(g, "scal", DDP_GK_OTHER, a, 1), DDP_OK);
}

/* darknet's SGD: axpy(-decay*batch, w, dw); axpy(lr/batch, dw, w); scal(momentum, dw) */
static void flow_sgd(struct ddp_grad *g)
{
	flow_axpy(g, fw0, 31, fdw0, 32);
	flow_axpy(g, fdw0, 32, fw0, 31);
	flow_scal(g, fdw0, 32);
	flow_axpy(g, fw1, 33, fdw1, 34);
	flow_axpy(g, fdw1, 34, fw1, 33);
	flow_scal(g, fdw1, 34);
}

TEST(flow_generic_sgd_found_from_the_data_flow)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	flow_fwd_bwd(g);
	CHECK_EQ_STR(evlog, "");
	flow_sgd(g);
	/* each tensor's cut: the parameter broadcast, its gradient averaged
	 * BEFORE the update reads it; scal(momentum, dw) leaves it clean */
	CHECK_EQ_STR(evlog, "BC[axpy:2]AR[axpy:3]BC[axpy:2]AR[axpy:3]");
	evlog[0] = '\0';
	flow_fwd_bwd(g); /* the forward reads an updated parameter: step 1 ends */
	flow_sgd(g);
	CHECK_EQ_STR(evlog, "|E1|AR[axpy:3,axpy:3]");
	evlog[0] = '\0';
	flow_fwd_bwd(g); /* steady state: the forward is no update launch */
	flow_sgd(g);
	CHECK_EQ_STR(evlog, "|E2|AR[axpy:3,axpy:3]");
	CHECK_EQ_INT(ddp_grad_steps(g), 3);
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), 2 * sizeof fdw0);
	ddp_grad_free(g);
}

/* Adam whose m is formed by scal and axpy before adam_kernel reads it */
static void flow_adam(struct ddp_grad *g)
{
	flow_axpy(g, fw0, 31, fdw0, 32);   /* the cut: weight decay */
	flow_scal(g, fm0, 35);             /* m = b1 * m */
	flow_axpy(g, fdw0, 32, fm0, 35);   /* m += (1-b1) g */
	flow_scal(g, fv0, 36);             /* v = b2 * v (+ g*g, elided) */
	struct ddp_grad_arg a[] = { R_(fw0, sizeof fw0, 0, sizeof fw0, 31, 1, W, F32),
				    R_(fm0, sizeof fm0, 0, sizeof fm0, 35, 2, R, F32),
				    R_(fv0, sizeof fv0, 0, sizeof fv0, 36, 3, R, F32) };
	CHECK_EQ_INT(L(g, "adam_kernel", DDP_GK_OPT, a, 3), DDP_OK);
}

TEST(flow_adam_moments_are_state_not_gradients)
{
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	flow_fwd_bwd(g);
	flow_adam(g);
	/* dw averaged at the cut; m and v broadcast once as state, never averaged */
	CHECK_EQ_STR(evlog, "BC[axpy:2]AR[axpy:3]BC[adam_kernel:2,adam_kernel:3]");
	for (size_t i = 0; i < ddp_grad_nbufs(g); i++) {
		struct ddp_grad_buf *b = ddp_grad_buf_at(g, i);
		if (b->base == (uintptr_t)fm0 || b->base == (uintptr_t)fv0) {
			CHECK_EQ_INT(b->role, DDP_GR_PARAM);
			CHECK_EQ_INT(b->evidence, DDP_GE_FLOW_STATE);
		}
	}
	evlog[0] = '\0';
	flow_fwd_bwd(g);
	flow_adam(g);
	CHECK_EQ_STR(evlog, "|E1|AR[axpy:3]");
	ddp_grad_free(g);
	/* negative control: the rules before the data flow average m and v */
	g = fresh(DDP_DT_UNKNOWN);
	ddp_grad_set_debug_avg_state(g, 1);
	flow_fwd_bwd(g);
	flow_adam(g);
	CHECK(strstr(evlog, "AR[adam_kernel:2,adam_kernel:3]") != NULL);
	CHECK(strstr(evlog, "AR[axpy:3]") == NULL);
	ddp_grad_free(g);
}

/* an elementwise forward whose output has a parameter's size is no update:
 * its output was written by the launch that read the parameter, not after */
TEST(flow_forward_output_is_no_gradient)
{
	static float x[N], p[N], y[N], gr[N];
	struct ddp_grad *g = fresh(DDP_DT_UNKNOWN);
	struct ddp_grad_arg f[] = { R_(x, sizeof x, 0, sizeof x, 41, 0, R, F32), R_(p, sizeof p, 0, sizeof p, 42, 1, R, F32),
				    R_(y, sizeof y, 0, sizeof y, 43, 2, W, F32) };
	struct ddp_grad_arg b[] = { A(y, sizeof y, 43, 0, R, F32), A(gr, sizeof gr, 44, 1, W, F32),
				    A(fact, sizeof fact, 39, 2, R, F32) };
	struct ddp_grad_arg u[] = { R_(gr, sizeof gr, 0, sizeof gr, 44, 2, R, F32),
				    R_(p, sizeof p, 0, sizeof p, 42, 3, W, F32) };
	for (int step = 0; step < 3; step++) {
		CHECK_EQ_INT(L(g, "fwd", DDP_GK_OTHER, f, 3), DDP_OK);
		CHECK_EQ_INT(L(g, "bwd", DDP_GK_OTHER, b, 3), DDP_OK);
		CHECK_EQ_INT(L(g, "axpy", DDP_GK_OTHER, u, 2), DDP_OK);
	}
	CHECK_EQ_STR(evlog, "BC[axpy:3]AR[axpy:2]|E1|AR[axpy:2]|E2|AR[axpy:2]");
	CHECK_EQ_INT(ddp_grad_grad_bytes(g), sizeof gr);
	ddp_grad_free(g);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
