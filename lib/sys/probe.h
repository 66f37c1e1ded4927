/* SPDX-License-Identifier: MIT */
/*
 * What `provgate init` finds on a machine: the git checkout and its baseline, processes that
 * map a file of a given name, their listening ports and where they write. Read-only; every
 * read is bounded. Returns data, never a decision.
 */
#pragma once
#include "util/util.h"

/* The checkout that holds dir, and the branch a change in it is most likely based on: the
 * remote's default branch (origin/HEAD), else origin/main, origin/master, main, master (not
 * the branch checked out). 0 with *workdir (no trailing '/') and *baseline (NULL when none
 * fits) set; -ENOTDIR when dir is in no work tree. *branch: the checked-out branch or NULL. */
int pvg_probe_git(const char *dir, char **workdir, char **baseline, char **branch);

struct pvg_probe_proc {
	pid_t pid, ppid;
	char comm[16];
	char *cmdline;     /* arguments joined by spaces */
	struct pvg_strv argv; /* the arguments one by one (the first 64), for what names a file */
	char *mapped;      /* the mapped path of the file asked for */
	bool deleted;      /* that mapping is " (deleted)" */
	struct timespec start;
};

struct pvg_probe_procs {
	struct pvg_probe_proc *p;
	size_t n;
};

/* Every process under procfs (but the caller) that maps a file whose base name is name. */
int pvg_probe_mappers(const char *procfs, const char *name, struct pvg_probe_procs *out);
void pvg_probe_procs_clear(struct pvg_probe_procs *ps);
/* One process's parent, comm and command line (for walking up from a mapper). */
int pvg_probe_proc_read(const char *procfs, pid_t pid, struct pvg_probe_proc *out);
void pvg_probe_proc_clear(struct pvg_probe_proc *p);

/* The lowest TCP port pid listens on (0: none, or its fds cannot be read). */
uint16_t pvg_probe_listen_port(const char *procfs, pid_t pid);
/* Where pid may write its log, best first: its stdout and stderr when regular files, then
 * open regular files whose names end in ".log" (appended to out). */
void pvg_probe_log_paths(const char *procfs, pid_t pid, struct pvg_strv *out);
/* The regular files pid holds open for writing (fd 3 and up, opened write-only or for
 * appending, from fdinfo's flags), whatever their names (appended to out, 16 at most). */
void pvg_probe_written_files(const char *procfs, pid_t pid, struct pvg_strv *out);
/* pid's working folder (NULL when unreadable): what its relative arguments are relative to. */
char *pvg_probe_cwd(const char *procfs, pid_t pid);
