/* SPDX-License-Identifier: MIT */
/*
 * provgate exec -- CMD: certify, run the benchmark, then re-check what can change while it
 * runs (3 artifact-hash, 4 process-maps, 5 stale-service, 7 dispatch-marker) in one report.
 */
#include <signal.h>
#include <sys/wait.h>

#include "cli.h"
#include "procs.h"
#include "run-opts.h"

#define AFTER_GATES (PVG_GATE_BIT(3) | PVG_GATE_BIT(4) | PVG_GATE_BIT(5) | PVG_GATE_BIT(7))

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static int run_command(char **argv, int *status, char **why)
{
	static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct sigaction sa = { .sa_handler = forward_signal }, old[ARRAY_SIZE(forwarded)];
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		*why = pvg_asprintf("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "provgate exec: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaction(forwarded[i], &sa, &old[i]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaction(forwarded[i], &old[i], NULL);
	*status = st;
	return 0;
}

static int exit_code_of(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return EXIT_INTERNAL;
}

static int exec_main(int argc, char **argv)
{
	struct run_opts o;
	bool run_anyway = false;
	/* --run-anyway is exec's own flag; take it out before the shared parser sees it */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--run-anyway") == 0) {
			run_anyway = true;
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(char *));
			argc--;
			i--;
		}
	int rc = cli_parse_run_opts(argc, argv, &o, true);
	if (rc || o.help) {
		if (o.help) {
			printf("Usage: provgate %s\n\n%s\n", verb_exec.synopsis, verb_exec.help);
			printf("      --run-anyway      run CMD even when certification fails (the "
			       "result stays not certified)\n");
			cli_run_opts_help(stdout);
		}
		return rc;
	}
	if (o.n_rest == 0) {
		fprintf(stderr, "provgate exec: no command; usage: provgate exec [options] -- CMD...\n");
		return EXIT_USAGE;
	}
	if (o.json && strcmp(o.json, "-") == 0) {
		fprintf(stderr, "provgate exec: the command owns stdout; write the report with --out FILE\n");
		return EXIT_USAGE;
	}
	struct pvg_config *cfg = NULL;
	rc = cli_open_config(&o, &cfg);
	if (rc)
		return rc;
	struct cli_style st;
	cli_style_init(&st, stdout, o.no_color);
	pvg_hash_set_progress(cli_progress);

	struct pvg_run *run = pvg_run_new(cfg, PVG_PHASE_LIVE, 0, o.keep_going);
	int r = pvg_run_execute(run);
	if (r < 0) {
		fprintf(stderr, "provgate: internal error: %s\n", strerror(-r));
		pvg_run_free(run);
		pvg_config_free(cfg);
		return EXIT_INTERNAL;
	}
	bool certified = pvg_run_certified(run);
	if (o.verbosity >= 0) {
		cli_print_header(stdout, run, &st);
		cli_print_gates(stdout, run->results, 0, o.verbosity, &st);
	}
	run->exec_info = cJSON_CreateObject();
	cJSON *argv_json = cJSON_AddArrayToObject(run->exec_info, "command");
	for (int i = 0; i < o.n_rest; i++)
		cJSON_AddItemToArray(argv_json, pvg_json_string(o.rest[i]));

	int cmd_status = 0;
	bool ran = false;
	if (!certified && !run_anyway) {
		fprintf(stdout, "%sNOT CERTIFIED%s before the command: not running it "
				"(--run-anyway runs it regardless)\n", st.fail, st.reset);
		pvg_json_add_bool(run->exec_info, "ran", false);
	} else {
		(void)pvg_targets_pin(&run->ctx);
		fprintf(stdout, "%s-- running:%s", st.dim, st.reset);
		for (int i = 0; i < o.n_rest; i++)
			fprintf(stdout, " %s", o.rest[i]);
		fputc('\n', stdout);
		time_t t0 = time(NULL);
		uint64_t ns0 = pvg_now_ns();
		_cleanup_free_ char *why = NULL;
		if (run_command(o.rest, &cmd_status, &why) < 0) {
			fprintf(stderr, "provgate exec: %s\n", why);
			pvg_run_free(run);
			pvg_config_free(cfg);
			return EXIT_INTERNAL;
		}
		ran = true;
		char ts[40];
		pvg_format_time(t0, -1, ts, sizeof(ts));
		pvg_json_add_bool(run->exec_info, "ran", true);
		cJSON_AddStringToObject(run->exec_info, "started_at", ts);
		char secs[32];
		snprintf(secs, sizeof(secs), "%.3f", (double)(pvg_now_ns() - ns0) / 1e9);
		cJSON_AddStringToObject(run->exec_info, "duration_s", secs);
		pvg_json_add_int(run->exec_info, "exit_status", exit_code_of(cmd_status));
		if (WIFSIGNALED(cmd_status))
			pvg_json_add_int(run->exec_info, "signal", WTERMSIG(cmd_status));

		/* The after-check sees the system anew: nothing cached from before may vouch,
		 * except which service process was certified (a restart must not pass). */
		pvg_ctx_forget(&run->ctx);
		run->after = pvg_xcalloc(PVG_N_GATES, sizeof(*run->after));
		run->after_selected = AFTER_GATES;
		pvg_evaluate(&run->ctx, AFTER_GATES, true, run->after,
			     "not re-checked after the command");
		if (o.verbosity >= 0) {
			fprintf(stdout, "%safter the command:%s\n", st.bold, st.reset);
			cli_print_gates(stdout, run->after, AFTER_GATES, o.verbosity, &st);
		}
	}
	pvg_hash_set_progress(NULL);
	cli_print_verdict(stdout, run, true, &st);
	fflush(stdout);

	rc = EXIT_OK;
	if (o.json) {
		_cleanup_free_ char *text = pvg_run_report_json(run);
		_cleanup_free_ char *withnl = pvg_asprintf("%s\n", text);
		if ((r = cli_write_file(o.json, withnl)) < 0) {
			fprintf(stderr, "provgate: cannot write report %s: %s\n", o.json, strerror(-r));
			rc = EXIT_USAGE;
		}
	}
	if (o.junit) {
		_cleanup_free_ char *xml = cli_junit(run);
		if ((r = cli_write_file(o.junit, xml)) < 0) {
			fprintf(stderr, "provgate: cannot write JUnit report %s: %s\n", o.junit,
				strerror(-r));
			rc = EXIT_USAGE;
		}
	}
	if (!rc) {
		if (!pvg_run_certified(run))
			rc = EXIT_NOT_CERTIFIED;
		else
			rc = ran ? exit_code_of(cmd_status) : EXIT_NOT_CERTIFIED;
	}
	pvg_run_free(run);
	pvg_config_free(cfg);
	return rc;
}

const struct cli_verb verb_exec = {
	.name = "exec",
	.main = exec_main,
	.synopsis = "exec [-c FILE] [--out FILE] [--run-anyway] -- CMD...",
	.help = "Certifies (all seven gates), runs CMD (the benchmark), then re-checks gates 3, 4,\n"
		"5 and 7 after it: same bytes, same mapping, still no stale process, markers still\n"
		"attributable. One report covers both checks. Exit 1 if either check failed, else\n"
		"CMD's exit status (128+N when a signal N ended it). Signals are forwarded to CMD.\n"
		"When certification fails CMD is not run unless --run-anyway is given.\n",
};
