/* SPDX-License-Identifier: MIT */
/*
 * provgate compare: the fields of two reports' environments (plus gate 7's facts and exec's
 * benchmark command) flattened to "name = value" and merged by name. A field absent on one
 * side is a difference like any other; a field that could not be read on a side is never
 * counted as equal.
 */
#include <ctype.h>
#include <fnmatch.h>

#include "core/compare.h"

struct field_list {
	struct pvg_compare_field *f; /* one side's name, value, unreadable */
	size_t n;
};

static void add(struct field_list *l, const char *name, char *value, bool unreadable, bool weak)
{
	l->f = pvg_xrealloc(l->f, l->n + 1, sizeof(*l->f));
	struct pvg_compare_field *f = &l->f[l->n++];
	memset(f, 0, sizeof(*f));
	f->name = pvg_strdup(name);
	f->baseline = value; /* one side only, for now */
	f->baseline_unreadable = unreadable;
	f->weak = weak;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}


static char *dup_or_null(const char *s)
{
	return s ? pvg_strdup(s) : NULL;
}

/* An array of strings joined by sep (args with spaces quoted when quote); NULL when not an
 * array. */
static char *join(const cJSON *a, const char *sep, bool quote)
{
	if (!cJSON_IsArray(a))
		return NULL;
	size_t cap = 64, len = 0;
	char *out = pvg_xcalloc(cap, 1);
	const cJSON *e;
	cJSON_ArrayForEach(e, a) {
		const char *s = cJSON_IsString(e) ? e->valuestring : "?";
		bool q = quote && (!s[0] || strpbrk(s, " \t'\"\\"));
		size_t need = len + strlen(sep) + strlen(s) + 3;
		if (need >= cap) {
			cap = need * 2;
			out = pvg_xrealloc(out, cap, 1);
		}
		len += (size_t)snprintf(out + len, cap - len, "%s%s%s%s", len ? sep : "",
					q ? "'" : "", s, q ? "'" : "");
	}
	return out;
}

static bool errored(const cJSON *errors, const char *field)
{
	return get(errors, field) != NULL;
}

static void add_fact(struct field_list *l, const char *name, const cJSON *obj, const char *key,
		     const cJSON *errors)
{
	bool bad = errored(errors, name);
	add(l, name, bad ? NULL : dup_or_null(pvg_json_get_str(obj, key)), bad, false);
}

/* Container ids (64 hex digits) and pod UUIDs change with every container instance; the
 * placement they name does not. The result is never longer than s ("<id>" replaces 32 or
 * more characters). */
static char *cgroup_normalized(const char *s)
{
	size_t n = strlen(s);
	char *out = pvg_xcalloc(n + 1, 1);
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t k = i;
		while (k < n && (isxdigit((unsigned char)s[k]) || s[k] == '-' || s[k] == '_'))
			k++;
		size_t hex = 0;
		for (size_t j = i; j < k; j++)
			hex += isxdigit((unsigned char)s[j]) != 0;
		if (hex >= 32) {
			memcpy(out + o, "<id>", 4);
			o += 4;
			i = k;
		} else {
			out[o++] = s[i++];
		}
	}
	out[o] = '\0';
	return out;
}

/* "block size = 832" -> ("block size", "832"); a fact without '=' or ':' is its own name. */
static void split_fact(const char *text, char **name, char **value)
{
	const char *sep = strpbrk(text, "=:");
	if (!sep) {
		*name = pvg_strdup(text);
		*value = pvg_strdup("present");
		return;
	}
	const char *ne = sep;
	while (ne > text && isspace((unsigned char)ne[-1]))
		ne--;
	const char *v = sep + 1;
	while (*v && isspace((unsigned char)*v))
		v++;
	*name = pvg_asprintf("%.*s", (int)(ne - text), text);
	*value = pvg_strdup(v);
	size_t vl = strlen(*value);
	while (vl && isspace((unsigned char)(*value)[vl - 1]))
		(*value)[--vl] = '\0';
}

struct arg {
	char *flag, *value;
};

static int cmp_arg(const void *a, const void *b)
{
	const struct arg *x = a, *y = b;
	int c = strcmp(x->flag, y->flag);
	return c ? c : strcmp(x->value, y->value);
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *quoted(const char *s)
{
	return !s[0] || strpbrk(s, " \t'\"\\") ? pvg_asprintf("'%s'", s) : pvg_strdup(s);
}

/* The service tree's command lines as fields: each flag its own ("service.args.--block-size"
 * = "832"; a flag without a value is "set"), and what is left of each command line, the
 * program and its positional arguments, as one sorted list ("service.commands"). A flag
 * given different values in two processes holds both. */
static void tree_fields(struct field_list *l, const cJSON *tree)
{
	struct arg *args = NULL;
	size_t n_args = 0;
	struct pvg_strv cmds = { 0 };
	const cJSON *p;
	cJSON_ArrayForEach(p, tree) {
		const cJSON *argv = get(p, "cmdline");
		size_t n = (size_t)cJSON_GetArraySize(argv);
		char *cmd = pvg_strdup("");
		for (size_t i = 0; i < n; i++) {
			const cJSON *a = cJSON_GetArrayItem(argv, (int)i);
			const char *s = cJSON_IsString(a) ? a->valuestring : "";
			if (s[0] != '-' || !s[1] || i == 0) {
				_cleanup_free_ char *q = quoted(s);
				char *next = pvg_asprintf("%s%s%s", cmd, cmd[0] ? " " : "", q);
				free(cmd);
				cmd = next;
				continue;
			}
			const char *eq = strchr(s, '=');
			const cJSON *nx = i + 1 < n ? cJSON_GetArrayItem(argv, (int)i + 1) : NULL;
			const char *nv = cJSON_IsString(nx) ? nx->valuestring : NULL;
			args = pvg_xrealloc(args, n_args + 1, sizeof(*args));
			struct arg *g = &args[n_args++];
			if (eq) {
				g->flag = pvg_asprintf("%.*s", (int)(eq - s), s);
				g->value = pvg_strdup(eq + 1);
			} else if (nv && nv[0] != '-') {
				g->flag = pvg_strdup(s);
				g->value = pvg_strdup(nv);
				i++;
			} else {
				g->flag = pvg_strdup(s);
				g->value = pvg_strdup("set");
			}
		}
		cmds.v = pvg_xrealloc(cmds.v, cmds.n + 1, sizeof(char *));
		cmds.v[cmds.n++] = cmd;
	}
	if (cmds.n > 1)
		qsort(cmds.v, cmds.n, sizeof(char *), cmp_cstr);
	size_t len = 1;
	for (size_t i = 0; i < cmds.n; i++)
		len += strlen(cmds.v[i]) + 3;
	char *all = pvg_xcalloc(len, 1);
	for (size_t i = 0; i < cmds.n; i++) {
		if (i)
			strcat(all, " | ");
		strcat(all, cmds.v[i]);
	}
	add(l, "service.commands", all, false, false);
	pvg_strv_clear(&cmds);
	if (n_args > 1)
		qsort(args, n_args, sizeof(*args), cmp_arg);
	for (size_t i = 0; i < n_args;) {
		size_t k = i;
		char *value = pvg_strdup(args[i].value);
		for (k = i + 1; k < n_args && strcmp(args[k].flag, args[i].flag) == 0; k++) {
			if (strcmp(args[k].value, args[k - 1].value) == 0)
				continue;
			char *next = pvg_asprintf("%s, %s", value, args[k].value);
			free(value);
			value = next;
		}
		_cleanup_free_ char *name = pvg_asprintf("service.args.%s", args[i].flag);
		add(l, name, value, false, false);
		i = k;
	}
	for (size_t i = 0; i < n_args; i++) {
		free(args[i].flag);
		free(args[i].value);
	}
	free(args);
}

static void service_fields(struct field_list *l, const cJSON *svc, const cJSON *errors)
{
	bool bad = errored(errors, "service.tree");
	if (bad)
		add(l, "service.commands", NULL, true, false);
	else
		tree_fields(l, get(svc, "tree"));

	const cJSON *env = get(svc, "env");
	if (errored(errors, "service.env")) {
		add(l, "service.env", NULL, true, false);
	} else {
		const cJSON *e;
		cJSON_ArrayForEach(e, env) {
			_cleanup_free_ char *name = pvg_asprintf("service.env.%s", e->string);
			add(l, name, dup_or_null(cJSON_IsString(e) ? e->valuestring : NULL), false, false);
		}
	}
	const cJSON *ns = get(svc, "namespaces");
	const cJSON *n;
	cJSON_ArrayForEach(n, ns) {
		_cleanup_free_ char *name = pvg_asprintf("service.namespaces.%s", n->string);
		if (!cJSON_IsObject(n)) {
			add(l, name, NULL, true, false);
			continue;
		}
		/* the namespace's identity changes with each container; whether the service has
		 * its own or shares provgate's does not */
		add(l, name, pvg_strdup(cJSON_IsTrue(get(n, "shared_with_provgate")) ? "provgate's"
										      : "its own"),
		    false, false);
	}
	bad = errored(errors, "service.cgroup");
	_cleanup_free_ char *cg = join(get(svc, "cgroup"), " ", false);
	add(l, "service.cgroup", bad || !cg ? NULL : cgroup_normalized(cg), bad, false);
	bad = errored(errors, "service.devices");
	add(l, "service.devices", bad ? NULL : join(get(svc, "devices"), ", ", false), bad, false);
	char *prof = join(get(svc, "profilers"), "; ", false);
	if (prof && !prof[0]) {
		free(prof);
		prof = pvg_strdup("none");
	}
	add(l, "service.profilers", prof, false, false);

	if (errored(errors, "service.shared_objects")) {
		add(l, "service.shared_objects", NULL, true, false);
		return;
	}
	const cJSON *o;
	cJSON_ArrayForEach(o, get(svc, "shared_objects")) {
		const char *path = pvg_json_get_str(o, "path");
		if (!path)
			continue;
		_cleanup_free_ char *name = pvg_asprintf("service.shared_objects.%s", path);
		const char *id = pvg_json_get_str(o, "build_id");
		const char *err = pvg_json_get_str(o, "error");
		const char *size = pvg_json_get_str(o, "size");
		if (id)
			add(l, name, pvg_strdup(id), false, false);
		else if (err && strcmp(err, "no build-id note") == 0)
			add(l, name, pvg_asprintf("no build-id, size %s", size ? size : "?"), false,
			    true);
		else
			add(l, name, NULL, true, false);
	}
}

static int cmp_field(const void *a, const void *b)
{
	return strcmp(((const struct pvg_compare_field *)a)->name,
		      ((const struct pvg_compare_field *)b)->name);
}

/* One report's fields, sorted by name (a name met twice keeps its first value). */
static void report_fields(const cJSON *rep, struct field_list *l)
{
	const cJSON *env = get(rep, "environment");
	const cJSON *errors = get(env, "errors");
	const cJSON *host = get(env, "host");
	add_fact(l, "host.machine_id", host, "machine_id", errors);
	add_fact(l, "host.boot_id", host, "boot_id", errors);
	add_fact(l, "host.hostname", host, "hostname", errors);
	add_fact(l, "host.kernel", host, "kernel", errors);
	const cJSON *gpu = get(env, "gpu");
	const cJSON *drv = get(gpu, "driver");
	const cJSON *amd = get(drv, "amdgpu");
	bool bad = errored(errors, "gpu.driver.amdgpu");
	const char *av = pvg_json_get_str(amd, "version");
	add(l, "gpu.driver.amdgpu",
	    bad ? NULL
	    : av ? pvg_strdup(av)
	    : cJSON_IsTrue(get(amd, "loaded")) ? pvg_strdup("loaded, no version file")
					       : NULL,
	    bad, false);
	add_fact(l, "gpu.driver.nvidia", drv, "nvidia", errors);
	bad = errored(errors, "gpu.devices");
	add(l, "gpu.devices", bad ? NULL : join(get(gpu, "devices"), ", ", false), bad, false);
	/* the container's engine and image (the layers of its root file system): a new
	 * container of the same image is the same; without the layers, its id */
	const cJSON *ct = get(env, "container");
	const char *layers = pvg_json_get_str(get(ct, "rootfs"), "layers_sha256");
	const char *engine = pvg_json_get_str(ct, "engine");
	add(l, "container",
	    !ct || cJSON_IsNull(ct) ? NULL
	    : layers ? pvg_asprintf("%s, image layers sha256:%s", engine ? engine : "?", layers)
		     : cJSON_PrintUnformatted(ct),
	    false, false);
	const cJSON *svc = get(env, "service");
	if (cJSON_IsObject(svc))
		service_fields(l, svc, errors);
	const cJSON *in;
	cJSON_ArrayForEach(in, get(get(env, "benchmark"), "inputs")) {
		const char *path = pvg_json_get_str(in, "path");
		if (!path)
			continue;
		_cleanup_free_ char *name = pvg_asprintf("benchmark.inputs.%s", path);
		const char *sha = pvg_json_get_str(in, "sha256");
		add(l, name, dup_or_null(sha), !sha, false);
	}
	/* the artifacts each side's chain covers (names and installed files): a side that
	 * leaves an extension out proved nothing about it. Each one's bytes are compared as
	 * service.shared_objects (its build-id), since the service maps every artifact. */
	const cJSON *arts = get(get(rep, "chain"), "artifacts");
	if (cJSON_IsArray(arts)) {
		char *list = pvg_strdup("");
		const cJSON *a;
		cJSON_ArrayForEach(a, arts) {
			const char *name = pvg_json_get_str(a, "name");
			const char *ip = pvg_json_get_str(get(a, "installed"), "path");
			char *j = pvg_asprintf("%s%s%s (%s)", list, list[0] ? ", " : "",
					       name ? name : "?", ip ? ip : "not hashed");
			free(list);
			list = j;
		}
		add(l, "chain.artifacts", list, false, false);
	}
	const cJSON *exec = get(rep, "exec");
	if (exec)
		add(l, "benchmark.command", join(get(exec, "command"), " ", true), false, false);
	/* gate 7's facts, as the config declared them and the live service's log confirmed */
	const cJSON *gates = get(rep, "gates");
	const cJSON *g;
	cJSON_ArrayForEach(g, gates) {
		const cJSON *id = get(g, "id");
		if (!cJSON_IsNumber(id) || id->valueint != 7)
			continue;
		const cJSON *f;
		cJSON_ArrayForEach(f, get(get(g, "evidence"), "facts")) {
			const char *text = pvg_json_get_str(f, "fact");
			if (!text)
				continue;
			_cleanup_free_ char *fname = NULL, *value = NULL;
			split_fact(text, &fname, &value);
			_cleanup_free_ char *name = pvg_asprintf("fact.%s", fname);
			bool live = cJSON_IsTrue(get(f, "live"));
			add(l, name, live ? TAKE_PTR(value) : NULL, !live, false);
		}
	}
	if (l->n > 1)
		qsort(l->f, l->n, sizeof(*l->f), cmp_field);
	size_t o = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (o && strcmp(l->f[o - 1].name, l->f[i].name) == 0) {
			free(l->f[i].name);
			free(l->f[i].baseline);
			continue;
		}
		l->f[o++] = l->f[i];
	}
	l->n = o;
}

static void problem(struct pvg_compare *c, const char *code, const char *hint, const char *fmt,
		    ...) PVG_PRINTF(4, 5);
static void problem(struct pvg_compare *c, const char *code, const char *hint, const char *fmt,
		    ...)
{
	c->problems = pvg_xrealloc(c->problems, c->n_problems + 1, sizeof(*c->problems));
	struct pvg_problem *p = &c->problems[c->n_problems++];
	va_list ap;
	va_start(ap, fmt);
	p->message = pvg_vasprintf(fmt, ap);
	va_end(ap);
	p->code = pvg_strdup(code);
	p->hint = hint ? pvg_strdup(hint) : NULL;
}

static const struct {
	const char *prefix;
	const char *code;
	const char *hint;
} field_codes[] = {
	{ "host.", "compare.host-differs",
	  "run both sides on the same machine and boot, or declare the difference" },
	{ "gpu.driver.", "compare.driver-differs",
	  "the GPU driver changed between the runs (a reboot or an upgrade): rerun the baseline" },
	{ "gpu.devices", "compare.gpu-differs", "run both sides on the same GPUs" },
	{ "container", "compare.container-differs",
	  "run both sides from the same container image (a new container of it is fine), or "
	  "declare the image that is the change" },
	{ "service.commands", "compare.cmdline-differs",
	  "start both services with the same command line, or declare the difference" },
	{ "service.args.", "compare.cmdline-differs",
	  "start both services with the same command line (a flag such as "
	  "--enable-prefix-caching changes what is measured), or declare it" },
	{ "service.env", "compare.env-differs",
	  "start both services with the same kernel-steering variables, or declare the one that "
	  "is the change" },
	{ "service.namespaces.", "compare.namespace-differs",
	  "run both services the same way (both in a container, or both on the host)" },
	{ "service.cgroup", "compare.cgroup-differs",
	  "run both services under the same unit or container settings" },
	{ "service.devices", "compare.devices-differs",
	  "both services must hold the same GPU devices" },
	{ "service.profilers", "compare.profiler-differs",
	  "a profiler or tracer is attached on one side: its overhead is in that side's number" },
	{ "service.shared_objects", "compare.shared-object-differs",
	  "a library changed between the runs (an upgrade, another build): rerun the baseline, or "
	  "declare the library that is the change" },
	{ "benchmark.inputs.", "compare.input-differs",
	  "both sides must read the same dataset and prompt files" },
	{ "benchmark.command", "compare.command-differs",
	  "run the same benchmark command on both sides" },
	{ "fact.", "compare.fact-differs", "declare the fact that is the change (--differ)" },
	{ "chain.artifacts", "compare.artifacts-differ",
	  "certify both sides with the same artifacts (names and installed files): one side's "
	  "certificate says nothing about an extension it left out" },
};

const char *pvg_compare_field_code(const char *field)
{
	for (size_t i = 0; i < ARRAY_SIZE(field_codes); i++)
		if (strncmp(field, field_codes[i].prefix, strlen(field_codes[i].prefix)) == 0)
			return field_codes[i].code;
	return "compare.field-differs";
}

static const char *field_hint(const char *field)
{
	for (size_t i = 0; i < ARRAY_SIZE(field_codes); i++)
		if (strncmp(field, field_codes[i].prefix, strlen(field_codes[i].prefix)) == 0)
			return field_codes[i].hint;
	return NULL;
}

const char *pvg_field_verdict_name(enum pvg_field_verdict v)
{
	switch (v) {
	case PVG_FIELD_EQUAL:
		return "equal";
	case PVG_FIELD_EQUAL_WEAK:
		return "equal-by-size";
	case PVG_FIELD_DECLARED:
		return "declared";
	case PVG_FIELD_DIFFERS:
		return "differs";
	case PVG_FIELD_DECLARED_EQUAL:
		return "declared-equal";
	case PVG_FIELD_UNREADABLE:
		return "unreadable";
	}
	return "?";
}

static bool is_pattern(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static bool declared_match(const char *decl, const char *field)
{
	return is_pattern(decl) ? fnmatch(decl, field, 0) == 0 : strcmp(decl, field) == 0;
}

/* A report is certified when its own verdict says so and every gate passed in phase live;
 * an exec report also needs its command finished with status 0 and the after-check passed. */
static bool judge_side(struct pvg_compare *c, const char *role,
		       const struct pvg_compare_input *in, struct pvg_compare_side *side)
{
	const cJSON *rep = in->report;
	const char *why = in->why, *path = in->path;
	side->path = pvg_strdup(path);
	if (in->sha256)
		snprintf(side->sha256, sizeof(side->sha256), "%s", in->sha256);
	side->pid = -1;
	if (!rep) {
		problem(c, "compare.bad-report", "give the JSON report provgate certify or exec wrote",
			"%s %s: %s", role, path, why ? why : "not a report");
		return false;
	}
	const char *schema = pvg_json_get_str(rep, "schema");
	if (!schema || strcmp(schema, "provgate.report/1") != 0) {
		problem(c, "compare.bad-report", "give the JSON report provgate certify or exec wrote",
			"%s %s: not a provgate report (schema %s)", role, path,
			schema ? schema : "missing");
		return false;
	}
	side->name = dup_or_null(pvg_json_get_str(rep, "name"));
	side->started_at = dup_or_null(pvg_json_get_str(rep, "started_at"));
	const cJSON *env = get(rep, "environment");
	if (!cJSON_IsObject(env)) {
		problem(c, "compare.no-environment",
			"certify both sides with a provgate that records the environment",
			"%s %s has no environment section: nothing to compare", role, path);
		return false;
	}
	bool ok = true;
	const cJSON *gates = get(rep, "gates");
	size_t passed = 0, n = 0;
	const cJSON *g;
	cJSON_ArrayForEach(g, gates) {
		n++;
		const char *st = pvg_json_get_str(g, "status");
		passed += st && strcmp(st, "pass") == 0;
	}
	const char *phase = pvg_json_get_str(rep, "phase");
	/* an exec report whose benchmark failed is not certified, but its chain held: the
	 * exec checks below say what went wrong with the benchmark */
	bool chain_held = cJSON_IsTrue(get(rep, "certified")) ||
			  (get(rep, "exec") && cJSON_IsTrue(get(rep, "provenance_certified")));
	if (!chain_held || n != PVG_N_GATES || passed != PVG_N_GATES ||
	    !phase || strcmp(phase, "live") != 0) {
		const cJSON *ex = get(rep, "exec");
		const char *state = pvg_json_get_str(ex, "state");
		if (ex && state && strcmp(state, "finished") != 0)
			problem(c, "compare.exec-unfinished",
				"compare the report exec writes when the benchmark has finished",
				"%s %s: the benchmark was still %s when this report was written", role,
				path, state);
		else
			problem(c, "compare.not-certified",
				"certify the side again (provgate certify / exec) until it passes",
				"%s %s is not certified (%zu of %d gates passed%s)", role, path, passed,
				PVG_N_GATES, phase && strcmp(phase, "live") != 0 ? ", not phase live" : "");
		ok = false;
	}
	const cJSON *ex = get(rep, "exec");
	if (ex) {
		side->is_exec = true;
		const char *state = pvg_json_get_str(ex, "state");
		const cJSON *status = get(ex, "exit_status");
		const cJSON *after = get(get(rep, "after"), "gates");
		if (ok && (!state || strcmp(state, "finished") != 0)) {
			problem(c, "compare.exec-unfinished",
				"compare the report exec writes when the benchmark has finished",
				"%s %s: the benchmark did not finish (state %s)", role, path,
				state ? state : "missing");
			ok = false;
		} else if (ok && cJSON_IsFalse(get(ex, "ran"))) {
			const char *e = pvg_json_get_str(ex, "error");
			problem(c, "compare.exec-failed", "a benchmark that never ran has no number to "
				"compare", "%s %s: the benchmark command did not run%s%s", role, path,
				e ? ": " : "", e ? e : "");
			ok = false;
		} else if (ok && (!cJSON_IsNumber(status) || status->valueint != 0)) {
			problem(c, "compare.exec-failed", "a failed benchmark has no number to compare",
				"%s %s: the benchmark command exited with status %d", role, path,
				cJSON_IsNumber(status) ? status->valueint : -1);
			ok = false;
		} else if (ok) {
			const cJSON *sel = get(get(rep, "after"), "selected_gates");
			bool after_ok = cJSON_IsArray(sel) && cJSON_GetArraySize(sel) > 0;
			const cJSON *ag;
			cJSON_ArrayForEach(ag, after) {
				const cJSON *id = get(ag, "id");
				bool selected = false;
				const cJSON *s;
				cJSON_ArrayForEach(s, sel)
					selected |= cJSON_IsNumber(s) && cJSON_IsNumber(id) &&
						    s->valueint == id->valueint;
				const char *st = pvg_json_get_str(ag, "status");
				if (selected && (!st || strcmp(st, "pass") != 0))
					after_ok = false;
			}
			if (!after_ok) {
				problem(c, "compare.exec-failed",
					"the chain did not hold while the benchmark ran: rerun it",
					"%s %s: the check after the benchmark did not pass", role, path);
				ok = false;
			}
		}
	}
	const cJSON *svc = get(env, "service");
	if (!cJSON_IsObject(svc)) {
		const char *w = pvg_json_get_str(env, "service_why");
		problem(c, "compare.no-service", "certify both sides against their live service",
			"%s %s records no service process%s%s", role, path, w ? ": " : "", w ? w : "");
		ok = false;
	} else {
		const cJSON *pid = get(svc, "pid");
		/* range first: converting an out-of-range double to long is undefined behaviour */
		double p = cJSON_IsNumber(pid) ? pid->valuedouble : -1;
		side->pid = p >= 1 && p <= 4194304 /* PID_MAX_LIMIT */ ? (long)p : -1;
		side->start_time = dup_or_null(pvg_json_get_str(svc, "start_time"));
	}
	side->certified = ok;
	return ok;
}

/* The comparison proper, once both sides are known to be reports. */
static void compare_fields(struct pvg_compare *c, const cJSON *b, const cJSON *k,
			   const char *const *declared, size_t n_declared)
{
	struct field_list lb = { 0 }, lc = { 0 };
	report_fields(b, &lb);
	report_fields(k, &lc);
	size_t i = 0, j = 0;
	while (i < lb.n || j < lc.n) {
		int d = i == lb.n ? 1 : j == lc.n ? -1 : strcmp(lb.f[i].name, lc.f[j].name);
		struct pvg_compare_field f = { 0 };
		if (d <= 0) {
			f.name = lb.f[i].name;
			f.baseline = lb.f[i].baseline;
			f.baseline_unreadable = lb.f[i].baseline_unreadable;
			f.weak = lb.f[i].weak;
		}
		if (d >= 0) {
			if (f.name)
				free(lc.f[j].name);
			else
				f.name = lc.f[j].name;
			f.candidate = lc.f[j].baseline;
			f.candidate_unreadable = lc.f[j].baseline_unreadable;
			f.weak |= lc.f[j].weak;
		}
		if (d <= 0)
			i++;
		if (d >= 0)
			j++;
		c->fields = pvg_xrealloc(c->fields, c->n_fields + 1, sizeof(*c->fields));
		c->fields[c->n_fields++] = f;
	}
	free(lb.f);
	free(lc.f);

	_cleanup_free_ size_t *decl_hits = pvg_xcalloc(n_declared + 1, sizeof(size_t));
	_cleanup_free_ size_t *decl_diffs = pvg_xcalloc(n_declared + 1, sizeof(size_t));
	for (size_t n = 0; n < c->n_fields; n++) {
		struct pvg_compare_field *f = &c->fields[n];
		bool decl = false;
		for (size_t d = 0; d < n_declared; d++)
			if (declared_match(declared[d], f->name)) {
				decl = true;
				decl_hits[d]++;
			}
		bool equal = !f->baseline_unreadable && !f->candidate_unreadable &&
			     ((!f->baseline && !f->candidate) ||
			      (f->baseline && f->candidate && strcmp(f->baseline, f->candidate) == 0));
		if (f->baseline_unreadable || f->candidate_unreadable) {
			f->verdict = PVG_FIELD_UNREADABLE;
			problem(c, "compare.unreadable",
				strncmp(f->name, "benchmark.inputs.", 17) == 0
					? "a benchmark input is missing or unreadable: fix "
					  "benchmark.inputs, or the file"
				: strncmp(f->name, "fact.", 5) == 0
					? "the fact is not in the live service's log on that side"
					: "run provgate where it can read the service (as root, or as "
					  "the service's user)",
				"%s could not be read on the %s side%s: it cannot be proven equal or "
				"different",
				f->name,
				f->baseline_unreadable && f->candidate_unreadable ? "baseline and candidate"
				: f->baseline_unreadable			   ? "baseline"
										   : "candidate",
				f->baseline_unreadable && f->candidate_unreadable ? "s" : "");
		} else if (!equal) {
			f->verdict = decl ? PVG_FIELD_DECLARED : PVG_FIELD_DIFFERS;
			for (size_t d = 0; d < n_declared; d++)
				decl_diffs[d] += declared_match(declared[d], f->name);
			if (!decl)
				problem(c, pvg_compare_field_code(f->name), field_hint(f->name),
					"%s differs and is not declared: baseline %s, candidate %s",
					f->name, f->baseline ? f->baseline : "(absent)",
					f->candidate ? f->candidate : "(absent)");
		} else {
			f->verdict = f->weak ? PVG_FIELD_EQUAL_WEAK : PVG_FIELD_EQUAL;
			c->n_weak += f->weak;
			for (size_t d = 0; d < n_declared; d++)
				if (!is_pattern(declared[d]) && strcmp(declared[d], f->name) == 0)
					f->verdict = PVG_FIELD_DECLARED_EQUAL;
		}
	}
	for (size_t d = 0; d < n_declared; d++) {
		if (!decl_hits[d])
			problem(c, "compare.declared-unknown",
				"name a field the reports have (provgate compare -v lists them all)",
				"declared difference \"%s\" names no field of either report", declared[d]);
		else if (!decl_diffs[d])
			problem(c, "compare.declared-equal",
				"the declared change did not happen: check that the candidate really runs "
				"it (and that the baseline does not)",
				"declared difference \"%s\" is equal on both sides%s", declared[d],
				decl_hits[d] > 1 ? " in every field it matches" : "");
	}
}

static const char *svc_str(const cJSON *rep, const char *key)
{
	return pvg_json_get_str(get(get(rep, "environment"), "service"), key);
}

int pvg_compare_reports(const struct pvg_compare_input *baseline,
			const struct pvg_compare_input *candidate, const char *const *declared,
			size_t n_declared, struct pvg_compare *out)
{
	memset(out, 0, sizeof(*out));
	judge_side(out, "baseline", baseline, &out->baseline);
	judge_side(out, "candidate", candidate, &out->candidate);
	const cJSON *b = baseline->report, *k = candidate->report;
	/* compared whenever both are reports with an environment: every reason is listed */
	if (!cJSON_IsObject(get(b, "environment")) || !cJSON_IsObject(get(k, "environment")))
		goto out;
	compare_fields(out, b, k, declared, n_declared);
	const char *bb = pvg_json_get_str(get(get(b, "environment"), "host"), "boot_id");
	const char *kb = pvg_json_get_str(get(get(k, "environment"), "host"), "boot_id");
	const char *bt = svc_str(b, "start_ticks"), *kt = svc_str(k, "start_ticks");
	if (out->baseline.pid > 0 && out->baseline.pid == out->candidate.pid && bb && kb &&
	    strcmp(bb, kb) == 0 && bt && kt && strcmp(bt, kt) == 0)
		problem(out, "compare.same-process",
			"restart the service on the candidate build: one process cannot be both sides",
			"baseline and candidate were measured on the same service process %ld "
			"(started %s)",
			out->baseline.pid, out->baseline.start_time ? out->baseline.start_time : "?");
out:
	out->like_for_like = out->n_problems == 0;
	return 0;
}

static void side_clear(struct pvg_compare_side *s)
{
	free(s->path);
	free(s->name);
	free(s->started_at);
	free(s->start_time);
}

void pvg_compare_clear(struct pvg_compare *c)
{
	side_clear(&c->baseline);
	side_clear(&c->candidate);
	for (size_t i = 0; i < c->n_fields; i++) {
		free(c->fields[i].name);
		free(c->fields[i].baseline);
		free(c->fields[i].candidate);
	}
	free(c->fields);
	for (size_t i = 0; i < c->n_problems; i++) {
		free(c->problems[i].code);
		free(c->problems[i].message);
		free(c->problems[i].hint);
	}
	free(c->problems);
	memset(c, 0, sizeof(*c));
}

static cJSON *side_json(const struct pvg_compare_side *s)
{
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "path", s->path);
	pvg_json_add_str(o, "sha256", s->sha256[0] ? s->sha256 : NULL);
	pvg_json_add_str(o, "name", s->name);
	pvg_json_add_str(o, "started_at", s->started_at);
	pvg_json_add_bool(o, "certified", s->certified);
	pvg_json_add_bool(o, "exec", s->is_exec);
	if (s->pid > 0)
		cJSON_AddNumberToObject(o, "service_pid", (double)s->pid);
	else
		cJSON_AddNullToObject(o, "service_pid");
	pvg_json_add_str(o, "service_start_time", s->start_time);
	return o;
}

cJSON *pvg_compare_json(const struct pvg_compare *c, const char *const *declared,
			size_t n_declared)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "schema", "provgate.compare/1");
	cJSON *tool = cJSON_AddObjectToObject(o, "tool");
	cJSON_AddStringToObject(tool, "name", "provgate");
	cJSON_AddStringToObject(tool, "version", pvg_version());
	pvg_json_add_bool(o, "like_for_like", c->like_for_like);
	cJSON_AddItemToObject(o, "baseline", side_json(&c->baseline));
	cJSON_AddItemToObject(o, "candidate", side_json(&c->candidate));
	cJSON *d = cJSON_AddArrayToObject(o, "declared");
	for (size_t i = 0; i < n_declared; i++)
		cJSON_AddItemToArray(d, pvg_json_string(declared[i]));
	cJSON *fields = cJSON_AddArrayToObject(o, "fields");
	for (size_t i = 0; i < c->n_fields; i++) {
		const struct pvg_compare_field *f = &c->fields[i];
		cJSON *j = cJSON_CreateObject();
		pvg_json_add_str(j, "field", f->name);
		pvg_json_add_str(j, "baseline", f->baseline);
		pvg_json_add_str(j, "candidate", f->candidate);
		pvg_json_add_str(j, "verdict", pvg_field_verdict_name(f->verdict));
		cJSON_AddItemToArray(fields, j);
	}
	cJSON *probs = cJSON_AddArrayToObject(o, "problems");
	for (size_t i = 0; i < c->n_problems; i++) {
		cJSON *p = cJSON_CreateObject();
		pvg_json_add_str(p, "code", c->problems[i].code);
		pvg_json_add_str(p, "message", c->problems[i].message);
		pvg_json_add_str(p, "hint", c->problems[i].hint);
		cJSON_AddItemToArray(probs, p);
	}
	return o;
}
