/* SPDX-License-Identifier: MIT
 *
 * ddp_summary.c - the exit summary (see ddp_summary.h).
 *
 * Contract: runs at exit; allocates freely; never calls the driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ddp_alloc.h"
#include "ddp_port.h"
#include "ddp_kreg.h"
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_stats.h"
#include "ddp_summary.h"
#include "ddp_trace.h"

#define TOP_KERNELS 10

static uint64_t est_time(const struct ddp_stats_thread *t, unsigned id)
{
	if (!t->timed[id])
		return 0;
	return (uint64_t)((double)t->time_ns[id] / (double)t->timed[id] * (double)t->calls[id]);
}

static int cmp_k(const void *a, const void *b)
{
	const struct ddp_kfunc *x = *(struct ddp_kfunc *const *)a, *y = *(struct ddp_kfunc *const *)b;
	return x->launches < y->launches   ? 1
	       : x->launches > y->launches ? -1
					   : (x->id > y->id) - (x->id < y->id);
}

static void human(char *buf, size_t n, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, n, "%.1f GiB", (double)b / (1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, n, "%.1f MiB", (double)b / (1ull << 20));
	else if (b >= (1ull << 10))
		snprintf(buf, n, "%.1f KiB", (double)b / (1ull << 10));
	else
		snprintf(buf, n, "%llu B", (unsigned long long)b);
}

void ddp_summary_emit(const char *dir, int rank, int world, const char *(*hook_name)(unsigned id),
		      unsigned nhooks)
{
	struct ddp_stats_thread *t = calloc(1, sizeof *t);
	struct ddp_alloc_stats as;
	struct ddp_kfunc **ks = NULL;
	size_t nk = 0;
	uint64_t calls = 0, launches = 0, time_ns = 0;

	if (!t)
		return;
	ddp_stats_total(t);
	ddp_alloc_stats(&as);
	for (unsigned i = 0; i < nhooks; i++) {
		calls += t->calls[i];
		time_ns += est_time(t, i);
	}
	for (struct ddp_kfunc *k = ddp_kreg_first(); k; k = k->next)
		nk++;
	ks = calloc(nk ? nk : 1, sizeof *ks);
	nk = 0;
	for (struct ddp_kfunc *k = ddp_kreg_first(); ks && k; k = k->next) {
		ks[nk++] = k;
		launches += k->launches;
	}
	if (ks)
		qsort(ks, nk, sizeof *ks, cmp_k);

	if (ddp_param_summary() && DDP_LOG_ON(DDP_LOG_INFO, DDP_SUB_INIT)) {
		char b1[32], b2[32], line[900];
		DDP_INFO(INIT,
			 "summary: %llu hooked calls, %llu launches of %zu kernels, ~%.3f ms in hooked calls",
			 (unsigned long long)calls, (unsigned long long)launches, nk, (double)time_ns / 1e6);
		human(b1, sizeof b1, as.total_bytes);
		human(b2, sizeof b2, as.peak_bytes);
		DDP_INFO(INIT, "summary: allocations: %llu made (%s), %llu freed, peak %s, %llu live",
			 (unsigned long long)as.total_allocs, b1, (unsigned long long)as.total_frees, b2,
			 (unsigned long long)as.live_count);
		size_t n = 0;
		for (int d = 0; d < DDP_COPY_NDIR; d++) {
			human(b1, sizeof b1, t->copy_bytes[d]);
			n += (size_t)snprintf(line + n, sizeof line - n, "%s %s (%llu calls)%s",
					      ddp_copy_dir_name((enum ddp_copy_dir)d), b1,
					      (unsigned long long)t->copy_calls[d],
					      d + 1 < DDP_COPY_NDIR ? ", " : "");
		}
		DDP_INFO(INIT, "summary: copies: %s", line);
		for (unsigned i = 0; i < nhooks; i++) {
			if (!t->calls[i])
				continue;
			DDP_INFO(INIT, "summary: %-28s %10llu calls %6llu errors  ~%.3f ms", hook_name(i),
				 (unsigned long long)t->calls[i], (unsigned long long)t->errors[i],
				 (double)est_time(t, i) / 1e6);
		}
		for (size_t i = 0; i < nk && i < TOP_KERNELS; i++)
			DDP_INFO(INIT, "summary: kernel %10llu x %s", (unsigned long long)ks[i]->launches,
				 ks[i]->demangled);
	}

	if (dir && *dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/rank%d.summary.json", dir, rank);
		FILE *f = DDP_SYS(fopen64)(path, "w");
		if (!f) {
			DDP_ERROR("cannot write the summary %s: %s", path, strerror(errno));
		} else {
			fprintf(f,
				"{\"version\":1,\"rank\":%d,\"world_size\":%d,\"pid\":%d,"
				"\"hook_time_ns\":%llu,\n\"hooks\":[",
				rank, world, (int)getpid(), (unsigned long long)time_ns);
			int first = 1;
			for (unsigned i = 0; i < nhooks; i++) {
				if (!t->calls[i])
					continue;
				fprintf(f,
					"%s\n {\"name\":\"%s\",\"calls\":%llu,\"errors\":%llu,"
					"\"timed\":%llu,\"time_ns\":%llu}",
					first ? "" : ",", hook_name(i), (unsigned long long)t->calls[i],
					(unsigned long long)t->errors[i], (unsigned long long)t->timed[i],
					(unsigned long long)est_time(t, i));
				first = 0;
			}
			fprintf(f, "],\n\"kernels\":[");
			for (size_t i = 0; i < nk; i++) {
				fprintf(f, "%s\n {\"name\":\"", i ? "," : "");
				ddp_json_escape(f, ks[i]->demangled);
				fprintf(f, "\",\"launches\":%llu}", (unsigned long long)ks[i]->launches);
			}
			fprintf(f,
				"],\n\"alloc\":{\"count\":%llu,\"bytes\":%llu,\"peak\":%llu,"
				"\"live\":%llu,\"live_bytes\":%llu,\"frees\":%llu},\n\"copies\":{",
				(unsigned long long)as.total_allocs, (unsigned long long)as.total_bytes,
				(unsigned long long)as.peak_bytes, (unsigned long long)as.live_count,
				(unsigned long long)as.live_bytes, (unsigned long long)as.total_frees);
			for (int d = 0; d < DDP_COPY_NDIR; d++)
				fprintf(f, "%s\"%s\":{\"bytes\":%llu,\"calls\":%llu}", d ? "," : "",
					ddp_copy_dir_name((enum ddp_copy_dir)d),
					(unsigned long long)t->copy_bytes[d],
					(unsigned long long)t->copy_calls[d]);
			fprintf(f, "}}\n");
			fclose(f);
		}
	}
	free(ks);
	free(t);
}
