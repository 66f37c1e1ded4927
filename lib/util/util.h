/* SPDX-License-Identifier: MIT */
/*
 * lib/util: what every layer may use. Strings, paths, globs, UTF-8, bounded file reads, time,
 * JSON helpers and the cleanup macros. Knows nothing of a run, a gate or a status.
 *
 * Conventions of every layer below core/ (util, formats, sys):
 * - a function that can fail returns 0 (or a count) or a negative errno; a struct field that
 *   records a failure holds the negative errno too (err < 0), never a positive one;
 * - allocation failure aborts (pvg_xcalloc and friends): no caller checks for NULL.
 */
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
/* Writes the reason into why[size] (when why is not NULL) and returns err, for parsers that
 * answer in a caller's buffer: return pvg_fail(why, size, -EINVAL, "...", ...); */
int pvg_fail(char *why, size_t size, int err, const char *fmt, ...) PVG_PRINTF(4, 5);
/* dir + "/" + rel, or rel itself when absolute. */
char *pvg_path_join(const char *dir, const char *rel);
/* Absolute form of path relative to the working directory, without resolving links. */
char *pvg_path_absolute(const char *path);
const char *pvg_basename(const char *path);
/* Edit distance of two short names (insert, delete, substitute, swap of neighbours), ASCII
 * case folded: what "did you mean" compares. SIZE_MAX when either is over 63 characters
 * (never close to a name). */
size_t pvg_edit_distance(const char *a, const char *b);
/* Shell-style glob on '/'-separated paths: '*' and '?' stay within one component,
 * a double star spans components (docs/ then double star; double star, '/', '*.md'),
 * "[abc]" classes; a pattern ending in '/' covers the folder. */
bool pvg_glob_match(const char *pattern, const char *path);
/* The JSON escaper (util/escape.c, whose rule escape.h gives): a copy of s with invalid
 * UTF-8 and control bytes other than tab as "\xNN", C1 controls, noncharacters, line
 * separators and bidi overrides as "\u{N}"; cJSON escapes quotes and backslashes after. */
char *pvg_utf8_sanitize(const char *s, size_t len);
void pvg_hex(const unsigned char *bytes, size_t n, char *out /* 2n+1 */);
/* The value of one hex digit (either case), or -1. */
int pvg_hex_digit(char c);
/* Opens a regular file for reading without ever blocking on a FIFO: fstat fills *st;
 * a directory is -EISDIR, any other non-regular file -EINVAL. Returns the fd (blocking
 * reads from here on) or -errno. */
int pvg_open_regular(const char *path, struct stat *st);
/* The one whole-file reader: a regular file (config, pidfile, log sample, /proc text, whose
 * size reads 0) into a NUL-terminated buffer; -EFBIG when it holds more than max bytes. */
int pvg_read_file(const char *path, size_t max, char **out, size_t *len);
/* The same from an fd already opened (and checked) by the caller, from its offset; the fd
 * stays open. */
int pvg_read_fd(int fd, size_t max, char **out, size_t *len);
/* The one read loop: reads len bytes into buf, again after EINTR and short reads; fewer
 * only at end of file. The count, or -errno. */
ssize_t pvg_read_full(int fd, void *buf, size_t len);
/* The same with pread at offset off (the fd's own offset stays). */
ssize_t pvg_pread_full(int fd, void *buf, size_t len, uint64_t off);
/* Where /proc text is read from: "/proc", or $PROVGATE_PROCFS (a fixture tree in tests, a
 * host /proc mounted elsewhere). The one seam: every reader of /proc text takes this root.
 * The process snapshot (sys/procs.h) always lists the real /proc. */
const char *pvg_procfs_root(void);
/* Where /sys is read from (the environment's amdgpu version and KFD topology): "/sys", or
 * $PROVGATE_SYSFS, the same way. */
const char *pvg_sysfs_root(void);
/* "2026-11-29T12:00:00Z" (UTC) or with nanoseconds when ns >= 0. */
void pvg_format_time(time_t t, long ns, char *out, size_t size);
uint64_t pvg_now_ns(void);

/* JSON helpers: every string goes through pvg_utf8_sanitize; 64-bit values are strings. */
cJSON *pvg_json_string(const char *s);
/* The string member key of obj; NULL when obj is not an object, or the member is absent or
 * of another type (for reading reports back). */
const char *pvg_json_get_str(const cJSON *obj, const char *key);
void pvg_json_add_str(cJSON *obj, const char *key, const char *s); /* NULL -> null */
void pvg_json_add_u64(cJSON *obj, const char *key, uint64_t v);
void pvg_json_add_i64(cJSON *obj, const char *key, int64_t v);
void pvg_json_add_int(cJSON *obj, const char *key, int v);
void pvg_json_add_bool(cJSON *obj, const char *key, bool v);
/* The name of a member that appears twice in one object of item (and, when recursive, in
 * the objects and arrays inside it), or NULL. Signed JSON with such a member is refused:
 * readers that take the first and those that take the last would read different documents. */
const char *pvg_json_find_duplicate(const cJSON *item, bool recursive);

/* What went wrong, in words: what was seen and, where one helps, what to do. A lower layer
 * hands it up beside its -errno; the gate that reads it turns it into a problem. Owned by
 * the struct that holds it (pvg_msg_clear frees). */
struct pvg_msg {
	char *text;
	char *hint; /* may be NULL */
};

void pvg_msg_set(struct pvg_msg *m, const char *hint, const char *fmt, ...) PVG_PRINTF(3, 4);
void pvg_msg_clear(struct pvg_msg *m);

/* A list of strings (config globs, patterns); v[n] is NULL once anything was pushed. */
struct pvg_strv {
	char **v;
	size_t n;
};
/* Frees every string and the list; leaves it empty. */
void pvg_strv_clear(struct pvg_strv *v);
/* Appends s, which the list then owns. */
void pvg_strv_push(struct pvg_strv *v, char *s);
bool pvg_strv_has(const struct pvg_strv *v, const char *s);
/* Appends a copy of s unless the list holds it already. */
void pvg_strv_add_unique(struct pvg_strv *v, const char *s);
/* The strings joined with sep, each once, in first-seen order ("" for none). */
char *pvg_strv_join_distinct(const struct pvg_strv *v, const char *sep);

