/* SPDX-License-Identifier: MIT */
/* Options shared by run, certify and exec. */
#pragma once
#include "cli.h"

struct run_opts {
	const char *config;
	enum pvg_phase phase;
	pvg_gate_mask gates;
	bool keep_going;
	const char *json;
	const char *junit;
	int verbosity; /* -1 quiet, 0 normal, 1 verbose */
	bool no_color;
	bool help;
	const char *override_key[32];
	const char *override_value[32];
	size_t n_overrides;
	char **rest; /* arguments after the options (exec: the command) */
	int n_rest;
};

/* Returns an exit code (0 to go on). */
int cli_parse_run_opts(int argc, char **argv, struct run_opts *o, bool certify);
/* certify and exec: without the flags they refuse (--phase, --gates). */
void cli_run_opts_help(FILE *f, bool certify);
/* Tells the run which files it writes (--json/--out, --junit), so gate 2 never counts them. */
void cli_add_outputs(const struct run_opts *o, struct pvg_run *run);
int cli_open_config(const struct run_opts *o, struct pvg_config **cfg);
/* Prints the text verdict (unless --json -) and writes --json / --junit files. */
int cli_emit(const struct run_opts *o, const struct pvg_run *run, bool certify);
