/* SPDX-License-Identifier: MIT
 *
 * options.c - ddprun's command line and DDPRUN_* environment, from options.def.
 *
 * Order: defaults (the table's text, parsed like any value), then DDPRUN_*
 * variables, then the command line; the last one wins, except that a
 * repeatable option (LIST) given on the command line replaces the
 * environment's list instead of adding to it.  Options stop at the first
 * word that is not an option, or after `--`: the rest is the program and its
 * arguments, passed untouched.  Long options take `--name value` or
 * `--name=value`; torchrun's underscores (--nproc_per_node) are accepted.
 * Short options cluster (-vv, -n4).
 *
 * Contract: main thread, once, before anything starts.  Every problem is one
 * line `ddprun: ...` on stderr; the caller exits 2.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "launch.h"
#include "ddp_shard.h"

struct opt_desc {
	const char *lng;
	char shrt;
	const char *env;
	enum launch_opt_type type;
	const char *def;
	const char *meta;
	long lo, hi;
	const char *help;
	size_t offset; /* of the field in struct launch_opts */
};

static const struct opt_desc opt_table[LOPT_COUNT_] = {
#define LAUNCH_OPT(field, lng, shrt, env, type, def, meta, lo, hi, help) \
	[LOPT_ID_##field] = { lng,  shrt, env, LOPT_##type, def, \
			      meta, lo,   hi,  help,        offsetof(struct launch_opts, field) },
#include "options.def"
#undef LAUNCH_OPT
};

/* Programs that link options.c alone (the command-line fuzzer) write
 * directly; ddprun uses output.c's, which never blocks. */
__attribute__((weak)) void launch_term_write(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* One write of "ddprun: <message>\n" to stderr, never cut: a long message
 * (a long path before the reason) gets a buffer of its size. */
void launch_msg(const char *fmt, ...)
{
	char small[2048], *buf = small;
	size_t cap = sizeof small;
	va_list ap;

	va_start(ap, fmt);
	int m = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	if ((size_t)m + 10 > cap) {
		char *big = malloc((size_t)m + 10);
		if (big) {
			buf = big;
			cap = (size_t)m + 10;
		}
	}
	int n = snprintf(buf, cap, "ddprun: ");
	va_start(ap, fmt);
	vsnprintf(buf + n, cap - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n += (size_t)m < cap - (size_t)n - 1 ? m : (int)(cap - (size_t)n - 2);
	buf[n++] = '\n';
	launch_term_write(2, buf, (size_t)n);
	if (buf != small)
		free(buf);
}

/* The variable being read when it is not the option's DDPRUN_<NAME> (a
 * torchrun PET_<NAME>), for messages; NULL otherwise. */
static const char *env_reading;

/* What a value came from, for messages: "--name 'v'" or "ENV='v'". */
static void bad_value(const struct opt_desc *d, int from_env, const char *v, const char *what)
{
	if (from_env)
		launch_msg("%s='%s' %s", env_reading ? env_reading : d->env, v, what);
	else
		launch_msg("--%s '%s' %s", d->lng, v, what);
}

static ddp_result parse_long(const char *v, long lo, long hi, long *out, int *range_err)
{
	char *end;
	*range_err = 0;
	if (!*v || !(v[0] >= '0' && v[0] <= '9'))
		return DDP_ERR_INVALID;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (*end)
		return DDP_ERR_INVALID;
	if (errno == ERANGE || x < lo || x > hi) {
		*range_err = 1;
		return DDP_ERR_INVALID;
	}
	*out = x;
	return DDP_OK;
}

static ddp_result parse_bool(const char *v, int *out)
{
	static const char *const yes[] = { "1", "on", "true", "yes" };
	static const char *const no[] = { "0", "off", "false", "no" };
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = 1;
			return DDP_OK;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = 0;
			return DDP_OK;
		}
	}
	return DDP_ERR_INVALID;
}

static ddp_result list_add(struct launch_list *l, const char *v)
{
	const char **nv = realloc(l->v, sizeof *nv * (size_t)(l->n + 2));
	if (!nv) {
		launch_msg("out of memory");
		return DDP_ERR_NOMEM;
	}
	nv[l->n++] = v;
	nv[l->n] = NULL;
	l->v = nv;
	return DDP_OK;
}

/* Stores value v (text) into option id.  from: 0 default, 1 env, 2 argv. */
static ddp_result set_value(struct launch_opts *o, int id, const char *v, int from)
{
	const struct opt_desc *d = &opt_table[id];
	char *field = (char *)o + d->offset;
	int from_env = (from == 1);
	int range_err;

	switch (d->type) {
	case LOPT_INT: {
		long x;
		if (id == LOPT_ID_nproc_per_node &&
		    (!strcmp(v, "auto") || !strcmp(v, "gpu") || !strcmp(v, "cpu"))) {
			/* torchrun's words: counted by main.c before the checks */
			*(long *)field = !strcmp(v, "auto")  ? LAUNCH_NPROC_AUTO
					 : !strcmp(v, "gpu") ? LAUNCH_NPROC_GPU
							     : LAUNCH_NPROC_CPU;
			break;
		}
		if (id == LOPT_ID_nnodes && strchr(v, ':')) {
			/* torchrun's MIN:MAX; ddprun runs fixed-size jobs only */
			char a[32];
			const char *colon = strchr(v, ':');
			long lo2, hi2;
			if ((size_t)(colon - v) < sizeof a) {
				memcpy(a, v, (size_t)(colon - v));
				a[colon - v] = '\0';
				if (parse_long(a, d->lo, d->hi, &lo2, &range_err) == DDP_OK &&
				    parse_long(colon + 1, d->lo, d->hi, &hi2, &range_err) == DDP_OK) {
					if (lo2 == hi2) {
						*(long *)field = lo2;
						break;
					}
					bad_value(d, from_env, v,
						  "is an elastic range; ddprun runs a fixed number "
						  "of nodes: give one number (N or N:N)");
					return DDP_ERR_INVALID;
				}
			}
			bad_value(d, from_env, v, "is not a node count like 2 or 2:2");
			return DDP_ERR_INVALID;
		}
		if (parse_long(v, d->lo, d->hi, &x, &range_err) != DDP_OK) {
			char what[96];
			long y = strtol(v, NULL, 10);
			if (range_err && !(d->lo == 1 && y < 1))
				snprintf(what, sizeof what, "is out of range (%ld..%ld)", d->lo, d->hi);
			else
				snprintf(what, sizeof what, "is not a %s integer",
					 d->lo >= 1 ? "positive" : "non-negative");
			bad_value(d, from_env, v, what);
			return DDP_ERR_INVALID;
		}
		*(long *)field = x;
		break;
	}
	case LOPT_STR:
		if (!*v) {
			bad_value(d, from_env, v, "is empty; give a value");
			return DDP_ERR_INVALID;
		}
		*(const char **)field = v;
		break;
	case LOPT_ENUM: {
		const char *p = d->meta;
		for (int i = 0; *p; i++) {
			size_t n = strcspn(p, "|");
			if (strlen(v) == n && strncmp(v, p, n) == 0) {
				*(int *)field = i;
				goto done;
			}
			p += n + (p[n] == '|');
		}
		char what[128];
		snprintf(what, sizeof what, "is not one of %s", d->meta);
		for (char *q = what; *q; q++)
			if (*q == '|')
				*q = ',';
		bad_value(d, from_env, v, what);
		return DDP_ERR_INVALID;
	}
	case LOPT_FLAG:
		if (id == LOPT_ID_tee && v[0] >= '0' && v[0] <= '3' && !v[1]) {
			/* torchrun's --tee 0..3 (stdout 1, stderr 2, both 3): ddprun
			 * writes both streams to one log per rank */
			*(int *)field = v[0] != '0';
			break;
		}
		if (id == LOPT_ID_tee && v[0] >= '0' && v[0] <= '9' && strspn(v, "0123456789") == strlen(v)) {
			/* a number, but not torchrun's 0..3 */
			bad_value(d, from_env, v,
				  "is out of range: torchrun's --tee takes 0..3 (0: off; 1, 2, "
				  "3: log files and terminal)");
			return DDP_ERR_INVALID;
		}
		if (id == LOPT_ID_tee && strchr(v, ':')) {
			bad_value(d, from_env, v,
				  "is a per-rank mapping; ddprun tees every rank alike: use "
				  "--tee 3 and --ranks-filter LIST for what the terminal shows");
			return DDP_ERR_INVALID;
		}
		if (parse_bool(v, (int *)field) != DDP_OK) {
			bad_value(d, from_env, v, "is not a boolean; use 1/0, yes/no, true/false, on/off");
			return DDP_ERR_INVALID;
		}
		break;
	case LOPT_COUNT: {
		long x;
		if (parse_long(v, d->lo, d->hi, &x, &range_err) != DDP_OK) {
			char what[96];
			snprintf(what, sizeof what, "is not a number in %ld..%ld", d->lo, d->hi);
			bad_value(d, from_env, v, what);
			return DDP_ERR_INVALID;
		}
		*(int *)field = (int)x;
		break;
	}
	case LOPT_LIST: {
		struct launch_list *l = (struct launch_list *)field;
		if (!*v) {
			bad_value(d, from_env, v, "is empty; give a value");
			return DDP_ERR_INVALID;
		}
		if (from_env) {
			/* newline-separated; the strings are leaked on purpose
			 * (they live as long as ddprun) */
			char *copy = strdup(v);
			if (!copy)
				return DDP_ERR_NOMEM;
			for (char *save = NULL, *t = strtok_r(copy, "\n", &save); t;
			     t = strtok_r(NULL, "\n", &save))
				DDP_CHECK(list_add(l, t));
		} else {
			DDP_CHECK(list_add(l, v));
		}
		break;
	}
	case LOPT_ACTION: *(int *)field = 1; break;
	}
done:
	if (from > o->set[id])
		o->set[id] = (unsigned char)from;
	return DDP_OK;
}

static int find_long(const char *name, size_t len)
{
	char norm[64];
	if (len >= sizeof norm)
		return -1;
	for (size_t i = 0; i < len; i++)
		norm[i] = name[i] == '_' ? '-' : name[i];
	norm[len] = '\0';
	for (int i = 0; i < LOPT_COUNT_; i++)
		if (strcmp(opt_table[i].lng, norm) == 0)
			return i;
	return -1;
}

static int find_short(char c)
{
	for (int i = 0; i < LOPT_COUNT_; i++)
		if (opt_table[i].shrt && opt_table[i].shrt == c)
			return i;
	return -1;
}

static int takes_value(int id)
{
	enum launch_opt_type t = opt_table[id].type;
	return t == LOPT_INT || t == LOPT_STR || t == LOPT_ENUM || t == LOPT_LIST;
}

/* A no-value option seen on the command line. */
static ddp_result set_novalue(struct launch_opts *o, int id)
{
	const struct opt_desc *d = &opt_table[id];
	if (d->type == LOPT_COUNT) {
		int *f = (int *)((char *)o + d->offset);
		if (o->set[id] < 2)
			*f = 0; /* the command line replaces DDPRUN_VERBOSE */
		if (*f < d->hi)
			(*f)++;
		o->set[id] = 2;
		return DDP_OK;
	}
	return set_value(o, id, "1", 2);
}

/* The PET_<NAME> form of option id into pet (cap >= 80). */
static void pet_name(int id, char *pet, size_t cap)
{
	size_t k = 4;
	memcpy(pet, "PET_", 4);
	for (const char *c = opt_table[id].lng; *c && k < cap - 1; c++)
		pet[k++] = *c == '-' ? '_' : (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
	pet[k] = '\0';
}

extern char **environ;

/* A PET_<NAME> variable that names no option of ddprun: torchrun would use
 * it, ddprun cannot; said (never silently ignored). */
static void warn_unknown_pet(void)
{
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "PET_", 4) != 0)
			continue;
		size_t len = strcspn(*e, "=");
		int known = 0;
		for (int id = 0; id < LOPT_COUNT_ && !known; id++) {
			char pet[80];
			if (opt_table[id].type == LOPT_ACTION)
				continue;
			pet_name(id, pet, sizeof pet);
			known = strlen(pet) == len && strncmp(*e, pet, len) == 0;
		}
		if (!known)
			launch_msg("warning: %.*s is a torchrun setting ddprun has no option for; it is "
				   "ignored (see ddprun --help)",
				   (int)len, *e);
	}
}

ddp_result launch_options_parse(int argc, char **argv, struct launch_opts *o, int *action)
{
	ddp_result rc = DDP_OK;
	int cmdline_list[LOPT_COUNT_] = { 0 };
	int i;

	memset(o, 0, sizeof *o);
	*action = -1;
	for (int id = 0; id < LOPT_COUNT_; id++)
		if (opt_table[id].def && opt_table[id].type != LOPT_ACTION)
			DDP_CHECK(set_value(o, id, opt_table[id].def, 0));
	/* torchrun's PET_<OPTION> variables, then DDPRUN_* (which win) */
	for (int id = 0; id < LOPT_COUNT_; id++) {
		char pet[80];
		if (opt_table[id].type == LOPT_ACTION)
			continue;
		pet_name(id, pet, sizeof pet);
		const char *v = getenv(pet);
		if (!v || !*v || getenv(opt_table[id].env))
			continue;
		env_reading = pet;
		if (set_value(o, id, v, 1) != DDP_OK)
			rc = DDP_ERR_INVALID;
		env_reading = NULL;
	}
	warn_unknown_pet();
	for (int id = 0; id < LOPT_COUNT_; id++) {
		const char *v = getenv(opt_table[id].env);
		if (!v || !*v || opt_table[id].type == LOPT_ACTION)
			continue;
		if (set_value(o, id, v, 1) != DDP_OK)
			rc = DDP_ERR_INVALID;
	}

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			int id = find_long(name, len);
			if (id < 0) {
				launch_msg("unknown option '%.*s'; see ddprun --help", (int)(len + 2), a);
				rc = DDP_ERR_INVALID;
				continue;
			}
			if (id == LOPT_ID_tee) {
				/* torchrun's --tee N (or --tee=N); plain --tee is a flag */
				const char *tv = eq ? eq + 1 : NULL;
				if (!tv && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9' &&
				    (strspn(argv[i + 1], "0123456789:,") == strlen(argv[i + 1])))
					tv = argv[++i];
				if (set_value(o, id, tv ? tv : "1", 2) != DDP_OK)
					rc = DDP_ERR_INVALID;
				continue;
			}
			if (!takes_value(id)) {
				if (eq) {
					launch_msg("--%s takes no value", opt_table[id].lng);
					rc = DDP_ERR_INVALID;
					continue;
				}
				if (set_novalue(o, id) != DDP_OK)
					rc = DDP_ERR_INVALID;
				continue;
			}
			const char *v = eq ? eq + 1 : NULL;
			if (!v) {
				if (i + 1 >= argc) {
					launch_msg("--%s needs a value (%s)", opt_table[id].lng,
						   opt_table[id].meta);
					rc = DDP_ERR_INVALID;
					continue;
				}
				v = argv[++i];
			}
			if (opt_table[id].type == LOPT_LIST && !cmdline_list[id]++) {
				struct launch_list *l =
					(struct launch_list *)((char *)o + opt_table[id].offset);
				l->n = 0;
			}
			if (set_value(o, id, v, 2) != DDP_OK)
				rc = DDP_ERR_INVALID;
			continue;
		}
		/* short options, possibly clustered */
		for (const char *p = a + 1; *p; p++) {
			int id = find_short(*p);
			if (id < 0) {
				launch_msg("unknown option '-%c'; see ddprun --help", *p);
				rc = DDP_ERR_INVALID;
				break;
			}
			if (id == LOPT_ID_tee) {
				/* torchrun's -t N (-t3, -t 3); plain -t is the flag */
				const char *tv = p[1] ? p + 1 : NULL;
				if (!tv && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9' &&
				    (strspn(argv[i + 1], "0123456789:,") == strlen(argv[i + 1])))
					tv = argv[++i];
				if (set_value(o, id, tv ? tv : "1", 2) != DDP_OK)
					rc = DDP_ERR_INVALID;
				break;
			}
			if (!takes_value(id)) {
				if (set_novalue(o, id) != DDP_OK)
					rc = DDP_ERR_INVALID;
				continue;
			}
			const char *v = p[1] ? p + 1 : NULL;
			if (!v) {
				if (i + 1 >= argc) {
					launch_msg("-%c needs a value (%s)", *p, opt_table[id].meta);
					rc = DDP_ERR_INVALID;
					break;
				}
				v = argv[++i];
			}
			if (set_value(o, id, v, 2) != DDP_OK)
				rc = DDP_ERR_INVALID;
			break;
		}
	}
	if (o->help)
		*action = LOPT_ID_help;
	else if (o->version)
		*action = LOPT_ID_version;
	if (*action >= 0)
		return DDP_OK;
	if (rc != DDP_OK)
		return rc;
	if (i >= argc) {
		launch_msg("no program to run; usage: ddprun [options] [--] PROGRAM [ARGS...] "
			   "(see ddprun --help)");
		return DDP_ERR_INVALID;
	}
	o->prog_argv = argv + i;
	return DDP_OK;
}

/* torchrun's --rdzv-conf KEY=VALUE,...: join_timeout (or timeout) is
 * --rdzv-timeout unless that was given; any other key is refused. */
static ddp_result resolve_rdzv_conf(struct launch_opts *o)
{
	char buf[512];
	if (strlen(o->rdzv_conf) >= sizeof buf) {
		launch_msg("--rdzv-conf '%s' is too long", o->rdzv_conf);
		return DDP_ERR_INVALID;
	}
	strcpy(buf, o->rdzv_conf);
	for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		long sec;
		int range_err;
		if (eq)
			*eq = '\0';
		if (!eq || (strcmp(kv, "join_timeout") != 0 && strcmp(kv, "timeout") != 0)) {
			launch_msg("--rdzv-conf '%s': ddprun knows only join_timeout=SEC (the same as "
				   "--rdzv-timeout SEC); drop '%s'",
				   o->rdzv_conf, kv);
			return DDP_ERR_INVALID;
		}
		if (parse_long(eq + 1, 1, 604800, &sec, &range_err) != DDP_OK) {
			launch_msg("--rdzv-conf '%s': %s='%s' is not a number of seconds (1..604800)",
				   o->rdzv_conf, kv, eq + 1);
			return DDP_ERR_INVALID;
		}
		if (o->set[LOPT_ID_rdzv_timeout] < 2)
			o->rdzv_timeout = sec;
	}
	return DDP_OK;
}

ddp_result launch_options_resolve(struct launch_opts *o)
{
	if (o->rdzv_conf)
		DDP_CHECK(resolve_rdzv_conf(o));
	if (o->rdzv_endpoint) {
		/* HOST[:PORT]; [v6addr]:PORT */
		static char host[256];
		const char *e = o->rdzv_endpoint, *colon;
		size_t hl;
		if (e[0] == '[') {
			const char *rb = strchr(e, ']');
			if (!rb)
				goto bad;
			hl = (size_t)(rb - e - 1);
			e++;
			colon = rb[1] == ':' ? rb + 1 : NULL;
			if (rb[1] && !colon)
				goto bad;
		} else {
			colon = strrchr(e, ':');
			hl = colon ? (size_t)(colon - e) : strlen(e);
		}
		if (hl == 0 || hl >= sizeof host)
			goto bad;
		memcpy(host, e, hl);
		host[hl] = '\0';
		if (!o->set[LOPT_ID_master_addr])
			o->master_addr = host;
		if (colon && !o->set[LOPT_ID_master_port]) {
			long p;
			int range_err;
			if (parse_long(colon + 1, 1, 65535, &p, &range_err) != DDP_OK)
				goto bad;
			o->master_port = p;
		}
	}
	return DDP_OK;
bad:
	launch_msg("--rdzv-endpoint '%s' is not HOST or HOST:PORT", o->rdzv_endpoint);
	return DDP_ERR_INVALID;
}

ddp_result launch_parse_rank_list(const char *what, const char *s, int n, unsigned char *out)
{
	const char *p = s;

	memset(out, 0, (size_t)n);
	if (!*s)
		goto bad;
	while (*p) {
		char *end;
		if (*p < '0' || *p > '9')
			goto bad;
		long a = strtol(p, &end, 10), b = a;
		p = end;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				goto bad;
			b = strtol(p, &end, 10);
			p = end;
			if (b < a)
				goto bad;
		}
		if (*p == ',') {
			p++;
			if (!*p)
				goto bad;
		} else if (*p) {
			goto bad;
		}
		if (b >= n) {
			launch_msg("%s '%s' names rank %ld but the job has %d rank%s", what, s, b, n,
				   n == 1 ? "" : "s");
			return DDP_ERR_INVALID;
		}
		for (long r = a; r <= b; r++)
			out[r] = 1;
	}
	return DDP_OK;
bad:
	launch_msg("%s '%s' is not a list of ranks like 0 or 0,2-3", what, s);
	return DDP_ERR_INVALID;
}

ddp_result launch_options_validate(const struct launch_opts *o)
{
	ddp_result rc = DDP_OK;
	/* -n auto/gpu/cpu are counted by main.c before it calls this */
	long nproc = o->nproc_per_node > 0 ? o->nproc_per_node : 1;
	long world = nproc * o->nnodes;

	if (o->node_rank >= o->nnodes) {
		launch_msg("--node-rank %ld is not below --nnodes %ld", o->node_rank, o->nnodes);
		rc = DDP_ERR_INVALID;
	}
	if (world > 65536) {
		launch_msg("%ld ranks in all is too many (at most 65536)", world);
		return DDP_ERR_INVALID;
	}
	if (o->nnodes > 1) {
		if (!o->master_addr) {
			launch_msg("--nnodes %ld needs --master-addr HOST (the address of node 0)", o->nnodes);
			rc = DDP_ERR_INVALID;
		}
		if (o->master_port == 0) {
			launch_msg("--nnodes %ld needs --master-port P (not 0: every node must know it)",
				   o->nnodes);
			rc = DDP_ERR_INVALID;
		}
	}
	if (o->standalone && o->nnodes > 1) {
		launch_msg("--standalone runs one node, but --nnodes is %ld; drop one of them", o->nnodes);
		rc = DDP_ERR_INVALID;
	}
	if (o->rdzv_backend && strcasecmp(o->rdzv_backend, "static") != 0 &&
	    strcasecmp(o->rdzv_backend, "c10d") != 0) {
		launch_msg("--rdzv-backend %s is not supported: ddprun meets its ranks in its own store; "
			   "drop it, or give node 0's address with --rdzv-endpoint HOST:PORT (or "
			   "--master-addr/--master-port)",
			   o->rdzv_backend);
		rc = DDP_ERR_INVALID;
	}
	if (o->module && o->no_python) {
		launch_msg("--module runs python3 -m PROGRAM and --no-python runs PROGRAM itself; drop one");
		rc = DDP_ERR_INVALID;
	}
	if (o->redirects && strcmp(o->redirects, "0") != 0) {
		if (strcmp(o->redirects, "3") != 0) {
			launch_msg("--redirects %s: ddprun redirects stdout and stderr of every rank together: "
				   "use -r 3 (or --quiet), with --ranks-filter for what the terminal shows",
				   o->redirects);
			rc = DDP_ERR_INVALID;
		} else if (!o->log_dir) {
			launch_msg("--redirects 3 needs --log-dir DIR (where the output goes)");
			rc = DDP_ERR_INVALID;
		}
	}
	if (o->local_ranks_filter) {
		unsigned char *bits = malloc((size_t)nproc);
		if (!bits)
			return DDP_ERR_NOMEM;
		if (launch_parse_rank_list("--local-ranks-filter", o->local_ranks_filter, (int)nproc, bits) !=
		    DDP_OK)
			rc = DDP_ERR_INVALID;
		free(bits);
	}
	if (o->tee && !o->log_dir) {
		launch_msg("--tee needs --log-dir DIR (where the log files go)");
		rc = DDP_ERR_INVALID;
	}
	if (o->ranks_filter) {
		unsigned char *bits = malloc((size_t)world);
		if (!bits)
			return DDP_ERR_NOMEM;
		if (launch_parse_rank_list("--ranks-filter", o->ranks_filter, (int)world, bits) != DDP_OK)
			rc = DDP_ERR_INVALID;
		free(bits);
	}
	if (o->signals_to_handle) {
		sigset_t set;
		if (launch_parse_signals(o->signals_to_handle, &set) != DDP_OK)
			rc = DDP_ERR_INVALID;
	}
	if (o->monitor_interval) {
		char *end;
		double m = strtod(o->monitor_interval, &end);
		if (*end || end == o->monitor_interval || !(m > 0 && m <= 86400)) {
			launch_msg("--monitor-interval '%s' is not a number of seconds (above 0, at most 86400)",
				   o->monitor_interval);
			rc = DDP_ERR_INVALID;
		}
	}
	if (o->max_restarts && o->nnodes > 1) {
		launch_msg("--max-restarts restarts the ranks of one node; with --nnodes %ld restart the "
			   "whole job from your scheduler (e.g. srun --requeue) instead",
			   o->nnodes);
		rc = DDP_ERR_INVALID;
	}
	if (o->run_path && (o->module || o->no_python)) {
		launch_msg("--run-path runs python3 PROGRAM; drop --%s", o->module ? "module" : "no-python");
		rc = DDP_ERR_INVALID;
	}
	for (int i = 0; i < o->shard.n; i++) {
		const char *spec = o->shard.v[i];
		if (strchr(spec, '\n')) {
			launch_msg("--shard '%s' contains a newline", spec);
			rc = DDP_ERR_INVALID;
			continue;
		}
		char err[512] = "";
		if (ddp_shard_check_spec(spec, (int)world, err, sizeof err) != DDP_OK) {
			if (err[0])
				launch_msg("%s", err);
			else
				launch_msg("--shard '%s' is not a valid shard spec", spec);
			rc = DDP_ERR_INVALID;
		}
	}
	return rc;
}

/* The signals ddprun passes on, by name (SIGTERM, TERM, sigterm). */
static const struct {
	const char *name;
	int sig;
} fwd_signals[] = { { "TERM", SIGTERM }, { "INT", SIGINT },   { "HUP", SIGHUP },
		    { "QUIT", SIGQUIT }, { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 } };

ddp_result launch_parse_signals(const char *list, sigset_t *out)
{
	char buf[256];
	sigemptyset(out);
	if (strlen(list) >= sizeof buf)
		goto bad;
	strcpy(buf, list);
	for (char *save = NULL, *w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		const char *n = strncasecmp(w, "SIG", 3) == 0 ? w + 3 : w;
		size_t k = 0;
		while (k < sizeof fwd_signals / sizeof fwd_signals[0] && strcasecmp(n, fwd_signals[k].name) != 0)
			k++;
		if (k == sizeof fwd_signals / sizeof fwd_signals[0]) {
			launch_msg("--signals-to-handle '%s': ddprun passes on SIGTERM, SIGINT, SIGHUP, SIGQUIT, "
				   "SIGUSR1 and SIGUSR2, not '%s'",
				   list, w);
			return DDP_ERR_INVALID;
		}
		sigaddset(out, fwd_signals[k].sig);
	}
	return DDP_OK;
bad:
	launch_msg("--signals-to-handle '%s' is too long", list);
	return DDP_ERR_INVALID;
}

void launch_options_free(struct launch_opts *o)
{
#define LAUNCH_OPT(field, lng, shrt, env, type, def, meta, lo, hi, help) LOPT_FREE_##type(o->field);
#define LOPT_FREE_INT(f)
#define LOPT_FREE_STR(f)
#define LOPT_FREE_ENUM(f)
#define LOPT_FREE_FLAG(f)
#define LOPT_FREE_COUNT(f)
#define LOPT_FREE_ACTION(f)
#define LOPT_FREE_LIST(f) \
	do { \
		free((void *)(f).v); \
		(f).v = NULL; \
		(f).n = 0; \
	} while (0);
#include "options.def"
#undef LAUNCH_OPT
}

/* Examples, for --help and the man page (one table: launch_options_doc). */
static const struct {
	const char *cmd, *what;
} examples[] = {
	{ "ddprun -n 4 ./trainer --epochs 3", "four ranks of an unmodified single-GPU trainer" },
	{ "ddprun -n 2 --gpus 2,3 --log-dir logs ./trainer", "GPUs 2 and 3; each rank's output in logs/latest/" },
	{ "ddprun -n 4 --shard data/train.bin --trace tr ./trainer && ddprun report tr",
	  "each rank reads its own part of data/train.bin; then the report" },
	{ "ddprun -n 8 --max-restarts 3 python3 train.py",
	  "restart every rank after a failure, up to 3 times (train.py resumes from its checkpoint)" },
	{ "DDPRUN_SECRET=$(openssl rand -hex 32) ddprun --nnodes 2 --node-rank 0 --master-addr node0 "
	  "--master-port 29500 -n 8 ./trainer",
	  "node 0 of two (node 1: --node-rank 1, the same secret)" },
};

/* The left column of option d: "-n, --nproc-per-node N". */
static void opt_left(const struct opt_desc *d, char *buf, size_t cap)
{
	int n = 0;
	if (d->shrt)
		n = snprintf(buf, cap, "-%c, ", d->shrt);
	snprintf(buf + n, cap - (size_t)n, "--%s%s%s", d->lng, *d->meta ? " " : "", d->meta);
}

/* The default worth saying ("" for none: flags, counts, 0, unset). */
static const char *opt_default(const struct opt_desc *d)
{
	if (!d->def || d->type == LOPT_FLAG || d->type == LOPT_COUNT || strcmp(d->def, "0") == 0)
		return "";
	return d->def;
}

/* s for roff: '-' as \-, '\' as \e. */
static void put_roff(int fd, const char *s)
{
	for (; *s; s++) {
		if (*s == '-')
			dprintf(fd, "\\-");
		else if (*s == '\\')
			dprintf(fd, "\\e");
		else
			dprintf(fd, "%c", *s);
	}
}

/* s for a markdown table cell: '|' as \|. */
static void put_md(int fd, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			dprintf(fd, "\\|");
		else
			dprintf(fd, "%c", *s);
	}
}

void launch_options_doc(int fd, enum launch_doc fmt)
{
	if (fmt == LAUNCH_DOC_MD)
		dprintf(fd, "| option | variable | meaning |\n|---|---|---|\n");
	for (int id = 0; id < LOPT_COUNT_; id++) {
		const struct opt_desc *d = &opt_table[id];
		char left[96];
		const char *def = opt_default(d);
		int env = d->type != LOPT_ACTION;
		opt_left(d, left, sizeof left);
		switch (fmt) {
		case LAUNCH_DOC_HELP:
			dprintf(fd, "  %-26s %s", left, d->help);
			if (*def)
				dprintf(fd, " (default %s)", def);
			if (env)
				dprintf(fd, "\n  %-26s   [%s]", "", d->env);
			dprintf(fd, "\n");
			break;
		case LAUNCH_DOC_MAN:
			dprintf(fd, ".TP\n");
			if (d->shrt)
				dprintf(fd, "\\fB\\-%c\\fR, ", d->shrt);
			dprintf(fd, "\\fB\\-\\-");
			put_roff(fd, d->lng);
			dprintf(fd, "\\fR");
			if (*d->meta) {
				dprintf(fd, " \\fI");
				put_roff(fd, d->meta);
				dprintf(fd, "\\fR");
			}
			dprintf(fd, "\n");
			put_roff(fd, d->help);
			if (*def) {
				dprintf(fd, " (default ");
				put_roff(fd, def);
				dprintf(fd, ")");
			}
			dprintf(fd, ".\n");
			if (env) {
				dprintf(fd, ".br\n[\\fB");
				put_roff(fd, d->env);
				dprintf(fd, "\\fR]\n");
			}
			break;
		case LAUNCH_DOC_MD:
			dprintf(fd, "| `");
			put_md(fd, left);
			dprintf(fd, "` | %s%s%s | ", env ? "`" : "", env ? d->env : "", env ? "`" : "");
			put_md(fd, d->help);
			if (*def) {
				dprintf(fd, " (default `");
				put_md(fd, def);
				dprintf(fd, "`)");
			}
			dprintf(fd, " |\n");
			break;
		case LAUNCH_DOC_MAN_EXAMPLES:
			break;
		}
	}
	if (fmt == LAUNCH_DOC_MAN_EXAMPLES)
		for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
			dprintf(fd, ".TP\n.B ");
			put_roff(fd, examples[i].cmd);
			dprintf(fd, "\n");
			put_roff(fd, examples[i].what);
			dprintf(fd, ".\n");
		}
}

void launch_options_help(int fd)
{
	dprintf(fd, "usage: ddprun [options] [--] PROGRAM [ARGS...]\n"
		    "       ddprun report DIR       merge the per-rank summaries and traces in DIR\n"
		    "       ddprun inspect ...      look inside fatbins and programs (ddprun inspect --help)\n"
		    "\n"
		    "Runs PROGRAM as a data-parallel job: N ranks, each with libddp.so preloaded.\n"
		    "Each option can also be set by the environment variable shown (or torchrun's\n"
		    "PET_<NAME>); the command line wins.\n\n");
	launch_options_doc(fd, LAUNCH_DOC_HELP);
	dprintf(fd, "\nExamples:\n");
	for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
		dprintf(fd, "  %s\n      %s\n", examples[i].cmd, examples[i].what);
	dprintf(fd, "\nExit status: 0 when every rank exits 0; else the code of the first rank\n"
		    "that failed (128+N when it died on signal N); 124 when --timeout stopped\n"
		    "the job; 128+N when ddprun got signal N; 126/127 when PROGRAM cannot be run;\n"
		    "2 for a usage error.\n"
		    "See docs/launcher.md, docs/configuration.md and `man -l docs/ddprun.1`.\n");
}
