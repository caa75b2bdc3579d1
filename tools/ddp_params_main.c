/* SPDX-License-Identifier: MIT
 *
 * ddp_params_main.c - `ddp-params [--markdown]`: prints every libddp setting
 * declared in runtime/base/params.def (name, type, default, meaning).  The
 * markdown form is docs/configuration.md's table; a test keeps them equal.
 *
 * Contract: reads nothing but its arguments; exit 2 on a bad argument.
 */
#include <stdio.h>
#include <string.h>
#include "ddp_params.h"

int main(int argc, char **argv)
{
	int md = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--markdown") == 0) {
			md = 1;
		} else {
			fprintf(stderr, "ddp-params: unknown argument '%s'; usage: ddp-params [--markdown]\n",
				argv[i]);
			return 2;
		}
	}
	ddp_params_print(1, md);
	return 0;
}
