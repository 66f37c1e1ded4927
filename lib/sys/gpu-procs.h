/* SPDX-License-Identifier: MIT */
/*
 * The GPU driver's own list of processes that use a GPU. It covers the whole machine, so a
 * provgate inside a container (its own pid namespace) can still count holders it cannot see:
 *   amdgpu  <sysfs>/class/kfd/kfd/proc/<pid>/ (one entry per process that opened /dev/kfd)
 *   NVIDIA  NVML through a dlopen of libnvidia-ml.so.1 (compute and graphics processes of
 *           every device); no build dependency.
 * KFD names processes by their pid in the initial namespace and lists every one. NVML does
 * not: measured on an H200 (driver 580), it lists only the processes of the caller's pid
 * namespace, with their pids there, while the devices' used memory (nvmlMemory_v2_t.used,
 * reserved memory apart) is the whole machine's; the memory no listed process accounts for
 * is what processes outside the namespace use. Data and -errno only.
 */
#pragma once
#include "util/util.h"

struct pvg_gpu_procs {
	const char *source; /* "kfd" or "nvml" */
	char *where;        /* the folder read, or the library loaded */
	pid_t *pids;        /* distinct, sorted */
	size_t n;
	bool namespaced;    /* the list holds only the caller's pid namespace (NVML) */
	bool have_memory;   /* used and listed below are known (NVML) */
	uint64_t used_bytes;   /* device memory in use, all devices, reserved memory apart */
	uint64_t listed_bytes; /* what the listed processes use of it */
	size_t n_entries;      /* process entries over all devices (a process per device) */
};

/* sysfs: "/sys" or a fixture tree ($PROVGATE_SYSFS). nvml: try NVML when there is no KFD
 * list. 0 with *out filled; -ENOENT when no driver list exists here (*why says what was
 * tried), -EACCES, -EIO (NVML answered with an error; *why has its text). */
int pvg_gpu_procs_read(const char *sysfs, bool nvml, struct pvg_gpu_procs *out, char **why);
void pvg_gpu_procs_clear(struct pvg_gpu_procs *g);

/* The compute capability of each GPU NVML lists, as "sm_MAJORMINOR" ("sm_90"), in NVML's
 * order. NVML is $PROVGATE_NVML_LIBRARY or libnvidia-ml.so.1. The number of GPUs; -ENOENT
 * when there is no NVML (*why unset), -EIO with *why when NVML fails. */
int pvg_nvml_gpu_archs(struct pvg_strv *out, char **why);
