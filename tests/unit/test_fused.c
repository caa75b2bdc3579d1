/* SPDX-License-Identifier: MIT
 *
 * test_fused.c - input data and fused updates (runtime/grad/ddp_fused.c) on
 * synthetic launches: each argument an allocation (KB bytes at id * 1 MiB,
 * whole), read or written, f32 or i32.  A fused update (a CBOW kernel
 * adding into its tables from the sentences; sgd_update rewriting factors
 * from ratings and index arrays) is found before it runs; never a trainer
 * with a gradient: an optimizer reading what backward wrote, a host-made
 * gradient shaped like the weights, a forward writing a fresh activation,
 * an update that only scales its state, a kernel that writes its input.
 * Kernel writes end the host-set status of what they reach; copies merge.
 */
#define CHECK_MAIN
#include <string.h>
#include "check.h"
#include "ddp_dtype.h"
#include "ddp_fused.h"

#define KB 4096u

/* allocation ids; SMALL holds KB/2 bytes */
enum { W = 1, X = 2, Y = 3, G = 4, IDX = 5, SMALL = 6, M = 7 };

struct acc {
	uint32_t alloc;
	int wrote, i32;
};

static uint64_t size_of(uint32_t a)
{
	return a == SMALL ? KB / 2 : KB;
}

static void copy(struct ddp_fused *f, uint32_t a)
{
	ddp_fused_host_copy(f, a, (uint64_t)a << 20, ((uint64_t)a << 20) + size_of(a));
}

static int launch(struct ddp_fused *f, const struct acc *a, uint32_t n, struct ddp_fused_report *rep)
{
	struct ddp_grad_arg args[8];
	memset(args, 0, sizeof args);
	for (uint32_t i = 0; i < n; i++) {
		args[i].base = (uint64_t)a[i].alloc << 20;
		args[i].size = size_of(a[i].alloc);
		args[i].ptr = args[i].base;
		args[i].alloc_id = a[i].alloc;
		args[i].param = (uint16_t)i;
		args[i].access = a[i].wrote ? DDP_GA_WRITE : DDP_GA_READ;
		args[i].dtype = a[i].i32 ? DDP_DT_I32 : DDP_DT_F32;
	}
	struct ddp_grad_launch L = { .kname = "k", .kid = 1, .nargs = n, .args = args, .const_correct = 1 };
	return ddp_fused_launch(f, &L, rep);
}

#define RD(a) { a, 0, 0 }
#define RDI(a) { a, 0, 1 }
#define WR(a) { a, 1, 0 }
#define WRI(a) { a, 1, 1 }

TEST(cbow_kernel_is_a_fused_update)
{
	struct ddp_fused *f;
	struct ddp_fused_report r;
	REQUIRE(ddp_fused_new(&f) == DDP_OK);
	copy(f, IDX); /* the sentences */
	copy(f, W);   /* syn0 */
	copy(f, M);   /* syn1neg */
	const struct acc k[] = { RDI(IDX), WR(W), WR(M) };
	memset(&r, 0, sizeof r);
	CHECK(launch(f, k, 3, &r) == 1);
	CHECK_EQ_INT(r.state_alloc, W);
	CHECK_EQ_INT(r.state_param, 1);
	CHECK_EQ_INT((long long)r.state_bytes, KB);
	CHECK_EQ_INT(r.data_alloc, IDX);
	CHECK_EQ_INT(r.data_dtype, DDP_DT_I32);
	/* its write ended the tables' host-set status; the data keeps it */
	CHECK(!ddp_fused_host_set(f, W, (uint64_t)W << 20, ((uint64_t)W << 20) + KB));
	CHECK(ddp_fused_host_set(f, IDX, (uint64_t)IDX << 20, ((uint64_t)IDX << 20) + KB));
	ddp_fused_free(f);
}

TEST(sgd_update_with_ratings_and_indices_is_a_fused_update)
{
	struct ddp_fused *f;
	struct ddp_fused_report r;
	REQUIRE(ddp_fused_new(&f) == DDP_OK);
	copy(f, IDX);   /* row pointers */
	copy(f, SMALL); /* ratings: not the factors' shape */
	copy(f, W);     /* user factors */
	const struct acc k[] = { RDI(IDX), RD(SMALL), WR(W) };
	CHECK(launch(f, k, 3, &r) == 1);
	CHECK_EQ_INT(r.ninputs, 2);
	ddp_fused_free(f);
}

TEST(an_optimizer_reading_a_backward_gradient_is_not)
{
	struct ddp_fused *f;
	struct ddp_fused_report r;
	REQUIRE(ddp_fused_new(&f) == DDP_OK);
	copy(f, X);
	copy(f, W);
	const struct acc fwd[] = { RD(W), RD(X), WR(Y) }, bwd[] = { RD(Y), RD(X), WR(G) }, upd[] = { RD(G), WR(W) };
	CHECK(launch(f, fwd, 3, &r) == 0); /* a fresh activation is no host-set state */
	CHECK(launch(f, bwd, 3, &r) == 0);
	CHECK(launch(f, upd, 2, &r) == 0); /* reads no input data */
	/* an update reading the batch too: its gradient (kernel-written,
	 * the weights' shape) is a separate gradient */
	copy(f, W);
	const struct acc upd2[] = { RD(G), RD(X), WR(W) };
	CHECK(launch(f, upd2, 3, &r) == 0);
	ddp_fused_free(f);
}

TEST(a_host_made_gradient_shaped_like_the_weights_is_not)
{
	struct ddp_fused *f;
	struct ddp_fused_report r;
	REQUIRE(ddp_fused_new(&f) == DDP_OK);
	copy(f, W);
	copy(f, G); /* computed on the host, copied each step */
	const struct acc upd[] = { RD(G), WR(W) };
	CHECK(launch(f, upd, 2, &r) == 0);
	ddp_fused_free(f);
}

TEST(scaling_state_and_writing_the_input_are_not)
{
	struct ddp_fused *f;
	struct ddp_fused_report r;
	REQUIRE(ddp_fused_new(&f) == DDP_OK);
	copy(f, W);
	const struct acc scale[] = { WR(W) };
	CHECK(launch(f, scale, 1, &r) == 0); /* no input data read */
	copy(f, X);
	copy(f, IDX);
	const struct acc inplace_int[] = { RDI(IDX), WRI(X) };
	CHECK(launch(f, inplace_int, 2, &r) == 0); /* integer "state" is no float state */
	ddp_fused_free(f);
}

TEST(copies_merge_and_kernel_writes_cut)
{
	struct ddp_fused *f;
	REQUIRE(ddp_fused_new(&f) == DDP_OK);
	uint64_t b = (uint64_t)X << 20;
	ddp_fused_host_copy(f, X, b, b + 1024);
	ddp_fused_host_copy(f, X, b + 1024, b + KB);
	CHECK(ddp_fused_host_set(f, X, b, b + KB));
	CHECK(!ddp_fused_host_set(f, X, b, b + KB + 1));
	CHECK(!ddp_fused_host_set(f, Y, b, b + 1)); /* another allocation */
	/* a launch writing from +2048 to the end cuts that part only */
	struct ddp_grad_arg a = { .base = b, .size = KB, .ptr = b + 2048, .alloc_id = X,
				  .access = DDP_GA_WRITE, .dtype = DDP_DT_F32 };
	struct ddp_grad_launch L = { .kname = "k", .nargs = 1, .args = &a };
	struct ddp_fused_report r;
	CHECK(ddp_fused_launch(f, &L, &r) == 0);
	CHECK(ddp_fused_host_set(f, X, b, b + 2048));
	CHECK(!ddp_fused_host_set(f, X, b + 2048, b + 2049));
	/* one with an exact extent inside the run splits it in two */
	a.ptr = b + 512;
	a.ext = 512;
	a.bounded = DDP_GB_EXACT;
	CHECK(ddp_fused_launch(f, &L, &r) == 0);
	CHECK(ddp_fused_host_set(f, X, b, b + 512));
	CHECK(ddp_fused_host_set(f, X, b + 1024, b + 2048));
	CHECK(!ddp_fused_host_set(f, X, b + 512, b + 513));
	CHECK(!ddp_fused_host_set(f, X, b, b + 2048));
	ddp_fused_free(f);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
