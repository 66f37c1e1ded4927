/* SPDX-License-Identifier: MIT */
/*
 * Triton cache folders of a service, walked and indexed by the sha256 of each entry's binary
 * (formats/triton-cache.h says what an entry holds). Every folder is the service side's: it
 * is opened inside the service's root with its user's rights (util/untrusted.h), never
 * through a link, and the walk is bounded in entries, bytes and time.
 */
#pragma once
#include <time.h>

#include "formats/triton-cache.h"
#include "util/untrusted.h"

#define PVG_TRITON_MAX_ENTRIES 20000u        /* entry folders visited, all caches together */
#define PVG_TRITON_MAX_BINARY (64u << 20)    /* a NAME.cubin / NAME.hsaco larger is skipped */
#define PVG_TRITON_MAX_BYTES (1024ull << 20) /* bytes read in all */
#define PVG_TRITON_MAX_MS 10000              /* time for the whole walk */

struct pvg_triton_entry {
	char *folder;  /* the cache folder it is in, as the service names it */
	char *key;     /* the entry's folder name */
	char *name;    /* the file stem (NAME) */
	uint8_t sha256[32];
	uint64_t size;
	bool meta_ok;
	struct pvg_triton_meta meta;
	char *why;     /* the metadata or .source could not be read: why */
	char *src_path; /* the .source's first loc, NULL when unknown */
	unsigned long src_line;
	struct timespec written; /* the earliest mtime or ctime of its json, source and binary */
};

/* One cache folder looked at. */
struct pvg_triton_folder {
	char *path;
	const char *from; /* "TRITON_CACHE_DIR", "TRITON_HOME", "HOME", "VLLM_CACHE_ROOT",
			   * "witness.triton_caches" */
	int err;          /* opening it: 0 or -errno */
	enum pvg_refusal refused;
	size_t entries;   /* entries with a binary indexed */
};

struct pvg_triton_index {
	struct pvg_triton_entry *v;
	size_t n;
	struct pvg_triton_folder *folders;
	size_t n_folders;
	size_t visited, skipped;
	uint64_t bytes;
	const char *cut; /* a bound stopped the walk: which */
};

/* Where to look and how. */
struct pvg_triton_where {
	int root_fd;                /* the service's root (O_PATH) */
	const struct pvg_creds *as; /* its user's rights; NULL: ours */
};

/* Adds one folder (path inside root) to the index, from: what named it. A folder that is not
 * a Triton cache itself is searched (at most 6 levels) for folders named "triton_cache" or
 * holding entries (vLLM's compile cache). */
void pvg_triton_index_add(struct pvg_triton_index *idx, const struct pvg_triton_where *w,
			  const char *path, const char *from);
/* The first entry whose binary has these bytes; _next the one after prev. Several entries
 * may hold the same bytes (one kernel in two folders, as vLLM's per-rank caches keep it, or
 * compiled again under another key): each is its own claim of where they came from. */
const struct pvg_triton_entry *pvg_triton_index_find(const struct pvg_triton_index *idx,
						     const uint8_t sha256[32]);
const struct pvg_triton_entry *pvg_triton_index_next(const struct pvg_triton_index *idx,
						     const uint8_t sha256[32],
						     const struct pvg_triton_entry *prev);
void pvg_triton_index_clear(struct pvg_triton_index *idx);
