/* SPDX-License-Identifier: MIT */
#include "cli.h"

static int maps_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "provgate maps: not implemented in this version\n");
	return EXIT_INTERNAL;
}

const struct cli_verb verb_maps = {
	.name = "maps",
	.main = maps_main,
	.synopsis = "maps (not implemented in this version)",
	.help = "",
};
