/* SPDX-License-Identifier: MIT
 *
 * fuzz.c - libFuzzer target for ddprun's command line (launcher/options.c).
 *
 * The input is split at NUL bytes into argv[1..] (at most 64 arguments);
 * the parser and the validator must answer every input with DDP_OK or an
 * error line, never crash, and free what they allocated.  DDPRUN_* settings
 * are cleared first so the environment of the fuzzing machine plays no part.
 *
 * Contract: single-threaded; --shard specs reach the shard checker, which
 * stats files named by the input (harmless: it only reads).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "launch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int env_cleared;
	char *buf, *argv[66];
	int argc = 0, action;
	struct launch_opts o;

	if (!env_cleared) {
		extern char **environ;
		for (char **e = environ; e && *e; e++)
			if (strncmp(*e, "DDPRUN_", 7) == 0) {
				char name[128];
				size_t n = strcspn(*e, "=");
				if (n < sizeof name) {
					memcpy(name, *e, n);
					name[n] = '\0';
					unsetenv(name);
					e = environ - 1; /* environ changed: start over */
				}
			}
		env_cleared = 1;
	}
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc++] = "ddprun";
	for (size_t i = 0; i <= size && argc < 65;) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	argv[argc] = NULL;
	if (launch_options_parse(argc, argv, &o, &action) == DDP_OK &&
	    launch_options_resolve(&o) == DDP_OK)
		(void)launch_options_validate(&o);
	launch_options_free(&o);
	free(buf);
	return 0;
}
