/* SPDX-License-Identifier: MIT
 *
 * fallbacks.c - weak stand-ins for subcommands other files provide.
 *
 * launcher/report.c and launcher/inspect.c define launch_report_main and
 * launch_inspect_main; until they are built, these weak definitions say so.
 * A strong definition in any linked object replaces them.
 *
 * Contract: main thread; no state.
 */
#include <stdio.h>
#include "launch.h"

__attribute__((weak)) int launch_report_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	launch_msg("report is not built yet");
	return 2;
}

__attribute__((weak)) int launch_inspect_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	launch_msg("inspect is not built yet");
	return 2;
}
