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
