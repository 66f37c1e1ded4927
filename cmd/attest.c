/* SPDX-License-Identifier: MIT */
/* Writing attestations: a report as an in-toto Statement, signed in DSSE with --sign-key. */
#include "cli.h"

int cli_attest_open(struct cli_attest *a, const char *json, const char *junit)
{
	a->key = NULL;
	if (json && junit && strcmp(json, "-") == 0 && strcmp(junit, "-") == 0) {
		fprintf(stderr, "provgate: --json - and --junit - both want stdout; write one of "
				"them to a file\n");
		return EXIT_USAGE;
	}
	if (a->key_path && !a->path) {
		fprintf(stderr, "provgate: --sign-key signs the attestation: give --attest FILE too\n");
		return EXIT_USAGE;
	}
	if (!a->path)
		return EXIT_OK;
	if (strcmp(a->path, "-") == 0) {
		fprintf(stderr, "provgate: --attest needs a file (stdout carries the verdict)\n");
		return EXIT_USAGE;
	}
	if ((json && strcmp(json, a->path) == 0) || (junit && strcmp(junit, a->path) == 0)) {
		fprintf(stderr, "provgate: --attest %s is also the --json/--junit file\n", a->path);
		return EXIT_USAGE;
	}
	if (!a->key_path)
		return EXIT_OK;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	int r = pvg_key_load_private(a->key_path, &a->key, &why);
	if (r < 0) {
		fprintf(stderr, "provgate: --sign-key %s: %s\n", a->key_path,
			why.text ? why.text : strerror(-r));
		if (why.hint)
			fprintf(stderr, "provgate: hint: %s\n", why.hint);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

void cli_attest_close(struct cli_attest *a)
{
	pvg_key_free(a->key);
	a->key = NULL;
}

int cli_write_attestation(const char *path, const cJSON *report,
			  const struct pvg_subject *subjects, size_t n_subjects,
			  const struct pvg_key *key)
{
	struct pvg_subject own[PVG_MAX_SUBJECTS];
	if (!subjects) {
		n_subjects = pvg_attest_subjects(report, own);
		subjects = own;
	}
	_cleanup_free_ char *statement = NULL;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	int r = pvg_attest_statement(report, subjects, n_subjects, &statement, &why);
	if (r < 0) {
		fprintf(stderr, "provgate: attestation %s not written: %s\n", path, why.text);
		return r == -EINVAL && n_subjects == 0 ? EXIT_NOT_CERTIFIED : EXIT_USAGE;
	}
	_cleanup_free_ char *envelope = NULL;
	if (key && (r = pvg_attest_envelope(statement, key, &envelope, &why)) < 0) {
		fprintf(stderr, "provgate: attestation %s not written: %s\n", path, why.text);
		return EXIT_INTERNAL;
	}
	if ((r = cli_write_file(path, envelope ? envelope : statement)) < 0) {
		fprintf(stderr, "provgate: cannot write attestation %s: %s\n", path, strerror(-r));
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int cli_write_run_attestation(const struct cli_attest *a, const struct pvg_run *run)
{
	if (!a->path)
		return EXIT_OK;
	_cleanup_json_ cJSON *report = pvg_report_build(run);
	return cli_write_attestation(a->path, report, NULL, 0, a->key);
}

int cli_write_outputs(const char *who, int rc, const cJSON *doc, const struct cli_outputs *o,
		      const char *junit_xml)
{
	const char *json = o->json, *junit = o->junit;
	const struct cli_attest *a = &o->attest;
	int r;
	if (json) {
		_cleanup_free_ char *text = cJSON_Print(doc);
		_cleanup_free_ char *line = pvg_asprintf("%s\n", text);
		if ((r = cli_write_file(json, line)) < 0) {
			fprintf(stderr, "%s: cannot write %s: %s\n", who, json, strerror(-r));
			rc = EXIT_USAGE;
		}
	}
	if (a->path) {
		r = cli_write_attestation(a->path, doc, NULL, 0, a->key);
		if (r != EXIT_OK && (rc == EXIT_OK || r != EXIT_NOT_CERTIFIED))
			rc = r; /* a file not written outranks a refusal */
	}
	if (junit && (r = cli_write_file(junit, junit_xml)) < 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", who, junit, strerror(-r));
		rc = EXIT_USAGE;
	}
	return rc;
}

bool cli_output_flag(int c, const char *arg, struct cli_outputs *o)
{
	switch (c) {
	case CLI_OPT_JSON:
		o->json = arg;
		return true;
	case CLI_OPT_JUNIT:
		o->junit = arg;
		return true;
	case CLI_OPT_ATTEST:
		o->attest.path = arg;
		return true;
	case CLI_OPT_SIGN_KEY:
		o->attest.key_path = arg;
		return true;
	case CLI_OPT_NO_COLOR:
		o->no_color = true;
		return true;
	case 'q':
		o->verbosity = -1;
		return true;
	case 'v':
		o->verbosity = 1;
		return true;
	default:
		return false;
	}
}

FILE *cli_text_out(const struct cli_outputs *o, struct cli_style *st)
{
	if (o->json && strcmp(o->json, "-") == 0)
		return NULL;
	/* --junit -: stdout holds the XML alone, the text goes to stderr */
	FILE *f = o->junit && strcmp(o->junit, "-") == 0 ? stderr : stdout;
	cli_style_init(st, f, o->no_color);
	return f;
}

void cli_outputs_done(struct cli_outputs *o)
{
	cli_attest_close(&o->attest);
}
