/* SPDX-License-Identifier: MIT
 *
 * test_coll_bucket.c - bucket planning and segments (ddp_coll_bucket.c):
 * order kept, the cap, dtype changes, a range larger than the cap alone;
 * adjacent and overlapping ranges of one allocation merged in any order,
 * gaps and other allocations never merged.
 */
#define CHECK_MAIN
#include <string.h>
#include "check.h"
#include "ddp_coll.h"

#define R(addr, bytes, id, t) { (addr), (bytes), (id), (t) }

TEST(plan_keeps_order_and_cap)
{
	const struct ddp_coll_range r[] = {
		R(0x1000, 40, 1, DDP_DT_F32), R(0x2000, 40, 2, DDP_DT_F32), R(0x3000, 30, 3, DDP_DT_F32),
		R(0x4000, 200, 4, DDP_DT_F32), R(0x5000, 10, 5, DDP_DT_F32), R(0x6000, 10, 6, DDP_DT_BF16),
		R(0x7000, 10, 7, DDP_DT_BF16),
	};
	struct ddp_coll_bucket b[8];
	size_t nb = ddp_coll_bucket_plan(r, 7, 100, b, 8);
	CHECK_EQ_INT((int)nb, 5);
	/* 40+40 = 80, +30 > 100 -> new bucket; 200 alone; 10 f32; two bf16 */
	CHECK_EQ_INT((int)b[0].first, 0); CHECK_EQ_INT((int)b[0].n, 2); CHECK_EQ_INT((int)b[0].bytes, 80);
	CHECK_EQ_INT((int)b[1].first, 2); CHECK_EQ_INT((int)b[1].n, 1);
	CHECK_EQ_INT((int)b[2].first, 3); CHECK_EQ_INT((int)b[2].n, 1); CHECK_EQ_INT((int)b[2].bytes, 200);
	CHECK_EQ_INT((int)b[3].first, 4); CHECK_EQ_INT((int)b[3].n, 1); CHECK_EQ_INT(b[3].dtype, DDP_DT_F32);
	CHECK_EQ_INT((int)b[4].first, 5); CHECK_EQ_INT((int)b[4].n, 2); CHECK_EQ_INT(b[4].dtype, DDP_DT_BF16);
	/* max smaller than the count: the count is still returned, nothing overrun */
	struct ddp_coll_bucket small[2];
	CHECK_EQ_INT((int)ddp_coll_bucket_plan(r, 7, 100, small, 2), 5);
	CHECK_EQ_INT((int)ddp_coll_bucket_plan(r, 0, 100, b, 8), 0);
	/* a huge cap: one bucket per dtype run */
	CHECK_EQ_INT((int)ddp_coll_bucket_plan(r, 7, 1u << 30, b, 8), 2);
}

TEST(segments_merge_adjacent_ranges_of_one_allocation)
{
	/* one flat allocation carved in backward order (reverse of memory),
	 * one overlapping range, one range after a gap, another allocation that
	 * happens to start right where the first ends */
	const struct ddp_coll_range r[] = {
		R(0x1300, 0x100, 1, DDP_DT_F32), R(0x1200, 0x100, 1, DDP_DT_F32), R(0x1000, 0x200, 1, DDP_DT_F32),
		R(0x1080, 0x40, 1, DDP_DT_F32), R(0x1500, 0x100, 1, DDP_DT_F32), R(0x1600, 0x10, 2, DDP_DT_F32),
	};
	struct ddp_coll_range tmp[6];
	struct ddp_coll_seg s[6];
	size_t ns = ddp_coll_bucket_segments(r, 6, tmp, s);
	CHECK_EQ_INT((int)ns, 3);
	CHECK(s[0].addr == 0x1000 && s[0].bytes == 0x400);  /* 0x1000..0x1400 */
	CHECK(s[1].addr == 0x1500 && s[1].bytes == 0x100);  /* after the gap  */
	CHECK(s[2].addr == 0x1600 && s[2].bytes == 0x10);   /* other allocation */
	CHECK_EQ_INT((int)ddp_coll_bucket_segments(r, 0, tmp, s), 0);
	CHECK_EQ_INT((int)ddp_coll_bucket_segments(r + 4, 1, tmp, s), 1);
	CHECK(s[0].addr == 0x1500 && s[0].bytes == 0x100);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
