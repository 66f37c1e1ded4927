/* SPDX-License-Identifier: MIT */
/*
 * A torch-profiler trace folder a service process was started with (vLLM's
 * VLLM_TORCH_PROFILER_DIR, SGLang's SGLANG_TORCH_PROFILER_DIR) and the traces in it: the
 * folder is the service's, so it is opened inside the process's root with its user's rights
 * (util/untrusted.h), and only listed: a trace is named, never opened.
 */
#pragma once
#include "util/untrusted.h"

#define PVG_TRACES_LISTED 16        /* traces kept by name; the rest counted */
#define PVG_TRACES_MAX_ENTRIES 100000 /* folder entries looked at */

struct pvg_trace_file {
	char *name;            /* sanitized */
	struct timespec mtime; /* its last write */
	uint64_t size;
};

struct pvg_profiler_dir {
	pid_t pid;
	const char *var;       /* the variable that names it */
	char *dir;             /* its value, sanitized */
	int err;               /* opening the folder: 0 or -errno (-ENOENT: not made yet) */
	enum pvg_refusal refused; /* with err: what it was instead of a folder */
	bool truncated;        /* more than PVG_TRACES_MAX_ENTRIES entries: the rest not seen */
	size_t n_since, n_before; /* traces written since the process started, and before */
	struct pvg_trace_file traces[PVG_TRACES_LISTED]; /* of those since, the first listed */
	size_t n_traces;
};

/* The trace-folder variables the profilers of the serving frameworks read. */
extern const char *const pvg_profiler_dir_vars[];
#define PVG_PROFILER_DIR_VARS 2

/* Is name a torch profiler trace ("*.pt.trace.json.gz", "*.trace.json[.gz]")? */
bool pvg_is_trace_name(const char *name);
/* Reads var of procfs/PID/environ and, when set, lists its folder (relative: in the process's
 * working folder) for traces written at or after since. 0; -ENOENT when var is not set;
 * other -errno when the environment cannot be read. Folder errors are in out->err. */
int pvg_profiler_dir_read(const char *procfs, pid_t pid, const char *var,
			  const struct timespec *since, struct pvg_profiler_dir *out);
void pvg_profiler_dir_clear(struct pvg_profiler_dir *d);
