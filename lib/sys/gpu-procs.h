/* SPDX-License-Identifier: MIT */
/*
 * The GPU driver's own list of processes that use a GPU. It covers the whole machine, so a
 * provgate inside a container (its own pid namespace) can still count holders it cannot see:
 *   amdgpu  <sysfs>/class/kfd/kfd/proc/<pid>/ (one entry per process that opened /dev/kfd)
 *   NVIDIA  NVML through a dlopen of libnvidia-ml.so.1 (compute and graphics processes of
 *           every device); no build dependency.
 * The pids are the driver's (the initial pid namespace's); only their number is comparable
 * from inside a container. Data and -errno only.
 */
#pragma once
#include "util/util.h"

struct pvg_gpu_procs {
	const char *source; /* "kfd" or "nvml" */
	char *where;        /* the folder read, or the library loaded */
	pid_t *pids;        /* distinct, sorted */
	size_t n;
};

/* sysfs: "/sys" or a fixture tree ($PROVGATE_SYSFS). nvml: try NVML when there is no KFD
 * list. 0 with *out filled; -ENOENT when no driver list exists here (*why says what was
 * tried), -EACCES, -EIO (NVML answered with an error; *why has its text). */
int pvg_gpu_procs_read(const char *sysfs, bool nvml, struct pvg_gpu_procs *out, char **why);
void pvg_gpu_procs_clear(struct pvg_gpu_procs *g);
