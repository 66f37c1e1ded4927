/* SPDX-License-Identifier: MIT */
/* checks: gate 1's decision over a parsed build log, apart from reading the files, so that unit
 * tests and the fuzz target can drive it with a log in memory. */
#pragma once

#include "core/result.h"
#include "formats/buildlog.h"

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
};

/* Records problems in res; returns pass, fail or unverifiable. Fills res->evidence.files. */
enum pvg_status pvg_buildlog_check(const struct pvg_buildlog_request *req,
				   struct pvg_result *res);
