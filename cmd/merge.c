/* SPDX-License-Identifier: MIT */
/*
 * provgate merge: one verdict for every node of a job, from the per-node reports that
 * `srun --ntasks-per-node=1 provgate certify --out DIR/{node}.json` wrote. lib/core/cluster.c
 * decides; this file parses the flags and renders the verdict (text, JUnit; the cluster
 * report and its attestation).
 */
#include <getopt.h>

#include "cli.h"
#include "core/cluster.h"

/* Report text for the terminal (util/escape.h); NULL stays NULL. */
static char *clean_dup(const char *s)
{
	return s ? pvg_escape_term(s, strlen(s)) : NULL;
}

/* One testcase: name, and the problems order[0..n) of m (a failure when there are any). */
static void junit_case(FILE *f, const struct pvg_cluster *m, const char *name,
		       const size_t *order, size_t n)
{
	cli_junit_case(f, "provgate.cluster", name, -1);
	for (size_t j = 0; j < n; j++) {
		const struct pvg_cluster_problem *p = &m->problems[order[j]];
		if (j == 0)
			cli_junit_failure(f, p->code, p->message);
		cli_junit_line(f, p->code, p->message, NULL);
	}
	if (n)
		cli_junit_failure_end(f);
	cli_junit_case_end(f);
}

/* One testcase per expected node, and one per report that stands for no expected node (not
 * a report, or from a node outside the list). */
static char *cluster_junit(const struct pvg_cluster *m)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return pvg_strdup("");
	size_t tests = m->expected.n, failures = 0;
	for (size_t i = 0; i < m->expected.n; i++)
		failures += strcmp(pvg_cluster_node_status(m, i), "certified") != 0;
	for (size_t k = 0; k < m->n_problems; k++)
		if (m->problems[k].ix < 0)
			tests++, failures++;
	_cleanup_free_ char *suite = pvg_asprintf("provgate merge %s", m->nodes_spec);
	cli_junit_begin(f, "provgate.cluster", suite, (int)tests, (int)failures, 0);
	for (size_t i = 0; i < m->expected.n; i++)
		junit_case(f, m, m->expected.host[i], m->problems_of.order + m->problems_of.start[i],
			   m->problems_of.start[i + 1] - m->problems_of.start[i]);
	for (size_t k = 0; k < m->n_problems; k++) {
		const struct pvg_cluster_problem *p = &m->problems[k];
		if (p->ix >= 0)
			continue;
		_cleanup_free_ char *name = pvg_asprintf("report %s", p->report ? p->report : "?");
		junit_case(f, m, name, &k, 1);
	}
	return cli_junit_end(f, &buf);
}

static void print_table(FILE *f, const struct pvg_cluster *m, const struct cli_style *st,
			bool quiet)
{
	if (!quiet) {
		fprintf(f, "provgate merge: %zu node%s expected (", m->expected.n,
			m->expected.n == 1 ? "" : "s");
		pvg_fputs_term(m->nodes_spec, f);
		fprintf(f, ", from %s), %zu report%s read\n\n", m->nodes_source, m->n_reports,
			m->n_reports == 1 ? "" : "s");
		size_t w = 4;
		for (size_t i = 0; i < m->expected.n; i++)
			if (strlen(m->expected.host[i]) > w)
				w = strlen(m->expected.host[i]);
		fprintf(f, "  %-*s  %-9s  %-20s  %-12s  %-12s  %-12s  %-12s  %-12s  %s\n", (int)w,
			"NODE", "STATUS", "STARTED", "INSTALLED", "BUILD", "COMMIT", "CONFIG",
			"ARTIFACTS", "REPORT");
		for (size_t i = 0; i < m->expected.n; i++) {
			const char *status = pvg_cluster_node_status(m, i);
			const struct pvg_cluster_report *r =
				m->slot[i] >= 0 ? &m->reports[m->slot[i]] : NULL;
			_cleanup_free_ char *host = clean_dup(m->expected.host[i]);
			_cleanup_free_ char *at = clean_dup(r && r->started_at ? r->started_at : "-");
			fprintf(f, "  %-*s  %s%-9s%s  ", (int)w, host,
				strcmp(status, "certified") == 0 ? st->pass : st->fail, status,
				st->reset);
			fprintf(f, "%-20.20s", at);
			for (int k = 0; k < PVG_CLUSTER_ID__MAX; k++) {
				const char *v = r ? r->ident[k] : NULL;
				_cleanup_free_ char *c = clean_dup(v ? v : "-");
				fprintf(f, "  %-12.12s", c);
			}
			fputs("  ", f);
			if (r)
				pvg_fputs_term(r->path, f);
			else if (m->claims[i] > 1)
				fprintf(f, "%zu reports", m->claims[i]);
			else
				fputs("-", f);
			fputc('\n', f);
		}
		if (m->n_ignored)
			fprintf(f, "\n  ignored %zu cluster report%s found beside the node reports\n",
				m->n_ignored, m->n_ignored == 1 ? "" : "s");
		fputc('\n', f);
		for (size_t k = 0; k < m->n_problems; k++) {
			fprintf(f, "  %s%s%s ", st->fail, m->problems[k].code, st->reset);
			pvg_fputs_term(m->problems[k].message, f);
			fputc('\n', f);
		}
		if (m->n_problems)
			fputc('\n', f);
	}
	if (m->n_problems == 0) {
		/* the values the reports agree on are still the reports' text */
		_cleanup_free_ char *inst = clean_dup(m->agreed[PVG_CLUSTER_INSTALLED]),
				    *build = clean_dup(m->agreed[PVG_CLUSTER_BUILD]),
				    *commit = clean_dup(m->agreed[PVG_CLUSTER_COMMIT]),
				    *config = clean_dup(m->agreed[PVG_CLUSTER_CONFIG]);
		fprintf(f, "%sCLUSTER CERTIFIED%s: %zu node%s, installed %.12s, build %.12s, commit "
			   "%.12s, config %.12s, reports within %ld s\n",
			st->pass, st->reset, m->expected.n, m->expected.n == 1 ? "" : "s",
			inst ? inst : "(null)", build ? build : "(null)", commit ? commit : "(null)",
			config ? config : "(null)", (long)(m->last - m->first));
		return;
	}
	/* the nodes named, in list order */
	fprintf(f, "%sCLUSTER REFUSED%s: %zu problem%s", st->fail, st->reset, m->n_problems,
		m->n_problems == 1 ? "" : "s");
	const char *sep = " (";
	for (size_t i = 0; i < m->expected.n; i++)
		if (strcmp(pvg_cluster_node_status(m, i), "certified") != 0) {
			fputs(sep, f);
			pvg_fputs_term(m->expected.host[i], f);
			sep = ", ";
		}
	for (size_t k = 0; k < m->n_problems; k++)
		if (m->problems[k].node && m->problems[k].ix < 0) {
			fprintf(f, "%s", sep);
			pvg_fputs_term(m->problems[k].node, f);
			sep = ", ";
		}
	if (strcmp(sep, ", ") == 0)
		fputc(')', f);
	fputc('\n', f);
}

/* ---- the verb -------------------------------------------------------------------------- */

enum { OPT_NODES = 256, OPT_MAX_SKEW };

static void merge_help(FILE *f)
{
	fprintf(f,
		"Usage: provgate %s\n\n%s\n"
		"  REPORT...|DIR         node reports (provgate.report/1), or folders of *.json\n"
		"      --nodes LIST      the job's nodes, Slurm hostlist syntax: gpu[01-04,07],\n"
		"                        n[1-2], a,b (default $SLURM_JOB_NODELIST)\n"
		"      --max-skew SECS   reports must be made within SECS of each other (default %d)\n"
		"      --json FILE|-     write the cluster report (provgate.cluster/1); - for stdout\n"
		"      --out FILE        same as --json FILE\n"
		"      --junit FILE      write JUnit XML, one testcase per node\n"
		"      --attest FILE     write the cluster verdict as the predicate of an in-toto\n"
		"                        Statement (subjects: the agreed installed and build artifacts)\n"
		"      --sign-key KEY.pem  sign it (DSSE; Ed25519 or ECDSA P-256, mode 0600)\n"
		"  -q, --quiet           print only the verdict\n"
		"      --no-color        never colour (NO_COLOR does the same)\n"
		"Exit: 0 cluster certified, 1 refused, 2 usage error.\n",
		verb_merge.synopsis, verb_merge.help, PVG_CLUSTER_DEFAULT_MAX_SKEW);
}

static int merge_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nodes", required_argument, NULL, OPT_NODES },
		{ "max-skew", required_argument, NULL, OPT_MAX_SKEW },
		{ "json", required_argument, NULL, CLI_OPT_JSON },
		{ "out", required_argument, NULL, CLI_OPT_JSON },
		{ "junit", required_argument, NULL, CLI_OPT_JUNIT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-color", no_argument, NULL, CLI_OPT_NO_COLOR },
		{ "attest", required_argument, NULL, CLI_OPT_ATTEST },
		{ "sign-key", required_argument, NULL, CLI_OPT_SIGN_KEY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_(cli_outputs_done) struct cli_outputs o = { 0 };
	const char *nodes = NULL;
	long max_skew = PVG_CLUSTER_DEFAULT_MAX_SKEW;
	optind = 1;
	opterr = 1;
	int c;
	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_NODES:
			nodes = optarg;
			break;
		case OPT_MAX_SKEW: {
			char *end;
			errno = 0;
			max_skew = strtol(optarg, &end, 10);
			if (!optarg[0] || *end || errno || max_skew < 0 || max_skew > 86400 * 366) {
				fprintf(stderr, "provgate: merge: --max-skew: \"%s\" is not a number "
						"of seconds (0 to 31622400)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'h':
			merge_help(stdout);
			return EXIT_OK;
		default:
			if (cli_output_flag(c, optarg, &o))
				break;
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "provgate: merge: name the node reports (files or folders); try "
				"'provgate merge --help'\n");
		return EXIT_USAGE;
	}
	char json_buf[4096], junit_buf[4096], attest_buf[4096];
	if (cli_expand_path("--json", &o.json, json_buf, sizeof(json_buf)) ||
	    cli_expand_path("--junit", &o.junit, junit_buf, sizeof(junit_buf)) ||
	    cli_expand_path("--attest", &o.attest.path, attest_buf, sizeof(attest_buf)))
		return EXIT_USAGE;
	/* the key is read, and its file's mode checked, before any report is */
	int arc = cli_attest_open(&o.attest, o.json, o.junit);
	if (arc)
		return arc;
	const char *from = "--nodes";
	if (!nodes) {
		nodes = getenv("SLURM_JOB_NODELIST");
		from = "SLURM_JOB_NODELIST";
		if (!nodes || !nodes[0]) {
			fprintf(stderr, "provgate: merge: which nodes does the job have? Give --nodes "
					"LIST, or run inside the Slurm job (SLURM_JOB_NODELIST)\n");
			return EXIT_USAGE;
		}
	}
	struct pvg_error err = { { 0 } };
	struct pvg_cluster *m = NULL;
	int r = pvg_cluster_new(nodes, from, max_skew, &m, &err);
	if (r < 0) {
		fprintf(stderr, "provgate: merge: %s\n", err.message);
		return EXIT_USAGE;
	}
	const char *outs[3] = { o.json, o.junit, o.attest.path };
	for (int i = 0; i < 3; i++)
		pvg_cluster_add_output(m, outs[i]);
	for (int i = 0; i < 3; i++)
		if (outs[i] && (r = cli_check_writable(outs[i])) < 0) {
			fprintf(stderr, "provgate: merge: cannot write %s: %s\n", outs[i],
				strerror(-r));
			pvg_cluster_free(m);
			return EXIT_USAGE;
		}
	for (int i = optind; i < argc; i++) {
		r = pvg_cluster_add(m, argv[i], &err);
		if (r != 0) {
			/* it may quote a report another node wrote */
			fputs("provgate: merge: ", stderr);
			pvg_fputs_term(err.message, stderr);
			fputc('\n', stderr);
		}
		if (r < 0) {
			pvg_cluster_free(m);
			return EXIT_USAGE;
		}
	}
	int rc = pvg_cluster_decide(m) ? EXIT_NOT_CERTIFIED : EXIT_OK;

	struct cli_style st;
	FILE *f = cli_text_out(&o, &st);
	if (f) {
		print_table(f, m, &st, o.verbosity < 0);
		fflush(f);
	}
	/* one document for --json and --attest: the attestation's predicate is that file */
	_cleanup_json_ cJSON *rep = o.json || o.attest.path ? pvg_cluster_json(m) : NULL;
	_cleanup_free_ char *xml = o.junit ? cluster_junit(m) : NULL;
	rc = cli_write_outputs("provgate: merge", rc, rep, &o, xml);
	pvg_cluster_free(m);
	return rc;
}

const struct cli_verb verb_merge = {
	.name = "merge",
	.main = merge_main,
	.synopsis = "merge REPORT...|DIR [--nodes LIST] [--max-skew SECONDS] [--json FILE|-]\n"
		    "                 [--junit FILE] [--attest FILE [--sign-key KEY.pem]]",
	.help = "One verdict for every node of a job: certified only when every expected node has\n"
		"exactly one certified report, all nodes run the same installed artifact from the\n"
		"same build (artifact digest, source commit) under the same config, and the reports\n"
		"were made within --max-skew seconds. Every refusal names the node and the gate or\n"
		"field.\n",
};
