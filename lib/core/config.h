/* SPDX-License-Identifier: MIT */
/*
 * lib/core: provgate.json, loaded and validated. The sections that a lower layer consumes are
 * that layer's own types (the source tree for sys/scope, the service selection for
 * sys/procs, the marker requirements for formats/markers), so those layers never see the
 * whole config.
 */
#pragma once

#include "provgate.h"
#include "formats/codeobj/codeobj.h"
#include "formats/markers.h"
#include "sys/procs.h"
#include "sys/scope.h"
#include "util/util.h"

/* A kernel the dispatch witness must have seen launched (witness.require). */
struct pvg_witness_require {
	char *kernel;     /* glob when it holds * ? [, else a substring; mangled or demangled */
	uint32_t grid[3]; /* all 0: any grid */
	uint32_t block[3];
	long min_count;   /* -1: witness.min_count */
	int via;          /* PVG_WITNESS_REQUIRE_* (any, eager launches only, graph replays only) */
};
enum { PVG_WITNESS_REQUIRE_ANY = 0, PVG_WITNESS_REQUIRE_EAGER, PVG_WITNESS_REQUIRE_GRAPH };

/* A changed device source as witness.changed_sources names it: the kernels of it that the live
 * service must have launched from its artifact (instead of those read from its objects), or
 * why it need not be (exempt). */
struct pvg_witness_source {
	char *path;              /* repo-relative, as the change set writes it */
	struct pvg_strv kernels; /* names (mangled or demangled, as witness.require's) */
	char *exempt;            /* why it is not required; NULL: required */
};

/* One extension the change may touch (artifacts[], or the single form build.artifact +
 * install.* + code_object.require_kernels, which is a list of one). */
struct pvg_artifact {
	char *name;
	char *build;         /* the file the build produced */
	char *install;       /* the installed file, or NULL when python_module names it */
	char *python_module; /* resolved with install.python, never imported */
	struct pvg_strv compiled;        /* globs of the changed sources that go into it */
	char *arch;                      /* NULL: the top-level arch */
	struct pvg_strv require_kernels; /* code_object.require_kernels for the single form */
};

struct pvg_config {
	char *path; /* absolute path of the file, NULL for a config built in memory */
	char *dir;
	char sha256[65];
	char *name;
	char *arch;
	struct {
		char *log;
		char *artifact;
		long max_unsupported_calls; /* default 0 */
		struct pvg_strv hip_sources; /* globs: changed .cu/.cuh that are HIP already */
	} build;
	struct pvg_source_spec source;
	struct {
		char *artifact;
		char *python_module;
		char *python; /* default "python3" */
		/* the largest artifact (build or installed) read whole: larger ones are refused
		 * unread (PVG_HASH_MAX_SIZE_DEFAULT, 16 GiB) */
		uint64_t max_artifact_size;
	} install;
	struct pvg_service_spec service;
	bool allow_profiler; /* service.allow_profiler: a run meant to profile (gate 5) */
	struct {
		struct pvg_strv require_kernels;
	} code_object;
	struct {
		char *log; /* the service's log, or PVG_LOG_CONTAINER */
		char *prefix;
		struct pvg_require *require;
		size_t n_require;
		long min_count; /* default 1 */
		struct pvg_strv forbid;
		struct pvg_strv facts;
		/* a log format of the user's own (formats/markers.h pvg_line_format) */
		char *pid_pattern;
		char *time_pattern;
		char *time_format;
	} markers;
/* markers.log "container": the log file of the container the service runs in */
#define PVG_LOG_CONTAINER "container"
	struct {
		char *dir; /* the folder the service writes its witness files to */
		struct pvg_witness_require *require;
		size_t n_require;
		struct pvg_strv forbid;
		long min_count; /* default 1 */
		char *api;      /* "cuda" or "hsa"; NULL: from arch */
		char *library;  /* libprovgate-witness.so to start the service with; NULL: installed */
		long answer_ms; /* how long gate 7 waits for the live processes' answers (2000) */
		struct pvg_witness_source *sources; /* witness.changed_sources */
		size_t n_sources;
		/* Triton cache folders in the service's root, beside those its environment names */
		struct pvg_strv triton_caches;
	} witness;
	struct {
		struct pvg_strv inputs; /* dataset and prompt files, hashed into the report */
		/* code compiled or loaded in the service while exec's command ran does not fail
		 * the after-check (it is still listed) */
		bool allow_loads;
	} benchmark;
	struct {
		/* globs of repo-relative changed files that torch.compile traces, beside those a
		 * compiled graph's computation_graph.py names (gate 7's compile-cache rule) */
		struct pvg_strv traced;
	} compile_cache;
	/* "artifacts": empty when the config uses the single form (see pvg_config_artifacts) */
	struct pvg_artifact *artifacts;
	size_t n_artifacts;
};

/* The artifacts of a config: "artifacts" as listed, or the single form as a list of one
 * (its strings borrowed from cfg; NULL fields where the config has none). *n is 0 when the
 * config names no artifact at all. The array is the caller's to free (not its strings). */
struct pvg_artifact *pvg_config_artifacts(const struct pvg_config *cfg, size_t *n);
/* The entry's arch, else the config's. */
const char *pvg_artifact_arch(const struct pvg_config *cfg, const struct pvg_artifact *a);
/* The name the single form gets: the build (else installed) file's name up to its first
 * dot ("_rocm_C.abi3.so" -> "_rocm_C"), written into out. */
void pvg_artifact_default_name(const char *path, char *out, size_t size);

/* A config with every default and no keys set (tests, and the base of loading). */
struct pvg_config *pvg_config_new(void);
/* Parses JSON text (comments allowed); origin names the source in messages. */
int pvg_config_parse(struct pvg_config *cfg, const char *text, size_t len, const char *origin,
		     struct pvg_error *err);

static inline void pvg_config_freep(struct pvg_config **cfg)
{
	pvg_config_free(*cfg);
}
#define _cleanup_config_ _cleanup_(pvg_config_freep)
