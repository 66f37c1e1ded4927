/* SPDX-License-Identifier: MIT */
/*
 * The report's "environment": what the benchmark ran on, recorded so that `provgate compare`
 * can prove an A/B pair like for like; and which profilers or tracers a service carries
 * (gate 5 refuses a benchmark service with one attached).
 */
#pragma once
#include "core/ctx.h"
#include "sys/environment.h"

enum pvg_profiler_kind {
	PVG_PROFILER_NONE = 0,
	/* a profiling library frameworks load anyway (PyTorch preloads libcupti; ROCm PyTorch
	 * links roctracer): recorded, not by itself proof that anything is being profiled */
	PVG_PROFILER_LIBRARY,
	/* a profiler's or tracer's tool library: only a profiler loads it */
	PVG_PROFILER_TOOL,
};

/* What kind of profiling library the file at path is, by its name. */
enum pvg_profiler_kind pvg_profiler_library(const char *path);

/* One process's profiler evidence: attached gets "pid N maps PATH" / "pid N has
 * NAME=VALUE" for each tool library and injection; libraries the profiling libraries
 * frameworks load anyway. */
void pvg_profilers_find(const struct pvg_service_facts *s, struct pvg_strv *attached,
			struct pvg_strv *libraries);
/* The same, with provgate's own dispatch witness (an injection variable naming
 * libprovgate-witness.so) apart: witness gets "provgate dispatch witness (NAME)" once, without
 * a pid, so that two services compare equal only when both ran with it. pvg_profilers_find
 * puts it in attached: the environment lists it with the profilers. */
void pvg_profilers_classify(const struct pvg_service_facts *s, struct pvg_strv *attached,
			    struct pvg_strv *libraries, struct pvg_strv *witness);


/* The report's "environment" object: host, GPU, container (null here), the service (phase
 * live, from the run's process snapshot) and the benchmark inputs. */
cJSON *pvg_environment_collect(struct pvg_ctx *ctx);
