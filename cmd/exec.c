/* SPDX-License-Identifier: MIT */
#include "cli.h"

static int exec_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "provgate exec: not implemented in this version\n");
	return EXIT_INTERNAL;
}

const struct cli_verb verb_exec = {
	.name = "exec",
	.main = exec_main,
	.synopsis = "exec (not implemented in this version)",
	.help = "",
};
