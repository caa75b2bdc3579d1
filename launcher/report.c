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
 * files whole.  Contains a small strict JSON reader (the files are ours).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "launch.h"

/* ---- a small JSON reader: values keep their text span */
enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct jv {
	enum jt t;
	double num;
	char *str;              /* J_STR: decoded; J_OBJ member key in keys[] */
	size_t n;               /* items of J_ARR / J_OBJ */
	struct jv *items;
	char **keys;
	const char *beg, *end;  /* raw text of the value */
};
struct jp {
	const char *s, *p, *e;
	const char *err;
};

static void jfree(struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jfree(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
}

static void ws(struct jp *j)
{
	while (j->p < j->e && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static int jparse(struct jp *j, struct jv *v, int depth);

static int jstring(struct jp *j, char **out)
{
	size_t cap = 16, n = 0;
	char *s = malloc(cap);
	if (!s || *j->p != '"')
		return free(s), j->err = "expected a string", -1;
	j->p++;
	while (j->p < j->e && *j->p != '"') {
		char c = *j->p++;
		if ((unsigned char)c < 0x20)
			return free(s), j->err = "control character in a string", -1;
		if (c == '\\') {
			if (j->p >= j->e)
				break;
			c = *j->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u':
				if (j->e - j->p < 4)
					return free(s), j->err = "bad \\u escape", -1;
				c = (char)strtol((char[5]){ j->p[0], j->p[1], j->p[2], j->p[3], 0 }, NULL, 16);
				j->p += 4;
				break;
			case '"': case '\\': case '/': break;
			default: return free(s), j->err = "bad escape", -1;
			}
		}
		if (n + 2 > cap) {
			char *t = realloc(s, cap *= 2);
			if (!t)
				return free(s), j->err = "out of memory", -1;
			s = t;
		}
		s[n++] = c;
	}
	if (j->p >= j->e)
		return free(s), j->err = "unterminated string", -1;
	j->p++;
	s[n] = '\0';
	*out = s;
	return 0;
}

static int jpush(struct jv *v, size_t *cap, int keyed)
{
	if (v->n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 8;
	struct jv *it = realloc(v->items, *cap * sizeof *it);
	if (!it)
		return -1;
	v->items = it;
	if (keyed) {
		char **k = realloc(v->keys, *cap * sizeof *k);
		if (!k)
			return -1;
		v->keys = k;
	}
	return 0;
}

static int jparse(struct jp *j, struct jv *v, int depth)
{
	memset(v, 0, sizeof *v);
	ws(j);
	v->beg = j->p;
	if (depth > 64)
		return j->err = "nested too deep", -1;
	if (j->p >= j->e)
		return j->err = "unexpected end of file", -1;
	char c = *j->p;
	if (c == '{' || c == '[') {
		int obj = c == '{';
		size_t cap = 0;
		v->t = obj ? J_OBJ : J_ARR;
		j->p++;
		ws(j);
		if (j->p < j->e && *j->p == (obj ? '}' : ']')) {
			j->p++;
			v->end = j->p;
			return 0;
		}
		for (;;) {
			char *key = NULL;
			ws(j);
			if (obj) {
				if (jstring(j, &key))
					return -1;
				ws(j);
				if (j->p >= j->e || *j->p != ':')
					return free(key), j->err = "expected ':'", -1;
				j->p++;
			}
			if (jpush(v, &cap, obj))
				return free(key), j->err = "out of memory", -1;
			if (obj)
				v->keys[v->n] = key;
			if (jparse(j, &v->items[v->n], depth + 1)) {
				v->n++;
				return -1;
			}
			v->n++;
			ws(j);
			if (j->p < j->e && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->e && *j->p == (obj ? '}' : ']')) {
				j->p++;
				break;
			}
			return j->err = obj ? "expected ',' or '}'" : "expected ',' or ']'", -1;
		}
	} else if (c == '"') {
		v->t = J_STR;
		if (jstring(j, &v->str))
			return -1;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		char *end;
		v->t = J_NUM;
		v->num = strtod(j->p, &end);
		if (end == j->p || end > j->e)
			return j->err = "bad number", -1;
		j->p = end;
	} else if (j->e - j->p >= 4 && !strncmp(j->p, "true", 4)) {
		v->t = J_BOOL, v->num = 1, j->p += 4;
	} else if (j->e - j->p >= 5 && !strncmp(j->p, "false", 5)) {
		v->t = J_BOOL, j->p += 5;
	} else if (j->e - j->p >= 4 && !strncmp(j->p, "null", 4)) {
		v->t = J_NULL, j->p += 4;
	} else {
		return j->err = "unexpected character", -1;
	}
	v->end = j->p;
	return 0;
}

static const struct jv *jget(const struct jv *o, const char *key)
{
	if (!o || o->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return &o->items[i];
	return NULL;
}

static double jnum(const struct jv *o, const char *key)
{
	const struct jv *v = jget(o, key);
	return v && v->t == J_NUM ? v->num : 0;
}

/* Reads and parses path; on error prints one line and returns -1. */
static int load_json(const char *path, char **text, struct jv *v)
{
	FILE *f = fopen(path, "rb");
	long n;
	if (!f) {
		launch_msg("report: cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*text = malloc((size_t)n + 1);
	if (!*text || fread(*text, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		launch_msg("report: cannot read %s", path);
		return -1;
	}
	fclose(f);
	(*text)[n] = '\0';
	struct jp j = { *text, *text, *text + n, NULL };
	if (jparse(&j, v, 0) == 0) {
		ws(&j);
		if (j.p != j.e)
			j.err = "text after the JSON value";
	}
	if (j.err) {
		launch_msg("report: %s is not valid JSON (byte %ld: %s); was the run cut short?", path,
			   (long)(j.p - j.s), j.err);
		jfree(v);
		return -1;
	}
	return 0;
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

/* A rank's trace, read as far as it is whole. */
struct trace_in {
	char *text;
	struct jv events;       /* J_ARR of the whole events                  */
	int complete;           /* libddp closed it ("otherData" complete)    */
	int cut_mid_event;      /* not valid JSON: cut inside an event        */
	size_t cut_at;          /* byte where the whole part ends             */
};

/* Parses a trace; the traceEvents array item by item, so a file cut in the
 * middle keeps its whole events.  -1 (one line) only when nothing is usable. */
static int load_trace(const char *path, struct trace_in *t)
{
	size_t len, cap = 0;
	memset(t, 0, sizeof *t);
	t->events.t = J_ARR;
	if (read_all(path, &t->text, &len))
		return -1;
	struct jp j = { t->text, t->text, t->text + len, NULL };
	ws(&j);
	if (j.p >= j.e || *j.p != '{') {
		launch_msg("report: %s is not a trace (it does not start with '{')", path);
		return -1;
	}
	j.p++;
	for (;;) {
		char *key = NULL;
		ws(&j);
		if (j.p < j.e && *j.p == '}')
			break;
		if (jstring(&j, &key))
			goto cut;
		ws(&j);
		if (j.p >= j.e || *j.p != ':') {
			free(key);
			goto cut;
		}
		j.p++;
		ws(&j);
		if (!strcmp(key, "traceEvents") && j.p < j.e && *j.p == '[') {
			free(key);
			j.p++;
			for (;;) {
				ws(&j);
				if (j.p < j.e && *j.p == ']') {
					j.p++;
					break;
				}
				if (jpush(&t->events, &cap, 0))
					goto cut;
				const char *at = j.p;
				if (jparse(&j, &t->events.items[t->events.n], 0)) {
					jfree(&t->events.items[t->events.n]);
					j.p = at;
					t->cut_mid_event = 1;
					goto cut;
				}
				t->events.n++;
				ws(&j);
				if (j.p < j.e && *j.p == ',') {
					j.p++;
					continue;
				}
				if (j.p < j.e && *j.p == ']') {
					j.p++;
					break;
				}
				goto cut;
			}
		} else {
			struct jv v;
			int is_other = !strcmp(key, "otherData");
			free(key);
			if (jparse(&j, &v, 0)) {
				jfree(&v);
				goto cut;
			}
			const struct jv *c = is_other ? jget(&v, "ddprun") : NULL;
			if (c && c->t == J_STR && !strcmp(c->str, "complete"))
				t->complete = 1;
			jfree(&v);
		}
		ws(&j);
		if (j.p < j.e && *j.p == ',') {
			j.p++;
			continue;
		}
		if (j.p < j.e && *j.p == '}')
			break;
		goto cut;
	}
	t->cut_at = (size_t)(j.p - j.s);
	return 0;
cut:
	t->complete = 0;
	t->cut_mid_event = 1; /* not the JSON libddp writes: truncated or damaged */
	t->cut_at = (size_t)(j.p - j.s);
	if (!t->events.n) {
		launch_msg("report: %s holds no whole trace event (cut at byte %zu)", path, t->cut_at);
		return -1;
	}
	return 0;
}

static void trace_free(struct trace_in *t)
{
	jfree(&t->events);
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
	double v[1];  /* per rank (allocated with nranks entries) */
};

struct table {
	size_t n, cap, nranks;
	struct row **rows;
};

static double *cell(struct table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->rows[i]->name, name))
			return t->rows[i]->v;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 32;
		t->rows = realloc(t->rows, t->cap * sizeof *t->rows);
	}
	struct row *r = calloc(1, sizeof *r + t->nranks * sizeof(double));
	r->name = strdup(name);
	t->rows[t->n++] = r;
	return r->v;
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

static void print_table(const char *title, struct table *t, const int *ranks, size_t nranks,
			size_t limit, int sort)
{
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
	int peer_known;          /* every step 3+ had peer_wait_ms */
	char overlap[16];
};

/* Reads DIR/rank<k>.sync.json when it exists: 0 (absent or read), -1 (an
 * unreadable or malformed file: one line printed). */
static int read_comm(const char *dir, int rank, struct comm_col *col)
{
	char path[4096], *text = NULL;
	struct jv v;
	memset(col, 0, sizeof *col);
	snprintf(path, sizeof path, "%s/rank%d.sync.json", dir, rank);
	FILE *probe = fopen(path, "r");
	if (!probe)
		return 0;
	fclose(probe);
	if (load_json(path, &text, &v)) {
		free(text);
		return -1;
	}
	const struct jv *ps = jget(&v, "per_step"), *ov = jget(&v, "overlap");
	if (ps && ps->t != J_ARR) {
		launch_msg("report: %s: \"per_step\" is not an array", path);
		jfree(&v);
		free(text);
		return -1;
	}
	col->present = 1;
	col->peer_known = 1;
	snprintf(col->overlap, sizeof col->overlap, "%s", ov && ov->t == J_STR ? ov->str : "-");
	for (size_t i = 0; ps && i < ps->n; i++) {
		const struct jv *e = &ps->items[i];
		if (jnum(e, "step") < COMM_FIRST_STEP)
			continue;
		col->steps++;
		col->colls += jnum(e, "collectives");
		col->comm += jnum(e, "comm_ms");
		col->hidden += jnum(e, "comm_hidden_ms");
		col->wait += jnum(e, "grad_wait_ms");
		if (jget(e, "peer_wait_ms")) {
			col->peer += jnum(e, "peer_wait_ms");
			col->peer_hidden += jnum(e, "peer_wait_hidden_ms");
		} else {
			col->peer_known = 0;
		}
	}
	if (!col->steps)
		col->peer_known = 0;
	jfree(&v);
	free(text);
	return 0;
}

static void print_comm(const struct comm_col *col, const int *ranks, size_t nranks)
{
	size_t any = 0;
	for (size_t r = 0; r < nranks; r++)
		any += (size_t)col[r].present;
	if (!any)
		return;
	printf("\nGradient communication, per step over steps %d+ (rank<k>.sync.json)\n%-44s", COMM_FIRST_STEP, "");
	for (size_t r = 0; r < nranks; r++) {
		char h[32];
		snprintf(h, sizeof h, "rank %d", ranks[r]);
		printf(" %14s", h);
	}
	static const char *const rows[] = { "overlap", "steps", "collectives", "comm ms (collectives running)",
					    "comm hidden ms (producer still busy)", "hidden %",
					    "grad wait ms (consumer waiting)", "of comm: ms waiting for other ranks",
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
					printf(" %13.1f%%", 100.0 * (c->hidden - c->peer_hidden) / (c->comm - c->peer));
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

static void print_threads(int rank, const struct jv *ev)
{
	struct thread_row *th = NULL;
	size_t n = 0;
	for (size_t i = 0; i < ev->n; i++) {
		const struct jv *e = &ev->items[i], *tid = jget(e, "tid"), *ph = jget(e, "ph"),
				*nm = jget(e, "name");
		if (!tid || tid->t != J_NUM || !ph || ph->t != J_STR)
			continue;
		size_t k = 0;
		while (k < n && th[k].tid != (long long)tid->num)
			k++;
		if (k == n) {
			struct thread_row *t2 = realloc(th, (n + 1) * sizeof *th);
			if (!t2)
				break;
			th = t2;
			th[n++] = (struct thread_row){ (long long)tid->num, NULL, 0 };
		}
		if (!strcmp(ph->str, "M") && nm && nm->t == J_STR && !strcmp(nm->str, "thread_name")) {
			const struct jv *a = jget(jget(e, "args"), "name");
			if (a && a->t == J_STR) {
				free(th[k].name);
				th[k].name = strdup(a->str);
			}
		} else if (!strcmp(ph->str, "X")) {
			th[k].events++;
		}
	}
	printf("rank %d:", rank);
	int shown = 0;
	for (size_t k = 0; k < n; k++) {
		if (!th[k].events)
			continue;
		printf("%s %s (tid %lld, %zu events)", shown++ ? "," : "",
		       th[k].name ? th[k].name : "?", th[k].tid, th[k].events);
	}
	printf("%s\n", shown ? "" : " no events");
	for (size_t k = 0; k < n; k++)
		free(th[k].name);
	free(th);
}

/* Start and end (µs) of the complete events of a trace; 0 when none. */
static int trace_span(const struct jv *ev, double *t0, double *t1)
{
	int any = 0;
	for (size_t i = 0; i < ev->n; i++) {
		const struct jv *ts = jget(&ev->items[i], "ts"), *dur = jget(&ev->items[i], "dur");
		if (!ts || ts->t != J_NUM)
			continue;
		double e = ts->num + (dur && dur->t == J_NUM ? dur->num : 0);
		if (!any || ts->num < *t0)
			*t0 = ts->num;
		if (!any || e > *t1)
			*t1 = e;
		any = 1;
	}
	return any;
}

int launch_report_main(int argc, char **argv)
{
	const char *dir = NULL;
	int ranks[MAX_RANKS];
	size_t nranks = 0;
	int rc = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: ddprun report DIR\n"
			       "  merges DIR/rank<k>.summary.json and rank<k>.sync.json into tables (stdout)\n"
			       "  and DIR/rank<k>.trace.json into DIR/combined.trace.json (Perfetto);\n"
			       "  traces of ranks that were killed are read as far as they go; with\n"
			       "  rank<k>.sync.json, the gradient communication per step (steps 3+)\n");
			return 0;
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
			   "with --trace %s (or DDP_TRACE=%s)", dir, dir, dir);
		return 1;
	}
	qsort(ranks, nranks, sizeof *ranks, cmp_int);

	struct table hooks = { .nranks = nranks }, kernels = { .nranks = nranks },
		     mem = { .nranks = nranks }, sync = { .nranks = nranks };
	unsigned char *have_sum = calloc(nranks, 1), *have_sync = calloc(nranks, 1);
	size_t nsum = 0, nsync = 0;
	char path[4096];
	if (!have_sum || !have_sync)
		goto out;
	for (size_t r = 0; r < nranks; r++) {
		char *text = NULL;
		struct jv v;
		snprintf(path, sizeof path, "%s/rank%d.summary.json", dir, ranks[r]);
		if (access(path, F_OK) != 0)
			continue; /* a rank that did not exit normally */
		if (load_json(path, &text, &v)) {
			free(text);
			goto out;
		}
		const struct jv *h = jget(&v, "hooks"), *k = jget(&v, "kernels"), *a = jget(&v, "alloc"),
				*c = jget(&v, "copies");
		if (!h || h->t != J_ARR || !k || k->t != J_ARR || !a || !c) {
			launch_msg("report: %s is not a libddp summary (no hooks/kernels/alloc/copies)", path);
			jfree(&v);
			free(text);
			goto out;
		}
		have_sum[r] = 1;
		nsum++;
		for (size_t i = 0; i < h->n; i++) {
			const struct jv *nm = jget(&h->items[i], "name");
			if (nm && nm->t == J_STR)
				cell(&hooks, nm->str)[r] = jnum(&h->items[i], "calls");
		}
		for (size_t i = 0; i < k->n; i++) {
			const struct jv *nm = jget(&k->items[i], "name");
			if (nm && nm->t == J_STR)
				cell(&kernels, nm->str)[r] = jnum(&k->items[i], "launches");
		}
		cell(&mem, "allocations made")[r] = jnum(a, "count");
		cell(&mem, "bytes allocated")[r] = jnum(a, "bytes");
		cell(&mem, "peak bytes allocated")[r] = jnum(a, "peak");
		cell(&mem, "allocations live at exit")[r] = jnum(a, "live");
		for (size_t i = 0; c->t == J_OBJ && i < c->n; i++) {
			snprintf(path, sizeof path, "bytes copied %s", c->keys[i]);
			cell(&mem, path)[r] = jnum(&c->items[i], "bytes");
		}
		cell(&mem, "time in hooked calls (us, estimated)")[r] = jnum(&v, "hook_time_ns") / 1000.0;
		jfree(&v);
		free(text);
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
			{ "hash_checks", "--check comparisons" },
			{ "bytes_reduced_per_step", "per step: bytes reduced" },
			{ "coll_ms_per_step", "per step: ms in collectives" },
		};
		char *text = NULL;
		struct jv v;
		snprintf(path, sizeof path, "%s/rank%d.sync.json", dir, ranks[r]);
		if (access(path, F_OK) != 0)
			continue;
		if (load_json(path, &text, &v)) {
			free(text);
			goto out;
		}
		have_sync[r] = 1;
		nsync++;
		for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
			cell(&sync, rows[i].row)[r] = jnum(&v, rows[i].key);
		const struct jv *b = jget(&v, "buffers");
		double grads = 0, gbytes = 0;
		for (size_t i = 0; b && b->t == J_ARR && i < b->n; i++) {
			const struct jv *role = jget(&b->items[i], "role");
			if (role && role->t == J_STR && !strcmp(role->str, "gradient")) {
				grads++;
				gbytes += jnum(&b->items[i], "bytes");
			}
		}
		cell(&sync, "gradient buffers")[r] = grads;
		cell(&sync, "gradient bytes")[r] = gbytes;
		jfree(&v);
		free(text);
	}
	mark_absent(&hooks, have_sum);
	mark_absent(&kernels, have_sum);
	mark_absent(&mem, have_sum);
	mark_absent(&sync, have_sync);
	printf("ddprun report: %s, %zu rank(s)\n", dir, nranks);
	for (size_t r = 0; r < nranks; r++)
		if (!have_sum[r])
			printf("rank %d has no summary: it did not exit normally (killed, or stopped "
			       "with the job); its columns show '-'\n", ranks[r]);
	print_table("Calls per hooked function", &hooks, ranks, nranks, 200, 1);
	print_table("Kernels by launch count", &kernels, ranks, nranks, 20, 1);
	print_table("Memory and copies", &mem, ranks, nranks, 100, 0);
	print_table("Gradient synchronisation (rank<k>.sync.json)", &sync, ranks, nranks, 100, 0);
	struct comm_col *comm = calloc(nranks, sizeof *comm);
	if (!comm)
		goto out;
	for (size_t r = 0; r < nranks; r++)
		if (read_comm(dir, ranks[r], &comm[r])) {
			free(comm);
			goto out;
		}
	print_comm(comm, ranks, nranks);
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
		if (!printed_threads++)
			printf("\nThreads (from the traces)\n");
		print_threads(ranks[r], &t.events);
		if (!t.complete) {
			double t0 = 0, t1 = 0;
			int span = trace_span(&t.events, &t0, &t1);
			cut++;
			printf("  rank %d's trace was cut: %s; it holds %zu events%s",
			       ranks[r],
			       t.cut_mid_event ? "it ends in the middle of an event (kept: the whole ones before)"
					       : "the rank stopped before closing it (killed?)",
			       t.events.n, span ? " over " : "");
			if (span)
				printf("%.3f s", (t1 - t0) / 1e6);
			if (t.cut_mid_event)
				printf("; the rest of the file (from byte %zu) is not read\n", t.cut_at);
			else
				printf("; what it did after its last flush (at most 1 s) is lost\n");
		}
		for (size_t i = 0; i < t.events.n; i++, events++)
			fprintf(out, "%s\n%.*s", events ? "," : "",
				(int)(t.events.items[i].end - t.events.items[i].beg), t.events.items[i].beg);
		traces++;
		trace_free(&t);
	}
	fprintf(out, "\n]}\n");
	if (fclose(out) != 0) {
		launch_msg("report: cannot write %s", path);
		goto out;
	}
	printf("\ntimeline: %s (%zu events from %zu rank trace(s)%s; open it in ui.perfetto.dev)\n",
	       path, events, traces, cut ? ", some cut" : "");
	if (!nsum && !traces) {
		launch_msg("report: %s holds neither a usable summary nor a usable trace", dir);
		goto out;
	}
	rc = 0;
out:
	free(have_sum);
	free(have_sync);
	free_table(&hooks);
	free_table(&kernels);
	free_table(&mem);
	free_table(&sync);
	return rc;
}
