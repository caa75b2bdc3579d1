/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_input.c - do the ranks train on different data?  Without
 * --shard (or with a spec the program never reads through) every rank
 * usually reads the same batches: nanoGPT seeds its sampler alike on every
 * rank, so `-n 2` trains on no more data than one process, and nothing
 * else would say so.  The input a step consumes enters the device through
 * host-to-device copies; the ranks compare a hash of those bytes once.
 *
 * Windows: A, every host-to-device copy up to the end of the first update
 * phase (start-up and the first batch); B, the copies after it up to the
 * end of the second (the second batch).  At the end of step 2 the ranks
 * compare both through the one cross-rank compare (DDP_XR_INPUT, rank 0
 * judging).  Both identical on every rank: one warning from rank 0 naming
 * --shard; with DDP_REQUIRE_SHARD=1 (ddprun --require-shard) every rank
 * stops with that line.  A differing A is enough to say nothing: a program
 * that uploads its (sharded) data set at start-up and copies only the same
 * scalars each step, or one that initialises from an unseeded source (a
 * warning missed then, never a false one).  Nothing copied at all: nothing
 * is said (the program makes its input on the device).  Hashing stops
 * after step 2: no cost later.
 *
 * Contract: ddp_sync_input_copy runs on any thread inside a copy hook, the
 * window functions under sync_st.lock (the tracker's step callbacks); the
 * hash state has its own lock, held only while hashing a copy of the first
 * two steps.  The host bytes of a host-to-device copy are the caller's, and
 * readable by definition of the call.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "ddp_hash.h"
#include "ddp_job.h"
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_status.h"
#include "ddp_store.h"
#include "ddp_sync.h"
#include "ddp_xrank.h"
#include "ddp_sync_int.h"

static struct {
	pthread_mutex_t lock;
	int window;          /* 0: A, 1: B, 2: done (atomic read on the fast path) */
	uint64_t hash[2];    /* FNV-1a over the bytes of each window            */
	uint64_t bytes[2];   /* bytes hashed                                    */
	uint64_t copies[2];  /* copies hashed                                   */
} in = { .lock = PTHREAD_MUTEX_INITIALIZER, .hash = { DDP_FNV1A_INIT, DDP_FNV1A_INIT } };

void ddp_sync_input_copy(const void *src, uint64_t n)
{
	if (!ddp_sync_on_ || !src || !n || __atomic_load_n(&in.window, __ATOMIC_RELAXED) >= 2)
		return;
	pthread_mutex_lock(&in.lock);
	int w = in.window;
	if (w < 2) {
		in.hash[w] = sync_hash_bytes(in.hash[w], src, (size_t)n);
		in.bytes[w] += n;
		in.copies[w]++;
	}
	pthread_mutex_unlock(&in.lock);
}

void sync_input_step_end(uint64_t step)
{
	if (step == 1 && in.window == 0) {
		pthread_mutex_lock(&in.lock);
		in.window = 1;
		pthread_mutex_unlock(&in.lock);
		return;
	}
	if (step != 2 || in.window != 1)
		return;
	pthread_mutex_lock(&in.lock);
	__atomic_store_n(&in.window, 2, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&in.lock);
	int w = in.bytes[1] ? 1 : 0;
	if (sync_st.my_world <= 1)
		return;
	/* every rank posts, even one that copied nothing (the others wait for
	 * its value); nothing is said when nothing crossed to the device */
	const struct ddp_xrank x = { ddp_job_store(), sync_st.my_rank, sync_st.my_world };
	struct ddp_xr_diff d;
	uint64_t val[4] = { in.hash[0], in.bytes[0], in.hash[1], in.bytes[1] };
	if (!x.store)
		return;
	ddp_status_coll_begin("input hash exchange");
	enum ddp_xr_result r = ddp_xrank_compare(&x, DDP_XR_INPUT, 0, 1, val, sizeof val, DDP_XR_JUDGE,
						 (double)ddp_param_coll_timeout(), DDP_XR_NOROUND, &d);
	ddp_status_coll_leave();
	ddp_xr_diff_free(&d);
	if (r == DDP_XR_SAME && !in.bytes[w])
		return; /* no input crossed to the device: the program makes it there */
	if (r != DDP_XR_SAME) {
		DDP_INFO(GRAD, "input check: the ranks copied different input to the device (%s)",
			 r == DDP_XR_DIFF ? "they differ" : "not compared: a rank did not answer");
		return;
	}
	char msg[700];
	snprintf(msg, sizeof msg,
		 "libddp: every rank copied the same input to the device %s (%" PRIu64 " bytes in %" PRIu64
		 " cop%s, identical on all %d ranks): the ranks train on the same data, so %d ranks see no more "
		 "of it than one; give each rank its part with ddprun --shard PATH (docs/sharding.md)%s",
		 w ? "in step 2" : "up to the end of step 1", in.bytes[w], in.copies[w], in.copies[w] == 1 ? "y" : "ies", sync_st.my_world,
		 sync_st.my_world, ddp_param_require_shard() ? " (--require-shard: stopping)" : ", or check the --shard spec names the files the program reads; --require-shard makes this an error");
	if (ddp_param_require_shard())
		sync_die(msg);
	if (sync_st.my_rank == 0)
		DDP_WARN("%s", msg);
}
