/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/maps of a process: read through a procfs root, and each mapped file compared
 * with what its path holds now. */
#pragma once
#include <sys/stat.h>

#include "formats/maps.h"
#include "util/util.h"

/* Reads <procfs>/<pid>/maps: 0, -ENOENT/-ESRCH (gone), -EACCES/-EPERM, -EFBIG, -EINVAL. */
int pvg_maps_read(const char *procfs, pid_t pid, struct pvg_maps *out);
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
	int stat_err; /* 0 or -errno of stat(path) */
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
