/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/maps: a pure parser (text in, mappings out) and the adapter that reads it. */
#pragma once
#include "pvg.h"

enum pvg_mapping_kind {
	PVG_MAPPING_ANON = 0, /* no path */
	PVG_MAPPING_FILE,     /* an absolute path */
	PVG_MAPPING_SPECIAL,  /* "[heap]", "[vdso]", "[anon:name]", ... */
};

struct pvg_mapping {
	uint64_t start, end, offset;
	char perms[5];
	unsigned dev_major, dev_minor;
	uint64_t inode;
	enum pvg_mapping_kind kind;
	bool deleted; /* the path ended in " (deleted)"; path holds it without the suffix */
	char *path;   /* NULL for anonymous mappings */
};

struct pvg_maps {
	struct pvg_mapping *m;
	size_t n;
};

/* Longest maps text the adapter reads; a process with more is reported, not truncated. */
#define PVG_MAPS_MAX_BYTES (64u << 20)

/* Parses maps text. Returns 0, or -EINVAL with *bad_line (1-based) set for a malformed line. */
int pvg_maps_parse(const char *text, size_t len, struct pvg_maps *out, size_t *bad_line);
/* Reads <procfs>/<pid>/maps: 0, -ENOENT/-ESRCH (gone), -EACCES/-EPERM, -EFBIG, -EINVAL. */
int pvg_maps_read(const char *procfs, pid_t pid, struct pvg_maps *out);
/* Reads a /proc text file (which reports size 0) up to max bytes: 0, -errno, -EFBIG. */
int pvg_read_proc_text(const char *path, size_t max, char **out, size_t *len);
void pvg_maps_clear(struct pvg_maps *maps);
/* "/proc/PID/map_files/START-END" (caller frees). */
char *pvg_map_files_path(const char *procfs, pid_t pid, const struct pvg_mapping *m);
