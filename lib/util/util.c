/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "util/util.h"

char *pvg_path_join(const char *dir, const char *rel)
{
	if (!rel)
		return NULL;
	if (rel[0] == '/' || !dir || !dir[0])
		return pvg_strdup(rel);
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	while (rel[0] == '.' && rel[1] == '/')
		rel += 2;
	if (strcmp(rel, ".") == 0)
		return pvg_asprintf("%.*s", (int)dl, dir);
	return pvg_asprintf("%.*s/%s", (int)dl, dir, rel);
}

char *pvg_path_absolute(const char *path)
{
	if (!path)
		return NULL;
	if (path[0] == '/')
		return pvg_strdup(path);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return pvg_strdup(path);
	return pvg_path_join(cwd, path);
}

int pvg_fail(char *why, size_t size, int err, const char *fmt, ...)
{
	if (why && size) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return err;
}

size_t pvg_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return SIZE_MAX;
	size_t d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t k = 0; k <= lb; k++)
		d[0][k] = k;
	for (size_t i = 1; i <= la; i++)
		for (size_t k = 1; k <= lb; k++) {
			size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[k - 1]);
			size_t v = d[i - 1][k] + 1;
			if (d[i][k - 1] + 1 < v)
				v = d[i][k - 1] + 1;
			if (d[i - 1][k - 1] + cost < v)
				v = d[i - 1][k - 1] + cost;
			if (i > 1 && k > 1 && a[i - 1] == b[k - 2] && a[i - 2] == b[k - 1] &&
			    d[i - 2][k - 2] + 1 < v)
				v = d[i - 2][k - 2] + 1;
			d[i][k] = v;
		}
	return d[la][lb];
}

const char *pvg_basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Matches one bracket class at p against c; returns pointer past ']' or NULL when malformed. */
static const char *match_class(const char *p, char c, bool *matched)
{
	bool neg = false, hit = false;
	p++; /* '[' */
	if (*p == '!' || *p == '^') {
		neg = true;
		p++;
	}
	bool first = true;
	while (*p && (*p != ']' || first)) {
		char lo = *p, hi = lo;
		if (p[1] == '-' && p[2] && p[2] != ']') {
			hi = p[2];
			p += 3;
		} else {
			p++;
		}
		if (c >= lo && c <= hi)
			hit = true;
		first = false;
	}
	if (*p != ']')
		return NULL;
	*matched = (hit != neg) && c != '/';
	return p + 1;
}

struct glob_state {
	const char *pat, *str;
	size_t slen;
	unsigned char *failed; /* bit per (pattern offset, string offset) known not to match */
};

static bool glob_known_failed(struct glob_state *g, const char *p, const char *s)
{
	size_t bit = (size_t)(p - g->pat) * (g->slen + 1) + (size_t)(s - g->str);
	return g->failed[bit / 8] & (1u << (bit % 8));
}

static bool glob_fail(struct glob_state *g, const char *p, const char *s)
{
	size_t bit = (size_t)(p - g->pat) * (g->slen + 1) + (size_t)(s - g->str);
	g->failed[bit / 8] |= (unsigned char)(1u << (bit % 8));
	return false;
}

/* Backtracking matcher; remembering failed states keeps it polynomial on "*a*a*a...". */
static bool glob_rec(struct glob_state *g, const char *p, const char *s)
{
	if (glob_known_failed(g, p, s))
		return false;
	const char *p0 = p, *s0 = s;
	while (*p) {
		if (p[0] == '*' && p[1] == '*') {
			/* a double star spans '/'; followed by '/' it also matches zero folders */
			const char *rest = p + 2;
			if (*rest == '/' && glob_rec(g, rest + 1, s))
				return true;
			for (const char *t = s;; t++) {
				if (glob_rec(g, rest, t))
					return true;
				if (!*t)
					return glob_fail(g, p0, s0);
			}
		}
		if (*p == '*') {
			for (const char *t = s;; t++) {
				if (glob_rec(g, p + 1, t))
					return true;
				if (!*t || *t == '/')
					return glob_fail(g, p0, s0);
			}
		}
		if (!*s)
			return glob_fail(g, p0, s0);
		if (*p == '?') {
			if (*s == '/')
				return glob_fail(g, p0, s0);
		} else if (*p == '[') {
			bool m;
			const char *np = match_class(p, *s, &m);
			if (np) {
				if (!m)
					return glob_fail(g, p0, s0);
				p = np;
				s++;
				continue;
			}
			if (*s != '[')
				return glob_fail(g, p0, s0);
		} else if (*p != *s) {
			return glob_fail(g, p0, s0);
		}
		p++;
		s++;
	}
	return *s == '\0' ? true : glob_fail(g, p0, s0);
}

bool pvg_glob_match(const char *pattern, const char *path)
{
	if (!pattern || !path)
		return false;
	/* A pattern naming a directory ("docs/") covers everything below it. */
	size_t pl = strlen(pattern);
	if (pl && pattern[pl - 1] == '/')
		return strncmp(pattern, path, pl) == 0;
	struct glob_state g = { .pat = pattern, .str = path, .slen = strlen(path) };
	size_t bits = (pl + 1) * (g.slen + 1);
	unsigned char small[512] = { 0 };
	g.failed = bits <= 8 * sizeof(small) ? small : pvg_xcalloc(bits / 8 + 1, 1);
	bool m = glob_rec(&g, pattern, path);
	if (g.failed != small)
		free(g.failed);
	return m;
}

int pvg_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void pvg_hex(const unsigned char *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}

void pvg_format_time(time_t t, long ns, char *out, size_t size)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	if (ns >= 0) {
		char base[32];
		strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(out, size, "%s.%09ldZ", base, ns);
	} else {
		strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
}

uint64_t pvg_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

cJSON *pvg_json_string(const char *s)
{
	if (!s)
		return cJSON_CreateNull();
	_cleanup_free_ char *clean = pvg_utf8_sanitize(s, strlen(s));
	return cJSON_CreateString(clean);
}

void pvg_json_add_str(cJSON *obj, const char *key, const char *s)
{
	cJSON_AddItemToObject(obj, key, pvg_json_string(s));
}

void pvg_json_add_u64(cJSON *obj, const char *key, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cJSON_AddStringToObject(obj, key, buf);
}

void pvg_json_add_i64(cJSON *obj, const char *key, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	cJSON_AddStringToObject(obj, key, buf);
}

void pvg_json_add_int(cJSON *obj, const char *key, int v)
{
	cJSON_AddNumberToObject(obj, key, v);
}

void pvg_json_add_bool(cJSON *obj, const char *key, bool v)
{
	cJSON_AddBoolToObject(obj, key, v);
}

void pvg_strv_clear(struct pvg_strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

void pvg_strv_push(struct pvg_strv *v, char *s)
{
	v->v = pvg_xrealloc(v->v, v->n + 2, sizeof(*v->v));
	v->v[v->n++] = s;
	v->v[v->n] = NULL;
}

bool pvg_strv_has(const struct pvg_strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0)
			return true;
	return false;
}

void pvg_strv_add_unique(struct pvg_strv *v, const char *s)
{
	if (!pvg_strv_has(v, s))
		pvg_strv_push(v, pvg_strdup(s));
}

char *pvg_strv_join_distinct(const struct pvg_strv *v, const char *sep)
{
	char *out = pvg_strdup("");
	for (size_t i = 0; i < v->n; i++) {
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(v->v[k], v->v[i]) == 0;
		if (seen)
			continue;
		char *o = pvg_asprintf("%s%s%s", out, *out ? sep : "", v->v[i]);
		free(out);
		out = o;
	}
	return out;
}

const char *pvg_procfs_root(void)
{
	const char *procfs = getenv("PROVGATE_PROCFS");
	return procfs && procfs[0] ? procfs : "/proc";
}

const char *pvg_sysfs_root(void)
{
	const char *sysfs = getenv("PROVGATE_SYSFS");
	return sysfs && sysfs[0] ? sysfs : "/sys";
}

void pvg_msg_set(struct pvg_msg *m, const char *hint, const char *fmt, ...)
{
	pvg_msg_clear(m);
	va_list ap;
	va_start(ap, fmt);
	m->text = pvg_vasprintf(fmt, ap);
	va_end(ap);
	m->hint = hint ? pvg_strdup(hint) : NULL;
}

void pvg_msg_clear(struct pvg_msg *m)
{
	free(m->text);
	free(m->hint);
	m->text = m->hint = NULL;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorting keeps this O(n log n) for objects with very many members (bounded input only). */
const char *pvg_json_find_duplicate(const cJSON *item, bool recursive)
{
	if (!item)
		return NULL;
	if (cJSON_IsObject(item)) {
		size_t n = 0;
		for (const cJSON *c = item->child; c; c = c->next)
			n++;
		if (n > 1) {
			_cleanup_free_ const char **names = pvg_xcalloc(n, sizeof(*names));
			size_t k = 0;
			for (const cJSON *c = item->child; c; c = c->next)
				names[k++] = c->string ? c->string : "";
			qsort(names, n, sizeof(*names), name_cmp);
			for (k = 1; k < n; k++)
				if (strcmp(names[k - 1], names[k]) == 0) {
					/* a pointer into the tree, not into the freed array */
					for (const cJSON *c = item->child; c; c = c->next)
						if (c->string && strcmp(c->string, names[k]) == 0)
							return c->string;
				}
		}
	}
	if (recursive && (cJSON_IsObject(item) || cJSON_IsArray(item)))
		for (const cJSON *c = item->child; c; c = c->next) {
			const char *d = pvg_json_find_duplicate(c, true);
			if (d)
				return d;
		}
	return NULL;
}

const char *pvg_json_get_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}
