/* SPDX-License-Identifier: MIT */
/*
 * Triton cache files, parsed (see triton-cache.h). json.dumps(metadata, default=vars) writes
 * the target as {"backend": "cuda", "arch": 90, "warp_size": 32} on NVIDIA (the compute
 * capability as a number) and {"backend": "hip", "arch": "gfx90a", "warp_size": 64} on ROCm
 * (the target id, features kept): both become a target id as formats/codeobj writes them.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "formats/codeobj/codeobj.h"
#include "formats/triton-cache.h"

static int bad(char **why, const char *fmt, const char *field)
{
	*why = pvg_asprintf(fmt, field);
	return -EBADMSG;
}

/* A string field: present, a string, not empty, shorter than size, no control bytes. */
static int get_str(const cJSON *o, const char *key, char *out, size_t size, bool need, char **why)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return need ? bad(why, "no \"%s\"", key) : 0;
	if (!cJSON_IsString(v) || !v->valuestring)
		return bad(why, "\"%s\" is not a string", key);
	size_t n = strlen(v->valuestring);
	if (n == 0 || n >= size)
		return bad(why, "\"%s\" is empty or too long", key);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v->valuestring[i] < 0x20 || v->valuestring[i] == 0x7f)
			return bad(why, "\"%s\" holds a control character", key);
	memcpy(out, v->valuestring, n + 1);
	return 0;
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int cuda_arch(const cJSON *a, char *out, size_t size, char **why)
{
	if (cJSON_IsNumber(a)) {
		double d = a->valuedouble;
		if (d < 10 || d > 1000 || d != (double)(long)d)
			return bad(why, "target \"%s\" is not a compute capability", "arch");
		snprintf(out, size, "sm_%ld", (long)d);
		return 0;
	}
	/* a string of digits, with the "a"/"f" of an arch-specific target */
	const char *s = cJSON_IsString(a) ? a->valuestring : NULL;
	size_t n = s ? strlen(s) : 0;
	size_t digits = n && (s[n - 1] == 'a' || s[n - 1] == 'f') ? n - 1 : n;
	if (!s || n > 6 || !all_digits(s, digits))
		return bad(why, "target \"%s\" is not a compute capability", "arch");
	snprintf(out, size, "sm_%s", s);
	return 0;
}

/* An optional whole-number option in [lo, hi]; null only where null_ok (*out stays 0). */
static int get_count(const cJSON *o, const char *key, long lo, long hi, bool null_ok, long *out,
		     char **why)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v || (null_ok && cJSON_IsNull(v)))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
	    v->valuedouble != (double)(long)v->valuedouble)
		return bad(why, "\"%s\" is not a whole number in its bounds", key);
	*out = (long)v->valuedouble;
	return 0;
}

int pvg_triton_meta_parse(const char *text, size_t len, struct pvg_triton_meta *out, char **why)
{
	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (len > PVG_TRITON_MAX_JSON)
		return bad(why, "larger than %s", "1 MiB");
	cJSON *root = cJSON_ParseWithLength(text, len);
	if (!root)
		return bad(why, "not JSON%s", "");
	int r = -EBADMSG;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "target");
	const cJSON *arch = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "arch") : NULL;
	const cJSON *ws = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "warp_size") : NULL;
	if (!cJSON_IsObject(root))
		bad(why, "not a JSON object%s", "");
	else if (get_str(root, "name", out->name, sizeof(out->name), true, why) < 0)
		;
	else if (get_str(root, "triton_version", out->triton_version,
			 sizeof(out->triton_version), false, why) < 0)
		;
	else if (get_count(root, "num_warps", 1, 1024, false, &out->num_warps, why) < 0 ||
		 get_count(root, "num_stages", 0, 1024, false, &out->num_stages, why) < 0 ||
		 get_count(root, "maxnreg", 1, 65535, true, &out->maxnreg, why) < 0)
		;
	else if (!cJSON_IsObject(t))
		bad(why, "\"%s\" is not an object", "target");
	else if (get_str(t, "backend", out->backend, sizeof(out->backend), true, why) < 0)
		;
	else if (!arch)
		bad(why, "no target \"%s\"", "arch");
	else if (ws && (!cJSON_IsNumber(ws) || ws->valuedouble < 1 || ws->valuedouble > 1024))
		bad(why, "target \"%s\" is not a number of lanes", "warp_size");
	else if (strcmp(out->backend, "cuda") == 0)
		r = cuda_arch(arch, out->arch, sizeof(out->arch), why);
	else if (strcmp(out->backend, "hip") == 0) {
		struct pvg_target tid;
		if (!cJSON_IsString(arch) || !arch->valuestring ||
		    strlen(arch->valuestring) >= sizeof(out->arch) ||
		    pvg_target_parse(arch->valuestring, &tid) < 0)
			bad(why, "target \"%s\" is not an AMDGPU target id", "arch");
		else {
			snprintf(out->arch, sizeof(out->arch), "%s", arch->valuestring);
			r = 0;
		}
	} else {
		_cleanup_free_ char *b = pvg_utf8_sanitize(out->backend, strlen(out->backend));
		*why = pvg_asprintf("backend \"%s\" is neither cuda nor hip", b);
	}
	if (r == 0 && ws)
		out->warp_size = (long)ws->valuedouble;
	cJSON_Delete(root);
	return r;
}

bool pvg_triton_arch_runs(const char *node, const struct pvg_triton_meta *m)
{
	if (!node)
		return false;
	if (strcmp(m->backend, "cuda") == 0)
		return strcmp(node, m->arch) == 0;
	return pvg_target_compatible(node, m->arch);
}

const char *pvg_triton_binary_ext(const char *backend)
{
	if (strcmp(backend, "cuda") == 0)
		return "cubin";
	if (strcmp(backend, "hip") == 0)
		return "hsaco";
	return NULL;
}

int pvg_triton_first_loc(const char *text, size_t len, char **path, unsigned long *line)
{
	*path = NULL;
	*line = 0;
	static const char key[] = "loc(\"";
	const char *p = memmem(text, len, key, sizeof(key) - 1);
	if (!p)
		return -ENOENT;
	p += sizeof(key) - 1;
	const char *end = text + len;
	_cleanup_free_ char *s = pvg_xcalloc(4097, 1);
	size_t n = 0;
	for (;;) {
		if (p >= end || n >= 4096)
			return -EBADMSG;
		char c = *p++;
		if (c == '"')
			break;
		if (c == '\n' || c == '\0')
			return -EBADMSG;
		if (c == '\\') {
			/* MLIR's printer: \\, \", \n, \t, else two hex digits */
			if (p >= end)
				return -EBADMSG;
			char e = *p++;
			if (e == '\\' || e == '"')
				c = e;
			else if (e == 'n')
				c = '\n';
			else if (e == 't')
				c = '\t';
			else if (isxdigit((unsigned char)e) && p < end && isxdigit((unsigned char)*p)) {
				char hex[3] = { e, *p++, 0 };
				c = (char)strtoul(hex, NULL, 16);
				if (c == '\0')
					return -EBADMSG;
			} else
				return -EBADMSG;
		}
		s[n++] = c;
	}
	if (p >= end || *p != ':' || n == 0)
		return -EBADMSG;
	p++;
	unsigned long v = 0;
	const char *d = p;
	while (p < end && isdigit((unsigned char)*p) && p - d < 9)
		v = v * 10 + (unsigned long)(*p++ - '0');
	if (p == d || p >= end || *p != ':')
		return -EBADMSG;
	*line = v;
	*path = TAKE_PTR(s);
	return 0;
}

/* ---- a .py file's @triton.jit functions ------------------------------------------------------ */

static bool starts(const char *p, const char *e, const char *w)
{
	size_t n = strlen(w);
	return (size_t)(e - p) >= n && memcmp(p, w, n) == 0;
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static const char *skip_blanks(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* An identifier at p (not a digit first); its end, or p when none. */
static const char *ident_end(const char *p, const char *e)
{
	if (p >= e || isdigit((unsigned char)*p) || !ident_char(*p))
		return p;
	while (p < e && ident_char(*p))
		p++;
	return p;
}

static bool word_is(const char *p, const char *pe, const char *w)
{
	return (size_t)(pe - p) == strlen(w) && memcmp(p, w, (size_t)(pe - p)) == 0;
}

/* Names a file binds: to the triton module (import triton as tr; "triton" always, as vLLM's
 * triton_utils re-exports it) and to its decorators (from triton import jit as tjit). */
#define PY_NAMES 16
struct py_names {
	char v[PY_NAMES][64];
	size_t n;
};

static void names_add(struct py_names *s, const char *p, const char *pe)
{
	if (s->n == PY_NAMES || pe - p <= 0 || pe - p >= 64)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (word_is(p, pe, s->v[i]))
			return;
	memcpy(s->v[s->n], p, (size_t)(pe - p));
	s->v[s->n][pe - p] = '\0';
	s->n++;
}

static bool names_has(const struct py_names *s, const char *p, const char *pe)
{
	for (size_t i = 0; i < s->n; i++)
		if (word_is(p, pe, s->v[i]))
			return true;
	return false;
}

struct py_scan {
	struct py_names modules;    /* names of the triton module */
	struct py_names decorators; /* bare names of jit, autotune, heuristics */
	struct py_names jits;       /* bare names of jit alone (its call form) */
	bool imports_triton;
	bool from_triton;           /* the import being read is "from triton[...] import" */
};

/* A dotted module path "a.b.c" in [p, e): is one of its parts "triton" (or vLLM's
 * "triton_utils")? Its end in *end. */
static bool module_is_triton(const char *p, const char *e, const char **end, bool *exactly)
{
	bool any = false;
	const char *first = p;
	for (;;) {
		const char *pe = ident_end(p, e);
		if (pe == p)
			break;
		any |= word_is(p, pe, "triton") || word_is(p, pe, "triton_utils");
		p = pe;
		if (p < e && *p == '.')
			p++;
		else
			break;
	}
	*end = p;
	*exactly = word_is(first, p, "triton");
	return any;
}

/* The names of "from M import a, b as c" (or a bracketed list's line) in [p, e). */
static void read_from_names(struct py_scan *sc, const char *p, const char *e)
{
	while (p < e) {
		p = skip_blanks(p, e);
		if (p < e && (*p == '(' || *p == ',')) {
			p++;
			continue;
		}
		if (p >= e || *p == ')' || *p == '#' || *p == '\\')
			return;
		const char *n = p, *ne = ident_end(p, e);
		if (ne == n)
			return;
		p = skip_blanks(ne, e);
		const char *a = n, *ae = ne;
		if (starts(p, e, "as") && (p + 2 == e || !ident_char(p[2]))) {
			a = skip_blanks(p + 2, e);
			ae = ident_end(a, e);
			p = ae;
			if (ae == a)
				return;
		}
		if (word_is(n, ne, "triton")) {
			sc->imports_triton = true;
			names_add(&sc->modules, a, ae);
		} else if (sc->from_triton && (word_is(n, ne, "jit") || word_is(n, ne, "autotune") ||
					       word_is(n, ne, "heuristics"))) {
			names_add(&sc->decorators, a, ae);
			if (word_is(n, ne, "jit"))
				names_add(&sc->jits, a, ae);
		}
	}
}

/* "import a.b as c, triton as tr" in [p, e) after "import". */
static void read_import(struct py_scan *sc, const char *p, const char *e)
{
	while (p < e) {
		p = skip_blanks(p, e);
		const char *mend;
		bool exactly;
		bool tri = module_is_triton(p, e, &mend, &exactly);
		if (mend == p)
			return;
		sc->imports_triton |= tri;
		p = skip_blanks(mend, e);
		if (starts(p, e, "as") && (p + 2 == e || !ident_char(p[2]))) {
			const char *a = skip_blanks(p + 2, e), *ae = ident_end(a, e);
			if (exactly)
				names_add(&sc->modules, a, ae);
			p = skip_blanks(ae, e);
		}
		if (p >= e || *p != ',')
			return;
		p++;
	}
}

/* A decorator or callee at p: ALIAS.NAME or a bare NAME. Is it one of Triton's kernel
 * decorators (jit, autotune, heuristics; jit_only: jit alone)? *end: after it. */
static bool triton_callee(const struct py_scan *sc, const char *p, const char *e, bool jit_only,
			  const char **end)
{
	const char *n = p, *ne = ident_end(p, e);
	*end = ne;
	if (ne == n)
		return false;
	if (ne < e && *ne == '.') {
		if (!names_has(&sc->modules, n, ne))
			return false;
		const char *m = ne + 1, *me = ident_end(m, e);
		*end = me;
		if (me < e && *me == '.')
			return false;
		return word_is(m, me, "jit") ||
		       (!jit_only && (word_is(m, me, "autotune") || word_is(m, me, "heuristics")));
	}
	return names_has(jit_only ? &sc->jits : &sc->decorators, n, ne);
}

/* The call form, anywhere in a line: "k = triton.jit(fn)", "triton.jit(fn, ...)": the kernel
 * is fn's (its __name__ is the cache entry's name). */
static size_t call_form(const struct py_scan *sc, const char *s, const char *eol,
			struct pvg_strv *out)
{
	size_t found = 0;
	for (const char *q = s; q < eol && out->n < 4096; q++) {
		if (!ident_char(*q) || (q > s && (ident_char(q[-1]) || q[-1] == '.')))
			continue;
		const char *ce;
		if (!triton_callee(sc, q, eol, true, &ce)) {
			q = ce > q ? ce - 1 : q;
			continue;
		}
		const char *a = skip_blanks(ce, eol);
		if (a >= eol || *a != '(')
			continue;
		a = skip_blanks(a + 1, eol);
		const char *ae = ident_end(a, eol);
		const char *after = skip_blanks(ae, eol);
		if (ae == a || ae - a >= (long)PVG_TRITON_MAX_NAME || after >= eol ||
		    (*after != ')' && *after != ','))
			continue;
		_cleanup_free_ char *name = pvg_xcalloc((size_t)(ae - a) + 1, 1);
		memcpy(name, a, (size_t)(ae - a));
		if (!pvg_strv_has(out, name)) {
			pvg_strv_push(out, TAKE_PTR(name));
			found++;
		}
		q = ae;
	}
	return found;
}

static int bracket_depth(int depth, const char *p, const char *e)
{
	for (; p < e && *p != '#'; p++)
		depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
	return depth < 0 ? 0 : depth;
}

size_t pvg_triton_py_scan(const char *text, size_t len, struct pvg_strv *out,
			  bool *imports_triton)
{
	if (len > PVG_TRITON_MAX_SOURCE)
		len = PVG_TRITON_MAX_SOURCE;
	const char *p = text, *end = text + len;
	struct py_scan sc = { 0 };
	names_add(&sc.modules, "triton", "triton" + 6);
	bool pending = false;   /* a kernel decorator waits for its def */
	int depth = 0;          /* open brackets of a decorator continued over lines */
	int import_depth = 0;   /* open brackets of a "from M import (" continued */
	size_t found = 0;
	while (p < end && out->n < 4096) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *s = skip_blanks(p, eol);
		if (import_depth > 0) {
			read_from_names(&sc, s, eol);
			import_depth = bracket_depth(import_depth, s, eol);
		} else if (depth > 0) {
			depth = bracket_depth(depth, s, eol);
		} else if (starts(s, eol, "from ") || starts(s, eol, "from\t")) {
			const char *m = skip_blanks(s + 5, eol), *mend;
			bool exactly;
			sc.from_triton = module_is_triton(m, eol, &mend, &exactly) &&
					 (exactly || (mend - m > 7 && starts(m, eol, "triton.")));
			sc.imports_triton |= sc.from_triton;
			const char *i = skip_blanks(mend, eol);
			if (starts(i, eol, "import") && (i + 6 == eol || !ident_char(i[6]))) {
				/* vLLM's "from vllm.triton_utils import tl, triton" */
				if (!sc.from_triton && mend > m)
					sc.imports_triton |= module_is_triton(m, eol, &mend, &exactly);
				read_from_names(&sc, i + 6, eol);
				import_depth = bracket_depth(0, i + 6, eol);
			}
		} else if (starts(s, eol, "import ") || starts(s, eol, "import\t")) {
			read_import(&sc, s + 7, eol);
		} else if (s < eol && *s == '@') {
			const char *d = skip_blanks(s + 1, eol), *de;
			if (triton_callee(&sc, d, eol, false, &de) &&
			    (de == eol || !ident_char(*de)))
				pending = true;
			depth = bracket_depth(0, s, eol);
		} else if (starts(s, eol, "def ") || starts(s, eol, "async def ")) {
			if (pending) {
				const char *n = skip_blanks(s + (*s == 'a' ? 10 : 4), eol);
				const char *ne = n;
				while (ne < eol && ident_char(*ne) && ne - n < (long)PVG_TRITON_MAX_NAME - 1)
					ne++;
				if (ne > n) {
					_cleanup_free_ char *name = pvg_xcalloc((size_t)(ne - n) + 1, 1);
					memcpy(name, n, (size_t)(ne - n));
					if (!pvg_strv_has(out, name)) {
						pvg_strv_push(out, TAKE_PTR(name));
						found++;
					}
				}
			}
			pending = false;
		} else if (s < eol && *s != '#') {
			pending = false; /* a decorator applies only to the def right after it */
			found += call_form(&sc, s, eol, out);
		}
		p = eol + 1;
	}
	if (imports_triton)
		*imports_triton = sc.imports_triton;
	return found;
}

size_t pvg_triton_py_kernels(const char *text, size_t len, struct pvg_strv *out)
{
	return pvg_triton_py_scan(text, len, out, NULL);
}
