/* SPDX-License-Identifier: MIT */
/*
 * provgate exec -- CMD: certify, run the benchmark, then re-check what can change while it
 * runs (3 artifact-hash, 4 process-maps, 5 stale-service, 7 dispatch-marker) in one report.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

#include "cli.h"
#include "exec-witness.h"
#include "run-opts.h"


/*
 * Runs CMD and waits for it. The forwarded signals and SIGCHLD are blocked before the fork
 * and taken with sigwaitinfo, so there is no window in which a SIGTERM kills provgate and
 * leaves CMD running, and no handler runs asynchronously. (Every other thread has been
 * joined by now, so no thread is left to take a signal with its default action.) A signal
 * the kernel generated (SI_KERNEL: ^C, ^\ or a hangup from the terminal) already reached CMD,
 * which is in the same process group; it is not sent twice, so a Python benchmark's cleanup
 * is not interrupted by a second KeyboardInterrupt. Signals sent to provgate itself (kill,
 * sigqueue) are passed on to CMD.
 */
static int run_command(char **argv, int *status, int *start_errno, char **why)
{
	static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	sigset_t set, old;
	sigemptyset(&set);
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	/* a caller that ignores SIGCHLD (inherited across exec) would make the kernel reap CMD
	 * and lose its status; CMD itself gets the caller's disposition back */
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old_chld;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGCHLD, &dfl, &old_chld);
	/* Whether CMD started at all: the child writes execvp's errno to a close-on-exec pipe,
	 * which a successful exec closes unwritten. A status of 127 alone cannot tell "not
	 * found" from a benchmark that exits 127. */
	int started[2];
	if (pipe2(started, O_CLOEXEC) < 0) {
		*why = pvg_asprintf("pipe: %s", strerror(errno));
		sigaction(SIGCHLD, &old_chld, NULL);
		return -1;
	}
	*start_errno = 0;
	fflush(NULL);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	pid_t pid = fork();
	if (pid < 0) {
		*why = pvg_asprintf("fork: %s", strerror(errno));
		close(started[0]);
		close(started[1]);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		sigaction(SIGCHLD, &old_chld, NULL);
		return -1;
	}
	if (pid == 0) {
		close(started[0]);
		sigaction(SIGCHLD, &old_chld, NULL);
		sigaction(SIGPIPE, &cli_sigpipe_inherited, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		execvp(argv[0], argv);
		int e = errno;
		(void)!write(started[1], &e, sizeof(e));
		/* the shell's statuses: 127 not found, 126 found but not runnable */
		_exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
	}
	close(started[1]);
	int e = 0;
	ssize_t got;
	/* the forwarded signals are blocked, so nothing interrupts this but a stop */
	while ((got = read(started[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(started[0]);
	if (got == (ssize_t)sizeof(e))
		*start_errno = e ? e : EINVAL;
	int st = 0, rc = 0;
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig < 0 && errno == EINTR)
			continue;
		pid_t r = sig == SIGCHLD || sig < 0 ? waitpid(pid, &st, sig < 0 ? 0 : WNOHANG) : 0;
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			*why = pvg_asprintf("waiting for the command: %s", strerror(errno));
			rc = -1;
			break;
		}
		if (sig > 0 && sig != SIGCHLD && si.si_code != SI_KERNEL)
			kill(pid, sig);
	}
	/* what arrived after CMD ended had nobody to go to: drop it, then restore the mask */
	const struct timespec zero = { 0, 0 };
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	sigaction(SIGCHLD, &old_chld, NULL);
	*status = st;
	return rc;
}

static int exec_main(int argc, char **argv)
{
	_cleanup_(cli_run_opts_done) struct run_opts o = { 0 };
	bool run_anyway = false;
	const char *witness = NULL;
	/* --run-anyway and --witness DIR are exec's own flags; take them out before the shared
	 * parser sees them */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--run-anyway") == 0) {
			run_anyway = true;
			memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(char *));
			argc--;
			i--;
		} else if (strcmp(argv[i], "--witness") == 0 || strncmp(argv[i], "--witness=", 10) == 0) {
			int take = argv[i][9] == '=' ? 1 : 2;
			witness = take == 1 ? argv[i] + 10 : i + 1 < argc ? argv[i + 1] : NULL;
			if (!witness || !witness[0]) {
				fprintf(stderr, "provgate exec: --witness needs a folder\n");
				return EXIT_USAGE;
			}
			memmove(&argv[i], &argv[i + take], (size_t)(argc - i - take + 1) * sizeof(char *));
			argc -= take;
			i--;
		}
	int rc = cli_parse_run_opts(argc, argv, &o, true);
	if (rc || o.help) {
		if (o.help) {
			printf("Usage: provgate %s\n\n%s\n", verb_exec.synopsis, verb_exec.help);
			printf("      --run-anyway      run CMD even when certification fails (the "
			       "result stays not certified)\n");
			printf("      --witness DIR     run nothing: print the variables that start the "
			       "service with the\n                        dispatch witness writing to DIR, "
			       "and check that the live\n                        service has them\n");
			cli_run_opts_help(stdout, true);
		}
		return rc;
	}
	if (witness) {
		if (o.n_rest > 0) {
			fprintf(stderr, "provgate exec: --witness starts nothing: start the service "
					"with the variables it prints, then run exec -- CMD\n");
			return EXIT_USAGE;
		}
		return cli_exec_witness(&o, witness);
	}
	if (o.n_rest == 0) {
		fprintf(stderr, "provgate exec: no command; usage: provgate exec [options] -- CMD...\n");
		return EXIT_USAGE;
	}
	if (o.json && strcmp(o.json, "-") == 0) {
		fprintf(stderr, "provgate exec: the command owns stdout; write the report with --out FILE\n");
		return EXIT_USAGE;
	}
	if (o.junit && strcmp(o.junit, "-") == 0) {
		fprintf(stderr, "provgate exec: the command owns stdout; write the JUnit report with "
				"--junit FILE\n");
		return EXIT_USAGE;
	}
	rc = cli_attest_open(&o.attest, o.json, o.junit);
	if (rc)
		return rc;
	_cleanup_config_ struct pvg_config *cfg = NULL;
	rc = cli_open_config(&o, &cfg);
	if (rc)
		return rc;
	struct cli_style st;
	cli_style_init(&st, stdout, o.no_color);
	pvg_hash_set_progress(cli_progress);

	_cleanup_run_ struct pvg_run *run = pvg_run_new(cfg, PVG_PHASE_LIVE, 0, o.keep_going);
	cli_add_outputs(&o, run);
	int r = pvg_run_execute(run);
	if (r < 0) {
		fprintf(stderr, "provgate: internal error: %s\n", strerror(-r));
		return EXIT_INTERNAL;
	}
	bool certified = pvg_run_certified(run);
	if (o.verbosity >= 0) {
		cli_print_header(stdout, run, &st);
		cli_print_gates(stdout, run->results, 0, o.verbosity, &st);
	}
	cJSON *info = pvg_run_exec_info(run);
	cJSON *argv_json = cJSON_AddArrayToObject(info, "command");
	for (int i = 0; i < o.n_rest; i++)
		cJSON_AddItemToArray(argv_json, pvg_json_string(o.rest[i]));

	int cmd_status = 0, start_errno = 0;
	if (!certified && !run_anyway) {
		fprintf(stdout, "%sNOT CERTIFIED%s before the command: not running it "
				"(--run-anyway runs it regardless)\n", st.fail, st.reset);
		pvg_run_set_benchmark(run, PVG_BENCHMARK_NOT_RUN, 0, 0);
	} else {
		(void)pvg_run_pin(run);
		time_t t0 = time(NULL);
		uint64_t ns0 = pvg_now_ns();
		char ts[40];
		pvg_format_time(t0, -1, ts, sizeof(ts));
		pvg_json_add_bool(info, "ran", true);
		cJSON_AddStringToObject(info, "started_at", ts);
		cJSON_AddStringToObject(info, "state", "running");
		/* The report is written before the command too: a benchmark whose provenance
		 * cannot be recorded is not started (a bad --out path would otherwise surface only
		 * after hours of benchmark), and a provgate killed while it runs still leaves
		 * the certification it made ("state": "running", never certified). */
		if (o.json) {
			pvg_run_set_in_progress(run, true);
			r = cli_write_json(o.json, run);
			pvg_run_set_in_progress(run, false);
			if (r < 0) {
				fprintf(stderr, "provgate exec: cannot write report %s: %s; not running "
						"the command, whose provenance could not be recorded\n",
					o.json, strerror(-r));
				return EXIT_USAGE;
			}
		}
		/* the JUnit file is written only at the end (an interim one would show a
		 * killed run as green in CI); its folder must take it before CMD starts */
		if (o.junit && (r = cli_check_writable(o.junit)) < 0) {
			fprintf(stderr, "provgate exec: cannot write JUnit report %s: %s; not running "
					"the command\n", o.junit, strerror(-r));
			return EXIT_USAGE;
		}
		/* the attestation is of the final report only (an interim one would be a signed
		 * "not certified" of a run that may well succeed); its folder must take it */
		if (o.attest.path && (r = cli_check_writable(o.attest.path)) < 0) {
			fprintf(stderr, "provgate exec: cannot write attestation %s: %s; not running "
					"the command\n", o.attest.path, strerror(-r));
			return EXIT_USAGE;
		}
		fprintf(stdout, "%s-- running:%s", st.dim, st.reset);
		for (int i = 0; i < o.n_rest; i++)
			fprintf(stdout, " %s", o.rest[i]);
		fputc('\n', stdout);
		_cleanup_free_ char *why = NULL;
		/* the window in which what the service compiles or loads is the benchmark's */
		struct timespec w0, w1;
		clock_gettime(CLOCK_REALTIME, &w0);
		if (run_command(o.rest, &cmd_status, &start_errno, &why) < 0) {
			fprintf(stderr, "provgate exec: %s\n", why);
			return EXIT_INTERNAL;
		}
		clock_gettime(CLOCK_REALTIME, &w1);
		pvg_run_set_window(run, (uint64_t)w0.tv_sec * 1000000000u + (uint64_t)w0.tv_nsec,
				   (uint64_t)w1.tv_sec * 1000000000u + (uint64_t)w1.tv_nsec);
		cJSON_ReplaceItemInObject(info, "state", cJSON_CreateString("finished"));
		char secs[32];
		snprintf(secs, sizeof(secs), "%.3f", (double)(pvg_now_ns() - ns0) / 1e9);
		cJSON_AddStringToObject(info, "duration_s", secs);
		pvg_run_set_benchmark(run, start_errno ? PVG_BENCHMARK_NOT_STARTED
				      : cmd_status == 0 ? PVG_BENCHMARK_SUCCEEDED
							: PVG_BENCHMARK_FAILED,
				      cmd_status, start_errno);
		if (start_errno)
			fprintf(stderr, "provgate exec: %s\n", pvg_run_benchmark_text(run));

		/* a command that never started changed nothing: there is nothing to re-check */
		r = start_errno ? 0 : pvg_run_recheck(run);
		if (r < 0) {
			fprintf(stderr, "provgate: internal error: %s\n", strerror(-r));
			return EXIT_INTERNAL;
		}
		if (o.verbosity >= 0 && !start_errno) {
			fprintf(stdout, "%safter the command:%s\n", st.bold, st.reset);
			cli_print_gates(stdout, run->after, run->after_selected, o.verbosity, &st);
		}
	}
	pvg_hash_set_progress(NULL);
	cli_print_verdict(stdout, run, true, &st);
	fflush(stdout);

	rc = cli_write_reports(o.json, o.junit, run);
	int arc = cli_write_run_attestation(&o.attest, run);
	if (!rc)
		rc = arc;
	if (!rc) {
		enum pvg_benchmark b = pvg_run_benchmark(run);
		if (!pvg_run_provenance_certified(run) || b == PVG_BENCHMARK_NOT_RUN)
			rc = EXIT_NOT_CERTIFIED;
		else
			rc = pvg_wait_exit_code(cmd_status);
	}
	return rc;
}

const struct cli_verb verb_exec = {
	.name = "exec",
	.main = exec_main,
	.synopsis = "exec [-c FILE] [--out FILE] [--attest FILE [--sign-key KEY.pem]] [--run-anyway]\n"
		    "                 -- CMD...  |  exec [-c FILE] --witness DIR",
	.help = "Certifies (all seven gates), runs CMD (the benchmark), then re-checks gates 3, 4,\n"
		"5 and 7 after it: same bytes, same mapping, the same service processes (none gone,\n"
		"none new: service.family), still no stale or profiled process,\n"
		"markers still attributable, and no code loaded or compiled in the service while\n"
		"CMD ran (benchmark.allow_loads lets a cold start pass, listed). One report\n"
		"covers both checks. Exit 1 if either check failed, else\n"
		"CMD's exit status (128+N when a signal N ended it). Signals sent to provgate are\n"
		"passed on to CMD (a terminal's ^C reaches it directly, once). The --out report is\n"
		"written before CMD starts (state \"running\") and again at the end. CMD is not run\n"
		"when certification fails (unless --run-anyway) or a report cannot be written.\n"
		"The --attest file is written once, at the end: an attestation of the final report.\n"
		"With --witness DIR it runs nothing: it prints the variables that start the\n"
		"service with the dispatch witness (libprovgate-witness.so) and checks that the\n"
		"live service's processes have them.\n",
};
