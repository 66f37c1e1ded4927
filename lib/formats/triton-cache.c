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

size_t pvg_triton_py_kernels(const char *text, size_t len, struct pvg_strv *out)
{
	if (len > PVG_TRITON_MAX_SOURCE)
		len = PVG_TRITON_MAX_SOURCE;
	const char *p = text, *end = text + len;
	bool plain_jit = false; /* "from triton import jit" (or "..., jit") was seen */
	bool pending = false;   /* a @triton.jit decorator waits for its def */
	int depth = 0;          /* open brackets of a decorator continued over lines */
	size_t found = 0;
	while (p < end && out->n < 4096) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *s = p;
		while (s < eol && (*s == ' ' || *s == '\t'))
			s++;
		if (depth > 0) {
			for (const char *q = s; q < eol; q++)
				depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
			if (depth < 0)
				depth = 0;
		} else if (starts(s, eol, "from triton import")) {
			for (const char *q = s + 18; q + 3 <= eol; q++)
				if (memcmp(q, "jit", 3) == 0 && !ident_char(q[-1]) &&
				    (q + 3 == eol || !ident_char(q[3])))
					plain_jit = true;
		} else if (s + 1 < eol && *s == '@') {
			const char *n = s + 1;
			bool jit = (starts(n, eol, "triton.jit") && (n + 10 == eol || !ident_char(n[10]))) ||
				   (plain_jit && starts(n, eol, "jit") && (n + 3 == eol || !ident_char(n[3])));
			pending |= jit;
			for (const char *q = s; q < eol; q++)
				depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
			if (depth < 0)
				depth = 0;
		} else if (starts(s, eol, "def ") || starts(s, eol, "async def ")) {
			if (pending) {
				const char *n = s + (*s == 'a' ? 10 : 4);
				while (n < eol && *n == ' ')
					n++;
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
		}
		p = eol + 1;
	}
	return found;
}
