/* SPDX-License-Identifier: MIT */
/*
 * vLLM's torch.compile cache as a process would find it (vllm/envs.py): VLLM_CACHE_ROOT
 * (expanduser'd), else $XDG_CACHE_HOME/vllm, else ~/.cache/vllm; its compiled graphs under
 * ROOT/torch_compile_cache/; VLLM_DISABLE_COMPILE_CACHE (bool(int(value))) turns it off.
 * Read by checks/ (the compile cache's graphs) and by init.
 */
#pragma once
#include "util/untrusted.h"
#include "util/util.h"

struct pvg_vllm_cache {
	bool env_read;  /* the process's environment could be read */
	bool disabled;  /* VLLM_DISABLE_COMPILE_CACHE is a non-zero integer there */
	char *root;     /* the cache root (sanitized), NULL: unknown (no HOME) */
	bool exists;    /* ROOT/torch_compile_cache is a folder its user can open */
};

/* Reads the process's environment and looks for the folder inside its root, with its user's
 * rights. */
void pvg_vllm_cache_read(const char *procfs, pid_t pid, struct pvg_vllm_cache *out);
void pvg_vllm_cache_clear(struct pvg_vllm_cache *c);

/* Does a process name or command line say vLLM? */
bool pvg_names_vllm(const char *s);
