/* SPDX-License-Identifier: MIT */
/*
 * What a benchmark ran on, read from the system for a report's "environment": the host, the
 * GPU driver and GPUs, and one service process (command line, kernel-steering variables,
 * namespaces, cgroup, held devices, mapped shared objects with their ELF build-ids).
 * Adapters: every read goes through the roots given (fixture trees in tests), returns data
 * and -errno, and never decides anything.
 */
#pragma once
#include "formats/elf-note.h"
#include "util/util.h"

struct pvg_roots {
	const char *procfs; /* "/proc" or $PROVGATE_PROCFS */
	const char *sysfs;  /* "/sys" or $PROVGATE_SYSFS */
	const char *etc;    /* "/etc" (machine-id) */
};

/* One fact: value set; or value NULL and err 0 (absent: no such driver, no such file);
 * or err < 0, a negative errno (it exists but could not be read). Every err below is 0 or a
 * negative errno. */
struct pvg_fact {
	char *value;
	int err;
};

struct pvg_host_facts {
	struct pvg_fact machine_id, boot_id, hostname, kernel;
};

struct pvg_gpu_facts {
	struct pvg_fact amdgpu_version; /* /sys/module/amdgpu/version (DKMS drivers only) */
	bool amdgpu_loaded;             /* /sys/module/amdgpu exists */
	struct pvg_fact nvidia_version; /* first line of /proc/driver/nvidia/version */
	struct pvg_strv ids;            /* "kfd:<unique_id>", "nvidia:<GPU UUID>", sorted */
	int ids_err;                    /* a GPU's identity could not be read */
};

struct pvg_env_var {
	char *name;
	char *value; /* "<redacted>" when pvg_env_name_secret says so */
	bool redacted;
};

#define PVG_BUILD_ID_HEX (2 * PVG_BUILD_ID_MAX + 1)

struct pvg_shared_object {
	char *path;   /* as the process maps it, without " (deleted)" */
	bool deleted;
	uint64_t dev, ino; /* of the mapping */
	uint64_t size;     /* of the file read, when opened */
	char build_id[PVG_BUILD_ID_HEX]; /* "" when none */
	int err;          /* 0; -ENOENT: an ELF file without build-id; else why it was not read */
	const char *why;  /* "open", "replaced", "malformed ELF", ... */
};

enum { PVG_NS_CGROUP, PVG_NS_IPC, PVG_NS_MNT, PVG_NS_NET, PVG_NS_PID, PVG_NS_USER, PVG_NS_UTS,
       PVG_NS__MAX };
extern const char *const pvg_ns_names[PVG_NS__MAX];

struct pvg_namespace {
	uint64_t ino; /* 0 when unreadable */
	int err;
	bool shared;  /* the same namespace as provgate's own */
};

struct pvg_service_facts {
	pid_t pid;
	struct pvg_strv argv;
	int argv_err;
	struct pvg_env_var *env; /* kernel-steering variables only, sorted by name */
	size_t n_env;
	int env_err;
	struct pvg_namespace ns[PVG_NS__MAX];
	struct pvg_fact cgroup;
	struct pvg_shared_object *objects; /* ELF files it maps, sorted by path */
	size_t n_objects;
	size_t n_mappings;                 /* file mappings seen */
	int maps_err;
};

/* Is NAME one that steers kernels (VLLM_*, HIP_*, HSA_*, ROCM_*, ROCR_*, AMD_*, CUDA_*,
 * PYTORCH_*, NCCL_*, RCCL_*, TORCH_*, TRITON_*, MIOPEN_*, NVTX_*, ROCP_*, and the Nsight
 * tools' NV_NSIGHT_*, NVIDIA_PROCESS_INJECTION_*, NV_COMPUTE_PROFILER_*; LD_PRELOAD,
 * LD_LIBRARY_PATH)? Is its value a secret (TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL,
 * AUTH, PRIVATE, COOKIE or SESSION in the name, in any case)? */
bool pvg_env_name_steers(const char *name, size_t len);
bool pvg_env_name_secret(const char *name, size_t len);

void pvg_host_facts_read(const struct pvg_roots *roots, struct pvg_host_facts *out);
void pvg_host_facts_clear(struct pvg_host_facts *h);
void pvg_gpu_facts_read(const struct pvg_roots *roots, struct pvg_gpu_facts *out);
/* The processor of each GPU node of <sysfs>/class/kfd/kfd/topology/nodes ("gfx936"), in
 * node order (CPU nodes, gfx_target_version 0, left out). The number of GPU nodes (0 when
 * there is no KFD topology), or -errno; a node whose version names no processor is
 * pushed as "unknown (gfx_target_version N)". */
int pvg_kfd_gpu_archs(const char *sysfs, struct pvg_strv *out);
void pvg_gpu_facts_clear(struct pvg_gpu_facts *g);
/* Reads one process. Returns 0, or -ESRCH when it is gone; partial failures are in the
 * fields' err members. Without build_ids, objects lists every mapped file (ELF or not)
 * unopened: enough to name what is loaded. */
int pvg_service_facts_read(const struct pvg_roots *roots, pid_t pid, bool build_ids,
			   struct pvg_service_facts *out);
void pvg_service_facts_clear(struct pvg_service_facts *s);
/* The arguments of <procfs>/PID/cmdline (the zero padding a retitled process leaves cut).
 * 0; -ESRCH when it has none (zombie, kernel thread); -errno. */
int pvg_cmdline_read(const char *procfs, pid_t pid, struct pvg_strv *argv);
/* The devices (paths matching globs) any of pids holds open, sorted, each once.
 * Returns 0 or the first -errno met (EACCES: another user's process). */
int pvg_held_devices(const char *procfs, const pid_t *pids, size_t n, const struct pvg_strv *globs,
		     struct pvg_strv *out);
/* Parses environ bytes (NUL-separated NAME=VALUE) into the steering variables. */
void pvg_environ_parse(const char *text, size_t len, struct pvg_env_var **out, size_t *n);
void pvg_env_vars_free(struct pvg_env_var *v, size_t n);
/* The GNU build-id of an open ELF file, in hex: bounded preads of the ELF and program
 * headers and of the note segments, never the whole file. 0; -ENOENT (ELF without a
 * build-id); -ENOEXEC (not ELF); -EINVAL (malformed); -errno. */
int pvg_build_id_fd(int fd, char hex[PVG_BUILD_ID_HEX]);
