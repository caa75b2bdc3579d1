/* SPDX-License-Identifier: MIT
 *
 * hook_common.c - the slow half of a hook's exit (trace event, trace-level
 * log line), and the per-thread hook state.
 *
 * Contract: hook_end_slow runs only when tracing or trace-level logging is
 * on; it formats on the stack and hands the event to ddp_trace (per-thread
 * buffer) and the line to ddp_log (one write).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "hook.h"
#include "ddp_trace.h"

__thread struct hook_tls hook_tls_ __attribute__((tls_model("initial-exec")));

/* The trace category of a hook, from its name's family; worked out once per
 * hook (on the first traced call), then a table load. */
static const char *category_of_name(const char *n)
{
	static const struct {
		const char *prefix, *cat;
	} fam[] = {
		{ "cuLaunch", "launch" }, { "cuMemcpy", "copy" },   { "cuMemset", "copy" },
		{ "cuMem", "alloc" },     { "cuModule", "module" }, { "cuLibrary", "module" },
		{ "cuKernel", "module" }, { "cuGraph", "graph" },   { "cuStream", "graph" },
	};
	for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++)
		if (strncmp(n, fam[i].prefix, strlen(fam[i].prefix)) == 0)
			return fam[i].cat;
	return "hook";
}

static const char *category(enum hook_id id)
{
	static const char *cat[HOOK_COUNT]; /* filled lazily; benign race: same value */
	const char *c = __atomic_load_n(&cat[id], __ATOMIC_RELAXED);
	if (!c) {
		c = category_of_name(hook_info_[id].name);
		__atomic_store_n(&cat[id], c, __ATOMIC_RELAXED);
	}
	return c;
}

void hook_end_slow(struct hook_frame *f, int result, const char *argnames, const uint64_t *argv, size_t argc)
{
	const struct hook_info *hi = &hook_info_[f->id];

	if (f->trace && f->t0) {
		struct ddp_trace_ev ev = {
			.name = f->kname ? f->kname : hi->name,
			.cat = category((enum hook_id)f->id),
			.kernel = f->kname,
			.ts_ns = f->t0,
			.dur_ns = f->dur,
			.bytes = f->bytes,
			.addr = f->addr,
			.result = result,
		};
		/* grid/block are set by the launch hooks only (module hooks name a
		 * kernel too, without a grid) */
		if (f->kname && strcmp(ev.cat, "launch") == 0) {
			memcpy(ev.grid, f->grid, sizeof ev.grid);
			memcpy(ev.block, f->block, sizeof ev.block);
		}
		ddp_trace_event(&ev);
	}
	if (f->log && DDP_LOG_ON(DDP_LOG_TRACE, DDP_SUB_HOOK)) {
		/* "name(a=0x1, b=2) = 0 (1.234 us)": argnames is "(a, b)" */
		char buf[768];
		size_t n = 0;
		const char *p = argnames;
		if (*p == '(')
			p++;
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s(", hi->name);
		for (size_t i = 0; i < argc && n < sizeof buf - 40; i++) {
			size_t len = strcspn(p, ",)");
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%.*s=0x%llx", i ? ", " : "",
					      (int)len, p, (unsigned long long)argv[i]);
			p += len;
			while (*p == ',' || *p == ' ')
				p++;
		}
		if (n < sizeof buf)
			snprintf(buf + n, sizeof buf - n, ")%s%s", f->kname ? " kernel " : "",
				 f->kname ? f->kname : "");
		DDP_TRACE(HOOK, "%s = %d (%llu.%03llu us)", buf, result, (unsigned long long)(f->dur / 1000),
			  (unsigned long long)(f->dur % 1000));
	}
}

/* See interpose/hook_file.h: the file hooks leave libddp's own I/O alone. */
int hook_file_bypass(void)
{
	return hook_tls_.inside > 0;
}
