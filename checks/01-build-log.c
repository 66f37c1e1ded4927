/* SPDX-License-Identifier: MIT */
/*
 * Gate 1 build-log: this build log is the build that produced the artifact, and in it every
 * changed kernel source was hipified from its current content (HIP) and compiled for arch.
 * The log is parsed by lib/buildlog.c; the changed sources come from the change set shared
 * with gate 2 (lib/scope.h).
 */
#include <sys/stat.h>

#include "buildlog.h"
#include "checks.h"
#include "scope.h"

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
			    scope && scope->why ? scope->why
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
	.run = run_build_log,
};
