/* SPDX-License-Identifier: MIT */
/* Options shared by run, certify and exec. */
#pragma once
#include "cli.h"

struct run_opts {
	const char *config;
	enum pvg_phase phase;
	pvg_gate_mask gates;
	bool keep_going;
	const char *json;  /* with placeholders replaced (cli_expand_path) */
	const char *junit;
	char json_buf[4096], junit_buf[4096], attest_buf[4096];
	struct cli_attest attest; /* --attest, --sign-key */
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
/* Releases what parsing and cli_attest_open took (the signing key); for _cleanup_. */
void cli_run_opts_done(struct run_opts *o);
/* Prints the text verdict (unless --json -) and writes the --json, --junit and --attest files. */
int cli_emit(const struct run_opts *o, const struct pvg_run *run, bool certify);
