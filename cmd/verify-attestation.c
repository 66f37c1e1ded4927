/* SPDX-License-Identifier: MIT */
/* provgate verify-attestation FILE --key PUB.pem: a signed in-toto Statement of a report. */
#include <getopt.h>

#include "cli.h"

enum { OPT_KEY = 256, OPT_ARTIFACT, OPT_KEYID };

static void line(FILE *f, const struct cli_style *st, const char *label, const char *fmt, ...)
	PVG_PRINTF(4, 5);
static void line(FILE *f, const struct cli_style *st, const char *label, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *text = pvg_vasprintf(fmt, ap);
	va_end(ap);
	fprintf(f, "  %s%-11s%s ", st->dim, label, st->reset);
	pvg_fputs_term(text, f);
	fputc('\n', f);
}

static void print_text(FILE *f, const struct pvg_attest_verification *v, const char *file,
		       const struct pvg_key *key, int verbosity, const struct cli_style *st)
{
	if (verbosity >= 0) {
		fprintf(f, "%sprovgate %s%s · verify-attestation ", st->bold, pvg_version(), st->reset);
		pvg_fputs_term(file, f);
		fputc('\n', f);
		if (v->payload_type)
			line(f, st, "envelope", "DSSE, payloadType %s, %zu signature%s", v->payload_type,
			     v->n_signatures, v->n_signatures == 1 ? "" : "s");
		if (v->signed_by >= 0)
			line(f, st, "signed by", "%s key %s (signature %d)", pvg_key_type_name(key),
			     v->keyid, v->signed_by + 1);
		if (v->statement_type)
			line(f, st, "statement", "%s", v->statement_type);
		if (v->predicate_type)
			line(f, st, "predicate", "%s", v->predicate_type);
		if (v->certified >= 0)
			line(f, st, "report", "%s, started %s: %s",
			     v->report_name ? v->report_name : "(no name)",
			     v->report_started_at ? v->report_started_at : "?",
			     v->certified ? "certified" : "NOT certified");
		const cJSON *s;
		cJSON_ArrayForEach(s, v->subjects)
		{
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "name");
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(s, "digest"), "sha256");
			line(f, st, "subject", "%s sha256 %s", cJSON_IsString(n) ? n->valuestring : "?",
			     cJSON_IsString(d) ? d->valuestring : "?");
		}
		for (size_t i = 0; i < v->n_artifacts; i++) {
			const struct pvg_attest_artifact *a = &v->artifacts[i];
			if (a->subject)
				line(f, st, "artifact", "%s sha256 %s = subject %s", a->path, a->sha256,
				     a->subject);
			else if (a->sha256[0])
				line(f, st, "artifact", "%s sha256 %s: no subject has it", a->path,
				     a->sha256);
			else
				line(f, st, "artifact", "%s: %s", a->path, a->err ? a->err : "unreadable");
		}
		for (size_t i = 0; i < v->n_problems; i++) {
			fprintf(f, "  %s%s%s: ", st->bold, v->problems[i].code, st->reset);
			pvg_fputs_term(v->problems[i].message, f);
			fputc('\n', f);
		}
	}
	if (v->verified) {
		fprintf(f, "%sVERIFIED%s: signed by keyid %.16s…, certified, %d subject%s", st->pass,
			st->reset, v->keyid, cJSON_GetArraySize(v->subjects),
			cJSON_GetArraySize(v->subjects) == 1 ? "" : "s");
		if (v->n_artifacts)
			fprintf(f, ", %zu artifact%s matched", v->n_artifacts,
				v->n_artifacts == 1 ? "" : "s");
		fputc('\n', f);
	} else {
		fprintf(f, "%sNOT VERIFIED%s: ", st->fail, st->reset);
		pvg_fputs_term(v->n_problems ? v->problems[0].message : "no verdict", f);
		fputc('\n', f);
	}
}

static void help(FILE *f)
{
	fprintf(f,
		"Usage: provgate %s\n\n%s\n"
		"      --key PUB.pem     the signer's public key (Ed25519 or ECDSA P-256, PEM)\n"
		"      --artifact PATH   a file whose sha256 must equal a subject's (repeatable)\n"
		"      --keyid ID        also require the signature that verifies to carry keyid ID\n"
		"      --json FILE|-     write the verification as JSON (provgate.attestation-verify/1)\n"
		"  -q, --quiet           print only the verdict\n"
		"      --no-color        never colour\n",
		verb_verify_attestation.synopsis, verb_verify_attestation.help);
}

static int verify_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "key", required_argument, NULL, OPT_KEY },
		{ "artifact", required_argument, NULL, OPT_ARTIFACT },
		{ "keyid", required_argument, NULL, OPT_KEYID },
		{ "json", required_argument, NULL, CLI_OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-color", no_argument, NULL, CLI_OPT_NO_COLOR },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cli_outputs out = { 0 };
	const char *key_path = NULL, *keyid = NULL;
	_cleanup_free_ const char **artifacts = pvg_xcalloc((size_t)argc + 1, sizeof(char *));
	size_t n_artifacts = 0;
	int c;
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_KEY:
			key_path = optarg;
			break;
		case OPT_ARTIFACT:
			artifacts[n_artifacts++] = optarg;
			break;
		case OPT_KEYID:
			keyid = optarg;
			break;
		case 'h':
			help(stdout);
			return EXIT_OK;
		default:
			if (cli_output_flag(c, optarg, &out))
				break;
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "provgate verify-attestation: %s; usage: provgate %s\n",
			optind == argc ? "no attestation FILE" : "one attestation FILE at a time",
			verb_verify_attestation.synopsis);
		return EXIT_USAGE;
	}
	const char *file = argv[optind];
	if (!key_path) {
		fprintf(stderr, "provgate verify-attestation: --key PUB.pem is required: an "
				"attestation is only worth the key that signed it\n");
		return EXIT_USAGE;
	}
	struct pvg_key *key = NULL;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	int r = pvg_key_load_public(key_path, &key, &why);
	if (r < 0) {
		fprintf(stderr, "provgate verify-attestation: --key %s: %s\n", key_path,
			why.text ? why.text : strerror(-r));
		return EXIT_USAGE;
	}
	_cleanup_(pvg_key_freep) struct pvg_key *key_owned = key;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	r = pvg_read_file(file, PVG_DSSE_MAX_BYTES + 1, &text, &len);
	if (r == -EFBIG) {
		/* refused by size, unread: the verification says so like any bad envelope */
		text = pvg_strdup("");
		len = PVG_DSSE_MAX_BYTES + 1;
		r = 0;
	}
	if (r < 0) {
		fprintf(stderr, "provgate verify-attestation: cannot read %s: %s\n", file,
			r == -EINVAL ? "not a regular file" : strerror(-r));
		return EXIT_USAGE;
	}
	struct pvg_attest_verify_opts o = { .key = key, .artifacts = artifacts,
					    .n_artifacts = n_artifacts, .keyid = keyid };
	struct pvg_attest_verification v;
	r = pvg_attest_verify(text, len, &o, &v);
	if (r < 0) {
		fprintf(stderr, "provgate verify-attestation: internal error: %s\n", strerror(-r));
		pvg_attest_verification_clear(&v);
		return EXIT_INTERNAL;
	}
	int rc = v.verified ? EXIT_OK : EXIT_NOT_CERTIFIED;
	struct cli_style st;
	FILE *f = cli_text_out(&out, &st);
	if (f) {
		print_text(f, &v, file, key, out.verbosity, &st);
		fflush(f);
	}
	_cleanup_json_ cJSON *j = out.json ? pvg_attest_verification_json(&v, file) : NULL;
	rc = cli_write_outputs("provgate verify-attestation", rc, j, &out, NULL);
	pvg_attest_verification_clear(&v);
	return rc;
}

const struct cli_verb verb_verify_attestation = {
	.name = "verify-attestation",
	.main = verify_main,
	.synopsis = "verify-attestation FILE --key PUB.pem [--artifact PATH]... [--keyid ID]\n"
		    "                 [--json FILE|-] [-q]",
	.help = "Verifies an attestation written by --attest with --sign-key: a DSSE envelope\n"
		"(payloadType application/vnd.in-toto+json) whose signature verifies with PUB.pem\n"
		"over the DSSE PAE, holding an in-toto Statement v1 whose predicateType is\n"
		"https://provgate.dev/attestation/report/v1, whose subjects are the artifacts of\n"
		"its report's chain, and whose report says certified; with --artifact, each file's\n"
		"sha256 must equal a subject's. Which signature verifies does not depend on its\n"
		"keyid unless --keyid is given. Exit 0 verified, 1 not verified, 2 usage (missing\n"
		"or unreadable FILE or key).\n",
};
