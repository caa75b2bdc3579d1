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
 * not fit, overflow.
 */
#define CHECK_MAIN
#include <stdint.h>
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

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
