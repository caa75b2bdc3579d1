/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_kind.c - kernel families by name: the builtin optimizer, gradient-reader,
 * neutral and boundary lists, DDP_OPT_KERNELS / DDP_GRAD_READER_KERNELS
 * matching (ddp_grad_classify).
 * Split from ddp_grad.c (moves only); ddp_grad_int.h lists the tracker's
 * files, ddp_grad.h the rules.
 *
 * Contract: pure functions of their arguments; no state, no allocation but the
 * copy without_closures makes.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ddp_array.h"
#include "ddp_flow.h"
#include "ddp_grad.h"
#include "ddp_log.h"
#include "ddp_grad_int.h"

const char *const ddp_grad_opt_builtin[] = {
	"adam",    "sgd",      "momentum",           "lamb",       "lion",      "adagrad",
	"rmsprop", "adadelta", "multi_tensor_apply", "fused_adam", "fusedadam", "optimizer",
	NULL,
};
const char *const ddp_grad_reader_builtin[] = {
	"unscale",   "non_finite",  "nonfinite", "found_inf", "inf_check", "check_inf",
	"grad_norm", "global_norm", "clip_grad", "lpnorm",    "l2norm",    NULL,
};
/* PyTorch's multi-tensor functors that rewrite gradients the same way on
 * every rank: clip_grad_norm_'s _foreach_mul_(grads, clip_coef) by a device
 * scalar, zero_grad(set_to_none=False)'s _foreach_zero_. */
const char *const ddp_grad_neutral_builtin[] = {
	"BinaryOpScalarTensorFunctor<",
	"ZeroFunctor<",
	NULL,
};
/* scaler.update(): every iteration of a GradScaler loop ends with it,
 * whether the optimizer ran or the step was skipped. */
static const char *const boundary_builtin[] = { "amp_update_scale", NULL };

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

int ddp_grad_name_matches(const char *name, const char *const *builtin, const char *setting)
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

int ddp_grad_is_boundary(const char *name)
{
	return ddp_grad_name_matches(name, boundary_builtin, NULL);
}

enum ddp_grad_kclass ddp_grad_classify(const char *name, const char *opt_setting, const char *reader_setting)
{
	/* only inside a multi-tensor kernel: a plain elementwise ZeroFunctor
	 * (a fill) is forward/backward work */
	if (name && strstr(name, "multi_tensor_apply_kernel<") &&
	    ddp_grad_name_matches(name, ddp_grad_neutral_builtin, NULL))
		return DDP_GK_NEUTRAL;
	if (ddp_grad_name_matches(name, ddp_grad_reader_builtin, reader_setting))
		return DDP_GK_READER;
	if (ddp_grad_name_matches(name, ddp_grad_opt_builtin, opt_setting))
		return DDP_GK_OPT;
	return DDP_GK_OTHER;
}
