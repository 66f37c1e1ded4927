/* SPDX-License-Identifier: MIT */
/*
 * Build-log parser. Lines come from PyTorch's hipify
 * ("SRC -> DST [ok]"), ninja ("[3/7] cmd", "FAILED: out"), the compilers ("x.hip:3:1: error:")
 * and the commands themselves when the build is verbose (ninja -v, VERBOSE=1).
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "formats/buildlog.h"
#include "formats/codeobj/codeobj.h"

void pvg_buildlog_init(struct pvg_buildlog *log)
{
	memset(log, 0, sizeof(*log));
	log->unsupported_calls = -1;
	log->kernel_launches = -1;
	log->ninja_step = log->ninja_total = -1;
}

void pvg_buildlog_done(struct pvg_buildlog *log)
{
	for (size_t i = 0; i < log->n_hipify; i++) {
		free(log->hipify[i].src);
		free(log->hipify[i].dst);
	}
	free(log->hipify);
	for (size_t i = 0; i < log->n_commands; i++)
		free(log->commands[i].text);
	free(log->commands);
	for (size_t i = 0; i < log->n_failed_kept; i++)
		free(log->failed[i]);
	for (size_t i = 0; i < log->n_errors_kept; i++)
		free(log->errors[i]);
	pvg_strv_clear(&log->dirs);
	free(log->line);
	memset(log, 0, sizeof(*log));
}

size_t pvg_strip_ansi(char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\x1b') {
			s[o++] = s[i];
			continue;
		}
		if (i + 1 < len && s[i + 1] == '[') {
			/* CSI: parameters and intermediates up to one final byte 0x40..0x7e */
			size_t j = i + 2;
			while (j < len && !((unsigned char)s[j] >= 0x40 && (unsigned char)s[j] <= 0x7e))
				j++;
			i = j < len ? j : len - 1;
		} else if (i + 1 < len) {
			i++; /* two-byte escape */
		}
	}
	return o;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(s, prefix, n) == 0;
}

static bool keep_room(struct pvg_buildlog *log, size_t bytes)
{
	if (log->keep_bytes + bytes > PVG_BUILDLOG_KEEP_MAX) {
		log->truncated = true;
		return false;
	}
	log->keep_bytes += bytes;
	return true;
}

static char *dup_n(const char *s, size_t n)
{
	char *p = pvg_xcalloc(n + 1, 1);
	memcpy(p, s, n);
	return p;
}

static void keep_sample(struct pvg_buildlog *log, char **samples, size_t *n_kept, const char *s,
			size_t len, size_t lineno)
{
	if (*n_kept >= PVG_BUILDLOG_SAMPLES)
		return;
	_cleanup_free_ char *text = pvg_utf8_sanitize(s, len > 400 ? 400 : len);
	samples[(*n_kept)++] = pvg_asprintf("line %zu: %s%s", lineno, text, len > 400 ? "…" : "");
	(void)log;
}

/* "1234" at s (at most 18 digits); -1 when none. */
static long parse_count(const char *s, size_t len, size_t *used)
{
	long v = 0;
	size_t i = 0;
	while (i < len && i < 18 && s[i] >= '0' && s[i] <= '9')
		v = v * 10 + (s[i++] - '0');
	if (used)
		*used = i;
	return i ? v : -1;
}

static const struct {
	const char *text;
	enum pvg_hipify_status status;
} hipify_statuses[] = {
	{ "[ok]", PVG_HIPIFY_OK },
	{ "[skipped, no changes]", PVG_HIPIFY_SKIPPED_NO_CHANGES },
	{ "[skipped, already hipified]", PVG_HIPIFY_SKIPPED_ALREADY },
	{ "[skipped, no permissions]", PVG_HIPIFY_SKIPPED_NO_PERMISSIONS },
	{ "[skipped,", PVG_HIPIFY_SKIPPED_OTHER },
	{ "[ignored,", PVG_HIPIFY_IGNORED },
};

static bool parse_hipify(struct pvg_buildlog *log, const char *s, size_t len)
{
	if (len < 8 || s[len - 1] != ']')
		return false;
	const char *arrow = memmem(s, len, " -> ", 4);
	if (!arrow)
		return false;
	/* the status is the last " [" group */
	const char *br = NULL;
	for (const char *p = s + len - 1; p > arrow + 4; p--)
		if (*p == '[' && p[-1] == ' ') {
			br = p;
			break;
		}
	if (!br)
		return false;
	size_t slen = (size_t)(s + len - br);
	int found = -1;
	for (size_t i = 0; i < ARRAY_SIZE(hipify_statuses) && found < 0; i++) {
		size_t n = strlen(hipify_statuses[i].text);
		if (hipify_statuses[i].text[n - 1] == ']' ? (slen == n && memcmp(br, hipify_statuses[i].text, n) == 0)
							 : (slen >= n && memcmp(br, hipify_statuses[i].text, n) == 0))
			found = (int)i;
	}
	if (found < 0)
		return false;
	size_t src_len = (size_t)(arrow - s);
	const char *dst = arrow + 4;
	size_t dst_len = (size_t)(br - 1 - dst);
	if (src_len == 0 || dst_len == 0 || memchr(s, ' ', src_len) == s)
		return false;
	if (log->n_hipify >= PVG_BUILDLOG_ENTRIES_MAX || !keep_room(log, src_len + dst_len + 2)) {
		log->truncated = true;
		return true;
	}
	log->hipify = pvg_xrealloc(log->hipify, log->n_hipify + 1, sizeof(*log->hipify));
	struct pvg_hipify_line *h = &log->hipify[log->n_hipify++];
	h->src = dup_n(s, src_len);
	h->dst = dup_n(dst, dst_len);
	h->status = hipify_statuses[found].status;
	h->lineno = log->n_lines;
	return true;
}

/* A compiler diagnostic: "file:1:2: error: ...", "clang: error: ...", "error: ...",
 * "nvcc fatal   : ...", "... fatal error: ...". */
static bool is_error_diagnostic(const char *s, size_t len)
{
	if (starts_with(s, len, "error:") || starts_with(s, len, "error ") ||
	    starts_with(s, len, "fatal error:") || starts_with(s, len, "nvcc fatal") ||
	    starts_with(s, len, "nvcc error"))
		return true;
	return memmem(s, len, ": error:", 8) || memmem(s, len, ": fatal error:", 14) ||
	       memmem(s, len, ": error #", 9) /* nvcc/EDG front end */;
}

/* Whole-word search for a command argument in s. */
static bool has_arg(const char *s, size_t len, const char *arg)
{
	size_t n = strlen(arg);
	for (const char *p = s; (p = memmem(p, len - (size_t)(p - s), arg, n)); p++) {
		bool left = p == s || p[-1] == ' ' || p[-1] == '\t';
		bool right = (size_t)(p - s) + n == len || p[n] == ' ' || p[n] == '\t';
		if (left && right)
			return true;
		if ((size_t)(p - s) + n >= len)
			break;
	}
	return false;
}

/* Keeps a folder the build ran in (at most PVG_BUILDLOG_DIRS_MAX, no duplicates). */
static void add_dir(struct pvg_buildlog *log, const char *d, size_t n)
{
	if (log->dirs.n >= PVG_BUILDLOG_DIRS_MAX || !keep_room(log, n + 1))
		return;
	_cleanup_free_ char *dir = dup_n(d, n);
	for (size_t i = 0; i < log->dirs.n; i++)
		if (strcmp(log->dirs.v[i], dir) == 0)
			return;
	pvg_strv_push(&log->dirs, TAKE_PTR(dir));
}

/* "ninja: Entering directory `X'", "make[2]: Entering directory '/x'": the folder commands
 * that follow run in. */
static bool parse_entering(struct pvg_buildlog *log, const char *s, size_t len)
{
	const char *e = memmem(s, len, ": Entering directory ", 21);
	if (!e || !(starts_with(s, len, "ninja:") || starts_with(s, len, "make")))
		return false;
	const char *d = e + 21;
	size_t n = (size_t)(s + len - d);
	if (n < 3 || (d[0] != '`' && d[0] != '\'') || d[n - 1] != '\'')
		return false;
	add_dir(log, d + 1, n - 2);
	return true;
}

/* Bash's xtrace ("set -x") writes each command after PS4, "+ " once per nesting level:
 * "+ hipcc ...", "++ dirname ./build.sh". Returns how many bytes the prefix takes, 0 none. */
static size_t xtrace_prefix(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len && i < 8 && s[i] == '+')
		i++;
	return i && i + 1 < len && s[i] == ' ' && s[i + 1] != ' ' ? i + 1 : 0;
}

/* xtrace's "+ cd /abs/dir": the folder the script's later commands run in. */
static bool parse_xtrace_cd(struct pvg_buildlog *log, const char *s, size_t len)
{
	if (!starts_with(s, len, "cd "))
		return false;
	const char *d = s + 3;
	size_t n = len - 3;
	if (n >= 2 && (d[0] == '\'' || d[0] == '"') && d[n - 1] == d[0]) {
		d++;
		n -= 2;
	}
	if (n && d[0] == '/' && !memchr(d, ' ', n) && !memchr(d, '&', n) && !memchr(d, ';', n))
		add_dir(log, d, n);
	return true;
}

/* An archiver's name: "ar", "llvm-ar", "x86_64-linux-gnu-gcc-ar", "llvm-ar-15". */
static bool is_archiver(const char *w, size_t n)
{
	const char *slash = NULL;
	for (size_t i = 0; i < n; i++)
		if (w[i] == '/')
			slash = w + i;
	if (slash) {
		n -= (size_t)(slash + 1 - w);
		w = slash + 1;
	}
	/* a version suffix: "llvm-ar-15" */
	while (n > 2 && w[n - 1] >= '0' && w[n - 1] <= '9')
		n--;
	if (n > 1 && w[n - 1] == '-')
		n--;
	return (n == 2 && memcmp(w, "ar", 2) == 0) || (n > 3 && memcmp(w + n - 3, "-ar", 3) == 0);
}

/* An ar operation letter group: "qc", "rcs", "crT", "-rcs". */
static bool is_ar_operation(const char *w, size_t n)
{
	if (n && w[0] == '-') {
		w++;
		n--;
	}
	bool op = false;
	for (size_t i = 0; i < n; i++) {
		if (!strchr("qrcsuvDTSP", w[i]))
			return false;
		op |= w[i] == 'q' || w[i] == 'r';
	}
	return n > 0 && op;
}

/* A command (or one of a "cmd && cmd" line's) that runs ar with an operation that adds members. */
static bool is_archive_line(const char *s, size_t len)
{
	const char *prev = NULL;
	size_t prev_n = 0;
	for (size_t i = 0; i < len;) {
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		size_t b = i;
		while (i < len && s[i] != ' ' && s[i] != '\t')
			i++;
		if (i == b)
			break;
		if (prev && is_archiver(prev, prev_n) && is_ar_operation(s + b, i - b))
			return true;
		prev = s + b;
		prev_n = i - b;
	}
	return false;
}

static void keep_command(struct pvg_buildlog *log, const char *s, size_t len, bool compile)
{
	/* ninja wraps link steps as ": && cmd && :" */
	if (starts_with(s, len, ": && ")) {
		s += 5;
		len -= 5;
	}
	if (len >= 5 && memcmp(s + len - 5, " && :", 5) == 0)
		len -= 5;
	if (log->n_commands >= PVG_BUILDLOG_ENTRIES_MAX || !keep_room(log, len + 1))
		return;
	log->commands = pvg_xrealloc(log->commands, log->n_commands + 1, sizeof(*log->commands));
	struct pvg_build_command *c = &log->commands[log->n_commands++];
	c->text = dup_n(s, len);
	c->lineno = log->n_lines;
	c->compile = compile;
}

static void parse_clean_line(struct pvg_buildlog *log, char *s, size_t len)
{
	len = pvg_strip_ansi(s, len);
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	/* pip -v and setup.py indent the build's output */
	while (len && (s[0] == ' ' || s[0] == '\t')) {
		s++;
		len--;
	}
	if (len == 0)
		return;
	/* tools print text: a line with control bytes is garbage, not a command */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			log->n_binary++;
			return;
		}
	}

	/* make's progress "[ 42%] " (CMake's Makefiles) */
	if (len > 7 && s[0] == '[' && s[4] == '%' && s[5] == ']' && s[6] == ' ' &&
	    (s[1] == ' ' || (s[1] >= '0' && s[1] <= '9')) &&
	    (s[2] == ' ' || (s[2] >= '0' && s[2] <= '9')) && s[3] >= '0' && s[3] <= '9') {
		s += 7;
		len -= 7;
	}
	/* ninja progress "[i/n] " */
	if (s[0] == '[') {
		size_t a, b;
		long i = parse_count(s + 1, len - 1, &a);
		if (i >= 0 && 1 + a < len && s[1 + a] == '/') {
			long n = parse_count(s + 2 + a, len - 2 - a, &b);
			size_t end = 2 + a + b;
			if (n >= 0 && end < len && s[end] == ']') {
				log->ninja_step = i;
				log->ninja_total = n;
				log->n_ninja_lines++;
				end++;
				while (end < len && s[end] == ' ')
					end++;
				s += end;
				len -= end;
				if (len == 0)
					return;
			}
		}
	}

	if (starts_with(s, len, "FAILED:")) {
		log->n_failed++;
		keep_sample(log, log->failed, &log->n_failed_kept, s, len, log->n_lines);
		return;
	}
	static const char unsup[] = "Total number of unsupported CUDA function calls: ";
	static const char launches[] = "Total number of replaced kernel launches: ";
	if (starts_with(s, len, unsup)) {
		long v = parse_count(s + sizeof(unsup) - 1, len - (sizeof(unsup) - 1), NULL);
		if (v > log->unsupported_calls)
			log->unsupported_calls = v;
		return;
	}
	if (starts_with(s, len, launches)) {
		long v = parse_count(s + sizeof(launches) - 1, len - (sizeof(launches) - 1), NULL);
		if (v > log->kernel_launches)
			log->kernel_launches = v;
		return;
	}
	if (parse_entering(log, s, len))
		return;
	size_t xt = xtrace_prefix(s, len);
	if (xt) {
		s += xt;
		len -= xt;
		if (parse_xtrace_cd(log, s, len))
			return;
	}
	if (parse_hipify(log, s, len))
		return;
	if (is_error_diagnostic(s, len)) {
		log->n_errors++;
		keep_sample(log, log->errors, &log->n_errors_kept, s, len, log->n_lines);
		return;
	}
	if (has_arg(s, len, "-c"))
		keep_command(log, s, len, true);
	else if (has_arg(s, len, "-o") || memmem(s, len, " -o", 3) || starts_with(s, len, "Linking ") ||
		 is_archive_line(s, len))
		keep_command(log, s, len, false);
	else if (starts_with(s, len, "Building "))
		keep_command(log, s, len, false); /* a non-verbose step description */
}

void pvg_buildlog_parse_line(struct pvg_buildlog *log, const char *line, size_t len)
{
	log->n_lines++;
	_cleanup_free_ char *copy = dup_n(line, len);
	parse_clean_line(log, copy, len);
}

static void end_line(struct pvg_buildlog *log)
{
	log->n_lines++;
	if (log->line_overlong)
		log->n_overlong++;
	parse_clean_line(log, log->line, log->line_len);
	log->line_len = 0;
	log->line_overlong = false;
}

void pvg_buildlog_feed(struct pvg_buildlog *log, const char *bytes, size_t len)
{
	if (!log->line)
		log->line = pvg_xcalloc(PVG_BUILDLOG_LINE_MAX + 1, 1);
	log->n_bytes += len;
	while (len) {
		const char *nl = memchr(bytes, '\n', len);
		const char *cr = memchr(bytes, '\r', nl ? (size_t)(nl - bytes) : len);
		const char *end = cr ? cr : nl;
		size_t take = end ? (size_t)(end - bytes) : len;
		size_t room = PVG_BUILDLOG_LINE_MAX - log->line_len;
		size_t copy = take < room ? take : room;
		memcpy(log->line + log->line_len, bytes, copy);
		log->line_len += copy;
		if (copy < take)
			log->line_overlong = true;
		if (!end)
			return;
		end_line(log);
		/* "\r\n" ends one line, not two */
		size_t skip = take + 1;
		if (*end == '\r' && skip < len && bytes[skip] == '\n')
			skip++;
		bytes += skip;
		len -= skip;
	}
}

void pvg_buildlog_finish(struct pvg_buildlog *log)
{
	if (log->line && (log->line_len || log->line_overlong))
		end_line(log);
}

int pvg_buildlog_read_file(struct pvg_buildlog *log, const char *path)
{
	struct stat st;
	_cleanup_close_ int fd = pvg_open_regular(path, &st);
	if (fd < 0)
		return fd;
	_cleanup_free_ char *buf = pvg_xcalloc(1u << 20, 1);
	for (;;) {
		ssize_t r = pvg_read_full(fd, buf, 1u << 20);
		if (r < 0)
			return (int)r;
		if (r > 0)
			pvg_buildlog_feed(log, buf, (size_t)r);
		if (r < (ssize_t)(1u << 20))
			break;
	}
	pvg_buildlog_finish(log);
	return 0;
}

/* ---- command lines ------------------------------------------------------------------------- */

/* Splits a command into arguments (whitespace; quotes removed, not interpreted further). */
static size_t split_args(char *s, char **argv, size_t max)
{
	size_t n = 0;
	char *p = s;
	while (*p && n < max) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		char *o = p;
		argv[n++] = o;
		char quote = 0;
		while (*p && (quote || (*p != ' ' && *p != '\t'))) {
			if (!quote && (*p == '"' || *p == '\'')) {
				quote = *p++;
				continue;
			}
			if (quote && *p == quote) {
				quote = 0;
				p++;
				continue;
			}
			*o++ = *p++;
		}
		if (*p)
			p++;
		*o = '\0';
	}
	return n;
}

#define MAX_ARGS 8192

static bool path_matches(const char *arg, const char *path)
{
	if (strcmp(arg, path) == 0)
		return true;
	if (path[0] == '/')
		return false;
	size_t a = strlen(arg), p = strlen(path);
	return a > p && arg[a - p - 1] == '/' && strcmp(arg + a - p, path) == 0;
}

bool pvg_command_mentions(const char *command, const char *path)
{
	/* most commands do not name the file at all: skip them before splitting */
	if (!strstr(command, pvg_basename(path)))
		return false;
	_cleanup_free_ char *s = pvg_strdup(command);
	_cleanup_free_ char **argv = pvg_xrealloc(NULL, MAX_ARGS, sizeof(char *));
	size_t n = split_args(s, argv, MAX_ARGS);
	for (size_t i = 0; i < n; i++)
		if (path_matches(argv[i], path))
			return true;
	return false;
}

static void add_seen(char **seen, const char *item, size_t len)
{
	if (len == 0)
		return;
	_cleanup_free_ char *it = pvg_utf8_sanitize(item, len > 64 ? 64 : len);
	if (*seen) {
		/* no duplicates */
		size_t n = strlen(it);
		for (const char *p = *seen; (p = strstr(p, it)); p++)
			if ((p == *seen || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
				return;
		char *j = pvg_asprintf("%s,%s", *seen, it);
		free(*seen);
		*seen = j;
	} else {
		*seen = TAKE_PTR(it);
	}
}

static const char *const hip_flags[] = { "--offload-arch", "-offload-arch", "--amdgpu-target",
					 "--cuda-gpu-arch" };
static const char *const cuda_flags[] = { "-gencode", "--generate-code", "-arch",
					  "--gpu-architecture", "-code", "--gpu-code",
					  "--cuda-gpu-arch", "--offload-arch" };

static bool host_compiler(const char *arg)
{
	const char *b = strrchr(arg, '/');
	b = b ? b + 1 : arg;
	/* a target prefix: x86_64-linux-gnu-g++ */
	const char *names[] = { "g++", "gcc", "c++", "cc", "clang++", "clang" };
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		size_t bl = strlen(b), nl = strlen(names[k]);
		for (const char *at = b; at + nl <= b + bl; at++) {
			if (memcmp(at, names[k], nl) != 0 || (at > b && at[-1] != '-'))
				continue;
			const char *rest = at + nl;
			/* a version suffix: g++-12, clang++-15, gcc12 */
			if (*rest == '-')
				rest++;
			while (*rest >= '0' && *rest <= '9')
				rest++;
			if (*rest == '.')
				for (rest++; *rest >= '0' && *rest <= '9'; rest++)
					;
			if (*rest == '\0')
				return true;
		}
	}
	return false;
}

static bool host_source(const char *source)
{
	const char *dot = strrchr(source, '.');
	if (!dot || strchr(dot, '/'))
		return false;
	const char *exts[] = { ".c", ".cc", ".cpp", ".cxx", ".c++", ".C" };
	for (size_t k = 0; k < ARRAY_SIZE(exts); k++)
		if (strcmp(dot, exts[k]) == 0)
			return true;
	return false;
}

bool pvg_command_host_only(const char *command, const char *source)
{
	if (!host_source(source))
		return false;
	_cleanup_free_ char *s = pvg_strdup(command);
	_cleanup_free_ char **argv = pvg_xrealloc(NULL, MAX_ARGS, sizeof(char *));
	size_t n = split_args(s, argv, MAX_ARGS);
	if (n == MAX_ARGS)
		return false; /* not read to its end */
	const char *compiler = NULL;
	static const char *const device[] = { "--offload", "--cuda", "-fgpu", "--hip", "-fhip",
					      "-fcuda", "-gencode", "--gpu-architecture",
					      "--amdgpu-target", "-mcpu=gfx", "-arch=sm_", "-xhip",
					      "-xcuda", "-xcu" };
	for (size_t i = 0; i < n; i++) {
		const char *a = argv[i];
		if (!compiler) {
			/* before the compiler: "cd DIR &&", variables, launchers */
			const char *b = strrchr(a, '/');
			b = b ? b + 1 : a;
			if (strcmp(a, "&&") == 0 || strcmp(a, ":") == 0 || strcmp(a, "cd") == 0 ||
			    strchr(a, '=') || strcmp(b, "ccache") == 0 || strcmp(b, "sccache") == 0 ||
			    strcmp(b, "distcc") == 0 || strcmp(b, "env") == 0) {
				if (strcmp(a, "cd") == 0 && i + 1 < n)
					i++;
				continue;
			}
			if (a[0] == '[') /* ninja's "[3/7]" */
				continue;
			compiler = a;
			if (!host_compiler(a))
				return false;
			continue;
		}
		if (strcmp(a, "&&") == 0)
			break; /* what follows is another command */
		for (size_t k = 0; k < ARRAY_SIZE(device); k++)
			if (strncmp(a, device[k], strlen(device[k])) == 0)
				return false;
		if (strcmp(a, "-x") == 0 && i + 1 < n && strcmp(argv[i + 1], "c") != 0 &&
		    strcmp(argv[i + 1], "c++") != 0)
			return false; /* -x hip, -x cuda, -x cu */
	}
	return compiler != NULL;
}

enum pvg_hip_compile pvg_command_hip_compile(const char *command)
{
	_cleanup_free_ char *s = pvg_strdup(command);
	_cleanup_free_ char **argv = pvg_xrealloc(NULL, MAX_ARGS, sizeof(char *));
	size_t n = split_args(s, argv, MAX_ARGS);
	enum pvg_hip_compile r = PVG_HIP_COMPILE_NO;
	bool at_compiler = true;
	for (size_t i = 0; i < n; i++) {
		const char *a = argv[i];
		if (strcmp(a, "&&") == 0 || strcmp(a, ";") == 0) {
			at_compiler = true;
			continue;
		}
		if ((strcmp(a, "-x") == 0 && i + 1 < n && strcmp(argv[i + 1], "hip") == 0) ||
		    strcmp(a, "-xhip") == 0)
			return PVG_HIP_COMPILE_X_HIP;
		if (!at_compiler)
			continue;
		/* before the compiler: "cd DIR", variables, launchers */
		const char *b = strrchr(a, '/');
		b = b ? b + 1 : a;
		if (strcmp(a, "cd") == 0) {
			i++;
			continue;
		}
		if (strchr(a, '=') || strcmp(b, "ccache") == 0 || strcmp(b, "sccache") == 0 ||
		    strcmp(b, "distcc") == 0 || strcmp(b, "env") == 0 || strcmp(a, ":") == 0)
			continue;
		at_compiler = false;
		if (strcmp(b, "hipcc") == 0 || strcmp(b, "hipcc.pl") == 0 || strcmp(b, "hipcc.bin") == 0)
			r = PVG_HIP_COMPILE_HIPCC;
	}
	return r;
}

bool pvg_command_has_arch(const char *command, const char *arch, bool cuda, char **seen)
{
	_cleanup_free_ char *s = pvg_strdup(command);
	_cleanup_free_ char **argv = pvg_xrealloc(NULL, MAX_ARGS, sizeof(char *));
	size_t n = split_args(s, argv, MAX_ARGS);
	const char *const *flags = cuda ? cuda_flags : hip_flags;
	size_t n_flags = cuda ? ARRAY_SIZE(cuda_flags) : ARRAY_SIZE(hip_flags);
	bool match = false;
	*seen = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *value = NULL;
		for (size_t f = 0; f < n_flags && !value; f++) {
			size_t fl = strlen(flags[f]);
			if (strncmp(argv[i], flags[f], fl) != 0)
				continue;
			if (argv[i][fl] == '=')
				value = argv[i] + fl + 1;
			else if (argv[i][fl] == '\0' && i + 1 < n)
				value = argv[++i];
		}
		if (!value)
			continue;
		/* HIP: "gfx90a,gfx936:xnack-"; CUDA: "arch=compute_90,code=[sm_90,compute_90]" */
		const char *seps = cuda ? ",[]=" : ",";
		for (const char *p = value; *p;) {
			size_t len = strcspn(p, seps);
			if (cuda) {
				bool real = (len > 3 && memcmp(p, "sm_", 3) == 0) ||
					    (len > 8 && memcmp(p, "compute_", 8) == 0) ||
					    (len > 4 && memcmp(p, "lto_", 4) == 0);
				if (real)
					add_seen(seen, p, len);
				if (len == strlen(arch) && memcmp(p, arch, len) == 0)
					match = true;
			} else {
				add_seen(seen, p, len);
				/* the code objects this value builds serve arch (target-id.c) */
				_cleanup_free_ char *item = dup_n(p, len);
				if (pvg_target_compatible(arch, item))
					match = true;
			}
			p += len;
			if (*p)
				p++;
		}
	}
	return match;
}

/* ---- questions asked of a parsed log --------------------------------------------------------- */

const struct pvg_hipify_line *pvg_buildlog_find_hipify(const struct pvg_buildlog *log, const char *rel)
{
	for (size_t i = log->n_hipify; i-- > 0;)
		if (path_matches(log->hipify[i].src, rel))
			return &log->hipify[i];
	return NULL;
}

/* The last output of a link command (or of cmake's "Linking ..." line) that want accepts, as
 * a copy, with the command's line; the commands' text is scanned once per call, newest first,
 * and only commands holding hint are split. */
static char *last_link_output(const struct pvg_buildlog *log, const char *hint,
			      bool (*want)(const char *out, const void *arg), const void *arg,
			      size_t *lineno)
{
	for (size_t i = log->n_commands; i-- > 0;) {
		const struct pvg_build_command *c = &log->commands[i];
		if (c->compile || !strstr(c->text, hint))
			continue;
		_cleanup_free_ char *s = pvg_strdup(c->text);
		_cleanup_free_ char **argv = pvg_xrealloc(NULL, MAX_ARGS, sizeof(char *));
		size_t n = split_args(s, argv, MAX_ARGS);
		bool linking = n && strcmp(argv[0], "Linking") == 0;
		for (size_t k = 0; k < n; k++) {
			const char *out = NULL;
			if (strcmp(argv[k], "-o") == 0 && k + 1 < n)
				out = argv[k + 1];
			else if (strncmp(argv[k], "-o", 2) == 0 && argv[k][2])
				out = argv[k] + 2;
			else if (linking && k > 0)
				out = argv[k];
			if (out && want(out, arg)) {
				if (lineno)
					*lineno = c->lineno;
				return pvg_strdup(out);
			}
		}
	}
	return NULL;
}

static bool named(const char *out, const void *name)
{
	return strcmp(pvg_basename(out), name) == 0;
}

bool pvg_buildlog_links(const struct pvg_buildlog *log, const char *name, size_t *lineno)
{
	_cleanup_free_ char *out = last_link_output(log, name, named, name, lineno);
	return out != NULL;
}

/* A shared object's name: "x.so", "x.abi3.so", "libx.so.1.2" */
static bool is_shared_object(const char *path, const void *unused)
{
	(void)unused;
	const char *b = pvg_basename(path);
	size_t n = strlen(b);
	return (n > 3 && strcmp(b + n - 3, ".so") == 0) || strstr(b, ".so.") != NULL;
}

char *pvg_buildlog_link_output(const struct pvg_buildlog *log)
{
	return last_link_output(log, ".so", is_shared_object, NULL, NULL);
}

static bool is_source(const char *a)
{
	static const char *const ext[] = { ".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".c" };
	size_t n = strlen(a);
	for (size_t i = 0; i < ARRAY_SIZE(ext); i++) {
		size_t e = strlen(ext[i]);
		if (n > e && strcmp(a + n - e, ext[i]) == 0)
			return true;
	}
	return false;
}

void pvg_buildlog_sources(const struct pvg_buildlog *log, struct pvg_strv *out)
{
	for (size_t i = 0; i < log->n_hipify; i++)
		if (log->hipify[i].src)
			pvg_strv_add_unique(out, log->hipify[i].src);
	for (size_t i = 0; i < log->n_commands; i++) {
		const struct pvg_build_command *c = &log->commands[i];
		if (!c->compile)
			continue;
		_cleanup_free_ char *s = pvg_strdup(c->text);
		_cleanup_free_ char **argv = pvg_xrealloc(NULL, MAX_ARGS, sizeof(char *));
		size_t n = split_args(s, argv, MAX_ARGS);
		for (size_t k = 1; k < n; k++)
			if (argv[k][0] != '-' && strcmp(argv[k - 1], "-o") != 0 && is_source(argv[k]))
				pvg_strv_add_unique(out, argv[k]);
	}
}

/* ---- which objects go into which output ----------------------------------------------------- */

bool pvg_is_shared_object(const char *path)
{
	return is_shared_object(path, NULL);
}

static bool is_object_input(const char *a)
{
	size_t n = strlen(a);
	static const char *const ext[] = { ".o", ".obj", ".a", ".lo", ".so" };
	if (a[0] == '-')
		return strncmp(a, "-l", 2) == 0 && a[2];
	for (size_t i = 0; i < ARRAY_SIZE(ext); i++) {
		size_t e = strlen(ext[i]);
		if (n > e && strcmp(a + n - e, ext[i]) == 0)
			return true;
	}
	return strstr(pvg_basename(a), ".so.") != NULL;
}

/* Options whose next argument is not an input. */
static bool takes_value(const char *a)
{
	static const char *const opts[] = { "-o", "-MF", "-MT", "-MQ", "-L", "-I", "-isystem",
					    "-include", "-x", "-Xlinker", "-soname", "-rpath",
					    "-T", "-Xcompiler", "-ccbin", "--output-file",
					    "-D", "-U", "-z" };
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
		if (strcmp(a, opts[i]) == 0)
			return true;
	return false;
}

static void push_input(struct pvg_link_step *l, const char *a)
{
	l->inputs = pvg_xrealloc(l->inputs, l->n_inputs + 1, sizeof(*l->inputs));
	l->inputs[l->n_inputs++] = pvg_strdup(a);
}

/* A -Wl,a,b,c argument's pieces that are inputs ("-Wl,--whole-archive,libx.a"). */
static void wl_inputs(struct pvg_link_step *l, const char *a)
{
	_cleanup_free_ char *s = pvg_strdup(a + 4);
	char *save = NULL;
	bool skip = false;
	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (skip) {
			skip = false;
			continue;
		}
		if (strcmp(t, "-soname") == 0 || strcmp(t, "-rpath") == 0 || strcmp(t, "-o") == 0) {
			skip = true;
			continue;
		}
		if (t[0] != '-' && is_object_input(t))
			push_input(l, t);
	}
}

static void add_link(struct pvg_linkgraph *g, struct pvg_link_step *l)
{
	g->n_inputs += l->n_inputs;
	if (g->n_links >= PVG_LINKGRAPH_LINKS_MAX || g->n_inputs > PVG_LINKGRAPH_INPUTS_MAX) {
		g->truncated = true;
		free(l->output);
		free(l->dir);
		for (size_t k = 0; k < l->n_inputs; k++)
			free(l->inputs[k]);
		free(l->inputs);
		return;
	}
	g->links = pvg_xrealloc(g->links, g->n_links + 1, sizeof(*g->links));
	g->links[g->n_links++] = *l;
}

/* One command of a "cmd && cmd" line (argv, n): a compile, an ar or a link step. */
static void graph_command(struct pvg_linkgraph *g, const struct pvg_build_command *c, size_t ci,
			  char **argv, size_t n, const char *dir)
{
	if (n == 0)
		return;
	bool compile = false, rsp = false;
	const char *out = NULL, *mf = NULL;
	for (size_t k = 0; k < n; k++) {
		if (strcmp(argv[k], "-c") == 0)
			compile = true;
		else if (strcmp(argv[k], "-o") == 0 && k + 1 < n)
			out = argv[k + 1];
		else if (strncmp(argv[k], "-o", 2) == 0 && argv[k][2] && !out && argv[k][2] != '-')
			out = argv[k] + 2;
		else if (strcmp(argv[k], "-MF") == 0 && k + 1 < n)
			mf = argv[k + 1];
		else if (argv[k][0] == '@' && argv[k][1])
			rsp = true;
	}
	if (compile) {
		g->compiles = pvg_xrealloc(g->compiles, g->n_compiles + 1, sizeof(*g->compiles));
		struct pvg_compile_step *s = &g->compiles[g->n_compiles++];
		*s = (struct pvg_compile_step){
			.object = out ? pvg_strdup(out) : NULL,
			.dir = dir ? pvg_strdup(dir) : NULL,
			.depfile = mf ? pvg_strdup(mf) : NULL,
			.lineno = c->lineno,
			.command = ci,
		};
		return;
	}
	/* ar OP ARCHIVE MEMBERS... */
	for (size_t k = 0; k + 2 < n; k++) {
		if (!is_archiver(argv[k], strlen(argv[k])) ||
		    !is_ar_operation(argv[k + 1], strlen(argv[k + 1])))
			continue;
		struct pvg_link_step l = {
			.output = pvg_strdup(argv[k + 2]), .dir = dir ? pvg_strdup(dir) : NULL,
			.kind = PVG_LINK_ARCHIVE, .lineno = c->lineno, .command = ci,
			.inputs_known = true,
		};
		for (size_t m = k + 3; m < n; m++) {
			if (argv[m][0] == '@')
				l.inputs_known = false;
			else if (is_object_input(argv[m]))
				push_input(&l, argv[m]);
		}
		add_link(g, &l);
		return;
	}
	if (strcmp(argv[0], "Linking") == 0) {
		/* CMake's non-verbose "Linking CXX shared library x.so" (make, ninja) */
		const char *last = argv[n - 1];
		if (n < 2)
			return;
		struct pvg_link_step l = {
			.output = pvg_strdup(last), .dir = dir ? pvg_strdup(dir) : NULL,
			.kind = is_shared_object(last, NULL) ? PVG_LINK_SHARED
			      : strcmp(last + (strlen(last) > 2 ? strlen(last) - 2 : 0), ".a") == 0
				      ? PVG_LINK_ARCHIVE : PVG_LINK_EXECUTABLE,
			.lineno = c->lineno, .command = ci, .inputs_known = false,
		};
		add_link(g, &l);
		return;
	}
	if (!out)
		return;
	struct pvg_link_step l = {
		.output = pvg_strdup(out), .dir = dir ? pvg_strdup(dir) : NULL,
		.kind = is_shared_object(out, NULL) ? PVG_LINK_SHARED : PVG_LINK_EXECUTABLE,
		.lineno = c->lineno, .command = ci, .inputs_known = !rsp,
	};
	for (size_t k = 1; k < n; k++) {
		if (takes_value(argv[k])) {
			k++;
			continue;
		}
		if (strncmp(argv[k], "-Wl,", 4) == 0)
			wl_inputs(&l, argv[k]);
		else if (is_object_input(argv[k]))
			push_input(&l, argv[k]);
	}
	/* a command with -o and no object among its arguments is not a link (a copy, a tool) */
	if (l.n_inputs == 0 && l.inputs_known) {
		free(l.output);
		free(l.dir);
		return;
	}
	add_link(g, &l);
}

void pvg_linkgraph_build(const struct pvg_buildlog *log, struct pvg_linkgraph *g)
{
	memset(g, 0, sizeof(*g));
	_cleanup_free_ char **argv = pvg_xrealloc(NULL, MAX_ARGS, sizeof(char *));
	for (size_t i = 0; i < log->n_commands; i++) {
		const struct pvg_build_command *c = &log->commands[i];
		_cleanup_free_ char *s = pvg_strdup(c->text);
		size_t n = split_args(s, argv, MAX_ARGS);
		/* "cd DIR && cmd && cmd": each command on its own, in DIR */
		const char *dir = NULL;
		size_t b = 0;
		for (size_t k = 0; k <= n; k++) {
			bool sep = k == n || strcmp(argv[k], "&&") == 0 || strcmp(argv[k], ";") == 0 ||
				   strcmp(argv[k], "||") == 0;
			if (!sep)
				continue;
			if (k - b == 2 && strcmp(argv[b], "cd") == 0)
				dir = argv[b + 1];
			else if (k > b && !(k - b == 1 && strcmp(argv[b], ":") == 0))
				graph_command(g, c, i, argv + b, k - b, dir);
			b = k + 1;
		}
	}
	/* each output's last step; the distinct shared objects */
	for (size_t i = g->n_links; i-- > 0;) {
		bool later = false;
		for (size_t k = i + 1; k < g->n_links && !later; k++)
			later = g->links[k].last &&
				pvg_same_object(g->links[k].output, g->links[k].dir, g->links[i].output,
						g->links[i].dir);
		g->links[i].last = !later;
		if (!later && g->links[i].kind == PVG_LINK_SHARED)
			g->n_shared++;
		/* make prints "Linking ..." before the command: only an output's last step counts */
		if (!later && !g->links[i].inputs_known)
			g->any_unknown = true;
	}
}

void pvg_linkgraph_done(struct pvg_linkgraph *g)
{
	for (size_t i = 0; i < g->n_links; i++) {
		struct pvg_link_step *l = &g->links[i];
		free(l->output);
		free(l->dir);
		for (size_t k = 0; k < l->n_inputs; k++)
			free(l->inputs[k]);
		free(l->inputs);
	}
	free(g->links);
	for (size_t i = 0; i < g->n_compiles; i++) {
		free(g->compiles[i].object);
		free(g->compiles[i].dir);
		free(g->compiles[i].depfile);
	}
	free(g->compiles);
	memset(g, 0, sizeof(*g));
}

/* "a/./b//c" -> "a/b/c", "./x" -> "x"; ".." is kept (no file system is asked). */
static char *norm_path(const char *p, const char *dir)
{
	_cleanup_free_ char *full = p[0] != '/' && dir ? pvg_asprintf("%s/%s", dir, p) : pvg_strdup(p);
	char *o = pvg_xcalloc(strlen(full) + 1, 1);
	size_t n = 0;
	for (const char *s = full; *s;) {
		if (*s == '/') {
			if (n == 0 || o[n - 1] != '/')
				o[n++] = '/';
			s++;
			continue;
		}
		if (s[0] == '.' && (s[1] == '/' || s[1] == '\0') && (n == 0 || o[n - 1] == '/')) {
			s += s[1] ? 2 : 1;
			continue;
		}
		o[n++] = *s++;
	}
	if (n > 1 && o[n - 1] == '/')
		n--;
	o[n] = '\0';
	return o;
}

bool pvg_same_object(const char *a, const char *adir, const char *b, const char *bdir)
{
	if (strcmp(pvg_basename(a), pvg_basename(b)) != 0)
		return false;
	_cleanup_free_ char *x = norm_path(a, adir), *y = norm_path(b, bdir);
	if (strcmp(x, y) == 0)
		return true;
	/* both known absolute and different: not the same file */
	if (x[0] == '/' && y[0] == '/')
		return false;
	size_t xl = strlen(x), yl = strlen(y);
	const char *lng = xl >= yl ? x : y, *sht = xl >= yl ? y : x;
	size_t ll = strlen(lng), sl = strlen(sht);
	if (sht[0] == '/')
		return false;
	return ll > sl && lng[ll - sl - 1] == '/' && strcmp(lng + ll - sl, sht) == 0;
}

bool pvg_cmake_target_of(const char *obj, char *out, size_t size)
{
	const char *p = obj;
	for (const char *q; (q = strstr(p, "CMakeFiles/")); p = q + 1) {
		if (q != obj && q[-1] != '/')
			continue;
		const char *t = q + 11, *e = strchr(t, '/');
		if (!e || e - t < 5 || memcmp(e - 4, ".dir", 4) != 0)
			continue;
		size_t n = (size_t)(e - 4 - t);
		if (n == 0 || n >= size)
			return false;
		memcpy(out, t, n);
		out[n] = '\0';
		return true;
	}
	return false;
}

const struct pvg_link_step *pvg_linkgraph_output(const struct pvg_linkgraph *g, const char *name)
{
	for (size_t i = g->n_links; i-- > 0;)
		if (strcmp(pvg_basename(g->links[i].output), name) == 0)
			return &g->links[i];
	return NULL;
}

const struct pvg_compile_step *pvg_linkgraph_compile_of(const struct pvg_linkgraph *g, size_t i)
{
	/* compiles are in command order: a binary search */
	size_t lo = 0, hi = g->n_compiles;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->compiles[mid].command < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->n_compiles && g->compiles[lo].command == i ? &g->compiles[lo] : NULL;
}

const struct pvg_compile_step *pvg_linkgraph_compile_for(const struct pvg_linkgraph *g,
							  const char *obj, const char *dir)
{
	for (size_t i = g->n_compiles; i-- > 0;)
		if (g->compiles[i].object &&
		    pvg_same_object(g->compiles[i].object, g->compiles[i].dir, obj, dir))
			return &g->compiles[i];
	return NULL;
}

/* Is input (of a step in dir) the file written as path in pdir? "-lNAME" names libNAME.a/.so. */
static bool input_is(const char *input, const char *dir, const char *path, const char *pdir)
{
	if (strncmp(input, "-l", 2) == 0) {
		const char *b = pvg_basename(path);
		size_t n = strlen(input + 2);
		return strncmp(b, "lib", 3) == 0 && strncmp(b + 3, input + 2, n) == 0 &&
		       (strcmp(b + 3 + n, ".a") == 0 || strcmp(b + 3 + n, ".so") == 0);
	}
	return pvg_same_object(input, dir, path, pdir);
}

size_t pvg_linkgraph_outputs_of(const struct pvg_linkgraph *g, const char *obj, const char *dir,
				size_t *out, size_t max)
{
	/* breadth first through archives: frontier[] holds link indexes of archives reached */
	size_t n_out = 0;
	size_t frontier[64], n_front = 0, next[64], n_next = 0;
	bool *seen = pvg_xcalloc(g->n_links ? g->n_links : 1, sizeof(*seen));
	for (unsigned depth = 0; depth <= PVG_LINKGRAPH_DEPTH_MAX; depth++) {
		n_next = 0;
		for (size_t i = 0; i < g->n_links; i++) {
			const struct pvg_link_step *l = &g->links[i];
			if (!l->last || seen[i] || !l->inputs_known)
				continue;
			bool has = false;
			for (size_t k = 0; k < l->n_inputs && !has; k++) {
				if (depth == 0)
					has = input_is(l->inputs[k], l->dir, obj, dir);
				for (size_t f = 0; f < n_front && !has; f++)
					has = input_is(l->inputs[k], l->dir, g->links[frontier[f]].output,
						       g->links[frontier[f]].dir);
			}
			if (!has)
				continue;
			seen[i] = true;
			if (l->kind == PVG_LINK_ARCHIVE) {
				if (n_next < ARRAY_SIZE(next))
					next[n_next++] = i;
			} else if (n_out < max) {
				out[n_out++] = i;
			}
		}
		if (n_next == 0)
			break;
		/* later rounds look for the archives reached, not for the object */
		memcpy(frontier, next, n_next * sizeof(*next));
		n_front = n_next;
	}
	free(seen);
	return n_out;
}

/* ---- dependency information of a build tree -------------------------------------------------- */

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

int pvg_ninja_deps_parse(const uint8_t *p, size_t n, struct pvg_ninja_deps *d)
{
	memset(d, 0, sizeof(*d));
	if (n < 16 || memcmp(p, "# ninjadeps\n", 12) != 0)
		return -EBADMSG;
	uint32_t version = rd32(p + 12);
	if (version != 3 && version != 4)
		return -EBADMSG;
	size_t head = version == 4 ? 12 : 8; /* out id, mtime */
	size_t off = 16, n_slot = 0, cap = 0, path_cap = 0;
	size_t *slot = NULL;
	while (off + 4 <= n) {
		uint32_t word = rd32(p + off);
		size_t size = word & 0x7fffffffu;
		if (size > n - off - 4 || size > (1u << 19)) {
			d->damaged = true;
			break;
		}
		const uint8_t *r = p + off + 4;
		off += 4 + size;
		if (word >> 31) {
			if (size % 4 || size < head) {
				d->damaged = true;
				break;
			}
			uint32_t out = rd32(r);
			size_t n_in = (size - head) / 4;
			bool ok = out < d->n_paths;
			for (size_t i = 0; i < n_in && ok; i++)
				ok = rd32(r + head + 4 * i) < d->n_paths;
			if (!ok) {
				d->damaged = true;
				break;
			}
			/* the record of each output: slot[out] is its index + 1 */
			if (n_slot < d->n_paths) {
				slot = pvg_xrealloc(slot, d->n_paths, sizeof(*slot));
				memset(slot + n_slot, 0, (d->n_paths - n_slot) * sizeof(*slot));
				n_slot = d->n_paths;
			}
			struct pvg_ninja_deps_rec *rec = NULL;
			if (slot[out]) {
				rec = &d->recs[slot[out] - 1];
				free(rec->in);
			} else {
				if (d->n_recs == cap) {
					cap = cap ? 2 * cap : 64;
					d->recs = pvg_xrealloc(d->recs, cap, sizeof(*d->recs));
				}
				rec = &d->recs[d->n_recs++];
				slot[out] = d->n_recs;
			}
			rec->out = out;
			rec->n_in = n_in;
			rec->in = pvg_xcalloc(n_in ? n_in : 1, sizeof(*rec->in));
			for (size_t i = 0; i < n_in; i++)
				rec->in[i] = rd32(r + head + 4 * i);
		} else {
			if (size < 5 || size % 4) {
				d->damaged = true;
				break;
			}
			size_t plen = size - 4;
			for (int k = 0; k < 3 && plen && r[plen - 1] == '\0'; k++)
				plen--;
			uint32_t check = rd32(r + size - 4);
			if (plen == 0 || ~check != (uint32_t)d->n_paths || memchr(r, '\0', plen)) {
				d->damaged = true;
				break;
			}
			if (d->n_paths == path_cap) {
				path_cap = path_cap ? 2 * path_cap : 256;
				d->paths = pvg_xrealloc(d->paths, path_cap, sizeof(*d->paths));
			}
			d->paths[d->n_paths++] = dup_n((const char *)r, plen);
		}
	}
	if (off != n && !d->damaged)
		d->damaged = true;
	free(slot);
	return 0;
}

void pvg_ninja_deps_done(struct pvg_ninja_deps *d)
{
	for (size_t i = 0; i < d->n_paths; i++)
		free(d->paths[i]);
	free(d->paths);
	for (size_t i = 0; i < d->n_recs; i++)
		free(d->recs[i].in);
	free(d->recs);
	memset(d, 0, sizeof(*d));
}

void pvg_ninja_deps_dependents(const struct pvg_ninja_deps *d, const char *rel, struct pvg_strv *out)
{
	bool *hit = pvg_xcalloc(d->n_paths ? d->n_paths : 1, sizeof(*hit));
	const char *base = pvg_basename(rel);
	for (size_t i = 0; i < d->n_paths; i++)
		hit[i] = strstr(d->paths[i], base) && path_matches(d->paths[i], rel);
	for (size_t i = 0; i < d->n_recs; i++) {
		const struct pvg_ninja_deps_rec *r = &d->recs[i];
		for (size_t k = 0; k < r->n_in; k++)
			if (hit[r->in[k]]) {
				pvg_strv_add_unique(out, d->paths[r->out]);
				break;
			}
	}
	free(hit);
}

/* "a/b/../c" -> "a/c" in place, on the text alone (a "../" that climbs above the start stays). */
static void lexical_dotdot(char *p)
{
	for (char *d; (d = strstr(p, "/../"));) {
		char *start = d;
		while (start > p && start[-1] != '/')
			start--;
		size_t comp = (size_t)(d - start);
		if (comp == 0 || (comp == 2 && start[0] == '.' && start[1] == '.'))
			return;
		memmove(start, d + 4, strlen(d + 4) + 1);
	}
}

bool pvg_depfile_mentions(const char *text, size_t len, const char *rel)
{
	/* prerequisites follow the first ": "; words are split by blanks and "\\\n" */
	const char *colon = NULL;
	for (size_t i = 0; i + 1 < len; i++)
		if (text[i] == ':' && (text[i + 1] == ' ' || text[i + 1] == '\t' ||
				       text[i + 1] == '\\' || text[i + 1] == '\n')) {
			colon = text + i + 1;
			break;
		}
	if (!colon)
		return false;
	const char *end = text + len;
	char word[4096];
	for (const char *p = colon; p < end;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ||
				   (*p == '\\' && p + 1 < end && (p[1] == '\n' || p[1] == '\r'))))
			p += *p == '\\' ? 2 : 1;
		size_t n = 0;
		bool over = false;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
			char ch = *p;
			if (ch == '\\' && p + 1 < end && p[1] == ' ') {
				ch = ' ';
				p++;
			} else if (ch == '\\' && p + 1 < end && (p[1] == '\n' || p[1] == '\r')) {
				break;
			}
			if (n + 1 < sizeof(word))
				word[n++] = ch;
			else
				over = true;
			p++;
		}
		if (n == 0 && p < end && *p == '\\')
			p++;
		word[n] = '\0';
		/* a new "target:" line starts a new rule (make -MP adds "hdr.h:" lines); the
		 * compiler writes includes as found ("csrc/a/../shared.h") */
		if (n && !over && word[n - 1] != ':') {
			lexical_dotdot(word);
			if (path_matches(word, rel))
				return true;
		}
	}
	return false;
}

int pvg_ninja_log_find(const char *text, size_t len, const char *output, int64_t *mtime_ns)
{
	if (len < 15 || memcmp(text, "# ninja log v", 13) != 0)
		return -EBADMSG;
	int found = 0;
	size_t olen = strlen(output);
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		/* start \t end \t mtime \t output \t hash */
		const char *f[5];
		size_t nf = 0;
		f[nf++] = p;
		for (const char *q = p; q < le && nf < 5; q++)
			if (*q == '\t')
				f[nf++] = q + 1;
		if (nf == 5 && *p != '#') {
			size_t on = (size_t)(f[4] - 1 - f[3]);
			if (on == olen && memcmp(f[3], output, olen) == 0) {
				size_t used;
				int64_t v = 0;
				bool over = false;
				const char *m = f[2];
				for (used = 0; m + used < f[3] - 1 && m[used] >= '0' && m[used] <= '9';
				     used++)
					over |= __builtin_mul_overflow(v, 10, &v) ||
						__builtin_add_overflow(v, m[used] - '0', &v);
				/* seconds (before v5) are made nanoseconds; a time past 2262 fits
				 * neither and the log that claims it is not believed */
				if (used && m + used == f[3] - 1) {
					if (over || (v < 1000000000000LL &&
						     __builtin_mul_overflow(v, 1000000000, &v)))
						return -ERANGE;
					*mtime_ns = v;
					found = 1;
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	return found;
}
