/* SPDX-License-Identifier: MIT */
/* provgate run / certify: evaluate the gates and render the verdict. */
#include <getopt.h>
#include <sys/stat.h>

#include "cli.h"
#include "run-opts.h"
#include "sys/node.h"

enum {
	OPT_PHASE = 256,
	OPT_GATES,
	OPT_KEEP_GOING,
	OPT_JSON,
	OPT_JUNIT,
	OPT_OUT,
	OPT_NO_COLOR,
	OPT_ATTEST,
	OPT_SIGN_KEY,
	OPT_OVERRIDE_BASE = 512,
};

/* Flags that set a config key; paths given here are relative to the working directory. */
static const struct {
	const char *flag;
	const char *key;
	const char *help;
} overrides[] = {
	{ "arch", "arch", "expected GPU architecture (gfx936, gfx90a:xnack-, sm_90)" },
	{ "name", "name", "experiment name for the report" },
	{ "build-log", "build.log", "build log to check (gate 1)" },
	{ "artifact", "build.artifact", "artifact the build produced" },
	{ "installed", "install.artifact", "installed artifact" },
	{ "python", "install.python", "interpreter that resolves install.python_module" },
	{ "repo", "source.repo", "git work tree (gate 2)" },
	{ "baseline", "source.baseline", "baseline ref (gate 2)" },
	{ "pid", "service.pid", "service process id (gates 4, 5, 7)" },
	{ "pidfile", "service.pidfile", "file holding the service's pid" },
	{ "port", "service.port", "port the service listens on (gate 5)" },
	{ "log", "markers.log", "service log with dispatch markers (gate 7)" },
};

void cli_run_opts_help(FILE *f, bool certify)
{
	fprintf(f, "  -c, --config FILE     config (default $PROVGATE_CONFIG, else ./provgate.json)\n");
	if (!certify)
		fprintf(f,
			"      --phase PHASE     install | prestart | live (default live)\n"
			"      --gates LIST      narrow the phase's gates: 1,3-4 or names (artifact-hash)\n");
	fprintf(f,
		"      --keep-going      evaluate every selected gate even after one fails\n"
		"      --json FILE|-     write the JSON report to FILE, or to stdout instead of text\n"
		"      --out FILE        same as --json FILE\n"
		"      --junit FILE|-    write a JUnit XML report (one testcase per gate); with -\n"
		"                        to stdout, and the text to stderr\n"
		"      --attest FILE     write the report as the predicate of an in-toto Statement\n"
		"                        v1; unsigned unless --sign-key is given\n"
		"                        (in each FILE, {node} {host} {job} name this node of a job:\n"
		"                        --out 'reports/{node}.json' under srun)\n"
		"      --sign-key KEY    sign it in a DSSE envelope with this Ed25519 or ECDSA P-256\n"
		"                        PEM private key, readable by its owner only\n"
		"  -q, --quiet           print only the verdict\n"
		"  -v, --verbose         print each gate's evidence too\n"
		"      --no-color        never colour (NO_COLOR in the environment does the same)\n"
		"Config overrides:\n");
	for (size_t i = 0; i < ARRAY_SIZE(overrides); i++)
		fprintf(f, "      --%-12s V   %s (%s)\n", overrides[i].flag, overrides[i].help,
			overrides[i].key);
}

int cli_parse_run_opts(int argc, char **argv, struct run_opts *o, bool certify)
{
	static struct option base[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "phase", required_argument, NULL, OPT_PHASE },
		{ "gates", required_argument, NULL, OPT_GATES },
		{ "keep-going", no_argument, NULL, OPT_KEEP_GOING },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "junit", required_argument, NULL, OPT_JUNIT },
		{ "out", required_argument, NULL, OPT_OUT },
		{ "attest", required_argument, NULL, OPT_ATTEST },
		{ "sign-key", required_argument, NULL, OPT_SIGN_KEY },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no-color", no_argument, NULL, OPT_NO_COLOR },
		{ "help", no_argument, NULL, 'h' },
	};
	struct option longopts[ARRAY_SIZE(base) + ARRAY_SIZE(overrides) + 1];
	memcpy(longopts, base, sizeof(base));
	for (size_t i = 0; i < ARRAY_SIZE(overrides); i++)
		longopts[ARRAY_SIZE(base) + i] = (struct option){ overrides[i].flag,
								  required_argument, NULL,
								  OPT_OVERRIDE_BASE + (int)i };
	memset(&longopts[ARRAY_SIZE(longopts) - 1], 0, sizeof(struct option));

	memset(o, 0, sizeof(*o));
	o->phase = PVG_PHASE_LIVE;
	bool phase_given = false;
	optind = 1;
	opterr = 1;
	int c;
	/* "+" stops at the first non-option, so exec's "-- CMD" stays intact. */
	while ((c = getopt_long(argc, argv, "+c:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case OPT_PHASE:
			if (pvg_phase_from_name(optarg, &o->phase) < 0) {
				fprintf(stderr,
					"provgate: --phase: \"%s\" is not a phase (install, prestart, "
					"live)\n",
					optarg);
				return EXIT_USAGE;
			}
			phase_given = true;
			break;
		case OPT_GATES:
			if (cli_parse_gates(optarg, &o->gates) < 0)
				return EXIT_USAGE;
			break;
		case OPT_KEEP_GOING:
			o->keep_going = true;
			break;
		case OPT_JSON:
		case OPT_OUT:
			if (o->json && strcmp(o->json, optarg) != 0) {
				fprintf(stderr, "provgate: --json/--out given twice\n");
				return EXIT_USAGE;
			}
			o->json = optarg;
			break;
		case OPT_JUNIT:
			o->junit = optarg;
			break;
		case OPT_ATTEST:
			o->attest.path = optarg;
			break;
		case OPT_SIGN_KEY:
			o->attest.key_path = optarg;
			break;
		case 'q':
			o->verbosity = -1;
			break;
		case 'v':
			o->verbosity = 1;
			break;
		case OPT_NO_COLOR:
			o->no_color = true;
			break;
		case 'h':
			o->help = true;
			return EXIT_OK;
		default:
			if (c >= OPT_OVERRIDE_BASE &&
			    c < OPT_OVERRIDE_BASE + (int)ARRAY_SIZE(overrides)) {
				if (o->n_overrides == ARRAY_SIZE(o->override_key))
					return EXIT_USAGE;
				o->override_key[o->n_overrides] = overrides[c - OPT_OVERRIDE_BASE].key;
				o->override_value[o->n_overrides++] = optarg;
				break;
			}
			return EXIT_USAGE; /* getopt printed why */
		}
	}
	o->rest = argv + optind;
	o->n_rest = argc - optind;
	if (cli_expand_path("--json/--out", &o->json, o->json_buf, sizeof(o->json_buf)) ||
	    cli_expand_path("--junit", &o->junit, o->junit_buf, sizeof(o->junit_buf)) ||
	    cli_expand_path("--attest", &o->attest.path, o->attest_buf, sizeof(o->attest_buf)))
		return EXIT_USAGE;
	if (certify && (phase_given || o->gates)) {
		if (!(o->phase == PVG_PHASE_LIVE && (!o->gates || o->gates == PVG_ALL_GATES))) {
			fprintf(stderr, "provgate: certify always evaluates all seven gates in phase "
					"live; use 'provgate run' for --phase/--gates\n");
			return EXIT_USAGE;
		}
	}
	if (o->gates && !(o->gates & pvg_phase_gates(o->phase))) {
		fprintf(stderr, "provgate: --gates selects no gate of phase %s (it has gates",
			pvg_phase_name(o->phase));
		for (int i = 1; i <= PVG_N_GATES; i++)
			if (pvg_phase_gates(o->phase) & PVG_GATE_BIT(i))
				fprintf(stderr, " %d", i);
		fprintf(stderr, ")\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int cli_expand_path(const char *flag, const char **path, char *buf, size_t size)
{
	if (!*path || !pvg_placeholder_present(*path))
		return EXIT_OK;
	struct pvg_node node;
	struct pvg_placeholder ph[PVG_NODE_PLACEHOLDERS];
	char why[300];
	int r = pvg_node_get(&node, why, sizeof(why));
	pvg_node_placeholders(&node, ph);
	if (r < 0) {
		ph[0].value = NULL;
		ph[0].unset = why;
	}
	_cleanup_free_ char *out = NULL;
	if (pvg_placeholder_expand(*path, ph, PVG_NODE_PLACEHOLDERS, &out, why, sizeof(why)) < 0) {
		_cleanup_free_ char *cw = pvg_utf8_sanitize(why, strlen(why));
		fprintf(stderr, "provgate: %s: %s\n", flag, cw);
		return EXIT_USAGE;
	}
	if (!out[0] || strlen(out) >= size) {
		fprintf(stderr, "provgate: %s: the path is %s once its placeholders are replaced\n",
			flag, out[0] ? "too long" : "empty");
		return EXIT_USAGE;
	}
	memcpy(buf, out, strlen(out) + 1);
	*path = buf;
	return EXIT_OK;
}

int cli_open_config(const struct run_opts *o, struct pvg_config **cfg)
{
	int rc = cli_load_config(o->config, cfg);
	if (rc)
		return rc;
	for (size_t i = 0; i < o->n_overrides; i++) {
		struct pvg_error err = { { 0 } };
		if (pvg_config_override(*cfg, o->override_key[i], o->override_value[i], &err) < 0) {
			fprintf(stderr, "provgate: %s\n", err.message);
			pvg_config_free(*cfg);
			*cfg = NULL;
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

void cli_add_outputs(const struct run_opts *o, struct pvg_run *run)
{
	pvg_run_add_output(run, o->json);
	pvg_run_add_output(run, o->junit);
	pvg_run_add_output(run, o->attest.path);
}

int cli_emit(const struct run_opts *o, const struct pvg_run *run, bool certify)
{
	bool json_stdout = o->json && strcmp(o->json, "-") == 0;
	if (!json_stdout) {
		/* --junit -: stdout holds the XML alone, the text goes to stderr */
		FILE *f = o->junit && strcmp(o->junit, "-") == 0 ? stderr : stdout;
		struct cli_style st;
		cli_style_init(&st, f, o->no_color);
		cli_print_run(f, run, certify, o->verbosity, &st);
		fflush(f);
	}
	int rc = cli_write_reports(o->json, o->junit, run);
	int arc = cli_write_run_attestation(&o->attest, run);
	return rc ? rc : arc;
}

void cli_run_opts_done(struct run_opts *o)
{
	cli_attest_close(&o->attest);
}

static int run_or_certify(int argc, char **argv, bool certify)
{
	_cleanup_(cli_run_opts_done) struct run_opts o = { 0 };
	int rc = cli_parse_run_opts(argc, argv, &o, certify);
	if (rc || o.help) {
		if (o.help) {
			printf("Usage: provgate %s\n\n%s\n", certify ? verb_certify.synopsis
								: verb_run.synopsis,
			       certify ? verb_certify.help : verb_run.help);
			cli_run_opts_help(stdout, certify);
		}
		return rc;
	}
	if (o.n_rest > 0) {
		fprintf(stderr, "provgate: unexpected argument \"%s\"\n", o.rest[0]);
		return EXIT_USAGE;
	}
	rc = cli_attest_open(&o.attest, o.json, o.junit);
	if (rc)
		return rc;
	struct pvg_config *cfg = NULL;
	rc = cli_open_config(&o, &cfg);
	if (rc)
		return rc;
	pvg_hash_set_progress(cli_progress);
	struct pvg_run *run = pvg_run_new(cfg, certify ? PVG_PHASE_LIVE : o.phase,
					  certify ? 0 : o.gates, o.keep_going);
	cli_add_outputs(&o, run);
	int r = pvg_run_execute(run);
	pvg_hash_set_progress(NULL);
	if (r < 0) {
		fprintf(stderr, "provgate: internal error: %s\n", strerror(-r));
		rc = EXIT_INTERNAL;
	} else {
		int erc = cli_emit(&o, run, certify);
		if (certify)
			rc = pvg_run_certified(run) ? EXIT_OK : EXIT_NOT_CERTIFIED;
		else
			rc = r == 0 ? EXIT_OK : EXIT_NOT_CERTIFIED;
		if (erc)
			rc = erc;
	}
	pvg_run_free(run);
	pvg_config_free(cfg);
	return rc;
}

static int run_main(int argc, char **argv)
{
	return run_or_certify(argc, argv, false);
}

static int certify_main(int argc, char **argv)
{
	return run_or_certify(argc, argv, true);
}

const struct cli_verb verb_run = {
	.name = "run",
	.main = run_main,
	.synopsis = "run [-c FILE] [--phase install|prestart|live] [--gates 1,3-4] [--keep-going]\n"
		    "                 [--json FILE|-] [--junit FILE] [--attest FILE [--sign-key KEY.pem]]\n"
		    "                 [-q|-v]",
	.help = "Evaluates the phase's gates in order (default phase live: all seven) and stops at\n"
		"the first that does not pass; later ones are reported blocked. Exit 0 when every\n"
		"selected gate passed. --attest writes the report as an in-toto Statement (signed\n"
		"with --sign-key; check it with provgate verify-attestation).\n",
};

const struct cli_verb verb_certify = {
	.name = "certify",
	.main = certify_main,
	.synopsis = "certify [-c FILE] [--keep-going] [--json FILE|-] [--out FILE] [--junit FILE]\n"
		    "                 [--attest FILE [--sign-key KEY.pem]] [-q|-v]",
	.help = "Evaluates all seven gates in phase live. Exit 0 only when the benchmark is\n"
		"certified: every link from source to dispatched kernel closed. --attest FILE\n"
		"--sign-key KEY.pem writes a signed in-toto attestation of the report that\n"
		"provgate verify-attestation (or any DSSE verifier) checks.\n",
};
