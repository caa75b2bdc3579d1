/* SPDX-License-Identifier: MIT
 *
 * test_extent.c - a launch's pointer extents from its integer arguments and
 * grid (runtime/grad/ddp_extent.c), against extents counted here by
 * enumerating the elements a grid-strided kernel touches (instance l,
 * element i at l * stride + i): llm.c's adamw_kernel3 and per-tensor norm
 * shapes (the union over the layers, not one layer's count), one instance
 * (the count rule as before), and what is not known, every pointer then
 * unbounded and never one instance's count: instances with no stride
 * argument, a stride apart from the count, a 3-D grid, a union that does
 * not fit, overflow.  Measured extents (ddp_extent_measured) on host memory
 * with a simulated 2-D SGD kernel: a rule learned from the changed bytes
 * (rows x ld, and (rows - 1) x ld + cols for padded lines), the gradient
 * taking it, the rule applied after the calibration steps; a count that
 * stands; the stops: a rule that fails its check, a change no rule
 * describes, a write before the pointer; measuring off keeps the guess
 * (the e2e negative control's mechanism).
 */
#define CHECK_MAIN
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "ddp_extent.h"
#include "ddp_grad.h"

/* One past the last element a grid-strided body touches, by enumeration. */
static uint64_t enumerate(uint64_t instances, uint64_t stride, uint64_t n)
{
	uint64_t end = 0;
	for (uint64_t l = 0; l < instances; l++)
		for (uint64_t i = 0; i < n; i++)
			if (l * stride + i + 1 > end)
				end = l * stride + i + 1;
	return end;
}

static struct ddp_extent_ptr ptr(uint64_t room, uint64_t alloc, uint32_t es)
{
	struct ddp_extent_ptr p = { room, alloc, es, 12345, 99 };
	return p;
}

TEST(llmc_adamw_kernel3_covers_every_layer)
{
	/* a layer kind of n elements per layer, L layers, at offset off of
	 * the flat buffers (bf16 params and grads, fp32 master, m, v) */
	const uint64_t n = 4096, off = 10000, total = 30080;
	for (unsigned layers = 2; layers <= 12; layers += 5) {
		uint64_t all = total + (layers - 1) * n;
		uint64_t seed = 0x9e3779b9u; /* a u32 seed: too large to fit, not a stride */
		uint64_t ints[] = { n, n, n, n, seed, 3 /* a step counter */ };
		unsigned grid[3] = { 16, layers, 1 };
		struct ddp_extent_ptr p[5] = {
			ptr((all - off) * 2, all * 2, 2), ptr((all - off) * 4, all * 4, 4),
			ptr((all - off) * 2, all * 2, 2), ptr((all - off) * 4, all * 4, 4),
			ptr((all - off) * 4, all * 4, 4),
		};
		struct ddp_extent_result r = ddp_extent_bound(ints, 6, grid, p, 5);
		CHECK_EQ_INT(r.rule, DDP_EXTENT_GRID);
		CHECK_EQ_INT((long long)r.count, (long long)n);
		CHECK_EQ_INT((long long)r.stride, (long long)n);
		for (int j = 0; j < 5; j++) {
			CHECK_EQ_INT((long long)p[j].ext, (long long)(enumerate(layers, n, n) * p[j].esize));
			CHECK_EQ_INT(p[j].bounded, DDP_GB_COUNT);
		}
		/* the gradient pairs with the master weights: same elements */
		CHECK_EQ_INT((long long)(p[2].ext / 2), (long long)(p[1].ext / 4));
	}
}

TEST(one_instance_is_the_count_rule)
{
	/* the largest count that fits every pointer; a step number loses */
	uint64_t ints[] = { 7, 1000, 5000 };
	unsigned grid[3] = { 8, 1, 1 };
	struct ddp_extent_ptr p[3] = { ptr(4000, 4000, 4), ptr(2000, 2000, 2), ptr(4, 4, 4) /* a scalar slot */ };
	struct ddp_extent_result r = ddp_extent_bound(ints, 3, grid, p, 3);
	CHECK_EQ_INT(r.rule, DDP_EXTENT_COUNT);
	CHECK_EQ_INT((long long)r.count, 1000);
	CHECK_EQ_INT((long long)p[0].ext, 4000);
	CHECK_EQ_INT((long long)p[1].ext, 2000);
	CHECK_EQ_INT((long long)p[2].ext, 0); /* does not fit it: to its end */
	CHECK_EQ_INT(p[2].bounded, DDP_GB_NONE);
	/* no grid at all: the same */
	r = ddp_extent_bound(ints, 3, NULL, p, 3);
	CHECK_EQ_INT(r.rule, DDP_EXTENT_COUNT);
	CHECK_EQ_INT((long long)p[0].ext, 4000);
}

static void check_unknown(struct ddp_extent_result r, struct ddp_extent_ptr *p, int np)
{
	CHECK_EQ_INT(r.rule, DDP_EXTENT_GRID_UNKNOWN);
	for (int j = 0; j < np; j++) {
		CHECK_EQ_INT((long long)p[j].ext, 0);
		CHECK_EQ_INT(p[j].bounded, DDP_GB_NONE);
	}
}

TEST(instances_without_a_known_stride_are_unbounded)
{
	struct ddp_extent_ptr p[2];
	/* grid.y = layers but only a count: never one instance's count */
	{
		uint64_t ints[] = { 4096 };
		unsigned grid[3] = { 16, 2, 1 };
		p[0] = ptr(1 << 20, 1 << 20, 2);
		p[1] = ptr(1 << 20, 1 << 20, 4);
		check_unknown(ddp_extent_bound(ints, 1, grid, p, 2), p, 2);
	}
	/* two strides of different values: which pointer takes which is not known */
	{
		uint64_t ints[] = { 100, 100, 200 };
		unsigned grid[3] = { 1, 3, 1 };
		p[0] = ptr(1 << 20, 1 << 20, 2);
		p[1] = ptr(1 << 20, 1 << 20, 4);
		check_unknown(ddp_extent_bound(ints, 3, grid, p, 2), p, 2);
	}
	/* a 3-D grid */
	{
		uint64_t ints[] = { 100, 100 };
		unsigned grid[3] = { 1, 3, 2 };
		p[0] = ptr(1 << 20, 1 << 20, 4);
		check_unknown(ddp_extent_bound(ints, 2, grid, p, 1), p, 1);
	}
	/* the union does not fit a pointer (the count does) */
	{
		uint64_t ints[] = { 1000, 1000 };
		unsigned grid[3] = { 1, 4, 1 };
		p[0] = ptr(16000, 16000, 4);
		p[1] = ptr(3000 * 4, 3000 * 4, 4);
		check_unknown(ddp_extent_bound(ints, 2, grid, p, 2), p, 2);
	}
	/* a stride apart from the count (padded slices): the union is
	 * not one range, and which argument is which is not known */
	{
		uint64_t ints[] = { 100, 160 };
		unsigned grid[3] = { 1, 1, 4 };
		p[0] = ptr(4096, 4096, 4);
		p[1] = ptr(8192, 8192, 4);
		check_unknown(ddp_extent_bound(ints, 2, grid, p, 2), p, 2);
	}
	/* overflow: instances x count beyond 64 bits */
	{
		uint64_t ints[] = { 1ULL << 40, 1ULL << 40 };
		unsigned grid[3] = { 1, 1u << 30, 1 };
		p[0] = ptr(UINT64_MAX, UINT64_MAX, 1);
		check_unknown(ddp_extent_bound(ints, 2, grid, p, 1), p, 1);
	}
}

TEST(untyped_and_small_pointers)
{
	/* untyped pointers are never bounded; pointers into allocations of
	 * 64 bytes or less do not vote (a 4-byte norm slot) */
	uint64_t ints[] = { 64, 64 };
	unsigned grid[3] = { 1, 2, 1 };
	struct ddp_extent_ptr p[3] = { ptr(1024, 1024, 4), ptr(1024, 1024, 0), ptr(4, 4, 4) };
	struct ddp_extent_result r = ddp_extent_bound(ints, 2, grid, p, 3);
	CHECK_EQ_INT(r.rule, DDP_EXTENT_GRID);
	CHECK_EQ_INT((long long)p[0].ext, 512);
	CHECK_EQ_INT(p[1].bounded, DDP_GB_NONE);
	CHECK_EQ_INT(p[2].bounded, DDP_GB_NONE);
	/* no integer argument at all */
	r = ddp_extent_bound(NULL, 0, grid, p, 3);
	CHECK_EQ_INT(r.rule, DDP_EXTENT_NONE);
	CHECK_EQ_INT(p[0].bounded, DDP_GB_NONE);
}

/* ---- measured extents on host memory */

static float W[4096], G[4096];
static int k_cols, k_rows, k_ld, k_off, k_before, k_touch_g;

/* the "kernel": w[r * ld + c] -= 0.1 * (g + w) over a rows x cols block */
static ddp_result h_relaunch(void *ctx, void *launch_ctx)
{
	(void)ctx;
	(void)launch_ctx;
	for (int r = 0; r < k_rows; r++)
		for (int c = 0; c < k_cols; c++)
			W[k_off + r * k_ld + c] -= 0.1f * (G[k_off + r * k_ld + c] + W[k_off + r * k_ld + c]);
	if (k_before)
		W[0] += 1.0f;
	if (k_touch_g) /* something else writing the read-only gradient */
		G[4000] += 1.0f;
	return DDP_OK;
}

static ddp_result h_read(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream)
{
	(void)ctx;
	(void)stream;
	memcpy(host, (void *)(uintptr_t)dev, bytes);
	return DDP_OK;
}

static ddp_result h_write(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream)
{
	(void)ctx;
	(void)stream;
	memcpy((void *)(uintptr_t)dev, host, bytes);
	return DDP_OK;
}

static const struct ddp_extent_probe probe_ops = { NULL, h_read, h_write, h_relaunch, NULL, NULL, NULL };

/* a launch sgd_block(w + off, g + off, cols, rows, ld): its two pointers
 * with the count rule's extents, as ddp_sync.c decodes them */
static ddp_result launch(int measure, int off, int cols, int rows, int ld, struct ddp_grad_arg a[2], char *msg)
{
	uint64_t ints[3] = { (uint64_t)cols, (uint64_t)rows, (uint64_t)ld };
	unsigned grid[3] = { 1, 1, 1 };
	struct ddp_extent_ptr ep[2];
	float *bufs[2] = { W, G };
	k_cols = cols;
	k_rows = rows;
	k_ld = ld;
	k_off = off;
	for (int i = 0; i < 2; i++) {
		memset(&a[i], 0, sizeof a[i]);
		a[i].base = (uint64_t)(uintptr_t)bufs[i];
		a[i].size = sizeof W;
		a[i].ptr = a[i].base + (uint64_t)off * 4;
		a[i].param = (uint16_t)i;
		a[i].access = i ? DDP_GA_READ : DDP_GA_WRITE;
		a[i].dtype = DDP_DT_F32;
		ep[i].room = a[i].size - (uint64_t)off * 4;
		ep[i].alloc = a[i].size;
		ep[i].esize = 4;
	}
	ddp_extent_bound(ints, 3, grid, ep, 2);
	for (int i = 0; i < 2; i++) {
		a[i].ext = ep[i].ext;
		a[i].bounded = ep[i].bounded;
	}
	return ddp_extent_measured(7, "sgd_block", ints, 3, a, 2, measure, &probe_ops, msg, 300);
}

static void fill(void)
{
	for (int i = 0; i < 4096; i++) {
		W[i] = 1.0f + (float)i;
		G[i] = 0.5f;
	}
}

TEST(measured_rule_bounds_a_2d_block)
{
	struct ddp_grad_arg a[2];
	char msg[300] = "";
	float w0;
	ddp_extent_reset();
	fill();
	w0 = W[100];
	/* 16 rows of 64: the count guess is one row (64) */
	CHECK_EQ_INT(launch(1, 0, 64, 16, 64, a, msg), DDP_OK);
	CHECK_EQ_INT((long long)a[0].ext, 16 * 64 * 4);
	CHECK_EQ_INT(a[0].bounded, DDP_GB_MEASURED);
	CHECK_EQ_INT((long long)a[1].ext, 16 * 64 * 4); /* the gradient takes it */
	CHECK_EQ_INT(a[1].bounded, DDP_GB_MEASURED);
	CHECK(W[100] == w0); /* every byte put back */
	/* another tensor, checked: 32 rows of 40 at offset 1024; a change
	 * to the const gradient's bytes is not the launch's */
	k_touch_g = 1;
	CHECK_EQ_INT(launch(1, 1024, 40, 32, 40, a, msg), DDP_OK);
	k_touch_g = 0;
	CHECK_EQ_INT((long long)a[0].ext, 32 * 40 * 4);
	CHECK_EQ_INT((long long)a[1].ext, 32 * 40 * 4);
	/* after the calibration steps the rule alone bounds it */
	k_rows = 0; /* nothing runs: nothing measured */
	CHECK_EQ_INT(launch(0, 2048, 16, 8, 16, a, msg), DDP_OK);
	CHECK_EQ_INT((long long)a[0].ext, 8 * 16 * 4);
	CHECK_EQ_INT((long long)a[1].ext, 8 * 16 * 4);
	CHECK_EQ_INT(a[1].bounded, DDP_GB_MEASURED);
}

TEST(padded_lines_and_a_count_that_stands)
{
	struct ddp_grad_arg a[2];
	char msg[300] = "";
	ddp_extent_reset();
	fill();
	/* 10 rows of 30, 50 apart: (rows - 1) x ld + cols */
	CHECK_EQ_INT(launch(1, 0, 30, 10, 50, a, msg), DDP_OK);
	CHECK_EQ_INT((long long)a[0].ext, (9 * 50 + 30) * 4);
	ddp_extent_reset();
	/* one row: the count stands, confirmed by the bytes it changed; the
	 * gradient pairs with it */
	CHECK_EQ_INT(launch(1, 0, 64, 1, 64, a, msg), DDP_OK);
	CHECK_EQ_INT((long long)a[0].ext, 64 * 4);
	CHECK_EQ_INT(a[0].bounded, DDP_GB_MEASURED);
	CHECK_EQ_INT((long long)a[1].ext, 64 * 4);
	CHECK_EQ_INT(a[1].bounded, DDP_GB_MEASURED);
	/* a launch that changes nothing: nothing beyond the count either (a
	 * null driver, an update of zeros); the count stands */
	ddp_extent_reset();
	CHECK_EQ_INT(launch(1, 0, 64, 0, 64, a, msg), DDP_OK);
	CHECK_EQ_INT(a[0].bounded, DDP_GB_MEASURED);
	CHECK_EQ_INT((long long)a[1].ext, 64 * 4);
	CHECK_EQ_INT(a[1].bounded, DDP_GB_MEASURED);
	/* measured once: not measured again after the calibration steps */
	CHECK_EQ_INT(launch(0, 0, 64, 1, 64, a, msg), DDP_OK);
	CHECK(W[0] == 1.0f); /* not run: not measured */
	CHECK_EQ_INT(a[0].bounded, DDP_GB_MEASURED);
	/* two pointers into one allocation cannot be measured one by one:
	 * the guesses stay (ddp_sync.c refuses a gradient bounded so) */
	{
		uint64_t ints[1] = { 64 };
		struct ddp_grad_arg b[2];
		launch(1, 0, 64, 1, 64, b, msg);
		ddp_extent_reset();
		b[1].base = b[0].base;
		b[1].ptr = b[0].ptr + 256 * 4;
		b[0].ext = b[1].ext = 64 * 4;
		b[0].bounded = b[1].bounded = DDP_GB_COUNT;
		CHECK_EQ_INT(ddp_extent_measured(9, "shared", ints, 1, b, 2, 1, &probe_ops, msg, 300), DDP_OK);
		CHECK_EQ_INT(b[0].bounded, DDP_GB_COUNT);
		CHECK_EQ_INT(b[1].bounded, DDP_GB_COUNT);
	}
}
/* a non-const pointer the launch never changes (llm.c's adamw_kernel2
 * gradient) takes the rule its written partner learned */
TEST(unchanged_non_const_pointer_takes_the_rule)
{
	struct ddp_grad_arg a[2];
	char msg[300] = "";
	fill();
	{
		uint64_t ints[3] = { 64, 16, 64 };
		launch(1, 0, 64, 16, 64, a, msg); /* fills a[]; then back to the guesses */
		ddp_extent_reset();
		a[0].ext = a[1].ext = 64 * 4;
		a[0].bounded = a[1].bounded = DDP_GB_COUNT;
		a[1].access = DDP_GA_WRITE; /* passed non-const, never written */
		k_cols = 64;
		k_rows = 16;
		k_ld = 64;
		k_off = 0;
		CHECK_EQ_INT(ddp_extent_measured(11, "adamw_like", ints, 3, a, 2, 1, &probe_ops, msg, 300), DDP_OK);
		CHECK_EQ_INT((long long)a[0].ext, 16 * 64 * 4);
		CHECK_EQ_INT((long long)a[1].ext, 16 * 64 * 4);
		CHECK_EQ_INT(a[1].bounded, DDP_GB_MEASURED);
	}
}

TEST(what_cannot_be_bounded_stops)
{
	struct ddp_grad_arg a[2];
	char msg[300] = "";
	/* learned where cols == ld (cols x rows), then a padded launch
	 * changes more: the rule fails its check */
	ddp_extent_reset();
	fill();
	CHECK_EQ_INT(launch(1, 0, 32, 8, 32, a, msg), DDP_OK);
	CHECK_EQ_INT(launch(1, 0, 32, 8, 48, a, msg), DDP_ERR_UNSUPPORTED);
	CHECK(strstr(msg, "where the rule learned in an earlier calibration run") != NULL);
	/* a change beyond the count no rule of the arguments describes */
	{
		/* rows x ld with a rows argument the kernel does not get: 3
		 * integer arguments 5, 5, 5 and a 10 x 5 block */
		uint64_t ints[3] = { 5, 5, 5 };
		struct ddp_grad_arg b[2];
		CHECK_EQ_INT(launch(1, 0, 5, 5, 5, b, msg), DDP_OK); /* fill a, b */
		ddp_extent_reset();
		k_rows = 10;
		b[0].ext = b[1].ext = 20;
		b[0].bounded = b[1].bounded = DDP_GB_COUNT;
		CHECK_EQ_INT(ddp_extent_measured(8, "odd", ints, 3, b, 2, 1, &probe_ops, msg, 300), DDP_ERR_UNSUPPORTED);
		CHECK(strstr(msg, "no rule of its integer arguments") != NULL);
	}
	/* a write before the pointer */
	ddp_extent_reset();
	k_before = 1;
	CHECK_EQ_INT(launch(1, 64, 16, 4, 16, a, msg), DDP_ERR_UNSUPPORTED);
	CHECK(strstr(msg, "before its argument 0's address") != NULL);
	k_before = 0;
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
