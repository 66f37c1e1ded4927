/* SPDX-License-Identifier: MIT */
/*
 * install.python_module -> file, by reading files only.
 *
 * provgate used to run `python -I -c SCRIPT` as root for this. A venv is often the service
 * user's own, and python -I still executes a .pth file's import lines, a sitecustomize and,
 * of course, whatever binary sits at bin/python3: root code execution for that user (the
 * needrestart CVE-2024-48990 class). So the interpreter is never run. Its search path is
 * rebuilt the way getpath and site.py build it, and each package level is looked up the
 * way the meta path finders would, without importing a parent (importlib.util.find_spec
 * would import vllm, and with it torch):
 *   sys.path   = PYTHONPATH (when the caller passes the service's), PREFIX/lib/pythonXY.zip,
 *                PREFIX/lib/pythonX.Y, EXEC_PREFIX/lib/pythonX.Y/lib-dynload, then the site
 *                folders (a venv's first), each followed by its .pth files' path lines;
 *   meta_path  = PathFinder, then the setuptools editable finders in the order their .pth
 *                files installed them (they append themselves), read as data;
 *   FileFinder = a package folder with __init__ + suffix, else NAME + suffix (extensions,
 *                then source, then bytecode), else a namespace portion.
 * Builtin and frozen modules are not modelled: they have no file to hash either way.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/utsname.h>

#include "sys/pymodule.h"
#include "util/untrusted.h"

#define SMALL_FILE_MAX (1u << 20) /* pyvenv.cfg, site.py, a .pth, a finder module */
#define PTH_FILES_MAX 4096        /* .pth files read per site folder */
#define PATH_ENTRIES_MAX 4096

/* ---- small path helpers ------------------------------------------------------------------ */

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static char *dir_of(const char *p)
{
	const char *s = strrchr(p, '/');
	if (!s)
		return pvg_strdup(".");
	if (s == p)
		return pvg_strdup("/");
	return pvg_asprintf("%.*s", (int)(s - p), p);
}

/* importlib's _path_join: the parts with their trailing slashes stripped, joined by '/' */
static char *fjoin(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	while (n > 0 && dir[n - 1] == '/')
		n--;
	return pvg_asprintf("%.*s/%s", (int)n, dir, name);
}

char *pvg_py_normpath(const char *path)
{
	/* posixpath.normpath: "." and empty components go, ".." takes one back (not past the
	 * root), exactly two leading slashes stay */
	size_t n = strlen(path);
	char *out = pvg_xcalloc(n + 3, 1);
	int lead = path[0] == '/' ? (path[1] == '/' && path[2] != '/' ? 2 : 1) : 0;
	size_t o = 0;
	for (int i = 0; i < lead; i++)
		out[o++] = '/';
	size_t base = o;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0)
			break;
		if (len == 1 && p[0] == '.') {
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (o > base) {
				while (o > base && out[o - 1] != '/')
					o--;
				if (o > base)
					o--;
			} else if (!lead) {
				if (o)
					out[o++] = '/';
				memcpy(out + o, "..", 2);
				o += 2;
				base = o;
			}
		} else {
			if (o > base || (o == base && base > (size_t)lead))
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

/* pathlib's normalisation: repeated slashes and "." components go, ".." stays */
static char *pathlib_norm(const char *path)
{
	size_t n = strlen(path);
	char *out = pvg_xcalloc(n + 2, 1);
	size_t o = 0;
	const char *p = path;
	if (p[0] == '/') {
		out[o++] = '/';
		if (p[1] == '/' && p[2] != '/')
			out[o++] = '/';
	}
	size_t lead = o;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0)
			break;
		if (!(len == 1 && p[0] == '.')) {
			if (o > lead)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

/* Path.with_suffix: the last component's suffix (from its last dot, not a leading one)
 * replaced by sfx */
static char *with_suffix(const char *path, const char *sfx)
{
	const char *name = strrchr(path, '/');
	name = name ? name + 1 : path;
	const char *dot = strrchr(name, '.');
	size_t keep = dot && dot > name && dot[1] ? (size_t)(dot - path) : strlen(path);
	return pvg_asprintf("%.*s%s", (int)keep, path, sfx);
}

/* A venv and its interpreter may be the service user's to change (SPEC §11): what is read
 * there is opened O_PATH first, and only a regular file within the bound that is not a kernel
 * file (a pyvenv.cfg linked to /proc/kmsg) is opened at all. fd or -errno. */
static int open_install_file(const char *path, uint64_t max)
{
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = max, .service_side = true };
	return pvg_open_untrusted(path, &how, NULL);
}

static DIR *open_install_dir(const char *path)
{
	const struct pvg_untrusted how = { .root_fd = -1, .want_dir = true, .service_side = true };
	int fd = pvg_open_untrusted(path, &how, NULL);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (fd >= 0 && !d)
		close(fd);
	return d;
}

static int read_small(const char *path, char **text)
{
	_cleanup_close_ int fd = open_install_file(path, SMALL_FILE_MAX);
	if (fd < 0)
		return fd;
	return pvg_read_fd(fd, SMALL_FILE_MAX, text, NULL);
}

/* ---- pyvenv.cfg and .pth lines ------------------------------------------------------------ */

/* Length of the whitespace character at s as Python's str.strip sees it (str.isspace: ASCII
 * \t-\r, \x1c-\x1f and space; in UTF-8 also U+0085, U+00A0, U+1680, U+2000-U+200A,
 * U+2028, U+2029, U+202F, U+205F, U+3000), or 0. */
static size_t py_space(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	if (u[0] == ' ' || (u[0] >= '\t' && u[0] <= '\r') || (u[0] >= 0x1c && u[0] <= 0x1f))
		return 1;
	if (u[0] == 0xc2 && (u[1] == 0x85 || u[1] == 0xa0))
		return 2;
	if (u[0] == 0xe1 && u[1] == 0x9a && u[2] == 0x80)
		return 3;
	if (u[0] == 0xe2 && u[1] == 0x80 &&
	    (u[2] <= 0x8a || u[2] == 0xa8 || u[2] == 0xa9 || u[2] == 0xaf))
		return u[2] >= 0x80 ? 3 : 0;
	if (u[0] == 0xe2 && u[1] == 0x81 && u[2] == 0x9f)
		return 3;
	if (u[0] == 0xe3 && u[1] == 0x80 && u[2] == 0x80)
		return 3;
	return 0;
}

/* Length of s without the Python whitespace at its end (str.rstrip). */
static size_t py_rstrip_len(const char *s, size_t n)
{
	for (;;) {
		size_t k = 0;
		for (size_t w = 1; w <= 3 && w <= n && !k; w++)
			if (py_space(s + n - w) == w)
				k = w;
		if (!k)
			return n;
		n -= k;
	}
}

/* str.strip(), in place */
static char *strip(char *s)
{
	for (size_t k; (k = py_space(s));)
		s += k;
	s[py_rstrip_len(s, strlen(s))] = '\0';
	return s;
}

static void version_of(const char *v, char out[16])
{
	/* "3.11.2" -> "3.11" */
	unsigned major, minor;
	int used = 0;
	if (sscanf(v, "%3u.%3u%n", &major, &minor, &used) == 2 && used > 0)
		snprintf(out, 16, "%u.%u", major, minor);
}

void pvg_pyvenv_parse(const char *text, struct pvg_pyvenv *out)
{
	memset(out, 0, sizeof(*out));
	out->system_site = true;
	/* Two readers: getpath takes home from the first "home" of the lines split at '\n'
	 * (it finds the standard library from there); site.py reads the file in text mode
	 * (\r\n and a lone \r end a line too) and the last include-system-site-packages wins */
	for (int site_py = 0; site_py < 2; site_py++) {
		_cleanup_free_ char *copy = pvg_strdup(text);
		char *save = NULL;
		for (char *line = strtok_r(copy, site_py ? "\r\n" : "\n", &save); line;
		     line = strtok_r(NULL, site_py ? "\r\n" : "\n", &save)) {
			char *eq = strchr(line, '=');
			if (!eq)
				continue;
			*eq = '\0';
			char *key = strip(line), *value = strip(eq + 1);
			for (char *c = key; *c; c++)
				if (*c >= 'A' && *c <= 'Z')
					*c = (char)(*c - 'A' + 'a');
			if (!site_py) {
				if (strcmp(key, "home") == 0 && !out->home)
					out->home = pvg_strdup(value);
			} else if (strcmp(key, "include-system-site-packages") == 0) {
				for (char *c = value; *c; c++)
					if (*c >= 'A' && *c <= 'Z')
						*c = (char)(*c - 'A' + 'a');
				out->system_site = strcmp(value, "true") == 0;
			} else if (strcmp(key, "version") == 0 || strcmp(key, "version_info") == 0) {
				version_of(value, out->version);
			}
		}
	}
}

void pvg_pyvenv_clear(struct pvg_pyvenv *v)
{
	free(v->home);
	v->home = NULL;
}

enum pvg_pth_line pvg_pth_line(const char *sitedir, const char *line, char **dir)
{
	*dir = NULL;
	if (line[0] == '#')
		return PVG_PTH_SKIP;
	_cleanup_free_ char *copy = pvg_strdup(line);
	char *s = strip(copy);
	if (!*s)
		return PVG_PTH_SKIP;
	if (strncmp(line, "import ", 7) == 0 || strncmp(line, "import\t", 7) == 0)
		return PVG_PTH_IMPORT;
	/* line.rstrip(), then os.path.abspath(os.path.join(sitedir, line)) */
	size_t n = py_rstrip_len(line, strlen(line));
	_cleanup_free_ char *rel = pvg_asprintf("%.*s", (int)n, line);
	_cleanup_free_ char *joined = rel[0] == '/' ? pvg_strdup(rel) : fjoin(sitedir, rel);
	*dir = pvg_py_normpath(joined);
	return PVG_PTH_PATH;
}

static bool ident_char(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9') || (unsigned char)c >= 0x80;
}

static size_t ident_len(const char *s)
{
	size_t n = 0;
	while (s[n] && ident_char(s[n], n == 0))
		n++;
	return n;
}

char *pvg_pth_editable_finder(const char *line)
{
	/* setuptools writes exactly "import X; X.install()" */
	if (strncmp(line, "import ", 7) != 0)
		return NULL;
	const char *p = line + 7;
	while (*p == ' ')
		p++;
	size_t n = ident_len(p);
	if (n == 0 || strncmp(p, "__editable___", 13) != 0 || n < 20 ||
	    strncmp(p + n - 7, "_finder", 7) != 0)
		return NULL;
	_cleanup_free_ char *name = pvg_asprintf("%.*s", (int)n, p);
	_cleanup_free_ char *want = pvg_asprintf("%s; %s.install()", name, name);
	const char *rest = p;
	size_t r = strlen(rest);
	while (r && strchr(" \t\r\n", rest[r - 1]))
		r--;
	if (r != strlen(want) || strncmp(rest, want, r) != 0)
		return NULL;
	return TAKE_PTR(name);
}

/* ---- Python literals, read as data -------------------------------------------------------- */

static void put_utf8(char **out, size_t *o, uint32_t c)
{
	char *b = *out;
	if (c >= 0xdc80 && c <= 0xdcff) { /* surrogateescape: the raw byte of a file name */
		b[(*o)++] = (char)(c - 0xdc00);
	} else if (c < 0x80) {
		b[(*o)++] = (char)c;
	} else if (c < 0x800) {
		b[(*o)++] = (char)(0xc0 | (c >> 6));
		b[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		b[(*o)++] = (char)(0xe0 | (c >> 12));
		b[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else {
		b[(*o)++] = (char)(0xf0 | (c >> 18));
		b[(*o)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		b[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[(*o)++] = (char)(0x80 | (c & 0x3f));
	}
}

static bool hex_value(const char *p, int digits, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < digits; i++) {
		int d = pvg_hex_digit(p[i]);
		if (d < 0)
			return false;
		*v = *v * 16 + (uint32_t)d;
	}
	return *v <= 0x10ffff;
}

char *pvg_py_str_literal(const char **pp)
{
	const char *p = *pp;
	char q = *p;
	if (q != '\'' && q != '"')
		return NULL;
	p++;
	/* each source byte gives at most 4 output bytes */
	const char *end = p;
	while (*end && *end != q && *end != '\n') {
		if (*end == '\\' && end[1])
			end++;
		end++;
	}
	if (*end != q)
		return NULL;
	char *out = pvg_xcalloc((size_t)(end - p) * 4 + 1, 1);
	size_t o = 0;
	while (p < end) {
		if (*p != '\\') {
			out[o++] = *p++;
			continue;
		}
		p++;
		uint32_t v;
		switch (*p) {
		case '\\': case '\'': case '"':
			out[o++] = *p++;
			break;
		case 'n': out[o++] = '\n'; p++; break;
		case 't': out[o++] = '\t'; p++; break;
		case 'r': out[o++] = '\r'; p++; break;
		case 'x':
			if (!hex_value(p + 1, 2, &v))
				goto bad;
			put_utf8(&out, &o, v);
			p += 3;
			break;
		case 'u':
			if (!hex_value(p + 1, 4, &v))
				goto bad;
			put_utf8(&out, &o, v);
			p += 5;
			break;
		case 'U':
			if (!hex_value(p + 1, 8, &v))
				goto bad;
			put_utf8(&out, &o, v);
			p += 9;
			break;
		default:
			goto bad; /* repr() writes no other escape */
		}
	}
	if (memchr(out, '\0', o))
		goto bad;
	out[o] = '\0';
	*pp = end + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

/* [ 'a', 'b' ] into v */
static int parse_str_list(const char **pp, struct pvg_strv *v)
{
	const char *p = *pp;
	if (*p != '[')
		return -EINVAL;
	p++;
	skip_ws(&p);
	while (*p != ']') {
		char *s = pvg_py_str_literal(&p);
		if (!s)
			return -EINVAL;
		pvg_strv_push(v, s);
		skip_ws(&p);
		if (*p == ',') {
			p++;
			skip_ws(&p);
		} else if (*p != ']') {
			return -EINVAL;
		}
	}
	*pp = p + 1;
	return 0;
}

/* The value of "NAME = ..." (or "NAME: annotation = ...") at a line start of text. */
static const char *assignment(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, n) != 0 || (l[n] != ' ' && l[n] != '=' && l[n] != ':'))
			continue;
		const char *eq = strchr(l + n, '=');
		const char *nl = strchr(l, '\n');
		if (!eq || (nl && eq > nl))
			continue;
		eq++;
		skip_ws(&eq);
		return eq;
	}
	return NULL;
}

int pvg_editable_finder_parse(const char *text, struct pvg_editable_finder *f)
{
	memset(f, 0, sizeof(*f));
	_cleanup_free_ char *a = NULL, *b = NULL; /* before any goto below */
	/* the two find_spec bodies setuptools has shipped; any other finder is not ours to
	 * guess at */
	if (!strstr(text, "class _EditableFinder"))
		return -EINVAL;
	if (strstr(text, "reversed(list(MAPPING.items()))"))
		f->style = PVG_EF_PREFIX;
	else if (strstr(text, "if fullname in MAPPING:") && strstr(text, "parent in MAPPING"))
		f->style = PVG_EF_EXACT;
	else
		return -EINVAL;
	const char *p = assignment(text, "MAPPING");
	if (!p || *p != '{')
		goto bad;
	p++;
	skip_ws(&p);
	while (*p != '}') {
		char *k = pvg_py_str_literal(&p);
		if (!k)
			goto bad;
		f->mapping = pvg_xrealloc(f->mapping, f->n_mapping + 2, sizeof(char *));
		f->mapping[f->n_mapping++] = k;
		skip_ws(&p);
		if (*p != ':')
			goto bad_value;
		p++;
		skip_ws(&p);
		char *v = pvg_py_str_literal(&p);
		if (!v)
			goto bad_value;
		f->mapping[f->n_mapping++] = v;
		skip_ws(&p);
		if (*p == ',') {
			p++;
			skip_ws(&p);
		} else if (*p != '}') {
			goto bad;
		}
	}
	f->n_mapping /= 2;
	p = assignment(text, "NAMESPACES");
	if (!p || *p != '{')
		goto bad_ns;
	p++;
	skip_ws(&p);
	while (*p != '}') {
		char *k = pvg_py_str_literal(&p);
		if (!k)
			goto bad_ns;
		f->ns_names = pvg_xrealloc(f->ns_names, f->n_namespaces + 1, sizeof(char *));
		f->ns_paths = pvg_xrealloc(f->ns_paths, f->n_namespaces + 1, sizeof(*f->ns_paths));
		f->ns_names[f->n_namespaces] = k;
		f->ns_paths[f->n_namespaces] = (struct pvg_strv){ 0 };
		f->n_namespaces++;
		skip_ws(&p);
		if (*p != ':')
			goto bad_ns;
		p++;
		skip_ws(&p);
		if (parse_str_list(&p, &f->ns_paths[f->n_namespaces - 1]) < 0)
			goto bad_ns;
		skip_ws(&p);
		if (*p == ',') {
			p++;
			skip_ws(&p);
		} else if (*p != '}') {
			goto bad_ns;
		}
	}
	/* PATH_PLACEHOLDER = 'NAME' + ".__path_hook__" */
	p = assignment(text, "PATH_PLACEHOLDER");
	if (!p)
		goto bad_ns;
	a = pvg_py_str_literal(&p);
	skip_ws(&p);
	if (!a || *p++ != '+')
		goto bad_ns;
	skip_ws(&p);
	b = pvg_py_str_literal(&p);
	if (!b)
		goto bad_ns;
	f->placeholder = pvg_asprintf("%s%s", a, b);
	return 0;
bad_value:
	/* a key without its value: drop it so that clear sees whole pairs */
	free(f->mapping[--f->n_mapping]);
bad:
	f->n_mapping /= 2;
bad_ns:
	pvg_editable_finder_clear(f);
	return -EINVAL;
}

void pvg_editable_finder_clear(struct pvg_editable_finder *f)
{
	for (size_t i = 0; i < f->n_mapping * 2; i++)
		free(f->mapping[i]);
	free(f->mapping);
	for (size_t i = 0; i < f->n_namespaces; i++) {
		free(f->ns_names[i]);
		pvg_strv_clear(&f->ns_paths[i]);
	}
	free(f->ns_names);
	free(f->ns_paths);
	free(f->placeholder);
	memset(f, 0, sizeof(*f));
}

static const char *ef_get(const struct pvg_editable_finder *f, const char *name)
{
	/* a dict literal with a repeated key keeps the last value */
	for (size_t i = f->n_mapping; i-- > 0;)
		if (strcmp(f->mapping[2 * i], name) == 0)
			return f->mapping[2 * i + 1];
	return NULL;
}

static const struct pvg_strv *ef_namespace(const struct pvg_editable_finder *f, const char *name)
{
	for (size_t i = f->n_namespaces; i-- > 0;)
		if (strcmp(f->ns_names[i], name) == 0)
			return &f->ns_paths[i];
	return NULL;
}

/* ---- the interpreter's layout -------------------------------------------------------------- */

struct py_layout {
	char *exe;          /* as named (absolute, links not resolved): sys.executable */
	char *real;         /* what it names */
	char version[16];   /* "3.11" */
	bool venv, system_site;
	char *prefix;       /* the venv, or the base prefix */
	char *base_prefix, *exec_prefix;
	const char *platlib; /* "lib" or "lib64" */
	bool debian;        /* site.py lists dist-packages folders (Debian, Ubuntu) */
	struct pvg_strv ext; /* extension module suffixes, in importlib's order */
};

static void layout_clear(struct py_layout *l)
{
	free(l->exe);
	free(l->real);
	free(l->prefix);
	free(l->base_prefix);
	free(l->exec_prefix);
	pvg_strv_clear(&l->ext);
}

static char *find_in_path(const char *name)
{
	const char *p = getenv("PATH");
	_cleanup_free_ char *copy = pvg_strdup(p ? p : "/usr/bin:/bin");
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/')
			continue;
		char *full = fjoin(d, name);
		if (is_file(full) && access(full, X_OK) == 0)
			return full;
		free(full);
	}
	return NULL;
}

/* getpath's search_up: the first of dir and its ancestors holding LIB/pythonX.Y/landmark */
static char *search_up(const char *from, const char *version, const char *landmark,
		       const char **platlib)
{
	_cleanup_free_ char *d = pvg_strdup(from);
	for (int depth = 0; depth < 64; depth++) {
		static const char *const libs[] = { "lib", "lib64" };
		for (size_t i = 0; i < ARRAY_SIZE(libs); i++) {
			_cleanup_free_ char *p = pvg_asprintf("%s/%s/python%s/%s",
							      strcmp(d, "/") ? d : "", libs[i],
							      version, landmark);
			if (exists(p)) {
				if (platlib)
					*platlib = libs[i];
				return TAKE_PTR(d);
			}
		}
		if (strcmp(d, "/") == 0)
			break;
		char *up = dir_of(d);
		free(d);
		d = up;
	}
	return NULL;
}

/* "python3.11" -> "3.11" */
static void version_from_name(const char *path, char out[16])
{
	const char *b = pvg_basename(path);
	if (strncmp(b, "python", 6) == 0)
		version_of(b + 6, out);
}

/* the only pythonX.Y folder with an os.py under dir/lib (or lib64) and its ancestors */
static void version_from_folders(const char *from, char out[16])
{
	_cleanup_free_ char *d = pvg_strdup(from);
	for (int depth = 0; depth < 64; depth++) {
		char found[16] = "";
		int n = 0;
		static const char *const libs[] = { "lib", "lib64" };
		for (size_t i = 0; i < ARRAY_SIZE(libs); i++) {
			_cleanup_free_ char *lib = pvg_asprintf("%s/%s", strcmp(d, "/") ? d : "", libs[i]);
			DIR *dir = open_install_dir(lib);
			if (!dir)
				continue;
			struct dirent *e;
			int seen = 0;
			while ((e = readdir(dir)) && seen++ < 10000) {
				char v[16] = "";
				if (strncmp(e->d_name, "python", 6) != 0)
					continue;
				version_of(e->d_name + 6, v);
				_cleanup_free_ char *os = pvg_asprintf("%s/%s/os.py", lib, e->d_name);
				if (v[0] && is_file(os) && strcmp(v, found) != 0) {
					memcpy(found, v, sizeof(found));
					n++;
				}
			}
			closedir(dir);
		}
		if (n == 1) {
			memcpy(out, found, 16);
			return;
		}
		if (n > 1 || strcmp(d, "/") == 0)
			return;
		char *up = dir_of(d);
		free(d);
		d = up;
	}
}

static void ext_suffixes(struct py_layout *l, const char *dynload)
{
	/* the interpreter's own tag, as its lib-dynload modules carry it
	 * (".cpython-311-x86_64-linux-gnu.so"); failing that, the usual one for this machine */
	char tag[160] = "";
	_cleanup_free_ char *want = NULL;
	{
		unsigned major = 0, minor = 0;
		sscanf(l->version, "%u.%u", &major, &minor);
		want = pvg_asprintf(".cpython-%u%u", major, minor);
	}
	DIR *dir = open_install_dir(dynload);
	if (dir) {
		struct dirent *e;
		int seen = 0;
		while ((e = readdir(dir)) && seen++ < 10000) {
			const char *s = strstr(e->d_name, want);
			size_t n = s ? strlen(s) : 0;
			if (s && n < sizeof(tag) && n > 3 && strcmp(s + n - 3, ".so") == 0) {
				memcpy(tag, s, n + 1);
				break;
			}
		}
		closedir(dir);
	}
	if (!tag[0]) {
		struct utsname u;
		if (uname(&u) == 0)
			snprintf(tag, sizeof(tag), "%s-%s-linux-gnu.so", want, u.machine);
	}
	if (tag[0])
		pvg_strv_push(&l->ext, pvg_strdup(tag));
	pvg_strv_push(&l->ext, pvg_strdup(".abi3.so"));
	pvg_strv_push(&l->ext, pvg_strdup(".so"));
}

static int layout_read(const char *python, struct py_layout *l, struct pvg_msg *why)
{
	memset(l, 0, sizeof(*l));
	if (strchr(python, '/')) {
		_cleanup_free_ char *abs = pvg_path_absolute(python);
		l->exe = pvg_py_normpath(abs); /* sys.executable is abspath()'d */
	} else {
		l->exe = find_in_path(python);
		if (!l->exe) {
			pvg_msg_set(why, NULL, "cannot find %s in PATH", python);
			return -ENOEXEC;
		}
	}
	struct stat st;
	if (stat(l->exe, &st) < 0) {
		pvg_msg_set(why, NULL, "cannot read %s: %s", l->exe, strerror(errno));
		return -ENOEXEC;
	}
	if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
		pvg_msg_set(why, NULL, "%s is not an executable file", l->exe);
		return -ENOEXEC;
	}
	l->real = realpath(l->exe, NULL);
	if (!l->real) {
		pvg_msg_set(why, NULL, "cannot resolve %s: %s", l->exe, strerror(errno));
		return -ENOEXEC;
	}
	/* site.py's venv(): pyvenv.cfg beside the executable or one folder up; the venv is
	 * the executable's folder's parent either way */
	_cleanup_free_ char *exe_dir = dir_of(l->exe);
	_cleanup_free_ char *up = dir_of(exe_dir);
	struct pvg_pyvenv cfg = { .system_site = true };
	for (int i = 0; i < 2 && !l->venv; i++) {
		_cleanup_free_ char *p = fjoin(i == 0 ? exe_dir : up, "pyvenv.cfg");
		if (!is_file(p))
			continue;
		_cleanup_free_ char *text = NULL;
		int r = read_small(p, &text);
		if (r < 0) {
			pvg_msg_set(why, NULL, "cannot read %s: %s", p, strerror(-r));
			return -ENOEXEC;
		}
		pvg_pyvenv_parse(text, &cfg);
		l->venv = true;
	}
	l->system_site = cfg.system_site;
	memcpy(l->version, cfg.version, sizeof(l->version));
	if (!l->version[0])
		version_from_name(l->real, l->version);
	if (!l->version[0])
		version_from_name(l->exe, l->version);
	/* getpath looks for the standard library from the venv's home, else from where the
	 * executable really is */
	_cleanup_free_ char *start = cfg.home && cfg.home[0] == '/' ? pvg_strdup(cfg.home)
								    : dir_of(l->real);
	pvg_pyvenv_clear(&cfg);
	if (!l->version[0])
		version_from_folders(start, l->version);
	if (!l->version[0]) {
		pvg_msg_set(why, NULL, "cannot tell the Python version of %s (%s) from its name, a "
			    "pyvenv.cfg or a lib/python3.X folder", l->exe, l->real);
		return -ENOEXEC;
	}
	l->base_prefix = search_up(start, l->version, "os.py", &l->platlib);
	if (!l->base_prefix) {
		const char *sfx = l->platlib;
		l->base_prefix = search_up(start, l->version, "os.pyc", &sfx);
		l->platlib = sfx;
	}
	if (!l->base_prefix) {
		char head[2] = { 0 };
		int fd = open_install_file(l->real, 0);
		if (fd >= 0) {
			if (read(fd, head, 2) < 0)
				head[0] = 0;
			close(fd);
		}
		pvg_msg_set(why, NULL, "no lib/python%s/os.py at or above %s: %s%s", l->version,
			    start, l->real,
			    head[0] == '#' && head[1] == '!'
				    ? " is a script, not the interpreter; name the interpreter itself"
				    : " is not inside a Python installation provgate can read");
		return -ENOEXEC;
	}
	const char *dl = NULL;
	l->exec_prefix = search_up(start, l->version, "lib-dynload", &dl);
	if (!l->exec_prefix)
		l->exec_prefix = pvg_strdup(l->base_prefix);
	l->prefix = l->venv ? pvg_strdup(up) : pvg_strdup(l->base_prefix);
	_cleanup_free_ char *site_py = pvg_asprintf("%s/%s/python%s/site.py",
						    strcmp(l->base_prefix, "/") ? l->base_prefix : "",
						    l->platlib, l->version);
	_cleanup_free_ char *site_text = NULL;
	if (read_small(site_py, &site_text) == 0)
		l->debian = strstr(site_text, "dist-packages") != NULL;
	_cleanup_free_ char *dynload = pvg_asprintf(
		"%s/%s/python%s/lib-dynload", strcmp(l->exec_prefix, "/") ? l->exec_prefix : "",
		l->platlib, l->version);
	ext_suffixes(l, dynload);
	return 0;
}

/* site.getsitepackages for one prefix */
static void site_dirs(const struct py_layout *l, const char *prefix, struct pvg_strv *out)
{
	const char *p = strcmp(prefix, "/") ? prefix : "";
	const char *v = l->version;
	bool lib64 = strcmp(l->platlib, "lib") != 0;
	if (l->debian) {
		if (l->venv)
			pvg_strv_push(out, pvg_asprintf("%s/lib/python%s/site-packages", p, v));
		pvg_strv_push(out, pvg_asprintf("%s/local/lib/python%s/dist-packages", p, v));
		pvg_strv_push(out, pvg_asprintf("%s/lib/python3/dist-packages", p));
		pvg_strv_push(out, pvg_asprintf("%s/%s/python%s/dist-packages", p, l->platlib, v));
		if (lib64)
			pvg_strv_push(out, pvg_asprintf("%s/lib/python%s/dist-packages", p, v));
	} else {
		pvg_strv_push(out, pvg_asprintf("%s/%s/python%s/site-packages", p, l->platlib, v));
		if (lib64)
			pvg_strv_push(out, pvg_asprintf("%s/lib/python%s/site-packages", p, v));
	}
}

/* ---- sys.path and the finders ------------------------------------------------------------- */

struct path_entry {
	char *dir;     /* a folder (or anything: the finder skips what is not a folder) */
	int ns_finder; /* >= 0: the path hook entry of that editable finder */
};

struct search {
	const struct py_layout *l;
	struct path_entry *entries;
	size_t n_entries;
	struct pvg_strv known; /* site.py's known_paths */
	struct pvg_editable_finder *finders;
	char **finder_names;
	size_t n_finders;
	struct pvg_strv not_run; /* "FILE line N" of import lines not modelled */
};

static void search_clear(struct search *s)
{
	for (size_t i = 0; i < s->n_entries; i++)
		free(s->entries[i].dir);
	free(s->entries);
	for (size_t i = 0; i < s->n_finders; i++) {
		pvg_editable_finder_clear(&s->finders[i]);
		free(s->finder_names[i]);
	}
	free(s->finders);
	free(s->finder_names);
	pvg_strv_clear(&s->known);
	pvg_strv_clear(&s->not_run);
}

static void add_entry(struct search *s, const char *dir, int ns_finder)
{
	if (s->n_entries >= PATH_ENTRIES_MAX)
		return;
	s->entries = pvg_xrealloc(s->entries, s->n_entries + 1, sizeof(*s->entries));
	s->entries[s->n_entries++] = (struct path_entry){ pvg_strdup(dir), ns_finder };
}

static void add_known(struct search *s, const char *dir)
{
	if (!pvg_strv_has(&s->known, dir)) {
		pvg_strv_add_unique(&s->known, dir);
		add_entry(s, dir, -1);
	}
}

/* "import X; X.install()" of a setuptools editable finder X.py in the site folder */
static bool install_finder(struct search *s, const char *sitedir, const char *line)
{
	_cleanup_free_ char *name = pvg_pth_editable_finder(line);
	if (!name)
		return false;
	for (size_t i = 0; i < s->n_finders; i++)
		if (strcmp(s->finder_names[i], name) == 0)
			return true; /* install() adds itself once */
	_cleanup_free_ char *file = pvg_asprintf("%s/%s.py", sitedir, name);
	_cleanup_free_ char *text = NULL;
	struct pvg_editable_finder f;
	if (read_small(file, &text) < 0 || pvg_editable_finder_parse(text, &f) < 0)
		return false;
	s->finders = pvg_xrealloc(s->finders, s->n_finders + 1, sizeof(*s->finders));
	s->finder_names = pvg_xrealloc(s->finder_names, s->n_finders + 1, sizeof(char *));
	s->finders[s->n_finders] = f;
	s->finder_names[s->n_finders] = TAKE_PTR(name);
	s->n_finders++;
	/* with namespaces, install() appends its path hook's placeholder to sys.path */
	if (f.n_namespaces && f.placeholder && !pvg_strv_has(&s->known, f.placeholder)) {
		pvg_strv_add_unique(&s->known, f.placeholder);
		add_entry(s, f.placeholder, (int)s->n_finders - 1);
	}
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* site.addpackage: path lines join sys.path; import lines are never run */
static void add_pth(struct search *s, const char *sitedir, const char *name)
{
	_cleanup_free_ char *file = fjoin(sitedir, name);
	_cleanup_free_ char *text = NULL;
	if (read_small(file, &text) < 0) {
		pvg_strv_push(&s->not_run, pvg_asprintf("%s (not read)", file));
		return;
	}
	/* text mode: \r\n and a lone \r end a line too */
	int lineno = 0;
	for (char *line = text; line && *line;) {
		char *nl = line + strcspn(line, "\r\n");
		char *next = NULL;
		if (*nl) {
			next = nl + (nl[0] == '\r' && nl[1] == '\n' ? 2 : 1);
			*nl = '\0';
		}
		lineno++;
		_cleanup_free_ char *dir = NULL;
		switch (pvg_pth_line(sitedir, line, &dir)) {
		case PVG_PTH_SKIP:
			break;
		case PVG_PTH_IMPORT:
			if (!install_finder(s, sitedir, line))
				pvg_strv_push(&s->not_run, pvg_asprintf("%s line %d", file, lineno));
			break;
		case PVG_PTH_PATH:
			if (!pvg_strv_has(&s->known, dir) && exists(dir))
				add_known(s, dir);
			break;
		}
		line = next;
	}
}

/* site.addsitedir */
static void add_site_dir(struct search *s, const char *sitedir)
{
	_cleanup_free_ char *dir = pvg_py_normpath(sitedir);
	add_known(s, dir);
	DIR *d = open_install_dir(dir);
	if (!d)
		return;
	struct pvg_strv names = { 0 };
	struct dirent *e;
	while ((e = readdir(d)) && names.n < PTH_FILES_MAX) {
		size_t n = strlen(e->d_name);
		if (n >= 4 && strcmp(e->d_name + n - 4, ".pth") == 0 && e->d_name[0] != '.')
			pvg_strv_push(&names, pvg_strdup(e->d_name));
	}
	closedir(d);
	if (names.n)
		qsort(names.v, names.n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < names.n; i++)
		add_pth(s, dir, names.v[i]);
	pvg_strv_clear(&names);
}

static void add_site_packages(struct search *s, const char *prefix)
{
	struct pvg_strv dirs = { 0 };
	site_dirs(s->l, prefix, &dirs);
	for (size_t i = 0; i < dirs.n; i++)
		if (is_dir(dirs.v[i]))
			add_site_dir(s, dirs.v[i]);
	pvg_strv_clear(&dirs);
}

static void build_sys_path(struct search *s, const struct pvg_python_opts *opts)
{
	const struct py_layout *l = s->l;
	if (opts && opts->pythonpath) {
		_cleanup_free_ char *copy = pvg_strdup(opts->pythonpath);
		char *save = NULL;
		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
			if (d[0] == '/') {
				_cleanup_free_ char *n = pvg_py_normpath(d);
				add_known(s, n);
			}
	}
	const char *bp = strcmp(l->base_prefix, "/") ? l->base_prefix : "";
	const char *ep = strcmp(l->exec_prefix, "/") ? l->exec_prefix : "";
	unsigned major = 0, minor = 0;
	sscanf(l->version, "%u.%u", &major, &minor);
	_cleanup_free_ char *zip = pvg_asprintf("%s/%s/python%u%u.zip", bp, l->platlib, major, minor);
	_cleanup_free_ char *stdlib = pvg_asprintf("%s/%s/python%s", bp, l->platlib, l->version);
	_cleanup_free_ char *dyn = pvg_asprintf("%s/%s/python%s/lib-dynload", ep, l->platlib,
						l->version);
	add_known(s, zip);
	add_known(s, stdlib);
	add_known(s, dyn);
	/* site.main: venv() adds the venv's site folders, then PREFIXES' (the venv's again,
	 * already known, and the base's when include-system-site-packages) */
	if (l->venv) {
		add_site_packages(s, l->prefix);
		if (l->system_site) {
			add_site_packages(s, l->base_prefix);
			if (strcmp(l->exec_prefix, l->base_prefix) != 0)
				add_site_packages(s, l->exec_prefix);
		}
	} else {
		add_site_packages(s, l->base_prefix);
		if (strcmp(l->exec_prefix, l->base_prefix) != 0)
			add_site_packages(s, l->exec_prefix);
	}
}

/* A ModuleSpec as far as the resolution needs it: origin NULL is a namespace package. */
struct spec {
	char *origin;
	struct path_entry *locations; /* a package's submodule_search_locations */
	size_t n_locations;
	bool package;
};

static void spec_clear(struct spec *sp)
{
	free(sp->origin);
	for (size_t i = 0; i < sp->n_locations; i++)
		free(sp->locations[i].dir);
	free(sp->locations);
	memset(sp, 0, sizeof(*sp));
}

static void spec_add_location(struct spec *sp, const char *dir, int ns_finder)
{
	sp->locations = pvg_xrealloc(sp->locations, sp->n_locations + 1, sizeof(*sp->locations));
	sp->locations[sp->n_locations++] = (struct path_entry){ pvg_strdup(dir), ns_finder };
	sp->package = true;
}

static const char *const source_suffixes[] = { ".py", ".pyc" };

/* FileFinder(dir).find_spec: 1 found (module or package), 2 a namespace portion, 0 none */
static int file_finder(const struct search *s, const char *dir, const char *tail,
		       struct spec *sp)
{
	_cleanup_free_ char *base = fjoin(dir, tail);
	bool ns = false;
	if (is_dir(base)) {
		for (size_t i = 0; i < s->l->ext.n + 2; i++) {
			const char *sfx = i < s->l->ext.n ? s->l->ext.v[i] : source_suffixes[i - s->l->ext.n];
			_cleanup_free_ char *init = pvg_asprintf("__init__%s", sfx);
			_cleanup_free_ char *full = fjoin(base, init);
			if (is_file(full)) {
				sp->origin = TAKE_PTR(full);
				spec_add_location(sp, base, -1);
				return 1;
			}
		}
		ns = true;
	}
	for (size_t i = 0; i < s->l->ext.n + 2; i++) {
		const char *sfx = i < s->l->ext.n ? s->l->ext.v[i] : source_suffixes[i - s->l->ext.n];
		_cleanup_free_ char *file = pvg_asprintf("%s%s", tail, sfx);
		_cleanup_free_ char *full = fjoin(dir, file);
		if (is_file(full)) {
			sp->origin = TAKE_PTR(full);
			return 1;
		}
	}
	if (ns) {
		spec_add_location(sp, base, -1);
		return 2;
	}
	return 0;
}

/* _EditableNamespaceFinder.find_spec through its path hook */
static bool ns_hook(const struct search *s, int fi, const char *full, struct spec *portions)
{
	const struct pvg_editable_finder *f = &s->finders[fi];
	const struct pvg_strv *paths = ef_namespace(f, full);
	if (!paths)
		return false;
	if (paths->n) {
		for (size_t i = 0; i < paths->n; i++)
			spec_add_location(portions, paths->v[i], -1);
	} else if (ef_get(f, full)) {
		spec_add_location(portions, ef_get(f, full), -1);
	} else {
		spec_add_location(portions, f->placeholder, fi);
	}
	return true;
}

/* PathFinder.find_spec(full, path): true with *sp set when found (a namespace package too) */
static bool path_finder(const struct search *s, const char *full, const struct path_entry *path,
			size_t n, struct spec *sp)
{
	const char *tail = strrchr(full, '.') ? strrchr(full, '.') + 1 : full;
	struct spec ns = { 0 };
	for (size_t i = 0; i < n; i++) {
		if (path[i].ns_finder >= 0) {
			ns_hook(s, path[i].ns_finder, full, &ns);
			continue;
		}
		/* relative entries are the working folder's, which for provgate is "/" */
		_cleanup_free_ char *dir = path[i].dir[0] == '/' ? pvg_strdup(path[i].dir)
								 : fjoin("/", path[i].dir);
		if (!is_dir(dir))
			continue; /* no FileFinder (zip archives are not read) */
		struct spec one = { 0 };
		int r = file_finder(s, dir, tail, &one);
		if (r == 1) {
			spec_clear(&ns);
			*sp = one;
			return true;
		}
		if (r == 2)
			for (size_t k = 0; k < one.n_locations; k++)
				spec_add_location(&ns, one.locations[k].dir, -1);
		spec_clear(&one);
	}
	if (ns.n_locations) {
		*sp = ns;
		return true;
	}
	return false;
}

/* spec_from_file_location of what _EditableFinder._find_spec tried */
static bool ef_find_candidate(const struct search *s, const char *candidate, struct spec *sp)
{
	_cleanup_free_ char *init = pvg_asprintf("%s/__init__.py", candidate);
	if (exists(init)) {
		sp->origin = TAKE_PTR(init);
		spec_add_location(sp, candidate, -1);
		return true;
	}
	/* importlib.machinery.all_suffixes(): source, bytecode, then extensions */
	for (size_t i = 0; i < s->l->ext.n + 2; i++) {
		const char *sfx = i < 2 ? source_suffixes[i] : s->l->ext.v[i - 2];
		_cleanup_free_ char *c = with_suffix(candidate, sfx);
		if (exists(c)) {
			sp->origin = TAKE_PTR(c);
			return true;
		}
	}
	return false;
}

static bool editable_finder(const struct search *s, const struct pvg_editable_finder *f,
			    const char *full, struct spec *sp)
{
	if (f->style == PVG_EF_PREFIX) {
		/* the last mapping entry that is full or a parent of it decides */
		for (size_t i = f->n_mapping; i-- > 0;) {
			const char *pkg = f->mapping[2 * i];
			size_t n = strlen(pkg);
			if (strncmp(full, pkg, n) != 0 || (full[n] != '\0' && full[n] != '.'))
				continue;
			_cleanup_free_ char *rest = pvg_strdup(full + n + (full[n] == '.'));
			for (char *c = rest; *c; c++)
				if (*c == '.')
					*c = '/';
			_cleanup_free_ char *joined = pvg_asprintf("%s/%s", f->mapping[2 * i + 1], rest);
			_cleanup_free_ char *cand = pathlib_norm(joined);
			return ef_find_candidate(s, cand, sp);
		}
		return false;
	}
	const char *top = ef_get(f, full);
	if (top) {
		_cleanup_free_ char *cand = pathlib_norm(top);
		return ef_find_candidate(s, cand, sp);
	}
	const char *dot = strrchr(full, '.');
	if (!dot)
		return false;
	_cleanup_free_ char *parent = pvg_asprintf("%.*s", (int)(dot - full), full);
	const char *pdir = ef_get(f, parent);
	if (!pdir)
		return false;
	struct path_entry e = { (char *)pdir, -1 };
	return path_finder(s, full, &e, 1, sp);
}

static void describe_path(const struct path_entry *path, size_t n, char **out)
{
	/* Python's repr of the list, for the message */
	char *t = pvg_strdup("[");
	for (size_t i = 0; i < n && i < 32; i++) {
		char *u = pvg_asprintf("%s%s'%s'", t, i ? ", " : "", path[i].dir);
		free(t);
		t = u;
	}
	char *u = pvg_asprintf("%s%s]", t, n > 32 ? ", ..." : "");
	free(t);
	*out = u;
}

static bool dotted_name(const char *m)
{
	if (!*m)
		return false;
	for (const char *p = m;;) {
		size_t n = ident_len(p);
		if (n == 0 || (*p >= '0' && *p <= '9'))
			return false;
		p += n;
		if (!*p)
			return true;
		if (*p != '.')
			return false;
		p++;
	}
}

static char *not_run_note(const struct search *s)
{
	if (!s->not_run.n)
		return pvg_strdup("");
	_cleanup_free_ char *list = pvg_strv_join_distinct(&s->not_run, ", ");
	return pvg_asprintf("; .pth import lines not run: %s", list);
}

int pvg_python_module_path(const char *python, const char *module,
			   const struct pvg_python_opts *opts, char **path, struct pvg_msg *why)
{
	*path = NULL;
	pvg_msg_clear(why);
	if (!dotted_name(module)) {
		pvg_msg_set(why, NULL, "'%s' is not a dotted module name", module);
		return -ENOENT;
	}
	struct py_layout l;
	int r = layout_read(python, &l, why);
	if (r < 0) {
		if (why->text && !why->hint)
			why->hint = pvg_strdup(
				"install.python must name the interpreter inside its installation (a "
				"venv's bin/python3, or PREFIX/bin/python3.X beside PREFIX/lib/"
				"python3.X): provgate reads its files and never runs it; or set "
				"install.artifact");
		layout_clear(&l);
		return r;
	}
	struct search s = { .l = &l };
	build_sys_path(&s, opts);

	struct spec spec = { 0 };
	const struct path_entry *where = s.entries;
	size_t n_where = s.n_entries;
	struct spec parent = { 0 };
	const char *p = module;
	r = 0;
	for (;;) {
		const char *dot = strchr(p, '.');
		_cleanup_free_ char *full = pvg_asprintf("%.*s", (int)((dot ? dot : p + strlen(p)) - module), module);
		bool found = path_finder(&s, full, where, n_where, &spec);
		for (size_t i = 0; !found && i < s.n_finders; i++)
			found = editable_finder(&s, &s.finders[i], full, &spec);
		if (!found) {
			_cleanup_free_ char *list = NULL;
			if (where != s.entries)
				describe_path(where, n_where, &list);
			_cleanup_free_ char *note = not_run_note(&s);
			pvg_msg_set(why,
				    s.not_run.n ? "provgate does not run .pth import lines: if one of "
						  "them installs the finder that provides the module, "
						  "set install.artifact (or the entry's install) to its "
						  "file"
						: NULL,
				    "No module named '%s' (searched %s with %s, read from its files%s)",
				    full, list ? list : "sys.path", python, note);
			r = -ENOENT;
			break;
		}
		if (!dot)
			break;
		if (!spec.package) {
			_cleanup_free_ char *next = pvg_asprintf("%.*s", (int)(strchrnul(dot + 1, '.') - dot - 1), dot + 1);
			pvg_msg_set(why, NULL, "'%s' is a module, not a package, so it has no '%s'",
				    full, next);
			r = -ENOENT;
			break;
		}
		spec_clear(&parent);
		parent = spec;
		memset(&spec, 0, sizeof(spec));
		where = parent.locations;
		n_where = parent.n_locations;
		p = dot + 1;
	}
	if (r == 0 && !spec.origin) {
		pvg_msg_set(why, NULL, "'%s' has no file (origin None): a namespace package", module);
		r = -ENOENT;
	}
	if (r == 0)
		*path = TAKE_PTR(spec.origin);
	spec_clear(&spec);
	spec_clear(&parent);
	search_clear(&s);
	layout_clear(&l);
	return r;
}

/* ---- who can change what it finds --------------------------------------------------------- */

static int writable_by_others(const struct stat *st)
{
	if (st->st_uid != 0)
		return 1;
	if (S_ISLNK(st->st_mode))
		return 0;
	/* a sticky folder writable by all (/tmp) lets nobody else rename root's entries */
	if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))
		return 0;
	return (st->st_mode & 022) != 0;
}

int pvg_python_writable_by_others(const char *python, char **what, uid_t *owner)
{
	*what = NULL;
	*owner = 0;
	struct pvg_msg why = { 0 };
	struct py_layout l;
	int r = layout_read(python, &l, &why);
	pvg_msg_clear(&why);
	if (r < 0) {
		layout_clear(&l);
		return r;
	}
	struct pvg_strv check = { 0 };
	pvg_strv_push(&check, pvg_strdup(l.exe));
	pvg_strv_push(&check, pvg_strdup(l.real));
	pvg_strv_push(&check, dir_of(l.exe));
	pvg_strv_push(&check, pvg_strdup(l.prefix));
	struct pvg_strv sites = { 0 };
	site_dirs(&l, l.prefix, &sites);
	for (size_t i = 0; i < sites.n; i++)
		if (exists(sites.v[i]))
			pvg_strv_push(&check, pvg_strdup(sites.v[i]));
	pvg_strv_clear(&sites);
	r = 0;
	for (size_t i = 0; i < check.n && r == 0; i++) {
		struct stat st;
		if (lstat(check.v[i], &st) == 0 && writable_by_others(&st)) {
			*what = pvg_strdup(check.v[i]);
			*owner = st.st_uid;
			r = 1;
		}
	}
	pvg_strv_clear(&check);
	layout_clear(&l);
	return r;
}
