/* SPDX-License-Identifier: MIT
 *
 * ddp_waits.c - counting wrappers over the port's synchronise entries
 * (ddp_waits.h): each call is counted and timed, and traced as a "wait"
 * event when the trace is on.
 *
 * Contract: install once (start-up, one thread); the wrappers and
 * ddp_waits_get from any thread (relaxed atomics: totals, not an order).
 */
#include <stddef.h>
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_stats.h"
#include "ddp_trace.h"
#include "ddp_waits.h"

static struct ddp_waits w;
static CUresult (*real_stream_sync)(CUstream);
static CUresult (*real_ctx_sync)(void);
static CUresult (*real_event_sync)(CUevent);
static const char *const wait_names[DDP_WAIT_KINDS] = { "cuStreamSynchronize", "cuCtxSynchronize",
							"cuEventSynchronize" };

static void account(enum ddp_wait_kind k, uint64_t t0, CUresult r)
{
	uint64_t dt = ddp_now_ns() - t0;
	__atomic_add_fetch(&w.calls[k], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&w.ns[k], dt, __ATOMIC_RELAXED);
	if (ddp_trace_enabled()) {
		struct ddp_trace_ev ev = {
			.name = wait_names[k], .cat = "wait", .ts_ns = t0, .dur_ns = dt, .result = (int32_t)r
		};
		ddp_trace_event(&ev);
	}
}

static CUresult stream_sync(CUstream s)
{
	uint64_t t0 = ddp_now_ns();
	CUresult r = real_stream_sync(s);
	account(DDP_WAIT_STREAM, t0, r);
	return r;
}

static CUresult ctx_sync(void)
{
	uint64_t t0 = ddp_now_ns();
	CUresult r = real_ctx_sync();
	account(DDP_WAIT_CTX, t0, r);
	return r;
}

static CUresult event_sync(CUevent e)
{
	uint64_t t0 = ddp_now_ns();
	CUresult r = real_event_sync(e);
	account(DDP_WAIT_EVENT, t0, r);
	return r;
}

void ddp_waits_install(void)
{
	struct ddp_driver *d = &ddp_driver_;
	if ((real_stream_sync = d->streamSynchronize))
		d->streamSynchronize = stream_sync;
	if ((real_ctx_sync = d->ctxSynchronize))
		d->ctxSynchronize = ctx_sync;
	if ((real_event_sync = d->eventSynchronize))
		d->eventSynchronize = event_sync;
}

void ddp_waits_get(struct ddp_waits *out)
{
	for (int k = 0; k < DDP_WAIT_KINDS; k++) {
		out->calls[k] = __atomic_load_n(&w.calls[k], __ATOMIC_RELAXED);
		out->ns[k] = __atomic_load_n(&w.ns[k], __ATOMIC_RELAXED);
	}
}

void ddp_waits_report(void)
{
	struct ddp_waits s;
	ddp_waits_get(&s);
	DDP_INFO(INIT,
		 "summary: host waits by libddp: %llu (cuStreamSynchronize %llu, cuCtxSynchronize %llu, "
		 "cuEventSynchronize %llu), %.3f ms; the trace has each (cat \"wait\")",
		 (unsigned long long)(s.calls[0] + s.calls[1] + s.calls[2]), (unsigned long long)s.calls[0],
		 (unsigned long long)s.calls[1], (unsigned long long)s.calls[2],
		 (s.ns[0] + s.ns[1] + s.ns[2]) / 1e6);
}
