/* SPDX-License-Identifier: MIT */
/*
 * Attestations: a provgate report as the predicate of an in-toto Statement v1
 * (github.com/in-toto/attestation, spec/v1/statement.md), optionally signed in a DSSE
 * envelope; and the verification of one (provgate verify-attestation).
 */
#pragma once
#include "formats/dsse.h"
#include "util/hash.h"
#include "util/signkey.h"
#include "provgate.h"

#define PVG_STATEMENT_TYPE "https://in-toto.io/Statement/v1"
/* provgate's predicates: a provgate.report/1 report as written by --json, a
 * provgate.cluster/1 document (merge --json) and a provgate.compare/1 document (compare
 * --json). */
#define PVG_PREDICATE_REPORT "https://provgate.dev/attestation/report/v1"
#define PVG_PREDICATE_CLUSTER "https://provgate.dev/attestation/cluster/v1"
#define PVG_PREDICATE_COMPARE "https://provgate.dev/attestation/compare/v1"

/* A report names each of its artifacts' installed and build files: at most this many. */
#define PVG_MAX_SUBJECTS 64

struct pvg_subject {
	const char *name;   /* the artifact's path as the report names it */
	const char *sha256; /* 64 lowercase hex digits */
};

/* The predicate types provgate writes and verifies, with the report schema each carries,
 * the boolean member that says the predicate's verdict and where its subjects come from. A
 * verb with reports of its own adds a row here. NULL when unknown. */
struct pvg_predicate_kind {
	const char *predicate_type;
	const char *schema;        /* the predicate's "schema" member */
	const char *verdict_key;   /* "certified", "like_for_like" */
	/* the document's subjects (what it vouches for), pointing into doc */
	size_t (*subjects)(const cJSON *doc, struct pvg_subject out[PVG_MAX_SUBJECTS]);
	bool has_gates;            /* a gate report: "certified" needs its seven gates passed */
};
const struct pvg_predicate_kind *pvg_predicate_for_type(const char *predicate_type);
const struct pvg_predicate_kind *pvg_predicate_for_schema(const char *schema);

/* A report's subjects: the installed artifact, then the build artifact, each where the
 * report's chain gives its path and sha256; then those of every further artifact of
 * chain.artifacts (several artifacts). A file named twice is one subject. Returns how many
 * (0 to PVG_MAX_SUBJECTS); the strings point into report. */
size_t pvg_attest_report_subjects(const cJSON *report, struct pvg_subject out[PVG_MAX_SUBJECTS]);
/* The subjects of any document pvg_predicate_for_schema knows: a report's artifacts
 * (above); a cluster's agreed installed and build artifacts (identity); a comparison's two
 * report files (baseline, candidate, by their sha256). 0 when the schema is unknown. */
size_t pvg_attest_subjects(const cJSON *doc, struct pvg_subject out[PVG_MAX_SUBJECTS]);

/* The Statement's JSON text (compact, final newline) for a report (any provgate report JSON
 * with a "schema" member that pvg_predicate_for_schema knows) and its subjects. -EINVAL with
 * why when there is no subject or the report's schema has no predicate type. */
int pvg_attest_statement(const cJSON *report, const struct pvg_subject *subjects, size_t n,
			 char **statement, struct pvg_msg *why);
/* The DSSE envelope of a Statement, signed by key (keyid: pvg_key_keyid). */
int pvg_attest_envelope(const char *statement, const struct pvg_key *key, char **envelope,
			struct pvg_msg *why);

/* ---- verification ---- */

/* One verdict of verify-attestation; codes are stable ("attestation.signature-invalid"). */
struct pvg_attest_problem {
	char *code;
	char *message;
};

struct pvg_attest_artifact {
	char *path;
	char sha256[65]; /* "" when unreadable */
	char *err;       /* why it could not be hashed */
	char *subject;   /* the subject it matched, NULL if none */
};

struct pvg_attest_verification {
	bool verified;
	/* what could be read, for the output */
	char *payload_type;
	size_t n_signatures;
	char *keyid;      /* this key's keyid */
	int signed_by;    /* index of the signature that verified, -1 none */
	char *statement_type;
	char *predicate_type;
	cJSON *subjects;  /* the Statement's subject array (a copy), or NULL */
	int certified;    /* -1 unknown, 0, 1 */
	char *report_name;
	char *report_started_at;
	struct pvg_attest_artifact *artifacts;
	size_t n_artifacts;
	struct pvg_attest_problem *problems;
	size_t n_problems;
};

struct pvg_attest_verify_opts {
	const struct pvg_key *key;
	const char *const *artifacts; /* paths whose sha256 must each equal a subject's */
	size_t n_artifacts;
	const char *keyid; /* when set, the signature that verifies must carry this keyid */
};

/* Verifies envelope text: DSSE structure, payloadType, a signature by key over the PAE,
 * the Statement's _type, predicateType, subjects (against the report's chain and the
 * given artifacts) and that the report says certified. Fills *v (always); returns 0 (v says
 * the verdict) or -errno on an internal error. */
int pvg_attest_verify(const char *text, size_t len, const struct pvg_attest_verify_opts *opts,
		      struct pvg_attest_verification *v);
void pvg_attest_verification_clear(struct pvg_attest_verification *v);
cJSON *pvg_attest_verification_json(const struct pvg_attest_verification *v, const char *file);
