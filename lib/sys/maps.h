/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/maps: a pure parser (text in, mappings out) and the adapter that reads it. */
#pragma once
#include <sys/stat.h>

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
/* Reads <procfs>/<pid>/maps: 0, -ENOENT/-ESRCH (gone), -EACCES/-EPERM, -EFBIG, -EINVAL. */
int pvg_maps_read(const char *procfs, pid_t pid, struct pvg_maps *out);
/* Reads a /proc text file (which reports size 0) up to max bytes: 0, -errno, -EFBIG. */
int pvg_read_proc_text(const char *path, size_t max, char **out, size_t *len);
void pvg_maps_clear(struct pvg_maps *maps);
/* "/proc/PID/map_files/START-END" (caller frees). */
char *pvg_map_files_path(const char *procfs, pid_t pid, const struct pvg_mapping *m);

/* One file as a process maps it, compared with what its path holds now. */
struct pvg_mapped_file {
	char *path; /* without " (deleted)" */
	bool deleted;
	unsigned dev_major, dev_minor;
	uint64_t inode;
	uint64_t first_start, first_end; /* a mapping of it, for map_files */
	size_t n_mappings;
	/* what the path names now */
	int stat_err; /* 0 or errno of stat(path) */
	uint64_t now_dev, now_ino;
	struct timespec now_ctime;
	bool replaced;    /* the path names another file now (or nothing) */
	bool dev_quirk;   /* same inode, device number differs (overlayfs / btrfs): accepted */
	bool overwritten; /* same file, changed after the process started (ctime) */
	bool ctime_close; /* changed within one clock tick of the start: order unknown */
	bool duplicate;   /* the same file name is mapped from another path too */
};

struct pvg_mapped_files {
	struct pvg_mapped_file *f;
	size_t n;
};

/* Groups the file mappings of maps by file and compares each with its path now.
 * start/tick_ns: the process start (to one clock tick). */
void pvg_mapped_files_build(const char *procfs, pid_t pid, const struct pvg_maps *maps,
			    const struct timespec *start, long tick_ns,
			    struct pvg_mapped_files *out);
void pvg_mapped_files_clear(struct pvg_mapped_files *files);
/* Is the mapped file (dev, inode) the file st describes? Accepts the device-number quirk of
 * overlayfs and btrfs (as needrestart does) when map_files confirms or the file system is
 * one of them; *quirk says that allowance was needed. */
bool pvg_mapping_is_file(const char *procfs, pid_t pid, const struct pvg_mapped_file *f,
			 const char *path, const struct stat *st, bool *quirk);
