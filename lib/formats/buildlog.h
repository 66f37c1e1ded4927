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
#define PVG_BUILDLOG_DIRS_MAX 64u

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

	/* folders the build ran in: "ninja: Entering directory `X'", make's "Entering directory
	 * 'X'", a `set -x` script's "+ cd /X" (at most PVG_BUILDLOG_DIRS_MAX, no duplicates);
	 * xtrace's "+ " before a command is removed */
	struct pvg_strv dirs;

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
/* Is this a host-only compile of source: a C or C++ file (.c .cc .cpp .cxx .c++ .C) given to
 * a host compiler (gcc, g++, cc, c++, clang, clang++, with a version or target prefix, behind
 * ccache/sccache/distcc), with no flag that makes a device compile (-x hip/cuda, --offload-*,
 * --cuda-*, -fgpu-*, --hip-*, -gencode, -arch=sm_*, --amdgpu-target, -mcpu=gfx*)? Such a
 * compile has no device code, so no target arch. hipcc and nvcc are never host compilers here:
 * hipcc compiles .cpp as HIP by default, and nvcc's arch flags decide nothing for host code
 * (an nvcc .cpp compile is still held to an arch, which is safe). */
bool pvg_command_host_only(const char *command, const char *source);
/* Does a compile command take its sources as HIP? -x hip says so for any compiler; hipcc
 * compiles .cu (and .cpp) as HIP by default. */
enum pvg_hip_compile {
	PVG_HIP_COMPILE_NO,
	PVG_HIP_COMPILE_X_HIP, /* "-x hip" */
	PVG_HIP_COMPILE_HIPCC, /* hipcc, without -x */
};
enum pvg_hip_compile pvg_command_hip_compile(const char *command);
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

/* ---- which objects go into which output ----------------------------------------------------- */

/* Archives linked on into other outputs are followed at most this deep. */
#define PVG_LINKGRAPH_DEPTH_MAX 8u
/* At most this many link steps, and link inputs in all, are kept (more: truncated). */
#define PVG_LINKGRAPH_LINKS_MAX 2048u
#define PVG_LINKGRAPH_INPUTS_MAX (1u << 20)

enum pvg_link_kind {
	PVG_LINK_SHARED,     /* "x.so", "x.abi3.so", "libx.so.1" */
	PVG_LINK_ARCHIVE,    /* ar: "libx.a" */
	PVG_LINK_EXECUTABLE, /* anything else a link command writes */
};

/* One link step: a link command (-o OUT with objects), an ar command, or a non-verbose
 * "Linking ... OUT" line. */
struct pvg_link_step {
	char *output;        /* as written */
	char *dir;           /* the command's "cd DIR &&", or NULL */
	enum pvg_link_kind kind;
	size_t lineno;
	size_t command;      /* index in log->commands */
	bool inputs_known;   /* false: a "Linking ..." line, or inputs in a response file (@x.rsp) */
	char **inputs;       /* objects, archives and -lNAME, as written */
	size_t n_inputs;
	bool last;           /* the log's last step writing this output */
};

/* One compile step: "-c SRC ... -o OBJ" (the sources named on it, the object it writes). */
struct pvg_compile_step {
	char *object;        /* -o, or NULL when the command names none */
	char *dir;           /* "cd DIR &&", or NULL */
	char *depfile;       /* -MF, or NULL */
	size_t lineno;
	size_t command;      /* index in log->commands */
};

struct pvg_linkgraph {
	struct pvg_link_step *links;
	size_t n_links;
	struct pvg_compile_step *compiles;
	size_t n_compiles;
	size_t n_shared;      /* distinct shared objects linked */
	size_t n_inputs;      /* link inputs in all */
	bool any_unknown;     /* some output's last step does not show its inputs */
	bool truncated;       /* a cap was reached: steps were dropped */
};

/* Builds the graph from a parsed log's commands (every command is split once; bounded by what
 * the parser kept). */
void pvg_linkgraph_build(const struct pvg_buildlog *log, struct pvg_linkgraph *g);
void pvg_linkgraph_done(struct pvg_linkgraph *g);
/* The log's last link step writing a file named name (its basename), or NULL. */
const struct pvg_link_step *pvg_linkgraph_output(const struct pvg_linkgraph *g, const char *name);
/* The compile step of command index i, or NULL when it is not a compile command. */
const struct pvg_compile_step *pvg_linkgraph_compile_of(const struct pvg_linkgraph *g, size_t i);
/* The last compile step writing object obj (compared as pvg_same_object does), or NULL. */
const struct pvg_compile_step *pvg_linkgraph_compile_for(const struct pvg_linkgraph *g,
							  const char *obj, const char *dir);
/* The final outputs (shared objects, executables; followed through archives) that the object
 * written by a command in dir is linked into, as indexes into g->links of each output's last
 * step, at most max of them. Returns how many were found. */
size_t pvg_linkgraph_outputs_of(const struct pvg_linkgraph *g, const char *obj, const char *dir,
				size_t *out, size_t max);
/* Do two paths, each written relative to its folder (NULL: unknown), name the same object?
 * Equal, or, where a folder is not known, equal in their last components ("CMakeFiles/t.dir/a.o"
 * and "/b/build/CMakeFiles/t.dir/a.o"). */
bool pvg_same_object(const char *a, const char *adir, const char *b, const char *bdir);
/* CMake's "CMakeFiles/<target>.dir/..." object: the target's name into out. */
bool pvg_cmake_target_of(const char *obj, char *out, size_t size);
/* A shared object's file name: "x.so", "x.abi3.so", "libx.so.1.2". */
bool pvg_is_shared_object(const char *path);

/* ---- dependency information of a build tree -------------------------------------------------- */

/* ninja's binary deps log (.ninja_deps, src/deps_log.cc): "# ninjadeps\n", int32 version (3 or
 * 4), then records: uint32 size with the high bit set for a deps record (int32 output id,
 * mtime (v4: two uint32, low first; v3: one int32), int32 input ids), else a path record (the
 * path, NUL-padded to 4 bytes, then uint32 ~id). Read from bytes in memory. */
struct pvg_ninja_deps {
	char **paths;        /* by node id */
	size_t n_paths;
	struct pvg_ninja_deps_rec {
		uint32_t out;
		uint32_t *in;
		size_t n_in;
	} *recs;             /* the last record of each output wins (as ninja reads it) */
	size_t n_recs;
	bool damaged;        /* it ended in a partial or invalid record: what came before is kept */
};
/* 0, or -EBADMSG when it is not a deps log (bad signature or version). */
int pvg_ninja_deps_parse(const uint8_t *p, size_t n, struct pvg_ninja_deps *d);
void pvg_ninja_deps_done(struct pvg_ninja_deps *d);
/* Appends to out the outputs (objects) whose recorded inputs include a path path_matches
 * (rel: repo-relative, matched on whole trailing components; or absolute). */
void pvg_ninja_deps_dependents(const struct pvg_ninja_deps *d, const char *rel,
			       struct pvg_strv *out);
/* Does a make-style depfile ("obj.o: a.cpp b.h \\\n c.h") name path rel among its
 * prerequisites? */
bool pvg_depfile_mentions(const char *text, size_t len, const char *rel);
/* ninja's .ninja_log ("# ninja log vN", then "start\tend\tmtime\toutput\thash" lines): the last
 * entry for output (as ninja names it, relative to its root), its recorded mtime in
 * nanoseconds (v5 and later write nanoseconds; a value below 10^12 is taken as seconds).
 * 1 found, 0 not, -EBADMSG not a ninja log, -ERANGE when output's entry holds a time that no
 * 64-bit count of nanoseconds since 1970 can (one past 2262). */
int pvg_ninja_log_find(const char *text, size_t len, const char *output, int64_t *mtime_ns);
