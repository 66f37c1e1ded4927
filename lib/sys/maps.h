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
/* The device and inode /proc/PID/maps shows for a file: those of this process's own mapping
 * of it. They are not always stat's: overlayfs before Linux 6.7 shows its layer's file, btrfs
 * its file system's device for every subvolume, where stat shows the subvolume's. */
struct pvg_maps_id {
	bool known;
	unsigned dev_major, dev_minor;
	uint64_t inode;
	/* btrfs: every subvolume (every snapshot) shows one device in maps and numbers its
	 * inodes anew, so equal numbers there do not make one file */
	bool shared_numbers;
};
/* Maps one page of fd (a regular file) here, reads the line /proc/self/maps has for it and
 * unmaps it. 0, or -errno (not a regular file, no such line). */
int pvg_maps_id_of_fd(int fd, struct pvg_maps_id *out);

/* How a mapped file was found to be the file st describes. */
enum pvg_same_file {
	PVG_OTHER_FILE = 0,
	PVG_SAME_FILE,          /* maps shows st's device and inode */
	PVG_SAME_FILE_QUIRK,    /* maps shows other numbers: map_files' link names st's file,
				 * or the numbers are those maps shows for st's file (ref) */
	PVG_SAME_NUMBERS,       /* only the numbers agree, and they are not unique to one file
				 * (ref->shared_numbers) while map_files cannot be followed */
};
/* Is the mapped file the file st describes? An inode number is unique only within one file
 * system: a device number that differs from st's is accepted only where the map_files link
 * of the mapping names st's file (dev and inode of the link's target), or, where that link
 * cannot be followed (no CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), where maps shows for this
 * mapping the numbers ref says it shows for st's file. Without ref (a path of the service's,
 * named only for a message), the file system at path (overlayfs, btrfs) stands in for ref;
 * that guess never makes a mapping the installed file. */
enum pvg_same_file pvg_mapping_same_file(const char *procfs, pid_t pid,
					 const struct pvg_mapped_file *f, const char *path,
					 const struct stat *st, const struct pvg_maps_id *ref);
/* pvg_mapping_same_file without ref, as a yes or no; *quirk: the numbers in maps differed. */
bool pvg_mapping_is_file(const char *procfs, pid_t pid, const struct pvg_mapped_file *f,
			 const char *path, const struct stat *st, bool *quirk);
