/* SPDX-License-Identifier: MIT */
/* Internal interface of libprovgate: shared by lib/, checks/, cmd/ and the tests. */
#pragma once

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "provgate.h"

/* ---- cleanup helpers (kmod / systemd style) ------------------------------------------- */

#define _cleanup_(f) __attribute__((cleanup(f)))
static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd) { if (*fd >= 0) close(*fd); }
static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void cjson_deletep(cJSON **j) { if (*j) cJSON_Delete(*j); }
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_json_ _cleanup_(cjson_deletep)

#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PVG_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- util.c ----------------------------------------------------------------------------- */

char *pvg_strdup(const char *s);                       /* aborts on OOM */
char *pvg_asprintf(const char *fmt, ...) PVG_PRINTF(1, 2);
char *pvg_vasprintf(const char *fmt, va_list ap);
void *pvg_xcalloc(size_t n, size_t size);
void *pvg_xrealloc(void *p, size_t n, size_t size);
/* dir + "/" + rel, or rel itself when absolute. */
char *pvg_path_join(const char *dir, const char *rel);
/* Absolute form of path relative to the working directory, without resolving links. */
char *pvg_path_absolute(const char *path);
const char *pvg_basename(const char *path);
/* Shell-style glob on '/'-separated paths: '*' and '?' stay within one component,
 * a double star spans components (docs/ then double star; double star, '/', '*.md'),
 * "[abc]" classes; a pattern ending in '/' covers the folder. */
bool pvg_glob_match(const char *pattern, const char *path);
/* Copy of s with every byte that is not part of valid UTF-8 (and every control byte
 * other than tab) written as the four characters "\xNN". */
char *pvg_utf8_sanitize(const char *s, size_t len);
void pvg_hex(const unsigned char *bytes, size_t n, char *out /* 2n+1 */);
/* Opens a regular file for reading without ever blocking on a FIFO: fstat fills *st;
 * a directory is -EISDIR, any other non-regular file -EINVAL. Returns the fd (blocking
 * reads from here on) or -errno. */
int pvg_open_regular(const char *path, struct stat *st);
/* Reads at most max bytes of a small file (config, pidfile, /proc text). */
int pvg_read_small_file(const char *path, size_t max, char **out, size_t *len);
/* "2026-11-29T12:00:00Z" (UTC) or with nanoseconds when ns >= 0. */
void pvg_format_time(time_t t, long ns, char *out, size_t size);
uint64_t pvg_now_ns(void);

/* JSON helpers: every string goes through pvg_utf8_sanitize; 64-bit values are strings. */
cJSON *pvg_json_string(const char *s);
void pvg_json_add_str(cJSON *obj, const char *key, const char *s); /* NULL -> null */
void pvg_json_add_u64(cJSON *obj, const char *key, uint64_t v);
void pvg_json_add_i64(cJSON *obj, const char *key, int64_t v);
void pvg_json_add_int(cJSON *obj, const char *key, int v);
void pvg_json_add_bool(cJSON *obj, const char *key, bool v);

/* ---- config.c ----------------------------------------------------------------------------- */

struct pvg_strv {
	char **v;
	size_t n;
};

struct pvg_install_map {
	char *from; /* repo-relative prefix ("vllm/") or file */
	char *to;   /* absolute install location */
};

struct pvg_kv {
	char *key;
	char *value;
};

struct pvg_require {
	struct pvg_kv *kv;
	size_t n;
};

struct pvg_config {
	char *path; /* absolute path of the file, NULL for a config built in memory */
	char *dir;
	char sha256[65];
	char *name;
	char *arch;
	struct {
		char *log;
		char *artifact;
		long max_unsupported_calls; /* default 0 */
	} build;
	struct {
		char *repo;
		char *baseline;
		bool include_uncommitted; /* default true */
		struct pvg_strv compiled;
		struct pvg_install_map *install_map;
		size_t n_install_map;
		struct pvg_strv ignore;
	} source;
	struct {
		char *artifact;
		char *python_module;
		char *python; /* default "python3" */
	} install;
	struct {
		struct pvg_strv match;
		long pid; /* -1 unset */
		char *pidfile;
		long port; /* -1 unset */
		struct pvg_strv family;
	} service;
	struct {
		struct pvg_strv require_kernels;
	} code_object;
	struct {
		char *log;
		char *prefix;
		struct pvg_require *require;
		size_t n_require;
		long min_count; /* default 1 */
		struct pvg_strv forbid;
		struct pvg_strv facts;
	} markers;
};

/* A config with every default and no keys set (tests, and the base of loading). */
struct pvg_config *pvg_config_new(void);
/* Parses JSON text (comments allowed); origin names the source in messages. */
int pvg_config_parse(struct pvg_config *cfg, const char *text, size_t len, const char *origin,
		     struct pvg_error *err);
bool pvg_arch_valid(const char *arch);
bool pvg_arch_is_cuda(const char *arch);

/* ---- hash.c ------------------------------------------------------------------------------- */

/* What one open fd said about a file: identity and digest belong together. */
struct pvg_file_id {
	char *path;
	int err;      /* 0, or the errno that stopped us */
	const char *err_what; /* "open", "read", "not a regular file", ... */
	mode_t mode;
	uint64_t size;
	uint64_t dev;
	uint64_t ino;
	struct timespec mtime;
	struct timespec ctime;
	unsigned char sha256[32];
	char hex[65];
	bool hashed;
	/* the digest was taken from another file whose bytes compared equal to these */
	bool digest_by_compare;
};

/* Opens without blocking (FIFOs), fstats, refuses non-regular files with -EINVAL
 * (err_what says why), hashes the regular file on the same fd. */
int pvg_hash_file(const char *path, struct pvg_file_id *out);
/* Hashes n files concurrently, one thread each (n <= 8). Returns 0; per-file errors in out[i]. */
int pvg_hash_files(const char *const *paths, size_t n, struct pvg_file_id *out);
/* Hashes an already open fd from its current offset up to len bytes (or EOF when len < 0). */
int pvg_hash_fd(int fd, int64_t len, unsigned char digest[32], uint64_t *nread);
void pvg_file_id_clear(struct pvg_file_id *id);
/* Same dev, inode, size, mtime and ctime: the same bytes, as far as the kernel says. */
bool pvg_file_id_matches(const struct pvg_file_id *id, const struct stat *st);
/* The build and the installed artifact in one pass: each chunk of the installed file is read
 * once, compared with the build's and hashed on a thread of its own, so that the digest and
 * the comparison are of the same bytes. start never blocks (threads do the work); join waits
 * and hands over both identities: *i with its digest, *b with the same digest when every byte
 * was compared equal (digest_by_compare). join returns 1 (equal) or 0 (differ, unreadable,
 * changed while read: see the err fields); *diff_at is the first differing byte, or
 * UINT64_MAX when unknown (sizes differ, not compared). cancel stops, waits and frees. */
struct pvg_pair_job;
/* build may be NULL: the installed file is only hashed (pvg_hash_file does so for big files) */
struct pvg_pair_job *pvg_pair_start(const char *build, const char *installed);
bool pvg_pair_differs(struct pvg_pair_job *job); /* already known to differ */
/* Pins the calling thread off the CPU the job's hasher has to itself (on small machines
 * only); for threads that end with the job, like the one preparing later gates. */
void pvg_pair_keep_off(const struct pvg_pair_job *job);
/* Waits until the files are known to differ, or every byte was read; true if they differ. */
bool pvg_pair_wait_differs(struct pvg_pair_job *job);
const char *pvg_pair_installed(const struct pvg_pair_job *job);
int pvg_pair_join(struct pvg_pair_job *job, struct pvg_file_id *b, struct pvg_file_id *i,
		  uint64_t *diff_at);
void pvg_pair_cancel(struct pvg_pair_job *job);
/* Optional progress callback for long hashes (bytes done, total), called at most every 100 ms. */
typedef void (*pvg_progress_fn)(const char *path, uint64_t done, uint64_t total);
void pvg_hash_set_progress(pvg_progress_fn fn);

/* ---- pymodule.c --------------------------------------------------------------------------- */

/* Resolves a dotted module name to its file with `python` (name or path), in a clean
 * environment, without importing the module or any parent package. On success *path is
 * the file; on failure *why holds the interpreter's answer. Returns 0, -ENOENT (not found),
 * -ENOEXEC (interpreter failed / could not run), -ETIMEDOUT. */
int pvg_python_module_path(const char *python, const char *module, char **path, char **why);

/* ---- results, context, checks ---------------------------------------------------------------- */

struct pvg_problem {
	char *code;    /* "artifact-hash.mismatch" */
	char *message; /* what was seen */
	char *hint;    /* what to do; may be NULL */
};

struct pvg_result {
	int id;
	const char *name;
	enum pvg_status status;
	char *summary;
	cJSON *evidence; /* object */
	struct pvg_problem *problems;
	size_t n_problems;
	uint64_t elapsed_ns;
	uint64_t prepared_ns; /* its prepare, run earlier while another gate waited */
};

void pvg_problem(struct pvg_result *r, const char *code, const char *hint, const char *fmt, ...)
	PVG_PRINTF(4, 5);
void pvg_summary(struct pvg_result *r, const char *fmt, ...) PVG_PRINTF(2, 3);
void pvg_result_reset(struct pvg_result *r);

/* The status of two findings together: fail outranks unverifiable (the evidence that exists
 * contradicts the claim), which outranks pass. */
static inline enum pvg_status pvg_status_worst(enum pvg_status a, enum pvg_status b)
{
	if (a == PVG_FAIL || b == PVG_FAIL)
		return PVG_FAIL;
	if (a == PVG_UNVERIFIABLE || b == PVG_UNVERIFIABLE)
		return PVG_UNVERIFIABLE;
	return PVG_PASS;
}

/* Facts computed once and shared by gates (gate 1 needs gate 2's change set, gate 4 the
 * build digest of gate 3, ...). Each area owns its slot's type. */
enum pvg_slot {
	PVG_SLOT_SCOPE = 0, /* git change set (install-scope) */
	PVG_SLOT_TARGETS,   /* target processes (process-maps, stale-service) */
	PVG_SLOT_CODEOBJ,   /* code objects of the installed artifact */
	PVG_SLOT_MARKERS,   /* gate 7's read of the service log */
	PVG_SLOT_STALE,     /* gate 5's read of listeners and fds */
	PVG_SLOT_EXTRA,
	PVG_SLOT__MAX,
};

#define PVG_MAX_CACHED_FILES 16

struct pvg_ctx {
	const struct pvg_config *cfg;
	enum pvg_phase phase;
	const char *procfs; /* "/proc", or $PROVGATE_PROCFS for parser tests on a fixture tree */
	uint64_t started_ns;
	time_t started_at;

	/* install.artifact, or what install.python_module resolved to */
	bool installed_resolved;
	int installed_err;
	char *installed_path;
	char *installed_why;

	struct pvg_file_id files[PVG_MAX_CACHED_FILES];
	size_t n_files;
	size_t evict_next; /* the entry a full cache gives up next */

	cJSON *chain; /* the report's "chain" object; gates fill their part */

	/* exec's after-check: the service must still be the process that was certified
	 * (same pid, same start time), not a restarted one that happens to pass. */
	bool pinned;
	pid_t pinned_pid;
	uint64_t pinned_start_ticks; /* since boot: exact, unlike an epoch conversion */

	void *slot[PVG_SLOT__MAX];
	void (*slot_free[PVG_SLOT__MAX])(void *);

	/* during pvg_evaluate: the gate running now, and the later ones still to prepare */
	int current_gate;
	pvg_gate_mask to_prepare;
	uint64_t prepared_ns[PVG_N_GATES];
	/* build and installed artifact, compared and hashed since the evaluation began
	 * (gate 3's start) */
	struct pvg_pair_job *early_pair;
};

void pvg_ctx_init(struct pvg_ctx *ctx, const struct pvg_config *cfg, enum pvg_phase phase);
void pvg_ctx_done(struct pvg_ctx *ctx);
/* Forget cached facts so that a second evaluation (exec's after-check) sees the system anew. */
void pvg_ctx_forget(struct pvg_ctx *ctx);
void *pvg_ctx_slot(struct pvg_ctx *ctx, enum pvg_slot s);
void pvg_ctx_set_slot(struct pvg_ctx *ctx, enum pvg_slot s, void *p, void (*free_fn)(void *));
/* The installed artifact path (config or python module). 0, or -errno with *why set. */
int pvg_ctx_installed(struct pvg_ctx *ctx, const char **path, const char **why);
/* Hashes the given paths (concurrently when several are not cached yet) and returns the
 * cached identities; a file whose dev/inode/size/mtime/ctime still match is not rehashed. */
int pvg_ctx_hash(struct pvg_ctx *ctx, const char *const *paths, size_t n,
		 const struct pvg_file_id **out);
/* The build and the installed artifact (pvg_pair_start, begun early by gate 3's start when
 * it could be); this thread prepares later gates (pvg_ctx_help) meanwhile. Equal bytes give
 * the build the installed digest; only when they differ (or cannot be compared) is the build
 * hashed as well. Cached like pvg_ctx_hash. */
int pvg_ctx_hash_pair(struct pvg_ctx *ctx, const char *build, const char *installed,
		      const struct pvg_file_id *out[2], uint64_t *diff_at);
/* Runs the prepare step of the selected gates after the current one, on this thread: work
 * that would otherwise wait for a slow read. A prepare only fills caches (slots); it never
 * decides or reports anything. */
void pvg_ctx_help(struct pvg_ctx *ctx);
/* Begins pvg_ctx_hash_pair's work in the background. */
void pvg_ctx_hash_early(struct pvg_ctx *ctx, const char *build, const char *installed);
/* Hands over a slot's content (the caller frees it) and empties the slot. */
void *pvg_ctx_take_slot(struct pvg_ctx *ctx, enum pvg_slot s);
void pvg_chain_set(struct pvg_ctx *ctx, const char *key, cJSON *value);

struct pvg_check {
	int id;
	const char *name;
	enum pvg_status (*run)(struct pvg_ctx *ctx, struct pvg_result *res);
	/* optional: work that run() would do, done earlier while an earlier gate waits; it
	 * may only fill the ctx caches that run() then uses (pvg_ctx_help) */
	void (*prepare)(struct pvg_ctx *ctx);
	/* optional: background work begun when the evaluation begins (the gate is selected);
	 * what run() does not collect is cancelled when the evaluation ends */
	void (*start)(struct pvg_ctx *ctx);
};

extern const struct pvg_check *const pvg_checks[PVG_N_GATES];


/* ---- runner.c / report.c ------------------------------------------------------------------- */

struct pvg_run {
	const struct pvg_config *cfg;
	enum pvg_phase phase;
	pvg_gate_mask selected;
	bool keep_going;
	struct pvg_ctx ctx;
	struct pvg_result results[PVG_N_GATES];
	bool executed;
	/* exec: the after-check, when one ran */
	struct pvg_result *after;
	pvg_gate_mask after_selected;
	cJSON *exec_info;
	/* exec: the command is still running (the interim report); never certified */
	bool in_progress;
};

/* Evaluates `selected` gates into results[] (stop at first non-pass unless keep_going).
 * Returns the number of selected gates that did not pass. */
int pvg_evaluate(struct pvg_ctx *ctx, pvg_gate_mask selected, bool keep_going,
		 struct pvg_result results[PVG_N_GATES], const char *why_skipped);
cJSON *pvg_report_build(const struct pvg_run *run);
cJSON *pvg_result_json(const struct pvg_result *r);
