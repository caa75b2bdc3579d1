/* SPDX-License-Identifier: MIT
 *
 * test_xrank.c - the one cross-rank compare (runtime/coll/ddp_xrank.h)
 * across forked ranks with an in-process store (test_coll_harness.h):
 *   keys        every check, scope, round and rank has its own key; the
 *               verdict's is none of the ranks'; all under "xr/"
 *   judge       equal values pass on every rank; a rank that differs is
 *               named on every rank with both values (rank 0's and its
 *               own) and the first differing byte; a rank that never posts
 *               is named after the wait (rank 0) and by the verdict (the
 *               others)
 *   all         every rank compares with every other; wait 0 compares only
 *               with the ranks already there
 *   cost        the store round trips of a passing round, counted by the
 *               store client itself (ddp_store_requests), equal the
 *               compare's own count and the documented cost: JUDGE, rank 0
 *               world-1 GET + SET + DEL, others SET + DEL + GET (3); ALL,
 *               SET + DEL + world-1 GET.  And the signature check
 *               (ddp_check_signature), which is a JUDGE round: the same 3
 *               per rank other than 0 and world+1 on rank 0.
 */
#define CHECK_MAIN
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "ddp_coll.h"
#include "ddp_store.h"
#include "ddp_xrank.h"
#include "test_coll_harness.h"

#define ROUNDS 4
#define MSG 200

struct rank_out {
	enum ddp_xr_result res[ROUNDS];
	int rank1[ROUNDS];
	unsigned requests[ROUNDS];
	uint64_t counted[ROUNDS]; /* ddp_store_requests delta */
	size_t at[ROUNDS], compared[ROUNDS];
	char v0[ROUNDS][64], v1[ROUNDS][64], ranks[ROUNDS][128];
	double t[ROUNDS];
};

struct results {
	struct rank_out r[8];
	char err[8][MSG];
};

enum {
	M_JUDGE_SAME,
	M_JUDGE_DIFF,
	M_JUDGE_MISSING,
	M_ALL_SAME,
	M_ALL_DIFF,
	M_ALL_NOWAIT,
	M_SIG_COST,
	M_SIG_MISSING
};

struct tcase {
	struct results *res;
	int mode;
};

static void copy_text(char *dst, const void *src, size_t n)
{
	n = n < 63 ? n : 63;
	memcpy(dst, src, n);
	dst[n] = 0;
}

static int xr_rank(struct coll_job *job, int rank, void *arg)
{
	struct tcase *tc = arg;
	struct rank_out *o = &tc->res->r[rank];
	struct ddp_store *st;
	struct ddp_comm *c;
	struct ddp_coll_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.backend = DDP_COLL_HOST;
	cfg.timeout_s = 2;
	cfg.shm_dir = job->shm_dir;
	if (coll_job_comm(job, rank, &cfg, &st, &c) != DDP_OK)
		return 2;
	const struct ddp_xrank x = { st, rank, job->world };
	for (int k = 0; k < ROUNDS; k++) {
		char mine[64];
		struct ddp_xr_diff d;
		enum ddp_xr_mode mode = tc->mode <= M_JUDGE_MISSING ? DDP_XR_JUDGE : DDP_XR_ALL;
		double wait = tc->mode == M_ALL_NOWAIT ? 0 : 1.0;
		snprintf(mine, sizeof mine, "round %d: f32 count=%d", k,
			 (tc->mode == M_JUDGE_DIFF || tc->mode == M_ALL_DIFF) && rank == 2 && k == 1 ? 1000
												     : 1234);
		if (tc->mode == M_JUDGE_MISSING && rank == 2 && k == 1)
			break; /* never posts round 1 */
		if (tc->mode == M_SIG_MISSING) {
			if (rank == 2 && k == 1)
				break; /* never posts check 1 */
			double t0 = coll_test_now();
			o->res[k] = ddp_check_signature(c, "allreduce", "f32 count=1234 bufs=W1,b1") == DDP_OK
					    ? DDP_XR_SAME
					    : DDP_XR_MISSING;
			o->t[k] = coll_test_now() - t0;
			if (o->res[k] != DDP_XR_SAME)
				break;
			continue;
		}
		if (tc->mode == M_SIG_COST) {
			uint64_t before = ddp_store_requests(st);
			double t0 = coll_test_now();
			o->res[k] = ddp_check_signature(c, "allreduce", "f32 count=1234 bufs=W1,b1") == DDP_OK
					    ? DDP_XR_SAME
					    : DDP_XR_ERROR;
			o->t[k] = coll_test_now() - t0;
			o->counted[k] = ddp_store_requests(st) - before;
			continue;
		}
		if (tc->mode == M_ALL_NOWAIT && rank == 1)
			usleep(300 * 1000); /* rank 1 arrives last: it sees everyone */
		uint64_t before = ddp_store_requests(st);
		double t0 = coll_test_now();
		o->res[k] = ddp_xrank_compare(&x, DDP_XR_PARAMS, 7, (uint64_t)k + 1, mine, strlen(mine), mode,
					      wait, k >= 2 ? (uint64_t)k - 1 : DDP_XR_NOROUND, &d);
		o->t[k] = coll_test_now() - t0;
		o->counted[k] = ddp_store_requests(st) - before;
		o->requests[k] = d.requests;
		o->rank1[k] = d.rank[1];
		o->at[k] = d.at;
		o->compared[k] = d.compared;
		snprintf(o->ranks[k], sizeof o->ranks[k], "%s", d.ranks);
		if (o->res[k] == DDP_XR_DIFF) {
			copy_text(o->v0[k], d.val[0], d.len[0]);
			copy_text(o->v1[k], d.val[1], d.len[1]);
		}
		ddp_xr_diff_free(&d);
		if (tc->mode == M_ALL_NOWAIT)
			break;
		if (o->res[k] != DDP_XR_SAME)
			break;
	}
	snprintf(tc->res->err[rank], MSG, "%s", ddp_coll_last_error(c));
	ddp_comm_destroy(c);
	ddp_store_close(st);
	return 0;
}

static struct results *run(int world, int mode, int *status)
{
	struct results *res = coll_shared_alloc(sizeof *res);
	struct tcase tc = { res, mode };
	if (!res)
		return NULL;
	coll_job_run(world, xr_rank, &tc, 30, status);
	for (int r = 0; r < world; r++)
		for (int k = 0; k < ROUNDS; k++)
			printf("# rank %d round %d: result %d (rank %d, ranks '%s', at %zu) %u requests (%" PRIu64
			       " counted by the store client) in %.2f s%s%s%s%s\n",
			       r, k, (int)res->r[r].res[k], res->r[r].rank1[k], res->r[r].ranks[k],
			       res->r[r].at[k], res->r[r].requests[k], res->r[r].counted[k], res->r[r].t[k],
			       res->r[r].v0[k][0] ? ": '" : "", res->r[r].v0[k],
			       res->r[r].v0[k][0] ? "' vs '" : "", res->r[r].v1[k]);
	return res;
}

TEST(keys_never_collide)
{
	/* every (check, scope, round, rank | verdict) of a grid has its own key */
	enum {
		NK = DDP_XR_NCHECKS * 3 * 3 * 4
	};
	static char keys[NK][96];
	size_t n = 0;
	const uint64_t scopes[3] = { 0, 1, 12 }, rounds[3] = { 0, 2, 21 };
	const int ranks[4] = { -1, 0, 1, 12 };
	for (int c = 0; c < DDP_XR_NCHECKS; c++)
		for (int s = 0; s < 3; s++)
			for (int k = 0; k < 3; k++)
				for (int r = 0; r < 4; r++) {
					ddp_xr_key((enum ddp_xr_check)c, scopes[s], rounds[k], ranks[r],
						   keys[n], sizeof keys[n]);
					CHECK(strncmp(keys[n], "xr/", 3) == 0);
					n++;
				}
	REQUIRE(n == NK);
	int dup = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(keys[i], keys[j]) == 0) {
				printf("# %s twice\n", keys[i]);
				dup++;
			}
	CHECK_EQ_INT(dup, 0);
	/* the names are distinct and none contains the separator */
	for (int a = 0; a < DDP_XR_NCHECKS; a++) {
		CHECK(strchr(ddp_xr_check_name((enum ddp_xr_check)a), '/') == NULL);
		for (int b = a + 1; b < DDP_XR_NCHECKS; b++)
			CHECK(strcmp(ddp_xr_check_name((enum ddp_xr_check)a),
				     ddp_xr_check_name((enum ddp_xr_check)b)));
	}
}

TEST(judge_same_and_its_cost)
{
	int status[4];
	struct results *res = run(4, M_JUDGE_SAME, status);
	REQUIRE(res);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(status[r], 0);
		for (int k = 0; k < ROUNDS; k++) {
			CHECK_EQ_INT(res->r[r].res[k], DDP_XR_SAME);
			/* the compare's own count is the store client's */
			CHECK_EQ_INT((int)res->r[r].requests[k], (int)res->r[r].counted[k]);
			/* rank 0: 3 GET + SET (+ DEL from round 2); others: SET (+ DEL) + GET */
			int want = r == 0 ? 3 + 1 + (k >= 2) : 2 + (k >= 2);
			CHECK_EQ_INT((int)res->r[r].counted[k], want);
		}
	}
	coll_shared_free(res, sizeof *res);
}

TEST(judge_names_both_values_on_every_rank)
{
	int status[4];
	struct results *res = run(4, M_JUDGE_DIFF, status);
	REQUIRE(res);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(status[r], 0);
		CHECK_EQ_INT(res->r[r].res[0], DDP_XR_SAME);
		CHECK_EQ_INT(res->r[r].res[1], DDP_XR_DIFF);
		CHECK_EQ_INT(res->r[r].rank1[1], 2);
		CHECK(strcmp(res->r[r].v0[1], "round 1: f32 count=1234") == 0);
		CHECK(strcmp(res->r[r].v1[1], "round 1: f32 count=1000") == 0);
		CHECK_EQ_INT((int)res->r[r].at[1], (int)strlen("round 1: f32 count=1"));
		CHECK(strcmp(res->r[r].ranks[1], "2") == 0);
		CHECK(res->r[r].t[1] < 1.0);
	}
	coll_shared_free(res, sizeof *res);
}

TEST(judge_names_a_rank_that_never_posts)
{
	int status[4];
	struct results *res = run(4, M_JUDGE_MISSING, status);
	REQUIRE(res);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(status[r], 0);
		if (r == 2)
			continue;
		CHECK_EQ_INT(res->r[r].res[1], DDP_XR_MISSING);
		CHECK_EQ_INT(res->r[r].rank1[1], 2);
		CHECK(strcmp(res->r[r].ranks[1], "2") == 0);
		/* named after the wait (1 s), not before */
		CHECK(res->r[r].t[1] >= 0.9 && res->r[r].t[1] < 3.0);
	}
	coll_shared_free(res, sizeof *res);
}

TEST(all_same_and_its_cost)
{
	int status[3];
	struct results *res = run(3, M_ALL_SAME, status);
	REQUIRE(res);
	for (int r = 0; r < 3; r++) {
		CHECK_EQ_INT(status[r], 0);
		for (int k = 0; k < ROUNDS; k++) {
			CHECK_EQ_INT(res->r[r].res[k], DDP_XR_SAME);
			CHECK_EQ_INT((int)res->r[r].requests[k], (int)res->r[r].counted[k]);
			CHECK_EQ_INT((int)res->r[r].counted[k], 1 + 2 + (k >= 2)); /* SET + 2 GET (+ DEL) */
		}
	}
	coll_shared_free(res, sizeof *res);
}

TEST(all_names_the_other_rank)
{
	int status[3];
	struct results *res = run(3, M_ALL_DIFF, status);
	REQUIRE(res);
	for (int r = 0; r < 3; r++) {
		CHECK_EQ_INT(status[r], 0);
		CHECK_EQ_INT(res->r[r].res[1], DDP_XR_DIFF);
		/* ranks 0 and 1 name rank 2; rank 2 names the first other (0) */
		CHECK_EQ_INT(res->r[r].rank1[1], r == 2 ? 0 : 2);
		CHECK(strcmp(res->r[r].v0[1],
			     r == 2 ? "round 1: f32 count=1000" : "round 1: f32 count=1234") == 0);
		CHECK(strcmp(res->r[r].v1[1],
			     r == 2 ? "round 1: f32 count=1234" : "round 1: f32 count=1000") == 0);
	}
	coll_shared_free(res, sizeof *res);
}

TEST(all_without_waiting_compares_with_those_there)
{
	int status[3];
	struct results *res = run(3, M_ALL_NOWAIT, status);
	REQUIRE(res);
	for (int r = 0; r < 3; r++) {
		CHECK_EQ_INT(status[r], 0);
		CHECK_EQ_INT(res->r[r].res[0], DDP_XR_SAME);
		CHECK(res->r[r].t[0] < 0.5);
		CHECK(r != 1 || res->r[r].compared[0] == 2); /* the last one sees both */
	}
	coll_shared_free(res, sizeof *res);
}

TEST(signature_check_cost)
{
	/* ddp_check_signature is a JUDGE round: per passing check, rank 0
	 * makes world-1 GET + SET (+ DEL from check 2), every other rank SET
	 * (+ DEL) + GET: the cost of its exchange before the compare was one */
	int status[4];
	struct results *res = run(4, M_SIG_COST, status);
	REQUIRE(res);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(status[r], 0);
		for (int k = 0; k < ROUNDS; k++) {
			CHECK_EQ_INT(res->r[r].res[k], DDP_XR_SAME);
			int want = r == 0 ? 3 + 1 + (k >= 2) : 2 + (k >= 2);
			CHECK_EQ_INT((int)res->r[r].counted[k], want);
		}
	}
	coll_shared_free(res, sizeof *res);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}

TEST(signature_check_names_a_rank_that_never_posts)
{
	/* rank 2 never issues check 1: every other rank fails after the
	 * communicator's timeout (2 s) naming it */
	int status[4];
	struct results *res = run(4, M_SIG_MISSING, status);
	REQUIRE(res);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(status[r], 0);
		CHECK_EQ_INT(res->r[r].res[0], DDP_XR_SAME);
		if (r == 2)
			continue;
		CHECK_EQ_INT(res->r[r].res[1], DDP_XR_MISSING);
		CHECK(res->r[r].t[1] >= 1.9 && res->r[r].t[1] < 4.0);
		CHECK(strstr(res->err[r],
			     "collective check #1 timed out after 2 s: rank(s) 2 never posted a signature") !=
		      NULL);
	}
	coll_shared_free(res, sizeof *res);
}
