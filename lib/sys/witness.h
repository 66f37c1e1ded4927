/* SPDX-License-Identifier: MIT */
/*
 * The dispatch witness as the system holds it: the witness folder's files, read and parsed
 * one at a time (formats/witness.h), this boot's id and a variable of a process's
 * environment (its own-namespace pid is sys/ns.h's).
 */
#pragma once
#include "formats/witness.h"
#include "util/util.h"

#define PVG_WITNESS_DIR_MAX_FILES 4096

struct pvg_witness_read {
	char *name;   /* file name in the folder */
	int err;      /* reading: 0 or -errno */
	bool too_large; /* over PVG_WITNESS_MAX_FILE by its size: not read (err -EFBIG) */
	enum pvg_witness_error perr;
	size_t perr_at;
	uint8_t *bytes; /* kept only for files the caller keeps */
	size_t len;
	struct pvg_witness_file file; /* entries and modules allocated when kept */
};

struct pvg_witness_dir {
	struct pvg_witness_read *files; /* every *.pvgw file, sorted by name */
	size_t n;
	size_t over_limit; /* files beyond PVG_WITNESS_DIR_MAX_FILES, not read */
	size_t not_regular; /* *.pvgw entries that are links, devices, FIFOs ...: never opened */
	size_t too_large;   /* files over PVG_WITNESS_MAX_FILE: listed (err -EFBIG), not read */
};

/* The witness folder, opened once (SPEC §11): O_DIRECTORY|O_NOFOLLOW, so that a folder
 * replaced by a link (to a root-only folder) is refused, and every entry read and the
 * request made go through this descriptor, never through the name again. */
struct pvg_witness_folder {
	int fd;       /* -1 when not open */
	int err;      /* opening: 0 or -errno (-ELOOP: the name is a link) */
	bool is_link;
	struct stat st; /* of the folder opened: its owner, for the evidence */
};
int pvg_witness_folder_open(const char *dir, struct pvg_witness_folder *out);
void pvg_witness_folder_close(struct pvg_witness_folder *f);

/* Reads every *.pvgw file of the folder (temporary files of a writer are skipped). An entry
 * is looked at first (fstatat, no link followed): one that is no regular file is counted in
 * not_regular and never opened, one over PVG_WITNESS_MAX_FILE is listed with err -EFBIG and
 * never read. For each file that parses, keep(opaque, header) says whether to keep its bytes
 * and records (a live target's); the others keep their header only. 0, or -errno when the
 * folder cannot be listed. */
int pvg_witness_dir_read(const struct pvg_witness_folder *folder,
			 bool (*keep)(void *, const struct pvg_witness_header *), void *opaque,
			 struct pvg_witness_dir *out);
void pvg_witness_dir_clear(struct pvg_witness_dir *d);

/* A request for a fresh witness (PVG_WITNESS_REQUEST_PREFIX): a new empty file in the folder
 * (O_EXCL|O_NOFOLLOW) named with *token (CLOCK_BOOTTIME nanoseconds now). *name (allocated)
 * is its name in the folder. 0 or -errno. */
int pvg_witness_request(const struct pvg_witness_folder *folder, uint64_t *token, char **name);
void pvg_witness_request_remove(const struct pvg_witness_folder *folder, const char *name);
/* Waits up to ms for a file to be created in or renamed into the folder. *watch: -1 at first
 * (the first call with ms 0 sets the watch up, before a request is made, so that no answer is
 * missed); a folder that cannot be watched is waited on by sleeping min(ms, 20). Close with
 * pvg_witness_watch_close. */
void pvg_witness_dir_wait(const struct pvg_witness_folder *folder, int *watch, long ms);
void pvg_witness_watch_close(int *watch);
/* Is the process pid, started at start_ticks, still there (not a zombie)? */
bool pvg_witness_proc_alive(const char *procfs, pid_t pid, uint64_t start_ticks);

/* procfs/sys/kernel/random/boot_id without its newline. 0 or -errno. */
int pvg_boot_id(const char *procfs, char out[40]);
/* The value of name in procfs/PID/environ (*value allocated), -ENOENT when not set, -EACCES
 * for another user's process, other -errno. */
int pvg_proc_getenv(const char *procfs, pid_t pid, const char *name, char **value);
