/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libnvidia-ml.so.1 with the behaviour measured on an H200 (driver 580,
 * tests/gpu/results/2026-12-01-h200-nvml): the process list holds only the processes of the
 * caller's pid namespace, with their pids there; the device's memory in use
 * (nvmlDeviceGetMemoryInfo_v2 .used) is the whole machine's, 8 MiB per process more than its
 * listed figure. One device. The machine's GPU processes are read from the file named by
 * $PVG_FAKE_NVML, one line each: "PID MIB", PID being the pid the caller's namespace sees, or
 * "- MIB" for a process outside it. The device's compute capability is $PVG_FAKE_NVML_CC
 * ("MAJOR.MINOR", default 9.0, as the H200's). Only the calls lib/sys/gpu-procs.c makes are
 * provided.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct proc_v2 {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};
struct memory_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};

#define MIB (1ULL << 20)
static struct {
	unsigned int pid; /* 0: outside the caller's namespace */
	unsigned long long mib;
} procs[64];
static unsigned int n_procs;

static int load(void)
{
	const char *path = getenv("PVG_FAKE_NVML");
	FILE *f = path ? fopen(path, "r") : NULL;
	n_procs = 0;
	if (!f)
		return 1;
	char pid[32];
	unsigned long long mib;
	while (n_procs < 64 && fscanf(f, "%31s %llu", pid, &mib) == 2) {
		procs[n_procs].pid = strcmp(pid, "-") == 0 ? 0 : (unsigned int)strtoul(pid, NULL, 10);
		procs[n_procs++].mib = mib;
	}
	fclose(f);
	return 0;
}

int nvmlInit_v2(void) { return load() ? 9 /* NVML_ERROR_DRIVER_NOT_LOADED */ : 0; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int r) { return r ? "stand-in error" : "Success"; }
int nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = 1;
	return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	*dev = (void *)(procs + i);
	return i == 0 ? 0 : 2 /* NVML_ERROR_INVALID_ARGUMENT */;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, struct proc_v2 *out)
{
	(void)dev;
	unsigned int visible = 0;
	for (unsigned int i = 0; i < n_procs; i++)
		visible += procs[i].pid != 0;
	if (!out || *count < visible) {
		unsigned int had = *count;
		*count = visible;
		return visible == 0 && had == 0 ? 0 : 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	unsigned int k = 0;
	for (unsigned int i = 0; i < n_procs; i++)
		if (procs[i].pid)
			out[k++] = (struct proc_v2){ .pid = procs[i].pid,
						     .used_gpu_memory = procs[i].mib * MIB };
	*count = k;
	return 0;
}
int nvmlDeviceGetMemoryInfo_v2(void *dev, struct memory_v2 *m)
{
	(void)dev;
	if ((m->version >> 24) != 2)
		return 2;
	m->total = 143771 * MIB;
	m->reserved = 615 * MIB;
	m->used = 0;
	for (unsigned int i = 0; i < n_procs; i++)
		m->used += (procs[i].mib + 8) * MIB;
	m->free = m->total - m->reserved - m->used;
	return 0;
}

int nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor)
{
	(void)dev;
	const char *cc = getenv("PVG_FAKE_NVML_CC");
	if (!cc || sscanf(cc, "%d.%d", major, minor) != 2) {
		*major = 9;
		*minor = 0;
	}
	return 0;
}
