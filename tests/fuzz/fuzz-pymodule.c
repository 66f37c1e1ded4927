/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the readers of lib/sys/pymodule.c for text the service's user writes
 * (sys/pymodule.h exposes them for tests, as t-pymodule uses them): pyvenv.cfg, .pth lines
 * (and setuptools' editable-finder import line), the Python str literals and dicts of an
 * editable finder's MAPPING/NAMESPACES, and posixpath.normpath. Beyond crashes:
 *   - normpath agrees with a list-based copy of posixpath.normpath, is idempotent, never
 *     longer than its input (or "."), and an absolute result has no "." or ".." component;
 *   - pyvenv.cfg, on ASCII text, reads as getpath (home: '\n' lines, the first one) and
 *     site.py (include-system-site-packages: universal newlines, the last one) read it;
 *   - a .pth line is skipped, an import or a path exactly as site.addpackage decides, and a
 *     path is the normalised join of the site folder and the line;
 *   - a str literal read back from its own repr is the same string;
 *   - a refused finder is left empty (never half-used), a read one is whole and reads the
 *     same again from literals written out of it. */
/* Built by tests/fuzz/build.sh. */
#include "sys/pymodule.h"

#define FAIL(what) (fprintf(stderr, "fuzz-pymodule: %s\n", what), __builtin_trap())

/* Python's str.isspace for ASCII (str.strip's set) */
static bool py_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* posixpath.normpath, written as CPython writes it: a list of components */
static char *ref_normpath(const char *path)
{
	size_t n = strlen(path);
	if (n == 0)
		return pvg_strdup(".");
	int initial = path[0] == '/' ? (path[1] == '/' && path[2] != '/' ? 2 : 1) : 0;
	const char **comps = pvg_xcalloc(n + 1, sizeof(char *));
	size_t *lens = pvg_xcalloc(n + 1, sizeof(size_t));
	size_t k = 0;
	for (const char *p = path;;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool dotdot = len == 2 && p[0] == '.' && p[1] == '.';
		if (len == 0 || (len == 1 && p[0] == '.')) {
		} else if (!dotdot || (!initial && k == 0) ||
			   (k > 0 && lens[k - 1] == 2 && comps[k - 1][0] == '.' && comps[k - 1][1] == '.')) {
			comps[k] = p;
			lens[k++] = len;
		} else if (k > 0) {
			k--;
		}
		if (!e)
			break;
		p = e + 1;
	}
	char *out = pvg_xcalloc(n + 3, 1);
	size_t o = 0;
	for (int i = 0; i < initial; i++)
		out[o++] = '/';
	for (size_t i = 0; i < k; i++) {
		if (i)
			out[o++] = '/';
		memcpy(out + o, comps[i], lens[i]);
		o += lens[i];
	}
	if (o == 0)
		out[o++] = '.';
	free(comps);
	free(lens);
	return out;
}

static void check_normpath(const char *in)
{
	char *n = pvg_py_normpath(in), *ref = ref_normpath(in);
	if (strcmp(n, ref) != 0)
		FAIL("normpath differs from posixpath.normpath");
	size_t len = strlen(in);
	if (strlen(n) > (len ? len : 1))
		FAIL("normpath longer than its input");
	char *again = pvg_py_normpath(n);
	if (strcmp(again, n) != 0)
		FAIL("normpath not idempotent");
	if (in[0] == '/') {
		if (n[0] != '/')
			FAIL("absolute path made relative");
		for (const char *c = n; (c = strchr(c, '/')); c++)
			if ((c[1] == '.' && (c[2] == '/' || !c[2])) ||
			    (c[1] == '.' && c[2] == '.' && (c[3] == '/' || !c[3])))
				FAIL("\".\" or \"..\" left in an absolute normalised path");
	}
	free(again);
	free(n);
	free(ref);
}

/* ---- pyvenv.cfg ---------------------------------------------------------------------- */

/* s[0..n) stripped as str.strip() does (ASCII) */
static void py_strip(const char **s, size_t *n)
{
	while (*n && py_space(**s))
		(*s)++, (*n)--;
	while (*n && py_space((*s)[*n - 1]))
		(*n)--;
}

static bool key_is(const char *k, size_t n, const char *want)
{
	if (n != strlen(want))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((k[i] >= 'A' && k[i] <= 'Z' ? k[i] - 'A' + 'a' : k[i]) != want[i])
			return false;
	return true;
}

/* getpath: lines end at '\n' only, the first home wins; site.py: universal newlines, the
 * last include-system-site-packages wins */
static void ref_pyvenv(const char *text, char **home, bool *system_site)
{
	*home = NULL;
	*system_site = true;
	for (int pass = 0; pass < 2; pass++) {
		for (const char *l = text; *l;) {
			size_t len = pass == 0 ? strcspn(l, "\n") : strcspn(l, "\r\n");
			const char *eq = memchr(l, '=', len);
			if (eq) {
				const char *k = l, *v = eq + 1;
				size_t kn = (size_t)(eq - l), vn = len - kn - 1;
				py_strip(&k, &kn);
				py_strip(&v, &vn);
				if (pass == 0 && !*home && key_is(k, kn, "home"))
					*home = pvg_asprintf("%.*s", (int)vn, v);
				if (pass == 1 && key_is(k, kn, "include-system-site-packages"))
					*system_site = key_is(v, vn, "true");
			}
			l += len;
			if (*l == '\r' && l[1] == '\n' && pass == 1)
				l++;
			if (*l)
				l++;
		}
	}
}

static bool ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

static void check_pyvenv(const char *text)
{
	struct pvg_pyvenv v;
	pvg_pyvenv_parse(text, &v);
	if (v.version[0]) {
		unsigned a, b;
		int used = 0;
		if (sscanf(v.version, "%u.%u%n", &a, &b, &used) != 2 || v.version[used] ||
		    strspn(v.version, "0123456789.") != strlen(v.version))
			FAIL("pyvenv version not X.Y");
	}
	if (v.home && (strchr(v.home, '\n') || strlen(v.home) >= strlen(text)))
		FAIL("pyvenv home spans lines or is longer than the file");
	if (ascii(text)) {
		char *home;
		bool site;
		ref_pyvenv(text, &home, &site);
		if ((home == NULL) != (v.home == NULL) || (home && strcmp(home, v.home) != 0))
			FAIL("pyvenv home differs from getpath's");
		if (site != v.system_site)
			FAIL("include-system-site-packages differs from site.py's");
		free(home);
	}
	pvg_pyvenv_clear(&v);
}

/* ---- .pth lines ---------------------------------------------------------------------- */

static void check_pth_line(const char *line)
{
	static const char sitedir[] = "/v/lib/python3.11/site-packages";
	char *dir = (char *)1;
	enum pvg_pth_line kind = pvg_pth_line(sitedir, line, &dir);
	bool blank = true;
	for (const char *c = line; *c; c++)
		blank = blank && py_space(*c);
	bool is_import = strncmp(line, "import ", 7) == 0 || strncmp(line, "import\t", 7) == 0;
	enum pvg_pth_line want = line[0] == '#' ? PVG_PTH_SKIP
				 : !ascii(line) && !is_import ? kind /* Unicode spaces: not modelled */
				 : blank ? PVG_PTH_SKIP
				 : is_import ? PVG_PTH_IMPORT : PVG_PTH_PATH;
	if (kind != want)
		FAIL(".pth line classified unlike site.addpackage");
	if ((kind == PVG_PTH_PATH) != (dir != NULL))
		FAIL(".pth path without a folder, or a folder for a non-path");
	if (kind == PVG_PTH_PATH) {
		/* makepath: abspath(join(sitedir, line.rstrip())) */
		size_t n = strlen(line);
		while (n && py_space(line[n - 1]))
			n--;
		char *rel = pvg_asprintf("%.*s", (int)n, line);
		char *joined = rel[0] == '/' ? pvg_strdup(rel) : pvg_asprintf("%s/%s", sitedir, rel);
		char *want_dir = ref_normpath(joined);
		if (ascii(line) && strcmp(dir, want_dir) != 0)
			FAIL(".pth path is not the normalised join");
		if (dir[0] != '/' || strlen(dir) > strlen(sitedir) + 1 + strlen(line))
			FAIL(".pth path relative or longer than its parts");
		check_normpath(dir);
		free(want_dir);
		free(joined);
		free(rel);
		free(dir);
	}
	char *f = pvg_pth_editable_finder(line);
	if (f) {
		if (kind != PVG_PTH_IMPORT || strncmp(f, "__editable___", 13) != 0 ||
		    strlen(f) < 20 || strcmp(f + strlen(f) - 7, "_finder") != 0)
			FAIL("editable finder name from a line that is not setuptools'");
		char *exact = pvg_asprintf("import %s; %s.install()", f, f);
		size_t n = strlen(line);
		while (n && strchr(" \t\r\n", line[n - 1]))
			n--;
		const char *s = line + 7;
		while (*s == ' ')
			s++;
		if (strncmp(s, exact + 7, n - (size_t)(s - line)) != 0 ||
		    n - (size_t)(s - line) != strlen(exact + 7))
			FAIL("editable finder line with more than setuptools writes");
		free(exact);
		free(f);
	}
}

static void check_pth(const char *text)
{
	/* add_pth's split: text mode, \r\n or a lone \r ends a line too */
	char *copy = pvg_strdup(text);
	for (char *line = copy; line && *line;) {
		char *nl = line + strcspn(line, "\r\n"), *next = NULL;
		if (*nl) {
			next = nl + (nl[0] == '\r' && nl[1] == '\n' ? 2 : 1);
			*nl = '\0';
		}
		check_pth_line(line);
		check_normpath(line);
		line = next;
	}
	free(copy);
}

/* ---- literals and finders ------------------------------------------------------------ */

/* A repr-like literal of s, which pvg_py_str_literal must read back unchanged. */
static char *repr(const char *s)
{
	char *out = pvg_xcalloc(strlen(s) * 2 + 3, 1), *o = out;
	*o++ = '\'';
	for (; *s; s++) {
		if (*s == '\\' || *s == '\'')
			*o++ = '\\', *o++ = *s;
		else if (*s == '\n')
			*o++ = '\\', *o++ = 'n';
		else
			*o++ = *s;
	}
	*o = '\'';
	return out;
}

static void check_literal(const char *at)
{
	const char *p = at;
	char *s = pvg_py_str_literal(&p);
	if (!s) {
		if (p != at)
			FAIL("a refused literal moved the cursor");
		return;
	}
	if (p <= at + 1 || p[-1] != at[0])
		FAIL("literal does not end at its closing quote");
	if (strlen(s) > (size_t)(p - at - 2) * 4)
		FAIL("literal longer than its source allows");
	if (!memchr(at + 1, '\\', (size_t)(p - at - 2)) &&
	    (strlen(s) != (size_t)(p - at - 2) || memcmp(s, at + 1, strlen(s)) != 0))
		FAIL("a literal without escapes changed");
	char *r = repr(s);
	const char *q = r;
	char *back = pvg_py_str_literal(&q);
	if (!back || strcmp(back, s) != 0 || *q)
		FAIL("a literal does not read back from its repr");
	free(back);
	free(r);
	free(s);
}

static bool finder_empty(const struct pvg_editable_finder *f)
{
	return f->n_mapping == 0 && !f->mapping && f->n_namespaces == 0 && !f->ns_names &&
	       !f->ns_paths && !f->placeholder;
}

static void check_finder(const char *text)
{
	struct pvg_editable_finder f;
	memset(&f, 0xa5, sizeof(f));
	if (pvg_editable_finder_parse(text, &f) < 0) {
		if (!finder_empty(&f))
			FAIL("a refused finder is not left empty");
		return;
	}
	if ((f.style != PVG_EF_PREFIX && f.style != PVG_EF_EXACT) || !f.placeholder ||
	    (f.n_mapping && !f.mapping) || (f.n_namespaces && (!f.ns_names || !f.ns_paths)) ||
	    !strstr(text, "class _EditableFinder"))
		FAIL("a read finder is not whole");
	/* written out again as setuptools would, it reads the same */
	char *t = pvg_strdup(f.style == PVG_EF_PREFIX ? "class _EditableFinder:\n"
							"reversed(list(MAPPING.items()))\nMAPPING = {"
						      : "class _EditableFinder:\nif fullname in MAPPING:\n"
							"parent in MAPPING\nMAPPING = {");
	for (size_t i = 0; i < f.n_mapping; i++) {
		if (!f.mapping[2 * i] || !f.mapping[2 * i + 1])
			FAIL("a mapping entry without its key or path");
		char *k = repr(f.mapping[2 * i]), *v = repr(f.mapping[2 * i + 1]);
		char *u = pvg_asprintf("%s%s: %s, ", t, k, v);
		free(t), free(k), free(v);
		t = u;
	}
	char *u = pvg_asprintf("%s}\nNAMESPACES = {", t);
	free(t);
	t = u;
	for (size_t i = 0; i < f.n_namespaces; i++) {
		char *k = repr(f.ns_names[i]);
		u = pvg_asprintf("%s%s: [", t, k);
		free(t), free(k);
		t = u;
		for (size_t j = 0; j < f.ns_paths[i].n; j++) {
			char *v = repr(f.ns_paths[i].v[j]);
			u = pvg_asprintf("%s%s, ", t, v);
			free(t), free(v);
			t = u;
		}
		u = pvg_asprintf("%s], ", t);
		free(t);
		t = u;
	}
	char *ph = repr(f.placeholder);
	u = pvg_asprintf("%s}\nPATH_PLACEHOLDER = %s + ''\n", t, ph);
	free(t), free(ph);
	t = u;
	struct pvg_editable_finder g;
	if (pvg_editable_finder_parse(t, &g) < 0 || g.style != f.style ||
	    g.n_mapping != f.n_mapping || g.n_namespaces != f.n_namespaces ||
	    strcmp(g.placeholder, f.placeholder) != 0)
		FAIL("a finder written out again reads differently");
	for (size_t i = 0; i < 2 * f.n_mapping; i++)
		if (strcmp(f.mapping[i], g.mapping[i]) != 0)
			FAIL("a mapping written out again reads differently");
	for (size_t i = 0; i < f.n_namespaces; i++) {
		if (strcmp(f.ns_names[i], g.ns_names[i]) != 0 || f.ns_paths[i].n != g.ns_paths[i].n)
			FAIL("namespaces written out again read differently");
		for (size_t j = 0; j < f.ns_paths[i].n; j++)
			if (strcmp(f.ns_paths[i].v[j], g.ns_paths[i].v[j]) != 0)
				FAIL("a namespace path written out again reads differently");
	}
	pvg_editable_finder_clear(&g);
	free(t);
	pvg_editable_finder_clear(&f);
	if (!finder_empty(&f))
		FAIL("clear left something");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = pvg_xcalloc(size + 1, 1);
	memcpy(text, data, size);
	check_pyvenv(text);
	check_pth(text);
	check_finder(text);
	/* every quote starts a literal (bounded: a long input of quotes is quadratic) */
	int n = 0;
	for (const char *q = text; (q = strpbrk(q, "'\"")) && n < 64; q++, n++)
		check_literal(q);
	free(text);
	return 0;
}
