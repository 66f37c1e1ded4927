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

#include "dispatch-sources.h"
#include "formats/buildlog.h"
#include "formats/triton-cache.h"

void dispatch_sources_clear(struct changed_sources *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct changed_source *c = &s->v[i];
		free(c->path);
		free(c->why);
		pvg_strv_clear(&c->kernels);
		pvg_source_kernels_clear(&c->read);
		free(c->in_art);
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

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Which configured artifacts the source's objects are linked into: an artifact whose build
 * file has the name of an output the log links them into. Where the log shows no such link,
 * or names none of the artifacts, in_art stays NULL (any artifact's code counts). */
static void linked_artifacts(struct pvg_ctx *ctx, struct changed_source *c)
{
	const struct pvg_strv *into = &c->read.linked_into;
	if (!into->n || !ctx->n_arts)
		return;
	bool *in = pvg_xcalloc(ctx->n_arts, sizeof(*in));
	bool any = false;
	for (size_t ai = 0; ai < ctx->n_arts; ai++) {
		const char *b = ctx->arts[ai].a.build;
		for (size_t k = 0; b && k < into->n && !in[ai]; k++)
			in[ai] = strcmp(base_name(b), base_name(into->v[k])) == 0;
		any |= in[ai];
	}
	if (any)
		c->in_art = in;
	else
		free(in);
}

/* The objects the log compiled from the source and their kernels. */
static void read_source(struct changed_source *c, const struct pvg_buildlog *log,
			const struct pvg_linkgraph *g, const struct pvg_strv *roots,
			const char *workdir, const char *arch)
{
	struct pvg_source_kernels *k = &c->read;
	pvg_source_kernels_read(log, g, roots, workdir, c->path, arch, k);
	c->objs = k->objs;
	c->n_objs = k->n_objs;
	if (k->err) {
		c->state = SOURCE_UNKNOWN;
		c->why = pvg_strdup(k->why);
		return;
	}
	for (size_t i = 0; i < k->kernels.n; i++)
		pvg_strv_add_unique(&c->kernels, k->kernels.v[i]);
	if (c->kernels.n) {
		c->state = SOURCE_KERNELS;
		return;
	}
	c->state = SOURCE_NO_KERNELS;
	c->why = pvg_strdup(k->device_code ? "its objects define no kernel for the arch (device "
					     "functions only)"
					   : "its objects hold no device code (host code only)");
}

static bool is_py(const char *p)
{
	size_t n = strlen(p);
	return n > 3 && strcmp(p + n - 3, ".py") == 0;
}

/* The Triton kernels of the change's .py (its content in the work tree: the installed file
 * must hold the same, dispatch-triton.c checks); *imports: it imports triton. */
static void triton_kernels(const char *workdir, const char *rel, struct pvg_strv *out,
			   bool *imports)
{
	_cleanup_free_ char *path = pvg_path_join(workdir, rel);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	*imports = false;
	if (pvg_read_file(path, PVG_TRITON_MAX_SOURCE, &text, &len) == 0)
		pvg_triton_py_scan(text, len, out, imports);
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
		if (ch->kind == 'D' || ch->submodule)
			continue;
		/* a changed .py with Triton kernels: JIT device code (SPEC §12) */
		struct pvg_strv py = { 0 };
		bool imports = false;
		if (is_py(ch->path) && scope->workdir)
			triton_kernels(scope->workdir, ch->path, &py, &imports);
		if (!py.n && imports) {
			/* it imports triton and the scan knows no kernel in it: tl helpers, or a
			 * kernel spelled in a way it does not read; told, never silently dropped */
			struct changed_source *c = &out->v[out->n++];
			c->path = pvg_strdup(ch->path);
			c->triton = true;
			const struct pvg_witness_source *ws = configured(cfg, ch->path);
			c->from_config = ws != NULL;
			if (ws && ws->exempt) {
				c->state = SOURCE_EXEMPT;
				c->exempt = ws->exempt;
			} else if (ws && ws->kernels.n) {
				c->state = SOURCE_KERNELS;
				for (size_t j = 0; j < ws->kernels.n; j++)
					pvg_strv_add_unique(&c->kernels, ws->kernels.v[j]);
			} else {
				c->state = SOURCE_NO_KERNELS;
				c->why = pvg_strdup(DISPATCH_SOURCE_TRITON_NO_KERNEL);
			}
			continue;
		}
		if (py.n) {
			struct changed_source *c = &out->v[out->n++];
			c->path = pvg_strdup(ch->path);
			const struct pvg_witness_source *ws = configured(cfg, ch->path);
			c->state = ws && ws->exempt ? SOURCE_EXEMPT : SOURCE_KERNELS;
			c->exempt = ws ? ws->exempt : NULL;
			c->from_config = ws != NULL;
			c->triton = true;
			const struct pvg_strv *k = ws && !ws->exempt ? &ws->kernels : &py;
			for (size_t j = 0; j < k->n; j++)
				pvg_strv_add_unique(&c->kernels, k->v[j]);
			pvg_strv_clear(&py);
			continue;
		}
		if (!(pvg_is_device_source(ch->path) || pvg_is_device_header(ch->path)))
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
		} else if (pvg_is_device_header(ch->path)) {
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
			for (size_t ai = 0; ai < ctx->n_arts; ai++)
				pvg_build_roots_of_artifact(&g, ctx->arts[ai].a.build, &roots);
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
			linked_artifacts(ctx, c);
		}
		pvg_strv_clear(&roots);
		pvg_linkgraph_done(&g);
		pvg_buildlog_done(&log);
	}
	for (size_t i = 0; i < out->n; i++)
		out->n_required += out->v[i].state == SOURCE_KERNELS ||
				   out->v[i].state == SOURCE_UNKNOWN;
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
