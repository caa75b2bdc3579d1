/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_fused.c - the glue of ddp_fused.h: host-to-device copies
 * remembered as host-set bytes, input arguments marked for the tracker,
 * and the stop at a fused update (an update computed inside the kernel
 * from each rank's data, with no gradient to average).
 *
 * Contract: ddp_sync_host_copied from any thread (takes sync_st.lock);
 * sync_fused_launch and sync_fused_explain under sync_st.lock.  All of it
 * runs only until the tracker's first update step: then the host-set
 * bytes are freed and the launch path pays one pointer test.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

#include "ddp_alloc.h"
#include "ddp_coll.h"
#include "ddp_dtype.h"
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_sync.h"
#include "ddp_sync_int.h"

void ddp_sync_host_copied(uint64_t dst, uint64_t bytes)
{
	struct ddp_alloc_ent e;
	/* (the copy hook told ddp_sync_device_written where it wrote) */
	if (!ddp_sync_on_ || !bytes || !__atomic_load_n(&sync_st.fused, __ATOMIC_RELAXED))
		return;
	if (!ddp_alloc_covers(dst, bytes, &e))
		return;
	pthread_mutex_lock(&sync_st.lock);
	if (sync_st.fused)
		ddp_fused_host_copy(sync_st.fused, e.id, dst, dst + bytes);
	pthread_mutex_unlock(&sync_st.lock);
}

static const char *dt_name(uint8_t dt)
{
	const char *n = ddp_dtype_name((enum ddp_dtype)dt);
	return n && *n ? n : "?";
}

int sync_fused_launch(struct ddp_grad_arg *args, const struct ddp_grad_launch *L)
{
	struct ddp_fused_report r;
	if (sync_st.dry && sync_st.fused_kid == L->kid + 1) {
		sync_st.fused_launches++; /* its later launches: the tracker skips them too */
		return 1;
	}
	if (!sync_st.fused)
		return 0;
	if (ddp_grad_steps(sync_st.tracker)) { /* an update is known: the facts are done */
		ddp_fused_free(sync_st.fused);
		__atomic_store_n(&sync_st.fused, NULL, __ATOMIC_RELAXED);
		return 0;
	}
	/* input data: host-set bytes the launch only reads, or integers a
	 * host copy set (index arrays, token ids) whatever their constness */
	for (uint32_t i = 0; i < L->nargs; i++) {
		struct ddp_grad_arg *a = &args[i];
		uint64_t lo, hi;
		ddp_fused_arg_range(a, &lo, &hi);
		int integer = a->dtype >= DDP_DT_I8 && a->dtype <= DDP_DT_BOOL;
		a->host_set = (uint8_t)ddp_fused_host_set(sync_st.fused, a->alloc_id, lo, hi);
		a->input = (uint8_t)(a->host_set && !a->in_struct && (a->access == DDP_GA_READ || integer));
	}
	if (!ddp_fused_launch(sync_st.fused, L, &r) || ddp_param_debug_no_fused())
		return 0;
	if (sync_st.dry) { /* ddprun inspect: said in the report, the tracker skips it */
		if (!sync_st.fused_launches++) {
			sync_st.fused_rep = r;
			sync_st.fused_kid = L->kid + 1;
		}
		return 1;
	}
	char msg[1200];
	snprintf(msg, sizeof msg,
		 "libddp: fused update at step 1: kernel %.100s rewrites its argument %u (%s state, %" PRIu64
		 " bytes at +%" PRIu64 " of allocation #%u, copied from the host) in place from input data "
		 "(argument %u, %s, %" PRIu64 " bytes at +%" PRIu64 " of allocation #%u, copied from the host%s) "
		 "and reads no gradient: the update happens inside the kernel from each rank's own data, so "
		 "there is nothing to average and the ranks would train apart; the job stops before this "
		 "launch (docs/gradient-sync.md, \"Fused updates\")",
		 r.kname, r.state_param, dt_name(r.state_dtype), r.state_bytes, r.state_off, r.state_alloc,
		 r.data_param, dt_name(r.data_dtype), r.data_bytes, r.data_off, r.data_alloc,
		 r.ninputs > 1 ? "; and more input" : "");
	sync_die(msg);
}

int sync_fused_explain(FILE *f)
{
	const struct ddp_fused_report *r = &sync_st.fused_rep;
	fprintf(f, "\n## Fused updates (an update inside the compute kernel, no gradient: docs/gradient-sync.md)\n");
	if (!sync_st.fused_launches) {
		fprintf(f, "  none\n");
		return 0;
	}
	fprintf(f,
		"  fused update: kernel %s rewrites #%u +%" PRIu64 " (%" PRIu64 " bytes of %s, copied from the "
		"host) in place from input data #%u +%" PRIu64 " (%" PRIu64 " bytes of %s, copied from the host), "
		"with no gradient; %" PRIu64 " launches like it; under ddprun -n N the job stops at step 1\n",
		r->kname, r->state_alloc, r->state_off, r->state_bytes, dt_name(r->state_dtype), r->data_alloc,
		r->data_off, r->data_bytes, dt_name(r->data_dtype), sync_st.fused_launches);
	return 1;
}
