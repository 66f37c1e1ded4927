/* SPDX-License-Identifier: MIT */
/* Shared by the verbs of cmd/ (no gate logic lives here): cli.c loads the config, parses
 * --gates and the output flags, writes report files and shows progress; render.c renders a
 * run as text and JUnit; attest.c writes attestations. */
#pragma once
#include <signal.h>
#include "core/attest.h"
#include "core/run.h"
#include "util/escape.h"

enum { EXIT_OK = 0, EXIT_NOT_CERTIFIED = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3 };

struct cli_verb {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *synopsis;
	const char *help;
};

extern const struct cli_verb verb_run, verb_certify, verb_exec, verb_inspect, verb_maps;
extern const struct cli_verb verb_merge;
extern const struct cli_verb verb_verify_attestation;
extern const struct cli_verb verb_compare;
extern const struct cli_verb verb_init;

/* The relocatable bundle's start and its part of --version (cmd/dist/bundle.c): linked into
 * the bundle's program only, NULL in the installed one. cli_bundle_start returns 0 or an
 * exit status. */
int cli_bundle_start(void) __attribute__((weak));
void cli_bundle_version(FILE *f) __attribute__((weak));

/* SIGPIPE's disposition as provgate found it (provgate itself ignores SIGPIPE) */
extern struct sigaction cli_sigpipe_inherited;
/* (run.c) */
/* Replaces the placeholders ({node}, {host}, {job}) of a report path given to flag, into
 * buf; *path then points there. EXIT_OK, or EXIT_USAGE with a message naming the flag. */
int cli_expand_path(const char *flag, const char **path, char *buf, size_t size);

/* ---- render.c: a run as text and JUnit ---- */

/* Colour escape codes, or "" when stdout is not a terminal or NO_COLOR is set. */
struct cli_style {
	const char *pass, *fail, *warn, *dim, *bold, *reset;
};
void cli_style_init(struct cli_style *st, FILE *f, bool force_off);

void cli_print_header(FILE *f, const struct pvg_run *run, const struct cli_style *st);
void cli_print_gates(FILE *f, const struct pvg_result *results, pvg_gate_mask only,
		     int verbosity, const struct cli_style *st);
void cli_print_verdict(FILE *f, const struct pvg_run *run, bool certify,
		       const struct cli_style *st);
void cli_print_run(FILE *f, const struct pvg_run *run, bool certify, int verbosity,
		   const struct cli_style *st);
char *cli_junit(const struct pvg_run *run);
/* Text for XML (attributes and content), UTF-8 sanitized. */
void cli_xml_escape(FILE *f, const char *s);
/* The one JUnit writer: f from open_memstream(buf, ...); a document of one testsuite, its
 * testcases (seconds < 0: no time), and in a testcase at most one failure of lines
 * "code: message" (and "hint: ..."). cli_junit_end closes f and returns *buf. */
void cli_junit_begin(FILE *f, const char *name, const char *suite, int tests, int failures,
		     int skipped);
void cli_junit_case(FILE *f, const char *classname, const char *name, double seconds);
void cli_junit_failure(FILE *f, const char *type, const char *message);
void cli_junit_line(FILE *f, const char *code, const char *message, const char *hint);
void cli_junit_failure_end(FILE *f);
void cli_junit_case_end(FILE *f);
char *cli_junit_end(FILE *f, char **buf);

/* ---- attest.c: --attest / --sign-key of run, certify and exec ---- */

struct cli_attest {
	const char *path;     /* --attest FILE; NULL when not asked for */
	const char *key_path; /* --sign-key KEY.pem; NULL: an unsigned Statement */
	struct pvg_key *key;
};

/* Checks the flags together with --json/--junit and loads the signing key, before any gate
 * runs: a key that cannot be used must not cost a whole certification. EXIT_OK or
 * EXIT_USAGE with a message on stderr. */
int cli_attest_open(struct cli_attest *a, const char *json, const char *junit);
void cli_attest_close(struct cli_attest *a);

/*
 * The one writer of attestation files. Turns a provgate report (any report JSON whose
 * "schema" has a predicate type, see pvg_predicate_for_schema) and its subjects (NULL: the
 * installed and build artifacts of the report's chain) into an in-toto Statement v1, wrapped
 * in a DSSE envelope signed by key when key is not NULL, and writes it to path (temp file +
 * rename). EXIT_OK; EXIT_USAGE when the file cannot be written; EXIT_NOT_CERTIFIED when the
 * report holds nothing to attest (no subject). A message on stderr for each failure.
 */
int cli_write_attestation(const char *path, const cJSON *report,
			  const struct pvg_subject *subjects, size_t n_subjects,
			  const struct pvg_key *key);
/* The same for a run's report. */
int cli_write_run_attestation(const struct cli_attest *a, const struct pvg_run *run);

/* ---- cli.c: the config, --gates, output flags, report files, progress ---- */

/* Writes text to PATH: a file (or none yet) atomically, by a temp file and a rename (through a
 * link, onto the file it names); a device, FIFO or socket in place, never replaced; our own
 * descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N, or a link to one) by writing to them;
 * "-" is stdout. 0 or -errno. */
int cli_write_file(const char *path, const char *text);
/* 0 when a report can be written at PATH (for a file, a temp file beside it is made and
 * removed); -errno */
int cli_check_writable(const char *path);
/* The run's JSON report (with a final newline) to PATH ("-": stdout). 0 or -errno. */
int cli_write_json(const char *path, const struct pvg_run *run);
/* The --json and --junit files (either may be NULL), a message on stderr for each that
 * cannot be written: EXIT_OK or EXIT_USAGE. */
int cli_write_reports(const char *json, const char *junit, const struct pvg_run *run);
/* Loads the config named by -c / $PROVGATE_CONFIG / ./provgate.json; exit code or 0. */
int cli_load_config(const char *opt_path, struct pvg_config **cfg);
/* Parses "1,3-4" or gate names into a mask; -EINVAL with a message on stderr. */
int cli_parse_gates(const char *spec, pvg_gate_mask *out);
void cli_progress(const char *path, uint64_t done, uint64_t total);

/* The output flags of compare, merge and verify-attestation, one meaning in each. */
enum { CLI_OPT_JSON = 200, CLI_OPT_JUNIT, CLI_OPT_ATTEST, CLI_OPT_SIGN_KEY, CLI_OPT_NO_COLOR };
struct cli_outputs {
	const char *json, *junit; /* --json FILE|-, --junit FILE */
	struct cli_attest attest; /* --attest, --sign-key */
	int verbosity;            /* -q -1, -v 1 */
	bool no_color;            /* --no-color */
};
/* Takes the flag c (from getopt_long, with its arg) into o: true when it is one of them. */
bool cli_output_flag(int c, const char *arg, struct cli_outputs *o);
/* Where the verdict's text goes: stdout (st set up for it), or NULL when --json - has it. */
FILE *cli_text_out(const struct cli_outputs *o, struct cli_style *st);
/* Releases the signing key; for _cleanup_. */
void cli_outputs_done(struct cli_outputs *o);
/* The outputs of compare and merge, each that is asked for (NULL: not), in this order: the
 * document doc as the --json file (with a final newline), the --attest Statement of it, the
 * --junit text; a message "who: cannot write ..." on stderr for each that cannot be written.
 * rc is the verdict's exit code; returns it, or what a file not written says (a file not
 * written outranks a refusal). */
int cli_write_outputs(const char *who, int rc, const cJSON *doc, const struct cli_outputs *o,
		      const char *junit_xml);
