/* SPDX-License-Identifier: MIT */
/* checks: gate 1's decision over a parsed build log, apart from reading the files, so that unit
 * tests and the fuzz target can drive it with a log in memory. */
#pragma once

#include "core/result.h"
#include "formats/buildlog.h"

/* One configured artifact, as gate 1 sees it. */
struct pvg_buildlog_artifact {
	const char *name;   /* the config's name ("_rocm_C") */
	const char *build;  /* the configured build file, for messages */
	const char *file;   /* its file name: what the log's link step writes */
	const char *arch;   /* its arch (the entry's, else the config's) */
	const struct pvg_strv *compiled; /* its own "compiled" globs, or NULL */
	struct timespec mtime; /* when it was built ({0, 0}: unknown); a copy's build time */
};

/* Everything gate 1 decides, given the parsed log and the changed compiled sources. */
struct pvg_buildlog_request {
	const struct pvg_buildlog *log;
	const char *const *changed; /* repo-relative paths of changed compiled sources */
	size_t n_changed;
	const char *workdir;        /* repo root, for the hipified files' times; may be NULL */
	const char *arch;
	bool cuda;                  /* pvg_arch_is_cuda(arch) */
	const char *artifact_name;  /* basename of build.artifact */
	long max_unsupported_calls;
	struct timespec artifact_mtime; /* {0, 0}: unknown, sources are not compared with it */
	/* Several artifacts (ctx->arts): when n_arts > 0 these replace artifact_name, arch and
	 * artifact_mtime above (arch and cuda still name the config's arch, for hipify). */
	const struct pvg_buildlog_artifact *arts;
	size_t n_arts;
	/* the log's link graph; NULL: built from log */
	const struct pvg_linkgraph *graph;
	/* dependency information of the build tree: ninja's deps log (its paths relative to
	 * deps_root), and folders where make-style depfiles (-MF, OBJ.d) are looked for. */
	const struct pvg_ninja_deps *ninja_deps;
	const char *deps_root;
	const char *const *roots;
	size_t n_roots;
	/* build.hip_sources: globs of changed .cu/.cuh that are HIP already; may be NULL */
	const struct pvg_strv *hip_sources;
	/* filled by the check, for the summary: changed files with their hipify line, and
	 * changed .cu/.cuh taken as HIP source already; may be NULL */
	struct pvg_buildlog_counts {
		size_t hipified, hip_native;
	} *counts;
};

/* Records problems in res; returns pass, fail or unverifiable. Fills res->evidence.files. */
enum pvg_status pvg_buildlog_check(const struct pvg_buildlog_request *req,
				   struct pvg_result *res);
