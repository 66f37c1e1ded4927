/* SPDX-License-Identifier: MIT */
/* provgate compare BASELINE.json CANDIDATE.json: the A/B certificate (lib/core/compare.c
 * decides; this file reads the reports and renders the verdict). */
#include <getopt.h>

#include "cli.h"
#include "core/compare.h"
#include "core/report-read.h"

#define REPORT_MAX (512u << 20)
#define MAX_DECLARED 64
#define CELL 44 /* widest value shown in the table; --json has them whole */

struct side_input {
	cJSON *report;
	char *why;
	char sha256[65]; /* of the bytes read ("" when none were) */
};

/* Reads and parses one report. EXIT_USAGE when the file cannot be read at all; content that
 * is not a report is left for the comparison to refuse (in->report NULL, in->why). */
static int load(const char *path, struct side_input *in)
{
	struct pvg_report_file f;
	int r = pvg_report_read(path, REPORT_MAX, true, &f);
	if (r == -EFBIG) {
		in->why = pvg_asprintf("larger than %u MiB: not a provgate report", REPORT_MAX >> 20);
		return 0;
	}
	if (r < 0) {
		fprintf(stderr, "provgate compare: cannot read %s: %s\n", path, strerror(-r));
		return EXIT_USAGE;
	}
	memcpy(in->sha256, f.sha256, sizeof(in->sha256));
	if (f.bad == PVG_REPORT_EMPTY)
		in->why = pvg_strdup("empty file");
	else if (f.bad == PVG_REPORT_TRUNCATED)
		in->why = pvg_asprintf("not valid JSON: it ends early at byte %zu (truncated?)",
				       f.len);
	else if (f.bad == PVG_REPORT_MALFORMED || f.bad == PVG_REPORT_NUL)
		in->why = pvg_asprintf("not valid JSON at byte %zu", f.at);
	else if (f.bad == PVG_REPORT_NOT_OBJECT)
		in->why = pvg_strdup("JSON, but not an object: not a provgate report");
	else
		in->report = TAKE_PTR(f.root); /* content after the object: as before, read */
	pvg_report_file_clear(&f);
	return 0;
}

/* The reports' text is another node's: escaped for the terminal (util/escape.h). */
static char *term(const char *s)
{
	return pvg_escape_term(s ? s : "?", s ? strlen(s) : 1);
}

static void cell(FILE *f, const char *raw, int width)
{
	_cleanup_free_ char *s = term(raw ? raw : "(absent)");
	size_t n = strlen(s);
	if (n <= CELL) {
		fprintf(f, "%-*s", width, s);
		return;
	}
	/* the end of a long value tells more (a build-id's tail, a path's file name); the cut
	 * starts at a character, never inside one */
	const char *tail = s + n - (CELL - 3);
	while ((*tail & 0xc0) == 0x80)
		tail++;
	fprintf(f, "...%-*s", width - 3, tail);
}

static void print_text(FILE *f, const struct pvg_compare *c, const char *const *declared,
		       size_t n_declared, int verbosity, const struct cli_style *st)
{
	if (verbosity >= 0) {
		_cleanup_free_ char *bp = term(c->baseline.path), *bn = term(c->baseline.name),
				    *cp = term(c->candidate.path), *cn = term(c->candidate.name);
		fprintf(f, "%sprovgate compare%s: baseline %s (%s) vs candidate %s (%s)\n", st->bold,
			st->reset, bp, bn, cp, cn);
		size_t shown = 0, equal = 0, wname = 5;
		for (size_t i = 0; i < c->n_fields; i++) {
			const struct pvg_compare_field *fl = &c->fields[i];
			bool quiet = fl->verdict == PVG_FIELD_EQUAL || fl->verdict == PVG_FIELD_EQUAL_WEAK;
			if (quiet && verbosity < 1)
				continue;
			size_t n = strlen(fl->name);
			wname = n > wname ? n : wname;
		}
		if (wname > 60)
			wname = 60;
		for (size_t i = 0; i < c->n_fields; i++) {
			const struct pvg_compare_field *fl = &c->fields[i];
			bool quiet = fl->verdict == PVG_FIELD_EQUAL || fl->verdict == PVG_FIELD_EQUAL_WEAK;
			if (quiet)
				equal++;
			if (quiet && verbosity < 1)
				continue;
			if (!shown++)
				fprintf(f, "  %-*s  %-*s  %-*s  %s\n", (int)wname, "field", CELL,
					"baseline", CELL, "candidate", "verdict");
			const char *col = fl->verdict == PVG_FIELD_DECLARED ? st->pass
					  : quiet			     ? st->dim
									     : st->fail;
			_cleanup_free_ char *name = term(fl->name);
			fprintf(f, "  %-*s  ", (int)wname, name);
			cell(f, fl->baseline_unreadable ? "(unreadable)" : fl->baseline, CELL);
			fputs("  ", f);
			cell(f, fl->candidate_unreadable ? "(unreadable)" : fl->candidate, CELL);
			fprintf(f, "  %s%s%s\n", col, pvg_field_verdict_name(fl->verdict), st->reset);
		}
		if (c->n_fields)
			fprintf(f, "  %s%zu of %zu fields equal%s%s\n", st->dim, equal, c->n_fields,
				verbosity < 1 && equal ? " (-v lists them)" : "", st->reset);
		if (c->n_weak)
			fprintf(f, "  %s%s%zu shared object%s without a build-id compared by size only\n",
				st->warn, st->reset, c->n_weak, c->n_weak == 1 ? "" : "s");
		for (size_t i = 0; i < c->n_problems; i++) {
			fprintf(f, "  %s%s%s: ", st->fail, c->problems[i].code, st->reset);
			pvg_fputs_term(c->problems[i].message, f);
			fputc('\n', f);
			if (c->problems[i].hint) {
				fprintf(f, "    %shint: ", st->dim);
				pvg_fputs_term(c->problems[i].hint, f);
				fprintf(f, "%s\n", st->reset);
			}
		}
	}
	if (c->like_for_like) {
		fprintf(f, "%sLIKE FOR LIKE%s: both certified, different service processes; they "
			   "differ only in",
			st->pass, st->reset);
		for (size_t d = 0; d < n_declared; d++) {
			fprintf(f, "%s ", d ? "," : "");
			pvg_fputs_term(declared[d], f);
		}
		fputc('\n', f);
	} else {
		fprintf(f, "%sREFUSED%s: not an A/B pair (%zu problem%s:", st->fail, st->reset,
			c->n_problems, c->n_problems == 1 ? "" : "s");
		/* each code once */
		for (size_t i = 0; i < c->n_problems; i++) {
			bool seen = false;
			for (size_t k = 0; k < i; k++)
				seen |= strcmp(c->problems[k].code, c->problems[i].code) == 0;
			if (!seen)
				fprintf(f, " %s", c->problems[i].code);
		}
		fputs(")\n", f);
	}
}

/* JUnit: one testcase per condition of the certificate, failed by the problems of its kind. */
static const struct {
	const char *name;
	const char *codes[8];
} junit_cases[] = {
	{ "both reports certified",
	  { "compare.bad-report", "compare.no-environment", "compare.not-certified",
	    "compare.exec-unfinished", "compare.exec-failed", "compare.no-service" } },
	{ "different service processes", { "compare.same-process" } },
	{ "declared differences really differ",
	  { "compare.declared-equal", "compare.declared-unknown" } },
	{ "every field readable", { "compare.unreadable" } },
	{ "environment equal except declared", { NULL } }, /* every other code */
};

static int junit_case_of(const char *code)
{
	for (size_t i = 0; i < ARRAY_SIZE(junit_cases); i++)
		for (size_t k = 0; junit_cases[i].codes[k]; k++)
			if (strcmp(junit_cases[i].codes[k], code) == 0)
				return (int)i;
	return (int)ARRAY_SIZE(junit_cases) - 1;
}

static char *junit(const struct pvg_compare *c)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return pvg_strdup("");
	int fails = 0, n = (int)ARRAY_SIZE(junit_cases);
	for (int i = 0; i < n; i++)
		for (size_t p = 0; p < c->n_problems; p++)
			if (junit_case_of(c->problems[p].code) == i) {
				fails++;
				break;
			}
	cli_junit_begin(f, "provgate compare", "provgate compare", n, fails, 0);
	for (int i = 0; i < n; i++) {
		cli_junit_case(f, "provgate.compare", junit_cases[i].name, -1);
		bool failed = false;
		for (size_t p = 0; p < c->n_problems; p++) {
			if (junit_case_of(c->problems[p].code) != i)
				continue;
			if (!failed)
				cli_junit_failure(f, "refused", c->problems[p].message);
			failed = true;
			cli_junit_line(f, c->problems[p].code, c->problems[p].message, NULL);
		}
		if (failed)
			cli_junit_failure_end(f);
		cli_junit_case_end(f);
	}
	return cli_junit_end(f, &buf);
}

static void help(FILE *f)
{
	fprintf(f, "Usage: provgate %s\n\n%s\n", verb_compare.synopsis, verb_compare.help);
	fprintf(f,
		"  -d, --differ FIELD    a declared difference: a field name (fact.block size,\n"
		"                        service.env.VLLM_ATTENTION_BACKEND) or a pattern\n"
		"                        ('service.shared_objects.*/_C.abi3.so'); repeatable\n"
		"      --json FILE|-     write the provgate.compare/1 document (- : stdout, no text)\n"
		"      --junit FILE      write a JUnit XML file (one testcase per condition)\n"
		"      --attest FILE     write the comparison as the predicate of an in-toto\n"
		"                        Statement whose subjects are the two report files\n"
		"      --sign-key KEY.pem  sign it (DSSE; Ed25519 or ECDSA P-256, mode 0600)\n"
		"  -q, --quiet           print only the verdict\n"
		"  -v, --verbose         list every field, equal ones too\n"
		"      --no-color        never colour (NO_COLOR does the same)\n");
}

static int compare_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "differ", required_argument, NULL, 'd' },
		{ "json", required_argument, NULL, CLI_OPT_JSON },
		{ "junit", required_argument, NULL, CLI_OPT_JUNIT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no-color", no_argument, NULL, CLI_OPT_NO_COLOR },
		{ "attest", required_argument, NULL, CLI_OPT_ATTEST },
		{ "sign-key", required_argument, NULL, CLI_OPT_SIGN_KEY },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	_cleanup_(cli_outputs_done) struct cli_outputs o = { 0 };
	const char *declared[MAX_DECLARED];
	size_t n_declared = 0;
	optind = 1;
	opterr = 1;
	int c;
	while ((c = getopt_long(argc, argv, "d:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!optarg[0]) {
				fprintf(stderr, "provgate compare: --differ: empty field name\n");
				return EXIT_USAGE;
			}
			if (n_declared == MAX_DECLARED) {
				fprintf(stderr, "provgate compare: more than %d --differ\n", MAX_DECLARED);
				return EXIT_USAGE;
			}
			declared[n_declared++] = optarg;
			break;
		case 'h':
			help(stdout);
			return EXIT_OK;
		default:
			if (cli_output_flag(c, optarg, &o))
				break;
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "provgate compare: expected BASELINE.json CANDIDATE.json, got %d "
				"argument%s; try 'provgate compare --help'\n",
			argc - optind, argc - optind == 1 ? "" : "s");
		return EXIT_USAGE;
	}
	/* the key is read, and its file's mode checked, before anything is compared */
	int arc = cli_attest_open(&o.attest, o.json, o.junit);
	if (arc)
		return arc;
	const char *bpath = argv[optind], *cpath = argv[optind + 1];
	struct side_input b = { 0 }, k = { 0 };
	int rc = load(bpath, &b);
	if (!rc)
		rc = load(cpath, &k);
	if (rc) {
		cJSON_Delete(b.report);
		free(b.why);
		return rc;
	}
	struct pvg_compare_input bi = { bpath, b.report, b.why, b.sha256[0] ? b.sha256 : NULL },
				 ki = { cpath, k.report, k.why, k.sha256[0] ? k.sha256 : NULL };
	struct pvg_compare cmp;
	pvg_compare_reports(&bi, &ki, declared, n_declared, &cmp);

	struct cli_style st;
	FILE *f = cli_text_out(&o, &st);
	if (f) {
		print_text(f, &cmp, declared, n_declared, o.verbosity, &st);
		fflush(f);
	}
	rc = cmp.like_for_like ? EXIT_OK : EXIT_NOT_CERTIFIED;
	_cleanup_json_ cJSON *doc =
		o.json || o.attest.path ? pvg_compare_json(&cmp, declared, n_declared) : NULL;
	_cleanup_free_ char *xml = o.junit ? junit(&cmp) : NULL;
	rc = cli_write_outputs("provgate compare", rc, doc, &o, xml);
	pvg_compare_clear(&cmp);
	cJSON_Delete(b.report);
	cJSON_Delete(k.report);
	free(b.why);
	free(k.why);
	return rc;
}

const struct cli_verb verb_compare = {
	.name = "compare",
	.main = compare_main,
	.synopsis = "compare BASELINE.json CANDIDATE.json [--differ FIELD]... [--json FILE|-]\n"
		    "                 [--junit FILE] [--attest FILE [--sign-key KEY.pem]] [-q|-v]",
	.help = "An A/B certificate: exit 0 only when both reports are certified (an exec report:\n"
		"finished, after-check passed, command exit 0), they come from two different\n"
		"service processes, every field of their environments (host, GPU driver and GPUs,\n"
		"the service's command line, kernel-steering variables, namespaces, cgroup,\n"
		"devices, profilers, shared objects by build-id, benchmark inputs by sha256, the\n"
		"benchmark command) and gate 7's facts is equal except the declared differences,\n"
		"and each declared difference really differs. Exit 1 refused, 2 usage.\n",
};
