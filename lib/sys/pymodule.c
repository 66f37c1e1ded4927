/* SPDX-License-Identifier: MIT */
/*
 * install.python_module -> file, without importing the module or its parents.
 *
 * importlib.util.find_spec("vllm._rocm_C") imports "vllm" first, which for vLLM imports
 * torch and can take tens of seconds or fail. Instead we ask each finder on sys.meta_path
 * (the path finder and editable-install finders alike) for one package level at a time and
 * hand the package's search locations down, so that no __init__ ever runs.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "sys/pymodule.h"

static const char finder_script[] =
	"import sys\n"
	"name = sys.argv[1]\n"
	"parts = name.split('.')\n"
	"if not all(p.isidentifier() for p in parts):\n"
	"    print('ERR\\t%r is not a dotted module name' % name); sys.exit(3)\n"
	"path = None\n"
	"spec = None\n"
	"for i in range(len(parts)):\n"
	"    full = '.'.join(parts[:i + 1])\n"
	"    spec = None\n"
	"    for finder in sys.meta_path:\n"
	"        find = getattr(finder, 'find_spec', None)\n"
	"        if find is None:\n"
	"            continue\n"
	"        try:\n"
	"            spec = find(full, path)\n"
	"        except Exception as e:\n"
	"            print('ERR\\tfinder %r failed on %s: %s' % (finder, full, e)); sys.exit(3)\n"
	"        if spec is not None:\n"
	"            break\n"
	"    if spec is None:\n"
	"        where = 'sys.path' if path is None else list(path)\n"
	"        print('ERR\\tNo module named %r (searched %s with %s)' % (full, where, sys.executable))\n"
	"        sys.exit(2)\n"
	"    if i < len(parts) - 1:\n"
	"        path = spec.submodule_search_locations\n"
	"        if path is None:\n"
	"            print('ERR\\t%r is a module, not a package, so it has no %r' % (full, parts[i + 1]))\n"
	"            sys.exit(2)\n"
	"if not spec.has_location or not spec.origin:\n"
	"    print('ERR\\t%r has no file (origin %r)' % (name, spec.origin)); sys.exit(2)\n"
	"print('OK\\t' + spec.origin)\n";

#define PY_TIMEOUT_MS 30000
#define PY_MAX_OUTPUT (64 * 1024)

int pvg_python_module_path(const char *python, const char *module, char **path,
			   struct pvg_msg *why)
{
	*path = NULL;
	pvg_msg_clear(why);
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return e;
	}
	if (pid == 0) {
		/* A clean environment: nothing of ours or of the service leaks into the finder. */
		char *const envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8",
				       "PYTHONDONTWRITEBYTECODE=1", NULL };
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		if (chdir("/") < 0)
			_exit(127);
		char *argv[] = { (char *)python, "-I", "-B", "-c", (char *)finder_script,
				 (char *)module, NULL };
		if (strchr(python, '/'))
			execve(python, argv, envp);
		else {
			/* look the interpreter up in our PATH, but run it with the clean env */
			const char *p = getenv("PATH");
			_cleanup_free_ char *copy = pvg_strdup(p ? p : "/usr/bin:/bin");
			char *save = NULL;
			for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
				_cleanup_free_ char *full = pvg_path_join(d, python);
				execve(full, argv, envp);
			}
		}
		dprintf(1, "EXEC\tcannot run %s: %s\n", python, strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	char *out = pvg_xcalloc(PY_MAX_OUTPUT + 1, 1);
	size_t have = 0;
	uint64_t deadline = pvg_now_ns() + (uint64_t)PY_TIMEOUT_MS * 1000000u;
	bool timed_out = false;
	for (;;) {
		uint64_t now = pvg_now_ns();
		if (now >= deadline) {
			timed_out = true;
			break;
		}
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
		int pr = poll(&pfd, 1, (int)((deadline - now) / 1000000u) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			timed_out = pr == 0;
			break;
		}
		char chunk[4096];
		ssize_t r = read(pipefd[0], chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t take = (size_t)r;
		if (take > PY_MAX_OUTPUT - have)
			take = PY_MAX_OUTPUT - have;
		memcpy(out + have, chunk, take);
		have += take;
	}
	close(pipefd[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[have] = '\0';
	int ret;
	/* The answer is the last OK/ERR line; anything else (warnings) is context. */
	char *ok = NULL, *err = NULL, *exec_err = NULL;
	for (char *line = out; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, "OK\t", 3) == 0)
			ok = line + 3;
		else if (strncmp(line, "ERR\t", 4) == 0)
			err = line + 4;
		else if (strncmp(line, "EXEC\t", 5) == 0)
			exec_err = line + 5;
		line = nl ? nl + 1 : NULL;
	}
	if (timed_out) {
		pvg_msg_set(why, NULL, "%s did not answer within %d s", python, PY_TIMEOUT_MS / 1000);
		ret = -ETIMEDOUT;
	} else if (ok && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		*path = pvg_strdup(ok);
		ret = 0;
	} else if (err) {
		pvg_msg_set(why, NULL, "%s", err);
		ret = -ENOENT;
	} else if (exec_err) {
		pvg_msg_set(why, NULL, "%s", exec_err);
		ret = -ENOEXEC;
	} else {
		char *nl = strchr(out, '\n');
		if (nl)
			*nl = '\0';
		pvg_msg_set(why, NULL, "%s exited with status %d%s%s", python,
			    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
			    out[0] ? ": " : "", out);
		ret = -ENOEXEC;
	}
	free(out);
	return ret;
}
