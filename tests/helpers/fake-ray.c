/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for one node of a Ray-based vLLM deployment, for the multi-node scenarios: a
 * raylet that spawns GPU workers, which become `ray::RayWorkerWrapper` actors the way Ray's
 * worker does it, map the extension, and print vLLM's log lines and the kernel's dispatch
 * markers on their stdout.
 *
 * It copies what provgate sees of the real processes:
 *   - raylet: its own executable (comm "raylet" when started through a link named raylet,
 *     as Ray installs it under ray/core/src/ray/raylet/raylet) with raylet's flags; Ray's
 *     workers are its children;
 *   - a worker starts as `python3 -u .../ray/_private/workers/default_worker.py --node-ip-
 *     address=... --raylet-name=... ...` (this program through a link named python3), then
 *     retitles itself as Ray does with setproctitle, which overwrites argv in place and sets
 *     the kernel's name with prctl(PR_SET_NAME): "ray::IDLE" while it waits for a task,
 *     "ray::RayWorkerWrapper" once the actor is created, and "ray::RayWorkerWrapper.
 *     execute_method" while it runs a method (comm keeps 15 bytes: "ray::RayWorkerW");
 *   - a new actor's worker prints Ray's ":actor_name:RayWorkerWrapper" line, then vLLM's
 *     "INFO MM-DD HH:MM:SS [file.py:N] message" lines.
 * Workers write to the output they inherit from raylet, as with RAY_LOG_TO_STDERR=1 (Ray's
 * logs and the workers' output on stderr) and `ray start --block >LOG 2>&1`; real Ray
 * otherwise gives each worker a log file of its own under /tmp/ray/session_NAME/logs/.
 *
 * Control (environment, so that the command lines stay Ray's):
 *   FAKE_RAY_WORKERS=N      workers to spawn (default 2)
 *   FAKE_RAY_LIB=PATH       the extension each worker dlopens (as importing vllm._C does)
 *   FAKE_RAY_PYTHON=PATH    the link named python3 that the raylet execs for a worker
 *   FAKE_RAY_PIDFILE=PATH   written by raylet once every worker is an actor: raylet's pid,
 *                           then one line per worker pid
 *   FAKE_RAY_TAG=WORD       appended to every title, so that concurrent tests (and the two
 *                           "nodes" of the test cluster, which share one machine) never meet
 *   FAKE_RAY_REQUEST=PATH   on SIGUSR1 (sent to raylet, forwarded to every worker) each worker
 *                           logs one marker per line "M N DTYPE" of PATH: selected=True when
 *                           N % 256 == 0, else selected=False and a fallback line
 * SIGTERM to raylet stops its workers; SIGKILL to raylet leaves them behind (stale workers).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *arg_area;
static size_t arg_len;
static const char *tag;

static void die(const char *what)
{
	fprintf(stderr, "fake-ray: %s: %s\n", what, strerror(errno));
	_exit(1);
}

/* setproctitle: the kernel's name (15 bytes kept) and argv overwritten in place. */
static void set_title(const char *title)
{
	prctl(PR_SET_NAME, title, 0, 0, 0);
	memset(arg_area, 0, arg_len);
	if (tag)
		snprintf(arg_area, arg_len, "%s %s", title, tag);
	else
		snprintf(arg_area, arg_len, "%s", title);
}

static sigset_t wait_set(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGCHLD);
	sigaddset(&s, SIGUSR1);
	return s;
}

/* vLLM's format inside a Ray worker: "INFO 12-01 07:50:00 [file.py:N] message". */
static void vllm_log(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void vllm_log(const char *file, int line, const char *fmt, ...)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	printf("INFO %02d-%02d %02d:%02d:%02d [%s:%d] ", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	       tm.tm_min, tm.tm_sec, file, line);
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void execute_method(void)
{
	const char *req = getenv("FAKE_RAY_REQUEST");
	set_title("ray::RayWorkerWrapper.execute_method");
	FILE *in = req ? fopen(req, "r") : NULL;
	long m, n;
	char dtype[64];
	while (in && fscanf(in, "%ld %ld %63s", &m, &n, dtype) == 3) {
		bool fast = n % 256 == 0;
		vllm_log("skinny_gemms.py", 88, "DCU_KERNEL_DIAG selected=%s shape=(%ld, %ld) dtype=%s "
			 "kernel=%s", fast ? "True" : "False", m, n, dtype, fast ? "wvSplitK" : "none");
		if (!fast)
			vllm_log("skinny_gemms.py", 91, "shape (%ld, %ld) not supported by wvSplitK: "
				 "fallback to unified triton", m, n);
	}
	if (in)
		fclose(in);
	vllm_log("worker_base.py", 610, "execute_model done (pid %d)", (int)getpid());
	set_title("ray::RayWorkerWrapper");
}

static void worker(void)
{
	set_title("ray::IDLE");
	/* the actor creation task: RayWorkerWrapper(...) imports vllm, which maps the extension */
	const char *lib = getenv("FAKE_RAY_LIB");
	if (lib && !dlopen(lib, RTLD_NOW | RTLD_LOCAL) && !dlopen(lib, RTLD_LAZY | RTLD_LOCAL)) {
		fprintf(stderr, "fake-ray: dlopen %s: %s\n", lib, dlerror());
		_exit(1);
	}
	set_title("ray::RayWorkerWrapper");
	printf(":actor_name:RayWorkerWrapper\n");
	vllm_log("worker.py", 212, "Initializing a V1 worker: block size = 832, prefix caching = "
		 "False");
	/* tell raylet the actor is up */
	(void)!write(3, "w", 1);
	close(3);
	sigset_t s = wait_set();
	for (;;) {
		int sig = sigwaitinfo(&s, NULL);
		if (sig == SIGTERM || sig == SIGINT)
			_exit(0);
		if (sig == SIGUSR1)
			execute_method();
	}
}

static pid_t workers[64];
static int n_workers;

static void raylet(char **argv)
{
	const char *py = getenv("FAKE_RAY_PYTHON");
	const char *pidfile = getenv("FAKE_RAY_PIDFILE");
	const char *nw = getenv("FAKE_RAY_WORKERS");
	int want = nw ? atoi(nw) : 2;
	if (!py || want < 0 || want > 64) {
		fprintf(stderr, "fake-ray: raylet needs FAKE_RAY_PYTHON (and FAKE_RAY_WORKERS <= 64)\n");
		_exit(2);
	}
	/* the raylet's flags name the session's sockets; the workers get them too */
	const char *sock = NULL, *ip = "127.0.0.1";
	for (char **a = argv + 1; *a; a++) {
		if (strncmp(*a, "--raylet_socket_name=", 21) == 0)
			sock = *a + 21;
		if (strncmp(*a, "--node_ip_address=", 18) == 0)
			ip = *a + 18;
	}
	int ready[2];
	if (pipe(ready) < 0)
		die("pipe");
	for (int i = 0; i < want; i++) {
		pid_t w = fork();
		if (w < 0)
			die("fork");
		if (w == 0) {
			close(ready[0]);
			if (dup2(ready[1], 3) < 0)
				die("dup2");
			char a_ip[128], a_sock[512], a_tok[32];
			snprintf(a_ip, sizeof(a_ip), "--node-ip-address=%s", ip);
			snprintf(a_sock, sizeof(a_sock), "--raylet-name=%s", sock ? sock : "");
			snprintf(a_tok, sizeof(a_tok), "--startup-token=%d", i);
			char *wargv[] = { (char *)py, "-u",
					  "/opt/venv/lib/python3.10/site-packages/ray/_private/workers/"
					  "default_worker.py",
					  a_ip, a_sock, "--redis-address=None", "--temp-dir=/tmp/ray",
					  "--logging-rotate-bytes=536870912",
					  "--logging-rotate-backup-count=5", a_tok,
					  "--worker-type=WORKER", NULL };
			sigset_t none;
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			execv(py, wargv);
			die(py);
		}
		workers[n_workers++] = w;
	}
	close(ready[1]);
	for (int i = 0; i < want; i++) {
		char c;
		if (read(ready[0], &c, 1) != 1) {
			fprintf(stderr, "fake-ray: a worker did not start\n");
			_exit(1);
		}
	}
	close(ready[0]);
	if (pidfile) {
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.tmp", pidfile);
		FILE *f = fopen(tmp, "w");
		if (!f)
			die(tmp);
		fprintf(f, "%d\n", (int)getpid());
		for (int i = 0; i < n_workers; i++)
			fprintf(f, "%d\n", (int)workers[i]);
		if (fclose(f) != 0 || rename(tmp, pidfile) != 0)
			die(pidfile);
	}
	sigset_t s = wait_set();
	for (;;) {
		int sig = sigwaitinfo(&s, NULL);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		if (sig == SIGUSR1)
			for (int i = 0; i < n_workers; i++)
				kill(workers[i], SIGUSR1);
		if (sig == SIGCHLD)
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
	}
	for (int i = 0; i < n_workers; i++)
		kill(workers[i], SIGTERM);
	for (int i = 0; i < n_workers; i++)
		waitpid(workers[i], NULL, 0);
	_exit(0);
}

int main(int argc, char **argv)
{
	(void)argc;
	arg_area = argv[0];
	char **last = argv;
	while (last[1])
		last++;
	arg_len = (size_t)(*last + strlen(*last) + 1 - argv[0]);
	tag = getenv("FAKE_RAY_TAG");
	sigset_t s = wait_set();
	sigprocmask(SIG_BLOCK, &s, NULL);
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "raylet") == 0)
		raylet(argv);
	for (char **a = argv + 1; *a; a++)
		if (strstr(*a, "default_worker.py"))
			worker();
	fprintf(stderr, "fake-ray: run me as .../raylet (or as raylet's worker)\n");
	return 2;
}
