/* SPDX-License-Identifier: MIT
 *
 * ddp_sync_exit.c - stepping aside, the exit report (summary, checks,
 * figures), ddprun inspect's roles (ddp_sync_explain).
 * Split from ddp_sync.c (moves only); ddp_sync_int.h lists the glue's
 * files, ddp_sync.c's header tells the story.
 *
 * Contract: sync_st.lock (ddp_sync.c) serialises every function here.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ddp_array.h"
#include "ddp_coll.h"
#include "ddp_cycle.h"
#include "ddp_extent.h"
#include "ddp_port.h"
#include "ddp_grad.h"
#include "ddp_job.h"
#include "ddp_kreg.h"
#include "ddp_launch.h"
#include "ddp_log.h"
#include "ddp_stats.h"
#include "ddp_params.h"
#include "ddp_store.h"
#include "ddp_sync.h"
#include "ddp_alloc.h"
#include "ddp_inspect.h"
#include "ddp_overlap.h"
#include "ddp_rangelog.h"
#include "ddp_sig.h"
#include "ddp_trace.h"
#include "ddp_torch_launch.h"
#include "ddp_status.h"
#include "ddp_sync_int.h"


void ddp_sync_step_aside(const char *why)
{
	if (!__atomic_exchange_n(&ddp_sync_on_, 0, __ATOMIC_ACQ_REL))
		return;
	__atomic_store_n(&sync_st.stepped_aside, 1, __ATOMIC_RELEASE);
	ddp_status_aside(); /* ddprun's end line says so */
	if (sync_st.my_rank == 0)
		DDP_WARN("libddp: rank 0: the program is already data-parallel (%s); ddprun's gradient "
			 "synchronisation steps aside: each rank's program synchronises itself",
			 why);
	else
		DDP_INFO(GRAD, "rank %d: %s; gradient synchronisation steps aside", sync_st.my_rank, why);
}

/* The program's own rendezvous, seen before synchronisation was on: why,
 * kept for ddp_sync_init (sync_aside_pending). */
static char rdzv_why[200];
static int rdzv_seen; /* 1 while rdzv_why is written, 2 once it is (atomic) */

void ddp_sync_program_rendezvous(const char *why)
{
	int expect = 0;
	if (__atomic_compare_exchange_n(&rdzv_seen, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		snprintf(rdzv_why, sizeof rdzv_why, "%s", why);
		__atomic_store_n(&rdzv_seen, 2, __ATOMIC_RELEASE);
	}
	ddp_sync_step_aside(why);
}

void sync_aside_pending(void)
{
	if (__atomic_load_n(&rdzv_seen, __ATOMIC_ACQUIRE) == 2)
		ddp_sync_step_aside(rdzv_why);
}

/* The run ends for the tracker: an open update phase ends first (its step
 * counts; the compare covers its parameter check), its plan runs, then the
 * final compare; a difference stops the rank.  Under sync_st.lock. */
static void finish_and_compare(void)
{
	const struct ddp_plan *plan = NULL;
	sync_st.at_exit = 1;
	if (ddp_grad_finish(sync_st.tracker, &plan) != DDP_OK) {
		const char *e = ddp_grad_last_error(sync_st.tracker);
		sync_die(e && *e ? e : "libddp: gradient tracking failed");
	}
	sync_exec_plan(plan);
	sync_st.at_exit = 0;
	char msg[700];
	if (sync_final_compare(ddp_grad_steps(sync_st.tracker), msg, sizeof msg))
		sync_die(msg);
}

void ddp_sync_freeing(uint64_t p)
{
	ddp_port_own_begin();
	pthread_mutex_lock(&sync_st.lock);
	if (ddp_sync_on_ && !sync_st.dry && !sync_st.final_done && sync_st.check_inv && sync_st.tracker && ddp_grad_steps(sync_st.tracker) > 0) {
		/* p: an allocation's base; a temporary's (cudaMallocAsync frees
		 * them each step) is no parameter or state */
		if (ddp_grad_alloc_holds_state(sync_st.tracker, p, ddp_grad_steps(sync_st.tracker)))
			finish_and_compare();
	}
	pthread_mutex_unlock(&sync_st.lock);
	ddp_port_own_end();
}

void ddp_sync_ctx_going(void *ctx, const char *fn)
{
	ddp_port_own_begin();
	pthread_mutex_lock(&sync_st.lock);
	if (ddp_sync_on_ && !sync_st.dry && !sync_st.final_done && sync_st.check_inv && sync_st.tracker &&
	    ctx && ctx == sync_st.train_ctx && ddp_grad_steps(sync_st.tracker) > 0) {
		/* the compare reads through the current context: ctx for now */
		CUcontext cur = NULL;
		int swap = ddp_driver_.ctxGetCurrent && ddp_driver_.ctxSetCurrent &&
			   ddp_driver_.ctxGetCurrent(&cur) == CUDA_SUCCESS && cur != (CUcontext)ctx &&
			   ddp_driver_.ctxSetCurrent((CUcontext)ctx) == CUDA_SUCCESS;
		DDP_DEBUG(GRAD, "%s: the parameters' context goes; the final compare runs first", fn);
		finish_and_compare();
		if (swap)
			(void)ddp_driver_.ctxSetCurrent(cur);
	}
	pthread_mutex_unlock(&sync_st.lock);
	ddp_port_own_end();
}

int ddp_sync_exit(const char *trace_dir, int rank)
{
	int failed = 0;
	if (__atomic_load_n(&sync_st.stepped_aside, __ATOMIC_ACQUIRE)) {
		/* what libddp averaged before it stood aside (0 when the program's
		 * own rendezvous came first): rank<k>.sync.json says so */
		char path[4096];
		FILE *f = trace_dir && *trace_dir &&
					  (size_t)snprintf(path, sizeof path, "%s/rank%d.sync.json", trace_dir, rank) <
						  sizeof path
				  ? DDP_SYS(fopen64)(path, "w")
				  : NULL;
		if (f) {
			fprintf(f,
				"{\"rank\":%d,\"world\":%d,\"stood_aside\":true,\"allreduce_bytes\":%" PRIu64
				",\"broadcast_bytes\":%" PRIu64 "}\n",
				rank, sync_st.my_world, sync_st.stats.allreduce_bytes, sync_st.stats.bcast_bytes);
			fclose(f);
		}
		ddp_job_fini();
		return 0;
	}
	if (!ddp_sync_on_)
		return 0;
	pthread_mutex_lock(&sync_st.lock);
	/* an open update phase ends here (its invariant check, if due, runs) */
	sync_st.at_exit = 1;
	const struct ddp_plan *plan = NULL;
	if (ddp_grad_finish(sync_st.tracker, &plan) != DDP_OK) {
		const char *e = ddp_grad_last_error(sync_st.tracker);
		DDP_ERROR("%s", e && *e ? e : "libddp: gradient tracking failed at exit");
		failed = 1;
	}
	sync_exec_plan(plan);
	uint64_t steps = ddp_grad_steps(sync_st.tracker);
	uint64_t red = ddp_grad_reductions(sync_st.tracker);
	double per = steps ? 1.0 / (double)steps : 0.0;
	char ovs[256];
	if (!sync_st.dry)
		ddp_overlap_finish();
	ddp_overlap_summary(ovs, sizeof ovs);
	struct ddp_cycle_report rep;
	uint64_t seen = 0;
	if (!sync_st.dry && !failed && red == 0 && steps == 0 && sync_st.stats.launches > 0 &&
	    sync_no_update_evidence(&rep, &seen)) {
		/* evaluation or inference: every launch libddp saw, from the
		 * first, wrote only memory no earlier launch had read first
		 * (ddp_cycle_rewrote_any): no update ran, so nothing had to be
		 * averaged; each rank computed on its own inputs */
		if (sync_st.my_rank == 0)
			DDP_WARN("libddp: no update ran and nothing was averaged: none of the %" PRIu64
				 " kernel launches of rank 0 rewrote memory that an earlier launch had read (an "
				 "evaluation or inference program); each rank computed on its own inputs",
				 seen);
		else
			DDP_INFO(GRAD, "rank %d: no update ran and nothing was averaged (%" PRIu64
				       " launches, none rewrote memory an earlier launch had read)",
				 sync_st.my_rank, seen);
	} else if (!sync_st.dry && !failed && (red == 0 || steps == 0) && sync_st.stats.launches > 0) {
		/* nothing is silent: a rank of a multi-rank job that launched kernels
		 * and averaged nothing did not train as one model with the others;
		 * one whose optimizer was never recognised cannot be known to have
		 * (a reader, e.g. a gradient norm, may have averaged what it read) */
		DDP_ERROR("libddp: this rank launched %" PRIu64
			  " kernels and %s; it is not known to have trained as "
			  "one model with the other ranks%s: %sreport the update kernel (the "
			  "last kernel launched: %.100s; docs/gradient-sync.md, \"How ddprun stops\")",
			  sync_st.stats.launches,
			  steps ? "averaged no gradient (optimizer steps ran but no gradient was found)"
			  : red ? "no kernel was recognised as an optimizer (gradient readers averaged what they read)"
				: "averaged no gradient (no kernel was recognised as an optimizer)",
			  sync_host_writes_note(), sync_st.torch_seen ? "PyTorch optimizers built with foreach=False are not recognised: use foreach=True "
				       "or fused=True; else "
				     : "",
			  sync_st.cur_k && sync_st.cur_k->demangled ? sync_st.cur_k->demangled : "?");
		failed = 1;
	}
	if (!sync_st.dry && !failed && steps > 0 && sync_st.check_inv && !sync_st.final_done) {
		/* nothing freed before exit: compare now, while the context lives */
		char msg[700];
		if (!sync_st.real_ctx_sync || sync_st.real_ctx_sync() != CUDA_SUCCESS)
			DDP_INFO(GRAD, "final check skipped: the program destroyed its context before exit without "
				       "freeing its parameters");
		else if ((failed = sync_final_compare(steps, msg, sizeof msg)))
			DDP_ERROR("%s", msg);
	}
	DDP_INFO(GRAD,
		 "sync summary: %" PRIu64 " optimizer steps, %" PRIu64 " gradient reductions "
		 "(%" PRIu64 " buffer allreduces, %" PRIu64 " bytes, %.3f ms; per step %.0f bytes, %.3f ms), "
		 "%" PRIu64 " parameter broadcasts (%" PRIu64 " bytes, %.3f ms), %" PRIu64 " signature checks, "
		 "%" PRIu64 " --check comparisons, %" PRIu64 " calibration launches, about %" PRIu64
		 " launches on "
		 "the cheap path; %s",
		 steps, red, sync_st.stats.allreduce_calls, sync_st.stats.allreduce_bytes, sync_st.stats.allreduce_ns / 1e6,
		 sync_st.stats.allreduce_bytes * per, sync_st.stats.allreduce_ns / 1e6 * per, sync_st.stats.bcast_calls,
		 sync_st.stats.bcast_bytes, sync_st.stats.bcast_ns / 1e6, sync_st.stats.sig_checks, sync_st.stats.hash_checks,
		 sync_st.stats.calibrations, __atomic_load_n(&sync_fastcount.n, __ATOMIC_RELAXED), ovs);
	if (trace_dir && *trace_dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/rank%d.sync.json", trace_dir, rank);
		FILE *f = DDP_SYS(fopen64)(path, "w");
		if (f) {
			fprintf(f,
				"{\"rank\":%d,\"world\":%d,\"steps\":%" PRIu64 ",\"reductions\":%" PRIu64
				",\"allreduce_calls\":%" PRIu64 ",\"allreduce_bytes\":%" PRIu64
				",\"allreduce_ms\":%.3f,\"broadcast_calls\":%" PRIu64
				",\"broadcast_bytes\":%" PRIu64
				",\"broadcast_ms\":%.3f,\"signature_checks\":%" PRIu64 ",\"hash_checks\":%" PRIu64
				",\"bytes_reduced_per_step\":%.0f,\"coll_ms_per_step\":%.3f,\"gradient_bytes\":%" PRIu64
				",\"invariant_checks\":%" PRIu64 ",\"invariant_bytes_hashed\":%" PRIu64
				",\"invariant_ms\":%.3f,\"calibrations\":%" PRIu64
				",\"check_ms\":%.3f,\"final_check\":\"%s\",\"bytes_reduced_by_step\":[",
				rank, sync_st.my_world, steps, red, sync_st.stats.allreduce_calls, sync_st.stats.allreduce_bytes,
				sync_st.stats.allreduce_ns / 1e6, sync_st.stats.bcast_calls, sync_st.stats.bcast_bytes,
				sync_st.stats.bcast_ns / 1e6, sync_st.stats.sig_checks, sync_st.stats.hash_checks,
				sync_st.stats.allreduce_bytes * per, (sync_st.stats.allreduce_ns + sync_st.stats.bcast_ns) / 1e6 * per,
				ddp_grad_grad_bytes(sync_st.tracker), sync_st.stats.inv_checks, sync_st.stats.inv_bytes,
				sync_st.stats.inv_ns / 1e6, sync_st.stats.calibrations,
				(sync_st.stats.hash_ns + sync_st.stats.inv_ns) / 1e6,
				!sync_st.final_done ? "not run" : sync_st.final_differs ? "differs" : "equal");
			for (uint64_t i = 0; i < steps; i++)
				fprintf(f, "%s%" PRIu64, i ? "," : "",
					i < sync_st.stats.nstep_bytes ? sync_st.stats.step_bytes[i] : 0);
			fputc(']', f);
			ddp_overlap_json(f);
			ddp_rangelog_json(f);
			fprintf(f, ",\"buffers\":[");
			int first = 1;
			for (size_t i = 0; i < ddp_grad_nbufs(sync_st.tracker); i++) {
				const struct ddp_grad_buf *b = ddp_grad_buf_at(sync_st.tracker, i);
				if ((b->role != DDP_GR_GRAD && b->role != DDP_GR_PARAM) ||
				    !ddp_grad_buf_current(sync_st.tracker, b))
					continue;
				fprintf(f, "%s{\"role\":\"%s\",\"label\":\"", first ? "" : ",",
					b->role == DDP_GR_GRAD ? "gradient" : "parameter");
				ddp_json_escape(f, b->label);
				fprintf(f,
					"\",\"bytes\":%" PRIu64 ",\"offset\":%" PRIu64
					",\"allocation_bytes\":%" PRIu64
					",\"dtype\":\"%s\",\"evidence\":\"%s\"}",
					b->size, b->base - b->alloc_base, b->alloc_size,
					b->role == DDP_GR_GRAD ? ddp_dtype_name((enum ddp_dtype)b->dtype) : "",
					ddp_grad_evidence_name((enum ddp_grad_evidence)b->evidence));
				first = 0;
			}
			fprintf(f, "]}\n");
			fclose(f);
		}
	}
	/* The job goes away below; launches the program still makes after this
	 * (its own atexit handlers run after ours) pass straight to the driver. */
	__atomic_store_n(&ddp_sync_on_, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sync_st.lock);
	if (!sync_st.dry)
		ddp_job_fini();
	return failed;
}

void ddp_sync_explain(const char *path)
{
	FILE *f;
	if (!sync_st.dry || !sync_st.tracker || !path || !*path || !(f = DDP_SYS(fopen64)(path, "a")))
		return;
	pthread_mutex_lock(&sync_st.lock);
	/* the sections are the Roles table's records, grouped by role */
	static const struct {
		uint8_t role;
		const char *title;
	} sect[] = {
		{ DDP_GR_PARAM, "Parameters (parameter and optimizer-state ranges the update writes)" },
		{ DDP_GR_GRAD, "Gradients (ranges averaged before the update reads them)" },
	};
	for (size_t s = 0; s < sizeof sect / sizeof sect[0]; s++) {
		fprintf(f, "\n## %s\n", sect[s].title);
		for (size_t i = 0; i < ddp_grad_nbufs(sync_st.tracker); i++) {
			const struct ddp_grad_buf *b = ddp_grad_buf_at(sync_st.tracker, i);
			if (b->role == sect[s].role && ddp_grad_buf_current(sync_st.tracker, b))
				fprintf(f, "  #%u  +%" PRIu64 "  %" PRIu64 " bytes  %s\n", b->alloc_id,
					b->base - b->alloc_base, b->size, b->label);
		}
	}
	sync_fused_explain(f);
	fprintf(f, "\n## Roles (the gradient tracker's rules, run dry: docs/gradient-sync.md)\n");
	fprintf(f,
		"optimizer steps: %" PRIu64 ", calibration launches: %" PRIu64 ", gradient bytes: %" PRIu64
		"\n",
		ddp_grad_steps(sync_st.tracker), sync_st.stats.calibrations, ddp_grad_grad_bytes(sync_st.tracker));
	fprintf(f, "%-10s %-40s %10s %10s %6s  %s\n", "role", "range", "offset", "bytes", "dtype", "evidence");
	size_t shown = 0;
	for (size_t i = 0; i < ddp_grad_nbufs(sync_st.tracker); i++) {
		const struct ddp_grad_buf *b = ddp_grad_buf_at(sync_st.tracker, i);
		if (b->role == DDP_GR_NONE || b->role == DDP_GR_OTHER || !ddp_grad_buf_current(sync_st.tracker, b))
			continue;
		fprintf(f, "%-10s %-40s %10" PRIu64 " %10" PRIu64 " %6s  %s",
			ddp_grad_role_name((enum ddp_grad_role)b->role), b->label, b->base - b->alloc_base,
			b->size, b->role == DDP_GR_GRAD ? ddp_dtype_name((enum ddp_dtype)b->dtype) : "-",
			ddp_grad_evidence_name((enum ddp_grad_evidence)b->evidence));
		if (b->role == DDP_GR_GRAD && b->named)
			fprintf(f, "; named by its consumer, whatever its address (PyTorch: docs/pytorch.md)");
		else if (b->role == DDP_GR_GRAD)
			fprintf(f, "; written by %s%s%s; pairs with %s", b->writer,
				b->reader[0] ? "; revealed by " : "", b->reader,
				b->paired[0] ? b->paired : "?");
		fprintf(f, " (allocation #%u, %" PRIu64 " bytes%s)\n", b->alloc_id, b->alloc_size,
			b->bounded == DDP_GB_COUNT      ? ", range bounded by a count argument"
			: b->bounded == DDP_GB_EXACT    ? ", range exact (its tensor's extent)"
			: b->bounded == DDP_GB_MEASURED ? ", range measured (a rule of its launch's arguments)"
							: "");
		shown++;
	}
	if (!shown && sync_st.fused_launches)
		fprintf(f, "  none: a fused update (kernel %s: the update is computed inside the kernel from the "
			   "data, no gradient exists; \"Fused updates\" above)\n",
			sync_st.fused_rep.kname);
	else if (!shown)
		fprintf(f,
			"  none: no update was found (docs/gradient-sync.md, \"Which updates libddp finds\")\n");
	sync_exec_explain(f);
	pthread_mutex_unlock(&sync_st.lock);
	fclose(f);
}
