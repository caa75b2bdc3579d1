/* SPDX-License-Identifier: MIT
 *
 * test_cycle.c - the steps from the launch stream (runtime/grad/ddp_cycle.c)
 * on synthetic streams: each launch a kernel id and its pointer arguments
 * (allocation, read or written).  A trainer's step reads its weights W in
 * the forward pass and rewrites them in the update; an evaluation step only
 * writes what it reads afterwards.  What is checked: the stop comes at the
 * third step's rewrite (never earlier), after warm-up launches, with a
 * kernel launched twice inside a step, with a gradient accumulation (the
 * micro-step repeats inside the optimizer step), for an untyped update
 * whose pointer runs to its allocation's end; an evaluation loop, a loop
 * whose only rewrite is of an integer buffer (token ids), and a stream with
 * no period are never stopped.  ddp_cycle_rewrote_any (the evidence that
 * no update ran): none for an evaluation loop of const-correct kernels;
 * found for an integer rewrite, a one-off update after the loop, kernels
 * with no const pointer (their pointers may be read); unknown for a launch
 * that writes nothing it shows.  Writes without a kernel
 * (ddp_cycle_host_write): the weights and inputs a program stages are
 * state its launches read; bytes nothing wrote hold none (an output read
 * before its first write, a start-up forward over fresh scratch), until a
 * write of unknown place; a copy over bytes a launch read first rewrites
 * them, a first copy does not.
 */
#define CHECK_MAIN
#include <string.h>
#include "check.h"
#include "ddp_cycle.h"
#include "ddp_dtype.h"

#define KB 4096u

enum { W = 1, X = 2, Y = 3, DW = 4, Z = 5, TOK = 6 }; /* allocation ids */

struct acc {
	uint32_t alloc;
	int wrote;
};

static int g_const_correct; /* the launches' signatures mark const pointers */

/* One launch of kernel kid over the given allocations (each KB bytes at
 * alloc * 1 MiB, bounded, f32 unless the allocation is TOK). */
static int launch(struct ddp_cycle *c, uint32_t kid, const struct acc *a, uint32_t n, int unbounded,
		  struct ddp_cycle_report *rep)
{
	struct ddp_grad_arg args[8];
	memset(args, 0, sizeof args);
	for (uint32_t i = 0; i < n; i++) {
		args[i].base = (uint64_t)a[i].alloc << 20;
		args[i].size = KB;
		args[i].ptr = args[i].base;
		args[i].ext = unbounded ? 0 : KB;
		args[i].bounded = unbounded ? DDP_GB_NONE : DDP_GB_COUNT;
		args[i].alloc_id = a[i].alloc;
		args[i].access = a[i].wrote ? DDP_GA_WRITE : DDP_GA_READ;
		args[i].dtype = a[i].alloc == TOK ? DDP_DT_I32 : DDP_DT_F32;
	}
	struct ddp_grad_launch L = {
		.kname = "k", .kid = kid, .nargs = n, .args = args, .const_correct = (uint8_t)g_const_correct
	};
	return ddp_cycle_launch(c, &L, rep);
}

/* a write without a kernel of allocation a (all of it), as a program
 * stages its weights and inputs: returns ddp_cycle_host_write's answer */
static int stage(struct ddp_cycle *c, uint32_t a)
{
	return ddp_cycle_host_write(c, a, (uint64_t)a << 20, ((uint64_t)a << 20) + KB);
}

#define RD(a) { a, 0 }
#define WR(a) { a, 1 }

/* forward(W, X -> Y), backward(Y, X -> DW), update(DW -> W): returns the
 * launch (1, 2, 3) of this step at which the detector stopped, 0 if none */
static int train_step(struct ddp_cycle *c, int twice, int unbounded_update, int update, struct ddp_cycle_report *r)
{
	const struct acc f[] = { RD(W), RD(X), WR(Y) }, b[] = { RD(Y), RD(X), WR(DW) }, u[] = { RD(DW), WR(W) };
	if (launch(c, 10, f, 3, 0, r))
		return 1;
	if (twice && launch(c, 10, f, 3, 0, r)) /* a kernel launched twice in a row */
		return 1;
	if (launch(c, 11, b, 3, 0, r))
		return 2;
	if (update && launch(c, 12, u, 2, unbounded_update, r))
		return 3;
	return 0;
}

/* the step (1-based) and launch at which a trainer of STEPS steps stops */
static int run_trainer(int steps, int warmup, int twice, int unbounded, int accum, int *launch_at)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	if (ddp_cycle_new(&c) != DDP_OK)
		return -1;
	for (int i = 0; i < warmup; i++) { /* init kernels: written, not repeated */
		const struct acc z[] = { WR(Z) };
		launch(c, 100 + (uint32_t)i, z, 1, 0, &r);
	}
	int stopped = 0;
	for (int s = 1; s <= steps && !stopped; s++)
		for (int m = 1; m <= accum && !stopped; m++) {
			int at = train_step(c, twice, unbounded, m == accum, &r);
			if (at) {
				stopped = s;
				*launch_at = at;
			}
		}
	ddp_cycle_free(c);
	return stopped;
}

TEST(trainer_stops_at_the_third_steps_update)
{
	int at = 0;
	CHECK_EQ_INT(run_trainer(50, 0, 0, 0, 1, &at), 3);
	CHECK_EQ_INT(at, 3); /* the update launch: before it runs */
}

TEST(trainer_after_warmup_stops_at_step_3)
{
	int at = 0;
	CHECK_EQ_INT(run_trainer(50, 5, 0, 0, 1, &at), 3);
	CHECK_EQ_INT(at, 3);
}

TEST(a_kernel_twice_in_a_step_is_no_period)
{
	int at = 0;
	CHECK_EQ_INT(run_trainer(50, 2, 1, 0, 1, &at), 3);
}

TEST(untyped_update_to_the_allocations_end)
{
	int at = 0;
	CHECK_EQ_INT(run_trainer(50, 0, 0, 1, 1, &at), 3);
}

TEST(accumulation_counts_optimizer_steps)
{
	int at = 0;
	CHECK_EQ_INT(run_trainer(50, 0, 0, 0, 4, &at), 3); /* 4 micro-steps per step */
	CHECK_EQ_INT(at, 3);
}

TEST(too_few_steps_never_stop)
{
	int at = 0;
	CHECK_EQ_INT(run_trainer(2, 0, 0, 0, 1, &at), 0);
}

TEST(evaluation_is_never_stopped)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	int stopped = 0;
	for (int s = 0; s < 200; s++) {
		const struct acc f[] = { RD(W), RD(X), WR(Y) }, l[] = { RD(Y), WR(Z) }, o[] = { RD(Z), WR(DW) };
		stopped |= launch(c, 10, f, 3, 0, &r) | launch(c, 13, l, 2, 0, &r) | launch(c, 14, o, 2, 0, &r);
	}
	CHECK(!stopped);
	CHECK_EQ_INT((long long)ddp_cycle_period(c), 3);
	ddp_cycle_free(c);
}

TEST(integer_rewrites_are_no_parameters)
{
	/* generation: the embedding reads the token, the sampler rewrites it */
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	int stopped = 0;
	for (int s = 0; s < 50; s++) {
		const struct acc e[] = { RD(TOK), RD(W), WR(Y) }, smp[] = { RD(Y), WR(TOK) };
		stopped |= launch(c, 20, e, 3, 0, &r) | launch(c, 21, smp, 2, 0, &r);
	}
	CHECK(!stopped);
	ddp_cycle_free(c);
}

TEST(no_period_no_stop)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	int stopped = 0;
	for (uint32_t s = 0; s < 300; s++) { /* every launch a new kernel */
		const struct acc f[] = { RD(W), WR(Y) }, u[] = { RD(Y), WR(W) };
		stopped |= launch(c, 1000 + 2 * s, f, 2, 0, &r) | launch(c, 1001 + 2 * s, u, 2, 0, &r);
	}
	CHECK(!stopped);
	CHECK_EQ_INT((long long)ddp_cycle_period(c), 0);
	ddp_cycle_free(c);
}

TEST(the_report_names_the_rewrite)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	memset(&r, 0, sizeof r);
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	int stopped = 0;
	for (int s = 0; s < 10 && !stopped; s++)
		stopped = train_step(c, 0, 0, 1, &r);
	REQUIRE(stopped == 3);
	CHECK_EQ_INT((long long)r.period, 3);
	CHECK_EQ_INT((long long)r.cycles, 3);
	CHECK_EQ_INT((long long)r.alloc_id, W);
	CHECK_EQ_INT((long long)(r.hi - r.lo), KB);
	CHECK_EQ_INT((long long)(r.lo - r.alloc_base), 0);
	ddp_cycle_free(c);
}

/* 200 steps of forward(W, X -> Y), loss(Y -> Z), out(Z -> DW) */
static void eval_loop(struct ddp_cycle *c)
{
	struct ddp_cycle_report r;
	stage(c, W); /* the weights and the inputs, from the host */
	stage(c, X);
	for (int s = 0; s < 200; s++) {
		const struct acc f[] = { RD(W), RD(X), WR(Y) }, l[] = { RD(Y), WR(Z) }, o[] = { RD(Z), WR(DW) };
		launch(c, 10, f, 3, 0, &r);
		launch(c, 13, l, 2, 0, &r);
		launch(c, 14, o, 2, 0, &r);
	}
}

TEST(evaluation_rewrites_nothing_then_a_one_off_update_does)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	uint64_t n = 0;
	memset(&r, 0, sizeof r);
	g_const_correct = 1;
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	eval_loop(c);
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, &n), 0);
	CHECK_EQ_INT((long long)n, 600);
	const struct acc u[] = { RD(DW), WR(W) }; /* once, after the loop */
	CHECK(!launch(c, 12, u, 2, 0, &r));
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, &n), 1);
	CHECK_EQ_INT((long long)r.alloc_id, W);
	ddp_cycle_free(c);
	g_const_correct = 0;
}

TEST(rewrote_any_counts_integers_and_unknown_constness)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	g_const_correct = 1; /* the sampler rewrites the token ids the embedding read */
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	CHECK_EQ_INT(stage(c, W), 0);
	CHECK_EQ_INT(stage(c, TOK), 0);
	for (int s = 0; s < 5; s++) {
		const struct acc e[] = { RD(TOK), RD(W), WR(Y) }, smp[] = { RD(Y), WR(TOK) };
		launch(c, 20, e, 3, 0, &r);
		launch(c, 21, smp, 2, 0, &r);
	}
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, NULL), 1);
	CHECK_EQ_INT((long long)r.alloc_id, TOK);
	ddp_cycle_free(c);
	g_const_correct = 0; /* no const in the signatures: Y may be read too */
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	stage(c, Y); /* (zeroed at start-up: state) */
	eval_loop(c);
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, NULL), 1);
	ddp_cycle_free(c);
}

/* A start-up forward that reads its fresh outputs (no const pointers, or a
 * GEMM's C with beta 0): bytes nothing wrote hold no state, so the next
 * launch that writes them rewrites nothing; the batch copied over the
 * inputs the forward read does; a first copy into fresh bytes does not. */
TEST(bytes_nothing_wrote_hold_no_state)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	g_const_correct = 0;
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	eval_loop(c);
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, NULL), 0);
	CHECK_EQ_INT(stage(c, TOK), 0); /* fresh: nothing read it */
	CHECK_EQ_INT(stage(c, X), 1);   /* the next batch over what forward read */
	ddp_cycle_free(c);
	/* a write of unknown place: any byte nothing wrote may be state */
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	CHECK_EQ_INT(ddp_cycle_host_write(c, 0, 0, 0), 1);
	eval_loop(c);
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, NULL), 1);
	ddp_cycle_free(c);
	g_const_correct = 1;
	/* the weights' update made on the host: a copy over what forward read */
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	eval_loop(c);
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, NULL), 0);
	CHECK_EQ_INT(stage(c, W), 1);
	ddp_cycle_free(c);
	g_const_correct = 0;
}

TEST(a_launch_that_writes_nothing_it_shows_is_unknown)
{
	struct ddp_cycle *c;
	struct ddp_cycle_report r;
	g_const_correct = 1;
	REQUIRE(ddp_cycle_new(&c) == DDP_OK);
	eval_loop(c);
	const struct acc h[] = { RD(X) }; /* e.g. its pointers in a table in device memory */
	launch(c, 30, h, 1, 0, &r);
	CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, NULL), -1);
	ddp_cycle_free(c);
	g_const_correct = 0;
}

/* A launch that rewrites host-set state in place (ddp_grad_arg.host_set:
 * a CBOW kernel adding into tables copied from the host, reading only the
 * sentences): an update for the evidence and for the cycle rule, though no
 * other launch read the state first; without host_set, nothing. */
static int inplace_launch(struct ddp_cycle *c, int host_set, struct ddp_cycle_report *rep)
{
	struct ddp_grad_arg a[2];
	memset(a, 0, sizeof a);
	for (int i = 0; i < 2; i++) {
		a[i].alloc_id = i ? W : TOK;
		a[i].base = (uint64_t)a[i].alloc_id << 20;
		a[i].size = a[i].ext = KB;
		a[i].ptr = a[i].base;
		a[i].bounded = DDP_GB_COUNT;
		a[i].access = i ? DDP_GA_WRITE : DDP_GA_READ;
		a[i].dtype = i ? DDP_DT_F32 : DDP_DT_I32;
	}
	a[1].host_set = (uint8_t)host_set;
	struct ddp_grad_launch L = { .kname = "cbow", .kid = 30, .nargs = 2, .args = a, .const_correct = 1 };
	return ddp_cycle_launch(c, &L, rep);
}

TEST(an_in_place_rewrite_of_host_set_state_is_an_update)
{
	struct ddp_cycle_report r;
	uint64_t n = 0;
	for (int hs = 0; hs < 2; hs++) {
		struct ddp_cycle *c;
		REQUIRE(ddp_cycle_new(&c) == DDP_OK);
		/* one launch in all: the evidence */
		CHECK(inplace_launch(c, hs, &r) == 0);
		CHECK_EQ_INT(ddp_cycle_rewrote_any(c, &r, &n), hs);
		/* one launch per step (host_set only at the first: the host
		 * copy is gone after it): stopped at the third, with host_set */
		int stopped = 0;
		for (int s = 2; s <= 10 && !stopped; s++)
			if (inplace_launch(c, 0, &r))
				stopped = s;
		CHECK_EQ_INT(stopped, hs ? 3 : 0);
		ddp_cycle_free(c);
	}
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
