/* SPDX-License-Identifier: MIT */
/* What the verbs share besides rendering: the config they load, the --gates list, the output
 * flags and report files (written whole or not at all), hashing progress on the terminal. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>

#include "cli.h"

/* ---- the config and the gates --------------------------------------------------------------- */

int cli_load_config(const char *opt_path, struct pvg_config **cfg)
{
	const char *path = opt_path;
	const char *env = getenv("PROVGATE_CONFIG");
	if (!path && env && env[0])
		path = env;
	if (!path) {
		if (access("provgate.json", F_OK) != 0) {
			fprintf(stderr,
				"provgate: no config: 'provgate init' writes a starting ./provgate.json "
				"from your build and running service; or pass -c FILE, or set "
				"PROVGATE_CONFIG (see provgate.json(5))\n");
			return EXIT_USAGE;
		}
		path = "provgate.json";
	}
	struct pvg_error err = { { 0 } };
	if (pvg_config_load(path, cfg, &err) < 0) {
		fprintf(stderr, "provgate: %s\n", err.message);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int cli_parse_gates(const char *spec, pvg_gate_mask *out)
{
	pvg_gate_mask m = 0;
	_cleanup_free_ char *copy = pvg_strdup(spec);
	char *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int lo = 0, hi = 0;
		char tail = 0;
		for (int id = 1; id <= PVG_N_GATES; id++)
			if (strcmp(t, pvg_gate_name(id)) == 0)
				lo = hi = id;
		if (!lo) {
			int n = sscanf(t, "%d-%d%c", &lo, &hi, &tail);
			if (n == 1 && strchr(t, '-') == NULL) {
				char extra;
				if (sscanf(t, "%d%c", &lo, &extra) != 1)
					lo = 0;
				hi = lo;
			} else if (n != 2) {
				lo = 0;
			}
		}
		if (lo < 1 || hi > PVG_N_GATES || lo > hi) {
			fprintf(stderr,
				"provgate: --gates: \"%s\" is not a gate (1-7, a range like 3-4, or a "
				"name like artifact-hash)\n",
				t);
			return -EINVAL;
		}
		for (int id = lo; id <= hi; id++)
			m |= PVG_GATE_BIT(id);
	}
	if (!m) {
		fprintf(stderr, "provgate: --gates: empty list\n");
		return -EINVAL;
	}
	*out = m;
	return 0;
}

/* ---- output flags and report files ---------------------------------------------------------- */

int cli_write_outputs(const char *who, int rc, const cJSON *doc, const struct cli_outputs *o,
		      const char *junit_xml)
{
	const char *json = o->json, *junit = o->junit;
	const struct cli_attest *a = &o->attest;
	int r;
	if (json) {
		_cleanup_free_ char *text = cJSON_Print(doc);
		_cleanup_free_ char *line = pvg_asprintf("%s\n", text);
		if ((r = cli_write_file(json, line)) < 0) {
			fprintf(stderr, "%s: cannot write %s: %s\n", who, json, strerror(-r));
			rc = EXIT_USAGE;
		}
	}
	if (a->path) {
		r = cli_write_attestation(a->path, doc, NULL, 0, a->key);
		if (r != EXIT_OK && (rc == EXIT_OK || r != EXIT_NOT_CERTIFIED))
			rc = r; /* a file not written outranks a refusal */
	}
	if (junit && (r = cli_write_file(junit, junit_xml)) < 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", who, junit, strerror(-r));
		rc = EXIT_USAGE;
	}
	return rc;
}

bool cli_output_flag(int c, const char *arg, struct cli_outputs *o)
{
	switch (c) {
	case CLI_OPT_JSON:
		o->json = arg;
		return true;
	case CLI_OPT_JUNIT:
		o->junit = arg;
		return true;
	case CLI_OPT_ATTEST:
		o->attest.path = arg;
		return true;
	case CLI_OPT_SIGN_KEY:
		o->attest.key_path = arg;
		return true;
	case CLI_OPT_NO_COLOR:
		o->no_color = true;
		return true;
	case 'q':
		o->verbosity = -1;
		return true;
	case 'v':
		o->verbosity = 1;
		return true;
	default:
		return false;
	}
}

FILE *cli_text_out(const struct cli_outputs *o, struct cli_style *st)
{
	if (o->json && strcmp(o->json, "-") == 0)
		return NULL;
	/* --junit -: stdout holds the XML alone, the text goes to stderr */
	FILE *f = o->junit && strcmp(o->junit, "-") == 0 ? stderr : stdout;
	cli_style_init(st, f, o->no_color);
	return f;
}

void cli_outputs_done(struct cli_outputs *o)
{
	cli_attest_close(&o->attest);
}

/* A temp file beside PATH (so that rename() onto PATH stays on one file system): its fd, its
 * name in *tmp (freed by the caller), or -errno. */
static int open_temp_beside(const char *path, char **tmp)
{
	*tmp = pvg_asprintf("%s.tmp.XXXXXX", path);
	int fd = mkostemp(*tmp, O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* How a report reaches PATH. A file (or no file yet) is replaced whole by a rename, so that a
 * reader never sees half a report; through a link to a file, the file is replaced and the link
 * kept. Anything else is written in place and never replaced: a device (/dev/null, which root
 * would otherwise turn into a file for every process on the machine), a FIFO or socket (a
 * reader waiting on >(jq .)), and our own descriptors (/dev/stdout, /dev/fd/N,
 * /proc/self/fd/N, as links or as named). */
enum out_kind { OUT_REPLACE, OUT_IN_PLACE, OUT_FD };

static int own_fd(const char *p)
{
	static const char *const prefixes[] = { "/dev/fd/", "/proc/self/fd/" };
	if (strcmp(p, "/dev/stdout") == 0)
		return 1;
	if (strcmp(p, "/dev/stderr") == 0)
		return 2;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(p, prefixes[i], n) == 0 && p[n] >= '0' && p[n] <= '9') {
			char *end;
			errno = 0;
			long fd = strtol(p + n, &end, 10);
			if (!*end && !errno && fd <= INT_MAX)
				return (int)fd;
		}
	}
	return -1;
}

/* The kind, and in *target (the caller frees) the path a rename replaces or *fd the
 * descriptor. */
static enum out_kind out_kind(const char *path, char **target, int *fd)
{
	*target = NULL;
	*fd = own_fd(path);
	if (*fd >= 0)
		return OUT_FD;
	char link[PATH_MAX];
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		if ((*fd = own_fd(link)) >= 0)
			return OUT_FD;
	}
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return OUT_IN_PLACE;
	if (n > 0) {
		/* a link to a file (or to none yet): replace what it names, keep the link */
		char *real = realpath(path, NULL);
		if (real) {
			*target = real;
		} else if (link[0] == '/') {
			*target = pvg_strdup(link);
		} else { /* relative to the link's folder */
			_cleanup_free_ char *dir = pvg_strdup(path);
			char *slash = strrchr(dir, '/');
			if (slash)
				slash[1] = '\0';
			*target = slash ? pvg_asprintf("%s%s", dir, link) : pvg_strdup(link);
		}
		return OUT_REPLACE;
	}
	*target = pvg_strdup(path);
	return OUT_REPLACE;
}

static int write_all(int fd, const char *text, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (size_t)w;
	}
	return 0;
}

int cli_check_writable(const char *path)
{
	if (strcmp(path, "-") == 0)
		return 0;
	_cleanup_free_ char *target = NULL;
	int fd;
	switch (out_kind(path, &target, &fd)) {
	case OUT_FD: {
		int fl = fcntl(fd, F_GETFL);
		return fl < 0 || (fl & O_ACCMODE) == O_RDONLY ? -EBADF : 0;
	}
	case OUT_IN_PLACE:
		/* not opened here: a FIFO's open waits for its reader */
		return access(path, W_OK) < 0 ? -errno : 0;
	case OUT_REPLACE:
		break;
	}
	_cleanup_free_ char *tmp = NULL;
	int tfd = open_temp_beside(target, &tmp);
	if (tfd < 0)
		return tfd;
	close(tfd);
	unlink(tmp);
	return 0;
}

int cli_write_file(const char *path, const char *text)
{
	size_t len = strlen(text);
	if (strcmp(path, "-") == 0) {
		if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
			return -EIO;
		return 0;
	}
	_cleanup_free_ char *target = NULL;
	int ofd;
	switch (out_kind(path, &target, &ofd)) {
	case OUT_FD:
		if (ofd == 1 && fflush(stdout) != 0)
			return -EIO;
		if (ofd == 2)
			fflush(stderr);
		return write_all(ofd, text, len);
	case OUT_IN_PLACE: {
		_cleanup_close_ int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		struct stat st;
		/* what was opened must still be no file: a rename to a file between the two
		 * checks is written as the file it now is (truncated first), never half */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0)
			return -errno;
		return write_all(fd, text, len);
	}
	case OUT_REPLACE:
		break;
	}
	/* temp file beside the target, then rename: a reader never sees half a report */
	_cleanup_free_ char *tmp = NULL;
	int fd = open_temp_beside(target, &tmp);
	if (fd < 0)
		return fd;
	int e = write_all(fd, text, len);
	if (e < 0) {
		close(fd);
		unlink(tmp);
		return e;
	}
	(void)fchmod(fd, 0644 & ~(mode_t)0);
	if (fsync(fd) < 0 || close(fd) < 0) {
		e = -errno;
		unlink(tmp);
		return e;
	}
	if (rename(tmp, target) < 0) {
		e = -errno;
		unlink(tmp);
		return e;
	}
	return 0;
}

int cli_write_json(const char *path, const struct pvg_run *run)
{
	_cleanup_free_ char *text = pvg_run_report_json(run);
	_cleanup_free_ char *withnl = pvg_asprintf("%s\n", text);
	return cli_write_file(path, withnl);
}

int cli_write_reports(const char *json, const char *junit, const struct pvg_run *run)
{
	int rc = EXIT_OK, r;
	if (json && (r = cli_write_json(json, run)) < 0) {
		fprintf(stderr, "provgate: cannot write report %s: %s\n", json, strerror(-r));
		rc = EXIT_USAGE;
	}
	if (junit) {
		_cleanup_free_ char *xml = cli_junit(run);
		if ((r = cli_write_file(junit, xml)) < 0) {
			fprintf(stderr, "provgate: cannot write JUnit report %s: %s\n", junit,
				strerror(-r));
			rc = EXIT_USAGE;
		}
	}
	return rc;
}

/* ---- progress ------------------------------------------------------------------------------ */

static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t progress_start;

/* How long hashing runs before progress shows: PROVGATE_PROGRESS_AFTER_MS, default a second. */
static uint64_t progress_after_ns(void)
{
	const char *e = getenv("PROVGATE_PROGRESS_AFTER_MS");
	if (e && *e) {
		char *end;
		errno = 0;
		unsigned long long ms = strtoull(e, &end, 10);
		if (!*end && !errno && ms <= 86400000ull && e[0] != '-')
			return (uint64_t)ms * 1000000u;
	}
	return 1000000000u;
}

void cli_progress(const char *path, uint64_t done, uint64_t total)
{
	if (!isatty(STDERR_FILENO))
		return;
	pthread_mutex_lock(&progress_lock);
	uint64_t now = pvg_now_ns();
	if (!progress_start)
		progress_start = now;
	/* Only once hashing has taken more than a second: short runs stay quiet. */
	if (now - progress_start >= progress_after_ns()) {
		const char *name = pvg_basename(path);
		_cleanup_free_ char *shown = pvg_escape_term(name, strlen(name));
		if (done >= total)
			fprintf(stderr, "\r\033[Khashed %s (%.1f MiB)\n", shown,
				(double)total / 1048576.0);
		else
			fprintf(stderr, "\r\033[Khashing %s: %3d%% of %.1f MiB", shown,
				total ? (int)(done * 100 / total) : 0, (double)total / 1048576.0);
	}
	pthread_mutex_unlock(&progress_lock);
}
