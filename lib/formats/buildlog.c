/* SPDX-License-Identifier: MIT */
/*
 * Build-log parser. Lines come from PyTorch's hipify
 * ("SRC -> DST [ok]"), ninja ("[3/7] cmd", "FAILED: out"), the compilers ("x.hip:3:1: error:")
 * and the commands themselves when the build is verbose (ninja -v, VERBOSE=1).
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "formats/buildlog.h"

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
	if (parse_hipify(log, s, len))
		return;
	if (is_error_diagnostic(s, len)) {
		log->n_errors++;
		keep_sample(log, log->errors, &log->n_errors_kept, s, len, log->n_lines);
		return;
	}
	if (has_arg(s, len, "-c"))
		keep_command(log, s, len, true);
	else if (has_arg(s, len, "-o") || memmem(s, len, " -o", 3) || starts_with(s, len, "Linking "))
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
		ssize_t r = read(fd, buf, 1u << 20);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		pvg_buildlog_feed(log, buf, (size_t)r);
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

/* gfx arch with features: base must be equal, and every feature the config names must be in
 * the command's value ("gfx90a:xnack+" needs ":xnack+"; "gfx936" accepts any features). */
static bool gfx_matches(const char *item, size_t len, const char *arch)
{
	const char *colon = strchr(arch, ':');
	size_t base = colon ? (size_t)(colon - arch) : strlen(arch);
	const char *ic = memchr(item, ':', len);
	size_t ibase = ic ? (size_t)(ic - item) : len;
	if (ibase != base || memcmp(item, arch, base) != 0)
		return false;
	for (const char *f = colon; f && *f;) {
		const char *next = strchr(f + 1, ':');
		size_t flen = next ? (size_t)(next - f) : strlen(f);
		bool found = false;
		for (const char *p = item + ibase; p < item + len; p++)
			if ((size_t)(item + len - p) >= flen && memcmp(p, f, flen) == 0 &&
			    (p + flen == item + len || p[flen] == ':'))
				found = true;
		if (!found)
			return false;
		f = next;
	}
	return true;
}

static const char *const hip_flags[] = { "--offload-arch", "-offload-arch", "--amdgpu-target",
					 "--cuda-gpu-arch" };
static const char *const cuda_flags[] = { "-gencode", "--generate-code", "-arch",
					  "--gpu-architecture", "-code", "--gpu-code",
					  "--cuda-gpu-arch", "--offload-arch" };

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
				if (gfx_matches(p, len, arch))
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
