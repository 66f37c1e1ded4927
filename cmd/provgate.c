/* SPDX-License-Identifier: MIT */
/* provgate: the command. Dispatches to verbs; each verb lives in its own file under cmd/. */
#include <signal.h>

#include "cli.h"

static const struct cli_verb *const verbs[] = {
	&verb_run, &verb_certify, &verb_exec, &verb_inspect, &verb_maps,
	&verb_merge,
	&verb_verify_attestation,
	&verb_compare,
	&verb_init,
};

static void usage(FILE *f)
{
	fprintf(f,
		"provgate %s: proves that the GPU kernel a benchmark runs is the one you built.\n"
		"\n"
		"Start here, with your service running and your build log kept:\n"
		"  1. provgate init          writes ./provgate.json from what it finds; prints TODOs\n"
		"  2. $EDITOR provgate.json  fill in the TODOs (also at the top of the file)\n"
		"  3. provgate certify       exit 0 only when every link from source to kernel closed\n"
		"\n"
		"Usage:\n",
		pvg_version());
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		fprintf(f, "  provgate %s\n", verbs[i]->synopsis);
	fprintf(f,
		"  provgate --help | --version\n"
		"\n"
		"Gates, in order: 1 build-log, 2 install-scope, 3 artifact-hash, 4 process-maps,\n"
		"5 stale-service, 6 code-object, 7 dispatch-marker. Gate 5 also refuses a profiled\n"
		"service (a profiler attached, torch-profiler traces; service.allow_profiler);\n"
		"gate 7's witness counts launches by the code they ran and requires the changed\n"
		"sources' own kernels (witness.changed_sources).\n"
		"Exit: 0 every selected gate passed (certify: certified), 1 not certified,\n"
		"2 usage or configuration error, 3 internal error.\n"
		"\n"
		"'provgate VERB --help' describes a verb; man provgate(1), provgate.json(5) and\n"
		"provgate-attestation(7).\n");
}

struct sigaction cli_sigpipe_inherited;

int main(int argc, char **argv)
{
	if (cli_bundle_start) {
		int r = cli_bundle_start();
		if (r)
			return r;
	}
	/* A reader that goes away (provgate certify | head) must not kill provgate before the
	 * report files are written: stdout then fails with EPIPE instead. exec gives its
	 * command the disposition provgate inherited. */
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &cli_sigpipe_inherited);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *verb = argv[1];
	if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0 || strcmp(verb, "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(verb, "--version") == 0 || strcmp(verb, "-V") == 0) {
		printf("provgate %s\n", pvg_version());
		if (cli_bundle_version)
			cli_bundle_version(stdout);
		return EXIT_OK;
	}
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (strcmp(verb, verbs[i]->name) == 0)
			return verbs[i]->main(argc - 1, argv + 1);
	fprintf(stderr, "provgate: unknown verb \"%s\"; try 'provgate --help'\n", verb);
	return EXIT_USAGE;
}
