/* SPDX-License-Identifier: MIT
 *
 * ddp_xrank.h - the one cross-rank compare: every check that asks "do all
 * ranks hold the same bytes here?" goes through ddp_xrank_compare.  Its
 * users: the collective-signature check (ddp_check_signature, ddp_coll.c),
 * the parameter check at checked steps and --check N, the data-parallel
 * invariant and the final compare (runtime/grad/ddp_sync_check.c).
 *
 * Each rank posts its value (bytes: a signature text, a vector of hashes)
 * through the rendezvous store and learns the first difference:
 *
 *   DDP_XR_ALL    every rank reads every other rank's value (waiting up to
 *                 wait_s for each; wait_s 0: only the ranks that already
 *                 posted theirs: of two ranks at least one sees the other).
 *                 Store round trips per rank and round: 1 SET + (world-1)
 *                 GET + 1 DEL (the key of two rounds ago).
 *   DDP_XR_JUDGE  rank 0 reads every rank's value (all within wait_s) and
 *                 posts a verdict that every other rank reads: on a
 *                 difference the verdict carries rank 0's value and the
 *                 first differing rank's, so every rank can name both.
 *                 Round trips per round: rank 0, (world-1) GET + 1 SET +
 *                 1 DEL; every other rank, 1 SET + 1 DEL + 1 GET.  (The
 *                 collective-signature check's cost before this compare
 *                 existed, unchanged.)
 *
 * Keys: xr/<check>/<scope>/<round>/<rank> and xr/<check>/<scope>/<round>/v
 * (the verdict); <check> is a name from one table (enum ddp_xr_check), so
 * two checks never share a key, and no other user of the store writes under
 * "xr/".  A rank drops its own key (rank 0: the verdict) of the round it
 * names as `forget`: every rank read it before posting the round after it,
 * which this rank read before posting this one.
 *
 * Contract: one thread at a time per store connection (ddp_store.h).  No
 * state: the caller keeps its rounds.  Nothing is logged but the store's
 * own warnings; the caller writes the message.
 */
#ifndef DDP_XRANK_H
#define DDP_XRANK_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"

struct ddp_store;

enum ddp_xr_check {
	DDP_XR_SIG = 0, /* collective signatures (ddp_coll.c)              */
	DDP_XR_PARAMS,  /* parameters and state at checked steps, --check  */
	DDP_XR_INV,     /* the data-parallel invariant's ranges            */
	DDP_XR_FINAL,   /* parameters and state at the end of training     */
	DDP_XR_INPUT,   /* the input copied to the device (ddp_sync_input.c) */
	DDP_XR_NCHECKS
};

enum ddp_xr_mode {
	DDP_XR_ALL = 0,
	DDP_XR_JUDGE,
};

enum ddp_xr_result {
	DDP_XR_SAME = 0, /* every rank compared holds this rank's bytes      */
	DDP_XR_DIFF,     /* d->rank[0..1] hold different bytes (or lengths)  */
	DDP_XR_MISSING,  /* d->rank[1] (and d->ranks) never posted in time   */
	DDP_XR_ERROR,    /* the store failed: d->rc                          */
};

/* Who compares: this rank's store connection and place in the job. */
struct ddp_xrank {
	struct ddp_store *store;
	int rank, world;
};

#define DDP_XR_NOROUND UINT64_MAX /* `forget`: drop nothing */

struct ddp_xr_diff {
	/* DIFF: the two ranks whose values differ (ALL: this rank and the
	 * other; JUDGE: rank 0 and the first rank that differs from it), their
	 * values (malloc'd; ddp_xr_diff_free) and the first differing byte
	 * (the shorter length when one is a prefix of the other).
	 * MISSING: rank[1] is the first rank that never posted. */
	int rank[2];
	void *val[2];
	size_t len[2];
	size_t at;
	char ranks[128];   /* JUDGE: every rank differing from rank 0, or
			    * (MISSING) every rank that never posted: "2,3" */
	ddp_result rc;     /* MISSING, ERROR: why                          */
	size_t compared;   /* ranks this rank compared its value with      */
	unsigned requests; /* store round trips this call made             */
};

/* The key of a check's round: xr/<check>/<scope>/<round>/<rank> (rank < 0:
 * the verdict, .../v) into buf (at least 96 bytes).  Exposed for the test
 * that keys never collide. */
void ddp_xr_key(enum ddp_xr_check check, uint64_t scope, uint64_t round, int rank, char *buf, size_t cap);

/* The check's name in keys and messages ("sig", "params", ...). */
const char *ddp_xr_check_name(enum ddp_xr_check check);

/* Posts mine[0..len) for round `round` of `check` (scope: e.g. a
 * communicator's number; 0 when one per job) and compares as the mode says.
 * wait_s: how long to wait for the others (ALL: per rank; JUDGE: rank 0's
 * whole gather; the others wait wait_s + 5 for the verdict).  forget: a
 * round whose keys this rank drops now (DDP_XR_NOROUND: none).  d is
 * always filled; free it with ddp_xr_diff_free. */
enum ddp_xr_result ddp_xrank_compare(const struct ddp_xrank *x, enum ddp_xr_check check, uint64_t scope,
				     uint64_t round, const void *mine, size_t len, enum ddp_xr_mode mode,
				     double wait_s, uint64_t forget, struct ddp_xr_diff *d /* OUT */);

void ddp_xr_diff_free(struct ddp_xr_diff *d);

#endif /* DDP_XRANK_H */
