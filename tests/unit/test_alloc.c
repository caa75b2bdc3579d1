/* SPDX-License-Identifier: MIT
 *
 * test_alloc.c - the allocation table (runtime/track/ddp_alloc.c): inserts,
 * lookups inside/outside/at the edges, frees, stale overlaps, VMM range
 * removal, counters, a full table, O(log n) lookups, and lock-free readers
 * racing a writer.
 */
#define CHECK_MAIN
#include <pthread.h>
#include <time.h>
#include "check.h"
#include "ddp_alloc.h"

static void fresh(size_t cap)
{
	ddp_alloc_fini();
	REQUIRE(ddp_alloc_init(cap) == DDP_OK);
}

TEST(lookup_inside_outside)
{
	struct ddp_alloc_ent e;
	uint32_t id = 0;
	fresh(1024);
	CHECK(ddp_alloc_insert(0x1000, 0x100, DDP_ALLOC_PLAIN, 7, &id) == DDP_OK);
	CHECK_EQ_INT(id, 1);
	CHECK(ddp_alloc_insert(0x3000, 0x10, DDP_ALLOC_ASYNC, 8, NULL) == DDP_OK);
	CHECK(ddp_alloc_find(0x1000, &e) && e.base == 0x1000 && e.size == 0x100 && e.creator == 7);
	CHECK(ddp_alloc_find(0x10ff, &e) && e.base == 0x1000);
	CHECK(!ddp_alloc_find(0x1100, &e));       /* one past the end */
	CHECK(!ddp_alloc_find(0xfff, &e));
	CHECK(!ddp_alloc_find(0x2000, &e));
	CHECK(ddp_alloc_find(0x300f, &e) && e.kind == DDP_ALLOC_ASYNC && e.id == 2);
	CHECK(!ddp_alloc_find(0x3010, &e));
	CHECK(!ddp_alloc_find(0, &e));
	CHECK(!ddp_alloc_find(UINT64_MAX, &e));
}

TEST(free_and_counters)
{
	struct ddp_alloc_ent e;
	struct ddp_alloc_stats s;
	fresh(1024);
	ddp_alloc_insert(0x1000, 100, DDP_ALLOC_PLAIN, 0, NULL);
	ddp_alloc_insert(0x2000, 200, DDP_ALLOC_PLAIN, 0, NULL);
	ddp_alloc_step_reset();
	ddp_alloc_insert(0x3000, 300, DDP_ALLOC_MANAGED, 0, NULL);
	CHECK(ddp_alloc_remove(0x2000, &e) == DDP_OK && e.size == 200);
	CHECK(ddp_alloc_remove(0x2000, &e) == DDP_ERR_INVALID);   /* twice */
	CHECK(ddp_alloc_remove(0x1001, &e) == DDP_ERR_INVALID);   /* not a base */
	CHECK(!ddp_alloc_find(0x2000, NULL));
	CHECK(ddp_alloc_find(0x1000, NULL) && ddp_alloc_find(0x3000, NULL));
	ddp_alloc_stats(&s);
	CHECK_EQ_INT(s.live_count, 2);
	CHECK_EQ_INT(s.live_bytes, 400);
	CHECK_EQ_INT(s.peak_bytes, 600);
	CHECK_EQ_INT(s.total_allocs, 3);
	CHECK_EQ_INT(s.total_bytes, 600);
	CHECK_EQ_INT(s.total_frees, 1);
	CHECK_EQ_INT(s.step_allocs, 1);
	CHECK_EQ_INT(s.step_bytes_alloc, 300);
	CHECK_EQ_INT(s.step_frees, 1);
	CHECK_EQ_INT(s.step_bytes_freed, 200);
}

TEST(overlap_replaces_stale)
{
	struct ddp_alloc_ent e;
	struct ddp_alloc_stats s;
	fresh(1024);
	ddp_alloc_insert(0x1000, 0x1000, DDP_ALLOC_PLAIN, 0, NULL);  /* [1000,2000) */
	ddp_alloc_insert(0x2000, 0x100, DDP_ALLOC_PLAIN, 0, NULL);   /* [2000,2100) */
	ddp_alloc_insert(0x3000, 0x100, DDP_ALLOC_PLAIN, 0, NULL);
	/* a free we never saw: the driver hands [1800, 2080) out again */
	CHECK(ddp_alloc_insert(0x1800, 0x880, DDP_ALLOC_PLAIN, 0, NULL) == DDP_OK);
	CHECK(ddp_alloc_find(0x1000 + 0x7ff, NULL) == 0);   /* old one dropped */
	CHECK(ddp_alloc_find(0x1800, &e) && e.size == 0x880 && e.id == 4);
	CHECK(ddp_alloc_find(0x20ff, NULL) == 0);           /* second stale one dropped */
	CHECK(ddp_alloc_find(0x3000, NULL));
	ddp_alloc_stats(&s);
	CHECK_EQ_INT(s.live_count, 2);
	CHECK_EQ_INT(s.stale, 2);
	CHECK_EQ_INT(ddp_alloc_snapshot(NULL, 0), 2);
}

TEST(vmm_range_removal)
{
	fresh(1024);
	ddp_alloc_insert(0x10000, 0x1000, DDP_ALLOC_VMM, 0, NULL);
	ddp_alloc_insert(0x11000, 0x1000, DDP_ALLOC_VMM, 0, NULL);
	ddp_alloc_insert(0x12000, 0x1000, DDP_ALLOC_VMM, 0, NULL);
	ddp_alloc_insert(0x20000, 0x1000, DDP_ALLOC_PLAIN, 0, NULL);
	CHECK_EQ_INT(ddp_alloc_remove_range(0x10000, 0x2000), 2);
	CHECK(!ddp_alloc_find(0x11fff, NULL));
	CHECK(ddp_alloc_find(0x12000, NULL) && ddp_alloc_find(0x20000, NULL));
	CHECK_EQ_INT(ddp_alloc_remove_range(0x0, 0x10000), 0);
}

/* Ranges, not allocations: a tensor inside a caching-allocator segment,
 * one straddling two expandable-segment pages, and what is not covered. */
TEST(ranges_covered_across_vmm_pages)
{
	struct ddp_alloc_ent e;
	fresh(1024);
	ddp_alloc_insert(0x200000, 0x200000, DDP_ALLOC_VMM, 0, NULL);   /* two 2 MiB pages */
	ddp_alloc_insert(0x400000, 0x200000, DDP_ALLOC_VMM, 0, NULL);
	ddp_alloc_insert(0x800000, 0x200000, DDP_ALLOC_VMM, 0, NULL);   /* a gap before it */
	ddp_alloc_insert(0x1000000, 0x200000, DDP_ALLOC_PLAIN, 0, NULL); /* a 2 MiB segment */
	ddp_alloc_insert(0x1200000, 0x200000, DDP_ALLOC_PLAIN, 0, NULL); /* adjacent, distinct */
	CHECK(ddp_alloc_covers(0x1000200, 512, &e) && e.base == 0x1000000);  /* a tensor in a segment */
	CHECK(ddp_alloc_covers(0x3ff000, 0x2000, &e) && e.base == 0x200000); /* straddles two pages */
	CHECK(ddp_alloc_covers(0x200000, 0x400000, NULL));                   /* both pages whole */
	CHECK(!ddp_alloc_covers(0x200000, 0x400001, NULL));                  /* one byte into the gap */
	CHECK(!ddp_alloc_covers(0x5ff000, 0x300000, NULL));                  /* across the gap */
	CHECK(!ddp_alloc_covers(0x11ff000, 0x2000, NULL));                   /* two cuMemAlloc segments */
	CHECK(!ddp_alloc_covers(0x100, 4, NULL));
	CHECK(!ddp_alloc_covers(0x200000, UINT64_MAX, NULL));                /* wraps */
	CHECK(ddp_alloc_covers(0x1000000, 0, NULL));                         /* empty: the address alone */
	ddp_alloc_remove_range(0x400000, 0x200000);                          /* the second page unmapped */
	CHECK(!ddp_alloc_covers(0x3ff000, 0x2000, NULL));
}

TEST(full_table_refuses)
{
	fresh(4);
	for (int i = 0; i < 4; i++)
		CHECK(ddp_alloc_insert(0x1000 * (i + 1), 16, DDP_ALLOC_PLAIN, 0, NULL) == DDP_OK);
	CHECK(ddp_alloc_insert(0x9000, 16, DDP_ALLOC_PLAIN, 0, NULL) == DDP_ERR_NOMEM);
	CHECK(!ddp_alloc_find(0x9000, NULL));
	CHECK(ddp_alloc_find(0x4000, NULL));
}

TEST(zero_size_and_reverse_order)
{
	struct ddp_alloc_ent e;
	fresh(1024);
	for (int i = 99; i >= 0; i--)
		ddp_alloc_insert(0x100000 + (uint64_t)i * 0x100, 0x80, DDP_ALLOC_PLAIN, 0, NULL);
	ddp_alloc_insert(0x50, 0, DDP_ALLOC_PLAIN, 0, NULL);
	CHECK(ddp_alloc_find(0x50, &e) && e.size == 1);
	for (int i = 0; i < 100; i++) {
		uint64_t b = 0x100000 + (uint64_t)i * 0x100;
		CHECK(ddp_alloc_find(b + 0x7f, &e) && e.base == b);
		CHECK(!ddp_alloc_find(b + 0x80, NULL));
	}
	struct ddp_alloc_ent snap[128];
	size_t n = ddp_alloc_snapshot(snap, 128);
	CHECK_EQ_INT(n, 101);
	for (size_t i = 1; i < n; i++)
		CHECK(snap[i - 1].base < snap[i].base);
}

static double ns_per_lookup(size_t n)
{
	fresh(n + 16);
	for (size_t i = 0; i < n; i++)
		ddp_alloc_insert(0x1000000 + i * 0x1000, 0x800, DDP_ALLOC_PLAIN, 0, NULL);
	/* the thread's own CPU time, best of 3: a loaded machine (preemption)
	 * must not make the comparison below fail */
	double best = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		struct timespec a, b;
		volatile int hits = 0;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		for (size_t k = 0; k < 200000; k++)
			hits += ddp_alloc_find(0x1000000 + ((k * 7919) % n) * 0x1000 + 5, NULL);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		CHECK_EQ_INT(hits, 200000);
		double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 200000.0;
		if (ns < best)
			best = ns;
	}
	return best;
}

TEST(lookup_is_logarithmic)
{
	/* 256x more entries must cost far less than 256x more time (a linear
	 * scan would); allow 40x for cache misses (a scan costs ~1000x) */
	double small = ns_per_lookup(256), big = ns_per_lookup(65536);
	printf("# lookup: %.1f ns with 256 entries, %.1f ns with 65536\n", small, big);
	CHECK(big < small * 40 + 100);
}

static volatile int stop_writer;
static void *writer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; !stop_writer; i++) {
		uint64_t b = 0x500000 + (i % 64) * 0x1000;
		ddp_alloc_insert(b, 0x800, DDP_ALLOC_PLAIN, 0, NULL);
		ddp_alloc_remove(b, NULL);
	}
	return NULL;
}

TEST(readers_race_writer)
{
	pthread_t t;
	struct ddp_alloc_ent e;
	fresh(4096);
	for (int i = 0; i < 100; i++)
		ddp_alloc_insert(0x100000 + (uint64_t)i * 0x1000, 0x100, DDP_ALLOC_PLAIN, 0, NULL);
	stop_writer = 0;
	REQUIRE(pthread_create(&t, NULL, writer, NULL) == 0);
	int wrong = 0;
	for (int k = 0; k < 300000; k++) {
		uint64_t b = 0x100000 + (uint64_t)(k % 100) * 0x1000;
		if (!ddp_alloc_find(b + 0x10, &e) || e.base != b || e.size != 0x100)
			wrong++;
	}
	stop_writer = 1;
	pthread_join(t, NULL);
	CHECK_EQ_INT(wrong, 0);
	ddp_alloc_fini();
}

int main(int argc, char **argv) { return check_main(argc, argv); }
