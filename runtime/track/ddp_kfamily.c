/* SPDX-License-Identifier: MIT
 *
 * ddp_kfamily.c - kernel families by name (ddp_kfamily.h): the rows of
 * ddp_kfamily.def and the name matching they use.
 *
 * Contract: pure functions of their arguments and the const table; any
 * thread.  No allocation but the copy without_closures makes.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ddp_kfamily.h"

enum kf_setting { KF_SET_NONE, KF_SET_OPT, KF_SET_READER };

/* One KFAMILY row. */
struct kf_row {
	enum ddp_kfamily id;
	const char *within;       /* the name must also contain it, or NULL */
	enum kf_setting setting;  /* which caller setting adjusts pats      */
	const char *const *pats;  /* NULL-terminated                        */
};

static const struct kf_row rows[] = {
#define KFAMILY(id, within, setting, ...) \
	{ DDP_KF_##id, within, KF_SET_##setting, (const char *const[]){ __VA_ARGS__, NULL } },
#include "ddp_kfamily.def"
};

static const char *const *const marks[] = {
#define KMARK(id, ...) [DDP_KM_##id] = (const char *const[]){ __VA_ARGS__, NULL },
#include "ddp_kfamily.def"
};

static int ci_contains(const char *hay, const char *needle, size_t nlen)
{
	if (!nlen)
		return 0;
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < nlen && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == nlen)
			return 1;
	}
	return 0;
}

/* Does name contain one of the comma-separated words of list? */
static int list_matches(const char *name, const char *list)
{
	while (list && *list) {
		const char *end = strchr(list, ',');
		size_t n = end ? (size_t)(end - list) : strlen(list);
		while (n && isspace((unsigned char)*list)) {
			list++;
			n--;
		}
		while (n && isspace((unsigned char)list[n - 1]))
			n--;
		if (ci_contains(name, list, n))
			return 1;
		list = end ? end + 1 : NULL;
	}
	return 0;
}

/* name with every C++ closure marker ("lambda", as the demangler spells
 * `{lambda(float)#1}`) blanked: a closure type says nothing about what a
 * kernel does, and "lamb" (the optimizer) is a prefix of it.  PyTorch's
 * elementwise kernels carry the closures of their operators in their
 * template arguments (tanh_kernel_cuda::{lambda()#2}...): matched raw,
 * every one of them was taken for a LAMB optimizer.  Returns name itself
 * when it has no marker, else a malloc'd copy (NULL when out of memory). */
static char *without_closures(const char *name)
{
	static const char marker[] = "lambda";
	const size_t mlen = sizeof marker - 1;
	if (!ci_contains(name, marker, mlen))
		return (char *)name;
	char *copy = strdup(name);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if (strncasecmp(p, marker, mlen) == 0)
			memset(p, '~', mlen);
	return copy;
}

int ddp_kfamily_matches(const char *name, const char *const *builtin, const char *setting)
{
	if (!name)
		return 0;
	char *clean = without_closures(name);
	if (!clean)
		return 0;
	int replace = setting && *setting && *setting != '+', hit = 0;
	if (!replace)
		for (size_t i = 0; builtin[i] && !hit; i++)
			hit = ci_contains(clean, builtin[i], strlen(builtin[i]));
	if (!hit && setting && *setting)
		hit = list_matches(clean, *setting == '+' ? setting + 1 : setting);
	if (clean != name)
		free(clean);
	return hit;
}

enum ddp_kfamily ddp_kfamily_classify(const char *name, const char *opt_setting, const char *reader_setting)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct kf_row *r = &rows[i];
		if (r->within && !(name && strstr(name, r->within)))
			continue;
		const char *setting = r->setting == KF_SET_OPT ? opt_setting
				      : r->setting == KF_SET_READER ? reader_setting
								    : NULL;
		if (ddp_kfamily_matches(name, r->pats, setting))
			return r->id;
	}
	return DDP_KF_OTHER;
}

int ddp_kfamily_mark(const char *name, enum ddp_kfamily_mark m)
{
	return (size_t)m < sizeof marks / sizeof marks[0] && marks[m] && ddp_kfamily_matches(name, marks[m], NULL);
}
