/* SPDX-License-Identifier: MIT
 *
 * report.c - `ddprun report DIR`: merges what each rank's libddp wrote with
 * DDP_TRACE=DIR (or ddprun --trace DIR):
 *   DIR/rank<k>.summary.json -> one table on stdout, one column per rank
 *                               (calls per hooked function, kernels by launch
 *                               count, allocations, bytes copied, hook time)
 *   DIR/rank<k>.sync.json    -> gradient synchronisation per rank and per
 *                               step (reductions, bytes, time in collectives)
 *   DIR/rank<k>.trace.json   -> DIR/combined.trace.json, one timeline with
 *                               every rank's events (pid = rank), and the
 *                               threads of each rank by name
 *   (and, from rank<k>.sync.json's "per_step", the gradient communication
 *   per step over steps 3+: collectives, comm_ms, comm_hidden_ms,
 *   grad_wait_ms, with the hidden percentage, and where the backend gave
 *   it peer_wait_ms, the part of comm spent waiting for the other ranks,
 *   with the hidden percentage of the rest; one column per rank)
 * A rank killed before exit leaves no summary and a trace without the
 * "complete" mark (runtime/base/ddp_trace.c); such a trace is still read,
 * and so is one cut in the middle of an event (its whole events are kept):
 * the report says, per rank, what was cut.  A missing or empty directory,
 * and a summary that is not valid JSON, are one clear error line naming the
 * path; the exit status is then 1.
 *
 * Contract: a command of ddprun (single thread); allocates freely; reads the
 * files whole.  JSON is jansson's (Debian libjansson-dev); only the outer
 * punctuation of a trace is scanned here, to keep the whole events of a
 * trace cut short.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "ddp_array.h"
#include "launch.h"
#include "report_run.h"

/* Reads and parses path (jansson); on error prints one line and returns
 * NULL.  The caller json_decref's the result. */
static json_t *load_json(const char *path)
{
	json_error_t err;
	json_t *v;
	FILE *f = fopen(path, "rb");
	if (!f) {
		launch_msg("report: cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	v = json_loadf(f, JSON_DECODE_ANY, &err);
	fclose(f);
	if (!v)
		launch_msg("report: %s is not valid JSON (line %d, column %d: %s); was the run cut "
			   "short?",
			   path, err.line, err.column, err.text);
	return v;
}

/* The number at key of object o (integer or real); 0 when absent. */
static double jnum(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* The string at key of object o; NULL when absent or not a string. */
static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Reads path whole into *text (NUL-terminated) and *len; one line on error. */
static int read_all(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;
	*text = NULL;
	if (!f) {
		launch_msg("report: cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*text = malloc((size_t)(n < 0 ? 0 : n) + 1);
	if (n < 0 || !*text || fread(*text, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		launch_msg("report: cannot read %s", path);
		return -1;
	}
	fclose(f);
	(*text)[n] = '\0';
	*len = (size_t)n;
	return 0;
}

/* One trace event: decoded, and its text as the rank wrote it (copied into
 * the combined timeline unchanged). */
struct trace_event {
	json_t *v;
	const char *beg;
	size_t len;
};

/* A rank's trace, read as far as it is whole. */
struct trace_in {
	char *text;
	struct trace_event *ev; /* the whole events, in file order          */
	size_t n, cap;
	int complete;      /* libddp closed it ("otherData" complete)    */
	int cut_mid_event; /* not valid JSON: cut inside an event        */
	size_t cut_at;     /* byte where the whole part ends             */
};

/* Position of the next non-blank byte of [p, e). */
static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* Decodes the one JSON value starting at *p (jansson, any type, text after
 * it allowed) and moves *p past it; NULL (and *p unchanged) when the text
 * there is not a whole value. */
static json_t *take_value(const char **p, const char *e)
{
	json_error_t err;
	json_t *v = json_loadb(*p, (size_t)(e - *p), JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
	if (v)
		*p += err.position;
	return v;
}

/* Parses a trace; the traceEvents array item by item, so a file cut in the
 * middle keeps its whole events.  Only the outer object's punctuation is
 * scanned here; every key and value is jansson's.  -1 (one line) only when
 * nothing is usable. */
static int load_trace(const char *path, struct trace_in *t)
{
	size_t len;
	const char *p, *e;
	memset(t, 0, sizeof *t);
	if (read_all(path, &t->text, &len))
		return -1;
	p = skip_ws(t->text, t->text + len);
	e = t->text + len;
	if (p >= e || *p != '{') {
		launch_msg("report: %s is not a trace (it does not start with '{')", path);
		return -1;
	}
	p++;
	for (;;) {
		p = skip_ws(p, e);
		if (p < e && *p == '}')
			break;
		json_t *key = p < e && *p == '"' ? take_value(&p, e) : NULL;
		if (!json_is_string(key)) {
			json_decref(key);
			goto cut;
		}
		int is_events = !strcmp(json_string_value(key), "traceEvents");
		int is_other = !strcmp(json_string_value(key), "otherData");
		json_decref(key);
		p = skip_ws(p, e);
		if (p >= e || *p != ':')
			goto cut;
		p = skip_ws(p + 1, e);
		if (is_events && p < e && *p == '[') {
			p++;
			for (;;) {
				p = skip_ws(p, e);
				if (p < e && *p == ']') {
					p++;
					break;
				}
				struct trace_event *ev =
					ddp_array_grow(t->ev, &t->cap, t->n + 1, sizeof *ev, 256);
				if (!ev)
					goto cut;
				t->ev = ev;
				const char *at = p;
				json_t *v = take_value(&p, e);
				if (!v) {
					t->cut_mid_event = 1;
					goto cut;
				}
				t->ev[t->n++] = (struct trace_event){ v, at, (size_t)(p - at) };
				p = skip_ws(p, e);
				if (p < e && *p == ',') {
					p++;
					continue;
				}
				if (p < e && *p == ']') {
					p++;
					break;
				}
				goto cut;
			}
		} else {
			json_t *v = take_value(&p, e);
			if (!v)
				goto cut;
			const char *c = is_other ? jstr(v, "ddprun") : NULL;
			if (c && !strcmp(c, "complete"))
				t->complete = 1;
			json_decref(v);
		}
		p = skip_ws(p, e);
		if (p < e && *p == ',') {
			p++;
			continue;
		}
		if (p < e && *p == '}')
			break;
		goto cut;
	}
	t->cut_at = (size_t)(p - t->text);
	return 0;
cut:
	t->complete = 0;
	t->cut_mid_event = 1; /* not the JSON libddp writes: truncated or damaged */
	t->cut_at = (size_t)(p - t->text);
	if (!t->n) {
		launch_msg("report: %s holds no whole trace event (cut at byte %zu)", path, t->cut_at);
		return -1;
	}
	return 0;
}

static void trace_free(struct trace_in *t)
{
	for (size_t i = 0; i < t->n; i++)
		json_decref(t->ev[i].v);
	free(t->ev);
	free(t->text);
}

/* Cuts name to width from the right, keeping its start (the function name):
 * "void sgd_update<float>(float*, ..." */
static void print_name(const char *nm, int width)
{
	size_t len = strlen(nm);
	if (len > (size_t)width)
		printf("%.*s...", width - 3, nm);
	else
		printf("%-*s", width, nm);
}

/* ---- the merge */

#define MAX_RANKS 4096

struct row {
	char *name;
	double v[1]; /* per rank (allocated with nranks entries) */
};

struct table {
	size_t n, cap, nranks;
	struct row **rows;
	int oom; /* a row could not be added */
};

static double *cell(struct table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->rows[i]->name, name))
			return t->rows[i]->v;
	struct row **rows = ddp_array_grow(t->rows, &t->cap, t->n + 1, sizeof *rows, 32);
	struct row *r = NULL;
	if (rows) {
		t->rows = rows;
		r = calloc(1, sizeof *r + t->nranks * sizeof(double));
	}
	if (!r || !(r->name = strdup(name))) {
		/* out of memory: the value goes nowhere, the table says so */
		static double lost[MAX_RANKS];
		free(r);
		t->oom = 1;
		return lost;
	}
	t->rows[t->n++] = r;
	return r->v;
}

/* The table as {"row": [value per rank]} (new reference). */
static json_t *table_json(const struct table *t)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < t->n; i++) {
		json_t *a = json_array();
		for (size_t r = 0; r < t->nranks; r++)
			json_array_append_new(a, isnan(t->rows[i]->v[r]) ? json_null() : json_real(t->rows[i]->v[r]));
		json_object_set_new(o, t->rows[i]->name, a);
	}
	return o;
}

static double total(const struct row *r, size_t nranks)
{
	double s = 0;
	for (size_t i = 0; i < nranks; i++)
		s += r->v[i];
	return s;
}

static size_t g_nranks;
static int by_total(const void *a, const void *b)
{
	double x = total(*(struct row *const *)a, g_nranks), y = total(*(struct row *const *)b, g_nranks);
	return x < y ? 1 : x > y ? -1 : 0;
}

static void print_table(const char *title, struct table *t, const int *ranks, size_t nranks, size_t limit,
			int sort)
{
	if (t->oom)
		launch_msg("report: out of memory; the table \"%s\" is incomplete", title);
	if (!t->n)
		return;
	g_nranks = nranks;
	if (sort)
		qsort(t->rows, t->n, sizeof *t->rows, by_total);
	printf("\n%s\n%-44s", title, "");
	for (size_t r = 0; r < nranks; r++) {
		char h[32];
		snprintf(h, sizeof h, "rank %d", ranks[r]);
		printf(" %14s", h);
	}
	printf("\n");
	for (size_t i = 0; i < t->n && i < limit; i++) {
		print_name(t->rows[i]->name, 44);
		for (size_t r = 0; r < nranks; r++) {
			double v = t->rows[i]->v[r];
			if (v != v)
				printf(" %14s", "-");
			else if (v != (double)(long long)v && v < 1e6)
				printf(" %14.3f", v);
			else
				printf(" %14.0f", v);
		}
		printf("\n");
	}
	if (t->n > limit)
		printf("(%zu more)\n", t->n - limit);
}

static void free_table(struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->rows[i]->name);
		free(t->rows[i]);
	}
	free(t->rows);
}

/* Steps 1 and 2 learn (step 1: broadcasts and calibration; step 2: the
 * first early reductions); the figures are over the steps after them. */
#define COMM_FIRST_STEP 3

struct comm_col {
	int present;
	double steps, colls, comm, hidden, wait, peer, peer_hidden;
	int peer_known; /* every step 3+ had peer_wait_ms */
	char overlap[16];
};

/* Reads DIR/rank<k>.sync.json when it exists: 0 (absent or read), -1 (an
 * unreadable or malformed file: one line printed). */
static int read_comm(const char *dir, int rank, struct comm_col *col)
{
	char path[4096];
	json_t *v;
	memset(col, 0, sizeof *col);
	snprintf(path, sizeof path, "%s/rank%d.sync.json", dir, rank);
	FILE *probe = fopen(path, "r");
	if (!probe)
		return 0;
	fclose(probe);
	if (!(v = load_json(path)))
		return -1;
	const json_t *ps = json_object_get(v, "per_step");
	const char *ov = jstr(v, "overlap");
	if (ps && !json_is_array(ps)) {
		launch_msg("report: %s: \"per_step\" is not an array", path);
		json_decref(v);
		return -1;
	}
	col->present = 1;
	col->peer_known = 1;
	snprintf(col->overlap, sizeof col->overlap, "%s", ov ? ov : "-");
	for (size_t i = 0; i < json_array_size(ps); i++) {
		const json_t *e = json_array_get(ps, i);
		if (jnum(e, "step") < COMM_FIRST_STEP)
			continue;
		col->steps++;
		col->colls += jnum(e, "collectives");
		col->comm += jnum(e, "comm_ms");
		col->hidden += jnum(e, "comm_hidden_ms");
		col->wait += jnum(e, "grad_wait_ms");
		if (json_object_get(e, "peer_wait_ms")) {
			col->peer += jnum(e, "peer_wait_ms");
			col->peer_hidden += jnum(e, "peer_wait_hidden_ms");
		} else {
			col->peer_known = 0;
		}
	}
	if (!col->steps)
		col->peer_known = 0;
	json_decref(v);
	return 0;
}

static void print_comm(const struct comm_col *col, const int *ranks, size_t nranks)
{
	size_t any = 0;
	for (size_t r = 0; r < nranks; r++)
		any += (size_t)col[r].present;
	if (!any)
		return;
	printf("\nGradient communication, per step over steps %d+ (rank<k>.sync.json)\n%-44s",
	       COMM_FIRST_STEP, "");
	for (size_t r = 0; r < nranks; r++) {
		char h[32];
		snprintf(h, sizeof h, "rank %d", ranks[r]);
		printf(" %14s", h);
	}
	static const char *const rows[] = { "overlap",
					    "steps",
					    "collectives",
					    "comm ms (collectives running)",
					    "comm hidden ms (producer still busy)",
					    "hidden %",
					    "grad wait ms (consumer waiting)",
					    "of comm: ms waiting for other ranks",
					    "hidden % after all ranks arrived" };
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		printf("\n%-44s", rows[i]);
		for (size_t r = 0; r < nranks; r++) {
			const struct comm_col *c = &col[r];
			double n = c->steps > 0 ? c->steps : 1;
			if (!c->present) {
				printf(" %14s", "-");
				continue;
			}
			switch (i) {
			case 0: printf(" %14s", c->overlap); break;
			case 1: printf(" %14.0f", c->steps); break;
			case 2: printf(" %14.1f", c->colls / n); break;
			case 3: printf(" %14.3f", c->comm / n); break;
			case 4: printf(" %14.3f", c->hidden / n); break;
			case 5:
				if (c->comm > 0)
					printf(" %13.1f%%", 100.0 * c->hidden / c->comm);
				else
					printf(" %14s", "-");
				break;
			case 6: printf(" %14.3f", c->wait / n); break;
			case 7:
				if (c->peer_known)
					printf(" %14.3f", c->peer / n);
				else
					printf(" %14s", "-");
				break;
			default:
				if (c->peer_known && c->comm > c->peer)
					printf(" %13.1f%%",
					       100.0 * (c->hidden - c->peer_hidden) / (c->comm - c->peer));
				else
					printf(" %14s", "-");
				break;
			}
		}
	}
	printf("\n");
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int have_rank(const int *ranks, size_t n, int k)
{
	for (size_t i = 0; i < n; i++)
		if (ranks[i] == k)
			return 1;
	return 0;
}

/* Marks every cell of ranks without a file as absent ("-"). */
static void mark_absent(struct table *t, const unsigned char *have)
{
	for (size_t i = 0; i < t->n; i++)
		for (size_t r = 0; r < t->nranks; r++)
			if (!have[r])
				t->rows[i]->v[r] = NAN;
}

/* Per-thread event counts and names of one rank's trace. */
struct thread_row {
	long long tid;
	char *name;
	size_t events;
};

static void print_threads(int rank, const struct trace_in *t)
{
	struct thread_row *th = NULL;
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const json_t *e = t->ev[i].v, *tid = json_object_get(e, "tid");
		const char *ph = jstr(e, "ph"), *nm = jstr(e, "name");
		if (!json_is_number(tid) || !ph)
			continue;
		long long id = (long long)json_number_value(tid);
		size_t k = 0;
		while (k < n && th[k].tid != id)
			k++;
		if (k == n) {
			struct thread_row *t2 = realloc(th, (n + 1) * sizeof *th);
			if (!t2)
				break;
			th = t2;
			th[n++] = (struct thread_row){ id, NULL, 0 };
		}
		if (!strcmp(ph, "M") && nm && !strcmp(nm, "thread_name")) {
			const char *a = jstr(json_object_get(e, "args"), "name");
			if (a) {
				free(th[k].name);
				th[k].name = strdup(a);
			}
		} else if (!strcmp(ph, "X")) {
			th[k].events++;
		}
	}
	printf("rank %d:", rank);
	int shown = 0;
	for (size_t k = 0; k < n; k++) {
		if (!th[k].events)
			continue;
		printf("%s %s (tid %lld, %zu events)", shown++ ? "," : "", th[k].name ? th[k].name : "?",
		       th[k].tid, th[k].events);
	}
	printf("%s\n", shown ? "" : " no events");
	for (size_t k = 0; k < n; k++)
		free(th[k].name);
	free(th);
}

/* Start and end (µs) of the complete events of a trace; 0 when none. */
static int trace_span(const struct trace_in *t, double *t0, double *t1)
{
	int any = 0;
	for (size_t i = 0; i < t->n; i++) {
		const json_t *ts = json_object_get(t->ev[i].v, "ts");
		if (!json_is_number(ts))
			continue;
		double b = json_number_value(ts), e = b + jnum(t->ev[i].v, "dur");
		if (!any || b < *t0)
			*t0 = b;
		if (!any || e > *t1)
			*t1 = e;
		any = 1;
	}
	return any;
}

int launch_report_main(int argc, char **argv)
{
	const char *dir = NULL, *html = NULL;
	int as_json = 0;
	int ranks[MAX_RANKS];
	size_t nranks = 0;
	int rc = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: ddprun report [--json] [--html FILE] DIR\n"
			       "  merges DIR/rank<k>.summary.json and rank<k>.sync.json into tables (stdout)\n"
			       "  and DIR/rank<k>.trace.json into DIR/combined.trace.json (Perfetto);\n"
			       "  traces of ranks that were killed are read as far as they go; with\n"
			       "  rank<k>.sync.json, the gradient communication per step (steps 3+);\n"
			       "  from the traces' step events: step time (median, p90), steps/s, skew\n"
			       "  between ranks, exposed communication per step, GB/s per collective\n"
			       "  size, and the checks' cost and verdict\n"
			       "  --json       the same as one JSON object on stdout (no tables)\n"
			       "  --html FILE  also a self-contained page (no network) with step time and\n"
			       "               exposed communication per step per rank as charts\n");
			return 0;
		}
		if (!strcmp(argv[i], "--json")) {
			as_json = 1;
			continue;
		}
		if (!strcmp(argv[i], "--html")) {
			if (i + 1 >= argc) {
				launch_msg("report: --html needs a file name; usage: ddprun report [--json] [--html FILE] DIR");
				return 2;
			}
			html = argv[++i];
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			launch_msg("report: unknown option %s; usage: ddprun report [--json] [--html FILE] DIR", argv[i]);
			return 2;
		}
		if (dir) {
			launch_msg("report: one directory only; usage: ddprun report DIR");
			return 2;
		}
		dir = argv[i];
	}
	if (!dir) {
		launch_msg("report: no directory given; usage: ddprun report DIR");
		return 2;
	}
	DIR *d = opendir(dir);
	if (!d) {
		launch_msg("report: cannot open %s: %s", dir, strerror(errno));
		return 1;
	}
	for (struct dirent *e; (e = readdir(d));) {
		static const char *const kinds[] = { "summary", "trace", "sync" };
		for (size_t i = 0; i < 3; i++) {
			char fmt[48];
			int k = -1, len = 0;
			snprintf(fmt, sizeof fmt, "rank%%d.%s.json%%n", kinds[i]);
			if (sscanf(e->d_name, fmt, &k, &len) == 1 && len && e->d_name[len] == '\0' &&
			    k >= 0 && nranks < MAX_RANKS && !have_rank(ranks, nranks, k))
				ranks[nranks++] = k;
		}
	}
	closedir(d);
	if (!nranks) {
		launch_msg("report: %s holds no rank<k>.summary.json or rank<k>.trace.json; run the job "
			   "with --trace %s (or DDP_TRACE=%s)",
			   dir, dir, dir);
		return 1;
	}
	qsort(ranks, nranks, sizeof *ranks, cmp_int);

	struct table hooks = { .nranks = nranks }, kernels = { .nranks = nranks }, mem = { .nranks = nranks },
		     sync = { .nranks = nranks };
	unsigned char *have_sum = calloc(nranks, 1), *have_sync = calloc(nranks, 1);
	struct report_run *run = report_run_new(ranks, nranks);
	json_t *jout = as_json ? json_object() : NULL;
	size_t nsum = 0, nsync = 0;
	char path[4096];
	if (!have_sum || !have_sync)
		goto out;
	for (size_t r = 0; r < nranks; r++) {
		json_t *v;
		snprintf(path, sizeof path, "%s/rank%d.summary.json", dir, ranks[r]);
		if (access(path, F_OK) != 0)
			continue; /* a rank that did not exit normally */
		if (!(v = load_json(path)))
			goto out;
		const json_t *h = json_object_get(v, "hooks"), *k = json_object_get(v, "kernels"),
			     *a = json_object_get(v, "alloc"), *c = json_object_get(v, "copies");
		if (!json_is_array(h) || !json_is_array(k) || !a || !c) {
			launch_msg("report: %s is not a libddp summary (no hooks/kernels/alloc/copies)", path);
			json_decref(v);
			goto out;
		}
		have_sum[r] = 1;
		nsum++;
		report_run_exited(run, r);
		for (size_t i = 0; i < json_array_size(h); i++) {
			const char *nm = jstr(json_array_get(h, i), "name");
			if (nm)
				cell(&hooks, nm)[r] = jnum(json_array_get(h, i), "calls");
		}
		for (size_t i = 0; i < json_array_size(k); i++) {
			const char *nm = jstr(json_array_get(k, i), "name");
			if (nm)
				cell(&kernels, nm)[r] = jnum(json_array_get(k, i), "launches");
		}
		cell(&mem, "allocations made")[r] = jnum(a, "count");
		cell(&mem, "bytes allocated")[r] = jnum(a, "bytes");
		cell(&mem, "peak bytes allocated")[r] = jnum(a, "peak");
		cell(&mem, "allocations live at exit")[r] = jnum(a, "live");
		const char *dir_name;
		const json_t *dv;
		json_object_foreach((json_t *)c, dir_name, dv) {
			snprintf(path, sizeof path, "bytes copied %s", dir_name);
			cell(&mem, path)[r] = jnum(dv, "bytes");
		}
		cell(&mem, "time in hooked calls (us, estimated)")[r] = jnum(v, "hook_time_ns") / 1000.0;
		json_decref(v);
	}
	/* gradient synchronisation: totals and per step */
	for (size_t r = 0; r < nranks; r++) {
		static const struct {
			const char *key, *row;
		} rows[] = {
			{ "steps", "optimizer steps" },
			{ "reductions", "gradient reductions" },
			{ "allreduce_calls", "allreduce calls" },
			{ "allreduce_bytes", "allreduce bytes" },
			{ "allreduce_ms", "allreduce ms" },
			{ "broadcast_calls", "parameter broadcasts" },
			{ "broadcast_bytes", "broadcast bytes" },
			{ "broadcast_ms", "broadcast ms" },
			{ "signature_checks", "signature checks" },
			{ "hash_checks", "cross-rank compares (checks, final)" },
			{ "bytes_reduced_per_step", "per step: bytes reduced" },
			{ "coll_ms_per_step", "per step: ms in collectives" },
		};
		json_t *v;
		snprintf(path, sizeof path, "%s/rank%d.sync.json", dir, ranks[r]);
		if (access(path, F_OK) != 0)
			continue;
		if (!(v = load_json(path)))
			goto out;
		have_sync[r] = 1;
		nsync++;
		report_run_sync(run, r, v);
		for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
			cell(&sync, rows[i].row)[r] = jnum(v, rows[i].key);
		const json_t *b = json_object_get(v, "buffers");
		double grads = 0, gbytes = 0;
		for (size_t i = 0; i < json_array_size(b); i++) {
			const char *role = jstr(json_array_get(b, i), "role");
			if (role && !strcmp(role, "gradient")) {
				grads++;
				gbytes += jnum(json_array_get(b, i), "bytes");
			}
		}
		cell(&sync, "gradient buffers")[r] = grads;
		cell(&sync, "gradient bytes")[r] = gbytes;
		json_decref(v);
	}
	mark_absent(&hooks, have_sum);
	mark_absent(&kernels, have_sum);
	mark_absent(&mem, have_sum);
	mark_absent(&sync, have_sync);
	struct comm_col *comm = calloc(nranks, sizeof *comm);
	if (!comm)
		goto out;
	for (size_t r = 0; r < nranks; r++)
		if (read_comm(dir, ranks[r], &comm[r])) {
			free(comm);
			goto out;
		}
	if (jout) {
		json_t *tabs = json_object(), *jr = json_array();
		for (size_t r = 0; r < nranks; r++)
			json_array_append_new(jr, json_integer(ranks[r]));
		json_object_set_new(jout, "dir", json_string(dir));
		json_object_set_new(jout, "ranks", jr);
		json_object_set_new(tabs, "calls", table_json(&hooks));
		json_object_set_new(tabs, "kernels", table_json(&kernels));
		json_object_set_new(tabs, "memory", table_json(&mem));
		json_object_set_new(tabs, "sync", table_json(&sync));
		json_object_set_new(jout, "tables", tabs);
	} else {
		printf("ddprun report: %s, %zu rank(s)\n", dir, nranks);
		for (size_t r = 0; r < nranks; r++)
			if (!have_sum[r])
				printf("rank %d has no summary: it did not exit normally (killed, or stopped "
				       "with the job); its columns show '-'\n",
				       ranks[r]);
		print_table("Calls per hooked function", &hooks, ranks, nranks, 200, 1);
		print_table("Kernels by launch count", &kernels, ranks, nranks, 20, 1);
		print_table("Memory and copies", &mem, ranks, nranks, 100, 0);
		print_table("Gradient synchronisation (rank<k>.sync.json)", &sync, ranks, nranks, 100, 0);
		print_comm(comm, ranks, nranks);
	}
	free(comm);

	/* the combined timeline; traces of killed ranks are read as far as
	 * they go */
	snprintf(path, sizeof path, "%s/combined.trace.json", dir);
	FILE *out = fopen(path, "w");
	if (!out) {
		launch_msg("report: cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	size_t events = 0, traces = 0, cut = 0;
	int printed_threads = 0;
	for (size_t r = 0; r < nranks; r++) {
		char tpath[4096];
		struct trace_in t;
		snprintf(tpath, sizeof tpath, "%s/rank%d.trace.json", dir, ranks[r]);
		if (access(tpath, F_OK) != 0)
			continue; /* a rank without a trace (summary only) */
		if (load_trace(tpath, &t)) {
			trace_free(&t);
			continue;
		}
		for (size_t i = 0; i < t.n; i++)
			report_run_event(run, r, t.ev[i].v);
		if (!jout && !printed_threads++)
			printf("\nThreads (from the traces)\n");
		if (!jout)
			print_threads(ranks[r], &t);
		cut += !t.complete;
		if (!t.complete && !jout) {
			double t0 = 0, t1 = 0;
			int span = trace_span(&t, &t0, &t1);
			printf("  rank %d's trace was cut: %s; it holds %zu events%s", ranks[r],
			       t.cut_mid_event ? "it ends in the middle of an event (kept: the whole ones before)"
					       : "the rank stopped before closing it (killed?)",
			       t.n, span ? " over " : "");
			if (span)
				printf("%.3f s", (t1 - t0) / 1e6);
			if (t.cut_mid_event)
				printf("; the rest of the file (from byte %zu) is not read\n", t.cut_at);
			else
				printf("; what it did after its last flush (at most 1 s) is lost\n");
		}
		for (size_t i = 0; i < t.n; i++, events++)
			fprintf(out, "%s\n%.*s", events ? "," : "", (int)t.ev[i].len, t.ev[i].beg);
		traces++;
		trace_free(&t);
	}
	fprintf(out, "\n]}\n");
	if (fclose(out) != 0) {
		launch_msg("report: cannot write %s", path);
		goto out;
	}
	if (!nsum && !traces) {
		launch_msg("report: %s holds neither a usable summary nor a usable trace", dir);
		goto out;
	}
	if (jout) {
		json_t *rj = report_run_json(run);
		char *text;
		json_object_set_new(jout, "run", rj ? rj : json_null());
		json_object_set_new(jout, "timeline", json_string(path));
		if (!(text = json_dumps(jout, JSON_INDENT(1)))) {
			launch_msg("report: out of memory");
			goto out;
		}
		puts(text);
		free(text);
	} else {
		report_run_print(run);
		printf("\ntimeline: %s (%zu events from %zu rank trace(s)%s; open it in ui.perfetto.dev)\n", path,
		       events, traces, cut ? ", some cut" : "");
	}
	if (html) {
		if (report_run_html(run, html, dir))
			goto out;
		if (!jout)
			printf("page: %s (step time and exposed communication per step per rank)\n", html);
	}
	rc = 0;
out:
	report_run_free(run);
	json_decref(jout);
	free(have_sum);
	free(have_sync);
	free_table(&hooks);
	free_table(&kernels);
	free_table(&mem);
	free_table(&sync);
	return rc;
}
