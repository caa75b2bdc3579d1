/* SPDX-License-Identifier: MIT
 *
 * sim_settings.h - the getters of the CPU device's settings, generated from
 * sim_settings.def: sim_setting_<name>() is the environment variable's
 * value, or the row's default when it is unset or empty.  The only place
 * cpudev/sim_*.c read the environment.
 *
 * Contract: header only, no state; each getter reads the environment when
 * called (callers read once, under their own pthread_once).
 */
#ifndef SIM_SETTINGS_H
#define SIM_SETTINGS_H
#include <stdlib.h>
#include <string.h>

#define SIM_SETTING(name, env, type, dflt, help) \
	static inline const char *sim_setting_##name(void) \
	{ \
		const char *v = getenv(env); \
		return v && *v ? v : (dflt); \
	}
#include "sim_settings.def"
#undef SIM_SETTING

/* A BOOL setting's value: on unless unset or "0". */
static inline int sim_setting_on(const char *v)
{
	return v && strcmp(v, "0") != 0;
}
#endif /* SIM_SETTINGS_H */
