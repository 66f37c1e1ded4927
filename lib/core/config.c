/* SPDX-License-Identifier: MIT */
/*
 * provgate.json: strict loading. Every key is declared once in the tables below with its
 * type; anything else is an error naming the key and the file.
 */
#include <ctype.h>
#include <limits.h>
#include <stddef.h>

#include "core/config.h"
#include "formats/jsonc.h"
#include "util/hash.h"
#include "sys/node.h"
#include "util/placeholder.h"

enum field_kind {
	F_STRING,  /* plain string */
	F_PATH,    /* string, resolved against the config's folder */
	F_LOG,     /* F_PATH, or the word "container" kept as written (PVG_LOG_CONTAINER) */
	F_PROGRAM, /* a path when it holds '/', else a name looked up in PATH */
	F_ARCH,
	F_BOOL,
	F_COUNT, /* integer >= 0 */
	F_SIZE,  /* bytes: an integer >= 1, or a string "16GiB" (KiB, MiB, GiB, TiB) */
	F_PID,   /* integer >= 1 */
	F_PORT,  /* 1..65535 */
	F_STRV,  /* array of non-empty strings */
	F_PATHV, /* array of paths, each resolved against the config's folder */
	F_INSTALL_MAP,
	F_REQUIRE,
	F_WITNESS_REQUIRE,
	F_WITNESS_API,
	F_WITNESS_SOURCES,
	F_ARTIFACTS,
	F_SECTION,
	F_SCHEMA, /* "$schema": a string, for editors; not used */
};

struct field {
	const char *key;
	enum field_kind kind;
	size_t off;
	const struct field *sub; /* F_SECTION */
	bool expand;             /* placeholders ({node}, ...) are replaced in its value */
};

#define CF(k, kind, member) { k, kind, offsetof(struct pvg_config, member), NULL, false }
/* a value that may differ per node: one config serves every node of a job */
#define CFX(k, kind, member) { k, kind, offsetof(struct pvg_config, member), NULL, true }
#define END { NULL, 0, 0, NULL, false }

static const struct field build_fields[] = {
	CFX("log", F_PATH, build.log),
	CFX("artifact", F_PATH, build.artifact),
	CF("max_unsupported_calls", F_COUNT, build.max_unsupported_calls),
	CF("hip_sources", F_STRV, build.hip_sources),
	END,
};

static const struct field source_fields[] = {
	CFX("repo", F_PATH, source.repo),
	CF("baseline", F_STRING, source.baseline),
	CF("include_uncommitted", F_BOOL, source.include_uncommitted),
	CF("compiled", F_STRV, source.compiled),
	CF("install_map", F_INSTALL_MAP, source.install_map),
	CF("ignore", F_STRV, source.ignore),
	END,
};

static const struct field install_fields[] = {
	CFX("artifact", F_PATH, install.artifact),
	CF("python_module", F_STRING, install.python_module),
	CFX("python", F_PROGRAM, install.python),
	CF("max_artifact_size", F_SIZE, install.max_artifact_size),
	END,
};

static const struct field service_fields[] = {
	CFX("match", F_STRV, service.match),
	CF("pid", F_PID, service.pid),
	CFX("pidfile", F_PATH, service.pidfile),
	CF("port", F_PORT, service.port),
	CFX("family", F_STRV, service.family),
	CF("allow_profiler", F_BOOL, allow_profiler),
	END,
};

static const struct field code_object_fields[] = {
	CF("require_kernels", F_STRV, code_object.require_kernels),
	END,
};

static const struct field markers_fields[] = {
	CFX("log", F_LOG, markers.log),
	CF("prefix", F_STRING, markers.prefix),
	CF("require", F_REQUIRE, markers.require),
	CF("min_count", F_COUNT, markers.min_count),
	CF("forbid", F_STRV, markers.forbid),
	CF("facts", F_STRV, markers.facts),
	CF("pid_pattern", F_STRING, markers.pid_pattern),
	CF("time_pattern", F_STRING, markers.time_pattern),
	CF("time_format", F_STRING, markers.time_format),
	END,
};

static const struct field witness_fields[] = {
	CFX("dir", F_PATH, witness.dir),
	CF("require", F_WITNESS_REQUIRE, witness.require),
	CF("forbid", F_STRV, witness.forbid),
	CF("min_count", F_COUNT, witness.min_count),
	CF("api", F_WITNESS_API, witness.api),
	CFX("library", F_PATH, witness.library),
	CF("answer_ms", F_COUNT, witness.answer_ms),
	CF("changed_sources", F_WITNESS_SOURCES, witness.sources),
	CF("triton_caches", F_STRV, witness.triton_caches),
	END,
};

static const struct field benchmark_fields[] = {
	CF("inputs", F_PATHV, benchmark.inputs),
	CF("allow_loads", F_BOOL, benchmark.allow_loads),
	END,
};

static const struct field compile_cache_fields[] = {
	CF("traced", F_STRV, compile_cache.traced),
	END,
};

#define AF(k, kind, member) { k, kind, offsetof(struct pvg_artifact, member), NULL, false }
#define AFX(k, kind, member) { k, kind, offsetof(struct pvg_artifact, member), NULL, true }
static const struct field artifact_fields[] = {
	AF("name", F_STRING, name),
	AFX("build", F_PATH, build),
	AFX("install", F_PATH, install),
	AF("python_module", F_STRING, python_module),
	AF("compiled", F_STRV, compiled),
	AF("arch", F_ARCH, arch),
	AF("require_kernels", F_STRV, require_kernels),
	END,
};

static const struct field top_fields[] = {
	{ "$schema", F_SCHEMA, 0, NULL, false },
	CFX("name", F_STRING, name),
	CF("arch", F_ARCH, arch),
	{ "build", F_SECTION, 0, build_fields, false },
	{ "source", F_SECTION, 0, source_fields, false },
	{ "install", F_SECTION, 0, install_fields, false },
	{ "service", F_SECTION, 0, service_fields, false },
	{ "code_object", F_SECTION, 0, code_object_fields, false },
	{ "markers", F_SECTION, 0, markers_fields, false },
	{ "witness", F_SECTION, 0, witness_fields, false },
	{ "benchmark", F_SECTION, 0, benchmark_fields, false },
	{ "compile_cache", F_SECTION, 0, compile_cache_fields, false },
	{ "artifacts", F_ARTIFACTS, 0, NULL, false },
	END,
};

static void set_err(struct pvg_error *err, const char *fmt, ...) PVG_PRINTF(2, 3);
static void set_err(struct pvg_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

struct pvg_config *pvg_config_new(void)
{
	struct pvg_config *cfg = pvg_xcalloc(1, sizeof(*cfg));
	cfg->build.max_unsupported_calls = 0;
	cfg->source.include_uncommitted = true;
	cfg->service.pid = -1;
	cfg->service.port = -1;
	cfg->markers.min_count = 1;
	cfg->witness.min_count = 1;
	cfg->witness.answer_ms = 2000;
	cfg->install.max_artifact_size = PVG_HASH_MAX_SIZE_DEFAULT;
	return cfg;
}

static void strv_free(struct pvg_strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

void pvg_config_free(struct pvg_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->path);
	free(cfg->dir);
	free(cfg->name);
	free(cfg->arch);
	free(cfg->build.log);
	free(cfg->build.artifact);
	strv_free(&cfg->build.hip_sources);
	free(cfg->source.repo);
	free(cfg->source.baseline);
	strv_free(&cfg->source.compiled);
	for (size_t i = 0; i < cfg->source.n_install_map; i++) {
		free(cfg->source.install_map[i].from);
		free(cfg->source.install_map[i].to);
	}
	free(cfg->source.install_map);
	strv_free(&cfg->source.ignore);
	free(cfg->install.artifact);
	free(cfg->install.python_module);
	free(cfg->install.python);
	strv_free(&cfg->service.match);
	free(cfg->service.pidfile);
	strv_free(&cfg->service.family);
	strv_free(&cfg->code_object.require_kernels);
	free(cfg->markers.log);
	free(cfg->markers.prefix);
	free(cfg->markers.pid_pattern);
	free(cfg->markers.time_pattern);
	free(cfg->markers.time_format);
	for (size_t i = 0; i < cfg->markers.n_require; i++) {
		for (size_t k = 0; k < cfg->markers.require[i].n; k++) {
			free(cfg->markers.require[i].kv[k].key);
			free(cfg->markers.require[i].kv[k].value);
		}
		free(cfg->markers.require[i].kv);
	}
	free(cfg->markers.require);
	strv_free(&cfg->markers.forbid);
	strv_free(&cfg->markers.facts);
	free(cfg->witness.dir);
	for (size_t i = 0; i < cfg->witness.n_require; i++)
		free(cfg->witness.require[i].kernel);
	free(cfg->witness.require);
	for (size_t i = 0; i < cfg->witness.n_sources; i++) {
		free(cfg->witness.sources[i].path);
		strv_free(&cfg->witness.sources[i].kernels);
		free(cfg->witness.sources[i].exempt);
	}
	free(cfg->witness.sources);
	strv_free(&cfg->witness.forbid);
	strv_free(&cfg->witness.triton_caches);
	free(cfg->witness.api);
	free(cfg->witness.library);
	strv_free(&cfg->benchmark.inputs);
	strv_free(&cfg->compile_cache.traced);
	for (size_t i = 0; i < cfg->n_artifacts; i++) {
		struct pvg_artifact *a = &cfg->artifacts[i];
		free(a->name);
		free(a->build);
		free(a->install);
		free(a->python_module);
		strv_free(&a->compiled);
		free(a->arch);
		strv_free(&a->require_kernels);
	}
	free(cfg->artifacts);
	free(cfg);
}

static const char *json_type_name(const cJSON *j)
{
	if (cJSON_IsString(j))
		return "a string";
	if (cJSON_IsNumber(j))
		return "a number";
	if (cJSON_IsBool(j))
		return "a boolean";
	if (cJSON_IsNull(j))
		return "null";
	if (cJSON_IsArray(j))
		return "an array";
	if (cJSON_IsObject(j))
		return "an object";
	return "an unknown value";
}

static void known_keys(const struct field *fields, char *out, size_t size)
{
	size_t o = 0;
	out[0] = '\0';
	for (const struct field *f = fields; f->key && o < size; f++)
		o += (size_t)snprintf(out + o, size - o, "%s%s", o ? ", " : "", f->key);
}

/* The closest key of fields (at most a third of its letters off), or a section elsewhere that
 * has this very key: ", did you mean \"artifact\"?" */
static void suggest_key(const struct field *fields, const char *key, char *out, size_t size)
{
	out[0] = '\0';
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (const struct field *f = fields; f->key; f++) {
		size_t d = pvg_edit_distance(key, f->key);
		size_t allowed = strlen(f->key) / 3 ? strlen(f->key) / 3 : 1;
		if (d <= allowed && d < best_d) {
			best = f->key;
			best_d = d;
		}
	}
	if (best) {
		snprintf(out, size, ", did you mean \"%s\"?", best);
		return;
	}
	for (const struct field *sec = top_fields; sec->key; sec++) {
		if (sec->kind != F_SECTION || sec->sub == fields)
			continue;
		for (const struct field *f = sec->sub; f->key; f++)
			if (strcmp(f->key, key) == 0) {
				snprintf(out, size, " (\"%s\" is a key of section \"%s\")", key, sec->key);
				return;
			}
	}
	if (fields != top_fields)
		for (const struct field *f = top_fields; f->key; f++)
			if (strcmp(f->key, key) == 0) {
				snprintf(out, size, " (\"%s\" is a top-level key)", key);
				return;
			}
}

struct loader {
	struct pvg_config *cfg;
	void *base; /* what field offsets are relative to: NULL is cfg (an artifacts[] entry) */
	const char *origin;
	const char *base_dir; /* for F_PATH; NULL keeps paths as written */
	struct pvg_error *err;
	/* {node}, {host}, {job}: this node's values */
	struct pvg_node node;
	struct pvg_placeholder ph[PVG_NODE_PLACEHOLDERS];
};

static void loader_placeholders(struct loader *ld)
{
	static char why[160];
	if (pvg_node_get(&ld->node, why, sizeof(why)) < 0) {
		pvg_node_placeholders(&ld->node, ld->ph);
		ld->ph[0].value = NULL; /* {node} only fails where it is used */
		ld->ph[0].unset = why;
		return;
	}
	pvg_node_placeholders(&ld->node, ld->ph);
}

/* *s with its placeholders replaced, in place; a config error naming key and placeholder. */
static int expand_value(const struct loader *ld, const char *key, char **s)
{
	if (!pvg_placeholder_present(*s))
		return 0;
	char why[300];
	char *out = NULL;
	if (pvg_placeholder_expand(*s, ld->ph, PVG_NODE_PLACEHOLDERS, &out, why, sizeof(why)) < 0) {
		_cleanup_free_ char *cw = pvg_utf8_sanitize(why, strlen(why));
		set_err(ld->err, "%s: %s: %s", ld->origin, key, cw);
		return -EINVAL;
	}
	if (!out[0]) {
		free(out);
		set_err(ld->err, "%s: %s: empty once its placeholders are replaced", ld->origin, key);
		return -EINVAL;
	}
	free(*s);
	*s = out;
	return 0;
}

/* A size in bytes: 1 to 2^53 (what a JSON number holds exactly), as a number or as a string
 * with a binary unit. */
static int parse_size(const struct loader *ld, const char *key, const cJSON *j, uint64_t *out)
{
	const double max = 9007199254740992.0;
	double v;
	if (cJSON_IsNumber(j)) {
		v = j->valuedouble;
	} else if (cJSON_IsString(j)) {
		const char *s = j->valuestring;
		char *end;
		errno = 0;
		unsigned long long n = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
		if (!(s[0] >= '0' && s[0] <= '9') || errno)
			end = NULL;
		static const struct { const char *unit; unsigned shift; } units[] = {
			{ "", 0 }, { "B", 0 }, { "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 }, { "TiB", 40 },
		};
		size_t u = ARRAY_SIZE(units);
		while (end && *end == ' ')
			end++;
		for (size_t i = 0; end && i < ARRAY_SIZE(units) && u == ARRAY_SIZE(units); i++)
			if (strcmp(end, units[i].unit) == 0)
				u = i;
		if (u == ARRAY_SIZE(units)) {
			set_err(ld->err, "%s: %s: \"%s\" is not a size (a number of bytes, or one "
					 "with KiB, MiB, GiB or TiB: \"16GiB\")", ld->origin, key, s);
			return -EINVAL;
		}
		v = (double)n * (double)(1ull << units[u].shift);
	} else {
		set_err(ld->err, "%s: %s: expected a size (bytes, or a string like \"16GiB\"), got %s",
			ld->origin, key, json_type_name(j));
		return -EINVAL;
	}
	if (!(v >= 1 && v <= max) || v != (double)(uint64_t)v) {
		set_err(ld->err, "%s: %s: expected a size from 1 byte to 8 PiB, got %g", ld->origin,
			key, v);
		return -EINVAL;
	}
	*out = (uint64_t)v;
	return 0;
}

static int parse_integer(const struct loader *ld, const char *key, const cJSON *j, long min,
			 long max, long *out)
{
	if (!cJSON_IsNumber(j)) {
		set_err(ld->err, "%s: %s: expected an integer, got %s", ld->origin, key,
			json_type_name(j));
		return -EINVAL;
	}
	double d = j->valuedouble;
	/* range first: converting an out-of-range double to long is undefined behaviour */
	if (!(d >= (double)min && d <= (double)max) || d != (double)(long)d) {
		set_err(ld->err, "%s: %s: expected an integer from %ld to %ld, got %g", ld->origin,
			key, min, max, d);
		return -EINVAL;
	}
	*out = (long)d;
	return 0;
}

static int parse_string(const struct loader *ld, const char *key, const cJSON *j, char **out)
{
	if (!cJSON_IsString(j)) {
		set_err(ld->err, "%s: %s: expected a string, got %s", ld->origin, key,
			json_type_name(j));
		return -EINVAL;
	}
	if (j->valuestring[0] == '\0') {
		set_err(ld->err, "%s: %s: must not be empty", ld->origin, key);
		return -EINVAL;
	}
	free(*out);
	*out = pvg_strdup(j->valuestring);
	return 0;
}

static int parse_strv(const struct loader *ld, const char *key, const cJSON *j,
		      struct pvg_strv *out, bool expand)
{
	if (!cJSON_IsArray(j)) {
		set_err(ld->err, "%s: %s: expected an array of strings, got %s", ld->origin, key,
			json_type_name(j));
		return -EINVAL;
	}
	strv_free(out);
	int n = cJSON_GetArraySize(j);
	out->v = pvg_xcalloc((size_t)n + 1, sizeof(char *));
	const cJSON *e;
	int i = 0;
	cJSON_ArrayForEach(e, j) {
		if (!cJSON_IsString(e) || !e->valuestring[0]) {
			set_err(ld->err, "%s: %s[%d]: expected a non-empty string, got %s",
				ld->origin, key, i, cJSON_IsString(e) ? "\"\"" : json_type_name(e));
			return -EINVAL;
		}
		out->v[out->n++] = pvg_strdup(e->valuestring);
		if (expand) {
			char ek[160];
			snprintf(ek, sizeof(ek), "%s[%d]", key, i);
			int r = expand_value(ld, ek, &out->v[out->n - 1]);
			if (r < 0)
				return r;
		}
		i++;
	}
	return 0;
}

static int check_duplicates(const struct loader *ld, const char *where, const cJSON *obj)
{
	for (const cJSON *a = obj->child; a; a = a->next)
		for (const cJSON *b = a->next; b; b = b->next)
			if (strcmp(a->string, b->string) == 0) {
				set_err(ld->err, "%s: %s%s%s: key given twice", ld->origin, where,
					where[0] ? "." : "", a->string);
				return -EINVAL;
			}
	return 0;
}

static int parse_install_map(const struct loader *ld, const char *key, const cJSON *j)
{
	struct pvg_config *cfg = ld->cfg;
	if (!cJSON_IsArray(j)) {
		set_err(ld->err, "%s: %s: expected an array of {\"from\", \"to\"} objects, got %s",
			ld->origin, key, json_type_name(j));
		return -EINVAL;
	}
	int n = cJSON_GetArraySize(j);
	cfg->source.install_map = pvg_xcalloc((size_t)n + 1, sizeof(*cfg->source.install_map));
	const cJSON *e;
	int i = 0;
	cJSON_ArrayForEach(e, j) {
		char where[64];
		snprintf(where, sizeof(where), "%s[%d]", key, i);
		if (!cJSON_IsObject(e)) {
			set_err(ld->err, "%s: %s: expected an object, got %s", ld->origin, where,
				json_type_name(e));
			return -EINVAL;
		}
		int r = check_duplicates(ld, where, e);
		if (r < 0)
			return r;
		struct pvg_install_map *m = &cfg->source.install_map[cfg->source.n_install_map++];
		for (const cJSON *f = e->child; f; f = f->next) {
			char fk[96];
			snprintf(fk, sizeof(fk), "%s.%s", where, f->string);
			if (strcmp(f->string, "from") == 0) {
				r = parse_string(ld, fk, f, &m->from);
			} else if (strcmp(f->string, "to") == 0) {
				_cleanup_free_ char *to = NULL;
				r = parse_string(ld, fk, f, &to);
				if (r == 0)
					r = expand_value(ld, fk, &to);
				if (r == 0)
					m->to = pvg_path_join(ld->base_dir, to);
			} else {
				set_err(ld->err, "%s: unknown key \"%s\" (known: from, to)", ld->origin,
					fk);
				return -EINVAL;
			}
			if (r < 0)
				return r;
		}
		if (!m->from || !m->to) {
			set_err(ld->err, "%s: %s: needs both \"from\" and \"to\"", ld->origin, where);
			return -EINVAL;
		}
		i++;
	}
	return 0;
}

static int parse_require(const struct loader *ld, const char *key, const cJSON *j)
{
	struct pvg_config *cfg = ld->cfg;
	if (!cJSON_IsArray(j)) {
		set_err(ld->err, "%s: %s: expected an array of objects, got %s", ld->origin, key,
			json_type_name(j));
		return -EINVAL;
	}
	int n = cJSON_GetArraySize(j);
	cfg->markers.require = pvg_xcalloc((size_t)n + 1, sizeof(*cfg->markers.require));
	const cJSON *e;
	int i = 0;
	cJSON_ArrayForEach(e, j) {
		char where[64];
		snprintf(where, sizeof(where), "%s[%d]", key, i);
		if (!cJSON_IsObject(e) || !e->child) {
			set_err(ld->err, "%s: %s: expected a non-empty object of key/value strings",
				ld->origin, where);
			return -EINVAL;
		}
		int r = check_duplicates(ld, where, e);
		if (r < 0)
			return r;
		struct pvg_require *req = &cfg->markers.require[cfg->markers.n_require++];
		req->kv = pvg_xcalloc((size_t)cJSON_GetArraySize(e) + 1, sizeof(*req->kv));
		for (const cJSON *f = e->child; f; f = f->next) {
			if (!cJSON_IsString(f)) {
				set_err(ld->err, "%s: %s.%s: expected a string, got %s", ld->origin,
					where, f->string, json_type_name(f));
				return -EINVAL;
			}
			req->kv[req->n].key = pvg_strdup(f->string);
			req->kv[req->n].value = pvg_strdup(f->valuestring);
			req->n++;
		}
		i++;
	}
	return 0;
}

/* "grid": [x] / [x, y] / [x, y, z], each 1..2^31-1; missing dimensions are 1 */
static int parse_dims(const struct loader *ld, const char *key, const cJSON *j, uint32_t out[3])
{
	int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : 0;
	if (n < 1 || n > 3) {
		set_err(ld->err, "%s: %s: expected an array of 1 to 3 positive integers", ld->origin,
			key);
		return -EINVAL;
	}
	out[0] = out[1] = out[2] = 1;
	for (int d = 0; d < n; d++) {
		char k[160];
		snprintf(k, sizeof(k), "%s[%d]", key, d);
		long v;
		int r = parse_integer(ld, k, cJSON_GetArrayItem(j, d), 1, INT_MAX, &v);
		if (r < 0)
			return r;
		out[d] = (uint32_t)v;
	}
	return 0;
}

static int parse_witness_require(const struct loader *ld, const char *key, const cJSON *j)
{
	struct pvg_config *cfg = ld->cfg;
	if (!cJSON_IsArray(j)) {
		set_err(ld->err, "%s: %s: expected an array of objects, got %s", ld->origin, key,
			json_type_name(j));
		return -EINVAL;
	}
	int n = cJSON_GetArraySize(j);
	cfg->witness.require = pvg_xcalloc((size_t)n + 1, sizeof(*cfg->witness.require));
	const cJSON *e;
	int i = 0;
	cJSON_ArrayForEach(e, j) {
		char where[64];
		snprintf(where, sizeof(where), "%s[%d]", key, i++);
		if (!cJSON_IsObject(e)) {
			set_err(ld->err, "%s: %s: expected an object with \"kernel\"", ld->origin,
				where);
			return -EINVAL;
		}
		int r = check_duplicates(ld, where, e);
		if (r < 0)
			return r;
		struct pvg_witness_require *w = &cfg->witness.require[cfg->witness.n_require++];
		w->min_count = -1;
		for (const cJSON *f = e->child; f; f = f->next) {
			char fk[128];
			snprintf(fk, sizeof(fk), "%s.%s", where, f->string);
			if (strcmp(f->string, "kernel") == 0) {
				r = parse_string(ld, fk, f, &w->kernel);
			} else if (strcmp(f->string, "grid") == 0) {
				r = parse_dims(ld, fk, f, w->grid);
			} else if (strcmp(f->string, "block") == 0) {
				r = parse_dims(ld, fk, f, w->block);
			} else if (strcmp(f->string, "min_count") == 0) {
				r = parse_integer(ld, fk, f, 1, INT_MAX, &w->min_count);
			} else if (strcmp(f->string, "via") == 0) {
				_cleanup_free_ char *via = NULL;
				r = parse_string(ld, fk, f, &via);
				if (r == 0 && strcmp(via, "graph") == 0) {
					w->via = PVG_WITNESS_REQUIRE_GRAPH;
				} else if (r == 0 && strcmp(via, "eager") == 0) {
					w->via = PVG_WITNESS_REQUIRE_EAGER;
				} else if (r == 0) {
					_cleanup_free_ char *clean = pvg_utf8_sanitize(via, strlen(via));
					set_err(ld->err, "%s: %s: \"%s\" is not a launch kind (graph or "
						"eager)", ld->origin, fk, clean);
					r = -EINVAL;
				}
			} else {
				_cleanup_free_ char *clean = pvg_utf8_sanitize(fk, strlen(fk));
				set_err(ld->err, "%s: unknown key \"%s\" (known: kernel, grid, block, "
					"min_count, via)", ld->origin, clean);
				return -EINVAL;
			}
			if (r < 0)
				return r;
		}
		if (!w->kernel || !w->kernel[0]) {
			set_err(ld->err, "%s: %s: needs \"kernel\" (a kernel name or pattern)",
				ld->origin, where);
			return -EINVAL;
		}
	}
	return 0;
}

/* "changed_sources": {"csrc/x.cu": {"kernels": [...]}, "csrc/y.cu": {"exempt": "why"}}: each
 * changed device source's kernels named precisely, or the source exempted with a reason. */
static int parse_witness_sources(const struct loader *ld, const char *key, const cJSON *j)
{
	struct pvg_config *cfg = ld->cfg;
	if (!cJSON_IsObject(j)) {
		set_err(ld->err, "%s: %s: expected an object of source paths, got %s", ld->origin,
			key, json_type_name(j));
		return -EINVAL;
	}
	if (cfg->witness.n_sources) {
		set_err(ld->err, "%s: %s: key given twice", ld->origin, key);
		return -EINVAL;
	}
	int r = check_duplicates(ld, key, j);
	if (r < 0)
		return r;
	int n = cJSON_GetArraySize(j);
	cfg->witness.sources = pvg_xcalloc((size_t)n + 1, sizeof(*cfg->witness.sources));
	for (const cJSON *e = j->child; e; e = e->next) {
		_cleanup_free_ char *clean = pvg_utf8_sanitize(e->string, strlen(e->string));
		char where[256];
		snprintf(where, sizeof(where), "%s.\"%s\"", key, clean);
		const char *p = e->string;
		if (!p[0] || p[0] == '/' || strncmp(p, "./", 2) == 0) {
			set_err(ld->err, "%s: %s: a source is named by its path in source.repo, as "
				"\"csrc/x.cu\" (not empty, absolute or with ./)", ld->origin, where);
			return -EINVAL;
		}
		if (!cJSON_IsObject(e)) {
			set_err(ld->err, "%s: %s: expected an object with \"kernels\" or \"exempt\", "
				"got %s", ld->origin, where, json_type_name(e));
			return -EINVAL;
		}
		if ((r = check_duplicates(ld, where, e)) < 0)
			return r;
		struct pvg_witness_source *s = &cfg->witness.sources[cfg->witness.n_sources++];
		s->path = pvg_strdup(p);
		for (const cJSON *f = e->child; f; f = f->next) {
			char fk[300];
			snprintf(fk, sizeof(fk), "%s.%s", where, f->string);
			if (strcmp(f->string, "kernels") == 0) {
				r = parse_strv(ld, fk, f, &s->kernels, false);
				if (r == 0 && s->kernels.n == 0) {
					set_err(ld->err, "%s: %s: names no kernel (to require none, "
						"give \"exempt\" with the reason)", ld->origin, fk);
					r = -EINVAL;
				}
			} else if (strcmp(f->string, "exempt") == 0) {
				r = parse_string(ld, fk, f, &s->exempt);
			} else {
				_cleanup_free_ char *ck = pvg_utf8_sanitize(fk, strlen(fk));
				set_err(ld->err, "%s: unknown key \"%s\" (known: kernels, exempt)",
					ld->origin, ck);
				return -EINVAL;
			}
			if (r < 0)
				return r;
		}
		if ((s->exempt != NULL) == (s->kernels.n != 0)) {
			set_err(ld->err, "%s: %s: needs exactly one of \"kernels\" (the kernels to "
				"require) and \"exempt\" (why none is)", ld->origin, where);
			return -EINVAL;
		}
	}
	return 0;
}

static int parse_object(const struct loader *ld, const struct field *fields, const char *where,
			const cJSON *obj);

/* "artifacts": a list of {name, build, install | python_module, compiled, arch,
 * require_kernels}; names, build files and installed files are each unique, so that every
 * problem and report entry names one artifact. */
static int parse_artifacts(const struct loader *ld, const char *key, const cJSON *j)
{
	struct pvg_config *cfg = ld->cfg;
	if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) == 0) {
		set_err(ld->err, "%s: %s: expected a non-empty array of objects (name, build, "
			"install or python_module), got %s", ld->origin, key,
			cJSON_IsArray(j) ? "an empty array" : json_type_name(j));
		return -EINVAL;
	}
	if (cfg->n_artifacts) {
		set_err(ld->err, "%s: %s: key given twice", ld->origin, key);
		return -EINVAL;
	}
	int n = cJSON_GetArraySize(j);
	cfg->artifacts = pvg_xcalloc((size_t)n, sizeof(*cfg->artifacts));
	const cJSON *e;
	int i = 0;
	cJSON_ArrayForEach(e, j) {
		char where[64];
		snprintf(where, sizeof(where), "%s[%d]", key, i++);
		struct pvg_artifact *a = &cfg->artifacts[cfg->n_artifacts++];
		struct loader sub = *ld;
		sub.base = a;
		int r = parse_object(&sub, artifact_fields, where, e);
		if (r < 0)
			return r;
		if (!a->name || !a->build) {
			set_err(ld->err, "%s: %s: needs \"%s\" (%s)", ld->origin, where,
				!a->name ? "name" : "build",
				!a->name ? "what the report and its problems call it"
					 : "the file the build produced");
			return -EINVAL;
		}
		if (a->install && a->python_module) {
			set_err(ld->err, "%s: %s: both \"install\" and \"python_module\" name the "
				"installed file; keep one", ld->origin, where);
			return -EINVAL;
		}
		for (size_t k = 0; k + 1 < cfg->n_artifacts; k++) {
			const struct pvg_artifact *o = &cfg->artifacts[k];
			const char *what = strcmp(o->name, a->name) == 0 ? "name"
					   : strcmp(o->build, a->build) == 0 ? "build"
					   : a->install && o->install && strcmp(o->install, a->install) == 0
						   ? "install"
					   : a->python_module && o->python_module &&
							   strcmp(o->python_module, a->python_module) == 0
						   ? "python_module"
						   : NULL;
			if (what) {
				_cleanup_free_ char *clean = pvg_utf8_sanitize(a->name, strlen(a->name));
				set_err(ld->err, "%s: %s.%s: the same as %s[%zu]'s (\"%s\"); each entry "
					"is another artifact", ld->origin, where, what, key, k, clean);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int parse_field(const struct loader *ld, const struct field *f, const char *key,
		       const cJSON *j)
{
	void *dst = (char *)(ld->base ? ld->base : (void *)ld->cfg) + f->off;
	int r;
	switch (f->kind) {
	case F_STRING:
		r = parse_string(ld, key, j, (char **)dst);
		return r < 0 || !f->expand ? r : expand_value(ld, key, (char **)dst);
	case F_PATH:
	case F_LOG: {
		_cleanup_free_ char *s = NULL;
		r = parse_string(ld, key, j, &s);
		if (r == 0 && f->expand)
			r = expand_value(ld, key, &s);
		if (r < 0)
			return r;
		free(*(char **)dst);
		*(char **)dst = f->kind == F_LOG && strcmp(s, PVG_LOG_CONTAINER) == 0
					? TAKE_PTR(s)
					: pvg_path_join(ld->base_dir, s);
		return 0;
	}
	case F_PROGRAM: {
		_cleanup_free_ char *s = NULL;
		r = parse_string(ld, key, j, &s);
		if (r == 0 && f->expand)
			r = expand_value(ld, key, &s);
		if (r < 0)
			return r;
		free(*(char **)dst);
		*(char **)dst = strchr(s, '/') ? pvg_path_join(ld->base_dir, s) : TAKE_PTR(s);
		return 0;
	}
	case F_ARCH:
		r = parse_string(ld, key, j, (char **)dst);
		if (r < 0)
			return r;
		{
			_cleanup_free_ char *why = pvg_target_id_problem(*(char **)dst);
			if (why) {
				_cleanup_free_ char *clean = pvg_utf8_sanitize(why, strlen(why));
				set_err(ld->err, "%s: %s: %s", ld->origin, key, clean);
				return -EINVAL;
			}
		}
		return 0;
	case F_BOOL:
		if (!cJSON_IsBool(j)) {
			set_err(ld->err, "%s: %s: expected true or false, got %s", ld->origin, key,
				json_type_name(j));
			return -EINVAL;
		}
		*(bool *)dst = cJSON_IsTrue(j);
		return 0;
	case F_COUNT:
		return parse_integer(ld, key, j, 0, INT_MAX, (long *)dst);
	case F_SIZE:
		return parse_size(ld, key, j, (uint64_t *)dst);
	case F_PID:
		return parse_integer(ld, key, j, 1, INT_MAX, (long *)dst);
	case F_PORT:
		return parse_integer(ld, key, j, 1, 65535, (long *)dst);
	case F_STRV:
		return parse_strv(ld, key, j, (struct pvg_strv *)dst, f->expand);
	case F_PATHV: {
		struct pvg_strv *v = dst;
		r = parse_strv(ld, key, j, v, f->expand);
		if (r < 0)
			return r;
		for (size_t i = 0; i < v->n; i++) {
			char *abs = pvg_path_join(ld->base_dir, v->v[i]);
			free(v->v[i]);
			v->v[i] = abs;
		}
		return 0;
	}
	case F_INSTALL_MAP:
		return parse_install_map(ld, key, j);
	case F_REQUIRE:
		return parse_require(ld, key, j);
	case F_SCHEMA:
		if (!cJSON_IsString(j)) {
			set_err(ld->err, "%s: %s: expected a string (the schema's URI or path), got %s",
				ld->origin, key, json_type_name(j));
			return -EINVAL;
		}
		return 0;
	case F_WITNESS_REQUIRE:
		return parse_witness_require(ld, key, j);
	case F_ARTIFACTS:
		return parse_artifacts(ld, key, j);
	case F_WITNESS_SOURCES:
		return parse_witness_sources(ld, key, j);
	case F_WITNESS_API:
		r = parse_string(ld, key, j, (char **)dst);
		if (r < 0)
			return r;
		if (strcmp(*(char **)dst, "cuda") != 0 && strcmp(*(char **)dst, "hsa") != 0) {
			set_err(ld->err, "%s: %s: \"%s\" is not a witness API (cuda or hsa)",
				ld->origin, key, *(char **)dst);
			return -EINVAL;
		}
		return 0;
	case F_SECTION:
		break;
	}
	return -EINVAL;
}

static int parse_object(const struct loader *ld, const struct field *fields, const char *where,
			const cJSON *obj)
{
	if (!cJSON_IsObject(obj)) {
		set_err(ld->err, "%s: %s: expected an object, got %s", ld->origin,
			where[0] ? where : "top level", json_type_name(obj));
		return -EINVAL;
	}
	int r = check_duplicates(ld, where, obj);
	if (r < 0)
		return r;
	for (const cJSON *j = obj->child; j; j = j->next) {
		char key[128];
		snprintf(key, sizeof(key), "%s%s%s", where, where[0] ? "." : "", j->string);
		const struct field *f = fields;
		while (f->key && strcmp(f->key, j->string) != 0)
			f++;
		if (!f->key) {
			char known[256], hint[160];
			known_keys(fields, known, sizeof(known));
			suggest_key(fields, j->string, hint, sizeof(hint));
			_cleanup_free_ char *clean = pvg_utf8_sanitize(key, strlen(key));
			set_err(ld->err, "%s: unknown key \"%s\"%s (known here: %s)", ld->origin, clean,
				hint, known);
			return -EINVAL;
		}
		if (f->kind == F_SECTION)
			r = parse_object(ld, f->sub, key, j);
		else
			r = parse_field(ld, f, key, j);
		if (r < 0)
			return r;
	}
	return 0;
}

/* "ORIGIN: PATH: what" or "ORIGIN: unknown key "PATH" ..." becomes "ORIGIN:LINE:COL: ...". */
static void add_position(struct pvg_error *err, const char *origin, const char *text, size_t len)
{
	if (!err)
		return;
	size_t ol = strlen(origin);
	char *m = err->message;
	if (strncmp(m, origin, ol) != 0 || strncmp(m + ol, ": ", 2) != 0)
		return;
	const char *rest = m + ol + 2;
	char path[256];
	bool at_value = true;
	if (strncmp(rest, "unknown key \"", 13) == 0) {
		const char *q = strchr(rest + 13, '"');
		if (!q || (size_t)(q - rest - 13) >= sizeof(path))
			return;
		snprintf(path, sizeof(path), "%.*s", (int)(q - rest - 13), rest + 13);
		at_value = false;
	} else {
		const char *q = strstr(rest, ": ");
		if (!q || (size_t)(q - rest) >= sizeof(path))
			return;
		snprintf(path, sizeof(path), "%.*s", (int)(q - rest), rest);
		at_value = !strstr(q, "key given twice");
	}
	if (!path[0] || strcmp(path, "top level") == 0)
		return;
	size_t off;
	if (!pvg_jsonc_find(text, len, path, at_value, &off))
		return;
	int line, col;
	pvg_jsonc_line_col(text, off, &line, &col);
	char out[sizeof(err->message)];
	snprintf(out, sizeof(out), "%s:%d:%d: %s", origin, line, col, rest);
	memcpy(err->message, out, sizeof(out));
}

/* markers.pid_pattern / time_pattern / time_format compile as gate 7 will use them; the
 * message names the key, so that add_position can point at it. */
static int check_line_format(const struct pvg_config *cfg, const char *origin,
			     struct pvg_error *err)
{
	struct pvg_line_format f;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	if (pvg_line_format_compile(&f, cfg->markers.pid_pattern, cfg->markers.time_pattern,
				    cfg->markers.time_format, &why) == 0) {
		pvg_line_format_clear(&f);
		return 0;
	}
	const char *key = strncmp(why.text, "pid_pattern", 11) == 0 ? "pid_pattern"
			  : strncmp(why.text, "time_format", 11) == 0 ? "time_format"
								      : "time_pattern";
	_cleanup_free_ char *clean = pvg_utf8_sanitize(why.text, strlen(why.text));
	set_err(err, "%s: markers.%s: %s", origin, key, clean);
	return -EINVAL;
}

/* "artifacts" and the single form name artifacts in two ways; both at once would leave one
 * of them unchecked, so that is an error naming the key to move. */
static const char *single_form_key(const struct pvg_config *cfg)
{
	return cfg->build.artifact	       ? "build.artifact"
	       : cfg->install.artifact	       ? "install.artifact"
	       : cfg->install.python_module    ? "install.python_module"
	       : cfg->code_object.require_kernels.n ? "code_object.require_kernels"
						    : NULL;
}

/* build.hip_sources are globs of repository paths, as source.compiled: a path outside the
 * repository could never match a changed file, and a CUDA arch has no hipify to skip. */
static int check_hip_sources(const struct pvg_config *cfg, const char *origin,
			     struct pvg_error *err)
{
	const struct pvg_strv *g = &cfg->build.hip_sources;
	for (size_t i = 0; i < g->n; i++) {
		const char *p = g->v[i];
		bool up = strcmp(p, "..") == 0 || strncmp(p, "../", 3) == 0 || strstr(p, "/../") ||
			  (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0);
		if (p[0] == '/' || up) {
			_cleanup_free_ char *clean = pvg_utf8_sanitize(p, strlen(p));
			set_err(err, "%s: build.hip_sources[%zu]: \"%s\" is not a path inside the "
				"repository; give globs relative to source.repo (\"csrc/native/**\")",
				origin, i, clean);
			return -EINVAL;
		}
	}
	if (g->n && cfg->arch && pvg_arch_is_cuda(cfg->arch)) {
		set_err(err, "%s: build.hip_sources: arch is %s, a CUDA build, which hipifies "
			"nothing; hip_sources is for HIP builds (remove it)", origin, cfg->arch);
		return -EINVAL;
	}
	return 0;
}

static int check_artifact_forms(const struct pvg_config *cfg, const char *origin,
				struct pvg_error *err)
{
	const char *k = cfg->n_artifacts ? single_form_key(cfg) : NULL;
	if (!k)
		return 0;
	set_err(err, "%s: %s: the config lists \"artifacts\"; move %s into the artifacts[] entry "
		"it belongs to (build, install, python_module, require_kernels)", origin, k, k);
	return -EINVAL;
}

void pvg_artifact_default_name(const char *path, char *out, size_t size)
{
	const char *b = path ? pvg_basename(path) : "artifact";
	size_t n = strcspn(b, ".");
	snprintf(out, size, "%.*s", (int)(n ? n : strlen(b)), b);
}

struct pvg_artifact *pvg_config_artifacts(const struct pvg_config *cfg, size_t *n)
{
	if (cfg->n_artifacts) {
		struct pvg_artifact *v = pvg_xcalloc(cfg->n_artifacts, sizeof(*v));
		memcpy(v, cfg->artifacts, cfg->n_artifacts * sizeof(*v));
		*n = cfg->n_artifacts;
		return v;
	}
	if (!single_form_key(cfg)) {
		*n = 0;
		return NULL;
	}
	struct pvg_artifact *v = pvg_xcalloc(1, sizeof(*v));
	v->build = cfg->build.artifact;
	v->install = cfg->install.artifact;
	v->python_module = v->install ? NULL : cfg->install.python_module;
	v->require_kernels = cfg->code_object.require_kernels;
	*n = 1;
	return v;
}

const char *pvg_artifact_arch(const struct pvg_config *cfg, const struct pvg_artifact *a)
{
	return a && a->arch ? a->arch : cfg->arch;
}

int pvg_config_parse(struct pvg_config *cfg, const char *text, size_t len, const char *origin,
		     struct pvg_error *err)
{
	if (memchr(text, '\0', len)) {
		set_err(err, "%s: holds a NUL byte; a config is JSON text", origin);
		return -EINVAL;
	}
	_cleanup_free_ char *s = pvg_xcalloc(len + 1, 1);
	memcpy(s, text, len);
	size_t bad = 0;
	int line, col;
	if (pvg_jsonc_strip_comments(s, len, &bad) < 0) {
		pvg_jsonc_line_col(s, bad, &line, &col);
		set_err(err, "%s:%d:%d: comment is never closed (missing \"*/\")", origin, line, col);
		return -EINVAL;
	}
	const char *end = NULL;
	_cleanup_json_ cJSON *root = cJSON_ParseWithOpts(s, &end, false);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		size_t off = at && at >= s && at <= s + len ? (size_t)(at - s) : 0;
		pvg_jsonc_line_col(s, off, &line, &col);
		_cleanup_free_ char *near = pvg_utf8_sanitize(s + off, strnlen(s + off, 24));
		for (char *p = near; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		const char *q = s + off;
		while (*q && isspace((unsigned char)*q))
			q++;
		if (!*q)
			set_err(err, "%s:%d:%d: malformed JSON: the text ends early (a missing \"}\", "
				"\"]\" or value?)", origin, line, col);
		else
			set_err(err, "%s:%d:%d: malformed JSON near \"%s\"", origin, line, col, near);
		return -EINVAL;
	}
	while (end && *end && isspace((unsigned char)*end))
		end++;
	if (end && *end) {
		pvg_jsonc_line_col(s, (size_t)(end - s), &line, &col);
		set_err(err, "%s:%d:%d: unexpected content after the JSON object", origin, line, col);
		return -EINVAL;
	}
	struct loader ld = { .cfg = cfg, .origin = origin, .base_dir = cfg->dir, .err = err };
	loader_placeholders(&ld);
	int r = parse_object(&ld, top_fields, "", root);
	if (r == 0)
		r = check_line_format(cfg, origin, err);
	if (r == 0)
		r = check_artifact_forms(cfg, origin, err);
	if (r == 0)
		r = check_hip_sources(cfg, origin, err);
	if (r < 0)
		add_position(err, origin, s, len);
	return r;
}

int pvg_config_load(const char *path, struct pvg_config **out, struct pvg_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = pvg_read_file(path, 4u << 20, &text, &len);
	if (r < 0) {
		if (r == -EFBIG)
			set_err(err, "%s: larger than 4 MiB; not a provgate config", path);
		else if (r == -EINVAL)
			set_err(err, "%s: not a regular file", path);
		else
			set_err(err, "%s: cannot read config: %s", path, strerror(-r));
		return r;
	}
	struct pvg_config *cfg = pvg_config_new();
	cfg->path = pvg_path_absolute(path);
	char *slash = strrchr(cfg->path, '/');
	cfg->dir = slash == cfg->path ? pvg_strdup("/")
				      : pvg_asprintf("%.*s", (int)(slash - cfg->path), cfg->path);
	pvg_sha256_hex(text, len, cfg->sha256);
	r = pvg_config_parse(cfg, text, len, path, err);
	if (r < 0) {
		pvg_config_free(cfg);
		return r;
	}
	*out = cfg;
	return 0;
}

static const struct field *find_field(const char *dotted, const struct field *fields)
{
	const char *dot = strchr(dotted, '.');
	size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
	for (const struct field *f = fields; f->key; f++) {
		if (strlen(f->key) != n || strncmp(f->key, dotted, n) != 0)
			continue;
		if (f->kind == F_SECTION)
			return dot ? find_field(dot + 1, f->sub) : NULL;
		return dot ? NULL : f;
	}
	return NULL;
}

int pvg_config_override(struct pvg_config *cfg, const char *key, const char *value,
			struct pvg_error *err)
{
	const struct field *f = find_field(key, top_fields);
	if (!f) {
		set_err(err, "no config key \"%s\" to override", key);
		return -EINVAL;
	}
	if (cfg->n_artifacts && (strcmp(key, "build.artifact") == 0 ||
				 strcmp(key, "install.artifact") == 0 ||
				 strcmp(key, "install.python_module") == 0)) {
		set_err(err, "command line: %s: the config lists \"artifacts\"; a flag cannot say "
			"which of them it means: edit the entry in the config", key);
		return -EINVAL;
	}
	char origin[160];
	snprintf(origin, sizeof(origin), "command line");
	_cleanup_free_ char *cwd = pvg_path_absolute(".");
	struct loader ld = { .cfg = cfg, .origin = origin, .base_dir = cwd, .err = err };
	loader_placeholders(&ld);
	_cleanup_json_ cJSON *j = NULL;
	switch (f->kind) {
	case F_COUNT:
	case F_PID:
	case F_PORT: {
		char *end;
		errno = 0;
		long v = strtol(value, &end, 10);
		if (!value[0] || *end || errno) {
			set_err(err, "%s: %s: \"%s\" is not an integer", origin, key, value);
			return -EINVAL;
		}
		j = cJSON_CreateNumber((double)v);
		break;
	}
	case F_BOOL:
		if (strcmp(value, "true") && strcmp(value, "false")) {
			set_err(err, "%s: %s: expected true or false, got \"%s\"", origin, key, value);
			return -EINVAL;
		}
		j = cJSON_CreateBool(strcmp(value, "true") == 0);
		break;
	case F_STRV:
	case F_PATHV: {
		/* comma-separated on the command line */
		j = cJSON_CreateArray();
		_cleanup_free_ char *copy = pvg_strdup(value);
		char *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
			cJSON_AddItemToArray(j, cJSON_CreateString(t));
		break;
	}
	case F_STRING:
	case F_PATH:
	case F_LOG:
	case F_PROGRAM:
	case F_ARCH:
	case F_SIZE: /* "17179869184" or "16GiB": parse_size reads both */
		j = cJSON_CreateString(value);
		break;
	default:
		set_err(err, "%s: %s cannot be set from the command line", origin, key);
		return -EINVAL;
	}
	return parse_field(&ld, f, key, j);
}
