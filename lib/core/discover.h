/* SPDX-License-Identifier: MIT */
/*
 * Discovery (provgate init): what a starting provgate.json is made from. The git checkout
 * and its baseline, the newest build log that compiles GPU code and the shared object it
 * links, the architecture in that object's code objects (the one this node's GPUs run), a
 * running process that maps a file of the same name (the service: its command line, port,
 * log, and the installed copy it maps), the Python module that copy is in a venv, the
 * install_map of the package folder, the change set's files that are no runtime files.
 * What was guessed, and from what, is in notes; what is left to fill in, in todo.
 * cmd/init.c renders it as a config.
 */
#pragma once
#include "sys/probe.h"
#include "util/util.h"

/* Another shared object the build log links (a project with several extensions), with the
 * installed copy the service maps; installed NULL: not placed (a todo says so). */
struct pvg_discovered_artifact {
	char *name;      /* its file name up to the first dot: "_moe_C" */
	char *build;     /* the log's link output, resolved */
	char *installed; /* the copy the service maps */
	char *python_module; /* where the first artifact's is a venv module: this one's */
};

/* A changed device source (.cu, .hip) and its kernels for arch, read from the objects the
 * build log compiled from it: what init proposes as witness.changed_sources. */
struct pvg_discovered_source {
	char *path;             /* repo-relative */
	struct pvg_strv kernels;
	char *why;              /* kernels not known, or none: why */
};

struct pvg_discovery {
	char *dir;      /* the config's folder (absolute) */
	char *workdir;  /* the git work tree */
	char *baseline, *branch;
	char *build_log, *artifact, *arch, *arch_others;
	struct pvg_strv compiled;
	char *installed;  /* install.artifact */
	char *python, *python_module;
	char *map_from, *map_to;
	struct pvg_probe_proc service; /* pid 0: none */
	size_t n_mappers;
	/* what finds the service again after a restart: its process title ("VLLM::EngineCore"),
	 * else its entry point ("vllm serve", a script, "-m" module); never one run's arguments.
	 * family: every process of that kind (the title's prefix "VLLM::"), and the identity of
	 * the ancestor that owns the port */
	char *match;
	struct pvg_strv family;
	uint16_t port;
	char *service_log, *prefix; /* service_log PVG_LOG_CONTAINER: the container's log */
	struct pvg_strv ignore;
	/* the log's other shared objects (the artifact above is the first of artifacts[]) */
	struct pvg_discovered_artifact *more;
	size_t n_more;
	/* the change set's device sources with kernels (witness.changed_sources) */
	struct pvg_discovered_source *sources;
	size_t n_sources;
	/* gate 7's compile-cache rule applies to the service (vLLM, its torch.compile cache in
	 * use); the change's installed Python files proposed as compile_cache.traced */
	bool compile_applies;
	struct pvg_strv compile_traced;
	struct pvg_strv todo;  /* what the user must still fill in */
	struct pvg_strv notes; /* what was guessed, and from what */
};

/* Discovers what is there for a config in dir (an absolute folder, no trailing '/'):
 * searches dir (and a checkout one level down), the processes of procfs (NULL:
 * pvg_procfs_root()) and this node's GPUs. Fills d, which pvg_discovery_clear frees. */
void pvg_discover(const char *dir, const char *procfs, struct pvg_discovery *d);
void pvg_discovery_clear(struct pvg_discovery *d);
/* path relative to the config's folder when under it ("logs/build.log"), else path itself */
const char *pvg_discovery_rel(const struct pvg_discovery *d, const char *path);
/* The compile-cache part of discovery (discover-compile.c), given the change set. */
struct pvg_scope;
void pvg_discover_compile_cache(struct pvg_discovery *g, const char *procfs,
				const struct pvg_scope *s);
