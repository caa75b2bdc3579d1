/* SPDX-License-Identifier: MIT
 *
 * ddp_params.h - typed, cached getters for the settings in params.def.
 *
 * ddp_params_init() reads every DDP_* variable once, checks it against its
 * type and bounds and logs "NAME=value set by environment" at INFO.  A bad
 * value is one error line naming the variable and what it accepts; init then
 * returns DDP_ERR_INVALID and the default stays.  The getters after that are
 * plain loads.
 *
 * Contract: ddp_params_init may be called from any thread, any number of
 * times: the first call reads the environment (pthread_once), later calls
 * return its result.  The getters return defaults before it.  It only reads
 * the environment and logs (write(2)), so it is safe inside a hook; never call
 * it from a constructor or from inside dlsym.
 */
#ifndef DDP_PARAMS_H
#define DDP_PARAMS_H

#include <stddef.h>
#include "ddp_err.h"

#define DDP_PARAM_INT(name, env, def, lo, hi, help) long ddp_param_##name(void);
#define DDP_PARAM_STR(name, env, def, help) const char *ddp_param_##name(void);
#define DDP_PARAM_BOOL(name, env, def, help) int ddp_param_##name(void);
#define DDP_PARAM_ENUM(name, env, def, values, help) int ddp_param_##name(void);
#define DDP_PARAM_SECRET(name, env, help)
#include "params.def"
#undef DDP_PARAM_INT
#undef DDP_PARAM_STR
#undef DDP_PARAM_BOOL
#undef DDP_PARAM_ENUM
#undef DDP_PARAM_SECRET

/* Reads and validates every setting; DDP_ERR_INVALID if any was bad. */
ddp_result ddp_params_init(void);

/* Writes the settings table (name, type, default, help) to fd, for
 * `--help` and docs/configuration.md (markdown when md != 0). */
void ddp_params_print(int fd, int md);

/* The default of the setting named env as the table writes it ("(unset)"
 * for a string without one), NULL when the table has no such setting: how
 * ddprun takes the defaults of the DDPRUN_* settings it reads itself. */
const char *ddp_param_default(const char *env);

#endif /* DDP_PARAMS_H */
