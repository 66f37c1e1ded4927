/* SPDX-License-Identifier: MIT */
/*
 * Build logs: a pure, line-at-a-time parser of what PyTorch's hipify, ninja and the
 * compilers print, and the questions asked of a parsed log (checks/01-build-log.c decides).
 *
 * The parser keeps only what the decision needs (hipify lines, compiler and link command
 * lines, failures) under fixed caps, so a huge or hostile log cannot grow memory without
 * bound; what it had to drop is counted and makes the log unverifiable, never a pass.
 */
#pragma once
#include "util/util.h"

/* Lines longer than this are cut (the rest is skipped and the line counted as overlong). */
#define PVG_BUILDLOG_LINE_MAX (1u << 20)
/* At most this much command/hipify text is kept in all. */
#define PVG_BUILDLOG_KEEP_MAX (64u << 20)
#define PVG_BUILDLOG_ENTRIES_MAX 200000u
#define PVG_BUILDLOG_SAMPLES 5

enum pvg_hipify_status {
	PVG_HIPIFY_OK,               /* [ok] */
	PVG_HIPIFY_SKIPPED_NO_CHANGES,   /* [skipped, no changes] */
	PVG_HIPIFY_SKIPPED_ALREADY,  /* [skipped, already hipified] */
	PVG_HIPIFY_SKIPPED_NO_PERMISSIONS, /* [skipped, no permissions]: output not written */
	PVG_HIPIFY_SKIPPED_OTHER,    /* [skipped, <something else>] */
	PVG_HIPIFY_IGNORED,          /* [ignored, ...] */
};

struct pvg_hipify_line {
	char *src;
	char *dst;
	enum pvg_hipify_status status;
	size_t lineno;
};

struct pvg_build_command {
	char *text; /* the command line, ninja "[i/n] " and ": && " wrappers removed */
	size_t lineno;
	bool compile; /* has a "-c" argument */
};

struct pvg_buildlog {
	size_t n_lines;
	uint64_t n_bytes;
	size_t n_overlong;   /* lines cut at PVG_BUILDLOG_LINE_MAX */
	size_t n_binary;     /* lines holding NUL or other non-text bytes */
	bool truncated;      /* a keep cap was reached: entries were dropped */

	struct pvg_hipify_line *hipify;
	size_t n_hipify;
	long unsupported_calls; /* the largest "Total number of unsupported..." seen, -1 none */
	long kernel_launches;   /* -1 none */

	struct pvg_build_command *commands;
	size_t n_commands;
	size_t keep_bytes;

	/* ninja progress: the last "[i/n]" seen */
	long ninja_step, ninja_total;
	size_t n_ninja_lines;
	/* link / "Linking ..." lines, kept as commands too; the link check looks at them */
	size_t n_failed;          /* ninja "FAILED:" lines */
	size_t n_errors;          /* compiler "error:" diagnostics */
	char *failed[PVG_BUILDLOG_SAMPLES];
	size_t n_failed_kept;
	char *errors[PVG_BUILDLOG_SAMPLES];
	size_t n_errors_kept;

	/* line assembly state for pvg_buildlog_feed */
	char *line;
	size_t line_len;
	bool line_overlong;
};

void pvg_buildlog_init(struct pvg_buildlog *log);
void pvg_buildlog_done(struct pvg_buildlog *log);
/* Feeds raw bytes (any chunking); '\n' and '\r' end lines. */
void pvg_buildlog_feed(struct pvg_buildlog *log, const char *bytes, size_t len);
/* Ends the last line. */
void pvg_buildlog_finish(struct pvg_buildlog *log);
/* One line, without its terminator: ANSI colour sequences are removed, then it is parsed. */
void pvg_buildlog_parse_line(struct pvg_buildlog *log, const char *line, size_t len);
/* Reads a whole file through the parser in fixed-size blocks. 0 or -errno. */
int pvg_buildlog_read_file(struct pvg_buildlog *log, const char *path);

/* Removes ANSI escape sequences in place; returns the new length. */
size_t pvg_strip_ansi(char *s, size_t len);

/* Does this compiler command line build for arch ("gfx936[:feat±]" or "sm_90")?
 * *seen receives the arch values the command names (comma-separated; caller frees). */
bool pvg_command_has_arch(const char *command, const char *arch, bool cuda, char **seen);
/* Does the command name path (repo-relative, or absolute) as one of its arguments? */
bool pvg_command_mentions(const char *command, const char *path);

/* The last hipify line for the repo-relative source rel (the latest hipify run wins). */
const struct pvg_hipify_line *pvg_buildlog_find_hipify(const struct pvg_buildlog *log,
						       const char *rel);
/* Whether a link command (or cmake's "Linking ..." line) writes a file named name; *lineno
 * is the last such line. */
bool pvg_buildlog_links(const struct pvg_buildlog *log, const char *name, size_t *lineno);

/* The shared object the log's last link command writes (its -o argument as written), or NULL. */
char *pvg_buildlog_link_output(const struct pvg_buildlog *log);
/* Every source the log hipified or compiled, as written (appended to out, no duplicates). */
void pvg_buildlog_sources(const struct pvg_buildlog *log, struct pvg_strv *out);
