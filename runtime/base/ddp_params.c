/* SPDX-License-Identifier: MIT
 *
 * ddp_params.c - storage, parsing and printing of the settings in params.def.
 *
 * Contract: values are written once, by the first ddp_params_init (pthread_once;
 * later calls return the first result), and read afterwards by any thread
 * without locks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_params.h"

#define DDP_PARAM_INT(name, env, def, lo, hi, help) static long param_##name = (def);
#define DDP_PARAM_STR(name, env, def, help) static const char *param_##name = (def);
#define DDP_PARAM_BOOL(name, env, def, help) static int param_##name = (def);
#define DDP_PARAM_ENUM(name, env, def, values, help) static int param_##name = (def);
#define DDP_PARAM_SECRET(name, env, help)
#include "params.def"
#undef DDP_PARAM_INT
#undef DDP_PARAM_STR
#undef DDP_PARAM_BOOL
#undef DDP_PARAM_ENUM
#undef DDP_PARAM_SECRET

#define DDP_PARAM_INT(name, env, def, lo, hi, help) \
	long ddp_param_##name(void) \
	{ \
		return param_##name; \
	}
#define DDP_PARAM_STR(name, env, def, help) \
	const char *ddp_param_##name(void) \
	{ \
		return param_##name; \
	}
#define DDP_PARAM_BOOL(name, env, def, help) \
	int ddp_param_##name(void) \
	{ \
		return param_##name; \
	}
#define DDP_PARAM_ENUM(name, env, def, values, help) \
	int ddp_param_##name(void) \
	{ \
		return param_##name; \
	}
#define DDP_PARAM_SECRET(name, env, help)
#include "params.def"
#undef DDP_PARAM_INT
#undef DDP_PARAM_STR
#undef DDP_PARAM_BOOL
#undef DDP_PARAM_ENUM
#undef DDP_PARAM_SECRET

__attribute__((unused)) static ddp_result parse_int(const char *env, const char *v, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 0);
	if (errno || end == v || *end || x < lo || x > hi) {
		DDP_ERROR("%s='%s' is not an integer in [%ld, %ld]", env, v, lo, hi);
		return DDP_ERR_INVALID;
	}
	*out = x;
	return DDP_OK;
}

__attribute__((unused)) static ddp_result parse_bool(const char *env, const char *v, int *out)
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
	DDP_ERROR("%s='%s' is not a boolean; use 1/0, on/off, true/false or yes/no", env, v);
	return DDP_ERR_INVALID;
}

__attribute__((unused)) static ddp_result parse_enum(const char *env, const char *v, const char *values,
						     int *out)
{
	const char *p = values;
	for (int i = 0; *p; i++) {
		size_t n = strcspn(p, "|");
		if (strlen(v) == n && strncasecmp(v, p, n) == 0) {
			*out = i;
			return DDP_OK;
		}
		p += n + (p[n] == '|');
	}
	DDP_ERROR("%s='%s' is not one of %s", env, v, values);
	return DDP_ERR_INVALID;
}

/* Out of line so the log line points here, not into params.def. */
static void log_set_by_env(const char *env, const char *v)
{
	DDP_INFO(INIT, "%s=%s set by environment", env, v);
}

static ddp_result params_rc;
static pthread_once_t params_once = PTHREAD_ONCE_INIT;

static void params_read(void)
{
	ddp_result rc = DDP_OK;
	const char *v;
#define SET_BY_ENV(env) log_set_by_env(env, v)
#define DDP_PARAM_INT(name, env, def, lo, hi, help) \
	if ((v = getenv(env)) && *v) { \
		if (parse_int(env, v, lo, hi, &param_##name) == DDP_OK) \
			SET_BY_ENV(env); \
		else \
			rc = DDP_ERR_INVALID; \
	}
#define DDP_PARAM_STR(name, env, def, help) \
	if ((v = getenv(env)) && *v) { \
		param_##name = v; \
		SET_BY_ENV(env); \
	}
#define DDP_PARAM_BOOL(name, env, def, help) \
	if ((v = getenv(env)) && *v) { \
		if (parse_bool(env, v, &param_##name) == DDP_OK) \
			SET_BY_ENV(env); \
		else \
			rc = DDP_ERR_INVALID; \
	}
#define DDP_PARAM_ENUM(name, env, def, values, help) \
	if ((v = getenv(env)) && *v) { \
		if (parse_enum(env, v, values, &param_##name) == DDP_OK) \
			SET_BY_ENV(env); \
		else \
			rc = DDP_ERR_INVALID; \
	}
#define DDP_PARAM_SECRET(name, env, help)
#include "params.def"
#undef DDP_PARAM_INT
#undef DDP_PARAM_STR
#undef DDP_PARAM_BOOL
#undef DDP_PARAM_ENUM
#undef DDP_PARAM_SECRET
#undef SET_BY_ENV
	params_rc = rc;
}

ddp_result ddp_params_init(void)
{
	pthread_once(&params_once, params_read);
	return params_rc;
}

/* Copies s into out (size len), escaping '|' for a markdown table cell. */
static const char *md_cell(const char *s, char *out, size_t len)
{
	size_t n = 0;
	for (; *s && n + 2 < len; s++) {
		if (*s == '|')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = '\0';
	return out;
}

/* The table as text, for ddp_params_print and ddp_param_default. */
static const struct param_row {
	const char *env, *type, *def, *help;
	int enum_def;        /* ENUM: index of the default in type ("a|b|c") */
	int is_str;          /* STR: the default is str_def (NULL: unset)  */
	const char *str_def;
} param_rows[] = {
#define STR_(x) #x
#define DDP_PARAM_INT(name, env, def, lo, hi, help) \
	{ env, "int [" STR_(lo) ".." STR_(hi) "]", STR_(def), help, 0, 0, NULL },
#define DDP_PARAM_STR(name, env, def, help) { env, "string", NULL, help, 0, 1, (def) },
#define DDP_PARAM_BOOL(name, env, def, help) { env, "bool", STR_(def), help, 0, 0, NULL },
#define DDP_PARAM_ENUM(name, env, def, values, help) { env, values, NULL, help, def, 0, NULL },
#define DDP_PARAM_SECRET(name, env, help) { env, "secret", "(unset)", help, 0, 0, NULL },
#include "params.def"
#undef DDP_PARAM_INT
#undef DDP_PARAM_STR
#undef DDP_PARAM_BOOL
#undef DDP_PARAM_ENUM
#undef DDP_PARAM_SECRET
};

/* The default of row r as text ("(unset)" for a string without one). */
static const char *row_default(const struct param_row *r, char *buf, size_t cap)
{
	if (r->is_str)
		return r->str_def ? r->str_def : "(unset)";
	if (r->def)
		return r->def;
	const char *p = r->type; /* ENUM: name the default value */
	for (int k = 0; k < r->enum_def && strchr(p, '|'); k++)
		p = strchr(p, '|') + 1;
	snprintf(buf, cap, "%.*s", (int)strcspn(p, "|"), p);
	return buf;
}

const char *ddp_param_default(const char *env)
{
	static char buf[64];
	for (size_t i = 0; i < sizeof param_rows / sizeof param_rows[0]; i++)
		if (strcmp(param_rows[i].env, env) == 0)
			return row_default(&param_rows[i], buf, sizeof buf);
	return NULL;
}

void ddp_params_print(int fd, int md)
{
	const size_t nrows = sizeof param_rows / sizeof param_rows[0];
	if (md)
		dprintf(fd, "| Variable | Type | Default | Meaning |\n|---|---|---|---|\n");
	for (size_t i = 0; i < nrows; i++) {
		const struct param_row *r = &param_rows[i];
		char enum_def[64];
		const char *def = row_default(r, enum_def, sizeof enum_def);
		if (md) {
			char type[128], help[512];
			dprintf(fd, "| `%s` | %s | `%s` | %s |\n", r->env, md_cell(r->type, type, sizeof type),
				def, md_cell(r->help, help, sizeof help));
		} else
			dprintf(fd, "  %-22s %-14s default %-10s %s\n", r->env, r->type, def, r->help);
	}
}
