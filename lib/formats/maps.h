/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/maps text: a pure parser, text in, mappings out (sys/maps.h reads it). */
#pragma once

#include "util/util.h"

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
void pvg_maps_clear(struct pvg_maps *maps);
