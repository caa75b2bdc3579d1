/* SPDX-License-Identifier: MIT
 *
 * ddp_sync.c - gradient synchronisation glue (see ddp_sync.h).  This file:
 * the state, the fatal path, helpers, settings and init; the executor,
 * collectives, checks, launch path and exit report live in the files
 * ddp_sync_int.h lists.
 *
 * Per launch (sync on): classify the kernel once by name (optimizer /
 * gradient reader / other; DDP_OPT_KERNELS, DDP_GRAD_READER_KERNELS; cached
 * on the kernel record), decode its arguments against the allocation table
 * (ddp_launch.h), hand them to the tracker (ddp_grad.h), answer its
 * measurements (synchronous copies and a relaunch for calibration) and carry
 * out the plan it returns (ddp_sync_exec.c): allreduce-average of gradients,
 * broadcast of parameters from rank 0, copies, the invariant's hashes, and
 * at step ends the parameter check.  "Other" kernels are not even decoded until a
 * gradient is known.
 *
 * Before a collective whose composition (kind, buffers, counts, dtypes) was
 * never issued, the ranks compare its signature through the store
 * (ddp_check_signature): a program that diverges between ranks stops with a
 * message instead of hanging or corrupting.  Every error on this path is
 * fatal: one `libddp:` line, then _exit(1), and ddprun stops the job.
 *
 * Reductions: the tracker's plan names the ranges to reduce and the
 * executor (ddp_sync_exec.c) hands them to the overlap layer (DDP_OVERLAP=on,
 * the default: ddp_overlap.c reduces them stream-ordered, in buckets, early
 * where the previous step showed their last writer) or, with
 * DDP_OVERLAP=off, to the synchronous collectives through the same bucket
 * planner (ddp_sync_coll.c).
 *
 * The cheap path (steady state, ddp_grad_steady): a non-optimizer,
 * non-reader launch is checked without the lock and without decoding: the
 * kernel's cached list of the 8-byte words that may hold a pointer
 * (built once, like the decoder's scan) is read from the launch's
 * arguments and each value looked up in an immutable, published snapshot
 * of the gradients' allocations (hot.snap, rebuilt under the lock when the
 * set of gradients changes).
 * No value inside a gradient allocation: the launch can neither
 * write a gradient nor touch an early reduction in flight (those ranges lie
 * inside gradient allocations), so the tracker would do nothing; it goes
 * to the driver.  Else, and outside the steady state, the slow path.
 * Launch positions (ddp_overlap.c) count slow-path launches only, the same
 * ones every step.
 *
 * Contract: sync_st.lock serialises everything below the launch hooks but the
 * cheap path (atomic loads of hot.ok, hot.snap and the kernel's scan list;
 * snapshots are never freed before exit); the
 * library's own driver calls go straight to the real driver (the port's
 * ddp_driver_, ddp_port.h) and ddp_port_own_begin/end bracket them (NCCL's
 * own driver calls then stay untracked).
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
#include "ddp_hash.h"
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
#include "ddp_sync_int.h"

int ddp_sync_on_;

struct sync_state sync_st = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.skip_avg = -1,
};

/* ---- fatal path */

void sync_die(const char *msg)
{
	DDP_ERROR("%s", msg);
	DDP_ERROR("libddp: rank %d stops (gradient synchronisation cannot continue safely)", sync_st.my_rank);
	fflush(stdout);
	_exit(1);
}

ddp_result sync_coll_fail(ddp_result rc, const char *what)
{
	struct ddp_comm *c = NULL;
	char msg[600];
	const char *detail = "";
	if (ddp_job_comm(&c) == DDP_OK && c)
		detail = ddp_coll_last_error(c);
	else
		detail = ddp_job_comm_error();
	if (detail && !strncmp(detail, "libddp: ", 8))
		detail += 8; /* one prefix per line */
	snprintf(msg, sizeof msg, "libddp: %s failed at step %" PRIu64 ": %s%s", what, sync_st.cur_step,
		 detail && *detail ? detail : ddp_strerror(rc),
		 rc == DDP_ERR_TIMEOUT ? " (DDP_COLL_TIMEOUT)" : "");
	sync_die(msg);
}

/* ---- helpers */

CUstream sync_the_stream(void *s)
{
	return (CUstream)s;
}

void sync_trace_coll(const char *name, uint64_t t0, uint64_t bytes, const char *what)
{
	if (!ddp_trace_enabled())
		return;
	struct ddp_trace_ev ev = {
		.name = name,
		.cat = "coll",
		.kernel = ddp_trace_intern(what),
		.ts_ns = t0,
		.dur_ns = ddp_now_ns() - t0,
		.bytes = bytes,
		.step = sync_st.cur_step,
	};
	ddp_trace_event(&ev);
}

/* Checks the signature of a collective composition the first time.  h is
 * the hash of the whole composition (ddp_grad_signature): every rank keeps
 * the same cache, so every rank checks the same compositions. */
void sync_check_sig(struct ddp_comm *c, const char *kind, const char *sig, uint64_t h)
{
	h = ddp_fnv1a(h, kind, strlen(kind));
	for (size_t i = 0; i < sync_st.nsigs; i++)
		if (sync_st.sigs_seen[i] == h)
			return;
	ddp_result rc = ddp_check_signature(c, kind, sig);
	if (rc != DDP_OK)
		sync_coll_fail(rc, "collective signature check");
	sync_st.stats.sig_checks++;
	uint64_t *p = ddp_array_grow(sync_st.sigs_seen, &sync_st.sigcap, sync_st.nsigs + 1, sizeof *p, 64);
	if (!p) /* forgetting it here alone would make this rank check again, alone */
		sync_die("libddp: out of memory (collective signature cache)");
	sync_st.sigs_seen = p;
	sync_st.sigs_seen[sync_st.nsigs++] = h;
}

/* ---- init and the launch path */

void ddp_sync_init(int rank, int world)
{
	static const struct ddp_grad_ops ops = {
		.ctx = NULL,
		.read = sync_op_read,
		.write = sync_op_write,
		.relaunch = sync_op_relaunch,
		.alive = sync_op_alive,
	};
	static const struct ddp_overlap_env env = {
		.coll_fail = sync_ov_coll_fail,
		.check_sig = sync_check_sig,
		.alive = sync_ov_alive,
	};
	int mode = ddp_param_sync(); /* auto|on|off */
	enum ddp_dtype ov = DDP_DT_UNKNOWN;
	const char *dt = ddp_param_grad_dtype();

	sync_st.my_rank = rank;
	sync_st.my_world = world;
	if (world <= 1 && mode != 2 && ddp_inspect_enabled()) {
		/* ddprun inspect: the tracker runs dry (no job, no collectives)
		 * so that the report can show every range's role and evidence */
		sync_st.dry = 1;
		ddp_inspect_use_tracker();
	} else if (mode == 2 || world <= 1) {
		if (mode == 1 && world <= 1)
			DDP_INFO(GRAD, "DDP_SYNC=on with one rank: nothing to synchronise");
		return;
	}
	if (!sync_st.dry && mode == 0 && !ddp_job_launched()) {
		/* auto, but no launcher whose job we can join (RANK/WORLD_SIZE by hand) */
		DDP_WARN("libddp: WORLD_SIZE=%d but no launcher (ddprun, torchrun, Slurm, MPI) started this rank: "
			 "gradient synchronisation is off and this rank trains alone (DDP_SYNC=on makes this an error)",
			 world);
		return;
	}
	if (dt && *dt) {
		ov = ddp_dtype_parse(dt);
		if (!ddp_dtype_reducible(ov))
			sync_die("libddp: DDP_GRAD_DTYPE must be f32, f16 or bf16");
	}
	sync_st.opt_setting = ddp_param_opt_kernels();
	sync_st.reader_setting = ddp_param_grad_reader_kernels();
	sync_st.check_every = ddp_param_check();
	sync_st.check_inv = ddp_param_check_invariant();
	sync_st.skip_avg = ddp_param_debug_skip_avg();
	sync_st.no_measure = ddp_param_debug_no_measure();
	sync_st.no_names = ddp_param_debug_no_names();
	if (sync_st.no_names)
		DDP_WARN("DDP_DEBUG_NO_NAMES=1: the kernel-name tables are empty (no optimizer, reader or iteration "
			 "end by name, no PyTorch gradient list by functor): roles come from the data flow alone (a "
			 "test setting)");
	sync_st.opt_wait_s = ddp_param_opt_wait();
	sync_st.real_sync = ddp_driver_.streamSynchronize;
	sync_st.real_ctx_sync = ddp_driver_.ctxSynchronize;
	if (!sync_st.real_sync)
		sync_die("libddp: the driver has no cuStreamSynchronize");
	sync_st.overlap_mode = ddp_param_overlap();
	int overlap = sync_st.overlap_mode != 2 && !sync_st.dry && sync_st.skip_avg < 0;
	if (sync_st.overlap_mode != 2 && sync_st.skip_avg >= 0)
		DDP_WARN("DDP_DEBUG_SKIP_AVG is set: gradient reductions are synchronous (DDP_OVERLAP=off)");
	const char *bmb = ddp_param_bucket_mb();
	char *bend = NULL;
	int auto_buckets = !bmb || !*bmb || strcmp(bmb, "auto") == 0;
	double mb = auto_buckets ? 25.0 : strtod(bmb, &bend);
	if ((!auto_buckets && (!bend || *bend)) || !(mb > 0) || mb > 65536) {
		char msg[200];
		snprintf(msg, sizeof msg,
			 "libddp: DDP_BUCKET_MB=%.60s: must be auto or a number of MiB above 0 and at most "
			 "65536 (e.g. 25, or 0.05 for a small model)",
			 bmb ? bmb : "");
		sync_die(msg);
	}
	uint64_t bucket_bytes = (uint64_t)(mb * 1048576.0);
	sync_st.bucket_bytes = bucket_bytes ? bucket_bytes : 1;
	ddp_overlap_init(&env, overlap, auto_buckets ? 0 : sync_st.bucket_bytes, ddp_param_overlap_slices());
	if (ddp_grad_new(&ops, ov, &sync_st.tracker) != DDP_OK)
		sync_die("libddp: out of memory (gradient tracker)");
	if (ddp_param_debug_unseen_bytes()) {
		ddp_grad_set_debug_unseen(sync_st.tracker, (uint64_t)ddp_param_debug_unseen_bytes());
		DDP_WARN("DDP_DEBUG_UNSEEN_BYTES=%ld: no gradient of exactly that many bytes is made from the data "
			 "flow (a debug setting: the parameter check must stop this job)",
			 ddp_param_debug_unseen_bytes());
	}
	if (ddp_param_debug_avg_state()) {
		ddp_grad_set_debug_avg_state(sync_st.tracker, 1);
		DDP_WARN("DDP_DEBUG_AVG_STATE=1: optimizer state formed before the optimizer kernel, and parameters "
			 "a foreach optimizer op reads beside the gradients, are averaged as gradients (a debug "
			 "setting: training is wrong)");
	}
	if (!sync_st.dry && !ddp_param_debug_no_cycles() && ddp_cycle_new(&sync_st.cycles) != DDP_OK)
		sync_die("libddp: out of memory (gradient tracker)");
	if (ddp_fused_new(&sync_st.fused) != DDP_OK)
		sync_die("libddp: out of memory (gradient tracker)");
	if (sync_st.dry) {
		ddp_grad_set_strict(sync_st.tracker, 0);
		ddp_sync_on_ = 1;
		return;
	}
	if (sync_st.skip_avg >= 0)
		DDP_WARN("DDP_DEBUG_SKIP_AVG=%ld: one gradient range of every reduction is left unaveraged (a debug "
			 "setting: the invariant check must stop this job)",
			 sync_st.skip_avg);
	if (ddp_job_init() != DDP_OK)
		sync_die("libddp: cannot join the job; see the line above");
	DDP_INFO(GRAD, "gradient synchronisation on: %d ranks%s%s", world,
		 sync_st.check_every ? ", --check every " : "", sync_st.check_every ? "N steps" : "");
	ddp_sync_on_ = 1;
	sync_aside_pending(); /* the program's own rendezvous came first */
}
