/* SPDX-License-Identifier: MIT
 *
 * ddp_kfamily.h - kernel families by name: what a kernel is (optimizer
 * step, gradient reader, neutral consumer, other) and whether it ends an
 * iteration, from its name and the rows of ddp_kfamily.def.  One table for
 * the kernel registry (runtime/track) and the gradient tracker
 * (runtime/grad, which names these ddp_grad_classify / ddp_grad_is_boundary).
 *
 * Contract: pure functions of their arguments and the table; any thread.
 * No allocation but a copy of a name that holds a closure marker.
 */
#ifndef DDP_KFAMILY_H
#define DDP_KFAMILY_H

/* The classes.  The values are cached (ddp_kfunc.sync_class) and equal
 * enum ddp_grad_kclass's: never reorder. */
enum ddp_kfamily {
	DDP_KF_OTHER = 0,
	DDP_KF_READER,  /* reads gradients before the optimizer           */
	DDP_KF_OPT,     /* optimizer step                                  */
	DDP_KF_NEUTRAL, /* neutral consumer: transforms averaged gradients
			     * the same way on every rank (clip's scaling by a
			     * device scalar, _foreach_zero_); never a step      */
};

/* Marks independent of the class (KMARK rows). */
enum ddp_kfamily_mark {
	DDP_KM_BOUNDARY, /* ends an iteration (scaler.update()) */
};

/* Pattern lists: "a,b" replaces the built-ins, "+a,b" adds to them; NULL or
 * "" keeps the built-ins.  Matching is a case-insensitive substring test.
 * Returns 1 when name matches. */
int ddp_kfamily_matches(const char *name, const char *const *builtin, const char *setting);

/* The first KFAMILY row name matches (opt_setting: DDP_OPT_KERNELS,
 * reader_setting: DDP_GRAD_READER_KERNELS, as the rows say), else
 * DDP_KF_OTHER.  A NULL name is DDP_KF_OTHER. */
enum ddp_kfamily ddp_kfamily_classify(const char *name, const char *opt_setting, const char *reader_setting);

/* Does name carry mark m (its KMARK row)? */
int ddp_kfamily_mark(const char *name, enum ddp_kfamily_mark m);

#endif /* DDP_KFAMILY_H */
