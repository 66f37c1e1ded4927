/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's default requirement, read: each changed device source of the change set, the
 * objects the build log compiled from it, and the kernels for the node's arch inside them.
 *
 * Device sources are .cu and .hip translation units (HIP: a .cu is compiled as its hipified
 * copy, named by the log's hipify line). A header (.cuh, .h, ...) has no object of its own:
 * its kernels are templates or inline code instantiated by the sources that include it, and
 * those sources, changed or not, are what the build log compiles; it is listed, never
 * required on its own (witness.changed_sources may name its kernels). Objects the log names
 * that cannot be found or read, or that hold no code object for arch, leave the source's
 * kernels unknown: the gate says so, it never passes over them.
 */
#include <sys/stat.h>

#include "dispatch-sources.h"
#include "dispatch-witness.h"
#include "formats/buildlog.h"
#include "formats/codeobj/codeobj.h"
#include "util/untrusted.h"

/* An object file is a build tree's file the config's build.log leads to; still, it is read
 * only as a regular file of a bounded size. */
#define OBJECT_MAX_SIZE (4ull << 30)

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool is_device_unit(const char *path)
{
	return has_suffix(path, ".cu") || has_suffix(path, ".hip");
}

static bool is_device_header(const char *path)
{
	return has_suffix(path, ".cuh") || has_suffix(path, ".hiph");
}

void dispatch_sources_clear(struct changed_sources *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct changed_source *c = &s->v[i];
		free(c->path);
		free(c->why);
		pvg_strv_clear(&c->kernels);
		for (size_t k = 0; k < c->n_objs; k++) {
			free(c->objs[k].path);
			free(c->objs[k].why);
		}
		free(c->objs);
	}
	free(s->v);
	free(s->why);
	memset(s, 0, sizeof(*s));
}

static const struct pvg_witness_source *configured(const struct pvg_config *cfg, const char *rel)
{
	for (size_t i = 0; i < cfg->witness.n_sources; i++)
		if (strcmp(cfg->witness.sources[i].path, rel) == 0)
			return &cfg->witness.sources[i];
	return NULL;
}

/* The name the log compiles rel as: its hipified copy (HIP), else rel. */
static char *compiled_name(const struct pvg_buildlog *log, const char *rel)
{
	const struct pvg_hipify_line *h = pvg_buildlog_find_hipify(log, rel);
	if (!h || !h->dst || h->status == PVG_HIPIFY_IGNORED)
		return pvg_strdup(rel);
	size_t sl = strlen(h->src), rl = strlen(rel);
	if (strcmp(h->src, rel) == 0)
		return pvg_strdup(h->dst);
	if (sl > rl && strncmp(h->dst, h->src, sl - rl) == 0)
		return pvg_strdup(h->dst + (sl - rl));
	return pvg_strdup(h->dst);
}

/* Where an object the log writes lies: absolute, or in its command's folder, a build folder
 * the log names, or the checkout (setup.py builds run there). NULL when not found. */
static char *find_object(const struct pvg_compile_step *cs, const struct pvg_strv *roots,
			 const char *workdir)
{
	const char *o = cs->object;
	struct stat st;
	if (o[0] == '/')
		return stat(o, &st) == 0 ? pvg_strdup(o) : NULL;
	const char *dirs[20];
	size_t nd = 0;
	if (cs->dir)
		dirs[nd++] = cs->dir;
	for (size_t i = 0; i < roots->n && nd < ARRAY_SIZE(dirs) - 1; i++)
		dirs[nd++] = roots->v[i];
	if (workdir)
		dirs[nd++] = workdir;
	for (size_t k = 0; k < nd; k++) {
		char *p = pvg_path_join(dirs[k], o);
		if (stat(p, &st) == 0)
			return p;
		free(p);
	}
	return NULL;
}

/* Reads one object's kernels for arch into c. */
static void read_object(struct changed_source *c, struct changed_object *ob, const char *arch,
			bool *device_code)
{
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = OBJECT_MAX_SIZE };
	struct pvg_untrusted_file uf;
	_cleanup_close_ int fd = pvg_open_untrusted(ob->path, &how, &uf);
	if (fd < 0) {
		ob->err = fd;
		ob->why = uf.refused ? pvg_asprintf("refused: %s", pvg_refusal_text(uf.refused))
				     : pvg_strdup(strerror(-fd));
		return;
	}
	struct pvg_codeobj_opts opts = { .names_arch = arch };
	struct pvg_codeobj_set *set = NULL;
	int r = pvg_codeobj_scan_fd(fd, ob->path, &opts, &set);
	if (r < 0) {
		ob->err = r;
		ob->why = pvg_asprintf("cannot be read: %s", strerror(-r));
		return;
	}
	size_t n_dev = 0, n_arch = 0;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (co->kind == PVG_CO_HOST)
			continue;
		n_dev++;
		if (!co->arch || !pvg_codeobj_matches_arch(co, arch) || co->error)
			continue;
		n_arch++;
		if (!co->kernels_known) {
			ob->err = -ENODATA;
			free(ob->why);
			ob->why = pvg_asprintf("its code object for %s does not list its kernels%s%s",
					       arch, co->kernels_why ? ": " : "",
					       co->kernels_why ? co->kernels_why : "");
			continue;
		}
		for (size_t k = 0; k < co->n_kernels; k++) {
			pvg_strv_add_unique(&c->kernels, co->kernels[k].name);
			ob->n_kernels++;
		}
	}
	if (n_dev)
		*device_code = true;
	if (n_dev && !n_arch && !ob->why) {
		ob->err = -ENOENT;
		ob->why = pvg_asprintf("it holds device code, but none for %s", arch);
	}
	if (set->n_issues && !n_arch && !ob->why) {
		ob->err = -EBADMSG;
		ob->why = pvg_asprintf("its device code cannot be read: %s",
				       set->issues[0].message);
	}
	pvg_codeobj_set_free(set);
}

/* The objects the log compiled from rel (the last compile line of each object) and their
 * kernels. */
static void read_source(struct changed_source *c, const struct pvg_buildlog *log,
			const struct pvg_linkgraph *g, const struct pvg_strv *roots,
			const char *workdir, const char *arch)
{
	_cleanup_free_ char *name = compiled_name(log, c->path);
	struct pvg_strv seen = { 0 };
	for (size_t i = log->n_commands; i-- > 0;) {
		const struct pvg_build_command *cmd = &log->commands[i];
		if (!cmd->compile || !pvg_command_mentions(cmd->text, name))
			continue;
		const struct pvg_compile_step *cs = pvg_linkgraph_compile_of(g, i);
		if (!cs || !cs->object)
			continue;
		bool dup = false;
		for (size_t k = 0; k < seen.n && !dup; k++)
			dup = strcmp(seen.v[k], cs->object) == 0;
		if (dup)
			continue;
		pvg_strv_add_unique(&seen, cs->object);
		c->objs = pvg_xrealloc(c->objs, c->n_objs + 1, sizeof(*c->objs));
		struct changed_object *ob = &c->objs[c->n_objs++];
		memset(ob, 0, sizeof(*ob));
		ob->line = cmd->lineno;
		ob->path = find_object(cs, roots, workdir);
		if (!ob->path) {
			ob->path = pvg_strdup(cs->object);
			ob->err = -ENOENT;
			ob->why = pvg_strdup("not found in the build folders the log names");
		}
	}
	pvg_strv_clear(&seen);
	if (c->n_objs == 0) {
		c->state = SOURCE_UNKNOWN;
		c->why = pvg_asprintf("the build log has no compile line writing an object from %s",
				      name);
		return;
	}
	bool device_code = false;
	for (size_t k = 0; k < c->n_objs; k++)
		if (!c->objs[k].err)
			read_object(c, &c->objs[k], arch, &device_code);
	for (size_t k = 0; k < c->n_objs; k++)
		if (c->objs[k].err) {
			/* one object unread: the kernels it holds are not known */
			c->state = SOURCE_UNKNOWN;
			c->why = pvg_asprintf("object %s (compile line %zu): %s", c->objs[k].path,
					      c->objs[k].line, c->objs[k].why);
			return;
		}
	if (c->kernels.n) {
		c->state = SOURCE_KERNELS;
		return;
	}
	c->state = SOURCE_NO_KERNELS;
	c->why = pvg_strdup(device_code ? "its objects define no kernel for the arch (device "
					  "functions only)"
					: "its objects hold no device code (host code only)");
}

void dispatch_sources_read(struct pvg_ctx *ctx, struct changed_sources *out)
{
	const struct pvg_config *cfg = ctx->cfg;
	memset(out, 0, sizeof(*out));
	if (!cfg->source.repo)
		return;
	out->applies = true;
	out->arch = cfg->arch ? cfg->arch
		    : ctx->n_arts ? pvg_artifact_arch(cfg, &ctx->arts[0].a)
				  : NULL;
	const struct pvg_scope *scope;
	int r = pvg_scope_get(ctx, &scope);
	if (r < 0 || !scope) {
		out->err = r < 0 ? r : -EINVAL;
		out->why = pvg_asprintf("the change set is not known: %s",
					scope && scope->msg.text ? scope->msg.text : strerror(-out->err));
		return;
	}
	out->v = pvg_xcalloc(scope->n + 1, sizeof(*out->v));
	for (size_t i = 0; i < scope->n; i++) {
		const struct pvg_change *ch = &scope->changes[i];
		if (ch->kind == 'D' || ch->submodule ||
		    !(is_device_unit(ch->path) || is_device_header(ch->path)))
			continue;
		struct changed_source *c = &out->v[out->n++];
		c->path = pvg_strdup(ch->path);
		const struct pvg_witness_source *ws = configured(cfg, ch->path);
		if (ws && ws->exempt) {
			c->state = SOURCE_EXEMPT;
			c->exempt = ws->exempt;
			c->from_config = true;
		} else if (ws) {
			c->state = SOURCE_KERNELS;
			c->from_config = true;
			for (size_t k = 0; k < ws->kernels.n; k++)
				pvg_strv_add_unique(&c->kernels, ws->kernels.v[k]);
		} else if (is_device_header(ch->path)) {
			c->state = SOURCE_HEADER;
			c->why = pvg_strdup("a header has no object of its own: its kernels come "
					    "through the sources that include it (name them in "
					    "witness.changed_sources to require them)");
		} else {
			c->state = SOURCE_UNKNOWN; /* read below */
		}
	}
	/* the build log, only when a source's kernels must be read from its objects */
	bool need_log = false;
	for (size_t i = 0; i < out->n; i++)
		need_log |= out->v[i].state == SOURCE_UNKNOWN;
	if (need_log) {
		struct pvg_buildlog log;
		struct pvg_linkgraph g = { 0 };
		struct pvg_strv roots = { 0 };
		pvg_buildlog_init(&log);
		int lr = !cfg->build.log ? -EDESTADDRREQ
			 : !out->arch	 ? -ENOEXEC
					 : pvg_buildlog_read_file(&log, cfg->build.log);
		if (lr == 0) {
			pvg_linkgraph_build(&log, &g);
			pvg_build_roots(&log, &g, &roots);
		}
		for (size_t i = 0; i < out->n; i++) {
			struct changed_source *c = &out->v[i];
			if (c->state != SOURCE_UNKNOWN)
				continue;
			if (lr < 0)
				c->why = pvg_asprintf(
					"its kernels cannot be read: %s",
					lr == -EDESTADDRREQ ? "build.log is not set (or name them in "
							      "witness.changed_sources)"
					: lr == -ENOEXEC    ? "arch is not set"
							    : strerror(-lr));
			else
				read_source(c, &log, &g, &roots, scope->workdir, out->arch);
		}
		pvg_strv_clear(&roots);
		pvg_linkgraph_done(&g);
		pvg_buildlog_done(&log);
	}
	for (size_t i = 0; i < out->n; i++)
		out->n_required += out->v[i].state == SOURCE_KERNELS ||
				   out->v[i].state == SOURCE_UNKNOWN;
}

static bool name_is(const struct pvg_witness_str *s, const char *want)
{
	size_t n = s->n, w = strlen(want);
	if (n >= 3 && memcmp(s->p + n - 3, ".kd", 3) == 0)
		n -= 3;
	if (w >= 3 && strcmp(want + w - 3, ".kd") == 0)
		w -= 3;
	return n == w && memcmp(s->p, want, n) == 0;
}

bool dispatch_source_matches(const struct changed_source *s, const struct pvg_witness_entry *e)
{
	for (size_t k = 0; k < s->kernels.n; k++) {
		const char *want = s->kernels.v[k];
		if (s->from_config ? dispatch_witness_kernel_matches(want, e) : name_is(&e->name, want))
			return true;
	}
	return false;
}

char *dispatch_source_kernel_list(const struct changed_source *s)
{
	char *out = pvg_strdup("");
	size_t shown = s->kernels.n > 8 ? 8 : s->kernels.n;
	for (size_t k = 0; k < shown; k++) {
		_cleanup_free_ char *clean = pvg_utf8_sanitize(s->kernels.v[k],
							       strlen(s->kernels.v[k]));
		char *n = pvg_asprintf("%s%s%s", out, k ? ", " : "", clean);
		free(out);
		out = n;
	}
	if (s->kernels.n > shown) {
		char *n = pvg_asprintf("%s and %zu more", out, s->kernels.n - shown);
		free(out);
		out = n;
	}
	return out;
}

static const char *const state_names[] = {
	[SOURCE_KERNELS] = "required",   [SOURCE_NO_KERNELS] = "no-kernels",
	[SOURCE_EXEMPT] = "exempt",      [SOURCE_HEADER] = "header",
	[SOURCE_UNKNOWN] = "unknown",
};

void dispatch_sources_evidence(cJSON *ev, const struct changed_sources *s)
{
	if (!s->applies)
		return;
	cJSON *arr = cJSON_AddArrayToObject(ev, "changed_sources");
	if (s->err) {
		pvg_json_add_str(ev, "changed_sources_error", s->why);
		return;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct changed_source *c = &s->v[i];
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "source", c->path);
		pvg_json_add_str(o, "state", state_names[c->state]);
		pvg_json_add_str(o, "kernels_from", c->from_config ? "config" : "objects");
		if (c->exempt)
			pvg_json_add_str(o, "exempt", c->exempt);
		if (c->why)
			pvg_json_add_str(o, "why", c->why);
		cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
		for (size_t k = 0; k < c->kernels.n && k < 64; k++)
			cJSON_AddItemToArray(ks, cJSON_CreateString(c->kernels.v[k]));
		if (c->n_objs) {
			cJSON *objs = cJSON_AddArrayToObject(o, "objects");
			for (size_t k = 0; k < c->n_objs; k++) {
				cJSON *ob = cJSON_CreateObject();
				pvg_json_add_str(ob, "path", c->objs[k].path);
				pvg_json_add_u64(ob, "line", c->objs[k].line);
				pvg_json_add_u64(ob, "kernels", c->objs[k].n_kernels);
				if (c->objs[k].why)
					pvg_json_add_str(ob, "error", c->objs[k].why);
				cJSON_AddItemToArray(objs, ob);
			}
		}
		if (c->state == SOURCE_KERNELS || c->state == SOURCE_UNKNOWN) {
			const struct source_count *n = &c->count;
			cJSON *l = cJSON_AddObjectToObject(o, "launches");
			pvg_json_add_u64(l, "from_artifact", n->from_artifact);
			pvg_json_add_u64(l, "name_only", n->name_only);
			pvg_json_add_u64(l, "other_code", n->elsewhere);
			pvg_json_add_u64(l, "ambiguous", n->ambiguous);
			pvg_json_add_u64(l, "ptx_jit", n->jit);
			pvg_json_add_u64(l, "undecided", n->undecided);
		}
		cJSON_AddItemToArray(arr, o);
	}
}
