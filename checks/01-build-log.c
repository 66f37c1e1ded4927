/* SPDX-License-Identifier: MIT */
/*
 * Gate 1 build-log: this build log is the build that produced the artifact, and in it every
 * changed kernel source was hipified from its current content (HIP) and compiled for arch.
 * The log is parsed by lib/formats/buildlog.c; the changed sources come from the change set
 * shared with gate 2 (facts.h); the decision over both is made here.
 *
 * Its rules, in the order their problems are listed (build-log.CODE):
 *   configured, log-there, artifacts-built, log-readable  what the gate reads (run_build_log)
 *   log-of-this-build    the log is not older than the artifact, unless the artifact is a
 *                        copy of its own output or the link it ends with wrote it (.stale-log)
 *   change-set-known     gate 2's changed compiled sources (.no-scope)
 * over the parsed log (pvg_buildlog_check, log_rules[]):
 *   log-not-empty        (.empty-log: nothing else is checked)
 *   read-whole, build-succeeded, unsupported-calls, links-read-whole, artifacts-linked
 * and over each changed source (rule_changed_source):
 *   hipified             hipify ran on it, or it is HIP already (.not-hipified, .stale-hipify)
 *   compiled, linked     a unit's compile lines name the arch and are linked after, into
 *                        configured artifacts (check_compile); a header's includers are
 *                        recompiled and relinked (check_header)
 *   source-not-newer     not edited after the artifact was built (.source-newer)
 */
#include <sys/stat.h>

#include "01-build-log.h"
#include "facts.h"

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool is_header(const char *path)
{
	static const char *const exts[] = { ".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl",
					    ".ipp", ".tcc" };
	for (size_t i = 0; i < ARRAY_SIZE(exts); i++)
		if (has_suffix(path, exts[i]))
			return true;
	return false;
}

static bool is_unit(const char *path)
{
	static const char *const exts[] = { ".cu", ".hip", ".cpp", ".cc", ".cxx", ".c", ".C" };
	for (size_t i = 0; i < ARRAY_SIZE(exts); i++)
		if (has_suffix(path, exts[i]))
			return true;
	return false;
}

static bool is_cuda_source(const char *path)
{
	return has_suffix(path, ".cu") || has_suffix(path, ".cuh");
}

static const char *hipify_status_text(enum pvg_hipify_status s)
{
	switch (s) {
	case PVG_HIPIFY_OK:
		return "ok";
	case PVG_HIPIFY_SKIPPED_NO_CHANGES:
		return "skipped, no changes";
	case PVG_HIPIFY_SKIPPED_ALREADY:
		return "skipped, already hipified";
	case PVG_HIPIFY_SKIPPED_NO_PERMISSIONS:
		return "skipped, no permissions";
	case PVG_HIPIFY_SKIPPED_OTHER:
		return "skipped";
	case PVG_HIPIFY_IGNORED:
		return "ignored";
	}
	return "?";
}

/* The hipify output relative to the repo: "/b/src/csrc/x.cu -> /b/src/csrc/x.hip" for
 * "csrc/x.cu" gives "csrc/x.hip"; NULL when it is outside the source's tree. */
static char *hipified_rel(const struct pvg_hipify_line *h, const char *rel)
{
	size_t sl = strlen(h->src), rl = strlen(rel);
	if (strcmp(h->src, rel) == 0)
		return h->dst[0] != '/' ? pvg_strdup(h->dst) : NULL;
	if (sl <= rl)
		return NULL;
	size_t root = sl - rl; /* length of "/b/src/" */
	if (strncmp(h->dst, h->src, root) != 0)
		return NULL;
	return pvg_strdup(h->dst + root);
}

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static void hipify_json(cJSON *fe, const struct pvg_hipify_line *h)
{
	pvg_json_add_str(fe, "hipify", hipify_status_text(h->status));
	pvg_json_add_str(fe, "hipified", h->dst);
	pvg_json_add_u64(fe, "hipify_line", h->lineno);
}

/* The changed file's hipify line: [ok], or skipped while its hipified file is not older. */
static enum pvg_status check_hipify(const struct pvg_buildlog_request *req, const char *rel,
				    const struct pvg_hipify_line *h, const char *dst_rel,
				    struct pvg_result *res)
{
	switch (h->status) {
	case PVG_HIPIFY_OK:
		return PVG_PASS;
	case PVG_HIPIFY_SKIPPED_NO_PERMISSIONS:
		pvg_problem(res, "build-log.hipify-no-permissions",
			    "make the hipified output writable (or remove the stale copy) and rebuild",
			    "line %zu: hipify could not write the output for %s ([skipped, no "
			    "permissions]): the build used an old hipified copy",
			    h->lineno, rel);
		return PVG_FAIL;
	case PVG_HIPIFY_IGNORED:
		if (!is_cuda_source(rel))
			return PVG_PASS;
		pvg_problem(res, "build-log.not-hipified",
			    "make sure the file is in hipify's includes and rebuild",
			    "line %zu: hipify ignored changed %s (%s)", h->lineno, rel,
			    hipify_status_text(h->status));
		return PVG_FAIL;
	default:
		break;
	}
	/* [skipped, ...]: fine only when the hipified file is at least as new as the source */
	_cleanup_free_ char *src = req->workdir ? pvg_path_join(req->workdir, rel) : pvg_strdup(rel);
	/* the hipified file where the log says it is (vLLM hipifies into its build folder),
	 * else at the same place in this checkout (a log from another machine) */
	struct stat s_src, s_dst;
	_cleanup_free_ char *dst = pvg_strdup(h->dst);
	if (stat(dst, &s_dst) < 0 && dst_rel && req->workdir) {
		free(dst);
		dst = pvg_path_join(req->workdir, dst_rel);
	}
	if (stat(src, &s_src) < 0 || stat(dst, &s_dst) < 0) {
		int e = errno;
		pvg_problem(res, "build-log.hipify-unverifiable",
			    "rebuild so that hipify reports [ok], or run provgate where the build "
			    "tree is",
			    "line %zu: hipify skipped %s (%s) and the times of %s and %s cannot be "
			    "compared: %s",
			    h->lineno, rel, hipify_status_text(h->status), src, dst, strerror(e));
		return PVG_UNVERIFIABLE;
	}
	if (mtime_ns(&s_dst) < mtime_ns(&s_src)) {
		char a[48], b[48];
		pvg_format_time(s_src.st_mtim.tv_sec, -1, a, sizeof(a));
		pvg_format_time(s_dst.st_mtim.tv_sec, -1, b, sizeof(b));
		pvg_problem(res, "build-log.stale-hipify",
			    "rerun hipify (rebuild from a clean tree) so the change reaches the "
			    "hipified file",
			    "line %zu: hipify skipped changed %s (%s), but its hipified file %s "
			    "(modified %s) is older than the source (modified %s)",
			    h->lineno, rel, hipify_status_text(h->status), dst, b, a);
		return PVG_FAIL;
	}
	return PVG_PASS;
}

/* ---- HIP source that needs no hipify -------------------------------------------------------- */

static bool globs_match(const struct pvg_strv *globs, const char *rel)
{
	for (size_t k = 0; globs && k < globs->n; k++)
		if (pvg_glob_match(globs->v[k], rel))
			return true;
	return false;
}

/* "csrc/kern.cu" -> is "csrc/kern.hip" beside it (hipify's output for a .cu)? */
static bool hipified_twin(const char *workdir, const char *rel)
{
	if (!workdir || !has_suffix(rel, ".cu"))
		return false;
	_cleanup_free_ char *twin = pvg_asprintf("%.*s.hip", (int)(strlen(rel) - 3), rel);
	_cleanup_free_ char *path = pvg_path_join(workdir, twin);
	struct stat st;
	return stat(path, &st) == 0;
}

static bool names_cu_source(const char *command)
{
	for (const char *p = strstr(command, ".cu"); p; p = strstr(p + 1, ".cu"))
		if (p[3] == '\0' || p[3] == ' ' || p[3] == '"' || p[3] == '\'')
			return true;
	return false;
}

/* A changed .cu/.cuh with no hipify line: is it HIP source already? The config says so
 * (build.hip_sources), or a compile line of the .cu itself does (-x hip; hipcc while no
 * hipified twin is beside it); a header, when the log hipifies nothing and compiles .cu
 * files as HIP. Returns how it was decided (evidence), or NULL: it needed hipify. */
static char *hip_native(const struct pvg_buildlog_request *req, const char *rel, bool header)
{
	if (req->hip_sources && globs_match(req->hip_sources, rel))
		return pvg_strdup("build.hip_sources");
	const struct pvg_buildlog *log = req->log;
	bool twin = !header && hipified_twin(req->workdir, rel);
	for (size_t i = 0; i < log->n_commands; i++) {
		const struct pvg_build_command *c = &log->commands[i];
		if (!c->compile)
			continue;
		if (!header && !pvg_command_mentions(c->text, rel))
			continue;
		if (header && (log->n_hipify || !names_cu_source(c->text)))
			continue;
		enum pvg_hip_compile k = pvg_command_hip_compile(c->text);
		if (k == PVG_HIP_COMPILE_X_HIP)
			return pvg_asprintf("line %zu compiles %s with -x hip", c->lineno,
					    header ? "a .cu" : "it");
		if (k == PVG_HIP_COMPILE_HIPCC && !twin)
			return pvg_asprintf("line %zu compiles %s with hipcc, and no hipified copy is "
					    "beside it",
					    c->lineno, header ? "a .cu" : "it");
	}
	return NULL;
}

/* ---- where each changed source went ---------------------------------------------------------- */

#define MAX_PLACES 16

/* One output a compile step's object was found linked into. */
struct place {
	const char *output; /* as the log writes it */
	long art;           /* index in arts, or -1: no configured artifact names it */
	size_t link_line;
	enum pvg_link_kind kind;
	const char *by;     /* how it was found */
};

/* The decision's view of the request: the artifacts (one made of the single fields when
 * n_arts is 0), the graph. */
struct view {
	const struct pvg_buildlog_request *req;
	const struct pvg_linkgraph *g;
	const struct pvg_buildlog_artifact *arts;
	size_t n_arts;
	bool multi; /* several artifacts: messages name the artifact */
	bool any_linked; /* the log links at least one configured artifact */
};

static long art_of_output(const struct view *v, const char *output)
{
	const char *b = pvg_basename(output);
	for (size_t i = 0; i < v->n_arts; i++)
		if (v->arts[i].file && strcmp(v->arts[i].file, b) == 0)
			return (long)i;
	return -1;
}

/* The first build folder the log names (for paths in hints), or NULL. */
static const char *root0(const struct view *v)
{
	return v->req->n_roots ? v->req->roots[0] : NULL;
}

static const char *art_label(const struct view *v, long i, char *buf, size_t size)
{
	if (!v->multi || i < 0)
		return "";
	snprintf(buf, size, "%s: ", v->arts[i].name);
	return buf;
}

static bool any_globs(const struct view *v)
{
	for (size_t i = 0; i < v->n_arts; i++)
		if (v->arts[i].compiled && v->arts[i].compiled->n)
			return true;
	return false;
}

/* The last link line of artifact i in the log, 0 when there is none. */
/* Does a changed source match the artifact's own compiled globs? */
static bool globs_name_a_change(const struct pvg_buildlog_request *req,
				const struct pvg_buildlog_artifact *a)
{
	if (!a->compiled)
		return false;
	for (size_t c = 0; c < req->n_changed; c++)
		for (size_t k = 0; k < a->compiled->n; k++)
			if (pvg_glob_match(a->compiled->v[k], req->changed[c]))
				return true;
	return false;
}

static size_t art_link_line(const struct view *v, size_t i)
{
	const struct pvg_link_step *l = v->arts[i].file ? pvg_linkgraph_output(v->g, v->arts[i].file)
						       : NULL;
	return l ? l->lineno : 0;
}

/* "_moe_C" for "_moe_C.abi3.so", "libx" for "libx.so.1" */
static void stem_of(const char *path, char *out, size_t size)
{
	const char *b = pvg_basename(path);
	size_t n = strcspn(b, ".");
	snprintf(out, size, "%.*s", (int)n, b);
}

/* Outputs of CMake target t that the log links (its objects are in CMakeFiles/t.dir/). */
static size_t cmake_target_outputs(const struct view *v, const char *t, struct place *p, size_t n,
				   size_t max)
{
	for (size_t i = 0; i < v->g->n_links && n < max; i++) {
		const struct pvg_link_step *l = &v->g->links[i];
		char stem[256];
		stem_of(l->output, stem, sizeof(stem));
		if (!l->last || !(strcmp(stem, t) == 0 ||
				  (strncmp(stem, "lib", 3) == 0 && strcmp(stem + 3, t) == 0)))
			continue;
		p[n++] = (struct place){ l->output, art_of_output(v, l->output), l->lineno, l->kind,
					 "cmake target" };
	}
	return n;
}

/* Where the object obj (written in dir) went: link lines, else CMake's target folder (when
 * by_target: some link inputs are not in the log, or the object is not built by it). */
static size_t place_object(const struct view *v, const char *obj, const char *dir, bool by_target,
			   struct place *p, size_t max)
{
	size_t idx[MAX_PLACES], n = 0;
	size_t k = pvg_linkgraph_outputs_of(v->g, obj, dir, idx, max < MAX_PLACES ? max : MAX_PLACES);
	for (size_t i = 0; i < k; i++) {
		const struct pvg_link_step *l = &v->g->links[idx[i]];
		p[n++] = (struct place){ l->output, art_of_output(v, l->output), l->lineno, l->kind,
					 "link line" };
	}
	char t[256];
	if (n == 0 && by_target && pvg_cmake_target_of(obj, t, sizeof(t)))
		n = cmake_target_outputs(v, t, p, n, max);
	return n;
}

/* The ready artifacts[] entry for an output no entry names. */
static char *entry_hint(const char *output, const char *dir, const char *rel)
{
	char name[128];
	pvg_artifact_default_name(output, name, sizeof(name));
	_cleanup_free_ char *path = output[0] != '/' && dir ? pvg_path_join(dir, output)
							    : pvg_strdup(output);
	return pvg_asprintf("add it to \"artifacts\" (and install it), e.g. {\"name\": \"%s\", "
			    "\"build\": \"%s\", \"install\": \"<its installed path>\", \"compiled\": "
			    "[\"%s\"]}",
			    name, path, rel);
}

static void unverified_artifact(struct pvg_result *res, const char *rel, const char *what,
				const struct place *p, const char *dir, size_t line)
{
	_cleanup_free_ char *hint = entry_hint(p->output, dir, rel);
	pvg_problem(res, "build-log.unverified-artifact", hint,
		    "changed %s is %s into %s (line %zu), which no artifacts[] entry names: its "
		    "build, install and loading are not checked",
		    rel, what, p->output, line);
}

static void place_json(cJSON *arr, const struct view *v, const struct place *p)
{
	cJSON *j = cJSON_CreateObject();
	pvg_json_add_str(j, "output", p->output);
	if (p->art >= 0)
		pvg_json_add_str(j, "artifact", v->arts[p->art].name);
	pvg_json_add_u64(j, "link_line", p->link_line);
	pvg_json_add_str(j, "by", p->by);
	cJSON_AddItemToArray(arr, j);
}

static void arch_problem(const struct view *v, long ai, const char *arch, bool cuda,
			 const char *label, size_t lineno, const char *seen, struct pvg_result *res)
{
	char lb[160];
	const char *al = art_label(v, ai, lb, sizeof(lb));
	if (seen)
		pvg_problem(res, "build-log.wrong-arch",
			    cuda ? "add -gencode arch=compute_NN,code=sm_NN for the configured arch "
				   "(TORCH_CUDA_ARCH_LIST) and rebuild"
				 : "build with --offload-arch for the configured arch "
				   "(PYTORCH_ROCM_ARCH / GPU_TARGETS) and rebuild",
			    "%sline %zu: %s was compiled for %s, not %s", al, lineno, label, seen, arch);
	else
		pvg_problem(res, "build-log.missing-arch",
			    cuda ? "compile with -gencode/-arch for the configured arch"
				 : "compile with --offload-arch for the configured arch",
			    "%sline %zu: the compile line of %s names no %s target arch (expected %s)",
			    al, lineno, label, cuda ? "-gencode/-arch" : "--offload-arch", arch);
}

/* Checks one compile line against arch; adds its evidence line. */
static enum pvg_status check_arch(const struct view *v, long ai, const char *arch,
				  const struct pvg_build_command *c, const char *src,
				  const char *label, cJSON *l, struct pvg_result *res)
{
	if (pvg_command_host_only(c->text, src)) {
		/* a host compiler's C/C++ compile: no device code, no target arch */
		if (!cJSON_GetObjectItem(l, "host_only"))
			cJSON_AddBoolToObject(l, "host_only", true);
		return PVG_PASS;
	}
	bool cuda = pvg_arch_is_cuda(arch);
	_cleanup_free_ char *seen = NULL;
	bool ok = pvg_command_has_arch(c->text, arch, cuda, &seen);
	if (!cJSON_GetObjectItem(l, "arch"))
		pvg_json_add_str(l, "arch", seen);
	cJSON *has = cJSON_GetObjectItem(l, "has_arch");
	if (!has)
		pvg_json_add_bool(l, "has_arch", ok);
	else if (!ok)
		cJSON_ReplaceItemInObject(l, "has_arch", cJSON_CreateBool(false));
	if (ok)
		return PVG_PASS;
	arch_problem(v, ai, arch, cuda, label, c->lineno, seen, res);
	return PVG_FAIL;
}

/* The artifacts a compile line's object was not found in, decided without link inputs:
 * the artifacts' compiled globs, else the only artifact (when the log links no other shared
 * object). Returns how many places were added; *why says how (evidence). */
static size_t place_without_inputs(const struct view *v, const char *rel, struct place *p,
				   const char **why)
{
	size_t n = 0;
	if (any_globs(v)) {
		for (size_t i = 0; i < v->n_arts && n < MAX_PLACES; i++)
			if (globs_match(v->arts[i].compiled, rel))
				p[n++] = (struct place){ v->arts[i].file, (long)i, art_link_line(v, i),
							 PVG_LINK_SHARED, "compiled globs" };
		if (n) {
			*why = "the log does not show the link inputs; the artifacts' compiled globs "
			       "name it";
			return n;
		}
	}
	if (v->n_arts == 1 && v->arts[0].file) {
		/* the log links no other shared object than this one */
		bool other = false;
		for (size_t i = 0; i < v->g->n_links && !other; i++)
			other = v->g->links[i].kind == PVG_LINK_SHARED &&
				strcmp(pvg_basename(v->g->links[i].output), v->arts[0].file) != 0;
		if (!other) {
			p[n++] = (struct place){ v->arts[0].file, 0, art_link_line(v, 0),
						 PVG_LINK_SHARED, "only artifact" };
			*why = "the log does not show the link inputs; it links one shared object, the "
			       "only artifact configured";
		}
	}
	return n;
}

/* Where a compile line's object went, and whether the log shows all link inputs. */
struct placing {
	struct place p[MAX_PLACES];
	size_t n;
	bool unknown; /* the inputs are not all in the log: globs or a lone artifact decided */
};

static struct placing place_compile(const struct view *v, const char *rel,
				    const struct pvg_compile_step *cs, cJSON *l)
{
	struct placing pl = { .n = 0 };
	if (cs && cs->object)
		pl.n = place_object(v, cs->object, cs->dir, v->g->any_unknown, pl.p, MAX_PLACES);
	pl.unknown = v->g->any_unknown || !cs || !cs->object;
	const char *why = NULL;
	if (pl.n == 0 && v->g->n_links != 0 && pl.unknown)
		pl.n = place_without_inputs(v, rel, pl.p, &why);
	if (why)
		pvg_json_add_str(l, "placed", why);
	return pl;
}

/* No link step in the log at all (the no-link problem says so): the arch of the artifacts
 * the compile line could be for. */
static enum pvg_status check_arch_unlinked(const struct view *v, const char *rel,
					   const char *name, const char *label,
					   const struct pvg_build_command *c, cJSON *l,
					   struct pvg_result *res)
{
	enum pvg_status st = PVG_PASS;
	for (size_t a = 0; a < v->n_arts; a++)
		if (v->n_arts == 1 || globs_match(v->arts[a].compiled, rel))
			st = pvg_status_worst(st, check_arch(v, (long)a, v->arts[a].arch, c, name,
							     label, l, res));
	if (v->n_arts == 0)
		st = pvg_status_worst(st, check_arch(v, -1, v->req->arch, c, name, label, l, res));
	return st;
}

/* The object went nowhere the log shows. */
static enum pvg_status problem_unplaced(const struct view *v, const char *label,
					const struct pvg_build_command *c,
					const struct pvg_compile_step *cs, bool unknown,
					struct pvg_result *res)
{
	if (unknown) {
		pvg_problem(res, "build-log.link-inputs-unknown",
			    "build verbosely (ninja -v, CMAKE_VERBOSE_MAKEFILE=ON, VERBOSE=1) so the "
			    "link commands are logged, or give each artifact its \"compiled\" globs",
			    "line %zu: the log does not show which output %s is linked into (%zu "
			    "shared objects are linked; non-verbose link lines or response files)",
			    c->lineno, label, v->g->n_shared);
		return PVG_UNVERIFIABLE;
	}
	pvg_problem(res, "build-log.not-linked",
		    "rebuild so that the artifact is relinked with the changed source",
		    "line %zu: the object of changed %s (%s) is linked into no output in the log",
		    c->lineno, label, cs->object);
	return PVG_FAIL;
}

/* Each output the object went into: a configured artifact, compiled for its arch and linked
 * after this compile line; an unconfigured shared object (or the only output) is a problem. */
static enum pvg_status check_places(const struct view *v, const char *rel, const char *name,
				    const char *label, const struct pvg_build_command *c,
				    const struct pvg_compile_step *cs, const struct placing *pl,
				    cJSON *l, struct pvg_result *res)
{
	enum pvg_status st = PVG_PASS;
	size_t n_conf = 0;
	for (size_t k = 0; k < pl->n; k++)
		n_conf += pl->p[k].art >= 0;
	for (size_t k = 0; k < pl->n; k++) {
		const struct place *p = &pl->p[k];
		if (p->art < 0) {
			/* an executable or archive beside a configured artifact is not loaded by the
			 * service; a shared object, or the only output, must be named */
			if (p->kind == PVG_LINK_SHARED || n_conf == 0) {
				unverified_artifact(res, rel, "linked", p,
						    cs && cs->dir ? cs->dir : root0(v), p->link_line);
				st = PVG_FAIL;
			}
			continue;
		}
		const struct pvg_buildlog_artifact *a = &v->arts[p->art];
		st = pvg_status_worst(st, check_arch(v, p->art, a->arch, c, name, label, l, res));
		if (p->link_line && p->link_line < c->lineno) {
			char lb[160];
			pvg_problem(res, "build-log.not-relinked",
				    "rebuild so that the artifact is linked after the changed source is "
				    "compiled",
				    "%sline %zu: %s was compiled after %s was last linked (line %zu)",
				    art_label(v, p->art, lb, sizeof(lb)), c->lineno, label, a->file,
				    p->link_line);
			st = PVG_FAIL;
		}
	}
	return st;
}

/* One compile line of a changed source: its evidence, where its object went, and what that
 * requires. Sets the bits of the artifacts it went into in *placed. */
static enum pvg_status check_compile_line(const struct view *v, const char *rel, const char *name,
					  const char *label, size_t i, cJSON *lines, cJSON *linked,
					  struct pvg_result *res, uint64_t *placed)
{
	const struct pvg_build_command *c = &v->req->log->commands[i];
	cJSON *l = cJSON_CreateObject();
	pvg_json_add_u64(l, "line", c->lineno);
	cJSON_AddItemToArray(lines, l);
	const struct pvg_compile_step *cs = pvg_linkgraph_compile_of(v->g, i);
	if (cs && cs->object)
		pvg_json_add_str(l, "object", cs->object);
	struct placing pl = place_compile(v, rel, cs, l);
	for (size_t k = 0; k < pl.n; k++) {
		place_json(linked, v, &pl.p[k]);
		if (pl.p[k].art >= 0 && pl.p[k].art < 64)
			*placed |= UINT64_C(1) << pl.p[k].art;
	}
	if (pl.n == 0 && v->g->n_links == 0)
		return check_arch_unlinked(v, rel, name, label, c, l, res);
	if (pl.n == 0)
		return problem_unplaced(v, label, c, cs, pl.unknown, res);
	return check_places(v, rel, name, label, c, cs, &pl, l, res);
}

/* A changed translation unit (compiled as name: its hipified copy) has compile lines, for the
 * configured arch, linked into configured artifacts after them. */
static enum pvg_status check_compile(const struct view *v, const char *rel, const char *name,
				     cJSON *fe, struct pvg_result *res, uint64_t *placed)
{
	const struct pvg_buildlog *log = v->req->log;
	size_t n_found = 0, n_desc = 0;
	enum pvg_status st = PVG_PASS;
	cJSON *lines = cJSON_AddArrayToObject(fe, "compile_lines");
	cJSON *linked = cJSON_AddArrayToObject(fe, "linked_into");
	_cleanup_free_ char *label = strcmp(rel, name) ? pvg_asprintf("%s (as %s)", rel, name)
						       : pvg_strdup(rel);
	for (size_t i = 0; i < log->n_commands; i++) {
		const struct pvg_build_command *c = &log->commands[i];
		if (!pvg_command_mentions(c->text, name))
			continue;
		if (!c->compile) {
			n_desc += strncmp(c->text, "Building ", 9) == 0;
			continue;
		}
		n_found++;
		st = pvg_status_worst(st, check_compile_line(v, rel, name, label, i, lines, linked,
							     res, placed));
	}
	if (n_found == 0) {
		pvg_problem(res, "build-log.no-compile-line",
			    n_desc ? "the log has only step descriptions: build verbosely (ninja -v, "
				     "CMAKE_VERBOSE_MAKEFILE=ON, VERBOSE=1) so the commands are logged"
				   : "rebuild so the changed file is recompiled (touch it, or clean the "
				     "build), with a verbose build log",
			    "changed %s has no compile line in the log%s", label,
			    n_desc ? " (only a non-verbose step description)" : "");
		return PVG_FAIL;
	}
	return st;
}

/* ---- headers: which objects include them ---------------------------------------------------- */

/* The objects that depend on header rel (or its hipified copy hip_rel), by ninja's deps log
 * or the make-style depfiles beside the objects. -1: no dependency information at all. */
static int header_consumers(const struct view *v, const char *rel, const char *hip_rel,
			    struct pvg_strv *objs, const char **source)
{
	const struct pvg_buildlog_request *req = v->req;
	if (req->ninja_deps) {
		pvg_ninja_deps_dependents(req->ninja_deps, rel, objs);
		if (hip_rel)
			pvg_ninja_deps_dependents(req->ninja_deps, hip_rel, objs);
		*source = ".ninja_deps";
		return (int)objs->n;
	}
	bool any = false;
	if (v->g->n_compiles > 4096)
		return -1; /* more objects than provgate reads depfiles of: unknown */
	for (size_t i = 0; i < v->g->n_compiles; i++) {
		const struct pvg_compile_step *cs = &v->g->compiles[i];
		if (!cs->object)
			continue;
		_cleanup_free_ char *d = cs->depfile ? pvg_strdup(cs->depfile)
						     : pvg_asprintf("%s.d", cs->object);
		const char *dirs[1 + 16];
		size_t nd = 0;
		if (d[0] == '/' || !(cs->dir || req->n_roots))
			dirs[nd++] = NULL;
		else if (cs->dir)
			dirs[nd++] = cs->dir;
		for (size_t r = 0; r < req->n_roots && nd < ARRAY_SIZE(dirs) && d[0] != '/'; r++)
			dirs[nd++] = req->roots[r];
		for (size_t k = 0; k < nd; k++) {
			_cleanup_free_ char *path = dirs[k] ? pvg_path_join(dirs[k], d) : pvg_strdup(d);
			_cleanup_free_ char *text = NULL;
			size_t len = 0;
			if (pvg_read_file(path, 16u << 20, &text, &len) < 0)
				continue;
			any = true;
			if (pvg_depfile_mentions(text, len, rel) ||
			    (hip_rel && pvg_depfile_mentions(text, len, hip_rel))) {
				pvg_strv_add_unique(objs, cs->object);
			}
			break;
		}
	}
	*source = "depfiles";
	return any ? (int)objs->n : -1;
}

/* No dependency information: the artifacts whose globs name the header (the only one) must
 * be relinked after the header's hipify. */
static enum pvg_status check_header_without_deps(const struct view *v, const char *rel,
						 size_t hipify_line, cJSON *fe,
						 struct pvg_result *res)
{
	enum pvg_status st = PVG_PASS;
	pvg_json_add_str(fe, "consumers", "unknown (no .ninja_deps or depfiles in the build tree)");
	cJSON *need = cJSON_AddArrayToObject(fe, "needs_relinked");
	for (size_t i = 0; i < v->n_arts; i++) {
		if (!(v->n_arts == 1 || globs_match(v->arts[i].compiled, rel)))
			continue;
		cJSON_AddItemToArray(need, cJSON_CreateString(v->arts[i].name));
		size_t ll = art_link_line(v, i);
		if (ll && hipify_line && ll < hipify_line) {
			char lb[160];
			pvg_problem(res, "build-log.not-relinked",
				    "rebuild so that the artifact is linked after the header's hipify",
				    "%schanged header %s was hipified (line %zu) after %s was last "
				    "linked (line %zu)",
				    art_label(v, (long)i, lb, sizeof(lb)), rel, hipify_line,
				    v->arts[i].file, ll);
			st = PVG_FAIL;
		}
	}
	return st;
}

/* One object that includes the changed header: recompiled by the log, and linked after that
 * into configured artifacts. */
static enum pvg_status check_header_consumer(const struct view *v, const char *rel,
					     const char *obj, const char *source, cJSON *linked,
					     struct pvg_result *res)
{
	const char *ddir = v->req->ninja_deps ? v->req->deps_root : NULL;
	const struct pvg_compile_step *cs = pvg_linkgraph_compile_for(v->g, obj, ddir);
	struct place p[MAX_PLACES];
	size_t np = place_object(v, obj, cs ? cs->dir : ddir, v->g->any_unknown || !cs, p,
				 MAX_PLACES);
	for (size_t k = 0; k < np; k++)
		place_json(linked, v, &p[k]);
	if (np == 0 && cs) {
		pvg_problem(res, "build-log.link-inputs-unknown",
			    "build verbosely (ninja -v, VERBOSE=1) so the link commands are logged",
			    "changed header %s is included by %s (compiled at line %zu), and the log "
			    "does not show which output that is linked into",
			    rel, obj, cs->lineno);
		return PVG_UNVERIFIABLE;
	}
	/* np == 0 without cs: an object this log neither builds nor links (another target) */
	enum pvg_status st = PVG_PASS;
	for (size_t k = 0; k < np; k++) {
		if (p[k].art < 0) {
			if (p[k].kind == PVG_LINK_SHARED) {
				_cleanup_free_ char *what =
					pvg_asprintf("included by %s (%s), which is linked", obj, source);
				unverified_artifact(res, rel, what, &p[k],
						    cs && cs->dir ? cs->dir : ddir ? ddir : root0(v),
						    p[k].link_line);
				st = PVG_FAIL;
			}
			continue;
		}
		char lb[160];
		const char *al = art_label(v, p[k].art, lb, sizeof(lb));
		if (!cs) {
			pvg_problem(res, "build-log.not-recompiled",
				    "rebuild: every object that includes the changed header must be "
				    "recompiled and its artifact relinked",
				    "%schanged header %s is included by %s (%s), which the log does not "
				    "recompile",
				    al, rel, obj, source);
			st = PVG_FAIL;
		} else if (p[k].link_line < cs->lineno) {
			pvg_problem(res, "build-log.not-relinked",
				    "rebuild so that the artifact is linked after the objects that "
				    "include the changed header",
				    "%schanged header %s is included by %s (compiled at line %zu), and %s "
				    "was last linked before it (line %zu)",
				    al, rel, obj, cs->lineno, p[k].output, p[k].link_line);
			st = PVG_FAIL;
		}
	}
	return st;
}

/* A changed header (or its hipified copy hip_rel): every object that includes it recompiled,
 * and its artifact relinked after that. */
static enum pvg_status check_header(const struct view *v, const char *rel, const char *hip_rel,
				    size_t hipify_line, cJSON *fe, struct pvg_result *res)
{
	struct pvg_strv objs = { 0 };
	const char *source = NULL;
	if (header_consumers(v, rel, hip_rel, &objs, &source) < 0)
		return check_header_without_deps(v, rel, hipify_line, fe, res);
	pvg_json_add_str(fe, "consumers_from", source);
	cJSON *cons = cJSON_AddArrayToObject(fe, "consumers");
	cJSON *linked = cJSON_AddArrayToObject(fe, "linked_into");
	enum pvg_status st = PVG_PASS;
	for (size_t i = 0; i < objs.n; i++) {
		cJSON_AddItemToArray(cons, cJSON_CreateString(objs.v[i]));
		st = pvg_status_worst(st, check_header_consumer(v, rel, objs.v[i], source, linked,
								res));
	}
	pvg_strv_clear(&objs);
	return st;
}

/* ---- the rules over the log ------------------------------------------------------------------ */

/* Each rule records its problems in res as it goes and returns them as a struct pvg_outcome
 * (pvg_outcome_since); the caller puts them back with pvg_outcome_into. */

/* The log holds something of a build (else nothing more is checked). */
static struct pvg_outcome rule_log_not_empty(const struct view *v, struct pvg_result *res)
{
	const struct pvg_buildlog *log = v->req->log;
	size_t from = res->n_problems;
	if (log->n_lines != 0 && (log->n_hipify != 0 || log->n_commands != 0 ||
				  log->n_ninja_lines != 0 || log->n_failed != 0 ||
				  log->n_errors != 0 || log->unsupported_calls >= 0))
		return pvg_outcome_since(res, from, PVG_PASS);
	pvg_problem(res, "build-log.empty-log",
		    "point build.log at the output of the build (tee the whole build into it)",
		    log->n_lines == 0 ? "the build log is empty"
				      : "the build log (%zu lines) holds no hipify, ninja or compiler "
					"lines",
		    log->n_lines);
	return pvg_outcome_since(res, from, PVG_FAIL);
}

/* Everything the log holds was read. */
static struct pvg_outcome rule_log_read_whole(const struct view *v, struct pvg_result *res)
{
	size_t from = res->n_problems;
	if (!v->req->log->truncated)
		return pvg_outcome_since(res, from, PVG_PASS);
	pvg_problem(res, "build-log.too-large", "split the log, or keep only this build's output in it",
		    "the build log holds more hipify and command lines than provgate keeps (%u MiB); "
		    "the rest was not read",
		    PVG_BUILDLOG_KEEP_MAX >> 20);
	return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
}

/* No failed build step and no compiler error. */
static struct pvg_outcome rule_build_succeeded(const struct view *v, struct pvg_result *res)
{
	const struct pvg_buildlog *log = v->req->log;
	size_t from = res->n_problems;
	for (size_t i = 0; i < log->n_failed_kept; i++)
		pvg_problem(res, "build-log.failed-step", "fix the build failure and rebuild",
			    "the build failed: %s%s", log->failed[i],
			    i == 0 && log->n_failed > log->n_failed_kept ? " (and more)" : "");
	for (size_t i = 0; i < log->n_errors_kept; i++)
		pvg_problem(res, "build-log.compiler-error", "fix the error and rebuild",
			    "compiler error: %s%s", log->errors[i],
			    i == 0 && log->n_errors > log->n_errors_kept ? " (and more)" : "");
	return pvg_outcome_since(res, from, log->n_failed || log->n_errors ? PVG_FAIL : PVG_PASS);
}

/* hipify's count of CUDA calls it could not translate is within build.max_unsupported_calls. */
static struct pvg_outcome rule_unsupported_calls(const struct view *v, struct pvg_result *res)
{
	const struct pvg_buildlog_request *req = v->req;
	size_t from = res->n_problems;
	if (req->log->unsupported_calls <= req->max_unsupported_calls)
		return pvg_outcome_since(res, from, PVG_PASS);
	pvg_problem(res, "build-log.unsupported-calls",
		    "replace the CUDA calls hipify cannot translate (it lists them after the count), "
		    "or raise build.max_unsupported_calls deliberately",
		    "hipify reported %ld unsupported CUDA function calls (allowed: %ld)",
		    req->log->unsupported_calls, req->max_unsupported_calls);
	return pvg_outcome_since(res, from, PVG_FAIL);
}

/* Every link step of the log was followed. */
static struct pvg_outcome rule_links_read_whole(const struct view *v, struct pvg_result *res)
{
	size_t from = res->n_problems;
	if (!v->g->truncated)
		return pvg_outcome_since(res, from, PVG_PASS);
	pvg_problem(res, "build-log.too-large", "split the log, or keep only this build's output in it",
		    "the build log holds more link steps than provgate follows (%u, %u inputs in "
		    "all); the rest was not read",
		    PVG_LINKGRAPH_LINKS_MAX, PVG_LINKGRAPH_INPUTS_MAX);
	return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
}

/* What the log shows of artifact i's link. */
enum link_state {
	LINK_NO_FILE,    /* no build file configured: nothing to look for */
	LINK_NOT_NEEDED, /* not relinked, and no changed source goes into it (several artifacts) */
	LINK_MISSING,    /* not relinked by this build */
	LINK_FOUND,
};

static enum link_state art_link_state(const struct view *v, size_t i)
{
	const struct pvg_buildlog_artifact *a = &v->arts[i];
	if (!a->file)
		return LINK_NO_FILE;
	if (art_link_line(v, i))
		return LINK_FOUND;
	/* an incremental build relinks only what changed: an artifact that no changed source
	 * goes into need not be relinked (each changed source must still be linked into a
	 * configured artifact relinked after it, by the per-file rules) */
	if (v->multi && v->any_linked && !globs_name_a_change(v->req, a))
		return LINK_NOT_NEEDED;
	return LINK_MISSING;
}

/* Each configured artifact has a build file and a link step in the log. */
static struct pvg_outcome rule_artifacts_linked(const struct view *v, struct pvg_result *res)
{
	size_t from = res->n_problems;
	enum pvg_status st = PVG_PASS;
	if (v->n_arts == 0) {
		pvg_problem(res, "build-log.not-configured", "set build.artifact",
			    "build.artifact is not set: the link step cannot be found");
		st = PVG_UNVERIFIABLE;
	}
	for (size_t i = 0; i < v->n_arts; i++) {
		char lb[160];
		const char *al = art_label(v, (long)i, lb, sizeof(lb));
		switch (art_link_state(v, i)) {
		case LINK_NO_FILE:
			pvg_problem(res, "build-log.not-configured", "set the artifact's build file",
				    "%sno build file is set: the link step cannot be found", al);
			st = pvg_status_worst(st, PVG_UNVERIFIABLE);
			break;
		case LINK_MISSING:
			pvg_problem(res, "build-log.no-link",
				    "rebuild (the artifact was not relinked by this build; \"ninja: no "
				    "work to do\" means nothing changed), with a verbose log",
				    "%sthe log has no link step producing %s", al, v->arts[i].file);
			st = PVG_FAIL;
			break;
		case LINK_NOT_NEEDED:
		case LINK_FOUND:
			break;
		}
	}
	return pvg_outcome_since(res, from, st);
}

/* Gate 1's rules over the whole log, in the order their problems are listed; the rules over
 * each changed source follow (rule_changed_source). */
static const struct log_rule {
	const char *name;
	struct pvg_outcome (*check)(const struct view *, struct pvg_result *);
} log_rules[] = {
	{ "read-whole",        rule_log_read_whole },    /* build-log.too-large */
	{ "build-succeeded",   rule_build_succeeded },   /* .failed-step, .compiler-error */
	{ "unsupported-calls", rule_unsupported_calls }, /* within build.max_unsupported_calls */
	{ "links-read-whole",  rule_links_read_whole },  /* .too-large */
	{ "artifacts-linked",  rule_artifacts_linked },  /* .not-configured, .no-link */
};

/* ---- the rules over each changed source ---------------------------------------------------- */

/* A changed source reached HIP: hipify ran on its current content, or it is HIP already (or
 * the arch is CUDA's: nothing to hipify). */
static struct pvg_outcome rule_hipified(const struct view *v, const char *rel, bool header,
					const struct pvg_hipify_line *h, const char *dst_rel,
					cJSON *fe, struct pvg_result *res)
{
	const struct pvg_buildlog_request *req = v->req;
	size_t from = res->n_problems;
	if (req->cuda || (!h && !is_cuda_source(rel)))
		return pvg_outcome_since(res, from, PVG_PASS);
	if (h) {
		hipify_json(fe, h);
		if (req->counts && h->status != PVG_HIPIFY_IGNORED)
			req->counts->hipified++;
		return pvg_outcome_since(res, from, check_hipify(req, rel, h, dst_rel, res));
	}
	_cleanup_free_ char *native = hip_native(req, rel, header);
	if (native) {
		/* HIP source already: compiled as it is, nothing to hipify */
		pvg_json_add_str(fe, "hip_native", native);
		if (req->counts)
			req->counts->hip_native++;
		return pvg_outcome_since(res, from, PVG_PASS);
	}
	pvg_problem(res, "build-log.not-hipified",
		    "rebuild so that hipify runs on the changed file (hipify output must be in the "
		    "log); a .cu that is HIP already is compiled with -x hip, or named in "
		    "build.hip_sources",
		    "changed %s has no hipify line in the log", rel);
	return pvg_outcome_since(res, from, PVG_FAIL);
}

/* The oldest of the artifacts a source went into (placed: their bits; 0: not known, all of
 * them) whose build time is known, or NULL. */
static const struct pvg_buildlog_artifact *oldest_artifact(const struct view *v, uint64_t placed)
{
	const struct pvg_buildlog_artifact *oldest = NULL;
	for (size_t k = 0; k < v->n_arts; k++) {
		const struct pvg_buildlog_artifact *a = &v->arts[k];
		if (placed && k < 64 && !(placed & (UINT64_C(1) << k)))
			continue;
		if ((a->mtime.tv_sec || a->mtime.tv_nsec) &&
		    (!oldest || a->mtime.tv_sec < oldest->mtime.tv_sec ||
		     (a->mtime.tv_sec == oldest->mtime.tv_sec &&
		      a->mtime.tv_nsec < oldest->mtime.tv_nsec)))
			oldest = a;
	}
	return oldest;
}

/* A source edited after the link is not in the artifact, whatever the log says. */
static struct pvg_outcome rule_source_not_newer(const struct view *v, const char *rel,
						uint64_t placed, struct pvg_result *res)
{
	size_t from = res->n_problems;
	const struct pvg_buildlog_artifact *oldest = oldest_artifact(v, placed);
	struct stat sst;
	_cleanup_free_ char *src = v->req->workdir ? pvg_path_join(v->req->workdir, rel) : NULL;
	int64_t art_ns = oldest ? (int64_t)oldest->mtime.tv_sec * 1000000000 + oldest->mtime.tv_nsec
				: 0;
	if (!src || !art_ns || stat(src, &sst) != 0 || mtime_ns(&sst) <= art_ns)
		return pvg_outcome_since(res, from, PVG_PASS);
	char a[48], b[48], lb[160];
	pvg_format_time(sst.st_mtim.tv_sec, -1, a, sizeof(a));
	pvg_format_time(oldest->mtime.tv_sec, -1, b, sizeof(b));
	pvg_problem(res, "build-log.source-newer", "rebuild: the artifact was built before the last edit",
		    "%schanged %s was modified (%s) after the artifact was built (%s)",
		    art_label(v, oldest - v->arts, lb, sizeof(lb)), rel, a, b);
	return pvg_outcome_since(res, from, PVG_FAIL);
}

/* One changed source: hipified (or HIP already), compiled for arch and linked after that (a
 * translation unit), its includers recompiled and relinked (a header), and not edited since
 * the artifact was built. Adds its evidence to files. */
static struct pvg_outcome rule_changed_source(const struct view *v, const char *rel,
					      cJSON *files, struct pvg_result *res)
{
	const struct pvg_buildlog_request *req = v->req;
	size_t from = res->n_problems;
	cJSON *fe = cJSON_CreateObject();
	cJSON_AddItemToArray(files, fe);
	pvg_json_add_str(fe, "path", rel);
	bool header = is_header(rel), unit = !header && is_unit(rel);
	pvg_json_add_str(fe, "kind", header ? "header" : unit ? "translation-unit" : "other");
	const struct pvg_hipify_line *h = pvg_buildlog_find_hipify(req->log, rel);
	_cleanup_free_ char *dst_rel = h && h->status != PVG_HIPIFY_IGNORED ? hipified_rel(h, rel)
									    : NULL;
	enum pvg_status st =
		pvg_outcome_into(res, rule_hipified(v, rel, header, h, dst_rel, fe, res));
	uint64_t placed = 0;
	if (header) {
		st = pvg_status_worst(st, check_header(v, rel, dst_rel, h ? h->lineno : 0, fe, res));
	} else if (unit) {
		const char *name = rel;
		if (!req->cuda && h && h->status != PVG_HIPIFY_IGNORED)
			name = dst_rel ? dst_rel : h->dst;
		st = pvg_status_worst(st, check_compile(v, rel, name, fe, res, &placed));
	}
	st = pvg_status_worst(st,
			      pvg_outcome_into(res, rule_source_not_newer(v, rel, placed, res)));
	return pvg_outcome_since(res, from, st);
}

/* ---- evidence of the log -------------------------------------------------------------------- */

static void log_json(const struct pvg_buildlog *log, cJSON *ev)
{
	pvg_json_add_u64(ev, "lines", log->n_lines);
	pvg_json_add_u64(ev, "hipify_lines", log->n_hipify);
	pvg_json_add_u64(ev, "command_lines", log->n_commands);
	if (log->unsupported_calls >= 0)
		pvg_json_add_int(ev, "unsupported_calls", (int)log->unsupported_calls);
	if (log->kernel_launches >= 0)
		pvg_json_add_int(ev, "replaced_kernel_launches", (int)log->kernel_launches);
	if (log->ninja_total >= 0) {
		cJSON *nj = cJSON_AddObjectToObject(ev, "ninja");
		pvg_json_add_int(nj, "last_step", (int)log->ninja_step);
		pvg_json_add_int(nj, "total", (int)log->ninja_total);
	}
	if (log->n_overlong)
		pvg_json_add_u64(ev, "overlong_lines", log->n_overlong);
	if (log->n_binary)
		pvg_json_add_u64(ev, "binary_lines", log->n_binary);
}

/* evidence.link_line (the first artifact's), and with several artifacts evidence.artifacts[]
 * (name, file, arch, and its link line or why none is needed). */
static void artifacts_link_json(const struct view *v, cJSON *ev)
{
	cJSON *arts_ev = v->multi ? cJSON_AddArrayToObject(ev, "artifacts") : NULL;
	for (size_t i = 0; i < v->n_arts; i++) {
		const struct pvg_buildlog_artifact *a = &v->arts[i];
		cJSON *ae = NULL;
		if (arts_ev) {
			ae = cJSON_CreateObject();
			cJSON_AddItemToArray(arts_ev, ae);
			pvg_json_add_str(ae, "name", a->name);
			pvg_json_add_str(ae, "file", a->file);
			pvg_json_add_str(ae, "arch", a->arch);
		}
		enum link_state ls = art_link_state(v, i);
		if (ls == LINK_NOT_NEEDED && ae) {
			pvg_json_add_bool(ae, "relinked", false);
			pvg_json_add_str(ae, "why", "not relinked by this build; no changed source goes "
						    "into it");
		} else if (ls == LINK_FOUND) {
			if (i == 0)
				pvg_json_add_u64(ev, "link_line", art_link_line(v, i));
			if (ae)
				pvg_json_add_u64(ae, "link_line", art_link_line(v, i));
		}
	}
}

/* ---- gate 1's decision over a parsed log ------------------------------------------------------ */

enum pvg_status pvg_buildlog_check(const struct pvg_buildlog_request *req, struct pvg_result *res)
{
	log_json(req->log, res->evidence);
	/* the artifacts: the request's list, or the single one */
	struct pvg_buildlog_artifact single = {
		.name = req->artifact_name, .build = req->artifact_name, .file = req->artifact_name,
		.arch = req->arch, .mtime = req->artifact_mtime,
	};
	struct view v = {
		.req = req, .g = req->graph,
		.arts = req->n_arts ? req->arts : &single,
		.n_arts = req->n_arts ? req->n_arts : req->artifact_name ? 1 : 0,
		.multi = req->n_arts > 1,
	};
	enum pvg_status not_empty = pvg_outcome_into(res, rule_log_not_empty(&v, res));
	if (not_empty != PVG_PASS)
		return not_empty;
	struct pvg_linkgraph own_graph;
	if (!v.g) {
		pvg_linkgraph_build(req->log, &own_graph);
		v.g = &own_graph;
	}
	for (size_t i = 0; i < v.n_arts; i++)
		v.any_linked |= v.arts[i].file && art_link_line(&v, i) != 0;

	enum pvg_status st = PVG_PASS;
	for (size_t k = 0; k < ARRAY_SIZE(log_rules); k++)
		st = pvg_status_worst(st, pvg_outcome_into(res, log_rules[k].check(&v, res)));
	artifacts_link_json(&v, res->evidence);
	cJSON *files = cJSON_AddArrayToObject(res->evidence, "files");
	for (size_t i = 0; i < req->n_changed; i++)
		st = pvg_status_worst(st, pvg_outcome_into(res, rule_changed_source(
						      &v, req->changed[i], files, res)));
	if (v.g == &own_graph)
		pvg_linkgraph_done(&own_graph);
	return st;
}

/* ---- the gate ------------------------------------------------------------------------------- */

#define MAX_ROOTS 16

static bool ts_before(struct timespec a, struct timespec b)
{
	return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

static void add_root(struct pvg_strv *roots, const char *dir)
{
	if (!dir || dir[0] != '/' || roots->n >= MAX_ROOTS)
		return;
	pvg_strv_add_unique(roots, dir);
}

static bool has_file(const char *dir, const char *name)
{
	_cleanup_free_ char *p = pvg_path_join(dir, name);
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Ancestors of an absolute path that hold ninja's logs (the root of a ninja build). */
static void ninja_root_above(struct pvg_strv *roots, struct pvg_strv *tried, const char *path)
{
	if (!path || path[0] != '/' || tried->n >= 512)
		return;
	_cleanup_free_ char *d = pvg_strdup(path);
	for (int depth = 0; depth < 32; depth++) {
		char *slash = strrchr(d, '/');
		if (!slash || slash == d)
			return;
		*slash = '\0';
		bool seen = false;
		for (size_t i = 0; i < tried->n && !seen; i++)
			seen = strcmp(tried->v[i], d) == 0;
		if (seen)
			return; /* this folder and those above were looked at */
		pvg_strv_push(tried, pvg_strdup(d));
		if (has_file(d, ".ninja_log") || has_file(d, ".ninja_deps"))
			add_root(roots, d);
		if (tried->n >= 512)
			return;
	}
}

void pvg_build_roots_of_artifact(const struct pvg_linkgraph *g, const char *artifact,
				 struct pvg_strv *roots)
{
	if (!artifact || artifact[0] != '/')
		return;
	const char *base = pvg_basename(artifact);
	for (size_t i = 0; i < g->n_links; i++) {
		const char *o = g->links[i].output;
		if (!o || o[0] == '/' || g->links[i].dir || strcmp(pvg_basename(o), base) != 0)
			continue;
		/* the folder of "o" taken from the artifact's path: "_C.so" in /b/_C.so is /b;
		 * "lib/_C.so" must end the artifact's path too */
		size_t ol = strlen(o), al = strlen(artifact);
		if (al <= ol + 1 || strcmp(artifact + al - ol, o) != 0 || artifact[al - ol - 1] != '/')
			continue;
		_cleanup_free_ char *d = pvg_strdup(artifact);
		d[al - ol - 1] = '\0';
		if (d[0] && (has_file(d, ".ninja_log") || has_file(d, ".ninja_deps")))
			add_root(roots, d);
	}
}

/* The build folders the log names: "Entering directory" lines, "cd DIR &&" of its commands,
 * and the ninja roots above the absolute paths of its hipify lines and commands. */
void pvg_build_roots(const struct pvg_buildlog *log, const struct pvg_linkgraph *g,
			struct pvg_strv *roots)
{
	for (size_t i = 0; i < log->dirs.n; i++)
		add_root(roots, log->dirs.v[i]);
	for (size_t i = 0; i < g->n_compiles; i++)
		add_root(roots, g->compiles[i].dir);
	for (size_t i = 0; i < g->n_links; i++)
		add_root(roots, g->links[i].dir);
	struct pvg_strv tried = { 0 };
	for (size_t i = 0; i < log->n_hipify && i < 64; i++) {
		ninja_root_above(roots, &tried, log->hipify[i].src);
		ninja_root_above(roots, &tried, log->hipify[i].dst);
	}
	for (size_t i = 0; i < g->n_compiles && i < 256; i++)
		ninja_root_above(roots, &tried, g->compiles[i].object);
	for (size_t i = 0; i < g->n_links; i++)
		ninja_root_above(roots, &tried, g->links[i].output);
	pvg_strv_clear(&tried);
}

/* ninja's own record of output, where its log is in dir: when the step started. */
static void ninja_log_json(const char *dir, const char *output, cJSON *ae)
{
	_cleanup_free_ char *nl = pvg_path_join(dir, ".ninja_log");
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int64_t nj = 0;
	if (pvg_read_file(nl, 64u << 20, &text, &len) == 0 &&
	    pvg_ninja_log_find(text, len, output, &nj) == 1) {
		char nt[48];
		pvg_format_time(nj / 1000000000, nj % 1000000000, nt, sizeof(nt));
		pvg_json_add_str(ae, "ninja_log_start", nt);
	}
}

/* The artifact is newer than the log: is it a copy of the log's own link output, still in the
 * build tree the log names, with the same bytes and built no later than the log? 1 yes (with
 * *from and *built set), 0 no (*why_not says what was found, or NULL when nothing was). */
static int bound_by_content(struct pvg_ctx *ctx, const struct pvg_linkgraph *g,
			    const struct pvg_strv *roots, const char *build, const char *file,
			    const struct stat *log_st, const struct stat *art_st, char **from,
			    struct timespec *built, char **why_not, cJSON *ae)
{
	*from = *why_not = NULL;
	const struct pvg_link_step *l = file ? pvg_linkgraph_output(g, file) : NULL;
	if (!l)
		return 0;
	const char *dirs[MAX_ROOTS + 2];
	size_t nd = 0;
	if (l->output[0] == '/') {
		dirs[nd++] = NULL;
	} else {
		if (l->dir)
			dirs[nd++] = l->dir;
		for (size_t i = 0; i < roots->n && nd < ARRAY_SIZE(dirs); i++)
			dirs[nd++] = roots->v[i];
	}
	for (size_t k = 0; k < nd; k++) {
		_cleanup_free_ char *cand = dirs[k] ? pvg_path_join(dirs[k], l->output)
						    : pvg_strdup(l->output);
		struct stat st;
		if (stat(cand, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (st.st_dev == art_st->st_dev && st.st_ino == art_st->st_ino) {
			/* the configured file is the log's own output, changed after the log */
			free(*why_not);
			*why_not = pvg_asprintf("it is the build tree's own %s, written after the log: "
						"the log is of an earlier build (or the file was rebuilt "
						"or touched since)",
						cand);
			continue;
		}
		char bt[48], lt[48];
		pvg_format_time(st.st_mtim.tv_sec, st.st_mtim.tv_nsec, bt, sizeof(bt));
		pvg_format_time(log_st->st_mtim.tv_sec, log_st->st_mtim.tv_nsec, lt, sizeof(lt));
		if (dirs[k] && l->output[0] != '/' && ae)
			ninja_log_json(dirs[k], l->output, ae);
		if (ts_before(log_st->st_mtim, st.st_mtim)) {
			free(*why_not);
			*why_not = pvg_asprintf("the build tree's %s (modified %s) is newer than the "
						"log (modified %s) too: a later build",
						cand, bt, lt);
			continue;
		}
		const char *paths[2] = { cand, build };
		const struct pvg_file_id *ids[2] = { NULL, NULL };
		if (pvg_ctx_hash(ctx, paths, 2, ids) < 0 || !ids[0] || !ids[1] || ids[0]->err ||
		    ids[1]->err) {
			free(*why_not);
			*why_not = pvg_asprintf("the build tree's %s could not be compared with it",
						cand);
			continue;
		}
		if (memcmp(ids[0]->sha256, ids[1]->sha256, 32) != 0) {
			free(*why_not);
			*why_not = pvg_asprintf("the build tree's %s (modified %s) holds other bytes "
						"(sha256 %.12s…, the artifact %.12s…)",
						cand, bt, ids[0]->hex, ids[1]->hex);
			continue;
		}
		*from = TAKE_PTR(cand);
		*built = st.st_mtim;
		if (ae)
			pvg_json_add_str(ae, "sha256", ids[1]->hex);
		free(*why_not);
		*why_not = NULL;
		return 1;
	}
	return 0;
}

/* How long a link may run after its command line was logged: a script under `set -x`, or
 * make, prints the command and then runs it, so the log's last change precedes the file the
 * link writes by the link's duration. A longer gap is a later build. */
#define LINK_WINDOW_S 600

/* "build/x.so" and "/b/ext/build/x.so": "/b/ext", the folder a relative output of the
 * configured artifact was written from; NULL when the artifact's path does not end so. */
static char *base_of(const char *artifact, const char *output)
{
	while (strncmp(output, "./", 2) == 0)
		output += 2;
	size_t a = strlen(artifact), o = strlen(output);
	if (output[0] == '/' || o == 0 || a <= o + 1 || artifact[a - o - 1] != '/' ||
	    strcmp(artifact + a - o, output) != 0)
		return NULL;
	return a - o - 1 == 0 ? pvg_strdup("/") : pvg_asprintf("%.*s", (int)(a - o - 1), artifact);
}

static double seconds_between(struct timespec a, struct timespec b)
{
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* The link's inputs, looked for in dir: how many are there, and the first newer than the log
 * (a later compile is a later build), or NULL. */
struct link_inputs {
	size_t checked;
	const char *newer;
	struct timespec newer_t;
};

static struct link_inputs link_inputs_times(const struct pvg_link_step *l, const char *dir,
					    const struct stat *log_st)
{
	struct link_inputs r = { 0 };
	for (size_t i = 0; i < l->n_inputs && !r.newer; i++) {
		const char *in = l->inputs[i];
		if (in[0] == '-')
			continue;
		_cleanup_free_ char *ip = in[0] == '/' || !dir ? pvg_strdup(in)
							       : pvg_path_join(dir, in);
		struct stat ist;
		if (stat(ip, &ist) < 0)
			continue;
		r.checked++;
		if (ts_before(log_st->st_mtim, ist.st_mtim)) {
			r.newer = in;
			r.newer_t = ist.st_mtim;
		}
	}
	return r;
}

/* The folders a relative link output may have been written in (NULL: it is absolute): its
 * "cd DIR &&", the build folders, the artifact's own build folder, the log's folder. */
static size_t last_link_dirs(const struct pvg_link_step *l, const struct pvg_strv *roots,
			     const char *art_base, const char *log_dir, const char **dirs)
{
	size_t nd = 0;
	if (l->output[0] == '/') {
		dirs[nd++] = NULL;
		return nd;
	}
	if (l->dir && l->dir[0] == '/')
		dirs[nd++] = l->dir;
	for (size_t i = 0; i < roots->n && nd < MAX_ROOTS + 1; i++)
		dirs[nd++] = roots->v[i];
	if (art_base)
		dirs[nd++] = art_base;
	if (log_dir)
		dirs[nd++] = log_dir;
	return nd;
}

static void last_link_json(cJSON *ae, const char *cand, const struct pvg_link_step *l,
			   bool same_file, double gap, size_t checked, const char *hex)
{
	cJSON *j = cJSON_AddObjectToObject(ae, "written_by_last_link");
	pvg_json_add_str(j, "output", cand);
	pvg_json_add_u64(j, "link_line", l->lineno);
	pvg_json_add_str(j, "bound_by", same_file ? "same file" : "same bytes");
	char gs[32];
	snprintf(gs, sizeof(gs), "%.3f", gap);
	pvg_json_add_str(j, "seconds_after_log", gs);
	pvg_json_add_u64(j, "inputs_not_newer_than_log", checked);
	if (!same_file)
		pvg_json_add_str(j, "sha256", hex);
}

/* One candidate cand for the file the log's last link wrote (its inputs looked for in dir):
 * 1 it is the artifact (same file or bytes), written within LINK_WINDOW_S after the log, its
 * inputs not newer than the log; 0 not (*why_not says why). */
static int last_link_candidate(struct pvg_ctx *ctx, const struct pvg_link_step *l,
			       const char *cand, const struct stat *st, const char *dir,
			       const char *build, const struct stat *log_st,
			       const struct stat *art_st, char **why_not, cJSON *ae)
{
	char ct[48];
	pvg_format_time(st->st_mtim.tv_sec, st->st_mtim.tv_nsec, ct, sizeof(ct));
	if (!ts_before(log_st->st_mtim, st->st_mtim)) {
		*why_not = pvg_asprintf("the file its last line links, %s (modified %s), is not newer "
					"than the log",
					cand, ct);
		return 0;
	}
	double gap = seconds_between(log_st->st_mtim, st->st_mtim);
	if (gap > LINK_WINDOW_S) {
		*why_not = pvg_asprintf("the log ends with the link of %s, but that file was written "
					"%.0f s after the log's last line, longer than a link runs "
					"(%d s): a later build",
					cand, gap, LINK_WINDOW_S);
		return 0;
	}
	bool same_file = st->st_dev == art_st->st_dev && st->st_ino == art_st->st_ino;
	const struct pvg_file_id *ids[2] = { NULL, NULL };
	if (!same_file) {
		const char *paths[2] = { cand, build };
		if (pvg_ctx_hash(ctx, paths, 2, ids) < 0 || !ids[0] || !ids[1] || ids[0]->err ||
		    ids[1]->err) {
			*why_not = pvg_asprintf("the file its last line links, %s, could not be "
						"compared with it",
						cand);
			return 0;
		}
		if (memcmp(ids[0]->sha256, ids[1]->sha256, 32) != 0) {
			*why_not = pvg_asprintf("the file its last line links, %s (modified %s), holds "
						"other bytes (sha256 %.12s…, the artifact %.12s…)",
						cand, ct, ids[0]->hex, ids[1]->hex);
			return 0;
		}
	}
	/* the link's inputs were written before its command was logged */
	struct link_inputs in = link_inputs_times(l, dir, log_st);
	if (in.checked == 0) {
		*why_not = pvg_asprintf("the log ends with the link of %s, but none of the link's "
					"inputs is there to show it was compiled before the log's last "
					"line",
					cand);
		return 0;
	}
	if (in.newer) {
		char it[48];
		pvg_format_time(in.newer_t.tv_sec, in.newer_t.tv_nsec, it, sizeof(it));
		*why_not = pvg_asprintf("the log ends with the link of %s, but its input %s (modified "
					"%s) is newer than the log: a later build recompiled it",
					cand, in.newer, it);
		return 0;
	}
	if (ae)
		last_link_json(ae, cand, l, same_file, gap, in.checked,
			       same_file ? NULL : ids[1]->hex);
	return 1;
}

/* The artifact is newer than the log: was it written by the link command the log ends
 * with? Such a log (set -x | tee, make) prints the command before the link runs. The
 * output the link line names, in the folder the log shows it ran in (its "cd DIR &&", the
 * folders the log names, the artifact's own build folder when its path ends with the output,
 * the log's folder), must be the configured artifact (same file) or hold its bytes; it must
 * be written after the log's last line and within LINK_WINDOW_S of it; and the link's inputs
 * must be there, none newer than the log (a later compile is a later build). 1 bound
 * (*from set), 0 not (*why_not says why, NULL when the log does not end with it). */
static int bound_by_last_link(struct pvg_ctx *ctx, const struct pvg_buildlog *log,
			      const struct pvg_linkgraph *g, const struct pvg_strv *roots,
			      const char *log_path, const char *build, const char *file,
			      const struct stat *log_st, const struct stat *art_st, char **from,
			      char **why_not, cJSON *ae)
{
	*from = *why_not = NULL;
	const struct pvg_link_step *l = file ? pvg_linkgraph_output(g, file) : NULL;
	if (!l || log->n_commands == 0 || l->command != log->n_commands - 1 || !l->inputs_known)
		return 0;
	_cleanup_free_ char *art_base = base_of(build, l->output);
	_cleanup_free_ char *log_dir = pvg_strdup(log_path);
	char *slash = strrchr(log_dir, '/');
	if (slash)
		slash[slash == log_dir] = '\0'; /* "/build.log" -> "/" */
	const char *dirs[MAX_ROOTS + 4];
	size_t nd = last_link_dirs(l, roots, art_base, slash && log_dir[0] == '/' ? log_dir : NULL,
				   dirs);
	for (size_t k = 0; k < nd; k++) {
		_cleanup_free_ char *cand = dirs[k] ? pvg_path_join(dirs[k], l->output)
						    : pvg_strdup(l->output);
		struct stat st;
		if (stat(cand, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		free(*why_not);
		*why_not = NULL;
		if (last_link_candidate(ctx, l, cand, &st, dirs[k], build, log_st, art_st, why_not,
					ae) == 1) {
			*from = TAKE_PTR(cand);
			return 1;
		}
	}
	if (!*why_not && nd)
		*why_not = pvg_asprintf("the log ends with the link of %s, which is in none of the "
					"folders it could have run in",
					l->output);
	return 0;
}

/* Reads ninja's deps log of the first root that has one. */
static bool load_ninja_deps(const struct pvg_strv *roots, struct pvg_ninja_deps *d, char **root,
			    cJSON *ev)
{
	for (size_t i = 0; i < roots->n; i++) {
		_cleanup_free_ char *p = pvg_path_join(roots->v[i], ".ninja_deps");
		_cleanup_free_ char *bytes = NULL;
		size_t len = 0;
		int r = pvg_read_file(p, 256u << 20, &bytes, &len);
		if (r == -ENOENT)
			continue;
		cJSON *j = cJSON_AddObjectToObject(ev, "ninja_deps");
		pvg_json_add_str(j, "path", p);
		if (r < 0 || pvg_ninja_deps_parse((const uint8_t *)bytes, len, d) < 0) {
			pvg_json_add_str(j, "error", r < 0 ? strerror(-r) : "not a ninja deps log");
			continue;
		}
		pvg_json_add_u64(j, "paths", d->n_paths);
		pvg_json_add_u64(j, "records", d->n_recs);
		if (d->damaged)
			pvg_json_add_bool(j, "damaged", true);
		*root = pvg_strdup(roots->v[i]);
		return true;
	}
	return false;
}

/* ---- the gate: reading the files, then the decision -------------------------------------------- */

/* What the gate reads for the decision: the log with its link graph and the build folders it
 * names, the artifacts and their times, ninja's deps log, the changed compiled sources. */
struct build_facts {
	struct stat log_st;
	struct stat *art_st; /* one per artifact */
	struct pvg_buildlog log;
	struct pvg_linkgraph graph;
	struct pvg_strv roots;
	struct pvg_buildlog_artifact *barts; /* mtime: what sources are compared with */
	char **copied;       /* the log's own output an artifact is a copy of, or NULL */
	bool *by_last_link;  /* written by the link command the log ends with */
	struct pvg_ninja_deps deps;
	bool have_deps;
	char *deps_root;
	const struct pvg_scope *scope;
	const char **changed;
	size_t n_changed;
};

static void build_facts_release(const struct pvg_ctx *ctx, struct build_facts *f)
{
	if (f->have_deps)
		pvg_ninja_deps_done(&f->deps);
	free(f->deps_root);
	for (size_t i = 0; i < ctx->n_arts; i++)
		free(f->copied[i]);
	free(f->copied);
	free(f->by_last_link);
	free(f->barts);
	free(f->art_st);
	free(f->changed);
	pvg_strv_clear(&f->roots);
	pvg_linkgraph_done(&f->graph);
	pvg_buildlog_done(&f->log);
}

/* build.log, every artifact's build file and every arch are set. */
static struct pvg_outcome rule_configured(const struct pvg_ctx *ctx, struct pvg_result *res)
{
	const struct pvg_config *cfg = ctx->cfg;
	size_t from = res->n_problems;
	bool all_arch = true, all_build = ctx->n_arts > 0;
	for (size_t i = 0; i < ctx->n_arts; i++) {
		all_arch &= pvg_artifact_arch(cfg, &ctx->arts[i].a) != NULL;
		all_build &= ctx->arts[i].a.build != NULL;
	}
	if (cfg->build.log && all_build && all_arch)
		return pvg_outcome_since(res, from, PVG_PASS);
	const char *what = !cfg->build.log ? "build.log"
			   : !all_build     ? (cfg->n_artifacts ? "an artifact's build"
							       : "build.artifact")
					    : "arch";
	pvg_summary(res, "%s is not configured", what);
	pvg_problem(res, "build-log.not-configured",
		    "set build.log (the build's output), build.artifact and arch",
		    "no build log to check: %s is not set", what);
	return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
}

/* Every artifact's build file is there (missing: fail; unreadable: unverifiable). */
static struct pvg_outcome rule_artifacts_built(const struct pvg_ctx *ctx, struct stat *art_st,
					       struct pvg_result *res)
{
	size_t from = res->n_problems;
	enum pvg_status st = PVG_PASS;
	for (size_t i = 0; i < ctx->n_arts; i++) {
		const char *build = ctx->arts[i].a.build;
		if (stat(build, &art_st[i]) == 0)
			continue;
		int e = errno;
		char lb[160];
		const char *al = pvg_ctx_art_label(ctx, i, lb, sizeof(lb));
		if (res->n_problems == 0)
			pvg_summary(res, "%sbuild artifact %s: %s", al, build, strerror(e));
		pvg_problem(res, "build-log.artifact-missing", "build the artifact, or fix build.artifact",
			    "%sbuild artifact %s: %s", al, build, strerror(e));
		st = pvg_status_worst(st, e == ENOENT ? PVG_FAIL : PVG_UNVERIFIABLE);
	}
	return pvg_outcome_since(res, from, st);
}

/* The build log is there (its time is the one artifacts are compared with). */
static struct pvg_outcome rule_log_there(const struct pvg_ctx *ctx, struct stat *log_st,
					 struct pvg_result *res)
{
	const char *path = ctx->cfg->build.log;
	size_t from = res->n_problems;
	if (stat(path, log_st) == 0)
		return pvg_outcome_since(res, from, PVG_PASS);
	int e = errno;
	pvg_summary(res, "cannot read the build log");
	pvg_problem(res, "build-log.unreadable", e == ENOENT ? "tee the build's output into build.log"
							    : NULL,
		    "build log %s: %s", path, strerror(e));
	return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
}

/* The build log can be read: parses it, with its link graph and the build folders it names. */
static struct pvg_outcome rule_log_readable(const struct pvg_ctx *ctx, struct build_facts *f,
					    struct pvg_result *res)
{
	const char *path = ctx->cfg->build.log;
	size_t from = res->n_problems;
	int r = pvg_buildlog_read_file(&f->log, path);
	if (r < 0) {
		pvg_summary(res, "cannot read the build log: %s", strerror(-r));
		pvg_problem(res, "build-log.unreadable", NULL, "build log %s: %s", path,
			    strerror(-r));
		return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
	}
	pvg_linkgraph_build(&f->log, &f->graph);
	pvg_build_roots(&f->log, &f->graph, &f->roots);
	return pvg_outcome_since(res, from, PVG_PASS);
}

static void log_times_json(const struct build_facts *f, cJSON *ev)
{
	char lt[48], at[48];
	pvg_format_time(f->log_st.st_mtim.tv_sec, f->log_st.st_mtim.tv_nsec, lt, sizeof(lt));
	pvg_format_time(f->art_st[0].st_mtim.tv_sec, f->art_st[0].st_mtim.tv_nsec, at, sizeof(at));
	cJSON_AddStringToObject(ev, "log_mtime", lt);
	cJSON_AddStringToObject(ev, "artifact_mtime", at);
}

static void roots_json(const struct pvg_strv *roots, cJSON *ev)
{
	if (!roots->n)
		return;
	cJSON *rj = cJSON_AddArrayToObject(ev, "build_roots");
	for (size_t i = 0; i < roots->n; i++)
		cJSON_AddItemToArray(rj, cJSON_CreateString(roots->v[i]));
}

/* Artifact i, newer than the log: a copy of the log's own output (its build time is then
 * what sources are compared with), or written by the link the log ends with (the log's time
 * is). Returns whether it is bound to the log; else *why_not says why not (NULL: nothing was
 * found to compare). */
static bool bind_newer_artifact(struct pvg_ctx *ctx, struct build_facts *f, size_t i, cJSON *ae,
				cJSON *ev, char **why_not)
{
	const char *build = ctx->arts[i].a.build, *file = f->barts[i].file;
	struct timespec built;
	if (bound_by_content(ctx, &f->graph, &f->roots, build, file, &f->log_st, &f->art_st[i],
			     &f->copied[i], &built, why_not, ae) == 1) {
		char bt[48];
		pvg_format_time(built.tv_sec, built.tv_nsec, bt, sizeof(bt));
		pvg_json_add_str(ae, "copied_from", f->copied[i]);
		pvg_json_add_str(ae, "built", bt);
		if (i == 0)
			pvg_json_add_str(ev, "copied_from", f->copied[i]);
		f->barts[i].mtime = built;
		return true;
	}
	_cleanup_free_ char *linked = NULL, *why_not_link = NULL;
	if (bound_by_last_link(ctx, &f->log, &f->graph, &f->roots, ctx->cfg->build.log, build, file,
			       &f->log_st, &f->art_st[i], &linked, &why_not_link, ae) == 1) {
		if (i == 0)
			pvg_json_add_str(ev, "written_by_last_link", linked);
		f->by_last_link[i] = true;
		/* every compile the log shows ran before its last line: sources are compared
		 * with that */
		f->barts[i].mtime = f->log_st.st_mtim;
		return true;
	}
	if (why_not_link) {
		free(*why_not);
		*why_not = TAKE_PTR(why_not_link);
	}
	return false;
}

static void problem_stale_log(const struct pvg_ctx *ctx, const struct build_facts *f, size_t i,
			      const char *why_not, struct pvg_result *res)
{
	const char *log = ctx->cfg->build.log, *build = ctx->arts[i].a.build;
	char lb[160], lt[48], amt[48];
	const char *al = pvg_ctx_art_label(ctx, i, lb, sizeof(lb));
	pvg_format_time(f->log_st.st_mtim.tv_sec, f->log_st.st_mtim.tv_nsec, lt, sizeof(lt));
	pvg_format_time(f->art_st[i].st_mtim.tv_sec, f->art_st[i].st_mtim.tv_nsec, amt, sizeof(amt));
	if (why_not) {
		pvg_problem(res, "build-log.stale-log",
			    "keep the log of the build that produced the artifact (tee it every build), "
			    "and copy with times kept (cp -p, install -p)",
			    "%sbuild log %s (modified %s) is older than the artifact %s (modified %s), "
			    "and %s",
			    al, log, lt, build, amt, why_not);
		return;
	}
	_cleanup_free_ char *where = f->roots.n ? pvg_strv_join_distinct(&f->roots, ", ")
						: pvg_strdup("none named");
	pvg_problem(res, "build-log.stale-log",
		    "keep the log of the build that produced the artifact (tee it every build); copy "
		    "the log and the artifact with their times kept (cp -p, install -p), or run "
		    "provgate where the build tree is",
		    "%sbuild log %s (modified %s) is older than the artifact %s (modified %s): either "
		    "it is the log of an earlier build, or they were copied without keeping their "
		    "times; the log's own link output of %s is not in the build tree it names (%s) "
		    "to compare bytes with",
		    al, log, lt, build, amt, f->barts[i].file, where);
}

/* The build writes its log up to and after the link step, so the log's last change can not
 * precede the artifact's: an older log belongs to an earlier build, unless the artifact is a
 * copy that lost its times, or the link the log ends with wrote it. */
static struct pvg_outcome rule_log_of_this_build(struct pvg_ctx *ctx, struct build_facts *f,
						 size_t i, cJSON *ae, struct pvg_result *res)
{
	size_t from = res->n_problems;
	if (!ts_before(f->log_st.st_mtim, f->art_st[i].st_mtim))
		return pvg_outcome_since(res, from, PVG_PASS);
	_cleanup_free_ char *why_not = NULL;
	if (bind_newer_artifact(ctx, f, i, ae, res->evidence, &why_not))
		return pvg_outcome_since(res, from, PVG_PASS);
	problem_stale_log(ctx, f, i, why_not, res);
	return pvg_outcome_since(res, from, PVG_FAIL);
}

/* evidence.artifacts[i]: name, build file and its time. */
static cJSON *artifact_time_json(cJSON *arts_ev, const struct pvg_artifact *a,
				 const struct stat *st)
{
	cJSON *ae = cJSON_CreateObject();
	cJSON_AddItemToArray(arts_ev, ae);
	pvg_json_add_str(ae, "name", a->name);
	pvg_json_add_str(ae, "build", a->build);
	char amt[48];
	pvg_format_time(st->st_mtim.tv_sec, st->st_mtim.tv_nsec, amt, sizeof(amt));
	pvg_json_add_str(ae, "mtime", amt);
	return ae;
}

/* The artifacts as the decision sees them, each checked against the log's time. */
static enum pvg_status bind_artifacts(struct pvg_ctx *ctx, struct build_facts *f,
				      struct pvg_result *res)
{
	enum pvg_status st = PVG_PASS;
	cJSON *arts_ev = cJSON_CreateArray();
	for (size_t i = 0; i < ctx->n_arts; i++) {
		const struct pvg_artifact *a = &ctx->arts[i].a;
		f->barts[i] = (struct pvg_buildlog_artifact){
			.name = a->name, .build = a->build, .file = pvg_basename(a->build),
			.arch = pvg_artifact_arch(ctx->cfg, a), .compiled = &a->compiled,
			.mtime = f->art_st[i].st_mtim,
		};
		cJSON *ae = artifact_time_json(arts_ev, a, &f->art_st[i]);
		st = pvg_status_worst(
			st, pvg_outcome_into(res, rule_log_of_this_build(ctx, f, i, ae, res)));
	}
	if (ctx->n_arts > 1 || f->copied[0] || f->by_last_link[0])
		cJSON_AddItemToObject(res->evidence, "artifacts", arts_ev);
	else
		cJSON_Delete(arts_ev);
	return st;
}

/* The changed compiled sources are known (gate 2's change set); deleted ones are left out. */
static struct pvg_outcome rule_change_set_known(struct pvg_ctx *ctx, struct build_facts *f,
						struct pvg_result *res)
{
	size_t from = res->n_problems;
	int r = pvg_scope_get(ctx, &f->scope);
	const struct pvg_scope *scope = f->scope;
	if (r < 0 || !scope) {
		pvg_problem(res, "build-log.no-scope",
			    "gate 2's change set is needed to know which sources must be in the log",
			    "the changed sources are not known: %s",
			    scope && scope->msg.text ? scope->msg.text
			    : r == -ENOSYS ? "the change set is not available in this version"
					   : strerror(-r));
		return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
	}
	f->changed = pvg_xcalloc(scope->n + 1, sizeof(*f->changed));
	for (size_t i = 0; i < scope->n; i++)
		if (scope->changes[i].cls == PVG_SCOPE_COMPILED && scope->changes[i].kind != 'D')
			f->changed[f->n_changed++] = scope->changes[i].path;
	return pvg_outcome_since(res, from, PVG_PASS);
}

/* The passing summary: what was compiled for which arch, and what was relinked. */
static void summary_passed(const struct pvg_ctx *ctx, const struct build_facts *f, bool cuda,
			   const struct pvg_buildlog_counts *counts, struct pvg_result *res)
{
	_cleanup_free_ char *names = NULL;
	for (size_t i = 0; i < ctx->n_arts; i++) {
		char *n = pvg_asprintf("%s%s%s", names ? names : "", names ? ", " : "",
				       f->barts[i].file);
		free(names);
		names = n;
	}
	bool multi = ctx->n_arts > 1;
	const char *copy_note = f->copied[0] && !multi ? " (a copy of the log's own output)"
				: f->by_last_link[0] && !multi
					? " (by the link command the log ends with)"
					: "";
	if (f->n_changed == 0) {
		pvg_summary(res, "no source.compiled file changed since the baseline; the log builds "
				 "and links %s without errors%s",
			    names, copy_note);
		return;
	}
	/* each artifact's own arch: "gfx90a", or "gfx906, gfx90a" where entries differ */
	struct pvg_strv archs = { 0 };
	for (size_t i = 0; i < ctx->n_arts; i++)
		pvg_strv_add_unique(&archs, pvg_artifact_arch(ctx->cfg, &ctx->arts[i].a));
	_cleanup_free_ char *arch_list = pvg_strv_join_distinct(&archs, ", ");
	pvg_strv_clear(&archs);
	/* the counts the evidence holds (changed_hipified, changed_hip_native): a .hip or .cpp
	 * needs no hipify, and a native-HIP .cu has none */
	char how[96] = "";
	if (!cuda && counts->hip_native)
		snprintf(how, sizeof(how), " (%zu hipified, %zu HIP already)", counts->hipified,
			 counts->hip_native);
	else if (!cuda && counts->hipified)
		snprintf(how, sizeof(how), " (%zu hipified)", counts->hipified);
	pvg_summary(res, "%zu changed source%s compiled for %s%s; %s relinked%s", f->n_changed,
		    f->n_changed == 1 ? "" : "s", arch_list, how, names, copy_note);
}

/* The decision over the log (pvg_buildlog_check), with the request made of the facts. */
static enum pvg_status decide(struct pvg_ctx *ctx, struct build_facts *f, const char *arch,
			      struct pvg_buildlog_counts *counts, struct pvg_result *res)
{
	const struct pvg_config *cfg = ctx->cfg;
	struct pvg_buildlog_request req = {
		.log = &f->log,
		.changed = f->changed,
		.n_changed = f->n_changed,
		.workdir = f->scope ? f->scope->workdir : cfg->source.repo,
		.arch = arch,
		.cuda = pvg_arch_is_cuda(arch),
		.artifact_name = f->barts[0].file,
		.max_unsupported_calls = cfg->build.max_unsupported_calls,
		.artifact_mtime = f->barts[0].mtime,
		.arts = f->barts,
		.n_arts = ctx->n_arts,
		.graph = &f->graph,
		.ninja_deps = f->have_deps ? &f->deps : NULL,
		.deps_root = f->deps_root,
		.roots = (const char *const *)f->roots.v,
		.n_roots = f->roots.n,
		.hip_sources = &cfg->build.hip_sources,
		.counts = counts,
	};
	return pvg_buildlog_check(&req, res);
}

static enum pvg_status run_build_log(struct pvg_ctx *ctx, struct pvg_result *res)
{
	const struct pvg_config *cfg = ctx->cfg;
	enum pvg_status st = pvg_outcome_into(res, rule_configured(ctx, res));
	if (st != PVG_PASS)
		return st;
	const char *arch = cfg->arch ? cfg->arch : pvg_artifact_arch(cfg, &ctx->arts[0].a);
	bool cuda = pvg_arch_is_cuda(arch);
	pvg_json_add_str(res->evidence, "log", cfg->build.log);
	pvg_json_add_str(res->evidence, "arch", arch);

	struct build_facts f = { .n_changed = 0 };
	if ((st = pvg_outcome_into(res, rule_log_there(ctx, &f.log_st, res))) != PVG_PASS)
		return st;
	f.art_st = pvg_xcalloc(ctx->n_arts, sizeof(*f.art_st));
	f.barts = pvg_xcalloc(ctx->n_arts, sizeof(*f.barts));
	f.copied = pvg_xcalloc(ctx->n_arts, sizeof(*f.copied));
	f.by_last_link = pvg_xcalloc(ctx->n_arts, sizeof(*f.by_last_link));
	pvg_buildlog_init(&f.log);
	st = pvg_outcome_into(res, rule_artifacts_built(ctx, f.art_st, res));
	if (st == PVG_PASS) {
		log_times_json(&f, res->evidence);
		st = pvg_outcome_into(res, rule_log_readable(ctx, &f, res));
	}
	if (st != PVG_PASS) {
		build_facts_release(ctx, &f);
		return st;
	}
	roots_json(&f.roots, res->evidence);
	st = bind_artifacts(ctx, &f, res);
	f.have_deps = load_ninja_deps(&f.roots, &f.deps, &f.deps_root, res->evidence);
	st = pvg_status_worst(st, pvg_outcome_into(res, rule_change_set_known(ctx, &f, res)));

	struct pvg_buildlog_counts counts = { 0 };
	st = pvg_status_worst(st, decide(ctx, &f, arch, &counts, res));
	/* A change to Python dispatch code alone is legitimate: the log still has to prove it
	 * built and linked this artifact cleanly, and gate 2 proves that no changed file fell
	 * outside source.compiled unnoticed. */
	pvg_json_add_int(res->evidence, "changed_compiled_sources", (int)f.n_changed);
	if (!cuda) {
		pvg_json_add_int(res->evidence, "changed_hipified", (int)counts.hipified);
		pvg_json_add_int(res->evidence, "changed_hip_native", (int)counts.hip_native);
	}
	if (st == PVG_PASS)
		summary_passed(ctx, &f, cuda, &counts, res);
	else
		pvg_summary(res, "%s", res->n_problems ? res->problems[0].message : "did not pass");
	build_facts_release(ctx, &f);
	return st;
}

const struct pvg_check pvg_check_build_log = {
	.id = 1,
	.name = "build-log",
	.phases = PVG_IN_ALL_PHASES,
	.run = run_build_log,
};
