/* SPDX-License-Identifier: MIT */
/* --attest / --sign-key of run, certify and exec (and of any verb that writes a report). */
#pragma once
#include "cli.h"
#include "attest.h"

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
extern const struct cli_verb verb_verify_attestation;
