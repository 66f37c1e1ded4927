/* SPDX-License-Identifier: MIT */
/*
 * lib/core: provgate.json, loaded and validated. The sections that a lower layer consumes are
 * that layer's own types (the source tree for sys/scope, the service selection for
 * sys/procs, the marker requirements for formats/markers), so those layers never see the
 * whole config.
 */
#pragma once

#include "provgate.h"
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
	} build;
	struct pvg_source_spec source;
	struct {
		char *artifact;
		char *python_module;
		char *python; /* default "python3" */
	} install;
	struct pvg_service_spec service;
	bool allow_profiler; /* service.allow_profiler: a run meant to profile (gate 5) */
	struct {
		struct pvg_strv require_kernels;
	} code_object;
	struct {
		char *log;
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
	struct {
		char *dir; /* the folder the service writes its witness files to */
		struct pvg_witness_require *require;
		size_t n_require;
		struct pvg_strv forbid;
		long min_count; /* default 1 */
		char *api;      /* "cuda" or "hsa"; NULL: from arch */
		char *library;  /* libprovgate-witness.so to start the service with; NULL: installed */
	} witness;
	struct {
		struct pvg_strv inputs; /* dataset and prompt files, hashed into the report */
	} benchmark;
};

/* A config with every default and no keys set (tests, and the base of loading). */
struct pvg_config *pvg_config_new(void);
/* Parses JSON text (comments allowed); origin names the source in messages. */
int pvg_config_parse(struct pvg_config *cfg, const char *text, size_t len, const char *origin,
		     struct pvg_error *err);
bool pvg_arch_valid(const char *arch);
bool pvg_arch_is_cuda(const char *arch);

static inline void pvg_config_freep(struct pvg_config **cfg)
{
	pvg_config_free(*cfg);
}
#define _cleanup_config_ _cleanup_(pvg_config_freep)
