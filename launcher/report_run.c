/* SPDX-License-Identifier: MIT
 *
 * report_run.c - the run in `ddprun report`: what a torchrun or Nsight user
 * looks for first (report_run.h).
 *
 * Sources, per rank:
 *   the trace's step events  ("cat":"step", args.step; ts and dur in us:
 *                            one span per optimizer step, back to back)
 *                            -> step time (median, p90), steps/s, and the
 *                            skew: how much later than the first rank each
 *                            rank ended the same step (the ranks' traces
 *                            share CLOCK_MONOTONIC on one node; across
 *                            nodes the skew is left out)
 *   the trace's collectives  ("cat":"comm" or "coll" with args.bytes)
 *                            -> GB/s per operation and size class (bytes /
 *                            duration of the call: what the program waited
 *                            for, not the link's bus bandwidth)
 *   rank<k>.sync.json        per_step comm_ms - comm_hidden_ms -> exposed
 *                            communication per step; hash_checks, check_ms,
 *                            final_check -> the checks' cost and verdict
 * The figures are over steps 3+ (steps 1 and 2 learn: broadcasts,
 * calibration), or over every step when a rank ran fewer than 3.
 *
 * Contract: single thread; allocates freely; out of memory drops data
 * (the section says less), never crashes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "ddp_array.h"
#include "launch.h"
#include "report_run.h"

#define RUN_FIRST_STEP 3

struct step_ev {
	double step, ts, dur; /* us */
};

struct coll_ev {
	char op[24];
	double bytes, dur; /* dur in us */
};

struct sync_step {
	double step, comm, hidden; /* ms */
};

struct bw_cell {
	size_t calls;
	double gbps; /* median */
};

struct rank_col {
	int rank, exited, have_sync;
	struct step_ev *st;
	size_t nst, cst;
	struct coll_ev *co;
	size_t nco, cco;
	struct sync_step *ss;
	size_t nss, css;
	double checks, check_ms;
	char final[16];
	/* computed by run_compute */
	size_t used; /* steps in the figures */
	double med, p90, sps, busy_ms, all_ms, skew_med, skew_max, exposed_med;
	int skew_known, exposed_known;
};

/* one row of the bandwidth table: an operation and a size class */
struct bw_row {
	char op[24];
	int cls; /* bytes in (2^(cls-1), 2^cls] */
	struct bw_cell *cell; /* per rank */
};

struct report_run {
	size_t n;
	struct rank_col *col;
	struct bw_row *bw;
	size_t nbw, cbw;
	int first_step; /* RUN_FIRST_STEP, or 1 when a rank ran fewer */
	int computed;
};

struct report_run *report_run_new(const int *ranks, size_t nranks)
{
	struct report_run *run = calloc(1, sizeof *run);
	if (!run || !(run->col = calloc(nranks ? nranks : 1, sizeof *run->col))) {
		free(run);
		return NULL;
	}
	run->n = nranks;
	for (size_t r = 0; r < nranks; r++) {
		run->col[r].rank = ranks[r];
		snprintf(run->col[r].final, sizeof run->col[r].final, "-");
	}
	return run;
}

void report_run_free(struct report_run *run)
{
	if (!run)
		return;
	for (size_t r = 0; r < run->n; r++) {
		free(run->col[r].st);
		free(run->col[r].co);
		free(run->col[r].ss);
	}
	for (size_t i = 0; i < run->nbw; i++)
		free(run->bw[i].cell);
	free(run->bw);
	free(run->col);
	free(run);
}

static double num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

void report_run_event(struct report_run *run, size_t r, const json_t *ev)
{
	if (!run || r >= run->n)
		return;
	struct rank_col *c = &run->col[r];
	const char *cat = json_string_value(json_object_get(ev, "cat"));
	const json_t *args = json_object_get(ev, "args");
	if (!cat || !json_is_number(json_object_get(ev, "ts")))
		return;
	if (!strcmp(cat, "step") && json_is_number(json_object_get(args, "step"))) {
		struct step_ev *v = ddp_array_grow(c->st, &c->cst, c->nst + 1, sizeof *v, 64);
		if (!v)
			return;
		c->st = v;
		c->st[c->nst++] = (struct step_ev){ num(args, "step"), num(ev, "ts"), num(ev, "dur") };
	} else if ((!strcmp(cat, "comm") || !strcmp(cat, "coll")) && num(args, "bytes") > 0 && num(ev, "dur") > 0) {
		const char *op = json_string_value(json_object_get(ev, "name"));
		struct coll_ev *v = ddp_array_grow(c->co, &c->cco, c->nco + 1, sizeof *v, 64);
		if (!v)
			return;
		c->co = v;
		struct coll_ev *e = &c->co[c->nco++];
		snprintf(e->op, sizeof e->op, "%s", op ? op : "?");
		e->bytes = num(args, "bytes");
		e->dur = num(ev, "dur");
	}
}

void report_run_sync(struct report_run *run, size_t r, const json_t *sync)
{
	if (!run || r >= run->n)
		return;
	struct rank_col *c = &run->col[r];
	const json_t *ps = json_object_get(sync, "per_step");
	const char *fin = json_string_value(json_object_get(sync, "final_check"));
	c->have_sync = 1;
	c->checks = num(sync, "hash_checks");
	c->check_ms = num(sync, "check_ms");
	snprintf(c->final, sizeof c->final, "%s", fin ? fin : "-");
	for (size_t i = 0; i < json_array_size(ps); i++) {
		const json_t *e = json_array_get(ps, i);
		struct sync_step *v = ddp_array_grow(c->ss, &c->css, c->nss + 1, sizeof *v, 64);
		if (!v)
			return;
		c->ss = v;
		c->ss[c->nss++] = (struct sync_step){ num(e, "step"), num(e, "comm_ms"), num(e, "comm_hidden_ms") };
	}
}

void report_run_exited(struct report_run *run, size_t r)
{
	if (run && r < run->n)
		run->col[r].exited = 1;
}

/* ---- the figures */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int cmp_step(const void *a, const void *b)
{
	return cmp_double(&((const struct step_ev *)a)->step, &((const struct step_ev *)b)->step);
}

/* The q-quantile (nearest rank) of v[0..n), sorted in place; NAN if n=0. */
static double quantile(double *v, size_t n, double q)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	size_t k = (size_t)ceil(q * (double)n);
	return v[k ? k - 1 : 0];
}

/* The end (us) of step s on column c; NAN when c has no such step. */
static double step_end(const struct rank_col *c, double s)
{
	size_t lo = 0, hi = c->nst;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->st[mid].step < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nst && c->st[lo].step == s ? c->st[lo].ts + c->st[lo].dur : NAN;
}

static int size_class(double bytes)
{
	int k = 0;
	while (k < 62 && ldexp(1.0, k) < bytes)
		k++;
	return k;
}

static struct bw_row *bw_row(struct report_run *run, const char *op, int cls)
{
	for (size_t i = 0; i < run->nbw; i++)
		if (run->bw[i].cls == cls && !strcmp(run->bw[i].op, op))
			return &run->bw[i];
	struct bw_row *v = ddp_array_grow(run->bw, &run->cbw, run->nbw + 1, sizeof *v, 8);
	if (!v)
		return NULL;
	run->bw = v;
	struct bw_row *b = &run->bw[run->nbw];
	memset(b, 0, sizeof *b);
	if (!(b->cell = calloc(run->n, sizeof *b->cell)))
		return NULL;
	snprintf(b->op, sizeof b->op, "%s", op);
	b->cls = cls;
	run->nbw++;
	return b;
}

static int by_op_size(const void *a, const void *b)
{
	const struct bw_row *x = a, *y = b;
	int o = strcmp(x->op, y->op);
	return o ? o : x->cls - y->cls;
}

static void compute_bandwidth(struct report_run *run, size_t r)
{
	struct rank_col *c = &run->col[r];
	double *g = malloc((c->nco ? c->nco : 1) * sizeof *g);
	unsigned char *done = calloc(c->nco ? c->nco : 1, 1);
	for (size_t i = 0; g && done && i < c->nco; i++) {
		if (done[i])
			continue;
		int cls = size_class(c->co[i].bytes);
		size_t n = 0;
		for (size_t j = i; j < c->nco; j++)
			if (!done[j] && size_class(c->co[j].bytes) == cls && !strcmp(c->co[j].op, c->co[i].op)) {
				done[j] = 1;
				g[n++] = c->co[j].bytes / (c->co[j].dur * 1e3); /* bytes per us -> GB/s */
			}
		struct bw_row *b = bw_row(run, c->co[i].op, cls);
		if (b) {
			b->cell[r].calls = n;
			b->cell[r].gbps = quantile(g, n, 0.5);
		}
	}
	free(g);
	free(done);
}

static void run_compute(struct report_run *run)
{
	if (run->computed)
		return;
	run->computed = 1;
	run->first_step = RUN_FIRST_STEP;
	for (size_t r = 0; r < run->n; r++) {
		struct rank_col *c = &run->col[r];
		qsort(c->st, c->nst, sizeof *c->st, cmp_step);
		if (c->nst && c->st[c->nst - 1].step < RUN_FIRST_STEP)
			run->first_step = 1;
	}
	size_t most = 0;
	for (size_t r = 0; r < run->n; r++)
		most = run->col[r].nst > most ? run->col[r].nst : most;
	double *v = malloc((most ? most : 1) * sizeof *v), *w = malloc((most ? most : 1) * sizeof *w);
	if (!v || !w)
		goto out;
	for (size_t r = 0; r < run->n; r++) {
		struct rank_col *c = &run->col[r];
		size_t n = 0, ns = 0;
		double busy = 0, smax = 0;
		for (size_t i = 0; i < c->nst; i++) {
			c->all_ms += c->st[i].dur / 1e3;
			if (c->st[i].step < run->first_step)
				continue;
			v[n++] = c->st[i].dur / 1e3;
			busy += c->st[i].dur / 1e3;
			/* skew: this rank's end after the earliest rank's end */
			double mine = c->st[i].ts + c->st[i].dur, first = mine;
			int all = run->n > 1;
			for (size_t q = 0; q < run->n && all; q++) {
				double e = step_end(&run->col[q], c->st[i].step);
				if (isnan(e))
					all = 0;
				else if (e < first)
					first = e;
			}
			if (all) {
				w[ns++] = (mine - first) / 1e3;
				smax = (mine - first) / 1e3 > smax ? (mine - first) / 1e3 : smax;
			}
		}
		c->used = n;
		c->busy_ms = busy;
		c->med = quantile(v, n, 0.5);
		c->p90 = quantile(v, n, 0.9);
		c->sps = busy > 0 ? (double)n / (busy / 1e3) : NAN;
		c->skew_known = ns > 0;
		c->skew_med = quantile(w, ns, 0.5);
		c->skew_max = smax;
		size_t ne = 0;
		for (size_t i = 0; i < c->nss && ne < most; i++)
			if (c->ss[i].step >= run->first_step)
				v[ne++] = c->ss[i].comm - c->ss[i].hidden;
		c->exposed_known = ne > 0;
		c->exposed_med = quantile(v, ne, 0.5);
		compute_bandwidth(run, r);
	}
	qsort(run->bw, run->nbw, sizeof *run->bw, by_op_size);
out:
	free(v);
	free(w);
}

/* The job's verdict on its checks, one sentence into buf; 1 when it holds
 * (every rank exited and compared equal at the end), else 0. */
static int verdict(const struct report_run *run, char *buf, size_t cap)
{
	double checks = 0;
	for (size_t r = 0; r < run->n; r++)
		if (!strcmp(run->col[r].final, "differs")) {
			snprintf(buf, cap, "FAILED: rank %d's parameters or optimizer state differ from another rank's "
					   "at the end of training (its log names the range)",
				 run->col[r].rank);
			return 0;
		}
	for (size_t r = 0; r < run->n; r++) {
		const struct rank_col *c = &run->col[r];
		if (!c->exited) {
			snprintf(buf, cap, "FAILED: rank %d did not exit normally (a check stopped it, or it was "
					   "killed: its log says which), so not every check ran",
				 c->rank);
			return 0;
		}
		checks += c->checks;
	}
	for (size_t r = 0; r < run->n; r++) {
		const struct rank_col *c = &run->col[r];
		if (!c->have_sync) {
			snprintf(buf, cap, "not compared: rank %d wrote no sync.json (libddp off, or no CUDA program)",
				 c->rank);
			return 0;
		}
		if (strcmp(c->final, "equal") != 0) {
			snprintf(buf, cap, "not compared at the end: rank %d's final check %s", c->rank,
				 !strcmp(c->final, "-") ? "is not in its sync.json" : "did not run (no optimizer step?)");
			return 0;
		}
	}
	snprintf(buf, cap, "passed: parameters and optimizer state identical on all %zu ranks at every check "
			   "(%.0f compares in all, the last at the end of training)",
		 run->n, checks);
	return 1;
}

/* ---- human units */

static const char *fmt_ms(char *b, size_t cap, double ms)
{
	if (isnan(ms))
		snprintf(b, cap, "-");
	else if (ms < 1)
		snprintf(b, cap, "%.0f us", ms * 1e3);
	else if (ms < 1000)
		snprintf(b, cap, "%.2f ms", ms);
	else
		snprintf(b, cap, "%.2f s", ms / 1e3);
	return b;
}

static const char *fmt_bytes(char *b, size_t cap, double v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof unit / sizeof *unit) {
		v /= 1024;
		u++;
	}
	snprintf(b, cap, u ? "%.4g %s" : "%.0f %s", v, unit[u]);
	return b;
}

/* ---- text */

static void head(const struct report_run *run, const char *title)
{
	printf("\n%s\n%-44s", title, "");
	for (size_t r = 0; r < run->n; r++) {
		char h[32];
		snprintf(h, sizeof h, "rank %d", run->col[r].rank);
		printf(" %14s", h);
	}
}

enum row_kind { ROW_MS, ROW_COUNT, ROW_RATE, ROW_PCT };
enum run_field { F_USED, F_MED, F_P90, F_SPS, F_SKEW_MED, F_SKEW_MAX, F_EXPOSED, F_CHECK_MS };

static double field(const struct rank_col *c, enum run_field f)
{
	switch (f) {
	case F_USED: return (double)c->used;
	case F_MED: return c->med;
	case F_P90: return c->p90;
	case F_SPS: return c->sps;
	case F_SKEW_MED: return c->skew_known ? c->skew_med : NAN;
	case F_SKEW_MAX: return c->skew_known ? c->skew_max : NAN;
	case F_EXPOSED: return c->exposed_known ? c->exposed_med : NAN;
	default: return c->check_ms;
	}
}

static void row(const struct report_run *run, const char *label, enum row_kind k, enum run_field f)
{
	printf("\n%-44s", label);
	for (size_t r = 0; r < run->n; r++) {
		const struct rank_col *c = &run->col[r];
		double v = field(c, f);
		char b[32];
		if (isnan(v) || (k == ROW_PCT && !(c->all_ms > 0)))
			printf(" %14s", "-");
		else if (k == ROW_MS)
			printf(" %14s", fmt_ms(b, sizeof b, v));
		else if (k == ROW_COUNT)
			printf(" %14.0f", v);
		else if (k == ROW_RATE)
			printf(" %14.2f", v);
		else
			printf(" %13.1f%%", 100.0 * v / c->all_ms);
	}
}

void report_run_print(struct report_run *run)
{
	if (!run)
		return;
	run_compute(run);
	size_t any = 0;
	for (size_t r = 0; r < run->n; r++)
		any += run->col[r].nst;
	if (any) {
		char t[96];
		snprintf(t, sizeof t, "Steps (the traces' step events; figures over steps %d+)", run->first_step);
		head(run, t);
		row(run, "steps in the figures", ROW_COUNT, F_USED);
		row(run, "step time, median", ROW_MS, F_MED);
		row(run, "step time, p90", ROW_MS, F_P90);
		row(run, "steps/s", ROW_RATE, F_SPS);
		row(run, "skew: step ends after the first rank, median", ROW_MS, F_SKEW_MED);
		row(run, "skew: step ends after the first rank, max", ROW_MS, F_SKEW_MAX);
		row(run, "exposed communication per step, median", ROW_MS, F_EXPOSED);
		printf("\n");
	}
	if (run->nbw) {
		head(run, "Collective bandwidth (the traces' collectives; GB/s, median of the calls)");
		for (size_t i = 0; i < run->nbw; i++) {
			const struct bw_row *b = &run->bw[i];
			char lo[24], hi[24], label[80];
			fmt_bytes(lo, sizeof lo, b->cls ? ldexp(1.0, b->cls - 1) : 0);
			fmt_bytes(hi, sizeof hi, ldexp(1.0, b->cls));
			snprintf(label, sizeof label, "%s %s-%s", b->op, lo, hi);
			printf("\n%-44s", label);
			for (size_t r = 0; r < run->n; r++) {
				char cellb[64];
				if (b->cell[r].calls)
					snprintf(cellb, sizeof cellb, "%.3g (%zux)", b->cell[r].gbps, b->cell[r].calls);
				else
					snprintf(cellb, sizeof cellb, "-");
				printf(" %14s", cellb);
			}
		}
		printf("\n");
	}
	int synced = 0;
	for (size_t r = 0; r < run->n; r++)
		synced |= run->col[r].have_sync;
	if (synced) {
		head(run, "Checks (cross-rank compares of parameters and optimizer state)");
		printf("\n%-44s", "compares run");
		for (size_t r = 0; r < run->n; r++)
			printf(" %14.0f", run->col[r].checks);
		row(run, "time in checks", ROW_MS, F_CHECK_MS);
		row(run, "of the time of all steps", ROW_PCT, F_CHECK_MS);
		printf("\n%-44s", "final compare");
		for (size_t r = 0; r < run->n; r++)
			printf(" %14s", run->col[r].final);
		printf("\n");
	}
	char v[300];
	verdict(run, v, sizeof v);
	printf("\nverdict: %s\n", v);
}

/* ---- JSON and HTML */

static json_t *jreal(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

json_t *report_run_json(struct report_run *run)
{
	if (!run)
		return NULL;
	run_compute(run);
	json_t *o = json_object(), *ranks = json_array();
	char v[300];
	int ok = verdict(run, v, sizeof v);
	json_object_set_new(o, "first_step", json_integer(run->first_step));
	json_object_set_new(o, "verdict", json_string(v));
	json_object_set_new(o, "verdict_ok", json_boolean(ok));
	json_object_set_new(o, "ranks", ranks);
	for (size_t r = 0; r < run->n; r++) {
		const struct rank_col *c = &run->col[r];
		json_t *k = json_object(), *ps = json_array(), *bw = json_array();
		json_object_set_new(k, "rank", json_integer(c->rank));
		json_object_set_new(k, "exited", json_boolean(c->exited));
		json_object_set_new(k, "steps", json_integer((json_int_t)c->nst));
		json_object_set_new(k, "steps_in_figures", json_integer((json_int_t)c->used));
		json_object_set_new(k, "step_ms_median", jreal(c->med));
		json_object_set_new(k, "step_ms_p90", jreal(c->p90));
		json_object_set_new(k, "steps_per_s", jreal(c->sps));
		json_object_set_new(k, "skew_ms_median", c->skew_known ? jreal(c->skew_med) : json_null());
		json_object_set_new(k, "skew_ms_max", c->skew_known ? jreal(c->skew_max) : json_null());
		json_object_set_new(k, "exposed_comm_ms_median", c->exposed_known ? jreal(c->exposed_med) : json_null());
		json_object_set_new(k, "checks", json_integer((json_int_t)c->checks));
		json_object_set_new(k, "check_ms", jreal(c->check_ms));
		json_object_set_new(k, "final_check", json_string(c->final));
		for (size_t i = 0; i < c->nst; i++) {
			json_t *s = json_object();
			json_object_set_new(s, "step", json_integer((json_int_t)c->st[i].step));
			json_object_set_new(s, "ms", json_real(c->st[i].dur / 1e3));
			json_t *ex = json_null();
			for (size_t j = 0; j < c->nss; j++)
				if (c->ss[j].step == c->st[i].step) {
					json_decref(ex);
					ex = json_real(c->ss[j].comm - c->ss[j].hidden);
				}
			json_object_set_new(s, "exposed_comm_ms", ex);
			json_array_append_new(ps, s);
		}
		for (size_t i = 0; i < run->nbw; i++) {
			const struct bw_row *b = &run->bw[i];
			if (!b->cell[r].calls)
				continue;
			json_t *e = json_object();
			json_object_set_new(e, "op", json_string(b->op));
			json_object_set_new(e, "bytes_above", json_real(b->cls ? ldexp(1.0, b->cls - 1) : 0));
			json_object_set_new(e, "bytes_up_to", json_real(ldexp(1.0, b->cls)));
			json_object_set_new(e, "calls", json_integer((json_int_t)b->cell[r].calls));
			json_object_set_new(e, "gbps_median", jreal(b->cell[r].gbps));
			json_array_append_new(bw, e);
		}
		json_object_set_new(k, "per_step", ps);
		json_object_set_new(k, "bandwidth", bw);
		json_array_append_new(ranks, k);
	}
	return o;
}

/* The page's script: draws, from the embedded data, a table and one SVG
 * line chart per figure (a polyline and a circle per step, per rank).  No
 * network: everything is in the file. */
static const char page_script[] =
	"const D=JSON.parse(document.getElementById('ddprun-data').textContent);\n"
	"const C=['#1f77b4','#d62728','#2ca02c','#ff7f0e','#9467bd','#8c564b','#e377c2','#7f7f7f'];\n"
	"function fmt(v){return v===null||v===undefined?'-':(v<1?(v*1e3).toFixed(0)+' us':v<1000?v.toFixed(2)+' ms':(v/1e3).toFixed(2)+' s');}\n"
	"const T=document.getElementById('summary');\n"
	"const rows=[['steps','steps',x=>x],['step time, median','step_ms_median',fmt],['step time, p90','step_ms_p90',fmt],\n"
	" ['steps/s','steps_per_s',x=>x===null?'-':x.toFixed(2)],['skew, median','skew_ms_median',fmt],\n"
	" ['exposed communication per step, median','exposed_comm_ms_median',fmt],['compares','checks',x=>x],\n"
	" ['time in checks','check_ms',fmt],['final compare','final_check',x=>x]];\n"
	"let h='<tr><th></th>'+D.run.ranks.map(k=>'<th>rank '+k.rank+'</th>').join('')+'</tr>';\n"
	"for(const [l,key,f] of rows){h+='<tr><td>'+l+'</td>'+D.run.ranks.map(k=>'<td class=\"v\" data-key=\"'+key+'\">'+f(k[key])+'</td>').join('')+'</tr>';}\n"
	"T.innerHTML=h;\n"
	"function chart(id,key){const W=720,H=240,P=48,svg=document.getElementById(id);let pts=[];\n"
	" D.run.ranks.forEach((k,i)=>k.per_step.forEach(s=>{if(s[key]!==null)pts.push([i,s.step,s[key]]);}));\n"
	" if(!pts.length){svg.outerHTML='<p>no data</p>';return;}\n"
	" const x0=Math.min(...pts.map(p=>p[1])),x1=Math.max(...pts.map(p=>p[1])),y1=Math.max(...pts.map(p=>p[2]))||1;\n"
	" const X=s=>P+(x1>x0?(s-x0)/(x1-x0):0.5)*(W-2*P),Y=v=>H-P+(-v/y1)*(H-2*P);\n"
	" const ns='http://www.w3.org/2000/svg';svg.setAttribute('viewBox','0 0 '+W+' '+H);\n"
	" const el=(n,a)=>{const e=document.createElementNS(ns,n);for(const q in a)e.setAttribute(q,a[q]);svg.appendChild(e);return e;};\n"
	" el('line',{x1:P,y1:H-P,x2:W-P,y2:H-P,stroke:'#444'});el('line',{x1:P,y1:P,x2:P,y2:H-P,stroke:'#444'});\n"
	" el('text',{x:4,y:P-8,'font-size':11}).textContent=fmt(y1);el('text',{x:P,y:H-P+16,'font-size':11}).textContent='step '+x0;\n"
	" el('text',{x:W-P-40,y:H-P+16,'font-size':11}).textContent='step '+x1;\n"
	" D.run.ranks.forEach((k,i)=>{const q=pts.filter(p=>p[0]===i);const c=C[i%C.length];\n"
	"  el('polyline',{points:q.map(p=>X(p[1])+','+Y(p[2])).join(' '),fill:'none',stroke:c});\n"
	"  q.forEach(p=>el('circle',{class:'pt',cx:X(p[1]),cy:Y(p[2]),r:2.5,fill:c,'data-rank':k.rank,'data-step':p[1],'data-v':p[2]}));\n"
	"  el('text',{x:W-P+4,y:P+14*i,'font-size':11,fill:c}).textContent='rank '+k.rank;});}\n"
	"chart('chart-step','ms');chart('chart-comm','exposed_comm_ms');\n"
	"document.getElementById('verdict').textContent=D.run.verdict;\n"
	"document.body.setAttribute('data-rendered','1');\n";

int report_run_html(struct report_run *run, const char *path, const char *title)
{
	json_t *data = json_object(), *rj = report_run_json(run);
	char *text = NULL;
	FILE *f = NULL;
	int rc = -1;
	if (!data || !rj) {
		launch_msg("report: out of memory writing %s", path);
		goto out;
	}
	json_object_set_new(data, "title", json_string(title));
	json_object_set(data, "run", rj);
	if (!(text = json_dumps(data, JSON_COMPACT))) {
		launch_msg("report: out of memory writing %s", path);
		goto out;
	}
	if (!(f = fopen(path, "w"))) {
		launch_msg("report: cannot write %s: %s; give --html a path in a folder you can write", path,
			   strerror(errno));
		goto out;
	}
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ddprun report: ");
	for (const char *p = title; *p; p++) {
		if (*p == '<' || *p == '&')
			fputs(*p == '<' ? "&lt;" : "&amp;", f);
		else
			fputc(*p, f);
	}
	fprintf(f, "</title>\n<style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse}"
		   "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child{text-align:left}"
		   "svg{width:720px;height:240px;display:block;margin-bottom:1em}</style></head>\n<body>\n"
		   "<h1>ddprun report</h1>\n<p id=\"verdict\"></p>\n<table id=\"summary\"></table>\n"
		   "<h2>Step time per step</h2>\n<svg id=\"chart-step\"></svg>\n"
		   "<h2>Exposed communication per step</h2>\n<svg id=\"chart-comm\"></svg>\n"
		   "<script type=\"application/json\" id=\"ddprun-data\">");
	/* "</" would end the script element early */
	for (const char *p = text; *p; p++) {
		fputc(*p, f);
		if (p[0] == '<' && p[1] == '/')
			fputc('\\', f);
	}
	fprintf(f, "</script>\n<script>\n%s</script>\n</body></html>\n", page_script);
	rc = 0;
out:
	if (f && fclose(f) != 0 && !rc) {
		launch_msg("report: cannot write %s", path);
		rc = -1;
	}
	free(text);
	json_decref(rj);
	json_decref(data);
	return rc;
}
