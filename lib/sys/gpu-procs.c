/* SPDX-License-Identifier: MIT */
/* The driver's list of GPU processes: amdgpu's KFD sysfs, or NVML (dlopen); see gpu-procs.h. */
#include <dirent.h>
#include <dlfcn.h>

#include "sys/gpu-procs.h"

void pvg_gpu_procs_clear(struct pvg_gpu_procs *g)
{
	free(g->pids);
	free(g->where);
	memset(g, 0, sizeof(*g));
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static void add_pid(struct pvg_gpu_procs *g, pid_t pid)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->pids[i] == pid)
			return;
	g->pids = pvg_xrealloc(g->pids, g->n + 1, sizeof(*g->pids));
	g->pids[g->n++] = pid;
}

static int read_kfd(const char *sysfs, struct pvg_gpu_procs *out)
{
	_cleanup_free_ char *dir = pvg_asprintf("%s/class/kfd/kfd/proc", sysfs);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		errno = 0;
		long v = strtol(e->d_name, &end, 10);
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end || errno || v > 0x3fffffff)
			continue;
		add_pid(out, (pid_t)v);
	}
	closedir(d);
	out->source = "kfd";
	out->where = TAKE_PTR(dir);
	return 0;
}

/* NVML's types, as nvml.h declares them (the ABI is stable across driver versions) */
typedef int nvml_return;
typedef void *nvml_device;
struct nvml_process_v2 { /* nvmlProcessInfo_v2_t (used by the _v2 and _v3 calls) */
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};
struct nvml_memory_v2 { /* nvmlMemory_v2_t */
	unsigned int version;
	unsigned long long total, reserved, free, used;
};
#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(struct nvml_memory_v2) | (2u << 24)))
enum { NVML_SUCCESS = 0, NVML_ERROR_INSUFFICIENT_SIZE = 7 };

struct nvml {
	void *lib;
	nvml_return (*init)(void);
	nvml_return (*shutdown)(void);
	const char *(*error_string)(nvml_return);
	nvml_return (*count)(unsigned int *);
	nvml_return (*handle)(unsigned int, nvml_device *);
	nvml_return (*compute)(nvml_device, unsigned int *, struct nvml_process_v2 *);
	nvml_return (*graphics)(nvml_device, unsigned int *, struct nvml_process_v2 *);
	nvml_return (*memory)(nvml_device, struct nvml_memory_v2 *);
	nvml_return (*cc)(nvml_device, int *, int *);
	const char *name;
};

static void *sym(void *lib, const char *a, const char *b)
{
	void *p = dlsym(lib, a);
	return p || !b ? p : dlsym(lib, b);
}

/* The processes of one device in one list; dev_pids: this device's, so that a process with
 * a compute and a graphics context counts its memory once on it. */
static int nvml_list(struct nvml *n, nvml_device dev,
		     nvml_return (*fn)(nvml_device, unsigned int *, struct nvml_process_v2 *),
		     struct pvg_gpu_procs *out, struct pvg_gpu_procs *dev_pids, char **why)
{
	if (!fn)
		return 0;
	unsigned int cnt = 0;
	nvml_return r = fn(dev, &cnt, NULL);
	if (r == NVML_SUCCESS)
		return 0; /* no process */
	if (r != NVML_ERROR_INSUFFICIENT_SIZE) {
		*why = pvg_asprintf("NVML could not list the processes of a GPU: %s",
				    n->error_string ? n->error_string(r) : "error");
		return -EIO;
	}
	/* processes may start between the two calls: room for a few more */
	for (int attempt = 0; attempt < 3; attempt++) {
		unsigned int have = cnt + 8;
		_cleanup_free_ struct nvml_process_v2 *v = pvg_xcalloc(have, sizeof(*v));
		cnt = have;
		r = fn(dev, &cnt, v);
		if (r == NVML_ERROR_INSUFFICIENT_SIZE)
			continue;
		if (r != NVML_SUCCESS) {
			*why = pvg_asprintf("NVML could not list the processes of a GPU: %s",
					    n->error_string ? n->error_string(r) : "error");
			return -EIO;
		}
		for (unsigned int i = 0; i < cnt && i < have; i++) {
			bool again = false;
			for (size_t k = 0; k < dev_pids->n; k++)
				again |= dev_pids->pids[k] == (pid_t)v[i].pid;
			if (v[i].pid > 0) {
				add_pid(out, (pid_t)v[i].pid);
				add_pid(dev_pids, (pid_t)v[i].pid);
			}
			if (again)
				continue;
			out->n_entries++;
			/* NVML_VALUE_NOT_AVAILABLE is all ones */
			if (v[i].used_gpu_memory != ~0ULL)
				out->listed_bytes += v[i].used_gpu_memory;
		}
		return 0;
	}
	*why = pvg_strdup("NVML's process list kept growing while it was read");
	return -EIO;
}

/* Opens NVML ($PROVGATE_NVML_LIBRARY or libnvidia-ml.so.1), finds its calls and starts it.
 * 0; -ENOENT when there is no NVML (*why unset); -ENOSYS when it lacks a call every user
 * needs, -EIO when it does not start (*why set). nvml_close undoes it. */
static int nvml_open(struct nvml *n, char **why)
{
	memset(n, 0, sizeof(*n));
	n->name = getenv("PROVGATE_NVML_LIBRARY");
	if (!n->name || !n->name[0])
		n->name = "libnvidia-ml.so.1";
	n->lib = dlopen(n->name, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib)
		return -ENOENT;
	n->init = (nvml_return (*)(void))sym(n->lib, "nvmlInit_v2", "nvmlInit");
	n->shutdown = (nvml_return (*)(void))sym(n->lib, "nvmlShutdown", NULL);
	n->error_string = (const char *(*)(nvml_return))sym(n->lib, "nvmlErrorString", NULL);
	n->count = (nvml_return (*)(unsigned int *))sym(n->lib, "nvmlDeviceGetCount_v2",
							"nvmlDeviceGetCount");
	n->handle = (nvml_return (*)(unsigned int, nvml_device *))sym(
		n->lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
	n->compute = (nvml_return (*)(nvml_device, unsigned int *, struct nvml_process_v2 *))sym(
		n->lib, "nvmlDeviceGetComputeRunningProcesses_v3",
		"nvmlDeviceGetComputeRunningProcesses_v2");
	n->graphics = (nvml_return (*)(nvml_device, unsigned int *, struct nvml_process_v2 *))sym(
		n->lib, "nvmlDeviceGetGraphicsRunningProcesses_v3",
		"nvmlDeviceGetGraphicsRunningProcesses_v2");
	n->memory = (nvml_return (*)(nvml_device, struct nvml_memory_v2 *))sym(
		n->lib, "nvmlDeviceGetMemoryInfo_v2", NULL);
	n->cc = (nvml_return (*)(nvml_device, int *, int *))sym(
		n->lib, "nvmlDeviceGetCudaComputeCapability", NULL);
	if (!n->init || !n->count || !n->handle) {
		*why = pvg_asprintf("%s lacks the NVML calls provgate needs", n->name);
		dlclose(n->lib);
		return -ENOSYS;
	}
	nvml_return e = n->init();
	if (e != NVML_SUCCESS) {
		*why = pvg_asprintf("NVML could not start: %s",
				    n->error_string ? n->error_string(e) : "error");
		dlclose(n->lib);
		return -EIO;
	}
	return 0;
}

static void nvml_close(struct nvml *n)
{
	if (n->shutdown)
		n->shutdown();
	dlclose(n->lib);
}

static int read_nvml(struct pvg_gpu_procs *out, char **why)
{
	struct nvml n;
	int r = nvml_open(&n, why);
	if (r < 0)
		return r == -ENOSYS ? -ENOENT : r;
	const char *name = n.name;
	out->have_memory = n.memory != NULL;
	nvml_return e;
	if (!n.compute) {
		*why = pvg_asprintf("%s lacks the NVML calls provgate needs", name);
		r = -ENOENT;
		goto out;
	}
	unsigned int devices = 0;
	e = n.count(&devices);
	if (e != NVML_SUCCESS) {
		*why = pvg_asprintf("NVML could not count the GPUs: %s",
				    n.error_string ? n.error_string(e) : "error");
		r = -EIO;
	}
	for (unsigned int i = 0; r == 0 && i < devices; i++) {
		nvml_device dev = NULL;
		e = n.handle(i, &dev);
		if (e != NVML_SUCCESS) {
			*why = pvg_asprintf("NVML could not open GPU %u: %s", i,
					    n.error_string ? n.error_string(e) : "error");
			r = -EIO;
			break;
		}
		struct pvg_gpu_procs dev_pids = { 0 };
		r = nvml_list(&n, dev, n.compute, out, &dev_pids, why);
		if (r == 0)
			r = nvml_list(&n, dev, n.graphics, out, &dev_pids, why);
		free(dev_pids.pids);
		struct nvml_memory_v2 mem = { .version = NVML_MEMORY_V2_VERSION };
		if (r == 0 && n.memory && n.memory(dev, &mem) == NVML_SUCCESS)
			out->used_bytes += mem.used;
		else
			out->have_memory = false;
	}
	if (r == 0) {
		out->source = "nvml";
		out->namespaced = true;
		out->where = pvg_asprintf("%s (%u GPU%s)", name, devices, devices == 1 ? "" : "s");
	}
out:
	nvml_close(&n);
	return r;
}

int pvg_gpu_procs_read(const char *sysfs, bool nvml, struct pvg_gpu_procs *out, char **why)
{
	memset(out, 0, sizeof(*out));
	*why = NULL;
	int r = read_kfd(sysfs, out);
	if (r == 0) {
		qsort(out->pids, out->n, sizeof(*out->pids), cmp_pid);
		return 0;
	}
	if (r == -EACCES || r == -EPERM) {
		*why = pvg_asprintf("%s/class/kfd/kfd/proc cannot be read: %s", sysfs, strerror(-r));
		return -EACCES;
	}
	if (nvml) {
		r = read_nvml(out, why);
		if (r == 0) {
			qsort(out->pids, out->n, sizeof(*out->pids), cmp_pid);
			return 0;
		}
		if (r != -ENOENT) {
			pvg_gpu_procs_clear(out);
			return r;
		}
		free(*why);
	}
	pvg_gpu_procs_clear(out);
	*why = pvg_asprintf("no driver list of GPU processes here: no %s/class/kfd/kfd/proc "
			    "(amdgpu)%s",
			    sysfs, nvml ? " and no libnvidia-ml.so.1 (NVIDIA)" : "");
	return -ENOENT;
}

int pvg_nvml_gpu_archs(struct pvg_strv *out, char **why)
{
	memset(out, 0, sizeof(*out));
	*why = NULL;
	struct nvml n;
	int r = nvml_open(&n, why);
	if (r < 0)
		return r == -ENOSYS ? -EIO : r;
	if (!n.cc) {
		*why = pvg_asprintf("%s lacks nvmlDeviceGetCudaComputeCapability", n.name);
		nvml_close(&n);
		return -EIO;
	}
	unsigned int devices = 0;
	nvml_return e = n.count(&devices);
	if (e != NVML_SUCCESS) {
		*why = pvg_asprintf("NVML could not count the GPUs: %s",
				    n.error_string ? n.error_string(e) : "error");
		r = -EIO;
	}
	for (unsigned int i = 0; r == 0 && i < devices; i++) {
		nvml_device dev = NULL;
		int major = 0, minor = 0;
		e = n.handle(i, &dev);
		if (e == NVML_SUCCESS)
			e = n.cc(dev, &major, &minor);
		if (e != NVML_SUCCESS || major <= 0 || minor < 0 || minor > 9) {
			*why = pvg_asprintf("NVML could not read GPU %u's compute capability: %s", i,
					    e != NVML_SUCCESS && n.error_string ? n.error_string(e)
										 : "out of range");
			r = -EIO;
			break;
		}
		out->v = pvg_xrealloc(out->v, out->n + 1, sizeof(char *));
		out->v[out->n++] = pvg_asprintf("sm_%d%d", major, minor);
	}
	nvml_close(&n);
	if (r < 0)
		pvg_strv_clear(out);
	return r < 0 ? r : (int)out->n;
}
