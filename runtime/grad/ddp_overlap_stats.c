/* SPDX-License-Identifier: MIT
 *
 * ddp_overlap_stats.c - the figures: per-step communication, hidden and wait
 * times (stamp_pdone, collect), the JSON of the exit report and the
 * summary line.
 * Split from ddp_overlap.c (moves only); ddp_overlap_int.h lists the
 * layer's files, ddp_overlap.c's header tells the story.
 *
 * Contract: called under ddp_sync.c's sync_st.lock only.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_array.h"
#include "ddp_coll.h"
#include "ddp_job.h"
#include "ddp_log.h"
#include "ddp_overlap.h"
#include "ddp_rangelog.h"
#include "ddp_slices.h"
#include "ddp_stats.h"
#include "ddp_trace.h"
#include "ddp_overlap_int.h"

/* ---- figures */

void CUDA_CB overlap_stamp_pdone(void *arg)
{
	uint64_t step = (uint64_t)(uintptr_t)arg;
	uint64_t now = ddp_now_ns();
	__atomic_store_n(&ov.pdone[step % OV_PDONE_RING], now ? now : 1, __ATOMIC_RELEASE);
}

static void trace_op(const struct ddp_coll_time *r, uint64_t step)
{
	if (!ddp_trace_enabled())
		return;
	struct ddp_trace_ev ev = {
		.name = "allreduce",
		.cat = "comm",
		.ts_ns = r->start_ns,
		.dur_ns = r->end_ns - r->start_ns,
		.bytes = ov.tick_bytes[r->ticket % OV_RING],
		.step = step,
		.track = DDP_TRACE_TRACK_COMM,
	};
	ddp_trace_event(&ev);
}

/* Takes the finished ops' times and closes the steps that have them all. */
void overlap_collect(struct ddp_comm *c)
{
	struct ddp_coll_time buf[64];
	size_t n;
	while (c && (n = ddp_coll_async_times(c, buf, 64)) > 0) {
		ov.recs = overlap_grow(ov.recs, &ov.reccap, ov.nrecs + n, sizeof *ov.recs);
		memcpy(ov.recs + ov.nrecs, buf, n * sizeof *buf);
		ov.nrecs += n;
		for (size_t i = 0; i < n; i++)
			overlap_step_rec(ov.tick_step[buf[i].ticket % OV_RING])->recs++;
	}
	for (size_t k = 0; k < ov.nst; k++) {
		struct ov_step *s = &ov.st[k];
		uint64_t step = k + 1;
		if (s->final || s->sync || !s->colls || s->recs < s->colls)
			continue;
		uint64_t pd = __atomic_load_n(&ov.pdone[step % OV_PDONE_RING], __ATOMIC_ACQUIRE);
		if (!s->stamped || !pd)
			continue;
		size_t w = 0;
		for (size_t i = 0; i < ov.nrecs; i++) {
			const struct ddp_coll_time *r = &ov.recs[i];
			if (ov.tick_step[r->ticket % OV_RING] != step) {
				ov.recs[w++] = *r;
				continue;
			}
			s->comm_ns += r->end_ns - r->start_ns;
			uint64_t e = r->end_ns < pd ? r->end_ns : pd;
			if (e > r->start_ns)
				s->hidden_ns += e - r->start_ns;
			if (r->end_ns > s->last_end)
				s->last_end = r->end_ns;
			if (r->arrive_ns) {
				uint64_t a = r->arrive_ns < r->start_ns ? r->start_ns
					     : r->arrive_ns > r->end_ns ? r->end_ns
									: r->arrive_ns;
				uint64_t ah = a < pd ? a : pd;
				s->peer_known = 1;
				s->peer_ns += a - r->start_ns;
				if (ah > r->start_ns)
					s->peer_hidden_ns += ah - r->start_ns;
			}
			trace_op(r, step);
		}
		ov.nrecs = w;
		s->wait_ns = s->last_end > pd ? s->last_end - pd : 0;
		s->final = 1;
		__atomic_store_n(&ov.pdone[step % OV_PDONE_RING], 0, __ATOMIC_RELAXED);
	}
}

void ddp_overlap_account_sync(uint64_t step, size_t colls, uint64_t ns)
{
	struct ov_step *s = overlap_step_rec(step);
	s->sync = 1;
	s->final = 1;
	s->colls += colls;
	s->comm_ns += ns;
	s->wait_ns += ns;
}

void ddp_overlap_finish(void)
{
	/* only a communicator that exists: none means no collective ever ran,
	 * and creating one here would wait at exit for every other rank */
	struct ddp_comm *c = ddp_job_comm_existing();
	if (!ov.on || !c)
		return;
	(void)ddp_coll_wait(c, 0);
	if (ddp_driver_.ctxSynchronize)
		(void)ddp_driver_.ctxSynchronize(); /* the stamps' host functions ran */
	overlap_collect(c);
}

/* Figures over steps OV_FIRST_STEP+ (or all steps when there are fewer). */
static void totals(double *steps, double *colls, double *comm_ms, double *hidden_ms, double *wait_ms,
		   double *peer_ms, double *peer_hidden_ms, int *peer_known)
{
	*steps = *colls = *comm_ms = *hidden_ms = *wait_ms = *peer_ms = *peer_hidden_ms = 0;
	*peer_known = 0;
	for (size_t k = 0; k < ov.nst; k++) {
		const struct ov_step *s = &ov.st[k];
		if (k + 1 < OV_FIRST_STEP || !s->final)
			continue;
		*steps += 1;
		*colls += (double)s->colls;
		*comm_ms += s->comm_ns / 1e6;
		*hidden_ms += s->hidden_ns / 1e6;
		*wait_ms += s->wait_ns / 1e6;
		*peer_ms += s->peer_ns / 1e6;
		*peer_hidden_ms += s->peer_hidden_ns / 1e6;
		*peer_known |= s->peer_known;
	}
}

void ddp_overlap_json(FILE *f)
{
	fprintf(f,
		",\"overlap\":\"%s\",\"slices\":\"%s\",\"early_reductions\":%" PRIu64 ",\"early_ranges\":%" PRIu64
		",\"sliced_ranges\":%" PRIu64 ",\"consumer_reductions\":%" PRIu64 ",\"rereductions\":%" PRIu64
		",\"fallbacks\":%" PRIu64 ",\"in_flight_waits\":%" PRIu64 ",\"per_step\":[",
		ov.on ? "on" : "off", ov.split ? "on" : "off", ov.early_ops, ov.early_units, ov.sliced_ranges,
		ov.consumer_ops, ov.rereductions, ov.fallbacks, ov.waits);
	int first = 1;
	for (size_t k = 0; k < ov.nst; k++) {
		const struct ov_step *s = &ov.st[k];
		if (!s->colls && !s->final)
			continue;
		fprintf(f,
			"%s{\"step\":%zu,\"collectives\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"rereductions\":%" PRIu64,
			first ? "" : ",", k + 1, s->colls, s->bytes, s->rered);
		if (s->early_colls) {
			fprintf(f,
				",\"early_collectives\":%" PRIu64 ",\"early_bytes\":%" PRIu64 ",\"early_at\":[",
				s->early_colls, s->early_bytes);
			for (uint32_t i = 0; i < s->nepos; i++)
				fprintf(f, "%s%" PRIu32, i ? "," : "", s->epos[i]);
			fputc(']', f);
		}
		if (s->final)
			fprintf(f, ",\"comm_ms\":%.3f,\"comm_hidden_ms\":%.3f,\"grad_wait_ms\":%.3f",
				s->comm_ns / 1e6, s->hidden_ns / 1e6, s->wait_ns / 1e6);
		if (s->final && s->peer_known)
			fprintf(f, ",\"peer_wait_ms\":%.3f,\"peer_wait_hidden_ms\":%.3f", s->peer_ns / 1e6,
				s->peer_hidden_ns / 1e6);
		fputc('}', f);
		first = 0;
	}
	fputc(']', f);
}

void ddp_overlap_summary(char *out, size_t cap)
{
	double steps, colls, comm_ms, hidden_ms, wait_ms, peer_ms, peer_hidden_ms;
	int peer_known;
	char peer[128] = "";
	totals(&steps, &colls, &comm_ms, &hidden_ms, &wait_ms, &peer_ms, &peer_hidden_ms, &peer_known);
	if (!steps) {
		snprintf(out, cap, "overlap %s", ov.on ? "on" : "off");
		return;
	}
	if (peer_known && comm_ms > peer_ms)
		snprintf(peer, sizeof peer,
			 " (%.3f ms waiting for other ranks; after all arrived %.0f%% hidden)",
			 peer_ms / steps, 100.0 * (hidden_ms - peer_hidden_ms) / (comm_ms - peer_ms));
	snprintf(out, cap,
		 "overlap %s: per step (steps %d+) %.1f collectives, comm %.3f ms of which %.0f%% hidden%s, "
		 "grad wait %.3f ms; %" PRIu64 " re-reductions",
		 ov.on ? "on" : "off", OV_FIRST_STEP, colls / steps, comm_ms / steps,
		 comm_ms > 0 ? 100.0 * hidden_ms / comm_ms : 0.0, peer, wait_ms / steps, ov.rereductions);
}
