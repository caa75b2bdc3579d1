/* SPDX-License-Identifier: MIT
 *
 * ddprun_doc_main.c - `ddprun-doc --man|--man-examples|--markdown|--help`:
 * ddprun's option table (launcher/options.def) as the man page's OPTIONS
 * entries, its EXAMPLES, a markdown table, or the --help lines.
 * tools/update_config_doc.sh puts them into docs/ddprun.1, docs/launcher.md
 * and docs/configuration.md; tools/test_config_doc.sh keeps them equal.
 *
 * Contract: reads nothing but its arguments; exit 2 on a bad argument.
 */
#include <stdio.h>
#include <string.h>
#include "launch.h"

int main(int argc, char **argv)
{
	static const struct {
		const char *arg;
		enum launch_doc fmt;
	} fmts[] = { { "--man", LAUNCH_DOC_MAN },
		     { "--man-examples", LAUNCH_DOC_MAN_EXAMPLES },
		     { "--markdown", LAUNCH_DOC_MD },
		     { "--help", LAUNCH_DOC_HELP } };
	for (size_t i = 0; argc == 2 && i < sizeof fmts / sizeof fmts[0]; i++)
		if (strcmp(argv[1], fmts[i].arg) == 0) {
			launch_options_doc(1, fmts[i].fmt);
			return 0;
		}
	fprintf(stderr, "ddprun-doc: usage: ddprun-doc --man|--man-examples|--markdown|--help\n");
	return 2;
}
