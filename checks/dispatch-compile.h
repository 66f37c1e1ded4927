/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's compile-cache rule (SPEC §12): a torch.compile graph the live service loaded from
 * vLLM's compile cache is no older than the changed Python files it traced. This module reads
 * what decides it and the rule decides:
 *
 *   the log      the live service's own torch.compile lines (dispatch-markers.c's scan, with
 *                dispatch-window.c's patterns): per process, which cache folder it used
 *                ("Using cache directory: DIR for vLLM's torch.compile", DIR being
 *                $VLLM_CACHE_ROOT/torch_compile_cache/HASH/rank_R_DP/PREFIX), and whether a
 *                graph was then loaded from it ("Directly load the compiled graph(s) for ...
 *                from the cache") or compiled ("Compiling a graph for ...");
 *   the folders  read through the service's root with its user's rights, links never left:
 *                when its graphs were written (the older mtime of vllm_compile_cache.py and
 *                computation_graph.py) and which files were traced (the "# File: PATH:LINE"
 *                comments vLLM's computation_graph.py carries from each node's stack trace);
 *   the change   the change set's installed .py files (install_map) and when each took its
 *                installed content (the later of its mtime and ctime);
 *   in use       without a telling line: is a cache in use at all (a process of the tree has
 *                a folder under torch_compile_cache open, or the service is vLLM, its
 *                environment does not disable the cache (VLLM_DISABLE_COMPILE_CACHE) and
 *                $VLLM_CACHE_ROOT/torch_compile_cache exists).
 */
#pragma once
#include "dispatch-markers.h"
#include "facts.h"

#define COMPILE_USES_MAX 64       /* cache folders kept; the rest counted */
#define COMPILE_GRAPH_MAX (32u << 20) /* computation_graph.py is read up to this size */
#define COMPILE_CHANGES_MAX 4096  /* changed .py files considered */

/* A changed, installed Python file of the change set. */
struct compile_change {
	char *path;            /* repo-relative */
	char *installed;       /* its install location */
	int err;               /* reading its times: 0 or -errno */
	struct timespec took;  /* when it took its installed content: max(mtime, ctime) */
	dev_t dev;             /* the installed file's identity */
	ino_t ino;
	bool glob;             /* compile_cache.traced names it */
	bool model_executor;   /* installed under a vllm/model_executor/ folder */
};

/* One cache folder a live process said it used. */
struct compile_use {
	char *dir;             /* as the log line names it (sanitized) */
	bool has_pid;
	pid_t pid;             /* the line's pid (the service's pid namespace) */
	bool loaded;           /* a load line of the same process followed it */
	bool compiled;         /* a compile line of the same process followed it */
	bool ambiguous;        /* lines without a pid name several folders: a load may be any's */
	/* the folder, read */
	bool read;             /* it was looked at */
	int err;               /* opening it: 0 or -errno */
	enum pvg_refusal refused;
	bool has_graphs;       /* vllm_compile_cache.py or computation_graph.py is there */
	struct timespec written; /* the older mtime of the two */
	bool preexisting;      /* written before the service started */
	bool named_read;       /* computation_graph.py read: named below */
	char *named_why;       /* why not */
	size_t n_named;        /* files its "# File:" comments name */
	bool *traced;          /* per change: traced by this folder's graph */
	const char **traced_how; /* per change: why it counts as traced */
};

struct compile_facts {
	/* from the log */
	bool log_read;          /* the service log was scanned to its end */
	char *log_why;          /* why not */
	size_t lines_lost;      /* live compile lines the scan could not keep (the earliest) */
	size_t disabled_lines;  /* "vLLM's torch.compile cache is disabled." of the live service */
	size_t loads_untold;    /* load lines of a process that named no folder before */
	struct compile_use *uses;
	size_t n_uses, uses_total;
	/* the service */
	bool service;           /* a live service was found */
	struct timespec start;  /* its root process's start */
	bool vllm;              /* a process of its tree is vLLM's (name or command line) */
	bool env_read;          /* its environment was read */
	bool env_disabled;      /* VLLM_DISABLE_COMPILE_CACHE is a non-zero integer there */
	char *cache_root;       /* VLLM_CACHE_ROOT as vLLM resolves it (sanitized), NULL: unknown */
	bool root_exists;       /* CACHE_ROOT/torch_compile_cache is a folder */
	char *open_folder;      /* a file under torch_compile_cache a process of the tree has open */
	/* the change */
	bool change_read;       /* the change set was read */
	char *change_why;
	struct compile_change *changes;
	size_t n_changes;
};

/* Before the log is freed: the folders its live torch.compile lines name. m may be NULL (no
 * log configured). */
void dispatch_compile_from_log(const struct marker_read *m, struct compile_facts *cf);
/* The rest: the service, its cache, the folders and the change set. */
void dispatch_compile_read(struct pvg_ctx *ctx, struct compile_facts *cf);
void dispatch_compile_clear(struct compile_facts *cf);
/* evidence.compile_cache */
void dispatch_compile_evidence(cJSON *ev, const struct compile_facts *cf);

/* Is a compile cache in use, by the service's own state, with no log line telling? */
bool dispatch_compile_in_use(const struct compile_facts *cf);

/* The rule (see 07-dispatch-marker.c's first screen). */
struct pvg_outcome rule_compile_cache(const struct compile_facts *cf);
