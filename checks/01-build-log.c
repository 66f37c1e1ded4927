/* SPDX-License-Identifier: MIT */
/*
 * Gate 1 build-log: this build log is the build that produced the artifact, and in it every
 * changed kernel source was hipified from its current content (HIP) and compiled for arch.
 * The log is parsed by lib/formats/buildlog.c; the changed sources come from the change set
 * shared with gate 2 (facts.h); the decision over both is made here.
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

static enum pvg_status worse(enum pvg_status a, enum pvg_status b)
{
	if (a == PVG_FAIL || b == PVG_FAIL)
		return PVG_FAIL;
	if (a == PVG_UNVERIFIABLE || b == PVG_UNVERIFIABLE)
		return PVG_UNVERIFIABLE;
	return PVG_PASS;
}

static int64_t mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static enum pvg_status check_hipify(const struct pvg_buildlog_request *req, const char *rel,
				    const struct pvg_hipify_line *h, const char *dst_rel,
				    cJSON *fe, struct pvg_result *res)
{
	pvg_json_add_str(fe, "hipify", hipify_status_text(h->status));
	pvg_json_add_str(fe, "hipified", h->dst);
	pvg_json_add_u64(fe, "hipify_line", h->lineno);
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

static enum pvg_status check_compile(const struct pvg_buildlog_request *req, const char *rel,
				     const char *name, cJSON *fe, struct pvg_result *res)
{
	const struct pvg_buildlog *log = req->log;
	size_t n_found = 0, n_desc = 0;
	enum pvg_status st = PVG_PASS;
	cJSON *lines = cJSON_AddArrayToObject(fe, "compile_lines");
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
		_cleanup_free_ char *seen = NULL;
		bool ok = pvg_command_has_arch(c->text, req->arch, req->cuda, &seen);
		cJSON *l = cJSON_CreateObject();
		pvg_json_add_u64(l, "line", c->lineno);
		pvg_json_add_str(l, "arch", seen);
		pvg_json_add_bool(l, "has_arch", ok);
		cJSON_AddItemToArray(lines, l);
		if (ok)
			continue;
		st = PVG_FAIL;
		if (seen)
			pvg_problem(res, "build-log.wrong-arch",
				    req->cuda ? "add -gencode arch=compute_NN,code=sm_NN for the "
						"configured arch (TORCH_CUDA_ARCH_LIST) and rebuild"
					      : "build with --offload-arch for the configured arch "
						"(PYTORCH_ROCM_ARCH / GPU_TARGETS) and rebuild",
				    "line %zu: %s was compiled for %s, not %s", c->lineno, label, seen,
				    req->arch);
		else
			pvg_problem(res, "build-log.missing-arch",
				    req->cuda ? "compile with -gencode/-arch for the configured arch"
					      : "compile with --offload-arch for the configured arch",
				    "line %zu: the compile line of %s names no %s target arch (expected "
				    "%s)",
				    c->lineno, label, req->cuda ? "-gencode/-arch" : "--offload-arch",
				    req->arch);
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

enum pvg_status pvg_buildlog_check(const struct pvg_buildlog_request *req, struct pvg_result *res)
{
	const struct pvg_buildlog *log = req->log;
	enum pvg_status st = PVG_PASS;
	cJSON *ev = res->evidence;
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

	if (log->n_lines == 0 || (log->n_hipify == 0 && log->n_commands == 0 &&
				  log->n_ninja_lines == 0 && log->n_failed == 0 &&
				  log->n_errors == 0 && log->unsupported_calls < 0)) {
		pvg_problem(res, "build-log.empty-log",
			    "point build.log at the output of the build (tee the whole build into it)",
			    log->n_lines == 0 ? "the build log is empty"
					      : "the build log (%zu lines) holds no hipify, ninja or "
						"compiler lines",
			    log->n_lines);
		return PVG_FAIL;
	}
	if (log->truncated) {
		pvg_problem(res, "build-log.too-large",
			    "split the log, or keep only this build's output in it",
			    "the build log holds more hipify and command lines than provgate keeps "
			    "(%u MiB); the rest was not read",
			    PVG_BUILDLOG_KEEP_MAX >> 20);
		st = worse(st, PVG_UNVERIFIABLE);
	}
	for (size_t i = 0; i < log->n_failed_kept; i++)
		pvg_problem(res, "build-log.failed-step", "fix the build failure and rebuild",
			    "the build failed: %s%s", log->failed[i],
			    i == 0 && log->n_failed > log->n_failed_kept ? " (and more)" : "");
	for (size_t i = 0; i < log->n_errors_kept; i++)
		pvg_problem(res, "build-log.compiler-error", "fix the error and rebuild",
			    "compiler error: %s%s", log->errors[i],
			    i == 0 && log->n_errors > log->n_errors_kept ? " (and more)" : "");
	if (log->n_failed || log->n_errors)
		st = PVG_FAIL;
	if (log->unsupported_calls > req->max_unsupported_calls) {
		pvg_problem(res, "build-log.unsupported-calls",
			    "replace the CUDA calls hipify cannot translate (it lists them after the "
			    "count), or raise build.max_unsupported_calls deliberately",
			    "hipify reported %ld unsupported CUDA function calls (allowed: %ld)",
			    log->unsupported_calls, req->max_unsupported_calls);
		st = PVG_FAIL;
	}

	size_t link_line = 0;
	if (!req->artifact_name) {
		pvg_problem(res, "build-log.not-configured", "set build.artifact",
			    "build.artifact is not set: the link step cannot be found");
		st = worse(st, PVG_UNVERIFIABLE);
	} else if (!pvg_buildlog_links(log, req->artifact_name, &link_line)) {
		pvg_problem(res, "build-log.no-link",
			    "rebuild (the artifact was not relinked by this build; \"ninja: no work "
			    "to do\" means nothing changed), with a verbose log",
			    "the log has no link step producing %s", req->artifact_name);
		st = PVG_FAIL;
	} else {
		pvg_json_add_u64(ev, "link_line", link_line);
	}

	cJSON *files = cJSON_AddArrayToObject(ev, "files");
	for (size_t i = 0; i < req->n_changed; i++) {
		const char *rel = req->changed[i];
		cJSON *fe = cJSON_CreateObject();
		cJSON_AddItemToArray(files, fe);
		pvg_json_add_str(fe, "path", rel);
		bool header = is_header(rel), unit = !header && is_unit(rel);
		pvg_json_add_str(fe, "kind", header ? "header" : unit ? "translation-unit" : "other");
		/* a source edited after the link is not in the artifact, whatever the log says */
		struct stat sst;
		_cleanup_free_ char *src = req->workdir ? pvg_path_join(req->workdir, rel) : NULL;
		int64_t art_ns = (int64_t)req->artifact_mtime.tv_sec * 1000000000 +
				 req->artifact_mtime.tv_nsec;
		if (src && art_ns && stat(src, &sst) == 0 && mtime_ns(&sst) > art_ns) {
			char a[48], b[48];
			pvg_format_time(sst.st_mtim.tv_sec, -1, a, sizeof(a));
			pvg_format_time(req->artifact_mtime.tv_sec, -1, b, sizeof(b));
			pvg_problem(res, "build-log.source-newer",
				    "rebuild: the artifact was built before the last edit",
				    "changed %s was modified (%s) after the artifact was built (%s)", rel,
				    a, b);
			st = PVG_FAIL;
		}
		const struct pvg_hipify_line *h = pvg_buildlog_find_hipify(log, rel);
		_cleanup_free_ char *dst_rel = h && h->status != PVG_HIPIFY_IGNORED
						       ? hipified_rel(h, rel) : NULL;
		if (!req->cuda && h) {
			st = worse(st, check_hipify(req, rel, h, dst_rel, fe, res));
		} else if (!req->cuda && is_cuda_source(rel)) {
			pvg_problem(res, "build-log.not-hipified",
				    "rebuild so that hipify runs on the changed file (hipify output "
				    "must be in the log)",
				    "changed %s has no hipify line in the log", rel);
			st = PVG_FAIL;
		}
		if (!unit)
			continue;
		const char *name = rel;
		if (!req->cuda && h && h->status != PVG_HIPIFY_IGNORED)
			name = dst_rel ? dst_rel : h->dst;
		st = worse(st, check_compile(req, rel, name, fe, res));
	}
	return st;
}

/* ---- the gate ------------------------------------------------------------------------------- */

static enum pvg_status run_build_log(struct pvg_ctx *ctx, struct pvg_result *res)
{
	const struct pvg_config *cfg = ctx->cfg;
	if (!cfg->build.log || !cfg->build.artifact || !cfg->arch) {
		const char *what = !cfg->build.log ? "build.log" : !cfg->build.artifact
									  ? "build.artifact"
									  : "arch";
		pvg_summary(res, "%s is not configured", what);
		pvg_problem(res, "build-log.not-configured",
			    "set build.log (the build's output), build.artifact and arch",
			    "no build log to check: %s is not set", what);
		return PVG_UNVERIFIABLE;
	}
	pvg_json_add_str(res->evidence, "log", cfg->build.log);
	pvg_json_add_str(res->evidence, "arch", cfg->arch);

	struct stat log_st, art_st;
	if (stat(cfg->build.log, &log_st) < 0) {
		int e = errno;
		pvg_summary(res, "cannot read the build log");
		pvg_problem(res, "build-log.unreadable",
			    e == ENOENT ? "tee the build's output into build.log" : NULL,
			    "build log %s: %s", cfg->build.log, strerror(e));
		return PVG_UNVERIFIABLE;
	}
	if (stat(cfg->build.artifact, &art_st) < 0) {
		int e = errno;
		pvg_summary(res, "build artifact %s: %s", cfg->build.artifact, strerror(e));
		pvg_problem(res, "build-log.artifact-missing", "build the artifact, or fix build.artifact",
			    "build artifact %s: %s", cfg->build.artifact, strerror(e));
		return e == ENOENT ? PVG_FAIL : PVG_UNVERIFIABLE;
	}
	char lt[48], at[48];
	pvg_format_time(log_st.st_mtim.tv_sec, log_st.st_mtim.tv_nsec, lt, sizeof(lt));
	pvg_format_time(art_st.st_mtim.tv_sec, art_st.st_mtim.tv_nsec, at, sizeof(at));
	cJSON_AddStringToObject(res->evidence, "log_mtime", lt);
	cJSON_AddStringToObject(res->evidence, "artifact_mtime", at);

	enum pvg_status st = PVG_PASS;
	/* The build writes its log up to and after the link step, so the log's last change can
	 * not precede the artifact's: an older log belongs to an earlier build. */
	if (log_st.st_mtim.tv_sec < art_st.st_mtim.tv_sec ||
	    (log_st.st_mtim.tv_sec == art_st.st_mtim.tv_sec &&
	     log_st.st_mtim.tv_nsec < art_st.st_mtim.tv_nsec)) {
		pvg_problem(res, "build-log.stale-log",
			    "keep the log of the build that produced the artifact (tee it every build)",
			    "build log %s (modified %s) is older than the artifact %s (modified %s): it "
			    "is the log of an earlier build",
			    cfg->build.log, lt, cfg->build.artifact, at);
		st = PVG_FAIL;
	}

	struct pvg_buildlog log;
	pvg_buildlog_init(&log);
	int r = pvg_buildlog_read_file(&log, cfg->build.log);
	if (r < 0) {
		pvg_buildlog_done(&log);
		pvg_summary(res, "cannot read the build log: %s", strerror(-r));
		pvg_problem(res, "build-log.unreadable", NULL, "build log %s: %s", cfg->build.log,
			    strerror(-r));
		return st == PVG_FAIL ? PVG_FAIL : PVG_UNVERIFIABLE;
	}

	const struct pvg_scope *scope = NULL;
	r = pvg_scope_get(ctx, &scope);
	_cleanup_free_ const char **changed = NULL;
	size_t n_changed = 0;
	if (r < 0 || !scope) {
		pvg_problem(res, "build-log.no-scope",
			    "gate 2's change set is needed to know which sources must be in the log",
			    "the changed sources are not known: %s",
			    scope && scope->msg.text ? scope->msg.text
			    : r == -ENOSYS ? "the change set is not available in this version"
					   : strerror(-r));
		st = st == PVG_FAIL ? PVG_FAIL : PVG_UNVERIFIABLE;
	} else {
		changed = pvg_xcalloc(scope->n + 1, sizeof(*changed));
		for (size_t i = 0; i < scope->n; i++)
			if (scope->changes[i].cls == PVG_SCOPE_COMPILED && scope->changes[i].kind != 'D')
				changed[n_changed++] = scope->changes[i].path;
	}

	struct pvg_buildlog_request req = {
		.log = &log,
		.changed = changed,
		.n_changed = n_changed,
		.workdir = scope ? scope->workdir : cfg->source.repo,
		.arch = cfg->arch,
		.cuda = pvg_arch_is_cuda(cfg->arch),
		.artifact_name = pvg_basename(cfg->build.artifact),
		.max_unsupported_calls = cfg->build.max_unsupported_calls,
		.artifact_mtime = art_st.st_mtim,
	};
	enum pvg_status cs = pvg_buildlog_check(&req, res);
	if (cs == PVG_FAIL || st == PVG_FAIL)
		st = PVG_FAIL;
	else if (cs == PVG_UNVERIFIABLE || st == PVG_UNVERIFIABLE)
		st = PVG_UNVERIFIABLE;
	pvg_buildlog_done(&log);

	/* A change to Python dispatch code alone is legitimate: the log still has to prove it
	 * built and linked this artifact cleanly, and gate 2 proves that no changed file fell
	 * outside source.compiled unnoticed. */
	pvg_json_add_int(res->evidence, "changed_compiled_sources", (int)n_changed);
	if (st == PVG_PASS && n_changed == 0)
		pvg_summary(res, "no source.compiled file changed since the baseline; the log builds "
				 "and links %s without errors",
			    pvg_basename(cfg->build.artifact));
	else if (st == PVG_PASS)
		pvg_summary(res, "%zu changed source%s %s for %s; %s relinked", n_changed,
			    n_changed == 1 ? "" : "s",
			    req.cuda ? "compiled" : "hipified and compiled", cfg->arch,
			    pvg_basename(cfg->build.artifact));
	else
		pvg_summary(res, "%s", res->n_problems ? res->problems[0].message : "did not pass");
	return st;
}

const struct pvg_check pvg_check_build_log = {
	.id = 1,
	.name = "build-log",
	.phases = PVG_IN_ALL_PHASES,
	.run = run_build_log,
};
