/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for a vLLM service, for the process-maps and stale-service scenarios. It renames
 * itself the way vLLM does (prctl name + argv overwritten in place, as setproctitle does),
 * dlopens a real HIP library, listens on a port, forks workers, holds a stand-in GPU device
 * open, writes its pidfile once all of that is done, and waits for SIGTERM.
 *
 *   fake-service [--server] [--lib PATH]... [--port N] [--workers N] [--device PATH]
 *                [--pidfile PATH] [--engine-pidfile PATH] [--title T] [--tag WORD]
 *                [--comm NAME] [--churn] [--log PATH [--prefix P] [--multiple K]]
 *                [--serve-args "ARGS"] [--host ADDR]
 *
 * --log: the engine appends vLLM-format lines to PATH: its settings at start, and on each
 * SIGUSR1 (a "request") one dispatch marker per line "M N DTYPE" of PATH.request. The new
 * kernel serves a shape when N is a multiple of K (default 256): `PREFIX selected=True
 * shape=(M, N) dtype=DTYPE`; any other shape falls back (`selected=False`, and a fallback
 * line), as a real dispatcher does without an error.
 *
 * --server: the top process becomes "vllm serve fixture" (holding the port) and forks the
 * engine; without it the engine is the top process. --serve-args: the server's command line
 * goes on with ARGS, as `vllm serve MODEL ARGS` keeps its own; the engine's config line
 * follows them (--block-size N, --enable-prefix-caching), as vLLM's does. With --log, the API server logs its
 * start as vLLM's does, "(APIServer pid=N) INFO ... Starting vLLM API server 0 on
 * http://HOST:PORT", and the engine prefixes its lines "(EngineCore_DP0 pid=N)": vLLM's
 * decorate_logs() prints os.getpid(), the pid in the process's own pid namespace (in a
 * container, not the host's). --host: the address the port is bound to (default 127.0.0.1;
 * 0.0.0.0 as `vllm serve --host 0.0.0.0` in a container with a published port). --churn: the engine keeps forking workers
 * that exit at once (processes that exit while being scanned).
 *
 * While it runs, the engine starts a process on a signal, as a service whose processes change
 * does (a worker restarted, a compiler run): SIGUSR2 a new worker (VLLM::Worker_N, the next
 * N), SIGWINCH a helper named "ptxas" (no service name) that lives until the engine stops.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *arg_area;
static size_t arg_len;
static struct {
	bool server, churn;
	const char *lib[4], *device, *pidfile, *engine_pidfile, *title, *tag, *comm;
	const char *log, *prefix, *serve_args, *host;
	int n_lib, port, workers, multiple;
} opt = { .title = "VLLM::EngineCore", .prefix = "DCU_KERNEL_DIAG", .multiple = 256,
	    .host = "127.0.0.1" };

static pid_t children[64];
static int n_children;

static void die(const char *what)
{
	fprintf(stderr, "fake-service: %s: %s\n", what, strerror(errno));
	_exit(1);
}

/* --tag makes the titles unique to one test, so that concurrent runs cannot meet. */
static void set_title(const char *title)
{
	prctl(PR_SET_NAME, title, 0, 0, 0); /* the kernel keeps 15 bytes */
	memset(arg_area, 0, arg_len);
	if (opt.tag)
		snprintf(arg_area, arg_len, "%s %s", title, opt.tag);
	else
		snprintf(arg_area, arg_len, "%s", title);
}

/* The server keeps its arguments: one NUL-separated argument each, after the title. */
static void set_server_title(void)
{
	set_title("vllm serve fixture");
	if (!opt.serve_args)
		return;
	size_t at = strlen(arg_area) + 1;
	char *copy = strdup(opt.serve_args), *save = NULL;
	for (char *t = strtok_r(copy, " ", &save); t && at + strlen(t) + 1 < arg_len;
	     t = strtok_r(NULL, " ", &save)) {
		memcpy(arg_area + at, t, strlen(t) + 1);
		at += strlen(t) + 1;
	}
	free(copy);
}

static void write_pidfile(const char *path, pid_t pid)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		die(tmp);
	fprintf(f, "%d\n", (int)pid);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		die(path);
}

static int listen_on(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, opt.host, &a.sin_addr) != 1) {
		errno = EINVAL;
		die(opt.host);
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0)
		die("bind/listen");
	return fd;
}

static sigset_t wait_set(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGCHLD);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	sigaddset(&s, SIGWINCH);
	return s;
}

/* The process's name in its log prefix, as vLLM's decorate_logs() writes it. */
static const char *log_name = "EngineCore_DP0";

/* One vLLM-format log line from this process: "(EngineCore_DP0 pid=N) INFO MM-DD HH:MM:SS". */
static void log_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(FILE *f, const char *fmt, ...)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	fprintf(f, "(%s pid=%d) INFO %02d-%02d %02d:%02d:%02d [fake_service.py:%d] ", log_name,
		(int)getpid(), tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		__LINE__);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

static int n_requests;

/* A request: dispatch each shape of LOG.request and log what was selected. */
static void serve_request(void)
{
	char req[4096];
	snprintf(req, sizeof(req), "%s.request", opt.log);
	FILE *in = fopen(req, "r");
	FILE *f = fopen(opt.log, "a");
	if (!f) {
		if (in)
			fclose(in);
		return;
	}
	long m, n;
	char dtype[64];
	while (in && fscanf(in, "%ld %ld %63s", &m, &n, dtype) == 3) {
		bool fast = opt.multiple > 0 && n % opt.multiple == 0;
		log_line(f, "%s selected=%s shape=(%ld, %ld) dtype=%s kernel=%s", opt.prefix,
			 fast ? "True" : "False", m, n, dtype, fast ? "wvSplitK" : "none");
		if (!fast)
			log_line(f, "shape (%ld, %ld) not supported by wvSplitK: fallback to unified triton", m, n);
	}
	log_line(f, "request %d done", ++n_requests);
	if (in)
		fclose(in);
	fclose(f);
}

static void stop_children(void)
{
	for (int i = 0; i < n_children; i++)
		kill(children[i], SIGTERM);
	for (int i = 0; i < n_children; i++)
		waitpid(children[i], NULL, 0);
}

static void spawn(bool helper);

/* Blocks until SIGTERM/SIGINT; reaps children meanwhile. With churn, forks a short-lived
 * worker every millisecond. */
static void wait_for_stop(bool churn)
{
	sigset_t s = wait_set();
	struct timespec ms = { 0, 1000000 };
	for (;;) {
		int sig = churn ? sigtimedwait(&s, NULL, &ms) : sigwaitinfo(&s, NULL);
		if (sig == SIGTERM || sig == SIGINT)
			return;
		if (sig == SIGUSR1 && opt.log)
			serve_request();
		if (sig == SIGUSR2 || sig == SIGWINCH)
			spawn(sig == SIGWINCH);
		if (sig == SIGCHLD || sig < 0)
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		if (churn && sig < 0) {
			pid_t w = fork();
			if (w == 0) {
				set_title("VLLM::Worker_tmp");
				_exit(0);
			}
		}
	}
}

static void worker(int i, int ready_fd);

/* A process the engine starts while it runs (SIGUSR2, SIGWINCH): it lives until the engine
 * stops (stop_children). */
static void spawn(bool helper)
{
	static int next_worker = -1;
	if (next_worker < 0)
		next_worker = opt.workers;
	if (n_children >= 64)
		return;
	pid_t w = fork();
	if (w == 0) {
		if (!helper)
			worker(next_worker, -1);
		prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
		set_title("ptxas");
		sigset_t s = wait_set();
		sigprocmask(SIG_UNBLOCK, &s, NULL);
		signal(SIGTERM, SIG_DFL);
		for (;;)
			pause();
	}
	if (w > 0) {
		children[n_children++] = w;
		next_worker += !helper;
	}
}

static void worker(int i, int ready_fd)
{
	char title[32];
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	snprintf(title, sizeof(title), "VLLM::Worker_%d", i);
	set_title(title);
	sigset_t s = wait_set();
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	signal(SIGTERM, SIG_DFL);
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "w", 1);
		close(ready_fd);
	}
	for (;;)
		pause();
}

static void engine(int ready_fd)
{
	set_title(opt.title);
	if (opt.comm)
		prctl(PR_SET_NAME, opt.comm, 0, 0, 0);
	for (int i = 0; i < opt.n_lib; i++) {
		void *h = dlopen(opt.lib[i], RTLD_NOW | RTLD_LOCAL);
		if (!h)
			h = dlopen(opt.lib[i], RTLD_LAZY | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "fake-service: dlopen %s: %s\n", opt.lib[i], dlerror());
			_exit(1);
		}
	}
	if (opt.port && !opt.server)
		listen_on(opt.port);
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	for (int i = 0; i < opt.workers && n_children < 64; i++) {
		pid_t w = fork();
		if (w < 0)
			die("fork");
		if (w == 0) {
			close(p[0]);
			worker(i, p[1]);
		}
		children[n_children++] = w;
	}
	close(p[1]);
	for (int i = 0; i < opt.workers; i++) {
		char c;
		if (read(p[0], &c, 1) != 1)
			die("worker did not start");
	}
	close(p[0]);
	/* after the fork: the engine holds the GPU, as vLLM's in-process executor does, and the
	 * driver lists it once (workers that inherited the fd would not be listed) */
	if (opt.device && open(opt.device, O_RDONLY) < 0)
		die(opt.device);
	if (opt.log) {
		FILE *f = fopen(opt.log, "a");
		if (!f)
			die(opt.log);
		const char *bs = opt.serve_args ? strstr(opt.serve_args, "--block-size ") : NULL;
		log_line(f, "Initializing an engine with config: block size = %d, prefix caching = %s",
			 bs ? atoi(bs + strlen("--block-size ")) : 832,
			 opt.serve_args && strstr(opt.serve_args, "--enable-prefix-caching") ? "True"
											      : "False");
		fclose(f);
	}
	if (opt.engine_pidfile)
		write_pidfile(opt.engine_pidfile, getpid());
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "e", 1);
		close(ready_fd);
	} else if (opt.pidfile) {
		write_pidfile(opt.pidfile, getpid());
	}
	wait_for_stop(opt.churn);
	stop_children();
	_exit(0);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--server") == 0)
			opt.server = true;
		else if (strcmp(a, "--churn") == 0)
			opt.churn = true;
		else if (v && strcmp(a, "--lib") == 0 && opt.n_lib < 4)
			opt.lib[opt.n_lib++] = strdup(argv[++i]);
		else if (v && strcmp(a, "--tag") == 0)
			opt.tag = strdup(argv[++i]);
		else if (v && strcmp(a, "--comm") == 0)
			opt.comm = strdup(argv[++i]);
		else if (v && strcmp(a, "--port") == 0)
			opt.port = atoi(argv[++i]);
		else if (v && strcmp(a, "--workers") == 0)
			opt.workers = atoi(argv[++i]);
		else if (v && strcmp(a, "--device") == 0)
			opt.device = strdup(argv[++i]);
		else if (v && strcmp(a, "--pidfile") == 0)
			opt.pidfile = strdup(argv[++i]);
		else if (v && strcmp(a, "--engine-pidfile") == 0)
			opt.engine_pidfile = strdup(argv[++i]);
		else if (v && strcmp(a, "--log") == 0)
			opt.log = strdup(argv[++i]);
		else if (v && strcmp(a, "--prefix") == 0)
			opt.prefix = strdup(argv[++i]);
		else if (v && strcmp(a, "--multiple") == 0)
			opt.multiple = atoi(argv[++i]);
		else if (v && strcmp(a, "--host") == 0)
			opt.host = strdup(argv[++i]);
		else if (v && strcmp(a, "--title") == 0)
			opt.title = strdup(argv[++i]);
		else if (v && strcmp(a, "--serve-args") == 0)
			opt.serve_args = strdup(argv[++i]);
		else {
			fprintf(stderr, "fake-service: bad argument %s\n", a);
			return 2;
		}
	}
	arg_area = argv[0];
	arg_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0]);

	sigset_t s = wait_set();
	sigprocmask(SIG_BLOCK, &s, NULL);
	if (!opt.server)
		engine(-1);

	set_server_title();
	if (opt.port)
		listen_on(opt.port);
	if (opt.log) {
		FILE *f = fopen(opt.log, "a");
		if (!f)
			die(opt.log);
		log_name = "APIServer";
		log_line(f, "Starting vLLM API server 0 on http://%s:%d", opt.host, opt.port);
		log_name = "EngineCore_DP0";
		fclose(f);
	}
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	pid_t e = fork();
	if (e < 0)
		die("fork");
	if (e == 0) {
		close(p[0]);
		engine(p[1]);
	}
	children[n_children++] = e;
	close(p[1]);
	char c;
	if (read(p[0], &c, 1) != 1) {
		fprintf(stderr, "fake-service: engine did not start\n");
		return 1;
	}
	if (opt.pidfile)
		write_pidfile(opt.pidfile, getpid());
	wait_for_stop(false);
	stop_children();
	return 0;
}
