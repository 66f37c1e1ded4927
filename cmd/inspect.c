/* SPDX-License-Identifier: MIT */
#include "cli.h"

static int inspect_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "provgate inspect: not implemented in this version\n");
	return EXIT_INTERNAL;
}

const struct cli_verb verb_inspect = {
	.name = "inspect",
	.main = inspect_main,
	.synopsis = "inspect (not implemented in this version)",
	.help = "",
};
